//! The contract of `Storage` checked identically on every backend, and exact accounting for
//! scripted access patterns.

use std::io::ErrorKind;
use std::sync::Arc;

use lamina_storage::backend::io_error_kind;
use lamina_storage::{
    FaultPlan, FaultyStorage, FileOptions, FileStorage, MemoryStorage, OpenMode, Storage,
};

fn backends() -> Vec<(Arc<dyn Storage>, Option<tempfile::TempDir>)> {
    let buffered = tempfile::tempdir().unwrap();
    let direct = tempfile::tempdir().unwrap();
    let direct_opts = FileOptions { direct_io: true, ..FileOptions::default() };
    vec![
        (Arc::new(MemoryStorage::new()), None),
        (Arc::new(FaultyStorage::in_memory(FaultPlan::none())), None),
        (
            Arc::new(FileStorage::open_dir(buffered.path(), FileOptions::default()).unwrap()),
            Some(buffered),
        ),
        (Arc::new(FileStorage::open_dir(direct.path(), direct_opts).unwrap()), Some(direct)),
    ]
}

#[test]
fn open_modes() {
    for (s, _dir) in backends() {
        assert_eq!(
            io_error_kind(&s.open("a", OpenMode::Existing).unwrap_err()),
            Some(ErrorKind::NotFound)
        );
        let a = s.open("a", OpenMode::CreateNew).unwrap();
        assert_eq!(a.name(), "a");
        assert_eq!(
            io_error_kind(&s.open("a", OpenMode::CreateNew).unwrap_err()),
            Some(ErrorKind::AlreadyExists)
        );
        a.write_all_at(0, b"abc").unwrap();
        let again = s.open("a", OpenMode::Create).unwrap();
        assert_eq!(again.len().unwrap(), 3);
        s.open("b", OpenMode::Create).unwrap();
        assert_eq!(s.list().unwrap(), vec!["a".to_owned(), "b".to_owned()]);
        assert!(s.open("x/y", OpenMode::Create).unwrap_err().is_invalid_argument());
        assert_eq!(s.io_stats().files_created, 2, "{s:?}");
    }
}

#[test]
fn positional_io_and_eof() {
    for (s, _dir) in backends() {
        let f = s.open("f", OpenMode::Create).unwrap();
        f.write_all_at(10, b"xyz").unwrap();
        assert_eq!(f.len().unwrap(), 13);
        let mut buf = [0xffu8; 13];
        f.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"\0\0\0\0\0\0\0\0\0\0xyz");
        let err = f.read_exact_at(11, &mut [0u8; 3]).unwrap_err();
        assert_eq!(io_error_kind(&err), Some(ErrorKind::UnexpectedEof), "{err}");
        f.set_len(4).unwrap();
        assert_eq!(f.len().unwrap(), 4);
        f.set_len(4096).unwrap();
        f.sync_data().unwrap();
        s.sync_dir().unwrap();
        assert_eq!(s.io_stats().syncs, 2);
        assert!(f.write_all_at(u64::MAX - 1, b"ab").unwrap_err().is_invalid_argument());
    }
}

#[test]
fn aligned_blocks_roundtrip_through_every_backend() {
    // 4 KiB-aligned buffers take the O_DIRECT path where the filesystem allows it.
    #[repr(align(4096))]
    struct Page([u8; 4096]);
    for (s, _dir) in backends() {
        let f = s.open("blocks", OpenMode::Create).unwrap();
        let mut page = Box::new(Page([0u8; 4096]));
        for block in 0..4u8 {
            page.0.fill(block + 1);
            f.write_all_at(u64::from(block) * 4096, &page.0).unwrap();
        }
        f.sync_data().unwrap();
        for block in (0..4u8).rev() {
            f.read_exact_at(u64::from(block) * 4096, &mut page.0).unwrap();
            assert!(page.0.iter().all(|&b| b == block + 1));
        }
        // Unaligned accesses fall back to buffered I/O on the same file.
        f.write_all_at(1, b"odd").unwrap();
        let mut odd = [0u8; 3];
        f.read_exact_at(1, &mut odd).unwrap();
        assert_eq!(&odd, b"odd");
        f.read_exact_at(0, &mut page.0).unwrap();
        assert_eq!(&page.0[..5], &[1, b'o', b'd', b'd', 1]);
    }
}

