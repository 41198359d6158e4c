//! The online cost model of LA-tree section 3 (with section 6's per-device parameters): what
//! ADAPT records in its registers, the scan cost `s = b_r * B` and the emptying cost `e`
//! (`C_m^E` for a non-leaf subtree, `C_n^E` for a leaf subtree), from the active
//! [`DeviceProfile`] and per-subtree statistics ([`SubtreeStats`]: `S`, `B`, `L` and the pages
//! behind the fragmentation overhead `f`).
//!
//! Units: modeled nanoseconds as `f64`. The profiles charge whole nanoseconds per access, but
//! the model's per-entry terms are fractions of them (`b_w` amortizes a page's fixed write cost
//! over the entries packed in it: 274 us * 8 / 512 = 4281.25 ns; `f` spreads page accesses over
//! the buffer's entries), and rounding them per entry would bias every `rho * B`. These are
//! estimates compared with each other (Algorithm 1 line 6), never accumulated into the
//! engine's I/O accounting, and `f64` holds every integer nanosecond below 2^53 (104 days)
//! exactly.
//!
//! Devices:
//! - Raw NAND (`Nand` profiles, byte-addressable; section 6 and Table 2): for an `X`-byte node
//!   `a_r = R_fixed + X R_byte` and `a_w = X/page W_fixed + X W_byte` (the paper's amortized
//!   page cost: nodes are written packed, section 4.3); for an `E`-byte buffer entry
//!   `R_b = E R_byte` and `b_w = E/page W_fixed + E W_byte`; each buffer page read costs
//!   `R_fixed`, so `f = pages * R_fixed / B`.
//! - Block devices (`Paged` profiles; section 6.4, where the paper calls the linear model only
//!   an initial approximation): costs per page touched. `a_r` and `a_w` are one node-sized
//!   random read and random write; `b_w` is `E/page` of a sequential page write (entries are
//!   packed and written sequentially); reading a buffer costs one random page read per page it
//!   spans (its fragments are reverse-linked, not contiguous), so `R_b = 0` and
//!   `f = pages * random_read / B`.
//! - `host` (no model): every cost is 0, so ADAPT never empties at a lookup, only when a
//!   buffer exceeds `U`.

use lamina_core::{Error, Result};
use lamina_storage::device::CostModel as DeviceCostModel;
use lamina_storage::{AccessKind, DeviceProfile};

use crate::adapt::{LinearCostModel, LookupCosts};

/// Largest node size accepted (`a_r`, `a_w` are computed for this many bytes).
pub const NODE_BYTES_MAX: u64 = 1 << 20;
/// Largest mean buffer-entry size accepted.
pub const ENTRY_BYTES_MAX: u64 = 1 << 20;
/// The `8` of `H + 8 B / F`: node rebalancing operations per `F` buffered entries emptied into
/// the leaves, for a-b trees whose nodes stay at least a quarter full (section 3, citing the
/// paper's reference 12).
pub const REBALANCES_PER_FANOUT_ENTRIES: f64 = 8.0;

/// Per-subtree statistics kept online (section 3, "Online statistics").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubtreeStats {
    /// `S`: nodes in the subtree (its `K` levels).
    pub nodes: u64,
    /// `B`: entries in the subtree's buffer (flushed or still in the write-coalescing pool).
    pub buffer_entries: u64,
    /// `L`: leaf nodes in the subtree (0 for a non-leaf subtree).
    pub leaves: u64,
    /// Flash pages the buffer's flushed fragments span: the source of the fragmentation
    /// overhead `f` (each costs one page access per scan).
    pub buffer_pages: u64,
}

/// Which emptying cost applies (section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubtreeKind {
    /// Entries move on to the child subtrees' buffers: `C_m^E`.
    NonLeaf,
    /// Entries are merged into the leaves, with rebalancing: `C_n^E`, which needs the tree's
    /// height `H`.
    Leaf {
        /// `H`: levels of the whole tree.
        tree_height: u64,
    },
}

