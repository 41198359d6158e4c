//! The damage sweep of issue 20 over crash images: a child writing through `lamina::Db` with
//! `Durability::Sync` (8 threads, the torture workload and settings) is killed with SIGKILL;
//! then, for every file of the crash image, a fresh copy is damaged (a byte flipped at several
//! offsets of the file's data, cut in half, emptied, deleted), opened, and read whole. Each
//! case must give the ledger's data (every acknowledged key correct, the operations in flight
//! applied whole or not at all, a full scan equal to the point reads) or a `Corruption`/`Io`
//! error; never a panic, a hang, another kind of error, or different data.
//!
//! `lamina-torture`'s sweep of cleanly closed stores is `lamina`'s `tests/damage_sweep.rs`.
//!
//! A log whose end was cut off or whose last record was damaged used to read as a crash's
//! torn tail, losing the last acknowledged writes without an error, and was counted apart;
//! since each log file records how far it was synced (`docs/format/log.md`, "Synced mark")
//! such a case fails like any other silent loss. The table keeps its column.
//!
//! CI runs one crash image per engine and one file of each kind (the newest level file,
//! segment, manifest, ...). The long version: `LAMINA_CRASH_SWEEP_FULL=1
//! LAMINA_CRASH_SWEEP_IMAGES=10 cargo test --release -p lamina-torture --test
//! crash_image_damage_sweep -- --nocapture` (every file; each image from another seed and
//! kill time);
//! `LAMINA_SWEEP_ENGINE=name` sweeps one engine. `--nocapture` prints the table of
//! `docs/results/reliability.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lamina::{Db, EngineKind, Error, KeyRange};
use lamina_core::codec::Decode;
use lamina_storage::log::chunk::{ChunkHeader, FILE_HEADER_BYTES};
use lamina_torture::damage::{self, Abnormal, DAMAGES, Damage};
use lamina_torture::parent::{self, Config, CrashImage};
use lamina_torture::settings::options;

/// Crash images per engine in CI (`LAMINA_CRASH_SWEEP_IMAGES` overrides).
const IMAGES_DEFAULT: u64 = 1;
/// The child writes this long (plus 97 ms per image index) before it is killed; doubled
/// until the image holds acknowledged writes (fptree's first open of its region is slow).
const RUN_MS: u64 = 600;
/// Longest child run tried before giving up on an image with acknowledged writes.
const RUN_MS_MAX: u64 = 20_000;

/// How one damaged copy ended.
#[derive(Debug)]
enum Outcome {
    /// The ledger's data.
    Correct,
    /// `Corruption`/`Io` naming the damaged file.
    NamedError,
    /// `Corruption`/`Io` not naming it (the message).
    UnnamedError(String),
    /// Anything else: different data, another kind of error (the description).
    Wrong(String),
}

/// Cases per outcome for one engine.
#[derive(Debug, Default)]
struct Tally {
    images: u64,
    acknowledged: u64,
    files: u64,
    correct: u64,
    named_error: u64,
    unnamed_error: Vec<String>,
    /// A damaged log tail read as a crash's torn write: acknowledged writes at the end of
    /// the log lost (see [`looks_torn`]); also failed, as `wrong`.
    torn_tail: Vec<String>,
    wrong: Vec<String>,
}

/// Whether `message` names the file `name`: by name, or by its log's pattern
/// (`fdtree_wal-*.seg` names every segment).
fn names_file(message: &str, name: &str) -> bool {
    let stem = name.split(|c: char| c.is_ascii_digit()).next().unwrap_or(name);
    message.contains(name) || (stem.len() >= 4 && stem != name && message.contains(stem))
}

/// Whether `name` is a write-ahead log (a segment or the cyclic ring).
fn is_log(name: &str) -> bool {
    name.contains("_wal") || name.starts_with("mem.") || name.starts_with("trie.")
}

/// The damages a log could not tell from a crash's torn tail before its synced mark: its end
/// cut off or its last record damaged (with `Sync` durability the lost writes were
/// acknowledged): the flip at the end of the file, or any flip inside the last chunk of a
/// segment log's newest segment (a short newest segment has its last chunk mid-file). Such a
/// case is listed in its own column and fails the sweep. A deleted segment is not one of
/// them: the newest is named by its predecessor's end chunk, any other by the next one's
/// start (`docs/format/log.md`, "Segment end").
fn looks_torn(store: &Path, name: &str, how: Damage) -> bool {
    if !is_log(name) {
        return false;
    }
    match how {
        Damage::CutInHalf | Damage::Flip { at_permille: 999 } => true,
        Damage::Flip { at_permille } if name.contains("_wal-") && is_newest(store, name) => {
            let path = store.join(name);
            let at = damage::data_offset(&damage::data_extents(&path), at_permille);
            at.zip(last_chunk_at(&path)).is_some_and(|(at, last)| at >= last)
        }
        _ => false,
    }
}

