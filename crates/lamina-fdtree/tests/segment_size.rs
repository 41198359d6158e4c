//! A tree keeps the segment size it was created with: reopened with another
//! `segment_bytes`, it opens, reads everything and writes its new blocks with its own
//! segment size, instead of refusing as `Incompatible`.

use lamina_core::{Durability, OrderedIndex};
use lamina_fdtree::{FdTree, FdTreeOptions};

fn options(segment_bytes: u32) -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 64 << 10,
        block_bytes: 8 << 10,
        segment_bytes,
        key_bytes_max: 16,
        value_bytes_max: 64,
        durability: Durability::None,
        verify_each_merge: true,
        ..FdTreeOptions::default()
    }
}

fn key(i: u32) -> [u8; 8] {
    u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

#[test]
fn a_reopened_tree_keeps_its_segment_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = FdTree::open_dir(dir.path(), &options(4096)).unwrap();
    for i in 0..6000 {
        db.put(&key(i), &i.to_le_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_merges().unwrap();
    db.close().unwrap();
    drop(db);

    for reopen_with in [1024, 512, 4096] {
        let db = FdTree::open_dir(dir.path(), &options(reopen_with)).unwrap();
        assert_eq!(db.with_tree(|t| t.params().segment_bytes).unwrap(), 4096, "{reopen_with}");
        for i in (0..6000).step_by(7) {
            assert_eq!(db.get(&key(i)).unwrap().as_deref(), Some(&i.to_le_bytes()[..]));
        }
        for i in 6000..7000 {
            db.put(&key(i), &i.to_le_bytes()).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_merges().unwrap();
        db.verify().unwrap();
        db.close().unwrap();
    }
    // The other layout options still have to match: only the segment size is the tree's.
    let refused = FdTree::open_dir(dir.path(), &FdTreeOptions::default());
    assert!(matches!(refused, Err(lamina_core::Error::Incompatible { .. })), "{refused:?}");
    let db = FdTree::open_dir(dir.path(), &options(1024)).unwrap();
    assert_eq!(db.get(&key(6999)).unwrap().as_deref(), Some(&6999u32.to_le_bytes()[..]));
}

#[test]
fn a_new_tree_takes_the_segment_size_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let db = FdTree::open_dir(dir.path(), &options(1024)).unwrap();
    assert_eq!(db.with_tree(|t| t.params().segment_bytes).unwrap(), 1024);
}
