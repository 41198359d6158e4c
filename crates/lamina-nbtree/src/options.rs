//! Options of an NB-tree: the paper's three parameters `f`, `sigma` and `B` (section 4.3),
//! the Bloom filters (section 5.2) and how the deamortized flush work is done (section 5.1).

use lamina_core::{Durability, Error, OpenIntent, Result};

/// Default s-tree fanout `f` (the paper's setting, section 6.2).
pub const FANOUT_DEFAULT: u32 = 3;
/// Smallest fanout: a B-tree needs at least 3 children per node to split into two halves.
pub const FANOUT_MIN: u32 = 3;
/// Largest fanout (an s-node's keys must fit the manifest comfortably).
pub const FANOUT_MAX: u32 = 64;
/// Default `sigma`, the size of a d-tree in bytes (entries' [`crate::entry::entry_bytes`]).
pub const SIGMA_BYTES_DEFAULT: u64 = 16 << 20;
/// Smallest `sigma`: the paper requires `f` to be at most a constant fraction of `sigma`
/// (section 5.1); in bytes, a d-tree must hold many of the largest entries.
pub const SIGMA_BYTES_MIN: u64 = 16 << 10;
/// Largest `sigma` (the root's d-tree is held in memory twice: the active and the frozen).
pub const SIGMA_BYTES_MAX: u64 = 16 << 30;
/// Default d-node page (the paper's 4 KB disk page).
pub const PAGE_BYTES_DEFAULT: u32 = 4096;
/// Smallest d-node page.
pub const PAGE_BYTES_MIN: u32 = 512;
/// Largest d-node page.
pub const PAGE_BYTES_MAX: u32 = 64 << 10;
/// Default Bloom filter bits per key (the and LevelDB's 10).
pub const BLOOM_BITS_PER_KEY_DEFAULT: u32 = 10;
/// Most Bloom filter bits per key.
pub const BLOOM_BITS_PER_KEY_MAX: u32 = 64;

/// Who performs the flush work that a full root d-tree sets off (section 5.1,
/// "Deamortization").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Deamortization {
    /// A background thread does the work; a writer helps only when the work is behind the
    /// schedule that finishes it before the next root d-tree fills (bounded help).
    #[default]
    Background,
    /// No thread: every insert does its `1/sigma` share of the pending work itself, exactly
    /// as the paper describes. Deterministic: the page writes of each insert are bounded.
    Foreground,
}

/// How to open an NB-tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NbTreeOptions {
    /// The s-tree fanout `f`: an s-node has at most `f` children.
    pub fanout: u32,
    /// `sigma` in bytes: the root d-tree (in memory) is flushed when it holds this much; a
    /// leaf s-node's d-tree is split when it holds more.
    pub sigma_bytes: u64,
    /// Size of a d-node page on disk (the d-tree fanout `B` follows from it and the keys).
    pub page_bytes: u32,
    /// Bits per key of each d-tree's Bloom filter; 0 disables the filters.
    pub bloom_bits_per_key: u32,
    /// When an acknowledged write survives a crash.
    pub durability: Durability,
    /// Who does the deamortized flush work.
    pub deamortization: Deamortization,
    /// Disk space the tree may use (0: no limit). Writes that add data are refused with
    /// `NoSpace` once it is reached; deletes always go through.
    pub disk_budget_bytes: u64,
    /// Run [`crate::NbTree::verify`] after every flush step that changes the s-tree.
    pub verify_each_flush: bool,
    /// Whether the database must already exist.
    pub intent: OpenIntent,
}

impl Default for NbTreeOptions {
    fn default() -> Self {
        NbTreeOptions {
            fanout: FANOUT_DEFAULT,
            sigma_bytes: SIGMA_BYTES_DEFAULT,
            page_bytes: PAGE_BYTES_DEFAULT,
            bloom_bits_per_key: BLOOM_BITS_PER_KEY_DEFAULT,
            durability: Durability::Sync,
            deamortization: Deamortization::Background,
            disk_budget_bytes: 0,
            verify_each_flush: false,
            intent: OpenIntent::CreateIfMissing,
        }
    }
}

impl NbTreeOptions {
    /// Checks every option; the error names the one out of range.
    pub fn validate(&self) -> Result<()> {
        let range = |name: &'static str, value: u64, min: u64, max: u64| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(Error::option(name, format!("{value} is outside {min}..={max}")))
            }
        };
        range("fanout", u64::from(self.fanout), u64::from(FANOUT_MIN), u64::from(FANOUT_MAX))?;
        range("sigma_bytes", self.sigma_bytes, SIGMA_BYTES_MIN, SIGMA_BYTES_MAX)?;
        range(
            "page_bytes",
            u64::from(self.page_bytes),
            u64::from(PAGE_BYTES_MIN),
            u64::from(PAGE_BYTES_MAX),
        )?;
        if !self.page_bytes.is_power_of_two() {
            return Err(Error::option(
                "page_bytes",
                format!("{} is not a power of two", self.page_bytes),
            ));
        }
        range(
            "bloom_bits_per_key",
            u64::from(self.bloom_bits_per_key),
            0,
            u64::from(BLOOM_BITS_PER_KEY_MAX),
        )?;
        self.durability.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_every_bad_option_is_named() {
        NbTreeOptions::default().validate().unwrap();
        let bad = [
            (NbTreeOptions { fanout: 2, ..NbTreeOptions::default() }, "fanout"),
            (NbTreeOptions { sigma_bytes: 1, ..NbTreeOptions::default() }, "sigma_bytes"),
            (NbTreeOptions { page_bytes: 3000, ..NbTreeOptions::default() }, "page_bytes"),
            (NbTreeOptions { page_bytes: 256, ..NbTreeOptions::default() }, "page_bytes"),
            (
                NbTreeOptions { bloom_bits_per_key: 65, ..NbTreeOptions::default() },
                "bloom_bits_per_key",
            ),
        ];
        for (options, name) in bad {
            let err = options.validate().unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
    }
}
