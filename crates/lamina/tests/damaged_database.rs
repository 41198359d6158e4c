//! Damage is never an empty (or silently different) database. For the engines whose only
//! persistent copy is their log ring (`trie`, `mem`): once the `LAMINA` file says the
//! database exists, a missing ring or one cut to its header is `Corruption` naming the
//! file; a damaged newest chunk of a cleanly closed database is `Corruption` too (it was
//! dropped as a torn tail: values reverted, deleted keys came back). A crash between
//! writing `LAMINA` and the engine's first files is not damage: the database is new.

use std::path::Path;

use lamina::{Db, Durability, EngineKind, Error, Meta, Options};
use lamina_core::codec::Decode;
use lamina_storage::log::chunk::{CHUNK_FLAG_CLEAN_CLOSE, ChunkHeader};

const ENGINES: [EngineKind; 2] = [EngineKind::Trie, EngineKind::Mem];

fn options(engine: EngineKind) -> Options {
    Options { engine, durability: Durability::Sync, ..Options::default() }
}

fn ring(dir: &Path, engine: EngineKind) -> std::path::PathBuf {
    dir.join(format!("{}.ring", engine.name()))
}

/// A database with 200 keys, 5 of them overwritten and 2 deleted in its last writes,
/// cleanly closed.
fn written(engine: EngineKind) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(engine)).unwrap();
    for i in 0..200u32 {
        db.put(i.to_be_bytes(), b"first").unwrap();
    }
    let mut batch = lamina::WriteBatch::new();
    for i in 0..5u32 {
        batch.put(i.to_be_bytes().to_vec(), b"second".to_vec());
    }
    batch.delete(10u32.to_be_bytes().to_vec()).delete(11u32.to_be_bytes().to_vec());
    db.write_batch(&batch).unwrap();
    db.close().unwrap();
    dir
}

fn expect_corruption(dir: &Path, engine: EngineKind, what: &str) {
    match Db::open(dir, options(engine)) {
        Err(Error::Corruption { file, .. }) => {
            assert!(
                file.ends_with(format!("{}.ring", engine.name())),
                "{what}: {}",
                file.display()
            );
        }
        Err(other) => panic!("{engine} {what}: expected corruption, got {other}"),
        Ok(db) => panic!(
            "{engine} {what}: opened with {} keys instead of failing",
            db.stats().keys.unwrap_or(0)
        ),
    }
}

#[test]
fn a_deleted_ring_is_corruption() {
    for engine in ENGINES {
        let dir = written(engine);
        std::fs::remove_file(ring(dir.path(), engine)).unwrap();
        expect_corruption(dir.path(), engine, "ring deleted");
    }
}

#[test]
fn a_ring_cut_to_4_kib_is_corruption() {
    for engine in ENGINES {
        let dir = written(engine);
        let file = std::fs::OpenOptions::new().write(true).open(ring(dir.path(), engine)).unwrap();
        file.set_len(4096).unwrap();
        drop(file);
        expect_corruption(dir.path(), engine, "ring cut to 4 KiB");
    }
}

/// File offset of the newest chunk holding records (the last one written before the clean
/// close's marker).
fn newest_data_chunk(bytes: &[u8]) -> u64 {
    let mut newest: Option<(u64, u64)> = None;
    for offset in (4096..bytes.len()).step_by(4096) {
        if let Ok(header) = ChunkHeader::decode(&bytes[offset..])
            && header.record_count > 0
            && header.flags & CHUNK_FLAG_CLEAN_CLOSE == 0
            && newest.is_none_or(|(pos, _)| header.pos > pos)
        {
            newest = Some((header.pos, offset as u64));
        }
    }
    newest.expect("a chunk with records").1
}

#[test]
fn a_flipped_byte_in_the_newest_chunk_of_a_cleanly_closed_database_is_corruption() {
    for engine in ENGINES {
        let dir = written(engine);
        let path = ring(dir.path(), engine);
        let mut bytes = std::fs::read(&path).unwrap();
        let offset = newest_data_chunk(&bytes) as usize;
        bytes[offset + 100] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        expect_corruption(dir.path(), engine, "newest chunk damaged after a clean close");
    }
}

#[test]
fn a_crash_before_the_engine_created_its_files_is_a_new_database() {
    for engine in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        // What `Db::open` writes first: the engine, not yet marked as created.
        Meta { engine: engine.format_name().into(), created: false }.write(dir.path()).unwrap();
        let db = Db::open(dir.path(), options(engine)).unwrap();
        assert_eq!(db.stats().keys, Some(0));
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
        drop(db);
        assert!(Meta::read(dir.path()).unwrap().unwrap().created, "marked once opened");
        // From now on the ring must exist.
        std::fs::remove_file(ring(dir.path(), engine)).unwrap();
        expect_corruption(dir.path(), engine, "ring deleted after creation");
    }
}
