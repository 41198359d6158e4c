//! The crash model of `FaultyStorage`: what survives, torn writes, injected errors, bit flips,
//! and the crash-at-every-operation loop.

use std::sync::Arc;

use lamina_core::Error;
use lamina_storage::{
    FailKind, FaultPlan, FaultyStorage, FileOptions, FileStorage, OpenMode, Storage,
    for_each_crash_point, is_simulated_crash,
};

#[test]
fn unsynced_data_is_dropped_synced_data_survives() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none());
    let f = faulty.open("f", OpenMode::Create).unwrap();
    faulty.sync_dir().unwrap();
    f.write_all_at(0, b"durable").unwrap();
    f.sync_data().unwrap();
    f.write_all_at(7, b" and lost").unwrap();
    f.write_all_at(0, b"D").unwrap();
    let g = faulty.open("g", OpenMode::Create).unwrap();
    faulty.sync_dir().unwrap();
    g.write_all_at(0, &[9; 1000]).unwrap();
    g.sync_data().unwrap();
    g.set_len(10).unwrap(); // unsynced truncation: undone
    let recovered = faulty.reopen_after_crash().unwrap();
    assert_eq!(recovered.read_all("f").unwrap(), b"durable");
    assert_eq!(recovered.read_all("g").unwrap(), vec![9; 1000]);
}

#[test]
fn names_survive_only_through_sync_dir() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none());
    for name in ["kept", "removed", "old", "current"] {
        let f = faulty.open(name, OpenMode::Create).unwrap();
        f.write_all_at(0, name.as_bytes()).unwrap();
        f.sync_data().unwrap();
    }
    faulty.sync_dir().unwrap();
    let new = faulty.open("new", OpenMode::CreateNew).unwrap();
    new.write_all_at(0, b"new").unwrap();
    new.sync_data().unwrap(); // data durable, name not
    faulty.remove("removed").unwrap();
    faulty.rename("old", "current").unwrap(); // replaces "current"
    assert_eq!(faulty.list().unwrap(), vec!["current", "kept", "new"]);
    let recovered = faulty.reopen_after_crash().unwrap();
    assert_eq!(recovered.list().unwrap(), vec!["current", "kept", "old", "removed"]);
    assert_eq!(recovered.read_all("current").unwrap(), b"current");
    assert_eq!(recovered.read_all("removed").unwrap(), b"removed");

    // The same steps with a sync_dir are durable.
    recovered.rename("old", "current").unwrap();
    recovered.remove("removed").unwrap();
    recovered.sync_dir().unwrap();
    let again = recovered.reopen_after_crash().unwrap();
    assert_eq!(again.list().unwrap(), vec!["current", "kept"]);
    assert_eq!(again.read_all("current").unwrap(), b"old");
}

#[test]
fn everything_fails_after_the_crash() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none().crash_at(3));
    let f = faulty.open("f", OpenMode::Create).unwrap(); // op 1
    f.write_all_at(0, b"x").unwrap(); // op 2
    let err = f.sync_data().unwrap_err(); // op 3: the crash
    assert!(is_simulated_crash(&err), "{err}");
    assert!(faulty.crashed());
    assert!(is_simulated_crash(&f.write_all_at(0, b"y").unwrap_err()));
    assert!(is_simulated_crash(&f.len().unwrap_err()));
    assert!(is_simulated_crash(&faulty.open("g", OpenMode::Create).err().unwrap()));
    assert!(is_simulated_crash(&faulty.list().unwrap_err()));
    assert!(!faulty.reopen_after_crash().unwrap().exists("f").unwrap());
}

