//! Lookups share the tree lock (`engine/inner.rs`, invariant 1): while one lookup is stuck
//! reading a node from storage, another lookup whose path is cached answers. With lookups
//! holding the lock exclusively (as before) the second one waits for the first and the
//! test fails at its deadline.
//!
//! Also, at the tree: a lookup whose walk under shared access asked for an emptying finishes
//! right when another call emptied that buffer in between.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use lamina_core::{OpenIntent, OrderedIndex};
use lamina_latree::node::{BufferId, NodeLayout};
use lamina_latree::tree::{EmptyWish, LaTree, LaTreeOptions, LookupPass, NODE_FILE};
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{DeviceProfile, FileOp, Hook, HookedStorage, MemoryStorage, Storage};
use parking_lot::{Condvar, Mutex};

/// How long the second lookup may take before the test calls it blocked (it takes
/// microseconds when lookups share the lock).
const BLOCKED_AFTER: Duration = Duration::from_mins(1);

/// Holds reads of the node file while `hold` is set; counts the reads waiting.
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    hold: bool,
    waiting: usize,
}

impl Gate {
    fn set_hold(&self, hold: bool) {
        self.state.lock().hold = hold;
        self.cv.notify_all();
    }

    fn pass(&self, name: &str) {
        let mut state = self.state.lock();
        if name != NODE_FILE {
            return;
        }
        state.waiting += 1;
        self.cv.notify_all();
        while state.hold {
            self.cv.wait(&mut state);
        }
        state.waiting -= 1;
    }

    fn wait_for_waiting(&self) {
        let mut state = self.state.lock();
        while state.waiting == 0 {
            self.cv.wait(&mut state);
        }
    }
}

fn engine_key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// The `host` profile: every cost 0, so ADAPT never asks a lookup to empty a buffer and
/// both lookups below stay on the shared lock.
fn engine_options(intent: OpenIntent) -> LaTreeEngineOptions {
    let mut options = LaTreeEngineOptions::for_device(DeviceProfile::host());
    options.tree.buffer_entries_max = 64;
    options.intent = intent;
    options
}

#[test]
fn a_lookup_answers_while_another_waits_for_a_node_read() {
    let gate = Arc::new(Gate::default());
    let hook_gate = gate.clone();
    let hook: Hook = Arc::new(move |name, op| {
        if op == FileOp::Read {
            hook_gate.pass(name);
        }
    });
    let storage: Arc<dyn Storage> =
        Arc::new(HookedStorage::new(Arc::new(MemoryStorage::new()), hook));
    let keys = 3000;
    let value = |i: u32| vec![(i % 251) as u8; 100];
    {
        let db = LaTreeEngine::open(storage.clone(), &engine_options(OpenIntent::CreateIfMissing))
            .unwrap();
        for i in 0..keys {
            db.put(&engine_key(i), &value(i)).unwrap();
        }
        db.close().unwrap();
    }
    // Reopened: the node cache is cold. The last key's path (root, leaf) is read into it.
    let db = Arc::new(
        LaTreeEngine::open(storage.clone(), &engine_options(OpenIntent::MustExist)).unwrap(),
    );
    let (warm, cold) = (keys - 1, 0);
    assert_eq!(db.get(&engine_key(warm)).unwrap(), Some(value(warm)));

    gate.set_hold(true);
    let stuck = {
        let db = db.clone();
        std::thread::spawn(move || db.get(&engine_key(cold)))
    };
    gate.wait_for_waiting(); // the cold key's leaf read holds its lookup
    let (answered, answer) = mpsc::channel();
    let second = {
        let db = db.clone();
        std::thread::spawn(move || answered.send(db.get(&engine_key(warm))).unwrap())
    };
    let got = answer.recv_timeout(BLOCKED_AFTER);
    gate.set_hold(false); // whatever happened, let both finish
    let got = got.expect("the cached lookup waited for the stuck one: lookups do not share");
    assert_eq!(got.unwrap(), Some(value(warm)));
    second.join().unwrap();
    assert_eq!(stuck.join().unwrap().unwrap(), Some(value(cold)));
    db.close().unwrap();
}

fn tree_options() -> LaTreeOptions {
    // Raw NAND's costs, and a pool of 768 bytes: the root buffer's entries reach flash, so
    // scanning it costs something and ADAPT weighs it.
    let mut options = LaTreeOptions::for_device(DeviceProfile::nand_toshiba());
    options.node_bytes = NodeLayout::node_bytes_min_for(12, 8).max(256);
    options.key_bytes_max = 12;
    options.value_bytes_max = 8;
    options.buffer_entries_max = 64;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 1024;
    options
}

fn tree_key(k: u32) -> Vec<u8> {
    format!("{k:012}").into_bytes()
}

/// Walks lookups of `key` until ADAPT asks for an emptying; the buffer it names.
fn walk_until_empty_wanted(tree: &LaTree, key: &[u8]) -> (EmptyWish, Vec<BufferId>) {
    for _ in 0..100_000 {
        let mut consulted = Vec::new();
        match tree.lookup_pass(key, &mut consulted).unwrap() {
            LookupPass::Found(_) => {}
            LookupPass::Empty(wish) => {
                assert!(!wish.path.is_empty(), "the path leads to the buffered node");
                assert_eq!(consulted.last(), Some(&wish.buffer), "the buffer was offered to ADAPT");
                return (wish, consulted);
            }
        }
    }
    panic!("ADAPT never asked to empty: the savings in hindsight grow with every lookup");
}

#[test]
fn a_lookup_whose_buffer_was_emptied_meanwhile_still_answers() {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, tree_options()).unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..2000u32 {
        let (k, v) = (tree_key((i * 7) % 1000), i.to_le_bytes().to_vec());
        tree.put(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    // A few more puts so that the root buffer holds entries (its scan costs something).
    for i in 0..10u32 {
        let (k, v) = (tree_key(i), vec![9; 8]);
        tree.put(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    let probe = tree_key(3);
    let (wish, consulted) = walk_until_empty_wanted(&tree, &probe);
    assert_eq!(consulted, [wish.buffer], "the root's buffer, the first on the way, is the one");

    // Meanwhile another call empties the buffer (here: the same decision taken in full).
    let root_emptyings = tree.counters().root_emptyings;
    assert_eq!(tree.get(&probe).unwrap(), oracle.get(&probe).cloned());
    assert_eq!(tree.counters().root_emptyings, root_emptyings + 1, "the other call emptied");

    // The first lookup finishes: the root's buffer is not emptied again for it.
    assert_eq!(tree.get_after_pass(&probe, &wish, consulted).unwrap(), oracle.get(&probe).cloned());
    assert_eq!(tree.counters().root_emptyings, root_emptyings + 1, "emptied once");
    tree.verify().unwrap();
    for (k, v) in &oracle {
        assert_eq!(tree.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn a_lookup_that_asked_for_an_emptying_empties_and_answers() {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, tree_options()).unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..2010u32 {
        let (k, v) = (tree_key((i * 7) % 1000), i.to_le_bytes().to_vec());
        tree.put(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    let probe = tree_key(500);
    let (wish, consulted) = walk_until_empty_wanted(&tree, &probe);
    assert_eq!(consulted, [wish.buffer], "the root's buffer, the first on the way, is the one");
    let root_emptyings = tree.counters().root_emptyings;
    assert_eq!(tree.get_after_pass(&probe, &wish, consulted).unwrap(), oracle.get(&probe).cloned());
    assert_eq!(tree.counters().root_emptyings, root_emptyings + 1, "the root's buffer emptied");
    tree.verify().unwrap();
}
