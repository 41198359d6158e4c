//! Merge-finalize's plan (section 2.3, equation 3; section 4.4.3 for background merges):
//! tighten each new level to the smallest level number that keeps (I3) and (I5), find `L_z`
//! (the last new level that can be `L_0`), and relabel the others, which shrinks the tree
//! when a full merge produced little data. The last new level keeps its number unless the
//! merge was full (footnote 7, Remark A.3). Pure functions of the level sizes.

use crate::level::DiskLevel;
use crate::options::Params;

/// Most level numbers considered when tightening (`kappa_j` saturates long before).
const LEVEL_SEARCH_MAX: usize = 128;

/// The outcome of equation 3 for the new levels `L_0_new..L_m_new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relabel {
    /// `o_i` for each new level.
    pub o: Vec<usize>,
    /// `z = argmax_i (o_i = 0)`.
    pub z: usize,
}

impl Relabel {
    /// Gives the levels kept after `L_z` (new levels `z+1..`, in order) their numbers
    /// `o_i`; returns how many were tightened to a smaller number.
    pub fn apply(&self, kept: &mut [DiskLevel]) -> u64 {
        let mut tightened = 0;
        for (level, &o) in kept.iter_mut().zip(&self.o[self.z + 1..]) {
            if o < level.label {
                tightened += 1;
            }
            level.label = o;
        }
        tightened
    }
}

/// Equation 3: `o_i = argmin_j (B(L_i) <= kappa_j and B(L_succ(i)) <= kappa_(j+1))`.
/// `sizes[i]` is `B(L_i_new)`; `succ_below` is `B(L_succ(m))` (none for a full merge).
pub fn plan_relabel(
    sizes: &[u64],
    succ_below: Option<u64>,
    full: bool,
    params: &Params,
) -> Relabel {
    plan_relabel_with(sizes, succ_below, full, params, &vec![true; sizes.len()])
}

/// Equation 3 where new level `i > 0` may become `L_0` only if `may_be_top[i]`. With
/// background merges (section 4.4.3) `L_0` already holds the modifications made during the
/// merge, and only the reserved slots are guaranteed: `o_i = 0` needs `|L_i| <= kappa_1`
/// (here: its bytes within `Params::fence_reserve_bytes`), otherwise `j > 0` as in eq. 3.
pub fn plan_relabel_with(
    sizes: &[u64],
    succ_below: Option<u64>,
    full: bool,
    params: &Params,
    may_be_top: &[bool],
) -> Relabel {
    let labels: Vec<usize> = (0..sizes.len()).collect();
    plan_relabel_labels(&labels, sizes, succ_below, full, params, may_be_top)
}

/// Equation 3 over new levels that carry their own labels (`labels[0] = 0`, increasing;
/// FD+FC writes only the levels preemptive skipping kept, section 4.4.3): `o_i` for each,
/// `z = argmax_i (o_i = 0)`. `L_0_new` always stays `L_0`; the last level keeps its label
/// unless the merge was full.
pub fn plan_relabel_labels(
    labels: &[usize],
    sizes: &[u64],
    succ_below: Option<u64>,
    full: bool,
    params: &Params,
    may_be_top: &[bool],
) -> Relabel {
    assert!(labels.len() == sizes.len() && labels.len() == may_be_top.len() && labels[0] == 0);
    let last = sizes.len() - 1;
    let o: Vec<usize> = (0..=last)
        .map(|i| {
            if i == 0 {
                return 0;
            }
            if i == last && !full {
                return labels[last];
            }
            let succ = if i < last { Some(sizes[i + 1]) } else { succ_below };
            let first = usize::from(!may_be_top[i]);
            (first..LEVEL_SEARCH_MAX)
                .find(|&j| {
                    sizes[i] <= params.kappa(j) && succ.is_none_or(|s| s <= params.kappa(j + 1))
                })
                .expect("kappa_j grows without bound")
        })
        .collect();
    let z = (0..=last).rev().find(|&i| o[i] == 0).expect("o_0 = 0");
    // The options guarantee that fence-only levels shrink faster than kappa (see options.rs),
    // which makes the relabeled levels strictly increasing.
    for i in z + 1..=last {
        assert!(o[i] <= labels[i].max(o[last]), "tightening moved level {i} down to {}", o[i]);
        if i > z + 1 {
            assert!(o[i - 1] < o[i], "relabeled levels out of order: {o:?}");
        }
    }
    Relabel { o, z }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::FdTreeOptions;

    fn params() -> Params {
        // kappa_0 = 4, gamma = 4: kappa = 4, 16, 64, 256.
        FdTreeOptions {
            memory_budget_bytes: 4 * 512,
            block_bytes: 512,
            segment_bytes: 512,
            size_ratio: 4,
            key_bytes_max: 8,
            value_bytes_max: 8,
            ..FdTreeOptions::default()
        }
        .params()
        .unwrap()
    }

    #[test]
    fn chains_of_small_levels_are_skipped() {
        // Figure 4: L_1 and L_2 hold one block each, L_3 holds the data.
        let r = plan_relabel(&[1, 1, 1, 200], Some(300), false, &params());
        assert_eq!(r.o, vec![0, 0, 2, 3]);
        assert_eq!(r.z, 1);
    }

    #[test]
    fn full_merge_tightens_the_bottom_and_shrinks() {
        // A cancellation-heavy full merge: 10 blocks of data fit L_1.
        let r = plan_relabel(&[1, 1, 1, 10], None, true, &params());
        assert_eq!(r.o, vec![0, 0, 0, 1]);
        assert_eq!(r.z, 2);
        // Almost nothing left: the bottom becomes L_0 and the tree has height 1.
        let r = plan_relabel(&[1, 1, 1, 3], None, true, &params());
        assert_eq!(r.z, 3);
        // A partial merge never relabels its last level (Remark A.3).
        let r = plan_relabel(&[1, 1, 1, 3], Some(100), false, &params());
        assert_eq!(r.o[3], 3);
    }

    #[test]
    fn background_merges_make_l0_only_of_what_fits_the_reserve() {
        // Section 4.4.3: the bottom of a small full merge stays on disk if it does not fit
        // the reserved slots; fence levels that fit still collapse into L_0.
        let r = plan_relabel_with(&[1, 1, 1, 3], None, true, &params(), &[true, true, true, false]);
        assert_eq!(r.o, vec![0, 0, 0, 1]);
        assert_eq!(r.z, 2);
    }
}