#[test]
fn a_crashing_write_is_torn_at_sector_granularity() {
    let mut kept_lengths = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let faulty = FaultyStorage::in_memory(FaultPlan::none().with_seed(seed).crash_at(5));
        let f = faulty.open("f", OpenMode::Create).unwrap();
        f.write_all_at(0, &[1; 4096]).unwrap();
        f.sync_data().unwrap();
        faulty.sync_dir().unwrap();
        // Op 5: a 4 KiB overwrite starting 100 bytes into sector 0: 9 sectors touched.
        assert!(f.write_all_at(100, &[2; 4096]).is_err());
        let data = faulty.reopen_after_crash().unwrap().read_all("f").unwrap();
        let kept = data[100..].iter().take_while(|&&b| b == 2).count();
        assert!(data[..100].iter().all(|&b| b == 1));
        assert!(data[100 + kept..].iter().all(|&b| b == 1), "torn data is a prefix");
        assert!(kept == 0 || (100 + kept) % 512 == 0, "tear at a sector boundary: {kept}");
        assert!(kept < 4096, "never all of it");
        assert_eq!(data.len(), 4096.max(100 + kept));
        kept_lengths.insert(kept);
    }
    assert!(kept_lengths.len() > 4, "seeds choose different tears: {kept_lengths:?}");
    assert!(kept_lengths.contains(&0));
}

#[test]
fn injected_errors_change_nothing() {
    let plan = FaultPlan::none().fail_at(2, FailKind::Eio, false);
    let faulty = FaultyStorage::in_memory(plan);
    let f = faulty.open("f", OpenMode::Create).unwrap();
    let err = f.write_all_at(0, b"lost").unwrap_err();
    assert!(matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(libc::EIO)));
    assert_eq!(f.len().unwrap(), 0);
    f.write_all_at(0, b"ok").unwrap(); // op 3 succeeds
    assert_eq!(faulty.ops(), 3);

    let faulty = FaultyStorage::in_memory(FaultPlan::none().fail_at(2, FailKind::NoSpace, true));
    let f = faulty.open("f", OpenMode::Create).unwrap();
    for _ in 0..3 {
        assert!(matches!(f.write_all_at(0, b"x").unwrap_err(), Error::NoSpace { .. }));
    }
    assert!(matches!(f.sync_data().unwrap_err(), Error::NoSpace { .. }));
    // Space is back: operations succeed again (and still count).
    faulty.stop_failing();
    f.write_all_at(0, b"x").unwrap();
    f.sync_data().unwrap();
    assert_eq!(faulty.ops(), 7);
}

#[test]
fn bit_flips_corrupt_what_is_stored() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none().flip_bit_at(2).with_seed(3));
    let f = faulty.open("f", OpenMode::Create).unwrap();
    let data = vec![0u8; 64];
    f.write_all_at(0, &data).unwrap();
    let stored = faulty.read_all("f").unwrap();
    assert_eq!(stored.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    faulty
        .flip_bit(
            "f",
            stored.iter().position(|&b| b != 0).unwrap() as u64 * 8
                + u64::from(stored.iter().find(|&&b| b != 0).unwrap().trailing_zeros()),
        )
        .unwrap();
    assert_eq!(faulty.read_all("f").unwrap(), data);
}

#[test]
fn wraps_the_file_backend() {
    let dir = tempfile::tempdir().unwrap();
    let inner = Arc::new(FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap());
    let faulty = FaultyStorage::new(inner, FaultPlan::none()).unwrap();
    let f = faulty.open("f", OpenMode::Create).unwrap();
    f.write_all_at(0, b"abc").unwrap();
    f.sync_data().unwrap();
    faulty.sync_dir().unwrap();
    f.write_all_at(3, b"def").unwrap();
    faulty.remove("f").unwrap();
    let recovered = faulty.reopen_after_crash().unwrap();
    assert_eq!(recovered.read_all("f").unwrap(), b"abc");
    let on_disk = FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap();
    assert_eq!(on_disk.list().unwrap(), vec!["f"], "no trash left behind");
}