/// Whether `name` is the newest segment of its log in `store`.
fn is_newest(store: &Path, name: &str) -> bool {
    let prefix = name.split('-').next().unwrap_or(name);
    damage::store_files(store)
        .iter()
        .filter(|n| n.starts_with(prefix) && n.contains("_wal-"))
        .all(|n| n.as_str() <= name)
}

/// The file offset of a segment file's last chunk, following the chunks from the first
/// (`docs/format/log.md`).
fn last_chunk_at(path: &Path) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    let (mut at, mut last) = (FILE_HEADER_BYTES, None);
    while let Some(header) =
        bytes.get(usize::try_from(at).ok()?..).and_then(|b| ChunkHeader::decode(b).ok())
    {
        last = Some(at);
        at += header.chunk_len();
    }
    last
}

/// The files a sweep damages: all of them with `LAMINA_CRASH_SWEEP_FULL=1`, else one of each
/// kind (names alike but for digits: the newest level, segment, manifest, ...).
fn files_to_damage(store: &std::path::Path) -> Vec<String> {
    let all = damage::store_files(store);
    if std::env::var("LAMINA_CRASH_SWEEP_FULL").is_ok_and(|v| v == "1") {
        return all;
    }
    let mut by_kind = std::collections::BTreeMap::new();
    for name in all {
        let kind: String = name.chars().filter(|c| !c.is_ascii_digit()).collect();
        by_kind.insert(kind, name); // sorted names: the last of a kind wins
    }
    by_kind.into_values().collect()
}

fn classify(error: &Error, name: &str) -> Outcome {
    match error {
        Error::Corruption { .. } | Error::Io { .. } if names_file(&error.to_string(), name) => {
            Outcome::NamedError
        }
        Error::Corruption { .. } | Error::Io { .. } => Outcome::UnnamedError(error.to_string()),
        other => Outcome::Wrong(format!("an error of another kind: {other:?}")),
    }
}

/// Opens the damaged copy, reads every key the ledger knows and scans everything (a read
/// error is classified), then checks the data against the ledger.
fn check_copy(dir: &Path, engine: EngineKind, image: &CrashImage, name: &str) -> Outcome {
    let db = match Db::open(dir, options(engine)) {
        Ok(db) => db,
        Err(e) => return classify(&e, name),
    };
    let keys = image.model.keys().cloned();
    let in_flight = image.pending.iter().flat_map(|op| op.effects().into_iter().map(|(k, _)| k));
    for key in keys.chain(in_flight) {
        if let Err(e) = db.get(&key) {
            return classify(&e, name);
        }
    }
    for entry in db.iter(KeyRange::all()) {
        if let Err(e) = entry {
            return classify(&e, name);
        }
    }
    let outcome = match parent::check_image(&db, image) {
        Ok(()) => Outcome::Correct,
        Err(e) => Outcome::Wrong(format!("different data: {e}")),
    };
    let _ = db.close();
    outcome
}

fn sweep_image(engine: EngineKind, index: u64, tally: &mut Tally) {
    let root = damage::scratch_dir();
    let store = root.path().join("store");
    let config = Config {
        engine,
        dir: store.clone(),
        cycles: 1,
        seed: 11 + index,
        kill_after_ms: RUN_MS..RUN_MS + 1,
        exe: PathBuf::from(env!("CARGO_BIN_EXE_lamina-torture")),
    };
    let mut run_ms = RUN_MS + 97 * index;
    let image = loop {
        let image = parent::crash_image(&config, run_ms)
            .unwrap_or_else(|e| panic!("{engine}: making crash image {index}: {e}"));
        if image.acknowledged > 0 || run_ms >= RUN_MS_MAX {
            break image;
        }
        std::fs::remove_dir_all(&store).unwrap();
        run_ms *= 2;
    };
    assert!(image.acknowledged > 0, "{engine}: no write acknowledged in {run_ms} ms");
    // The undamaged image must itself be correct, or every case below means nothing.
    let undamaged = {
        let (store, image) = (store.clone(), image.clone());
        damage::bounded(move || {
            let copy = damage::scratch_dir();
            damage::copy_dir(&store, copy.path());
            check_copy(copy.path(), engine, &image, "-")
        })
    };
    assert!(
        matches!(undamaged, Ok(Outcome::Correct)),
        "{engine}: the undamaged crash image {index}: {undamaged:?}"
    );
    tally.images += 1;
    tally.acknowledged += image.acknowledged;
    let image = Arc::new(image);
    let files = files_to_damage(&store);
    tally.files += files.len() as u64;
    for name in files {
        for &how in DAMAGES {
            let (copy, _) = damage::damaged_copy(&store, &name, how);
            let (dir, image, file) = (copy.path().to_path_buf(), image.clone(), name.clone());
            let outcome = damage::bounded(move || check_copy(&dir, engine, &image, &file));
            let case = |what: &str| format!("{engine} image {index}: {name} {how:?}: {what}");
            match outcome {
                Ok(Outcome::Correct) => tally.correct += 1,
                Ok(Outcome::NamedError) => tally.named_error += 1,
                Ok(Outcome::UnnamedError(message)) => tally.unnamed_error.push(case(&message)),
                Ok(Outcome::Wrong(what)) if looks_torn(&store, &name, how) => {
                    tally.torn_tail.push(case(&what));
                    tally.wrong.push(case(&format!("log tail lost as if torn: {what}")));
                }
                Ok(Outcome::Wrong(what)) => tally.wrong.push(case(&what)),
                Err(Abnormal::Panic(message)) => {
                    tally.wrong.push(case(&format!("panic: {message}")));
                }
                Err(Abnormal::Hang) => tally.wrong.push(case("hang")),
            }
            drop(copy);
        }
    }
}

