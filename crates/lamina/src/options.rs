//! Options of [`crate::Db::open`], validated before anything is created.

use crate::EngineKind;
#[allow(unused_imports)] // some are used only by some engines' features
use crate::engine_settings::{
    BenchmarkOptions, EngineChoice, EngineSettings, FdtreeSettings, LogRingSettings, NbtreeSettings,
};
#[allow(unused_imports)] // OpenIntent: not in every feature set
use lamina_core::{Durability, Error, OpenIntent, Result};
#[cfg(feature = "fdtree")]
use lamina_fdtree::{FcMode, FdTreeOptions};
#[cfg(feature = "fptree")]
use lamina_fptree::FpTreeEngineOptions;
#[cfg(feature = "latree")]
use lamina_latree::LaTreeEngineOptions;
#[cfg(feature = "nbtree")]
use lamina_nbtree::NbTreeOptions;

/// How to open a database: build it from [`Options::new`] (or `Options::default()`, the
/// same) with the setters, or as a struct literal ending in `..Options::default()`.
///
/// ```
/// use lamina::{Durability, EngineKind, FdtreeSettings, Options};
///
/// let trie = Options::new().engine(EngineKind::Trie).durability(Durability::Sync);
/// let tuned = Options::new()
///     .engine(FdtreeSettings::new().size_ratio(24).key_bytes_max(256))
///     .memory_budget_bytes(16 << 20);
/// assert!(trie.validate().is_ok() && tuned.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The index design. An existing directory must have been created with the same one.
    /// `fptree` stores its data in a region file of fixed size
    /// ([`FPTREE_REGION_BYTES_DEFAULT`], 8 GiB sparse): at least 10 million records of an
    /// 8-byte key and a 128-byte value; a full region refuses writes with `NoSpace`.
    pub engine: EngineKind,
    /// When acknowledged writes survive a crash.
    pub durability: Durability,
    /// Memory an engine may use for its in-memory level or buffers (FD+tree's L0, NB-tree's
    /// root); 64 KiB to 64 GiB. The NB-tree holds its root d-tree twice (the one taking
    /// writes and the one being flushed), so its `sigma` is half of this, clamped into
    /// `lamina_nbtree::options::SIGMA_BYTES_MIN..=SIGMA_BYTES_MAX` (64 KiB to 16 GiB). The
    /// LA-tree splits it between its buffer pool and its node cache (25%, section 4.2), using at most
    /// [`LATREE_MEMORY_BYTES_MAX`] of it.
    pub memory_budget_bytes: u64,
    /// Block cache size; 0 disables the cache; at most 1 TiB. Used by `fdtree` (its block
    /// cache) and `latree`/`latree-btree` (added to the node cache's share of the memory
    /// budget); the other engines have no block cache and ignore it.
    pub cache_bytes: u64,
    /// Create the directory if it does not exist.
    pub create_if_missing: bool,
    /// The most disk space the engine may use; 0 (the default): no cap, the engine grows with
    /// its data. Enforced by every engine (`mem` and `trie`: their log ring grows with the
    /// live data up to it; `fdtree` and `nbtree`: their files and log; it may be raised or
    /// lowered from one open to the next): at the budget, writes that add data fail with
    /// `Error::NoSpace` naming this option, while deletes and overwrites that do not grow
    /// the data are accepted.
    pub disk_budget_bytes: u64,
    /// The most memory the engine's data may take (`Stats::memory_bytes`); 0 (the
    /// default): no limit. Enforced by the in-memory engines `mem` and `trie`: writes that
    /// would take them past it fail with `Error::NoSpace` naming this option (instead of
    /// the process running out of memory), while deletes and writes that do not grow the
    /// data are accepted. At least 1 MiB if set. Refused as unsupported by the other
    /// engines.
    pub memory_limit_bytes: u64,
    /// Settings of the chosen engine only (FD+tree's size ratio, NB-tree's fanout...);
    /// `EngineSettings::Default` takes the engine's defaults. Set both fields together with
    /// [`Options::engine`]; settings for another engine are refused by [`Options::validate`].
    pub engine_settings: EngineSettings,
    /// Benchmark-only device modeling (experimental; see [`BenchmarkOptions`]).
    #[doc(hidden)]
    pub benchmark: BenchmarkOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            engine: EngineKind::default(),
            durability: Durability::Sync,
            memory_budget_bytes: 4 << 20,
            cache_bytes: 15 << 20,
            create_if_missing: true,
            disk_budget_bytes: 0,
            memory_limit_bytes: 0,
            engine_settings: EngineSettings::Default,
            benchmark: BenchmarkOptions::default(),
        }
    }
}