/// The classic atomic replace: write a temporary, sync it, rename it over the live file,
/// sync the directory. After a crash anywhere, the live file is the old or the new version.
#[test]
fn atomic_replace_is_all_or_nothing_at_every_crash_point() {
    for seed in 0..4 {
        let runs = for_each_crash_point(
            &FaultPlan::none().with_seed(seed),
            |s| {
                let f = s.open("CURRENT", OpenMode::Create)?;
                f.write_all_at(0, &[b'o'; 2000])?;
                f.sync_data()?;
                s.sync_dir()
            },
            |s| {
                let tmp = s.open("CURRENT.tmp", OpenMode::Create)?;
                tmp.write_all_at(0, &[b'n'; 1500])?;
                tmp.write_all_at(1500, &[b'n'; 1500])?;
                tmp.sync_data()?;
                s.rename("CURRENT.tmp", "CURRENT")?;
                s.sync_dir()
            },
            |s, _k| {
                let data = s.read_all("CURRENT")?;
                assert!(data == vec![b'o'; 2000] || data == vec![b'n'; 3000], "torn CURRENT");
                Ok(())
            },
        )
        .unwrap();
        assert_eq!((runs.crash_points, runs.ops_to_complete), (6, 6));
    }
}

#[test]
fn crash_loop_reports_where_a_check_fails() {
    let failure = for_each_crash_point(
        &FaultPlan::none(),
        |_| Ok(()),
        |s| {
            let f = s.open("f", OpenMode::Create)?;
            f.write_all_at(0, b"unsynced")
        },
        |s, _| {
            if s.exists("f")? { Ok(()) } else { Err(Error::corruption("f", 0, "missing")) }
        },
    )
    .unwrap_err();
    assert_eq!((failure.crash_op, failure.stage), (Some(1), "check"));
    assert!(failure.to_string().contains("crash at operation 1"));
}

#[test]
fn unsynced_writes_may_survive_in_any_order_when_asked() {
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let faulty =
            FaultyStorage::in_memory(FaultPlan::none().with_seed(seed).unsynced_survival(50));
        let f = faulty.open("log", OpenMode::Create).unwrap();
        faulty.sync_dir().unwrap();
        f.write_all_at(0, b"AAAA").unwrap();
        f.write_all_at(4, b"BBBB").unwrap();
        let data = faulty.reopen_after_crash().unwrap().read_all("log").unwrap();
        assert!(
            [&b""[..], b"AAAA", b"AAAABBBB", b"\0\0\0\0BBBB"].contains(&data.as_slice()),
            "{data:?}"
        );
        outcomes.insert(data);
    }
    assert_eq!(outcomes.len(), 4, "later writes can survive without earlier ones");
}

#[test]
fn accounting_options_carry_over_a_crash() {
    use lamina_storage::{AccountingOptions, DeviceProfile, MemoryStorage};
    let options =
        AccountingOptions { device: DeviceProfile::ssd_msp7525(), ..AccountingOptions::default() };
    let faulty =
        FaultyStorage::with_accounting(Arc::new(MemoryStorage::new()), FaultPlan::none(), options)
            .unwrap();
    let f = faulty.open("f", OpenMode::Create).unwrap();
    f.write_all_at(4096, &[1; 4096]).unwrap(); // random write: 8.3 ms modeled
    f.sync_data().unwrap();
    faulty.sync_dir().unwrap();
    assert_eq!(faulty.io_stats().modeled_device_ns, 8_300_000);
    let recovered = faulty.reopen_after_crash().unwrap();
    let st = recovered.io_stats();
    assert_eq!((st.live_bytes, st.writes(), st.modeled_device_ns), (8192, 0, 0));
    recovered.open("f", OpenMode::Existing).unwrap().read_exact_at(4096, &mut [0; 4096]).unwrap();
    assert_eq!(recovered.io_stats().modeled_device_ns, 110_000);
}

