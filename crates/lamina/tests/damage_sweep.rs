//! The damage sweep of issue 20, on cleanly closed stores: for every engine and every file it
//! writes, a fresh copy of the store is damaged (bytes flipped at several offsets, cut in half,
//! emptied, deleted) and verified with `Db::verify` (open, structural checks, full scan against
//! point reads). Each case must give the same data as the undamaged store or a `Corruption` /
//! `Io` error naming the damaged file: never a panic and never different data.

use std::path::{Path, PathBuf};

use lamina::{Db, Durability, EngineKind, Error, Options, VerifyReport};

fn options(engine: EngineKind) -> Options {
    Options { engine, durability: Durability::Sync, ..Options::default() }
}

/// 2,000 keys written (every 10th deleted), closed.
fn written(engine: EngineKind) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(engine)).unwrap();
    for i in 0..2_000u32 {
        db.put(&i.to_be_bytes(), format!("value {i}").repeat(3).as_bytes()).unwrap();
    }
    for i in (0..2_000u32).step_by(10) {
        assert!(db.delete(&i.to_be_bytes()).unwrap());
    }
    db.close().unwrap();
    dir
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip { at_permille: u64 },
    CutInHalf,
    Empty,
    Delete,
}

const DAMAGES: &[Damage] = &[
    Damage::Flip { at_permille: 0 },
    Damage::Flip { at_permille: 1 },
    Damage::Flip { at_permille: 250 },
    Damage::Flip { at_permille: 500 },
    Damage::Flip { at_permille: 999 },
    Damage::CutInHalf,
    Damage::Empty,
    Damage::Delete,
];

/// Copies a store, keeping sparse files sparse (fptree's region is a large sparse file).
fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let status = std::process::Command::new("cp")
            .arg("--sparse=always")
            .arg(entry.path())
            .arg(to.join(entry.file_name()))
            .status()
            .unwrap();
        assert!(status.success(), "cp {}", entry.path().display());
    }
}

fn apply(path: &Path, damage: Damage) {
    let mut bytes = std::fs::read(path).unwrap();
    match damage {
        Damage::Flip { at_permille } => {
            if bytes.is_empty() {
                return;
            }
            let at = (bytes.len() as u64 * at_permille / 1000) as usize;
            bytes[at] ^= 0x5a;
            std::fs::write(path, bytes).unwrap();
        }
        Damage::CutInHalf => std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap(),
        Damage::Empty => std::fs::write(path, b"").unwrap(),
        Damage::Delete => std::fs::remove_file(path).unwrap(),
    }
}

/// What a report says of the data (the same data gives the same numbers).
fn data_of(report: &VerifyReport) -> (u64, u64, u64) {
    (report.entries, report.key_bytes, report.value_bytes)
}

/// Cases per outcome: the same data, a clear error, silently different (must stay 0).
#[derive(Debug, Default)]
struct Tally {
    correct: u32,
    clear_error: u32,
    silent: Vec<String>,
}

fn sweep(engine: EngineKind) -> Tally {
    let store = written(engine);
    let clean = Db::verify(store.path(), options(engine)).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(store.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name != "LOCK" && name != lamina::META_FILE_NAME
        })
        .collect();
    files.sort();
    let mut tally = Tally::default();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap().to_string();
        for &damage in DAMAGES {
            let copy = tempfile::tempdir().unwrap();
            copy_dir(store.path(), copy.path());
            apply(&copy.path().join(&name), damage);
            match Db::verify(copy.path(), options(engine)) {
                Ok(report) if data_of(&report) == data_of(&clean) => tally.correct += 1,
                Ok(report) => tally.silent.push(format!(
                    "{engine}: {name} {damage:?}: verified clean with different data {:?} \
                     (undamaged {:?})",
                    data_of(&report),
                    data_of(&clean)
                )),
                Err(Error::Corruption { .. } | Error::Io { .. }) => tally.clear_error += 1,
                Err(other) => tally.silent.push(format!("{engine}: {name} {damage:?}: {other:?}")),
            }
        }
    }
    tally
}

#[test]
fn no_damage_passes_as_different_data() {
    let mut silent = Vec::new();
    // LAMINA_SWEEP_ENGINE=name sweeps one engine (to investigate a case).
    let only = std::env::var("LAMINA_SWEEP_ENGINE").ok();
    for &engine in EngineKind::ALL {
        if only.as_deref().is_some_and(|name| name != engine.name()) {
            continue;
        }
        let tally = sweep(engine);
        // `cargo test -p lamina --test damage_sweep -- --nocapture` prints the table of
        // docs/results/reliability.md.
        println!(
            "| {engine} | {} | {} | {} |",
            tally.correct,
            tally.clear_error,
            tally.silent.len()
        );
        silent.extend(tally.silent);
    }
    assert!(silent.is_empty(), "{} cases:\n{}", silent.len(), silent.join("\n"));
}
