//! The engine choice of [`crate::Options`]: an [`EngineKind`] with the settings only that
//! engine has, and the benchmark-only knobs kept out of the user's way.

use lamina_storage::DeviceProfile;

use crate::EngineKind;

/// Settings of the `fdtree` engine (any of its concurrency schemes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FdtreeSettings {
    /// The size ratio gamma between adjacent levels (FD+FC section 2, invariant I3:
    /// `kappa_i = gamma^i kappa_0`; the paper's default is 24), in
    /// `2..=lamina_fdtree::options::SIZE_RATIO_MAX`. `None` takes the engine's default.
    pub size_ratio: Option<u32>,
    /// The longest key accepted, in `1..=limits::KEY_BYTES_MAX` (longer keys are refused as
    /// invalid arguments). A block must hold `2 * gamma + 1` fences of the longest key (see
    /// `lamina-fdtree`'s README, "variable-length keys"), so a large `size_ratio` such as
    /// the paper's 24 needs it lowered. `None`: the API limit.
    pub key_bytes_max: Option<usize>,
}

impl FdtreeSettings {
    /// The engine's defaults.
    pub fn new() -> Self {
        FdtreeSettings::default()
    }

    /// Sets [`FdtreeSettings::size_ratio`].
    pub fn size_ratio(mut self, gamma: u32) -> Self {
        self.size_ratio = Some(gamma);
        self
    }

    /// Sets [`FdtreeSettings::key_bytes_max`].
    pub fn key_bytes_max(mut self, bytes: usize) -> Self {
        self.key_bytes_max = Some(bytes);
        self
    }
}

/// Settings of the `nbtree` engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NbtreeSettings {
    /// The s-tree fanout `f`, the most children of an s-node (NB-tree section 4.3; the
    /// paper's setting is 3, the engine's default), in
    /// `lamina_nbtree::options::FANOUT_MIN..=FANOUT_MAX` (3..=64). `None`: the default.
    pub fanout: Option<u32>,
}

impl NbtreeSettings {
    /// The engine's defaults.
    pub fn new() -> Self {
        NbtreeSettings::default()
    }

    /// Sets [`NbtreeSettings::fanout`].
    pub fn fanout(mut self, fanout: u32) -> Self {
        self.fanout = Some(fanout);
        self
    }
}

/// Settings of the engines that hold their data in memory and are durable through the
/// contest paper's coalesced cyclic log: `trie` and `mem`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogRingSettings {
    /// The log's write buffer (writes are coalesced into chunks of this size before they
    /// reach the ring), in `lamina_storage::log::BUFFER_BYTES_MIN..=BUFFER_BYTES_MAX`; the
    /// ring's smallest size (and so the smallest `disk_budget_bytes`) grows with it. `None`:
    /// the engine's default (1 MiB for `trie`, the log's default for `mem`).
    pub log_buffer_bytes: Option<usize>,
}

impl LogRingSettings {
    /// The engine's defaults.
    pub fn new() -> Self {
        LogRingSettings::default()
    }

    /// Sets [`LogRingSettings::log_buffer_bytes`].
    pub fn log_buffer_bytes(mut self, bytes: usize) -> Self {
        self.log_buffer_bytes = Some(bytes);
        self
    }
}

/// Engine-specific settings: those of [`crate::Options::engine`], or `Default`. Settings of
/// another engine than the chosen one are refused by [`crate::Options::validate`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EngineSettings {
    /// The chosen engine's defaults.
    #[default]
    Default,
    /// For `EngineKind::Fdtree(_)`.
    Fdtree(FdtreeSettings),
    /// For `EngineKind::Nbtree`.
    Nbtree(NbtreeSettings),
    /// For `EngineKind::Trie` and `EngineKind::Mem`.
    LogRing(LogRingSettings),
}

impl EngineSettings {
    /// The engine family the settings are for (`None` for `Default`).
    pub(crate) fn family(&self) -> Option<&'static str> {
        match self {
            EngineSettings::Default => None,
            EngineSettings::Fdtree(_) => Some("fdtree"),
            EngineSettings::Nbtree(_) => Some("nbtree"),
            EngineSettings::LogRing(_) => Some("log ring (trie, mem)"),
        }
    }

    /// Whether the settings apply to `kind`.
    pub(crate) fn fits(&self, kind: EngineKind) -> bool {
        match self {
            EngineSettings::Default => true,
            EngineSettings::Fdtree(_) => kind.format_name() == "fdtree",
            EngineSettings::Nbtree(_) => kind.format_name() == "nbtree",
            EngineSettings::LogRing(_) => matches!(kind.format_name(), "trie" | "mem"),
        }
    }
}

/// An engine with its settings: what [`crate::Options::engine`] takes. Made from an
/// [`EngineKind`] (its defaults), [`FdtreeSettings`] (the default FD+tree scheme),
/// [`NbtreeSettings`], or [`EngineChoice::fdtree`] for another scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineChoice {
    /// The engine.
    pub kind: EngineKind,
    /// Its settings.
    pub settings: EngineSettings,
}

#[cfg(feature = "fdtree")]
impl EngineChoice {
    /// The FD+tree with concurrency scheme `mode` and `settings`.
    pub fn fdtree(mode: crate::FcMode, settings: FdtreeSettings) -> Self {
        EngineChoice { kind: EngineKind::Fdtree(mode), settings: EngineSettings::Fdtree(settings) }
    }
}

impl EngineChoice {
    /// `kind` with `settings` (checked by [`crate::Options::validate`]: settings of another
    /// engine are refused).
    pub fn with_settings(kind: EngineKind, settings: EngineSettings) -> Self {
        EngineChoice { kind, settings }
    }
}

impl From<EngineKind> for EngineChoice {
    fn from(kind: EngineKind) -> Self {
        EngineChoice { kind, settings: EngineSettings::Default }
    }
}

#[cfg(feature = "fdtree")]
impl From<FdtreeSettings> for EngineChoice {
    fn from(settings: FdtreeSettings) -> Self {
        EngineChoice::fdtree(crate::FcMode::default(), settings)
    }
}

#[cfg(feature = "nbtree")]
impl From<NbtreeSettings> for EngineChoice {
    fn from(settings: NbtreeSettings) -> Self {
        EngineChoice { kind: EngineKind::Nbtree, settings: EngineSettings::Nbtree(settings) }
    }
}

/// **Experimental, for benchmarks** (`lamina-bench`, `lamina bench`): knobs that model a
/// storage device. Not part of the stable API: they may change or go in any release, and an
/// application has no reason to set them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BenchmarkOptions {
    /// The device whose cost model turns the engine's I/O into modeled time
    /// (`Stats::io.modeled_device_ns`); `host` models nothing. The LA-tree also sizes its
    /// nodes for it.
    pub device: DeviceProfile,
    /// Impose the device's modeled latency for real (sleep on each access), so wall-clock
    /// runs reproduce its asymmetry.
    pub emulate_device: bool,
}

impl Default for BenchmarkOptions {
    fn default() -> Self {
        BenchmarkOptions { device: DeviceProfile::host(), emulate_device: false }
    }
}

impl BenchmarkOptions {
    /// Models `device`, emulating its latency for real if `emulate_device`.
    pub fn new(device: DeviceProfile, emulate_device: bool) -> Self {
        BenchmarkOptions { device, emulate_device }
    }
}
