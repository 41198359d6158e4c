//! Whole-file recovery properties (issue 20): every recovery path of every engine is fed
//! arbitrary and mutated bytes, and must give an error or a correct result, never a panic, a
//! hang, or a different database.
//!
//! A real store is made by a deterministic single-writer script (`scripted.rs`, 600
//! operations, the torture settings: `Sync` durability and a 128 KiB memory budget, so
//! flushes, merges and checkpoints run), in a child process that either closes it cleanly or
//! kills itself with SIGKILL after the last acknowledgement (a crash image). Then one of the
//! store's files is mutated — replaced by arbitrary bytes, bits flipped (anywhere in the
//! file's data or in its first 8 KiB, where headers and superblocks live), a range overwritten
//! with arbitrary bytes, cut, extended, two blocks swapped, removed — and the store is reopened and
//! scanned whole. That covers, through the engines that use them: log segments
//! (`*_wal.*`), the cyclic ring (`mem.*`, `trie.*`), the superblocks and manifests (fdtree,
//! nbtree, latree), level and node files, and the fptree region (header, leaves, micro-logs,
//! allocator bitmaps: damage lands on the written parts of the sparse file).
//!
//! Accepted: `Corruption`/`Io` (at open or while scanning); or exactly the script's final
//! state; or, for a log file of a crash image only, the state after some prefix of the script
//! (a damaged last record cannot be told from a torn write), unless the log was replaced,
//! removed or extended. Anything else fails: a panic, a
//! hang (a check running past `damage::CASE_TIMEOUT`), another error kind, other contents.
//!
//! `PROPTEST_CASES=N` sets the cases per engine and image (default 12: the whole file runs in
//! about a minute in a debug build; the long version is `PROPTEST_CASES=500 cargo test
//! --release -p lamina-torture --test recovery_never_panics`).

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use lamina::{Db, EngineKind, Error, FcMode};
use lamina_torture::damage::{self, Abnormal};
use lamina_torture::scripted::{self, States};
use lamina_torture::settings::options;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Operations of the script.
const SCRIPT_OPS: u64 = 600;
/// The script's seed.
const SCRIPT_SEED: u64 = 3;
/// Cases per engine and image unless `PROPTEST_CASES` says otherwise.
const CASES_DEFAULT: u32 = 12;
/// Bytes at the start of a file where headers and superblocks live (flips aimed there).
const HEAD_BYTES: u64 = 8 << 10;
/// Longest arbitrary byte string written.
const ARBITRARY_BYTES_MAX: usize = 4096;

/// One mutation of one file. Positions are reduced modulo the file's data bytes (or length).
#[derive(Debug, Clone)]
enum Mutation {
    /// The whole file replaced by these bytes.
    Replace(Vec<u8>),
    /// Bits flipped: (position, bit, in the first [`HEAD_BYTES`] rather than anywhere).
    Flips(Vec<(u64, u8, bool)>),
    /// These bytes written over the file's data at a position.
    Overwrite(u64, Vec<u8>),
    /// Cut to a length below its own.
    Truncate(u64),
    /// These bytes appended.
    Extend(Vec<u8>),
    /// Two blocks of 2^log2 bytes (aligned, within the data) swapped.
    Swap(u64, u64, u32),
    /// The file removed.
    Delete,
}

