//! Superblock atomicity under every injected crash point, and recovery from damaged slots.

use std::cell::Cell;
use std::sync::Arc;

use lamina_core::Error;
use lamina_storage::{
    FaultPlan, FaultyStorage, MemoryStorage, SlotState, Storage, Superblock, for_each_crash_point,
};

const OWNER: u64 = 42;

fn state(i: u64) -> Vec<u8> {
    // Multi-sector payloads so torn writes can split them.
    format!("state {i} ").repeat(200).into_bytes()
}

#[test]
fn every_crash_point_leaves_an_acknowledged_state() {
    let acked = Cell::new(0u64);
    for seed in 0..8 {
        // Half the seeds also let unsynced writes survive the crash at random.
        let survival = if seed % 2 == 0 { 0 } else { 50 };
        let runs = for_each_crash_point(
            &FaultPlan::none().with_seed(seed).unsynced_survival(survival),
            |_| Ok(()),
            |s| {
                acked.set(0);
                let mut sb = Superblock::open(s.clone(), "SUPER", OWNER, 4096)?;
                for i in 1..=4 {
                    assert_eq!(sb.commit(&state(i))?, i);
                    acked.set(i);
                }
                Ok(())
            },
            |s, k| {
                let sb = Superblock::open(s.clone(), "SUPER", OWNER, 4096)?;
                let seq = sb.current().map_or(0, |c| c.seq);
                assert!(
                    seq >= acked.get(),
                    "crash at {k}: lost acknowledged commit {}",
                    acked.get()
                );
                assert!(seq <= acked.get() + 1, "crash at {k}: state from the future");
                if let Some(c) = sb.current() {
                    assert_eq!(c.payload, state(c.seq), "crash at {k}: wrong payload");
                }
                // Recovery can continue committing.
                let mut sb = sb;
                sb.commit(b"after recovery")?;
                Ok(())
            },
        )
        .unwrap();
        // open(1) exists-check is free; per commit: write + sync (+ sync_dir the first time).
        assert_eq!(runs.ops_to_complete, 1 + 3 + 3 * 2);
        assert_eq!(runs.crash_points, runs.ops_to_complete);
    }
}

#[test]
fn a_damaged_newest_slot_falls_back_to_the_previous_state() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none());
    let s: Arc<dyn Storage> = Arc::new(faulty.clone());
    let mut sb = Superblock::open(s.clone(), "SUPER", OWNER, 4096).unwrap();
    sb.commit(b"one").unwrap();
    sb.commit(b"two").unwrap(); // slot 0
    faulty.flip_bit("SUPER", 40 * 8).unwrap();
    let sb = Superblock::open(s.clone(), "SUPER", OWNER, 4096).unwrap();
    assert_eq!(sb.current().unwrap().payload, b"one");
    assert!(matches!(sb.slots()[0], SlotState::Damaged { .. }));
    assert_eq!(sb.slots()[1], SlotState::Valid { seq: 1 });

    faulty.flip_bit("SUPER", (4096 + 40) * 8).unwrap();
    let err = Superblock::open(s.clone(), "SUPER", OWNER, 4096).unwrap_err();
    assert!(
        matches!(&err, Error::Corruption { file, .. } if file.to_string_lossy().ends_with("SUPER")),
        "{err}"
    );
    assert!(err.to_string().contains("both superblock slots"));
}

#[test]
fn foreign_owner_and_bad_sizes_are_refused() {
    let s: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut sb = Superblock::open(s.clone(), "SUPER", OWNER, 4096).unwrap();
    assert!(sb.commit(&vec![0; sb.payload_capacity() + 1]).unwrap_err().is_invalid_argument());
    assert_eq!(sb.current(), None);
    sb.commit(&vec![7; sb.payload_capacity()]).unwrap();
    let other = Superblock::open(s.clone(), "SUPER", OWNER + 1, 4096).unwrap();
    assert_eq!(other.current(), None, "another owner's slots are not ours");
    assert!(matches!(other.slots()[1], SlotState::Damaged { .. }));
    assert!(Superblock::open(s, "X", OWNER, 1000).unwrap_err().is_invalid_argument());
}