/// The tree's shape as the cost model needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeShape {
    /// Bytes of a node on flash.
    pub node_bytes: u64,
    /// Mean bytes of a buffer entry on flash (the paper's entries are 8 bytes).
    pub entry_bytes: u64,
    /// `F`: the fanout.
    pub fanout: u64,
}

/// Section 3's constants for one device and tree shape, modeled ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// `a_r`: reading a node.
    pub node_read_ns: f64,
    /// `a_w`: writing a node.
    pub node_write_ns: f64,
    /// `R_b`: the per-byte part of reading a buffer entry.
    pub entry_read_ns: f64,
    /// `b_w`: writing a buffer entry, amortized over a packed page.
    pub entry_write_ns: f64,
    /// The fixed cost of each buffer page read, spread over the entries as `f`.
    pub buffer_page_read_ns: f64,
    /// `F`.
    pub fanout: u64,
}

impl CostModel {
    /// The constants for `profile` and `shape` (see the module docs for each device kind).
    pub fn new(profile: &DeviceProfile, shape: TreeShape) -> Result<Self> {
        let TreeShape { node_bytes, entry_bytes, fanout } = shape;
        if node_bytes == 0 || node_bytes > NODE_BYTES_MAX {
            let reason = format!("node size {node_bytes} B is outside 1..={NODE_BYTES_MAX}");
            return Err(Error::option("node_bytes", reason));
        }
        if entry_bytes == 0 || entry_bytes > ENTRY_BYTES_MAX {
            let reason = format!("entry size {entry_bytes} B is outside 1..={ENTRY_BYTES_MAX}");
            return Err(Error::option("entry_bytes", reason));
        }
        if fanout < 2 {
            return Err(Error::option("fanout", format!("fanout {fanout} is below 2")));
        }
        let (x, e) = (node_bytes as f64, entry_bytes as f64);
        let model = match profile.model {
            DeviceCostModel::Free => CostModel {
                node_read_ns: 0.0,
                node_write_ns: 0.0,
                entry_read_ns: 0.0,
                entry_write_ns: 0.0,
                buffer_page_read_ns: 0.0,
                fanout,
            },
            DeviceCostModel::Nand(c) => {
                let page = c.page_bytes as f64;
                let (r_fixed, r_byte) = (c.read_fixed_ns as f64, c.read_per_byte_ns as f64);
                let (w_fixed, w_byte) =
                    (c.write_fixed_per_page_ns as f64, c.write_per_byte_ns as f64);
                CostModel {
                    node_read_ns: r_fixed + x * r_byte,
                    node_write_ns: x / page * w_fixed + x * w_byte,
                    entry_read_ns: e * r_byte,
                    entry_write_ns: e / page * w_fixed + e * w_byte,
                    buffer_page_read_ns: r_fixed,
                    fanout,
                }
            }
            DeviceCostModel::Paged(c) => CostModel {
                node_read_ns: profile.access_ns(AccessKind::RandomRead, 0, node_bytes) as f64,
                node_write_ns: profile.access_ns(AccessKind::RandomWrite, 0, node_bytes) as f64,
                entry_read_ns: 0.0,
                entry_write_ns: e / c.page_bytes as f64 * c.sequential_write_ns as f64,
                buffer_page_read_ns: c.random_read_ns as f64,
                fanout,
            },
        };
        Ok(model)
    }

    /// `f`: the buffer's page accesses per entry, `pages * page read / B` (0 for an empty
    /// buffer).
    pub fn fragmentation_ns(&self, stats: &SubtreeStats) -> f64 {
        if stats.buffer_entries == 0 {
            return 0.0;
        }
        stats.buffer_pages as f64 * self.buffer_page_read_ns / stats.buffer_entries as f64
    }

    /// `b_r = R_b + f`: reading one buffer entry, fragmentation included.
    pub fn entry_scan_ns(&self, stats: &SubtreeStats) -> f64 {
        self.entry_read_ns + self.fragmentation_ns(stats)
    }

