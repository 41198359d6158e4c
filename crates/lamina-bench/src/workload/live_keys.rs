//! A set of integer keys with O(1) insert, remove and uniform random pick: the list K of
//! keys currently in the index that G_R (FD+FC Remark A.7) and the LTU workload draw from.

use std::collections::HashMap;

use rand::Rng;

/// Keys currently in the index.
#[derive(Debug, Default, Clone)]
pub struct LiveKeys {
    keys: Vec<u64>,
    position: HashMap<u64, usize>,
}

impl LiveKeys {
    /// An empty set.
    pub fn new() -> Self {
        LiveKeys::default()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether `key` is in the set.
    pub fn contains(&self, key: u64) -> bool {
        self.position.contains_key(&key)
    }

    /// Adds `key`; returns false if it was already there.
    pub fn insert(&mut self, key: u64) -> bool {
        if self.position.contains_key(&key) {
            return false;
        }
        self.position.insert(key, self.keys.len());
        self.keys.push(key);
        true
    }

    /// Removes `key`; returns whether it was there.
    pub fn remove(&mut self, key: u64) -> bool {
        let Some(at) = self.position.remove(&key) else { return false };
        let last = self.keys.pop().expect("position implies an element");
        if at < self.keys.len() {
            self.keys[at] = last;
            self.position.insert(last, at);
        }
        debug_assert_eq!(self.keys.len(), self.position.len());
        true
    }

    /// The key at position `at` (`at < len`), for picking across several sets.
    pub fn get(&self, at: usize) -> u64 {
        self.keys[at]
    }

    /// A uniformly chosen key.
    pub fn pick(&self, rng: &mut impl Rng) -> Option<u64> {
        if self.keys.is_empty() {
            return None;
        }
        Some(self.keys[rng.random_range(0..self.keys.len())])
    }

    /// Removes and returns a uniformly chosen key.
    pub fn take(&mut self, rng: &mut impl Rng) -> Option<u64> {
        let key = self.pick(rng)?;
        self.remove(key);
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn insert_remove_pick() {
        let mut set = LiveKeys::new();
        for k in 0..100 {
            assert!(set.insert(k));
        }
        assert!(!set.insert(5));
        assert!(set.remove(5));
        assert!(!set.remove(5));
        assert_eq!(set.len(), 99);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..1000 {
            let k = set.pick(&mut rng).unwrap();
            assert!(k != 5 && set.contains(k));
        }
        while let Some(k) = set.take(&mut rng) {
            assert!(!set.contains(k));
        }
        assert!(set.is_empty());
    }
}
