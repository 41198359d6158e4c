//! A removed leaf is not freed while an optimistic traversal may still visit it.
//!
//! Scenario (per-leaf allocation, `OlcInner`): a writer's traversal reaches leaf `L` and is
//! held just before its `visit` (still inside the optimistic section, pinned); another thread
//! then deletes every key of `L`, which removes it. Without deferred reuse `L` would be
//! deallocated at once, its memory free for a blob, and the held writer's lock attempt would
//! write that blob's word. With it, the removal waits for the held traversal: `L` stays an
//! allocated, locked leaf until the writer has moved on (its lock attempt fails, it restarts
//! and writes into the leaf before `L`), and only then is `L` freed, leak-free.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{FILE_ID, check_tree, region};
use lamina_fptree::inner::{InnerIndex, LeafId, OlcInner, Visit};
use lamina_fptree::leaf::LEAF_MAGIC;
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::{PPtr, PmemRegion, SimulatedRegion};

/// When set, the next `visit` records its leaf in `HELD_LEAF` and waits until `RELEASE`.
static HOLD_NEXT_VISIT: AtomicBool = AtomicBool::new(false);
static HELD_LEAF: AtomicU64 = AtomicU64::new(0);
static RELEASE: AtomicBool = AtomicBool::new(false);
/// One test at a time uses the statics.
static SERIAL: Mutex<()> = Mutex::new(());

/// `OlcInner` whose `locate` can be held between the traversal and the `visit`.
struct HoldingInner(OlcInner);

impl InnerIndex for HoldingInner {
    fn build(leaves: Vec<(Box<[u8]>, LeafId)>) -> Self {
        HoldingInner(OlcInner::build(leaves))
    }

    fn locate<T>(
        &self,
        key: &[u8],
        mut visit: impl FnMut(LeafId, Option<LeafId>) -> Visit<T>,
        undo: impl FnMut(T),
    ) -> T {
        self.0.locate(
            key,
            |leaf, prev| {
                if HOLD_NEXT_VISIT.swap(false, Ordering::AcqRel) {
                    HELD_LEAF.store(leaf, Ordering::Release);
                    while !RELEASE.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                visit(leaf, prev)
            },
            undo,
        )
    }

    fn insert_separator(&self, separator: &[u8], right: LeafId) {
        self.0.insert_separator(separator, right);
    }

    fn remove_leaf(&self, key: &[u8], leaf: LeafId) {
        self.0.remove_leaf(key, leaf);
    }

    fn leaf_count(&self) -> usize {
        self.0.leaf_count()
    }

    fn dram_bytes(&self) -> u64 {
        self.0.dram_bytes()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

#[test]
fn a_removed_leaf_outlives_a_held_traversal() {
    let _serial = SERIAL.lock().unwrap();
    let region = region(4 << 20);
    let tree: Arc<FpTree<SimulatedRegion, HoldingInner>> =
        Arc::new(FpTree::create(region.clone(), FILE_ID, FpTreeConfig::default()).unwrap());
    for i in 0..60 {
        tree.put(&key(i), b"value").unwrap();
    }
    let leaves = tree.leaf_keys().unwrap();
    assert_eq!(leaves.len(), 2, "one split");
    let (second, second_keys) = leaves[1].clone();
    assert!(second_keys.contains(&key(59)));

    // A writer of a key in the second leaf is held just before its visit.
    RELEASE.store(false, Ordering::Release);
    HOLD_NEXT_VISIT.store(true, Ordering::Release);
    let writer = {
        let tree = tree.clone();
        std::thread::spawn(move || tree.put(&key(59), b"after").unwrap())
    };
    while HELD_LEAF.load(Ordering::Acquire) == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let held = HELD_LEAF.load(Ordering::Acquire);
    assert_eq!(held, second, "held on the second leaf");

    // Another thread empties the second leaf, which removes it.
    let deleter = {
        let tree = tree.clone();
        std::thread::spawn(move || {
            for k in second_keys {
                assert!(tree.delete(&k).unwrap());
            }
        })
    };
    // The removal cannot complete while the writer is held: the leaf stays an allocated,
    // locked leaf. (Without deferred reuse it is freed at once: the deleter finishes and
    // the block is free, so this fails however the threads are scheduled.)
    std::thread::sleep(Duration::from_millis(300));
    let pptr = PPtr::new(tree.allocator().file_id(), held);
    assert!(tree.allocator().block_of(pptr).is_ok(), "the removed leaf was freed under a reader");
    assert_eq!(region.load_u64(held + 80).unwrap(), LEAF_MAGIC, "still a leaf");
    assert!(!deleter.is_finished(), "the removal waited for the held traversal");
    assert!(tree.leaf_keys().unwrap().iter().all(|l| l.0 != held), "already unlinked");

    RELEASE.store(true, Ordering::Release);
    writer.join().unwrap();
    deleter.join().unwrap();
    HELD_LEAF.store(0, Ordering::Release);
    assert!(tree.allocator().block_of(pptr).is_err(), "freed once the reader moved on");
    let all = check_tree(&*tree).unwrap();
    assert_eq!(all.get(&key(59)).map(Vec::as_slice), Some(&b"after"[..]));
    assert_eq!(tree.stats().leaves, 1);
}
