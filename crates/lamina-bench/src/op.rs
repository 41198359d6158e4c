//! The requests a workload issues, named after the `OrderedIndex` call each one makes.

use serde::{Deserialize, Serialize};

/// The type of a request, named after the API call (`rmw` is YCSB-F's read-modify-write:
/// a `get` followed by a `put` of the same key, timed as one request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// `get(key)`.
    Get,
    /// `put(key, value)`.
    Put,
    /// `delete(key)`.
    Delete,
    /// `compare_and_swap(key, expected, new)`.
    Cas,
    /// `scan(start.., limit)`.
    Scan,
    /// `get(key)` then `put(key, value)`.
    Rmw,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 6] =
        [OpKind::Get, OpKind::Put, OpKind::Delete, OpKind::Cas, OpKind::Scan, OpKind::Rmw];

    /// Number of kinds (size of per-kind arrays).
    pub const COUNT: usize = 6;

    /// The name used in reports (`get`, `put`, ...).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Get => "get",
            OpKind::Put => "put",
            OpKind::Delete => "delete",
            OpKind::Cas => "cas",
            OpKind::Scan => "scan",
            OpKind::Rmw => "rmw",
        }
    }

    /// Position in [`OpKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the open-system runner routes it to the read queue Q_r (FD+FC section 5:
    /// lookups go to Q_r, modifications to Q_w).
    pub fn is_read(self) -> bool {
        matches!(self, OpKind::Get | OpKind::Scan)
    }
}

/// A value described by its length and a fill seed, materialized only when the request
/// runs, so generated and recorded workloads stay small whatever `--value-bytes` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value {
    /// Length in bytes.
    pub len: u32,
    /// Seed of the pseudo-random content.
    pub fill: u64,
}

impl Value {
    /// Writes the value's bytes into `out` (cleared first).
    pub fn write_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(self.len as usize);
        let mut state = self.fill;
        while out.len() < self.len as usize {
            let word = splitmix64(&mut state).to_le_bytes();
            let take = (self.len as usize - out.len()).min(8);
            out.extend_from_slice(&word[..take]);
        }
    }

    /// The value's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_into(&mut out);
        out
    }
}

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Point lookup.
    Get {
        /// Key looked up.
        key: Vec<u8>,
    },
    /// Insert or overwrite.
    Put {
        /// Key written.
        key: Vec<u8>,
        /// Value written.
        value: Value,
    },
    /// Removal.
    Delete {
        /// Key removed.
        key: Vec<u8>,
    },
    /// Compare-and-swap.
    Cas {
        /// Key compared.
        key: Vec<u8>,
        /// Expected current value (`None`: absent).
        expected: Option<Value>,
        /// Replacement (`None`: delete).
        new: Option<Value>,
    },
    /// Ordered scan of at most `limit` pairs from `start` (inclusive).
    Scan {
        /// First key of the range.
        start: Vec<u8>,
        /// Most pairs returned.
        limit: u32,
    },
    /// Read-modify-write (YCSB-F).
    Rmw {
        /// Key read and written.
        key: Vec<u8>,
        /// Value written.
        value: Value,
    },
}

impl Op {
    /// The request's type.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Get { .. } => OpKind::Get,
            Op::Put { .. } => OpKind::Put,
            Op::Delete { .. } => OpKind::Delete,
            Op::Cas { .. } => OpKind::Cas,
            Op::Scan { .. } => OpKind::Scan,
            Op::Rmw { .. } => OpKind::Rmw,
        }
    }

    /// The key the request addresses (the start key of a scan).
    pub fn key(&self) -> &[u8] {
        match self {
            Op::Get { key }
            | Op::Put { key, .. }
            | Op::Delete { key }
            | Op::Cas { key, .. }
            | Op::Rmw { key, .. } => key,
            Op::Scan { start, .. } => start,
        }
    }

    /// Bytes of user data the request writes if applied (key plus new value; the key of a
    /// delete): the denominator of write amplification when an engine does not count it.
    pub fn user_bytes_written(&self) -> u64 {
        let key = self.key().len() as u64;
        match self {
            Op::Get { .. } | Op::Scan { .. } => 0,
            Op::Put { value, .. } | Op::Rmw { value, .. } => key + u64::from(value.len),
            Op::Delete { .. } => key,
            Op::Cas { new, .. } => key + new.map_or(0, |v| u64::from(v.len)),
        }
    }
}

/// An integer key: `n` big-endian in the first 8 bytes (so byte order is numeric order),
/// zero-padded to `key_bytes` (at least 8).
pub fn int_key(n: u64, key_bytes: usize) -> Vec<u8> {
    assert!(key_bytes >= 8, "integer keys need at least 8 bytes, got {key_bytes}");
    let mut key = vec![0u8; key_bytes];
    key[..8].copy_from_slice(&n.to_be_bytes());
    key
}

/// The integer of an [`int_key`].
pub fn int_of_key(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.get(..8)?.try_into().ok()?))
}

/// FNV-1a over the 8 bytes of `n`: YCSB's way of scattering record numbers over the key
/// space (its `hashed` insert order).
pub fn fnv64(n: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in n.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// SplitMix64 step: cheap, well-mixed words for value contents.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_keys_sort_numerically() {
        let a = int_key(255, 8);
        let b = int_key(256, 16);
        assert!(a.as_slice() < b.as_slice());
        assert_eq!(b.len(), 16);
        assert_eq!(int_of_key(&b), Some(256));
    }

    #[test]
    fn values_are_deterministic_and_sized() {
        let v = Value { len: 13, fill: 7 };
        assert_eq!(v.to_bytes(), v.to_bytes());
        assert_eq!(v.to_bytes().len(), 13);
        assert_ne!(v.to_bytes(), Value { len: 13, fill: 8 }.to_bytes());
        assert!(Value { len: 0, fill: 1 }.to_bytes().is_empty());
    }
}
