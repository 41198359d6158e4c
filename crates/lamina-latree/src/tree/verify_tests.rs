//! `verify()` catches what it claims to: each test breaks one invariant of a valid tree.

use lamina_storage::{DeviceProfile, MemoryStorage};

use super::core::pool_id;
use super::{LaTree, LaTreeOptions};
use crate::buffer::BufferEntry;
use crate::node::{Node, NodeId, NodeLayout};

fn tree(storage: &MemoryStorage) -> LaTree {
    let mut options = LaTreeOptions::for_device(DeviceProfile::host());
    options.node_bytes = NodeLayout::node_bytes_min_for(12, 8);
    options.key_bytes_max = 12;
    options.value_bytes_max = 8;
    options.levels_per_buffer = 1;
    options.buffer_entries_max = 16;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 1024;
    let mut tree = LaTree::create(storage, options).unwrap();
    for i in 0..800u32 {
        tree.put(format!("{:012}", (i * 7) % 800).as_bytes(), b"v").unwrap();
    }
    tree.verify().unwrap();
    tree
}

/// The root's first and last children.
fn root_children(tree: &LaTree) -> (NodeId, NodeId) {
    let root = tree.read_inner(tree.root).unwrap();
    (root.children[0], *root.children.last().unwrap())
}

fn assert_broken(tree: &LaTree, what: &str) {
    let error = tree.verify().expect_err("verify must fail").to_string();
    assert!(error.contains(what), "{error}");
}

#[test]
fn a_buffer_entry_outside_its_node_is_found() {
    let storage = MemoryStorage::new();
    let mut tree = tree(&storage);
    let (first, _) = root_children(&tree);
    let buffer = tree.read_inner(first).unwrap().buffer.unwrap();
    let entry = BufferEntry::put(b"999999999999", b"x", u64::MAX).unwrap();
    tree.pool.append(pool_id(buffer), entry).unwrap();
    assert_broken(&tree, "outside the node's range");
}

#[test]
fn a_missing_buffer_is_found() {
    let storage = MemoryStorage::new();
    let tree = tree(&storage);
    let (first, _) = root_children(&tree);
    let mut inner = tree.read_inner(first).unwrap();
    inner.buffer = None;
    tree.write(first, Node::Inner(inner)).unwrap();
    assert_broken(&tree, "buffer None");
}

#[test]
fn a_broken_sibling_chain_is_found() {
    let storage = MemoryStorage::new();
    let tree = tree(&storage);
    let mut id = tree.root;
    while let Node::Inner(inner) = tree.read(id).unwrap() {
        id = inner.children[0];
    }
    let Node::Leaf(mut leaf) = tree.read(id).unwrap() else { unreachable!() };
    leaf.right_sibling = None;
    tree.write(id, Node::Leaf(leaf)).unwrap();
    assert_broken(&tree, "right sibling");
}

#[test]
fn a_child_on_the_wrong_level_is_found() {
    let storage = MemoryStorage::new();
    let tree = tree(&storage);
    let (first, _) = root_children(&tree);
    // A grandchild hung where a child belongs.
    let grandchild = tree.read_inner(first).unwrap().children[0];
    let mut root = tree.read_inner(tree.root).unwrap();
    root.children[0] = grandchild;
    tree.write(tree.root, Node::Inner(root)).unwrap();
    assert_broken(&tree, "level");
}

#[test]
fn an_orphaned_buffer_is_found() {
    let storage = MemoryStorage::new();
    let mut tree = tree(&storage);
    let entry = BufferEntry::put(b"000000000001", b"x", u64::MAX).unwrap();
    tree.pool.append(pool_id(crate::node::BufferId(u64::MAX)), entry).unwrap();
    assert_broken(&tree, "which no node names");
}

#[test]
fn a_buffer_in_an_unbuffered_tree_is_found() {
    let storage = MemoryStorage::new();
    let mut options = LaTreeOptions::for_device(DeviceProfile::host());
    options.node_bytes = NodeLayout::node_bytes_min_for(12, 8);
    options.key_bytes_max = 12;
    options.value_bytes_max = 8;
    options.buffered = false;
    options.memory_bytes = 1024;
    let mut tree = LaTree::create(&storage, options).unwrap();
    for i in 0..800u32 {
        tree.put(format!("{:012}", (i * 7) % 800).as_bytes(), b"v").unwrap();
    }
    let stats = tree.verify().unwrap();
    assert!(stats.root_level >= 2 && stats.buffers == 0, "{stats:?}");
    // A node naming a buffer.
    let (first, _) = root_children(&tree);
    let Node::Inner(mut inner) = tree.read(first).unwrap() else { panic!("inner") };
    inner.buffer = Some(tree.new_buffer());
    tree.write(first, Node::Inner(inner.clone())).unwrap();
    assert_broken(&tree, "buffer");
    inner.buffer = None;
    tree.write(first, Node::Inner(inner)).unwrap();
    tree.verify().unwrap();
    // A buffer in the pool that no node names.
    let entry = BufferEntry::put(b"000000000001", b"x", u64::MAX).unwrap();
    tree.pool.append(pool_id(crate::node::BufferId(99)), entry).unwrap();
    assert_broken(&tree, "unbuffered tree (latree-btree) holds a buffer");
}
