//! The damage sweep of issue 20, on cleanly closed stores: for every engine and every file it
//! writes, a fresh copy of the store is damaged (bytes flipped at several offsets, cut in half,
//! emptied, deleted) and verified with `Db::verify` (open, structural checks, full scan against
//! point reads). Each case must give the same data as the undamaged store or a `Corruption` /
//! `Io` error naming the damaged file: never a panic and never different data.

use std::fs::File;
use std::path::{Path, PathBuf};

use lamina::{Db, EngineKind, Error, VerifyReport};

mod support;

use support::{options, written};

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
        copy_sparse(&entry.path(), &to.join(entry.file_name()));
    }
}

/// Copies `from` to `to` keeping holes holes: the fptree region file is 8 GiB sparse, and a
/// plain copy would write all of it.
fn copy_sparse(from: &Path, to: &Path) {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::fd::AsRawFd;
    let mut src = File::open(from).unwrap();
    let len = src.metadata().unwrap().len();
    let mut dst = File::create(to).unwrap();
    dst.set_len(len).unwrap();
    let mut at = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    while at < len {
        let seek = |whence: i32, offset: u64| {
            // SAFETY: lseek on an open descriptor owned by `src` has no memory effects; an
            // offset past the end or in a trailing hole returns -1 (ENXIO), handled below.
            unsafe { libc::lseek(src.as_raw_fd(), offset as libc::off_t, whence) }
        };
        let data = seek(libc::SEEK_DATA, at);
        if data < 0 {
            break;
        }
        let hole = seek(libc::SEEK_HOLE, data as u64).max(data) as u64;
        let (mut pos, end) = (data as u64, hole.min(len));
        src.seek(SeekFrom::Start(pos)).unwrap();
        dst.seek(SeekFrom::Start(pos)).unwrap();
        while pos < end {
            let n = (end - pos).min(buf.len() as u64) as usize;
            src.read_exact(&mut buf[..n]).unwrap();
            dst.write_all(&buf[..n]).unwrap();
            pos += n as u64;
        }
        at = end.max(at + 1);
    }
}

/// Damages `path` in place (without reading it whole: region files are large and sparse).
fn apply(path: &Path, damage: Damage) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let len = std::fs::metadata(path).unwrap().len();
    match damage {
        Damage::Flip { at_permille } => {
            if len == 0 {
                return;
            }
            let at = len * at_permille / 1000;
            let mut file = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
            let mut byte = [0u8];
            file.seek(SeekFrom::Start(at)).unwrap();
            file.read_exact(&mut byte).unwrap();
            byte[0] ^= 0x5a;
            file.seek(SeekFrom::Start(at)).unwrap();
            file.write_all(&byte).unwrap();
        }
        Damage::CutInHalf => {
            std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len / 2).unwrap();
        }
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
