//! The order of keys (bytewise, shorter first on a common prefix: `<[u8] as Ord>`), computed
//! faster for the short keys most workloads use.
//!
//! `<[u8] as Ord>::cmp` calls `memcmp` for every comparison; in a lookup that binary-searches
//! in-memory directories and scans a segment, with 8-byte keys, that call and its dispatch
//! were a quarter of the time (issue 22's profile of fdtree lookups at 10M keys). Here the
//! first 8 bytes of two keys that both have them are compared as one big-endian integer, in
//! registers, and only keys that agree on them fall back to the bytewise comparison of the
//! rest.

use std::cmp::Ordering;

/// The bytewise order of `a` and `b`: the same answer as `a.cmp(b)`.
#[inline]
#[must_use]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(head_a), Some(head_b)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        // Big-endian: integer order is the bytewise order of the 8 bytes.
        let (x, y) = (u64::from_be_bytes(*head_a), u64::from_be_bytes(*head_b));
        if x != y {
            return x.cmp(&y);
        }
        let (rest_a, rest_b) = (&a[8..], &b[8..]);
        if rest_a.is_empty() || rest_b.is_empty() {
            return rest_a.len().cmp(&rest_b.len());
        }
        return rest_a.cmp(rest_b);
    }
    a.cmp(b)
}

/// `a <= b` in the order of [`compare`].
#[inline]
#[must_use]
pub fn le(a: &[u8], b: &[u8]) -> bool {
    compare(a, b) != Ordering::Greater
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edge_cases_agree_with_slice_order() {
        let keys: [&[u8]; 12] = [
            b"",
            b"\x00",
            b"a",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh\x00",
            b"abcdefgi",
            b"abcdefghij",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x80\x00\x00\x00\x00\x00\x00\x00",
            b"\x7f\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(compare(a, b), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(le(a, b), a <= b);
            }
        }
    }

    proptest! {
        #[test]
        fn agrees_with_slice_order(
            a in proptest::collection::vec(any::<u8>(), 0..24),
            b in proptest::collection::vec(any::<u8>(), 0..24),
            shared in 0usize..16,
        ) {
            // Half the pairs share a prefix, so the fallback past 8 bytes is exercised.
            let mut b2 = a[..shared.min(a.len())].to_vec();
            b2.extend_from_slice(&b);
            for b in [&b, &b2] {
                prop_assert_eq!(compare(&a, b), a.as_slice().cmp(b.as_slice()));
                prop_assert_eq!(compare(b, &a), b.as_slice().cmp(a.as_slice()));
            }
        }
    }
}
