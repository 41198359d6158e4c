//! Merge-prepare (section 2.3, equations 1 and 2): how many levels an overflow-triggered
//! merge replaces. Pure functions of the level sizes, so they are unit-tested directly.

use crate::options::Params;

/// Size of one materialized level as merge-prepare sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelSize {
    /// Level number.
    pub label: usize,
    /// Encoded bytes of data entries.
    pub data_bytes: u64,
    /// Encoded bytes of fences.
    pub fence_bytes: u64,
}

/// Equation 1, adapted to bytes: an upper bound, in blocks, on `B(L_m_new)` for a merge of
/// `L_0..L_i`.
///
/// - `i < h - 1`: the data bytes of every materialized level `<= i`, plus the fence bytes of
///   the deepest of them (its fences point to `L_succ(i)` and are carried over; fences of the
///   levels above point into the merged levels and are dropped, which is what the paper's
///   `(1/beta) * sum B(L_j)` term subtracts, here exactly rather than as a lower bound).
/// - `i = h - 1`: exactly `live_bytes` (`N_delta - N_nabla` in the paper, here the bytes of
///   the live insert entries, kept exact by the counters).
pub fn u_hat(sizes: &[LevelSize], h: usize, live_bytes: u64, i: usize, params: &Params) -> u64 {
    if i + 1 >= h {
        return params.blocks_of(live_bytes);
    }
    let merged = sizes.iter().filter(|s| s.label <= i);
    let data: u64 = merged.clone().map(|s| s.data_bytes).sum();
    let fences = merged.max_by_key(|s| s.label).map_or(0, |s| s.fence_bytes);
    params.blocks_of(data + fences)
}

/// Equation 2: `m = h` if `U(h-1) > kappa_(h-1)`, else the smallest `i` with
/// `U(i) <= kappa_i`. Generalization: if even `kappa_h` is too small (possible only when
/// `L_0` was overfilled at once by a large write batch; footnote 5 rules it out otherwise),
/// `m` is the smallest `i >= h` with `U(h-1) <= kappa_i`, and the levels between are created
/// as fence-only levels, which merge-finalize then skips.
pub fn choose_m(sizes: &[LevelSize], h: usize, live_bytes: u64, params: &Params) -> usize {
    let full = u_hat(sizes, h, live_bytes, h - 1, params);
    if full > params.kappa(h - 1) {
        let mut m = h;
        while full > params.kappa(m) {
            m += 1;
        }
        return m;
    }
    (1..h).find(|&i| u_hat(sizes, h, live_bytes, i, params) <= params.kappa(i)).unwrap_or(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::FdTreeOptions;

    fn params() -> Params {
        // kappa_0 = 1 block, gamma = 2; cap_eff = 512 - 36 - 2 * 18 = 440 bytes.
        FdTreeOptions {
            memory_budget_bytes: 512,
            block_bytes: 512,
            size_ratio: 2,
            key_bytes_max: 8,
            value_bytes_max: 8,
            ..FdTreeOptions::default()
        }
        .params()
        .unwrap()
    }

    fn size(label: usize, blocks_data: u64, fence_bytes: u64) -> LevelSize {
        LevelSize { label, data_bytes: blocks_data * 440, fence_bytes }
    }

    #[test]
    fn first_merge_grows_the_tree() {
        let p = params();
        let sizes = [size(0, 2, 0)];
        assert_eq!(choose_m(&sizes, 1, 2 * 440, &p), 1);
    }

    #[test]
    fn merge_stops_at_the_first_level_with_room() {
        let p = params();
        // kappa = 1, 2, 4, 8. L_0 over by one block; L_1 has room for it.
        let sizes = [size(0, 1, 20), size(1, 0, 10), size(3, 7, 0)];
        assert_eq!(u_hat(&sizes, 4, 8 * 440, 1, &p), 2);
        assert_eq!(choose_m(&sizes, 4, 8 * 440, &p), 1);
        // L_1 full: the merge goes to L_2 (skipped, so it has nothing of its own).
        let sizes = [size(0, 1, 20), size(1, 2, 10), size(3, 7, 0)];
        assert_eq!(choose_m(&sizes, 4, 8 * 440, &p), 2);
        // Everything full: a full merge that grows the tree (eq. 2, first case).
        let sizes = [size(0, 1, 20), size(1, 2, 10), size(2, 4, 0), size(3, 8, 0)];
        assert_eq!(choose_m(&sizes, 4, 15 * 440, &p), 4);
        // Deletes cancel most data: the exact live size lets the full merge stay at h - 1.
        assert_eq!(choose_m(&sizes, 4, 8 * 440, &p), 3);
    }

    #[test]
    fn oversized_top_level_skips_to_a_level_large_enough() {
        let p = params();
        let sizes = [size(0, 9, 0)];
        assert_eq!(choose_m(&sizes, 1, 9 * 440, &p), 4); // kappa_4 = 16 >= 9 > kappa_3 = 8
    }
}