#[test]
fn rename_replaces_and_remove_deletes() {
    for (s, _dir) in backends() {
        let a = s.open("a", OpenMode::Create).unwrap();
        a.write_all_at(0, &[1; 100]).unwrap();
        let b = s.open("b", OpenMode::Create).unwrap();
        b.write_all_at(0, &[2; 50]).unwrap();
        assert_eq!(s.io_stats().live_bytes, 150);
        s.rename("a", "b").unwrap();
        assert_eq!(s.list().unwrap(), vec!["b".to_owned()]);
        assert_eq!(s.read_all("b").unwrap(), vec![1; 100]);
        let st = s.io_stats();
        assert_eq!((st.live_bytes, st.live_bytes_peak, st.files_deleted), (100, 150, 1));
        assert!(s.rename("missing", "c").is_err());
        s.remove("b").unwrap();
        assert!(!s.exists("b").unwrap());
        assert!(s.remove("b").is_err());
        let st = s.io_stats();
        assert_eq!((st.live_bytes, st.files_deleted), (0, 2));
    }
}

#[test]
fn scripted_pattern_has_exact_counts() {
    for (s, _dir) in backends() {
        let f = s.open("log", OpenMode::Create).unwrap();
        for i in 0..10u64 {
            f.write_all_at(i * 100, &[7; 100]).unwrap(); // appends: all sequential
        }
        f.write_all_at(4000, &[1; 200]).unwrap(); // jump: random, blocks 0 and 1
        let mut buf = [0u8; 100];
        f.read_exact_at(4200, &mut [0u8; 8]).unwrap_err(); // failed reads are not counted
        f.read_exact_at(0, &mut buf).unwrap(); // random
        f.read_exact_at(100, &mut buf).unwrap(); // sequential
        let st = s.io_stats();
        assert_eq!((st.writes_sequential, st.writes_random), (10, 1));
        assert_eq!((st.reads_sequential, st.reads_random), (1, 1));
        assert_eq!((st.bytes_written, st.blocks_written), (1200, 10 + 2));
        assert_eq!((st.bytes_read, st.blocks_read), (200, 2));
        assert_eq!((st.live_bytes, st.modeled_device_ns), (4200, 0));
    }
}

#[test]
fn file_storage_counts_existing_files_and_concurrent_io() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap();
        s.open("old", OpenMode::Create).unwrap().write_all_at(0, &[0; 300]).unwrap();
    }
    let s = Arc::new(FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap());
    assert_eq!(s.io_stats().live_bytes, 300);
    assert_eq!(s.io_stats().files_created, 0);
    let f = s.open("shared", OpenMode::Create).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let f = f.clone();
            scope.spawn(move || {
                for i in 0..25u64 {
                    f.write_all_at((t * 25 + i) * 64, &[t as u8; 64]).unwrap();
                }
            });
        }
    });
    let st = s.io_stats();
    assert_eq!((st.writes(), st.bytes_written, st.live_bytes), (100, 6400, 6700));
    assert_eq!(s.path_of("x"), dir.path().join("x"));
}

#[test]
fn modeled_device_time_follows_the_profile() {
    use lamina_storage::{AccountingOptions, DeviceProfile};
    let options = AccountingOptions {
        device: DeviceProfile::from_name("ssd-msp7525").unwrap(),
        ..AccountingOptions::default()
    };
    let s = MemoryStorage::with_options(options).unwrap();
    let f = s.open("f", OpenMode::Create).unwrap();
    f.write_all_at(0, &[0; 8192]).unwrap(); // sequential, 2 pages: 2 * 0.07 ms
    f.write_all_at(40960, &[0; 4096]).unwrap(); // random: 8.3 ms
    f.read_exact_at(0, &mut [0; 4096]).unwrap(); // random: 0.11 ms
    f.read_exact_at(4096, &mut [0; 4096]).unwrap(); // sequential: 0.28 ms
    assert_eq!(s.io_stats().modeled_device_ns, 140_000 + 8_300_000 + 110_000 + 280_000);
}

#[test]
fn emulation_counts_the_same_as_modeling() {
    use lamina_storage::{AccountingOptions, DeviceProfile};
    let run = |emulate| {
        let options = AccountingOptions {
            device: DeviceProfile::ssd_x25e(),
            emulate,
            ..AccountingOptions::default()
        };
        let s = MemoryStorage::with_options(options).unwrap();
        let f = s.open("f", OpenMode::Create).unwrap();
        f.write_all_at(8192, &[1; 4096]).unwrap();
        f.read_exact_at(8192, &mut [0; 4096]).unwrap();
        f.sync_data().unwrap();
        s.io_stats()
    };
    let (modeled, emulated) = (run(false), run(true));
    assert_eq!(modeled, emulated);
    assert_eq!(modeled.modeled_device_ns, 300_000 + 75_000);
}