#[test]
fn threads_see_the_crash_and_synced_files_survive() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none().crash_at(60));
    std::thread::scope(|scope| {
        for t in 0..4u8 {
            let faulty = faulty.clone();
            scope.spawn(move || {
                let name = format!("t{t}");
                let run = || -> lamina_core::Result<()> {
                    let f = faulty.open(&name, OpenMode::Create)?;
                    faulty.sync_dir()?;
                    for i in 0..100u64 {
                        f.write_all_at(i, &[t])?;
                        f.sync_data()?;
                    }
                    Ok(())
                };
                let err = run().unwrap_err();
                assert!(is_simulated_crash(&err), "{err}");
            });
        }
    });
    assert_eq!(faulty.ops(), 60);
    let recovered = faulty.reopen_after_crash().unwrap();
    for name in recovered.list().unwrap() {
        let t = name[1..].parse::<u8>().unwrap();
        assert!(recovered.read_all(&name).unwrap().iter().all(|&b| b == t));
    }
}

#[test]
fn a_punch_is_durable_at_once_and_never_undone() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none());
    let f = faulty.open("f", OpenMode::Create).unwrap();
    faulty.sync_dir().unwrap();
    f.write_all_at(0, &[b'a'; 3000]).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(500, &[b'b'; 1000]).unwrap(); // unsynced, overlaps the punch
    f.punch_hole(1000, 1000).unwrap(); // never synced
    f.write_all_at(1200, b"cc").unwrap(); // unsynced write into the hole: undone to zeros
    let recovered = faulty.reopen_after_crash().unwrap();
    let data = recovered.read_all("f").unwrap();
    assert_eq!(data.len(), 3000);
    assert!(data[..1000].iter().all(|&b| b == b'a'), "unsynced 'b's outside the hole undone");
    assert!(data[1000..2000].iter().all(|&b| b == 0), "the punched range never comes back");
    assert!(data[2000..].iter().all(|&b| b == b'a'));
}

#[test]
fn a_punch_is_an_operation_for_fault_plans() {
    // Ops: 1 open, 2 write, 3 sync, 4 punch.
    let plan = FaultPlan::none().fail_at(4, FailKind::Eio, false);
    let faulty = FaultyStorage::in_memory(plan);
    let f = faulty.open("f", OpenMode::Create).unwrap();
    f.write_all_at(0, &[1; 100]).unwrap();
    f.sync_data().unwrap();
    let err = f.punch_hole(0, 50).unwrap_err();
    assert!(matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(libc::EIO)));
    assert_eq!(faulty.read_all("f").unwrap(), vec![1; 100], "a failed punch changes nothing");
    assert_eq!(faulty.io_stats().punches, 0);
    f.punch_hole(0, 50).unwrap();
    assert_eq!(faulty.ops(), 7, "4 failed punch, 5-6 read_all (open, read), 7 punch");
    assert_eq!(faulty.io_stats().punches, 1);
}

#[test]
fn every_crash_point_around_a_punch_leaves_before_or_after() {
    let runs = for_each_crash_point(
        &FaultPlan::none(),
        |s| {
            let f = s.open("level", OpenMode::Create)?;
            f.write_all_at(0, &[b'o'; 8192])?;
            f.sync_data()?;
            s.sync_dir()
        },
        |s| {
            let f = s.open("level", OpenMode::Existing)?;
            f.write_all_at(8192, &[b'n'; 4096])?;
            f.sync_data()?;
            f.punch_hole(0, 4096)?; // the old block, once its successor is durable
            f.sync_data()
        },
        |s, _k| {
            let data = s.read_all("level")?;
            let old_block_gone = data[..4096].iter().all(|&b| b == 0);
            assert!(old_block_gone || data[..4096].iter().all(|&b| b == b'o'));
            assert!(data[4096..8192].iter().all(|&b| b == b'o'));
            if old_block_gone {
                assert_eq!(&data[8192..], &[b'n'; 4096], "punched only after the new block");
            }
            Ok(())
        },
    )
    .unwrap();
    // open, write, sync, punch, sync.
    assert_eq!(runs.ops_to_complete, 5);
}