/// Smallest `memory_budget_bytes`.
pub const MEMORY_BUDGET_BYTES_MIN: u64 = 64 << 10;
/// Largest `memory_budget_bytes`.
pub const MEMORY_BUDGET_BYTES_MAX: u64 = 64 << 30;
/// Largest `cache_bytes`.
pub const CACHE_BYTES_MAX: u64 = 1 << 40;
/// Most of `memory_budget_bytes` the LA-tree takes (its buffer pool is at most
/// `lamina_latree::buffer::POOL_BYTES_MAX`, 4 GiB, and takes 75% of its memory).
#[cfg_attr(not(feature = "latree"), allow(dead_code))]
pub const LATREE_MEMORY_BYTES_MAX: u64 = 4 << 30;

/// The `fptree` engine's region file size (8 GiB, created sparse: only what is written takes
/// disk space; the allocator's bitmaps are 1/256 of it, 32 MiB, zero pages until used).
/// Fixed when the store is created; the limit it puts on the data: about 35 million records of
/// an 8-byte key and a 128-byte value (a 192-byte block each plus its share of half-full
/// 896-byte leaves), fewer with larger records (each record takes its key, value and 16 bytes,
/// rounded up to 64-byte chunks, plus about 37 bytes of leaf). A full region refuses writes
/// with `NoSpace` and changes nothing.
pub const FPTREE_REGION_BYTES_DEFAULT: u64 = 8 << 30;
/// Smallest nonzero `memory_limit_bytes` (1 MiB).
pub const MEMORY_LIMIT_BYTES_MIN: u64 = 1 << 20;

impl Options {
    /// The defaults: the default engine (FD+tree), `Durability::Sync`, 4 MiB of memory
    /// budget, a 15 MiB block cache, no disk budget or memory limit, create if missing.
    pub fn new() -> Self {
        Options::default()
    }

    /// Chooses the engine and its settings: an [`EngineKind`] (its defaults),
    /// [`FdtreeSettings`], [`NbtreeSettings`] or an [`EngineChoice`].
    pub fn engine(mut self, choice: impl Into<EngineChoice>) -> Self {
        let choice = choice.into();
        self.engine = choice.kind;
        self.engine_settings = choice.settings;
        self
    }

    /// Sets [`Options::durability`].
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets [`Options::memory_budget_bytes`].
    pub fn memory_budget_bytes(mut self, bytes: u64) -> Self {
        self.memory_budget_bytes = bytes;
        self
    }

    /// Sets [`Options::cache_bytes`].
    pub fn cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// Sets [`Options::create_if_missing`].
    pub fn create_if_missing(mut self, create: bool) -> Self {
        self.create_if_missing = create;
        self
    }

    /// Sets [`Options::disk_budget_bytes`].
    pub fn disk_budget_bytes(mut self, bytes: u64) -> Self {
        self.disk_budget_bytes = bytes;
        self
    }

    /// Sets [`Options::memory_limit_bytes`].
    pub fn memory_limit_bytes(mut self, bytes: u64) -> Self {
        self.memory_limit_bytes = bytes;
        self
    }

    /// Sets the experimental, benchmark-only device model ([`BenchmarkOptions`]).
    #[doc(hidden)]
    pub fn benchmark(mut self, benchmark: BenchmarkOptions) -> Self {
        self.benchmark = benchmark;
        self
    }

    /// The FD+tree settings in effect (the defaults unless `engine_settings` holds some).
    #[cfg(feature = "fdtree")]
    fn fdtree_settings(&self) -> FdtreeSettings {
        match self.engine_settings {
            EngineSettings::Fdtree(settings) => settings,
            _ => FdtreeSettings::default(),
        }
    }

    /// The NB-tree settings in effect.
    #[cfg(feature = "nbtree")]
    fn nbtree_settings(&self) -> NbtreeSettings {
        match self.engine_settings {
            EngineSettings::Nbtree(settings) => settings,
            _ => NbtreeSettings::default(),
        }
    }

