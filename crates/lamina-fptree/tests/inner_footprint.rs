//! `dram_bytes` of `OlcInner`: what the inner nodes hold per leaf (the paper's Figure 10
//! footprint), and that the count follows splits and removals (`verify` recounts it).

use lamina_fptree::inner::{InnerIndex, LeafId, OlcInner};

fn key(i: u64) -> Box<[u8]> {
    // 16-byte keys, the paper's string-key experiments' order of size.
    format!("key{i:013}").into_bytes().into()
}

#[test]
fn a_bulk_loaded_tree_holds_about_its_separators_and_leaf_ids() {
    let count = 100_000u64;
    let inner = OlcInner::build((0..count).map(|i| (key(i), i)).collect());
    inner.verify();
    let per_leaf = inner.dram_bytes() as f64 / count as f64;
    // 16 key bytes, a 4-byte key end and an 8-byte leaf id per separator, plus node
    // overheads shared by about 48 separators per node.
    assert!((28.0..36.0).contains(&per_leaf), "{per_leaf} bytes per leaf");
}

#[test]
fn dram_bytes_follow_splits_and_removals() {
    let inner = OlcInner::build_with_fanout(vec![(key(0), 0)], 4);
    let empty = inner.dram_bytes();
    let mut last = empty;
    for i in 1..2000u64 {
        inner.insert_separator(&key(i * 7919 % 2000), i as LeafId);
        assert!(inner.dram_bytes() > last, "an insert adds bytes");
        last = inner.dram_bytes();
    }
    inner.verify();
    let leaves = inner.leaves();
    for (separator, leaf) in leaves.into_iter().skip(1) {
        inner.remove_leaf(&separator, leaf);
        assert!(inner.dram_bytes() < last, "a removal frees bytes");
        last = inner.dram_bytes();
    }
    inner.verify();
    assert_eq!(inner.leaf_count(), 1);
    assert_eq!(inner.dram_bytes(), empty, "back to one leaf: back to the first footprint");
}
