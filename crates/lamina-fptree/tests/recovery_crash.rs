//! Recovery is itself crash-safe: the recovery of every crash image of a split, a leaf removal
//! and a group allocation is crashed at each of its own persist points (lost and torn), and
//! the next recovery still gives the same tree, leak-free.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{FILE_ID, check_tree, key, value};
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::crash_test::for_each_persist_point;
use lamina_storage::pmem::{CrashPoint, PmemRegion, SimulatedOptions, SimulatedRegion};

const REGION_BYTES: u64 = 256 << 10;

/// The durable images of `workload` crashed at each of its persist points (lost), after
/// `setup` ran to completion.
fn crash_images(
    config: FpTreeConfig,
    setup: impl Fn(&FpTree<SimulatedRegion>),
    workload: impl Fn(&FpTree<SimulatedRegion>),
) -> Vec<SimulatedRegion> {
    let fresh = Arc::new(SimulatedRegion::new(REGION_BYTES, SimulatedOptions::default()).unwrap());
    setup(&FpTree::create(fresh.clone(), FILE_ID, config).unwrap());
    let base = fresh.crash();
    let mut images = Vec::new();
    for k in 1.. {
        let region = Arc::new(base.crash());
        region.set_crash_point(Some(CrashPoint { persist_no: k, tear_seed: None }));
        workload(&FpTree::open(region.clone(), config).unwrap());
        if !region.crash_point_reached() {
            return images;
        }
        images.push(region.crash());
    }
    unreachable!()
}

/// Crashes the recovery of `image` at every persist point and checks that recovering again
/// gives the tree a crash-free recovery gives.
fn crash_recovery_of(image: &SimulatedRegion, config: FpTreeConfig) -> u64 {
    let clean = FpTree::<SimulatedRegion>::open(Arc::new(image.crash()), config).unwrap();
    let expected: BTreeMap<_, _> = check_tree(&clean).unwrap();
    let words = image.len_bytes() / 8;
    let runs = for_each_persist_point(
        image.len_bytes(),
        &[None, Some(3)],
        |region| {
            for w in 0..words {
                region.store_u64(w * 8, image.load_u64(w * 8)?)?;
            }
            region.persist(0, image.len_bytes())
        },
        |region| FpTree::<SimulatedRegion>::open(region.clone(), config).map(drop),
        |recovered, point| {
            let tree = FpTree::<SimulatedRegion>::open(Arc::new(recovered), config)?;
            assert_eq!(check_tree(&tree)?, expected, "recovery crashed at {point:?}");
            Ok(())
        },
    )
    .unwrap_or_else(|failure| panic!("{failure:?}"));
    runs.crash_points
}

fn scenario(config: FpTreeConfig, inserted: u64, deleted: std::ops::Range<u64>, last: u64) {
    let images = crash_images(
        config,
        |tree| {
            for i in 0..inserted {
                tree.put(&key(i), &value(i, 0)).unwrap();
            }
            for i in deleted.clone() {
                tree.delete(&key(i)).unwrap();
            }
        },
        |tree| {
            if deleted.is_empty() {
                tree.put(&key(last), &value(last, 0)).unwrap();
            } else {
                tree.delete(&key(last)).unwrap();
            }
        },
    );
    assert!(images.len() > 10, "{}", images.len());
    let points: u64 = images.iter().map(|image| crash_recovery_of(image, config)).sum();
    assert!(points > 0, "some recoveries had work to do");
}

#[test]
fn recovery_of_a_split_survives_crashes() {
    scenario(FpTreeConfig::default(), 48, 0..0, 48);
}

#[test]
fn recovery_of_a_leaf_removal_survives_crashes() {
    scenario(FpTreeConfig::default(), 73, 48..72, 72);
}

#[test]
fn recovery_of_a_group_allocation_and_release_survives_crashes() {
    let config = FpTreeConfig { leaf_groups: true, group_leaves: 2, ..FpTreeConfig::default() };
    scenario(config, 72, 0..0, 72);
    scenario(config, 73, 48..72, 72);
}