    /// The section 2.2.1 constants of this subtree now: `rho = b_r`; `delta` and `gamma` the
    /// fixed and per-entry parts of `C_m^E` or `C_n^E`. Note `gamma >= rho` (an empty reads
    /// the buffer too), the condition under which `tests/adapt_competitive.rs` bounds the
    /// paper's ADAPT rule.
    pub fn linear(&self, stats: &SubtreeStats, kind: SubtreeKind) -> LinearCostModel {
        let b_r = self.entry_scan_ns(stats);
        let subtree_read = self.node_read_ns * stats.nodes as f64;
        let (delta, gamma) = match kind {
            // C_m^E = a_r S + (b_r + b_w) B
            SubtreeKind::NonLeaf => (subtree_read, b_r + self.entry_write_ns),
            // C_n^E = a_r S + a_w L + a_w H + (b_r + 8 a_w / F) B
            SubtreeKind::Leaf { tree_height } => (
                subtree_read + self.node_write_ns * (stats.leaves + tree_height) as f64,
                b_r + REBALANCES_PER_FANOUT_ENTRIES * self.node_write_ns / self.fanout as f64,
            ),
        };
        LinearCostModel { rho: b_r, delta, gamma }
    }

    /// The scan cost `b_r * B`.
    pub fn scan_ns(&self, stats: &SubtreeStats) -> f64 {
        self.entry_scan_ns(stats) * stats.buffer_entries as f64
    }

    /// The emptying cost: `C_m^E` or `C_n^E`.
    pub fn empty_ns(&self, stats: &SubtreeStats, kind: SubtreeKind) -> f64 {
        self.linear(stats, kind).empty_ns(stats.buffer_entries)
    }

