//! A crash at any point of a reclamation (section 4.3, `tree/reclaim.rs`) reopens the last
//! committed checkpoint exactly.
//!
//! Setup (durable): a tree with small partitions (automatic reclamations happen too), a
//! committed checkpoint, then updates that are lost. Workload (crashing at operation 1, 2,
//! 3, ... with `for_each_crash_point`): reopen the committed checkpoint; updates; a
//! reclamation into the other partition (erasing the setup's leftovers first); a checkpoint
//! committed the way an engine would (after which the old partition is erased); updates; a
//! second reclamation back into the partition the first checkpoint named; a checkpoint never
//! committed; a reclamation that must be deferred (the old partition awaits a commit);
//! updates. Check: the newest checkpoint file that decodes opens, `verify()` passes, and the
//! tree equals a `BTreeMap` oracle of exactly that checkpoint's state. Torn crashing writes;
//! also runs where unsynced writes survive at random. `nand-toshiba` (both files
//! partitioned, nodes copied) and `ssd-msp7525` (buffer files partitioned).

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::Result;
use lamina_core::codec::{Decode, Encode};
use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{LaTree, LaTreeOptions, TreeCheckpoint};
use lamina_storage::crash_points::for_each_crash_point;
use lamina_storage::{DeviceProfile, FaultPlan, OpenMode, Storage};

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u32 = 60;

fn options(device: DeviceProfile) -> LaTreeOptions {
    let mut options = LaTreeOptions::for_device(device);
    options.node_bytes = NodeLayout::node_bytes_min_for(4, 12).max(96);
    options.key_bytes_max = 4;
    options.value_bytes_max = 12;
    options.buffer_entries_max = 40;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 1024;
    options.partition_bytes = 8 << 10;
    options
}

fn key(k: u32) -> Vec<u8> {
    format!("{k:04}").into_bytes()
}

fn update(seed: u32, i: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    let x = seed.wrapping_mul(7919).wrapping_add(i.wrapping_mul(104_729)) % KEYS;
    if i % 5 == 4 {
        (key(x), None)
    } else {
        (key(x), Some(vec![(seed * 31 + i) as u8; (i % 13) as usize]))
    }
}

fn apply(tree: &mut LaTree, seed: u32, count: u32) -> Result<()> {
    for i in 0..count {
        match update(seed, i) {
            (k, Some(v)) => tree.put(&k, &v)?,
            (k, None) => tree.delete(&k)?,
        }
    }
    Ok(())
}

fn apply_to(oracle: &Oracle, seed: u32, count: u32) -> Oracle {
    let mut oracle = oracle.clone();
    for i in 0..count {
        match update(seed, i) {
            (k, Some(v)) => oracle.insert(k, v),
            (k, None) => oracle.remove(&k),
        };
    }
    oracle
}

fn commit(storage: &dyn Storage, name: &str, checkpoint: &TreeCheckpoint) -> Result<()> {
    let file = storage.open(name, OpenMode::CreateNew)?;
    file.write_all_at(0, &checkpoint.encode())?;
    file.sync_data()?;
    storage.sync_dir()
}

fn committed(storage: &dyn Storage, name: &str) -> Result<Option<TreeCheckpoint>> {
    if !storage.exists(name)? {
        return Ok(None);
    }
    Ok(TreeCheckpoint::decode(&storage.read_all(name)?).ok())
}

const SETUP: (u32, u32) = (1, 300);
const WORKLOAD: [(u32, u32); 4] = [(3, 60), (4, 60), (5, 40), (6, 20)];

fn setup(storage: &Arc<dyn Storage>, device: DeviceProfile) -> Result<()> {
    let mut tree = LaTree::create(storage.as_ref(), options(device))?;
    apply(&mut tree, SETUP.0, SETUP.1)?;
    let checkpoint = tree.checkpoint()?;
    commit(storage.as_ref(), "checkpoint.1", &checkpoint)?;
    tree.checkpoint_committed();
    // Lost with the tree: leftovers past the checkpoint, maybe in the other partition.
    apply(&mut tree, 99, 150)?;
    assert!(tree.reclaim()?, "the setup's partition was erasable");
    apply(&mut tree, 98, 20)
}

