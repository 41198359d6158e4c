//! Splitting a key into fragments of k' bits (paper section 2: "the key is split into
//! fragments of an equal prefix length k'"; fragment i selects the bucket at tree level i).
//!
//! k' divides 8, so a key of `len` bytes has exactly `len * 8 / k'` fragments and no
//! fragment straddles a byte. A key that ends at level `d` (it has `d` fragments) lives in
//! the node's "key ends here" slot instead of a bucket, which is how keys that are prefixes
//! of other keys are stored.

/// The prefix lengths k' (bits per fragment) a tree can be built with.
pub const PREFIX_BITS_ALLOWED: [u32; 4] = [1, 2, 4, 8];

/// Number of fragments of `key` for a fanout of `fanout` buckets (k' = log2 fanout).
#[inline]
pub(crate) fn count<const FANOUT: usize>(key: &[u8]) -> usize {
    key.len() * 8 / bits::<FANOUT>()
}

/// k' for a fanout.
#[inline]
pub(crate) const fn bits<const FANOUT: usize>() -> usize {
    FANOUT.trailing_zeros() as usize
}

/// Fragment `index` of `key` (`index < count(key)`): the bucket it selects at that level.
#[inline]
pub(crate) fn at<const FANOUT: usize>(key: &[u8], index: usize) -> usize {
    let bits = bits::<FANOUT>();
    let bit = index * bits;
    let byte = usize::from(key[bit / 8]);
    let shift = 8 - bits - bit % 8;
    (byte >> shift) & (FANOUT - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_read_the_key_most_significant_bits_first() {
        let key = [0xa5u8, 0x3c];
        assert_eq!(count::<16>(&key), 4);
        let nibbles: Vec<usize> = (0..4).map(|i| at::<16>(&key, i)).collect();
        assert_eq!(nibbles, [0xa, 0x5, 0x3, 0xc]);
        assert_eq!(count::<2>(&key), 16);
        let bits: Vec<usize> = (0..8).map(|i| at::<2>(&key, i)).collect();
        assert_eq!(bits, [1, 0, 1, 0, 0, 1, 0, 1]);
        assert_eq!((0..4).map(|i| at::<4>(&key, i)).collect::<Vec<_>>(), [2, 2, 1, 1]);
        assert_eq!((0..2).map(|i| at::<256>(&key, i)).collect::<Vec<_>>(), [0xa5, 0x3c]);
    }

    #[test]
    fn fragment_order_is_byte_order() {
        // Comparing fragment sequences lexicographically (shorter first on a tie) must
        // give the same order as comparing the byte strings.
        let keys: Vec<Vec<u8>> =
            vec![vec![0], vec![0, 0], vec![0, 1], vec![1], vec![0x10], vec![0xff, 0]];
        for a in &keys {
            for b in &keys {
                let fa: Vec<usize> = (0..count::<16>(a)).map(|i| at::<16>(a, i)).collect();
                let fb: Vec<usize> = (0..count::<16>(b)).map(|i| at::<16>(b, i)).collect();
                assert_eq!(fa.cmp(&fb), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }
}
