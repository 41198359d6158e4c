//! What an engine provides to be tested: a way to open it, and optionally to reopen it and
//! to simulate a crash.

use std::collections::BTreeMap;

use crate::{KeyRange, OrderedIndex, Result};

/// An engine under test. One `Subject` is one store: [`Subject::open`] on a fresh subject
/// opens an empty store; after [`Subject::close_and_reopen`] or [`Subject::crash`] it opens
/// the same store again.
pub trait Subject {
    /// The engine.
    type Index: OrderedIndex + 'static;

    /// Opens the store (empty the first time).
    fn open(&mut self) -> Result<Self::Index>;

    /// Whether the store survives `close` followed by `open`.
    fn durable(&self) -> bool;

    /// Whether the store holds the empty key. Every lamina engine does; a peer engine that
    /// cannot (LMDB, for one) refuses it with `InvalidArgument::KeyEmpty`, and the kit checks
    /// that refusal instead.
    fn accepts_empty_key(&self) -> bool {
        true
    }

    /// Whether [`Subject::crash`] is supported. Subjects that support it must open with
    /// `Durability::Sync`, so every acknowledged write survives a crash.
    fn can_crash(&self) -> bool {
        false
    }

    /// Simulates a power failure: the handle is abandoned without `close`, and everything
    /// not yet synced to the device is discarded. The next [`Subject::open`] recovers.
    /// Only called when [`Subject::can_crash`] is true.
    fn crash(&mut self, index: Self::Index) {
        drop(index);
        unreachable!("crash() called on a subject that cannot crash");
    }

    /// Closes `index` and opens the store again.
    fn close_and_reopen(&mut self, index: Self::Index) -> Result<Self::Index> {
        index.close()?;
        drop(index);
        self.open()
    }
}

/// The whole content of an index, read with paged scans.
pub fn dump(index: &dyn OrderedIndex) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut range = KeyRange::all();
    loop {
        let page = index.scan(&range, 1000).expect("scan for dump");
        let Some((last, _)) = page.last() else { break };
        range = range.resume_after(&last.clone());
        for (k, v) in page {
            assert!(out.insert(k, v).is_none(), "scan returned a key twice");
        }
    }
    out
}

/// Puts every pair of `oracle` into `index`.
pub fn fill_oracle(index: &dyn OrderedIndex, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in oracle {
        index.put(k, v).expect("put");
    }
}

/// A deterministic test key: `prefix` then `i` as 8 big-endian bytes (so order = order of i).
pub fn key(prefix: &str, i: u64) -> Vec<u8> {
    let mut k = prefix.as_bytes().to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

/// A deterministic test value of `len` bytes derived from `seed`.
pub fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