    /// The log-ring settings in effect (`trie`, `mem`).
    #[cfg(any(feature = "trie", feature = "mem"))]
    pub(crate) fn log_ring_settings(&self) -> LogRingSettings {
        match self.engine_settings {
            EngineSettings::LogRing(settings) => settings,
            _ => LogRingSettings::default(),
        }
    }

    /// Checks every option; the error names the option and its range.
    #[allow(irrefutable_let_patterns)] // in a build with the FD+tree as the only engine
    pub fn validate(&self) -> Result<()> {
        self.durability.validate()?;
        if !(MEMORY_BUDGET_BYTES_MIN..=MEMORY_BUDGET_BYTES_MAX).contains(&self.memory_budget_bytes)
        {
            return Err(Error::option(
                "memory_budget_bytes",
                format!(
                    "{} is outside {MEMORY_BUDGET_BYTES_MIN}..={MEMORY_BUDGET_BYTES_MAX}",
                    self.memory_budget_bytes
                ),
            ));
        }
        if self.cache_bytes > CACHE_BYTES_MAX {
            return Err(Error::option(
                "cache_bytes",
                format!("{} is over {CACHE_BYTES_MAX}", self.cache_bytes),
            ));
        }
        let family = self.engine.format_name();
        let in_memory = matches!(family, "mem" | "trie");
        for (name, value, what, supported) in [
            ("disk_budget_bytes", self.disk_budget_bytes, "a disk budget", family != "fptree"),
            ("memory_limit_bytes", self.memory_limit_bytes, "a memory limit", in_memory),
        ] {
            if value != 0 && !supported {
                return Err(Error::Unsupported {
                    what: format!(
                        "{name} = {value} with engine `{}`, which does not enforce {what}; \
                         pass 0",
                        self.engine
                    ),
                });
            }
        }
        if self.memory_limit_bytes != 0 && self.memory_limit_bytes < MEMORY_LIMIT_BYTES_MIN {
            return Err(Error::option(
                "memory_limit_bytes",
                format!(
                    "{} is below {MEMORY_LIMIT_BYTES_MIN}; set {} higher (or 0: no limit)",
                    self.memory_limit_bytes,
                    lamina_core::MEMORY_LIMIT_OPTION
                ),
            ));
        }
        if let Some(family) = self.engine_settings.family()
            && !self.engine_settings.fits(self.engine)
        {
            return Err(Error::Unsupported {
                what: format!(
                    "{family} settings with engine `{}`, which is not {family}; pass \
                     EngineSettings::Default (or choose the engine with Options::engine)",
                    self.engine
                ),
            });
        }
        #[cfg(feature = "nbtree")]
        if let Some(fanout) = self.nbtree_settings().fanout {
            let (min, max) =
                (lamina_nbtree::options::FANOUT_MIN, lamina_nbtree::options::FANOUT_MAX);
            if !(min..=max).contains(&fanout) {
                return Err(Error::option(
                    "nbtree fanout",
                    format!("f = {fanout} is outside {min}..={max}"),
                ));
            }
        }
        #[cfg(feature = "fdtree")]
        self.validate_fdtree_settings()?;
        #[cfg(feature = "fdtree")]
        if let EngineKind::Fdtree(mode) = self.engine {
            // The engine's own sizing rules (block capacity against gamma and key length), so
            // a bad combination is refused before anything is created.
            self.fdtree_options(mode).params()?;
        }
        #[cfg(feature = "nbtree")]
        if self.engine == EngineKind::Nbtree {
            self.nbtree_options(OpenIntent::CreateIfMissing).validate()?;
        }
        #[cfg(feature = "latree")]
        if matches!(self.engine, EngineKind::Latree | EngineKind::LatreeBtree) {
            self.latree_options(OpenIntent::CreateIfMissing).validate()?;
        }
        Ok(())
    }