fn workload(storage: &Arc<dyn Storage>, device: DeviceProfile) -> Result<()> {
    let storage = storage.as_ref();
    let checkpoint = committed(storage, "checkpoint.1")?.expect("the setup committed it");
    let mut tree = LaTree::open(storage, options(device), &checkpoint)?;
    let first_partition = checkpoint.partition;
    let [first, second, third, fourth] = WORKLOAD;
    apply(&mut tree, first.0, first.1)?;
    // Unless the rule just did it, into the other partition (erasing its leftovers first).
    if tree.partition_usage().active == first_partition {
        assert!(tree.reclaim()?, "the other partition is erasable after an open");
    }
    assert_ne!(tree.partition_usage().active, first_partition);
    let checkpoint = tree.checkpoint()?;
    commit(storage, "checkpoint.2", &checkpoint)?;
    tree.checkpoint_committed();
    apply(&mut tree, second.0, second.1)?;
    // Back into the partition checkpoint.1 named (checkpoint.2 is committed).
    if tree.partition_usage().active != first_partition {
        assert!(tree.reclaim()?, "erased after the commit");
    }
    apply(&mut tree, third.0, third.1)?;
    // Taken, never committed.
    tree.checkpoint()?;
    if tree.partition_usage().retired != lamina_latree::tree::Retired::Erased {
        assert!(!tree.reclaim()?, "deferred: the old partition awaits a commit");
    }
    apply(&mut tree, fourth.0, fourth.1)
}

fn check(storage: &Arc<dyn Storage>, device: DeviceProfile, oracles: &[Oracle; 2]) -> Result<()> {
    let storage = storage.as_ref();
    let (checkpoint, oracle) = match committed(storage, "checkpoint.2")? {
        Some(checkpoint) => (checkpoint, &oracles[1]),
        None => (committed(storage, "checkpoint.1")?.expect("durable"), &oracles[0]),
    };
    let tree = LaTree::open(storage, options(device), &checkpoint)?;
    tree.verify()?;
    let all: Oracle = tree.range(b"", None, usize::MAX)?.into_iter().collect();
    let diff = all.iter().filter(|(k, v)| oracle.get(*k) != Some(v)).count();
    assert!(&all == oracle, "not the committed checkpoint: {diff} pairs differ");
    Ok(())
}

fn oracles() -> [Oracle; 2] {
    let oracle = apply_to(&Oracle::new(), SETUP.0, SETUP.1);
    let after_first = apply_to(&oracle, WORKLOAD[0].0, WORKLOAD[0].1);
    [oracle, after_first]
}

fn run(device: DeviceProfile, plan: &FaultPlan) {
    let oracles = oracles();
    let runs = for_each_crash_point(
        plan,
        |storage| setup(storage, device),
        |storage| workload(storage, device),
        |storage, _| check(storage, device, &oracles),
    )
    .unwrap_or_else(|failure| panic!("{device}: {failure}"));
    eprintln!("{device}: {runs:?}");
    assert!(runs.crash_points > 50, "{device}: {runs:?}");
}

#[test]
fn nand_crashes_during_reclamation_reopen_the_committed_checkpoint() {
    run(DeviceProfile::nand_toshiba(), &FaultPlan::none());
}

#[test]
fn ssd_crashes_during_reclamation_reopen_the_committed_checkpoint() {
    run(DeviceProfile::ssd_msp7525(), &FaultPlan::none());
}

#[test]
fn crashes_with_surviving_unsynced_writes_reopen_the_committed_checkpoint() {
    let plan = FaultPlan::none().with_seed(7).unsynced_survival(50);
    run(DeviceProfile::nand_toshiba(), &plan);
    run(DeviceProfile::ssd_msp7525(), &plan);
}