    /// What ADAPT records at a lookup (Algorithm 1 line 10): `(b_r * B, C^E)`.
    pub fn lookup_costs(&self, stats: &SubtreeStats, kind: SubtreeKind) -> LookupCosts {
        LookupCosts { scan_ns: self.scan_ns(stats), empty_ns: self.empty_ns(stats, kind) }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::*;

    fn stats(nodes: u64, buffer_entries: u64, leaves: u64, buffer_pages: u64) -> SubtreeStats {
        SubtreeStats { nodes, buffer_entries, leaves, buffer_pages }
    }

    /// Table 2 (R_fixed 69 us, R_byte 1.7 us, W_fixed 274 us per 512 B page, W_byte 1.5 us),
    /// 256-byte nodes, the paper's 8-byte entries, F = 16.
    #[test]
    fn nand_toshiba_by_hand() {
        let shape = TreeShape { node_bytes: 256, entry_bytes: 8, fanout: 16 };
        let m = CostModel::new(&DeviceProfile::nand_toshiba(), shape).unwrap();
        assert_eq!(m.node_read_ns, 69_000.0 + 256.0 * 1_700.0); // 504,200
        assert_eq!(m.node_write_ns, 137_000.0 + 256.0 * 1_500.0); // 521,000
        assert_eq!(m.entry_read_ns, 13_600.0); // R_b = 8 R_byte
        assert_eq!(m.entry_write_ns, 4_281.25 + 12_000.0); // b_w = 8/512 W_fixed + 8 W_byte
        // S = 5, B = 100, L = 4, 3 pages: f = 3 * 69,000 / 100 = 2,070; b_r = 15,670.
        let s = stats(5, 100, 4, 3);
        assert_eq!(m.fragmentation_ns(&s), 2_070.0);
        assert_eq!(m.scan_ns(&s), 1_567_000.0);
        // C_m^E = 504,200 * 5 + (15,670 + 16,281.25) * 100.
        assert_eq!(m.empty_ns(&s, SubtreeKind::NonLeaf), 2_521_000.0 + 3_195_125.0);
        // C_n^E, H = 3: 2,521,000 + 521,000 * (4 + 3) + (15,670 + 8 * 521,000 / 16) * 100.
        let leaf = SubtreeKind::Leaf { tree_height: 3 };
        assert_eq!(m.empty_ns(&s, leaf), 2_521_000.0 + 3_647_000.0 + 27_617_000.0);
        let costs = m.lookup_costs(&s, leaf);
        assert_eq!((costs.scan_ns, costs.empty_ns), (1_567_000.0, 33_785_000.0));
    }

    /// On raw NAND the modeled scan equals what the device accounting charges for reading the
    /// buffer's fragments, one read access per page: `pages * R_fixed + bytes * R_byte`.
    #[test]
    fn nand_scan_matches_the_device_accounting() {
        let profile = DeviceProfile::nand_toshiba();
        let shape = TreeShape { node_bytes: 128, entry_bytes: 8, fanout: 8 };
        let m = CostModel::new(&profile, shape).unwrap();
        // 70 entries in fragments of 30, 25 and 15 entries on three pages.
        let device: u64 = [30u64, 25, 15]
            .iter()
            .map(|entries| profile.access_ns(AccessKind::RandomRead, 0, entries * 8))
            .sum();
        assert_eq!(m.scan_ns(&stats(3, 70, 2, 3)), device as f64);
        assert_eq!(m.node_read_ns, profile.access_ns(AccessKind::RandomRead, 0, 128) as f64);
    }

    /// Table 5 (random read 0.11 ms, random write 8.3 ms, sequential write 0.07 ms per 4 KiB
    /// page), page-sized nodes, 8-byte entries, F = 256.
    #[test]
    fn ssd_msp7525_by_hand() {
        let shape = TreeShape { node_bytes: 4096, entry_bytes: 8, fanout: 256 };
        let m = CostModel::new(&DeviceProfile::ssd_msp7525(), shape).unwrap();
        assert_eq!((m.node_read_ns, m.node_write_ns), (110_000.0, 8_300_000.0));
        assert_eq!(m.entry_read_ns, 0.0);
        assert_eq!(m.entry_write_ns, 136.718_75); // 8/4096 of 70 us
        // S = 3, B = 1,000, L = 2, 4 pages: b_r = f = 4 * 110,000 / 1,000 = 440.
        let s = stats(3, 1_000, 2, 4);
        assert_eq!(m.entry_scan_ns(&s), 440.0);
        assert_eq!(m.scan_ns(&s), 440_000.0);
        assert_eq!(m.empty_ns(&s, SubtreeKind::NonLeaf), 330_000.0 + 576_718.75);
        // C_n^E, H = 4: 330,000 + 8.3 ms * (2 + 4) + (440 + 8 * 8.3 ms / 256) * 1,000.
        let leaf = SubtreeKind::Leaf { tree_height: 4 };
        assert_eq!(m.empty_ns(&s, leaf), 330_000.0 + 49_800_000.0 + 259_815_000.0);
    }

    #[test]
    fn linear_constants_and_edge_cases() {
        let shape = TreeShape { node_bytes: 4096, entry_bytes: 16, fanout: 128 };
        for profile in [DeviceProfile::nand_toshiba(), DeviceProfile::ssd_x25e()] {
            let m = CostModel::new(&profile, shape).unwrap();
            let s = stats(7, 500, 6, 9);
            for kind in [SubtreeKind::NonLeaf, SubtreeKind::Leaf { tree_height: 5 }] {
                let linear = m.linear(&s, kind);
                assert!(linear.gamma >= linear.rho, "{profile}: an empty reads the buffer");
                assert_eq!(linear.scan_ns(500), m.scan_ns(&s));
            }
            // An empty buffer costs nothing to scan; emptying it still reads the subtree.
            let empty = stats(7, 0, 6, 0);
            assert_eq!(m.scan_ns(&empty), 0.0);
            assert_eq!(m.empty_ns(&empty, SubtreeKind::NonLeaf), 7.0 * m.node_read_ns);
        }
        let host = CostModel::new(&DeviceProfile::host(), shape).unwrap();
        let leaf = SubtreeKind::Leaf { tree_height: 5 };
        assert_eq!(host.lookup_costs(&stats(7, 500, 6, 9), leaf).empty_ns, 0.0);
        for (bad, name) in [
            (TreeShape { node_bytes: 0, ..shape }, "node_bytes"),
            (TreeShape { entry_bytes: ENTRY_BYTES_MAX + 1, ..shape }, "entry_bytes"),
            (TreeShape { fanout: 1, ..shape }, "fanout"),
        ] {
            let err = CostModel::new(&DeviceProfile::nand_toshiba(), bad).unwrap_err();
            assert!(err.to_string().contains(name), "{err}");
        }
    }
}
