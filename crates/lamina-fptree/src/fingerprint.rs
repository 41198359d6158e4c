//! Fingerprints (section 4.2): one-byte hashes of the keys, kept in the leaf's first cache
//! line, so a search probes (reads and compares) only the keys whose fingerprint matches.

/// The one-byte fingerprint of `key`: the top byte of a 64-bit FNV-1a hash finished with a
/// SplitMix64 mixer (uniform enough that Figure 4's analysis applies).
pub fn fingerprint(key: &[u8]) -> u8 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &byte in key {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    (hash >> 56) as u8
}

/// Figure 4's expected number of in-leaf key probes of a successful search in a leaf of `m`
/// entries with `n`-valued fingerprints: `E[T] = (1 + m / (n (1 - ((n-1)/n)^m))) / 2`.
pub fn expected_probes(m: u32, n: u32) -> f64 {
    assert!(m >= 1 && n >= 2, "a successful search needs an entry and fingerprints");
    let n = f64::from(n);
    let miss_all = ((n - 1.0) / n).powi(i32::try_from(m).expect("small leaf"));
    0.5 * (1.0 + f64::from(m) / (n * (1.0 - miss_all)))
}

/// The expected key probes of a successful search when the searched key is one of the `m`
/// entries: its own fingerprint matches, each of the `m - 1` others independently with
/// probability `1/n`, and the search stops at the key, halfway through the matches on
/// average: `E[T] = 1 + (m - 1) / (2n)`. Figure 4's formula conditions instead on "at least
/// one of `m` random fingerprints matches", which does not fix the searched key among them,
/// and comes out slightly lower (1.039 against 1.076 at `m` = 40); both are about one.
pub fn exact_expected_probes(m: u32, n: u32) -> f64 {
    assert!(m >= 1 && n >= 2, "a successful search needs an entry and fingerprints");
    1.0 + f64::from(m - 1) / (2.0 * f64::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_4_numbers() {
        // The paper: "for m = 32, the FPTree needs a single in-leaf key probe".
        let at_32 = expected_probes(32, 256);
        assert!((1.0..1.1).contains(&at_32), "{at_32}");
        // "fingerprinting requires less than two key probes in average up to m ~ 400".
        assert!(expected_probes(380, 256) < 2.0);
        assert!((expected_probes(1, 256) - 1.0).abs() < 1e-12);
        assert!((exact_expected_probes(1, 256) - 1.0).abs() < 1e-12);
        let (paper, exact) = (expected_probes(40, 256), exact_expected_probes(40, 256));
        assert!((1.03..1.04).contains(&paper) && (1.07..1.08).contains(&exact), "{paper} {exact}");
    }

    #[test]
    fn fingerprints_spread_over_all_byte_values() {
        let mut seen = [0u32; 256];
        for i in 0..25_600u32 {
            seen[usize::from(fingerprint(format!("key{i}").as_bytes()))] += 1;
        }
        assert!(seen.iter().all(|&c| (50..=150).contains(&c)), "{seen:?}");
    }
}
