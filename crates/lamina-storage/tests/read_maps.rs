//! `StorageFile::map_read` and `StorageFile::start_writeback`: a map shows the file's bytes
//! (and later writes and punched holes through the shared page cache), refuses to reach
//! past the end, is offered only by the file backend with `read_maps` on, and is not
//! counted as I/O; the writeback hint changes nothing a reader sees.

use std::sync::Arc;

use lamina_storage::{
    FaultPlan, FaultyStorage, FileOptions, FileStorage, MemoryStorage, OpenMode, Storage,
};

fn file_storage(dir: &std::path::Path, read_maps: bool) -> FileStorage {
    FileStorage::open_dir(dir, FileOptions { read_maps, ..FileOptions::default() }).unwrap()
}

#[test]
fn a_map_shows_the_file_and_what_is_written_and_punched_later() {
    let dir = tempfile::tempdir().unwrap();
    let s = file_storage(dir.path(), true);
    let f = s.open("level", OpenMode::CreateNew).unwrap();
    let bytes: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 251) as u8).collect();
    f.write_all_at(0, &bytes).unwrap();
    let reads_before = s.io_stats().reads();
    let map = f.map_read(bytes.len() as u64).unwrap().expect("the file backend maps");
    assert_eq!(&map[..], &bytes[..]);
    assert_eq!(map.get(4096, 10), Some(&bytes[4096..4106]));
    assert_eq!(map.get(3 * 4096 - 1, 2), None, "past the map");
    assert_eq!(map.get(u64::MAX, 1), None);
    assert_eq!(s.io_stats().reads(), reads_before, "reads through a map are not I/O");
    f.write_all_at(10, b"new").unwrap();
    assert_eq!(&map[10..13], b"new");
    f.punch_hole(4096, 4096).unwrap();
    assert!(map[4096..8192].iter().all(|&b| b == 0), "a punched hole reads as zeros");
    assert_eq!(&map[8192..], &bytes[8192..]);
    // A name removed while mapped: the map stays readable.
    s.remove("level").unwrap();
    assert_eq!(&map[8192..], &bytes[8192..]);
}

#[test]
fn a_map_never_reaches_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let s = file_storage(dir.path(), true);
    let f = s.open("short", OpenMode::CreateNew).unwrap();
    f.write_all_at(0, &[7u8; 100]).unwrap();
    assert!(f.map_read(101).is_err(), "longer than the file");
    assert!(f.map_read(0).unwrap().is_none(), "nothing to map");
    assert_eq!(&f.map_read(100).unwrap().unwrap()[..], &[7u8; 100][..]);
}

#[test]
fn only_the_file_backend_with_maps_on_offers_them() {
    let dir = tempfile::tempdir().unwrap();
    let off = file_storage(dir.path(), false);
    let memory = MemoryStorage::new();
    let faulty = FaultyStorage::in_memory(FaultPlan::none());
    let backends: [&dyn Storage; 3] = [&off, &memory, &faulty];
    for s in backends {
        let f = s.open("f", OpenMode::CreateNew).unwrap();
        f.write_all_at(0, &[1u8; 4096]).unwrap();
        assert!(f.map_read(4096).unwrap().is_none(), "{s:?}");
    }
}

#[test]
fn the_writeback_hint_changes_nothing_a_reader_sees() {
    let dir = tempfile::tempdir().unwrap();
    let file = Arc::new(file_storage(dir.path(), true));
    let memory = Arc::new(MemoryStorage::new());
    let backends: [Arc<dyn Storage>; 2] = [file, memory];
    for s in backends {
        let f = s.open("w", OpenMode::CreateNew).unwrap();
        let bytes = vec![9u8; 3 << 20];
        f.write_all_at(0, &bytes).unwrap();
        f.start_writeback(0, 1 << 20).unwrap();
        f.start_writeback(1 << 20, 4 << 20).unwrap(); // past the end: nothing more to start
        f.start_writeback(0, 0).unwrap();
        let mut back = vec![0u8; bytes.len()];
        f.read_exact_at(0, &mut back).unwrap();
        assert_eq!(back, bytes);
        assert_eq!(f.len().unwrap(), bytes.len() as u64);
    }
}
