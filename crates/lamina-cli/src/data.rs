//! The data commands: put, get, delete, scan, engines.

use std::io::Write;
use std::ops::Bound;
use std::process::ExitCode;

use lamina::{Db, Durability, EngineKind, KeyRange, Options};
use lamina_bench::EngineFactory;

use crate::args::GlobalArgs;
use crate::encoding;

/// Opens the database named by `--dir`. An existing database is opened with the engine that
/// created it (`--engine`, if given, must agree); a new one with `--engine` or the default.
/// Only `put` creates a missing directory. The CLI closes the database after each command, which makes its writes durable, so it
/// opens with `Durability::None` and pays for no per-write sync.
fn open(global: &GlobalArgs, create: bool) -> Result<Db, String> {
    open_with(global, create, Durability::None, 0)
}

/// Opens (or creates) the database `lamina serve` serves, with the server's durability and
/// memory budget (0: the default).
pub fn open_serving(
    global: &GlobalArgs,
    durability: Durability,
    memory_budget_bytes: u64,
) -> Result<Db, String> {
    open_with(global, true, durability, memory_budget_bytes)
}

fn open_with(
    global: &GlobalArgs,
    create: bool,
    durability: Durability,
    memory_budget_bytes: u64,
) -> Result<Db, String> {
    let dir = global.dir.as_ref().ok_or("--dir DIR is required for this command")?;
    if !create && !dir.exists() {
        return Err(format!("no database at {}", dir.display()));
    }
    let requested = global.engine.as_deref().map(EngineKind::from_name).transpose();
    let requested = requested.map_err(|e| e.to_string())?;
    let existing = Db::engine_of(dir).map_err(|e| e.to_string())?;
    let engine = match (requested, existing) {
        (Some(requested), Some(existing)) if requested != existing => {
            return Err(format!(
                "{} holds a `{existing}` database; it cannot be opened as `{requested}`",
                dir.display()
            ));
        }
        (_, Some(existing)) => existing,
        (Some(requested), None) => requested,
        (None, None) => EngineKind::default(),
    };
    let options = Options {
        engine,
        durability,
        create_if_missing: create,
        disk_budget_bytes: global.disk_budget_bytes,
        memory_limit_bytes: global.memory_limit_bytes,
        ..Options::default()
    };
    let options =
        if memory_budget_bytes == 0 { options } else { Options { memory_budget_bytes, ..options } };
    Db::open(dir, options).map_err(|e| e.to_string())
}

/// `lamina verify`: [`Db::verify`] with the options the other commands open with.
pub fn verify(global: &GlobalArgs) -> Result<ExitCode, String> {
    let dir = global.dir.as_ref().ok_or("--dir DIR is required for this command")?;
    if !dir.exists() {
        return Err(format!("no database at {}", dir.display()));
    }
    let options = Options {
        disk_budget_bytes: global.disk_budget_bytes,
        memory_limit_bytes: global.memory_limit_bytes,
        create_if_missing: false,
        ..Options::default()
    };
    let report = Db::verify(dir, options).map_err(|e| e.to_string())?;
    println!(
        "{}: clean ({} engine, {} entries, {} key bytes, {} value bytes, {} files, {} bytes read)",
        dir.display(),
        report.engine,
        report.entries,
        report.key_bytes,
        report.value_bytes,
        report.files,
        report.bytes_read
    );
    Ok(ExitCode::SUCCESS)
}

fn finish(db: &Db) -> Result<(), String> {
    db.close().map_err(|e| e.to_string())
}

pub fn engines() -> ExitCode {
    let mut out = std::io::stdout().lock();
    for kind in EngineKind::ALL {
        // The default is called `fdtree`; `fdtree-fc` names the same engine (and is what
        // benchmark reports show, next to `fdtree-xm` and `fdtree-ds`).
        let line = if *kind == EngineKind::default() {
            writeln!(
                out,
                "{} (default)\t{}; also called `{}`, the name benchmark reports use",
                crate::bench::DEFAULT_ENGINE_NAME,
                kind.description(),
                kind.name()
            )
        } else {
            writeln!(out, "{}\t{}", kind.name(), kind.description())
        };
        if line.is_err() {
            return ExitCode::SUCCESS;
        }
    }
    // Peers are listed only by a build that can open them (feature `peers`).
    if crate::bench::peers_built() {
        for peer in lamina_bench::PeerFactory.engines() {
            if writeln!(out, "{}\t{}", peer.name, peer.description).is_err() {
                break;
            }
        }
    }
    ExitCode::SUCCESS
}

pub fn put(global: &GlobalArgs, key: &str, value: &str) -> Result<ExitCode, String> {
    let key = encoding::parse(key, global.hex, "key")?;
    let value = encoding::parse(value, global.hex, "value")?;
    // Check limits before opening, so a refused put creates no directory.
    lamina::limits::check_key(&key).map_err(|e| e.to_string())?;
    lamina::limits::check_value(&value).map_err(|e| e.to_string())?;
    let db = open(global, true)?;
    db.put(&key, &value).map_err(|e| e.to_string())?;
    finish(&db)?;
    Ok(ExitCode::SUCCESS)
}

pub fn get(global: &GlobalArgs, key: &str) -> Result<ExitCode, String> {
    let key = encoding::parse(key, global.hex, "key")?;
    let db = open(global, false)?;
    let value = db.get(&key).map_err(|e| e.to_string())?;
    finish(&db)?;
    match value {
        Some(value) => {
            let _ = writeln!(std::io::stdout().lock(), "{}", encoding::format(&value, global.hex));
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!("lamina: key not found");
            Ok(ExitCode::from(1))
        }
    }
}

pub fn delete(global: &GlobalArgs, key: &str) -> Result<ExitCode, String> {
    let key = encoding::parse(key, global.hex, "key")?;
    let db = open(global, false)?;
    let existed = db.delete(&key).map_err(|e| e.to_string())?;
    finish(&db)?;
    if existed {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("lamina: key not found");
        Ok(ExitCode::from(1))
    }
}

pub fn scan(
    global: &GlobalArgs,
    from: Option<&str>,
    to: Option<&str>,
    limit: Option<u64>,
) -> Result<ExitCode, String> {
    let start = match from {
        Some(k) => Bound::Included(encoding::parse(k, global.hex, "--from key")?),
        None => Bound::Unbounded,
    };
    let end = match to {
        Some(k) => Bound::Excluded(encoding::parse(k, global.hex, "--to key")?),
        None => Bound::Unbounded,
    };
    let db = open(global, false)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    for entry in db.iter(KeyRange { start, end }).take(limit) {
        let (k, v) = entry.map_err(|e| e.to_string())?;
        let line = writeln!(
            out,
            "{}\t{}",
            encoding::format(&k, global.hex),
            encoding::format(&v, global.hex)
        );
        if line.is_err() {
            break; // the reader went away (`| head`): not an error
        }
    }
    let _ = out.flush();
    finish(&db)?;
    Ok(ExitCode::SUCCESS)
}
