//! A checkpoint synced and committed while the tree goes on changing (the engine syncs
//! without its tree lock: `LaTree::checkpoint_unsynced`, `tree/checkpoint_files.rs`): a crash
//! at any point reopens the last committed checkpoint exactly, never one damaged by the
//! updates (emptyings, splits, merges, freed and reused node ids) made between a checkpoint
//! and its commit.
//!
//! Setup as in `tree_checkpoint_crash.rs`. Workload (crashing at operation 1, 2, 3, ...):
//! reopen the committed checkpoint, updates, `checkpoint_unsynced`, more updates *before*
//! its files are synced, the sync, the commit, `checkpoint_committed`, more updates, a
//! second `checkpoint_unsynced` with updates after it, never committed. Check: the newest
//! committed checkpoint opens, `verify()` passes, and the tree equals the oracle of exactly
//! the updates before that checkpoint. Unsynced writes survive at random, so the updates
//! made in the window may reach the disk before the commit.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::Result;
use lamina_core::codec::{Decode, Encode};
use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{LaTree, LaTreeOptions, TreeCheckpoint};
use lamina_storage::crash_points::for_each_crash_point;
use lamina_storage::{DeviceProfile, FaultPlan, OpenMode, Storage};

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u32 = 150;

fn options(device: DeviceProfile) -> LaTreeOptions {
    let mut options = LaTreeOptions::for_device(device);
    options.node_bytes = NodeLayout::node_bytes_min_for(4, 12).max(96);
    options.key_bytes_max = 4;
    options.value_bytes_max = 12;
    options.buffer_entries_max = 6;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 2048;
    options
}

fn key(k: u32) -> Vec<u8> {
    format!("{k:04}").into_bytes()
}

/// The `i`-th update of batch `seed`: `(key, Some(value))` a put, `(key, None)` a delete.
fn update(seed: u32, i: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    let x = seed.wrapping_mul(7919).wrapping_add(i.wrapping_mul(104_729)) % KEYS;
    if i % 4 == 3 {
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

/// What an engine's superblock commit does: the encoded checkpoint in its own file, synced,
/// the directory synced.
fn commit(storage: &dyn Storage, name: &str, checkpoint: &TreeCheckpoint) -> Result<()> {
    let file = storage.open(name, OpenMode::CreateNew)?;
    file.write_all_at(0, &checkpoint.encode())?;
    file.sync_data()?;
    storage.sync_dir()
}

/// The checkpoint in file `name`, if it exists and decodes (a torn commit does not).
fn committed(storage: &dyn Storage, name: &str) -> Result<Option<TreeCheckpoint>> {
    if !storage.exists(name)? {
        return Ok(None);
    }
    Ok(TreeCheckpoint::decode(&storage.read_all(name)?).ok())
}

const SETUP: [(u32, u32); 2] = [(1, 400), (2, 200)];
const WORKLOAD: [(u32, u32); 4] = [(3, 150), (4, 150), (5, 80), (6, 40)];

fn setup(storage: &Arc<dyn Storage>, device: DeviceProfile) -> Result<()> {
    let mut tree = LaTree::create(storage.as_ref(), options(device))?;
    for (i, &(seed, count)) in SETUP.iter().enumerate() {
        apply(&mut tree, seed, count)?;
        let checkpoint = tree.checkpoint()?;
        if i == 1 {
            commit(storage.as_ref(), "checkpoint.1", &checkpoint)?;
        }
        tree.checkpoint_committed();
    }
    // Updates after the last commit, lost with the tree (never checkpointed).
    apply(&mut tree, 99, 100)
}

fn workload(storage: &Arc<dyn Storage>, device: DeviceProfile) -> Result<()> {
    let storage = storage.as_ref();
    let checkpoint = committed(storage, "checkpoint.1")?.expect("the setup committed it");
    let mut tree = LaTree::open(storage, options(device), &checkpoint)?;
    let [first, second, third, fourth] = WORKLOAD;
    apply(&mut tree, first.0, first.1)?;
    let (checkpoint, files) = tree.checkpoint_unsynced()?;
    // The window: the tree changes before the checkpoint is synced and committed.
    apply(&mut tree, second.0, second.1)?;
    files.sync()?;
    commit(storage, "checkpoint.2", &checkpoint)?;
    tree.checkpoint_committed();
    apply(&mut tree, third.0, third.1)?;
    // Taken, never committed, with updates after it.
    let (_never, files) = tree.checkpoint_unsynced()?;
    apply(&mut tree, fourth.0, fourth.1)?;
    files.sync()
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
    let mut oracle = Oracle::new();
    for (seed, count) in SETUP {
        oracle = apply_to(&oracle, seed, count);
    }
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
    assert!(runs.crash_points > 100, "{device}: {runs:?}");
}

#[test]
fn ssd_crashes_with_updates_in_the_window_reopen_the_committed_checkpoint() {
    run(DeviceProfile::ssd_msp7525(), &FaultPlan::none().with_seed(2).unsynced_survival(50));
}

#[test]
fn nand_crashes_with_updates_in_the_window_reopen_the_committed_checkpoint() {
    run(DeviceProfile::nand_toshiba(), &FaultPlan::none().with_seed(3).unsynced_survival(50));
}
