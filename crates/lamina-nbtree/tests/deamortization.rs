//! Deamortization (paper section 5.1): with `Deamortization::Foreground` every insert does
//! its share of the pending flush work itself, so the d-tree pages any one insert writes are
//! bounded by `ceil(e W / sigma)` (`e` the insert's bytes, `W` the job's page bound,
//! `lamina_nbtree::flush::work_bound_pages`: O(log_f(n / sigma) f / B) pages per insert)
//! plus what one push writes at once (a leaf and the internal nodes that fill with it), and
//! no insert ever has to finish a job (no stall). Page counts are deterministic.

use lamina_core::{Durability, OrderedIndex};
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};

fn stat(db: &NbTree, name: &str) -> u64 {
    db.stats().extra.iter().find(|(n, _)| *n == name).unwrap().1
}

#[test]
fn every_insert_writes_a_bounded_number_of_pages() {
    let sigma_bytes = 32 << 10;
    let options = NbTreeOptions {
        sigma_bytes,
        page_bytes: 512,
        durability: Durability::None,
        deamortization: Deamortization::Foreground,
        ..NbTreeOptions::default()
    };
    let db = NbTree::volatile(&options).unwrap();
    let value = [7u8; 128];
    let entry = lamina_nbtree::entry::entry_bytes(8, Some(value.len()));
    // A push writes at most one leaf of one page (small entries) and the internal nodes
    // that fill with it (a d-tree of these sizes is at most 4 levels deep).
    let push_pages_max = 1 + 4;
    let mut worst = 0u64;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 0..30_000u64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let bound = db.job_bound_pages();
        let before = db.dtree_pages_written();
        db.put(&state.to_be_bytes(), &value).unwrap();
        let pages = db.dtree_pages_written() - before;
        let allowed = (entry * bound).div_ceil(sigma_bytes) + push_pages_max;
        assert!(pages <= allowed, "insert {i} wrote {pages} pages (bound {allowed}, W {bound})");
        worst = worst.max(pages);
    }
    assert!(stat(&db, "flush_jobs") > 50, "the workload must flush often");
    assert!(stat(&db, "s_tree_height") >= 3, "and grow the s-tree");
    assert_eq!(stat(&db, "flush_stalls"), 0, "no insert ever finished a job");
    assert!(worst > 0);
    db.verify().unwrap();
}
