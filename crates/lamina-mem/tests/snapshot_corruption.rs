//! A corrupt snapshot is reported with its file and offset, never silently dropped.

use lamina_core::{Error, OrderedIndex};
use lamina_mem::{MemEngine, SNAPSHOT_FILE_NAME};

#[test]
fn corrupt_snapshot_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = MemEngine::open(dir.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let path = dir.path().join(SNAPSHOT_FILE_NAME);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 6;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    match MemEngine::open(dir.path()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, path),
        other => panic!("expected corruption, got {other:?}"),
    }
}
