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

/// Preemptive level skipping (section 4.4.1, FD+FC's merge-prepare): estimates the sizes of
/// the would-be new levels, `B_hat_m = U_hat(m)` and `B_hat_(i-1)` = the blocks of one fence
/// per physical block of `L_i_new` (at most `2 B_hat_i + 1` blocks, see `options.rs`; the
/// byte form of `ceil(B_hat_i / beta)`), and applies equation 3 to the estimates
/// (`B_hat_(m+1) = B(L_succ(m))`). Returns `o_hat_i` for each `i` in `0..=m`; the set of
/// values is the set of levels merge-execute would materialize. The estimates are upper
/// bounds, so the real sizes can only allow smaller numbers (merge-finalize tightens
/// further).
///
/// FD+FC writes only these levels (section 4.4.1); FD+DS and FD+XM write every
/// label and skip levels in merge-finalize (section 2.3).
pub fn preemptive_skips(
    u_hat_m: u64,
    m: usize,
    succ_below: Option<u64>,
    full: bool,
    params: &Params,
) -> Vec<usize> {
    let mut estimates = vec![0; m + 1];
    estimates[m] = u_hat_m;
    for i in (1..=m).rev() {
        let fences = (2 * estimates[i] + 1).saturating_mul(params.fence_bytes_max);
        estimates[i - 1] = params.blocks_of(fences);
    }
    super::relabel::plan_relabel(&estimates, succ_below, full, params).o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::FdTreeOptions;

    fn params() -> Params {
        // kappa_0 = 1 block, gamma = 2.
        FdTreeOptions {
            memory_budget_bytes: 512,
            block_bytes: 512,
            segment_bytes: 512,
            size_ratio: 2,
            key_bytes_max: 8,
            value_bytes_max: 8,
            ..FdTreeOptions::default()
        }
        .params()
        .unwrap()
    }

    fn size(label: usize, blocks_data: u64, fence_bytes: u64) -> LevelSize {
        LevelSize { label, data_bytes: blocks_data * params().cap_eff_bytes, fence_bytes }
    }

    fn bytes(blocks: u64) -> u64 {
        blocks * params().cap_eff_bytes
    }

    #[test]
    fn first_merge_grows_the_tree() {
        let p = params();
        let sizes = [size(0, 2, 0)];
        assert_eq!(choose_m(&sizes, 1, bytes(2), &p), 1);
    }

    #[test]
    fn merge_stops_at_the_first_level_with_room() {
        let p = params();
        // kappa = 1, 2, 4, 8. L_0 over by one block; L_1 has room for it.
        let sizes = [size(0, 1, 20), size(1, 0, 10), size(3, 7, 0)];
        assert_eq!(u_hat(&sizes, 4, bytes(8), 1, &p), 2);
        assert_eq!(choose_m(&sizes, 4, bytes(8), &p), 1);
        // L_1 full: the merge goes to L_2 (skipped, so it has nothing of its own).
        let sizes = [size(0, 1, 20), size(1, 2, 10), size(3, 7, 0)];
        assert_eq!(choose_m(&sizes, 4, bytes(8), &p), 2);
        // Everything full: a full merge that grows the tree (eq. 2, first case).
        let sizes = [size(0, 1, 20), size(1, 2, 10), size(2, 4, 0), size(3, 8, 0)];
        assert_eq!(choose_m(&sizes, 4, bytes(15), &p), 4);
        // Deletes cancel most data: the exact live size lets the full merge stay at h - 1.
        assert_eq!(choose_m(&sizes, 4, bytes(8), &p), 3);
    }

    #[test]
    fn preemptive_skipping_keeps_l0_and_lm_and_skips_small_fence_levels() {
        let p = params(); // kappa = 1, 2, 4, 8, 16
        // A merge into L_3 producing 7 blocks: its fence level must stay L_2 (7 > kappa_2,
        // so (I5) forbids it directly below L_1 or L_0), L_1's tiny fence level is skipped
        // (o_hat = 0), and L_3 keeps its number (Remark A.3).
        let o = preemptive_skips(7, 3, Some(12), false, &p);
        assert_eq!(o, vec![0, 0, 2, 3]);
        // Producing 3 blocks (> kappa_1): the fence level above becomes L_1.
        let o = preemptive_skips(3, 3, Some(12), false, &p);
        assert_eq!(o, vec![0, 0, 1, 3]);
        // Producing 2 blocks (<= kappa_1): both fence levels fit L_0 and are skipped.
        let o = preemptive_skips(2, 3, Some(12), false, &p);
        assert_eq!(o, vec![0, 0, 0, 3]);
        // A full merge whose data fits L_1: the bottom is tightened to L_1.
        let o = preemptive_skips(2, 3, None, true, &p);
        assert_eq!(o, vec![0, 0, 0, 1]);
        // 0 and m are always among the levels to materialize for a partial merge.
        for u in 1..=8 {
            let o = preemptive_skips(u, 3, Some(16), false, &p);
            assert!(o.contains(&0) && o.contains(&3), "{u}: {o:?}");
        }
    }

    #[test]
    fn oversized_top_level_skips_to_a_level_large_enough() {
        let p = params();
        let sizes = [size(0, 9, 0)];
        assert_eq!(choose_m(&sizes, 1, bytes(9), &p), 4); // kappa_4 = 16 >= 9 > kappa_3 = 8
    }
}