    /// The FD+tree settings' own ranges.
    #[cfg(feature = "fdtree")]
    fn validate_fdtree_settings(&self) -> Result<()> {
        let fdtree = self.fdtree_settings();
        if let Some(key_bytes_max) = fdtree.key_bytes_max
            && !(1..=lamina_core::limits::KEY_BYTES_MAX).contains(&key_bytes_max)
        {
            return Err(Error::option(
                "fdtree key_bytes_max",
                format!("{key_bytes_max} is outside 1..={}", lamina_core::limits::KEY_BYTES_MAX),
            ));
        }
        if let Some(ratio) = fdtree.size_ratio {
            let max = lamina_fdtree::options::SIZE_RATIO_MAX;
            if !(2..=max).contains(&ratio) {
                return Err(Error::option(
                    "fdtree size_ratio",
                    format!("gamma {ratio} is outside 2..={max}"),
                ));
            }
        }
        Ok(())
    }

    /// The `fdtree` engine's options for concurrency scheme `mode`.
    #[cfg(feature = "fdtree")]
    pub(crate) fn fdtree_options(&self, mode: FcMode) -> FdTreeOptions {
        let defaults = FdTreeOptions::default();
        FdTreeOptions {
            memory_budget_bytes: self.memory_budget_bytes,
            cache_bytes: usize::try_from(self.cache_bytes).unwrap_or(usize::MAX),
            mode,
            durability: self.durability,
            size_ratio: self.fdtree_settings().size_ratio.unwrap_or(defaults.size_ratio),
            key_bytes_max: self.fdtree_settings().key_bytes_max.unwrap_or(defaults.key_bytes_max),
            disk_budget_bytes: self.disk_budget_bytes,
            ..defaults
        }
    }

    /// The `latree` (or `latree-btree`) engine's options, opening with `intent`: the
    /// engine's defaults for `device` (lamina's full key and value limits, 16 KiB nodes),
    /// with the memory budget shared by its buffer pool and node cache and the block cache
    /// added to the node cache.
    #[cfg(feature = "latree")]
    pub(crate) fn latree_options(&self, intent: OpenIntent) -> LaTreeEngineOptions {
        let mut latree = if self.engine == EngineKind::LatreeBtree {
            LaTreeEngineOptions::btree_for_device(self.benchmark.device)
        } else {
            LaTreeEngineOptions::for_device(self.benchmark.device)
        };
        latree.tree.memory_bytes =
            usize::try_from(self.memory_budget_bytes.min(LATREE_MEMORY_BYTES_MAX))
                .unwrap_or(usize::MAX);
        // Like fdtree's block cache: decoded nodes kept beyond the paper's 25% share.
        latree.tree.node_cache_extra_bytes =
            usize::try_from(self.cache_bytes).unwrap_or(usize::MAX);
        latree.durability = self.durability;
        latree.intent = intent;
        latree.disk_budget_bytes = self.disk_budget_bytes;
        latree
    }

    /// The `fptree` engine's options, opening with `intent`: a region file of
    /// [`FPTREE_REGION_BYTES_DEFAULT`] (a sparse file, fixed at creation, holding at least 10
    /// million records of an 8-byte key and a 128-byte value; the engine takes no
    /// disk budget, which lamina's contract lets a user raise between opens and which must
    /// admit overwrites at the limit); leaves are allocated one at a time (the paper's
    /// concurrent configuration).
    #[cfg(feature = "fptree")]
    pub(crate) fn fptree_options(&self, intent: OpenIntent) -> FpTreeEngineOptions {
        FpTreeEngineOptions {
            region_bytes: FPTREE_REGION_BYTES_DEFAULT,
            durability: self.durability,
            intent,
            ..FpTreeEngineOptions::default()
        }
    }

    /// The `nbtree` engine's options, opening with `intent`. `sigma` is half the memory
    /// budget (the root d-tree is held twice: the active one and the frozen one being
    /// flushed), clamped into the engine's range.
    #[cfg(feature = "nbtree")]
    pub(crate) fn nbtree_options(&self, intent: OpenIntent) -> NbTreeOptions {
        use lamina_nbtree::options::{SIGMA_BYTES_MAX, SIGMA_BYTES_MIN};
        let defaults = NbTreeOptions::default();
        NbTreeOptions {
            fanout: self.nbtree_settings().fanout.unwrap_or(defaults.fanout),
            sigma_bytes: (self.memory_budget_bytes / 2).clamp(SIGMA_BYTES_MIN, SIGMA_BYTES_MAX),
            durability: self.durability,
            disk_budget_bytes: self.disk_budget_bytes,
            intent,
            ..defaults
        }
    }
}