impl Mutation {
    /// Whether a log so damaged may read as a crash's torn tail (its end cut or garbled).
    /// A log replaced, removed or extended must not lose anything.
    fn may_read_as_torn(&self) -> bool {
        !matches!(self, Mutation::Replace(_) | Mutation::Delete | Mutation::Extend(_))
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let bytes = || prop::collection::vec(any::<u8>(), 0..ARBITRARY_BYTES_MAX);
    prop_oneof![
        1 => bytes().prop_map(Mutation::Replace),
        4 => prop::collection::vec((any::<u64>(), 0u8..8, any::<bool>()), 1..8)
            .prop_map(Mutation::Flips),
        2 => (any::<u64>(), prop::collection::vec(any::<u8>(), 1..512))
            .prop_map(|(at, b)| Mutation::Overwrite(at, b)),
        2 => any::<u64>().prop_map(Mutation::Truncate),
        1 => prop::collection::vec(any::<u8>(), 1..ARBITRARY_BYTES_MAX).prop_map(Mutation::Extend),
        2 => (any::<u64>(), any::<u64>(), 9u32..=12).prop_map(|(a, b, l)| Mutation::Swap(a, b, l)),
        1 => Just(Mutation::Delete),
    ]
}

/// The offset of data byte `position` (modulo the data bytes), or `None` without data.
fn data_at(path: &Path, position: u64) -> Option<u64> {
    let extents = damage::data_extents(path);
    let total: u64 = extents.iter().map(|(s, e)| e - s).sum();
    let mut want = position.checked_rem(total)?;
    for (start, end) in extents {
        if want < end - start {
            return Some(start + want);
        }
        want -= end - start;
    }
    None
}

fn write_at(path: &Path, at: u64, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(bytes).unwrap();
}

fn read_at(path: &Path, at: u64, len: u64) -> Vec<u8> {
    let mut file = std::fs::File::open(path).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    let mut out = Vec::new();
    file.take(len).read_to_end(&mut out).unwrap();
    out
}

/// Applies `mutation` to `path` in place.
fn mutate(path: &Path, mutation: &Mutation) {
    let len = std::fs::metadata(path).unwrap().len();
    match mutation {
        Mutation::Replace(bytes) => std::fs::write(path, bytes).unwrap(),
        Mutation::Flips(flips) => {
            for &(position, bit, head) in flips {
                let at = if head {
                    position.checked_rem(len.min(HEAD_BYTES))
                } else {
                    data_at(path, position)
                };
                if let Some(at) = at {
                    damage::xor_byte(path, at, 1 << bit);
                }
            }
        }
        Mutation::Overwrite(position, bytes) => {
            if let Some(at) = data_at(path, *position) {
                write_at(path, at, bytes);
            }
        }
        Mutation::Truncate(position) => {
            if let Some(to) = position.checked_rem(len) {
                damage::set_len(path, to);
            }
        }
        Mutation::Extend(bytes) => write_at(path, len, bytes),
        Mutation::Delete => std::fs::remove_file(path).unwrap(),
        Mutation::Swap(a, b, log2) => {
            let block = 1u64 << log2;
            let (Some(a), Some(b)) = (data_at(path, *a), data_at(path, *b)) else { return };
            let (a, b) = (a / block * block, b / block * block);
            if a.abs_diff(b) < block {
                return;
            }
            let (first, second) = (read_at(path, a, block), read_at(path, b, block));
            let n = first.len().min(second.len());
            write_at(path, a, &second[..n]);
            write_at(path, b, &first[..n]);
        }
    }
}

/// Whether `name` is a write-ahead log file (a segment or the cyclic ring), whose damaged
/// tail may read as a torn write after a crash.
fn is_log(name: &str) -> bool {
    name.contains("_wal") || name.starts_with("mem.") || name.starts_with("trie.")
}

/// The store the script leaves, closed cleanly or crashed.
fn base_store(engine: EngineKind, crashed: bool) -> tempfile::TempDir {
    let root = damage::scratch_dir();
    let mut command = Command::new(env!("CARGO_BIN_EXE_lamina-torture"));
    command
        .args(["scripted", "--engine", engine.name(), "--seed", &SCRIPT_SEED.to_string()])
        .args(["--ops", &SCRIPT_OPS.to_string(), "--dir"])
        .arg(root.path());
    if crashed {
        command.arg("--crash");
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if crashed {
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{engine}: {stderr}");
    } else {
        assert!(out.status.success(), "{engine}: {stderr}");
    }
    root
}

/// What a mutated store gave: `Ok` when accepted, else why not.
fn check(dir: &Path, engine: EngineKind, states: &States, prefix_ok: bool) -> Result<(), String> {
    let error = |e: Error| match e {
        Error::Corruption { .. } | Error::Io { .. } => Ok(()),
        other => Err(format!("an error of another kind: {other:?}")),
    };
    let db = match Db::open(dir, options(engine)) {
        Ok(db) => db,
        Err(e) => return error(e),
    };
    let contents = match scripted::contents(&db) {
        Ok(contents) => contents,
        Err(e) => return error(e),
    };
    let _ = db.close();
    let full = SCRIPT_OPS as usize;
    match states.matches(&contents) {
        Some(n) if n == full => Ok(()),
        Some(_) if prefix_ok => Ok(()),
        Some(n) => Err(format!("the state after {n} of {full} operations")),
        None => Err(format!("{} entries that are no state of the script", contents.len())),
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CASES_DEFAULT)
}

fn property(engine: EngineKind, crashed: bool) {
    let store = base_store(engine, crashed);
    let states = States::new(scripted::script(SCRIPT_SEED, SCRIPT_OPS));
    let files = damage::store_files(store.path());
    let contents: BTreeMap<_, _> = {
        let copy = damage::scratch_dir();
        damage::copy_dir(store.path(), copy.path());
        let db = Db::open(copy.path(), options(engine)).unwrap();
        let contents = scripted::contents(&db).unwrap();
        db.close().unwrap();
        contents
    };
    assert_eq!(
        states.matches(&contents),
        Some(SCRIPT_OPS as usize),
        "{engine}: the undamaged store must hold the whole script"
    );
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&(any::<Index>(), mutation()), |(file, mutation)| {
        let name = files[file.index(files.len())].clone();
        let copy = damage::scratch_dir();
        damage::copy_dir(store.path(), copy.path());
        mutate(&copy.path().join(&name), &mutation);
        let (dir, states) = (copy.path().to_path_buf(), states.clone());
        let prefix_ok = crashed && is_log(&name) && mutation.may_read_as_torn();
        let outcome = damage::bounded(move || check(&dir, engine, &states, prefix_ok));
        let image = if crashed { "crash image" } else { "clean close" };
        let fail = |what: String| TestCaseError::fail(format!("{engine} {image}, {name}: {what}"));
        match outcome {
            Ok(Ok(())) => Ok(()),
            Ok(Err(what)) => Err(fail(what)),
            Err(Abnormal::Panic(message)) => Err(fail(format!("panic: {message}"))),
            Err(Abnormal::Hang) => Err(fail("hang".to_string())),
        }
    });
    if let Err(e) = result {
        panic!("{engine}: {e}");
    }
}

macro_rules! recovery_properties {
    ($($name:ident: $engine:expr,)*) => {
        $(
            mod $name {
                use super::*;

                #[test]
                fn clean_close() {
                    property($engine, false);
                }

                #[test]
                fn crash_image() {
                    property($engine, true);
                }
            }
        )*
        /// Every engine has its properties here (a new engine must be added above).
        #[test]
        fn every_engine_is_covered() {
            let covered = [$($engine),*];
            for engine in EngineKind::ALL {
                assert!(covered.contains(engine), "{engine} has no recovery properties");
            }
        }
    };
}

recovery_properties! {
    mem: EngineKind::Mem,
    trie: EngineKind::Trie,
    fdtree_fc: EngineKind::Fdtree(FcMode::Fc),
    fdtree_xm: EngineKind::Fdtree(FcMode::Xm),
    fdtree_ds: EngineKind::Fdtree(FcMode::Ds),
    nbtree: EngineKind::Nbtree,
    latree: EngineKind::Latree,
    latree_btree: EngineKind::LatreeBtree,
    fptree: EngineKind::Fptree,
}
