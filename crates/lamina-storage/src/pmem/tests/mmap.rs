//! The mmap backend through a real file.

use std::sync::Arc;

use lamina_core::Error;

use crate::pmem::*;

fn instructions() -> Vec<FlushInstruction> {
    let mut out = vec![FlushInstruction::Clflush];
    match FlushInstruction::detect() {
        FlushInstruction::Clwb => {
            out.extend([FlushInstruction::Clflushopt, FlushInstruction::Clwb]);
        }
        FlushInstruction::Clflushopt => out.push(FlushInstruction::Clflushopt),
        FlushInstruction::Clflush => {}
        FlushInstruction::None => out = vec![FlushInstruction::None],
    }
    out
}

#[test]
fn data_roundtrips_through_a_file_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    for (i, flush) in instructions().into_iter().enumerate() {
        let path = dir.path().join(format!("region-{i}.pmem"));
        let options = MmapOptions { flush: Some(flush), ..MmapOptions::default() };
        {
            let region = MmapRegion::create(&path, 8192, options).unwrap();
            assert_eq!(region.flush_instruction(), flush);
            assert_eq!(region.len_bytes(), 8192);
            region.write_persist(100, b"persistent bytes").unwrap();
            region.store_u64(4096, 77).unwrap();
            region.persist(4096, 8).unwrap();
            region.fence();
            assert_eq!(region.stats(), PmemStats { persists: 2, lines_persisted: 2, fences: 2 });
        }
        let region = MmapRegion::open(&path, options).unwrap();
        let mut buf = [0u8; 16];
        region.read(100, &mut buf).unwrap();
        assert_eq!(&buf, b"persistent bytes");
        assert_eq!(region.load_u64(4096).unwrap(), 77);
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(&on_disk[100..116], b"persistent bytes");
    }
}

#[test]
fn without_msync_data_still_reaches_the_file() {
    // Without msync durability rests on the write-back alone (a DAX mount); on a page-cache
    // file system the data still reaches the file through the shared mapping.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nosync.pmem");
    let options = MmapOptions { msync: false, ..MmapOptions::default() };
    let region = MmapRegion::create(&path, 4096, options).unwrap();
    region.write_persist(8, b"abc").unwrap();
    region.sync_all().unwrap();
    drop(region);
    assert_eq!(&std::fs::read(&path).unwrap()[8..11], b"abc");
}

#[test]
fn allocator_state_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("heap.pmem");
    let p = {
        let region = Arc::new(MmapRegion::create(&path, 1 << 16, MmapOptions::default()).unwrap());
        let a = PmemAllocator::format(region, 11, 256).unwrap();
        let p = a.allocate(a.root_offset(), 1000).unwrap();
        a.region().write_persist(p.offset, b"leaf").unwrap();
        p
    };
    let region = Arc::new(MmapRegion::open(&path, MmapOptions::default()).unwrap());
    let a = PmemAllocator::open(region.clone()).unwrap();
    let root = PPtr::read_from(&*region, a.root_offset()).unwrap();
    assert_eq!(root, p);
    let at = a.resolve(root).unwrap();
    let mut buf = [0u8; 4];
    region.read(at, &mut buf).unwrap();
    assert_eq!(&buf, b"leaf");
    assert_eq!(a.block_of(root).unwrap().1, 1024);
    assert_eq!(a.file_id(), 11);
}

#[test]
fn bad_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.pmem");
    std::fs::write(&path, [0u8; 100]).unwrap();
    let err = MmapRegion::open(&path, MmapOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Incompatible { .. }), "{err:?}");
    let err = MmapRegion::create(&path, 4096, MmapOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "exists: {err:?}");
    assert!(MmapRegion::create(&dir.path().join("x"), 100, MmapOptions::default()).is_err());
    let missing = MmapRegion::open(&dir.path().join("missing"), MmapOptions::default());
    assert!(matches!(missing, Err(Error::Io { .. })));
    let slow = MmapOptions { latency_ns_per_line: u64::MAX, ..MmapOptions::default() };
    assert!(MmapRegion::create(&dir.path().join("y"), 4096, slow).is_err());
}

/// The prefault thread maps pages in ahead of the highest persisted range, and only that:
/// bytes written there before it arrives, and bytes below the frontier, read back the same and
/// reach the file; a private mapping (`lamina verify`'s) has no such thread.
#[cfg(target_os = "linux")]
#[test]
fn pages_ahead_of_the_frontier_are_faulted_in_without_changing_a_byte() {
    use crate::pmem::prefault::{AHEAD_BYTES, STEP_BYTES};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefault.pmem");
    let len_bytes = 64 << 20;
    let options = MmapOptions { msync: false, ..MmapOptions::default() };
    let region = MmapRegion::create(&path, len_bytes, options).unwrap();
    assert_eq!(region.prefaulted_bytes(), 0, "nothing persisted yet: nothing faulted in");
    // Data in the range the thread will populate, written (not persisted, so the frontier
    // stays put) before it starts, and one word below the frontier.
    let marks: Vec<u64> = (0..16).map(|i| 4 * STEP_BYTES + i * STEP_BYTES + 8 * i).collect();
    for (i, &at) in marks.iter().enumerate() {
        region.write(at, &(i as u64 + 1).to_le_bytes()).unwrap();
    }
    region.write(STEP_BYTES / 2, b"below").unwrap();
    // The frontier: the end of this persist, rounded up to a step (2 steps).
    region.write_persist(STEP_BYTES + 64, b"frontier").unwrap();
    let expected = AHEAD_BYTES;
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
    while region.prefaulted_bytes() < expected && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(region.prefaulted_bytes(), expected, "[frontier, frontier + AHEAD) populated");
    for (i, &at) in marks.iter().enumerate() {
        assert_eq!(region.load_u64(at).unwrap(), i as u64 + 1, "mark {i} at {at} unchanged");
    }
    let mut word = [0u8; 8];
    region.read(3 * STEP_BYTES + 64, &mut word).unwrap();
    assert_eq!(word, [0; 8], "the populated pages read as the zeros they were");
    region.sync_all().unwrap();
    drop(region);
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(on_disk.len() as u64, len_bytes);
    for (i, &at) in marks.iter().enumerate() {
        let at = at as usize;
        assert_eq!(on_disk[at..at + 8], (i as u64 + 1).to_le_bytes(), "mark {i} on disk");
    }
    let below = (STEP_BYTES / 2) as usize;
    assert_eq!(&on_disk[below..below + 5], b"below");

    let private = MmapRegion::open_private(&path, options).unwrap();
    private.write_persist(8 * STEP_BYTES, b"not kept").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(private.prefaulted_bytes(), 0, "a private mapping has no prefault thread");
}

/// A reopened region holds data above its first persists, which populating would dirty and
/// write again: it gets no prefault thread.
#[cfg(target_os = "linux")]
#[test]
fn an_opened_region_has_no_prefault_thread() {
    use crate::pmem::prefault::STEP_BYTES;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reopened.pmem");
    let options = MmapOptions { msync: false, ..MmapOptions::default() };
    drop(MmapRegion::create(&path, 16 << 20, options).unwrap());
    let region = MmapRegion::open(&path, options).unwrap();
    region.write_persist(STEP_BYTES, b"data").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(region.prefaulted_bytes(), 0, "an opened region has no prefault thread");
}