#[cfg(all(
    test,
    feature = "mem",
    feature = "fdtree",
    feature = "trie",
    feature = "nbtree",
    feature = "latree",
    feature = "fptree"
))]
mod tests {
    #[test]
    fn the_fptree_region_holds_ten_million_small_records() {
        use lamina_storage::pmem::RegionLayout;
        let layout = RegionLayout::compute(super::FPTREE_REGION_BYTES_DEFAULT, 64).unwrap();
        let heap_bytes = layout.chunk_count * layout.chunk_bytes;
        // A record of an 8-byte key and a 128-byte value: a blob of 16 + 8 + 128 bytes in
        // whole 64-byte chunks; leaves of 896 bytes at their worst steady fill after splits
        // (24 of 48 slots: ascending inserts leave every split leaf half full).
        let record_bytes = (16u64 + 8 + 128).next_multiple_of(64);
        let records = 10_000_000u64;
        let needed = records * record_bytes + records.div_ceil(24) * 896;
        assert!(needed * 2 < heap_bytes, "{needed} bytes needed, a heap of {heap_bytes}");
        let metadata = layout.heap_offset as f64 / layout.region_bytes as f64;
        assert!(metadata < 0.005, "allocator metadata {metadata}");
    }

    use std::time::Duration;

    use super::*;

    fn mem() -> Options {
        Options { engine: EngineKind::Mem, ..Options::default() }
    }

    #[test]
    fn out_of_range_options_name_themselves() {
        let err = Options { memory_budget_bytes: 1, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("memory_budget_bytes"), "{err}");
        let err = Options { cache_bytes: u64::MAX, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("cache_bytes"), "{err}");
        let bad = Durability::Buffered { max_delay: Duration::ZERO };
        let err = Options { durability: bad, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("durability"), "{err}");
        assert!(mem().validate().is_ok());
        let budget = Options { disk_budget_bytes: 1 << 30, ..Options::default() };
        assert!(budget.validate().is_ok(), "every engine honors a disk budget");
        assert!(Options { disk_budget_bytes: 1 << 30, ..mem() }.validate().is_ok());
        let limit = Options { memory_limit_bytes: 1 << 30, ..Options::default() };
        assert!(matches!(limit.validate(), Err(Error::Unsupported { .. })));
        assert!(Options { memory_limit_bytes: 1 << 30, ..mem() }.validate().is_ok());
        let err = Options { memory_limit_bytes: 4096, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("--memory-limit-bytes"), "{err}");
    }

    #[test]
    fn fdtree_settings_are_checked_and_only_for_fdtree() {
        let fdtree = |settings| mem().engine(EngineChoice::fdtree(FcMode::Xm, settings)).validate();
        let err = fdtree(FdtreeSettings::new().size_ratio(24)).unwrap_err();
        assert!(err.to_string().contains("size_ratio"), "too many fences of 1 KiB keys: {err}");
        fdtree(FdtreeSettings::new().size_ratio(24).key_bytes_max(256)).unwrap();
        for bad in [0, 1, lamina_fdtree::options::SIZE_RATIO_MAX + 1] {
            let err = fdtree(FdtreeSettings::new().size_ratio(bad)).unwrap_err();
            assert!(err.to_string().contains("fdtree size_ratio"), "{err}");
        }
        fdtree(FdtreeSettings::new().key_bytes_max(64)).unwrap();
        let err = fdtree(FdtreeSettings::new().key_bytes_max(0)).unwrap_err();
        assert!(err.to_string().contains("fdtree key_bytes_max"), "{err}");
        // Settings of one engine with another engine: refused, not ignored.
        let settings = EngineSettings::Fdtree(FdtreeSettings::new().size_ratio(8));
        let on_mem = Options { engine_settings: settings, ..mem() }.validate();
        assert!(matches!(on_mem, Err(Error::Unsupported { .. })), "{on_mem:?}");
        let chosen = Options::new().engine(FdtreeSettings::new().size_ratio(8));
        assert_eq!(chosen.engine, EngineKind::Fdtree(FcMode::default()));
        assert_eq!(chosen.fdtree_options(FcMode::Fc).size_ratio, 8);
        // Choosing a plain engine afterwards drops the FD+tree settings.
        assert_eq!(chosen.engine(EngineKind::Trie).engine_settings, EngineSettings::Default);
    }

