//! `OlcInner` against `ReferenceInner` (and a `BTreeMap` of separators) on random sequences
//! of build / insert_separator / remove_leaf / locate, at small fanouts so that short
//! sequences split and empty nodes at every level, collapse roots and move lower bounds into
//! ancestors. After every operation the tree's invariants are checked (`verify`).

use std::collections::BTreeMap;
use std::ops::Bound;

use lamina_fptree::inner::{InnerIndex, LeafId, OlcInner, ReferenceInner, Visit};
use proptest::prelude::*;

fn located<I: InnerIndex>(inner: &I, key: &[u8]) -> (LeafId, Option<LeafId>) {
    inner.locate(key, |leaf, prev| Visit::Done((leaf, prev)), |_| {})
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>),
    Remove(Vec<u8>),
    Locate(Vec<u8>),
}

/// Short keys over a small alphabet (many shared prefixes and neighbours), sometimes long.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..5),
        1 => (any::<u8>(), 1000usize..=1024).prop_map(|(byte, len)| vec![byte; len]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => key().prop_map(Op::Insert),
        3 => key().prop_map(Op::Remove),
        2 => key().prop_map(Op::Locate),
    ]
}

struct Model {
    olc: OlcInner,
    reference: ReferenceInner,
    separators: BTreeMap<Vec<u8>, LeafId>,
    next_leaf: LeafId,
}

impl Model {
    fn build(mut initial: Vec<Vec<u8>>, fanout: usize) -> Self {
        initial.push(Vec::new());
        initial.sort();
        initial.dedup();
        let leaves: Vec<(Box<[u8]>, LeafId)> =
            initial.iter().enumerate().map(|(i, k)| (k.as_slice().into(), i as LeafId)).collect();
        let separators = initial.iter().cloned().zip(0..).collect();
        let model = Self {
            olc: OlcInner::build_with_fanout(leaves.clone(), fanout),
            reference: ReferenceInner::build(leaves),
            separators,
            next_leaf: initial.len() as LeafId,
        };
        model.check();
        model
    }

    fn covering(&self, key: &[u8]) -> (&Vec<u8>, LeafId) {
        let (separator, &leaf) = self
            .separators
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .expect("the empty separator covers every key");
        (separator, leaf)
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Insert(key) => {
                if key.is_empty() || self.separators.contains_key(key) {
                    return;
                }
                self.olc.insert_separator(key, self.next_leaf);
                self.reference.insert_separator(key, self.next_leaf);
                self.separators.insert(key.clone(), self.next_leaf);
                self.next_leaf += 1;
            }
            Op::Remove(key) => {
                let (separator, leaf) = self.covering(key);
                if separator.is_empty() {
                    return;
                }
                let separator = separator.clone();
                self.olc.remove_leaf(key, leaf);
                self.reference.remove_leaf(key, leaf);
                self.separators.remove(&separator);
            }
            Op::Locate(key) => {
                assert_eq!(located(&self.olc, key), located(&self.reference, key), "{key:?}");
            }
        }
        self.check();
    }

    fn check(&self) {
        self.olc.verify();
        let leaves: BTreeMap<Vec<u8>, LeafId> =
            self.olc.leaves().into_iter().map(|(k, leaf)| (k.into_vec(), leaf)).collect();
        assert_eq!(leaves, self.separators);
        assert_eq!(self.olc.leaf_count(), self.reference.leaf_count());
        // Every separator, and the key just below it, locates as in the reference.
        for separator in self.separators.keys() {
            assert_eq!(located(&self.olc, separator), located(&self.reference, separator));
            if let Some((&last, rest)) = separator.split_last()
                && last > 0
            {
                let mut below = rest.to_vec();
                below.push(last - 1);
                below.push(0xff);
                assert_eq!(located(&self.olc, &below), located(&self.reference, &below));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn olc_inner_matches_the_reference(
        initial in proptest::collection::vec(key(), 0..40),
        fanout in prop_oneof![Just(3usize), Just(4), Just(5), Just(8)],
        ops in proptest::collection::vec(op(), 0..150),
    ) {
        let mut model = Model::build(initial, fanout);
        for op in &ops {
            model.apply(op);
        }
        // Drain to the first leaf: every node but the root's path goes, roots collapse.
        while model.separators.len() > 1 {
            let last = model.separators.keys().next_back().unwrap().clone();
            model.apply(&Op::Remove(last));
        }
        prop_assert_eq!(model.olc.leaf_count(), 1);
    }
}

/// Removing leaves from the front (each the first child of its bottom node after the first
/// leaf) moves lower bounds into ancestors again and again.
#[test]
fn removing_from_the_front_moves_lower_bounds_up() {
    let keys: Vec<Vec<u8>> = (1..200u32).map(|i| i.to_be_bytes().to_vec()).collect();
    let mut model = Model::build(keys.clone(), 3);
    for key in &keys {
        model.apply(&Op::Remove(key.clone()));
    }
    assert_eq!(model.olc.leaf_count(), 1);
}

/// Ascending inserts split the rightmost nodes at every level, descending ones the leftmost.
#[test]
fn ascending_and_descending_inserts_split_every_level() {
    for fanout in [3, 4, 64] {
        let mut model = Model::build(Vec::new(), fanout);
        for i in 1..300u32 {
            model.apply(&Op::Insert(i.to_be_bytes().to_vec()));
            model.apply(&Op::Insert((u32::MAX - i).to_be_bytes().to_vec()));
        }
        assert_eq!(model.olc.leaf_count(), 599);
    }
}

#[test]
#[should_panic(expected = "already present")]
fn inserting_a_present_separator_panics() {
    let inner = OlcInner::build_with_fanout(
        vec![(b"".as_slice().into(), 0), (b"m".as_slice().into(), 1)],
        3,
    );
    inner.insert_separator(b"m", 2);
}

#[test]
#[should_panic(expected = "first leaf")]
fn removing_the_first_leaf_panics() {
    let inner = OlcInner::build_with_fanout(
        vec![(b"".as_slice().into(), 0), (b"m".as_slice().into(), 1)],
        3,
    );
    inner.remove_leaf(b"a", 0);
}

#[test]
#[should_panic(expected = "not covered")]
fn removing_a_leaf_that_does_not_cover_the_key_panics() {
    let inner = OlcInner::build_with_fanout(
        vec![(b"".as_slice().into(), 0), (b"m".as_slice().into(), 1)],
        3,
    );
    inner.remove_leaf(b"z", 0);
}