#[test]
fn no_damage_to_a_crash_image_passes_as_different_data() {
    let images: u64 = std::env::var("LAMINA_CRASH_SWEEP_IMAGES")
        .ok()
        .map_or(IMAGES_DEFAULT, |n| n.parse().expect("LAMINA_CRASH_SWEEP_IMAGES: a number"));
    let only = std::env::var("LAMINA_SWEEP_ENGINE").ok();
    let mut wrong = Vec::new();
    println!(
        "| engine | crash images | acknowledged ops | files | cases | same data | clear error \
         (names the file) | error not naming the file | log tail lost as if torn | silent / \
         wrong |"
    );
    for &engine in EngineKind::ALL {
        if only.as_deref().is_some_and(|name| name != engine.name()) {
            continue;
        }
        let mut tally = Tally::default();
        for index in 0..images {
            sweep_image(engine, index, &mut tally);
        }
        let cases = tally.correct
            + tally.named_error
            + tally.unnamed_error.len() as u64
            + (tally.wrong.len() - tally.torn_tail.len()) as u64;
        println!(
            "| {engine} | {} | {} | {} | {cases} | {} | {} | {} | {} | {} |",
            tally.images,
            tally.acknowledged,
            tally.files,
            tally.correct,
            tally.named_error,
            tally.unnamed_error.len(),
            tally.torn_tail.len(),
            tally.wrong.len() - tally.torn_tail.len()
        );
        for line in &tally.unnamed_error {
            println!("  error not naming the file: {line}");
        }
        for line in &tally.torn_tail {
            println!("  torn-tail reading: {line}");
        }
        wrong.extend(tally.wrong);
    }
    assert!(wrong.is_empty(), "{} cases:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_damages_touch_written_bytes() {
    // A flip lands inside the file's data even when most of the file is a hole (fptree).
    let dir = damage::scratch_dir();
    let path = dir.path().join("sparse");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(64 << 20).unwrap();
    drop(file);
    damage::xor_byte(&path, 40 << 20, 1);
    let extents = damage::data_extents(&path);
    assert!(!extents.is_empty() && extents.iter().all(|(s, e)| *s <= 40 << 20 && *e > 40 << 20));
    for permille in [0, 500, 999] {
        let at = damage::data_offset(&extents, permille).unwrap();
        assert!(extents.iter().any(|(s, e)| (*s..*e).contains(&at)), "{at}");
    }
    damage::apply(&path, Damage::Flip { at_permille: 0 });
    let copy = dir.path().join("copy");
    damage::copy_sparse(&path, &copy);
    assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&copy).unwrap());
    assert!(damage::data_extents(&copy).iter().map(|(s, e)| e - s).sum::<u64>() < 1 << 20);
}

#[test]
fn the_last_chunk_of_a_segment_is_found() {
    use lamina_storage::log::{LogOp, LogOptions, SegmentLog, SegmentLogOptions};
    let dir = damage::scratch_dir();
    let storage: Arc<dyn lamina_storage::Storage> = Arc::new(
        lamina_storage::FileStorage::open_dir(dir.path(), lamina_storage::FileOptions::default())
            .unwrap(),
    );
    let log = LogOptions { durability: lamina_core::Durability::Sync, ..LogOptions::default() };
    let log =
        SegmentLog::open(storage, SegmentLogOptions { log, ..Default::default() }, |_| {}).unwrap();
    // One Sync put from one thread is one 4 KiB chunk.
    for i in 0..3u32 {
        log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"v" }).unwrap();
    }
    log.abandon();
    let segment = damage::store_files(dir.path()).into_iter().find(|n| n.starts_with("wal-"));
    let path = dir.path().join(segment.expect("a segment"));
    assert_eq!(last_chunk_at(&path), Some(FILE_HEADER_BYTES + 2 * 4096));
}