    #[test]
    fn nbtree_fanout_is_checked_and_only_for_nbtree() {
        use lamina_nbtree::options::{FANOUT_MAX, FANOUT_MIN};
        let nbtree = Options { engine: EngineKind::Nbtree, ..mem() };
        nbtree.validate().unwrap();
        for good in [FANOUT_MIN, 8, FANOUT_MAX] {
            let options = nbtree.engine(NbtreeSettings::new().fanout(good));
            options.validate().unwrap();
            assert_eq!(options.nbtree_options(OpenIntent::MustExist).fanout, good);
        }
        for bad in [0, FANOUT_MIN - 1, FANOUT_MAX + 1] {
            let err = nbtree.engine(NbtreeSettings::new().fanout(bad)).validate().unwrap_err();
            assert!(err.is_invalid_argument(), "{err}");
            assert!(err.to_string().contains("nbtree fanout"), "{err}");
        }
        let settings = EngineSettings::Nbtree(NbtreeSettings::new().fanout(3));
        let on_fdtree = Options { engine_settings: settings, ..Options::default() }.validate();
        assert!(matches!(on_fdtree, Err(Error::Unsupported { .. })), "{on_fdtree:?}");
        let settings = EngineSettings::Fdtree(FdtreeSettings::new().size_ratio(8));
        let fdtree_only = Options { engine_settings: settings, ..nbtree }.validate();
        assert!(matches!(fdtree_only, Err(Error::Unsupported { .. })), "{fdtree_only:?}");
        let limit = Options { memory_limit_bytes: 1 << 30, ..nbtree }.validate();
        assert!(matches!(limit, Err(Error::Unsupported { .. })), "not an in-memory engine");
        Options { disk_budget_bytes: 1 << 30, ..nbtree }.validate().unwrap();
    }

    #[test]
    fn nbtree_sigma_is_half_the_memory_budget_within_the_engine_range() {
        use lamina_nbtree::options::{SIGMA_BYTES_MAX, SIGMA_BYTES_MIN};
        let nbtree = Options {
            engine: EngineKind::Nbtree,
            durability: Durability::None,
            disk_budget_bytes: 7 << 30,
            ..Options::default()
        };
        let mapped = nbtree.nbtree_options(OpenIntent::MustExist);
        assert_eq!(mapped.sigma_bytes, Options::default().memory_budget_bytes / 2);
        assert_eq!(
            (mapped.durability, mapped.disk_budget_bytes, mapped.intent),
            (Durability::None, 7 << 30, OpenIntent::MustExist)
        );
        assert_eq!(mapped.fanout, lamina_nbtree::options::FANOUT_DEFAULT);
        for (budget, sigma) in [
            (MEMORY_BUDGET_BYTES_MIN, (MEMORY_BUDGET_BYTES_MIN / 2).max(SIGMA_BYTES_MIN)),
            (MEMORY_BUDGET_BYTES_MIN + 2, MEMORY_BUDGET_BYTES_MIN / 2 + 1),
            (MEMORY_BUDGET_BYTES_MAX, SIGMA_BYTES_MAX),
        ] {
            let options = Options { memory_budget_bytes: budget, ..nbtree };
            options.validate().unwrap();
            let mapped = options.nbtree_options(OpenIntent::CreateIfMissing);
            assert_eq!(mapped.sigma_bytes, sigma, "budget {budget}");
            mapped.validate().unwrap();
        }
    }

    #[test]
    fn latree_takes_the_memory_budget_and_the_block_cache() {
        for engine in [EngineKind::Latree, EngineKind::LatreeBtree] {
            let options = Options {
                engine,
                memory_budget_bytes: 8 << 20,
                cache_bytes: 15 << 20,
                ..Options::default()
            };
            options.validate().unwrap();
            let mapped = options.latree_options(OpenIntent::CreateIfMissing);
            assert_eq!(mapped.tree.memory_bytes, 8 << 20);
            assert_eq!(mapped.tree.node_cache_extra_bytes, 15 << 20);
            assert_eq!(mapped.tree.buffered, engine == EngineKind::Latree);
        }
    }
}
