//! The simulated region: volatile vs durable image, crash points, tearing, byte access.

use std::sync::Arc;
use std::thread;

use lamina_core::checksum::crc32c;

use crate::pmem::*;

fn region(len_bytes: u64) -> SimulatedRegion {
    SimulatedRegion::new(len_bytes, SimulatedOptions::default()).unwrap()
}

fn read(region: &impl PmemRegion, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    region.read(offset, &mut buf).unwrap();
    buf
}

#[test]
fn sizes_are_validated() {
    for bad in [0, 63, 100, REGION_BYTES_MAX + 64] {
        assert!(
            SimulatedRegion::new(bad, SimulatedOptions::default())
                .unwrap_err()
                .is_invalid_argument()
        );
    }
    let slow = SimulatedOptions { latency_ns_per_line: LATENCY_NS_PER_LINE_MAX + 1 };
    assert!(SimulatedRegion::new(64, slow).unwrap_err().is_invalid_argument());
}

#[test]
fn data_not_persisted_is_gone_and_persisted_data_survives() {
    let r = region(4096);
    r.write(0, &[1u8; 100]).unwrap();
    r.persist(0, 100).unwrap();
    r.write(1000, &[2u8; 50]).unwrap(); // never persisted
    r.write(130, &[3u8; 4]).unwrap(); // persisted with its line (128..192) only
    r.persist(129, 1).unwrap();
    r.write(200, &[4u8; 4]).unwrap(); // line 192..256: not persisted
    let after = r.crash();
    assert_eq!(read(&after, 0, 100), [1u8; 100]);
    assert_eq!(read(&after, 1000, 50), [0u8; 50]);
    assert_eq!(read(&after, 130, 4), [3u8; 4], "persist covers whole cache lines");
    assert_eq!(read(&after, 200, 4), [0u8; 4]);
    // The original region still has everything; the crashed one persists independently.
    assert_eq!(read(&r, 1000, 50), [2u8; 50]);
    let mut durable = [0u8; 4];
    r.read_durable(200, &mut durable).unwrap();
    assert_eq!(durable, [0u8; 4]);
}

#[test]
fn crash_point_keeps_earlier_persists_only() {
    let r = region(1024);
    r.set_crash_point(Some(CrashPoint { persist_no: 3, tear_seed: None }));
    for i in 0..5u8 {
        r.write(u64::from(i) * 64, &[i + 1; 64]).unwrap();
        r.persist(u64::from(i) * 64, 64).unwrap();
        assert_eq!(r.crash_point_reached(), i >= 2);
    }
    r.persist(0, 0).unwrap(); // empty: not a persist
    assert_eq!(r.persist_count(), 5);
    let after = r.crash();
    for i in 0..5u8 {
        let want = if i < 2 { i + 1 } else { 0 };
        assert_eq!(read(&after, u64::from(i) * 64, 64), [want; 64], "line {i}");
    }
    assert_eq!(after.persist_count(), 0);
}

#[test]
fn torn_persist_is_detected_by_a_checksum() {
    // A 256-byte record: 248 bytes of payload and the CRC of the payload in the last word.
    let mut record = vec![0u8; 256];
    for (i, b) in record[..248].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(7).wrapping_add(1);
    }
    let crc = u64::from(crc32c(&record[..248]));
    record[248..].copy_from_slice(&crc.to_le_bytes());
    let (mut lost, mut complete, mut torn) = (0, 0, 0);
    for seed in 0..64 {
        let r = region(512);
        r.set_crash_point(Some(CrashPoint { persist_no: 1, tear_seed: Some(seed) }));
        r.write_persist(64, &record).unwrap();
        let got = read(&r.crash(), 64, 256);
        let stored = u64::from_le_bytes(got[248..].try_into().unwrap());
        if got.iter().all(|&b| b == 0) {
            lost += 1;
        } else if stored == u64::from(crc32c(&got[..248])) {
            assert_eq!(got, record, "a record passing its checksum is the one written");
            complete += 1;
        } else {
            torn += 1;
        }
        // Tearing is deterministic for a seed.
        let again = region(512);
        again.set_crash_point(Some(CrashPoint { persist_no: 1, tear_seed: Some(seed) }));
        again.write_persist(64, &record).unwrap();
        assert_eq!(read(&again.crash(), 64, 256), got);
    }
    assert!(torn > 50, "lost {lost}, complete {complete}, torn {torn}");
}

#[test]
fn unaligned_bytes_and_words_roundtrip() {
    let r = region(256);
    r.write(3, b"hello, persistent world").unwrap();
    assert_eq!(read(&r, 3, 23), b"hello, persistent world");
    assert_eq!(read(&r, 0, 3), [0, 0, 0]);
    r.store_u64(64, 0xdead_beef).unwrap();
    assert_eq!(r.load_u64(64).unwrap(), 0xdead_beef);
    assert!(r.load_u64(65).unwrap_err().is_invalid_argument());
    assert!(r.store_u64(256, 1).unwrap_err().is_invalid_argument());
    assert!(r.write(250, &[0u8; 7]).unwrap_err().is_invalid_argument());
    assert!(r.read(u64::MAX, &mut [0u8; 2]).unwrap_err().is_invalid_argument());
    assert!(r.persist(200, 57).unwrap_err().is_invalid_argument());
    assert_eq!(read(&r, 250, 6), [0u8; 6], "a refused write changes nothing");
}

#[test]
fn neighbouring_byte_writers_do_not_clobber_each_other() {
    let r = Arc::new(region(64));
    let handles: Vec<_> = (0..8u8)
        .map(|t| {
            let r = r.clone();
            thread::spawn(move || {
                for i in 0..2000u32 {
                    let value = (i as u8).wrapping_add(t);
                    // Thread t owns byte t of each of the 8 words.
                    for w in 0..8u64 {
                        r.write(w * 8 + u64::from(t), &[value]).unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let bytes = read(&*r, 0, 64);
    for w in 0..8 {
        for t in 0..8u8 {
            assert_eq!(bytes[w * 8 + t as usize], (1999u32 as u8).wrapping_add(t));
        }
    }
}

#[test]
fn stats_count_persists_lines_and_fences() {
    let r = region(1024);
    r.persist(0, 1).unwrap();
    r.persist(60, 10).unwrap(); // two lines
    r.persist(0, 0).unwrap();
    r.fence();
    assert_eq!(r.stats(), PmemStats { persists: 2, lines_persisted: 3, fences: 1 });
    let slow = SimulatedRegion::new(128, SimulatedOptions { latency_ns_per_line: 100 }).unwrap();
    slow.persist(0, 128).unwrap();
    assert_eq!(slow.stats().lines_persisted, 2);
}
