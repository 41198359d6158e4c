//! Counters an engine reports through `OrderedIndex::stats`.

/// I/O counts from `lamina-storage`'s accounting. Exact and deterministic for a given
/// sequence of operations, so tests may assert on them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct IoStats {
    /// Read calls that continued the previous access of the same file.
    pub reads_sequential: u64,
    /// Read calls that did not.
    pub reads_random: u64,
    /// Write calls that continued the previous access of the same file.
    pub writes_sequential: u64,
    /// Write calls that did not.
    pub writes_random: u64,
    /// Blocks read (an access touching part of a block counts the block).
    pub blocks_read: u64,
    /// Blocks written.
    pub blocks_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Durability barriers (`fdatasync` or equivalent).
    pub syncs: u64,
    /// Files created.
    pub files_created: u64,
    /// Files deleted.
    pub files_deleted: u64,
    /// Bytes currently allocated on the device.
    pub live_bytes: u64,
    /// Most bytes ever allocated at once.
    pub live_bytes_peak: u64,
    /// Modeled device time in nanoseconds under the active device profile (0 for `host`).
    pub modeled_device_ns: u64,
    /// Hole punches (`StorageFile::punch_hole` calls that affected at least one byte).
    pub punches: u64,
    /// Bytes deallocated by hole punches (the part of each range below the file's length).
    pub bytes_punched: u64,
}

impl IoStats {
    /// Total read calls.
    pub fn reads(&self) -> u64 {
        self.reads_sequential + self.reads_random
    }

    /// Total write calls.
    pub fn writes(&self) -> u64 {
        self.writes_sequential + self.writes_random
    }

    /// Counts accumulated between `earlier` and `self` (the gauges `live_bytes` and
    /// `live_bytes_peak` are taken from `self`).
    pub fn since(&self, earlier: &IoStats) -> IoStats {
        IoStats {
            reads_sequential: self.reads_sequential - earlier.reads_sequential,
            reads_random: self.reads_random - earlier.reads_random,
            writes_sequential: self.writes_sequential - earlier.writes_sequential,
            writes_random: self.writes_random - earlier.writes_random,
            blocks_read: self.blocks_read - earlier.blocks_read,
            blocks_written: self.blocks_written - earlier.blocks_written,
            bytes_read: self.bytes_read - earlier.bytes_read,
            bytes_written: self.bytes_written - earlier.bytes_written,
            syncs: self.syncs - earlier.syncs,
            files_created: self.files_created - earlier.files_created,
            files_deleted: self.files_deleted - earlier.files_deleted,
            live_bytes: self.live_bytes,
            live_bytes_peak: self.live_bytes_peak,
            modeled_device_ns: self.modeled_device_ns - earlier.modeled_device_ns,
            punches: self.punches - earlier.punches,
            bytes_punched: self.bytes_punched - earlier.bytes_punched,
        }
    }
}

/// What an engine reports about itself. With the `serde` feature it implements `Serialize`
/// (not `Deserialize`: its names are `&'static str` from the engine), `extra` as a map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Stats {
    /// Engine name (`mem`, `fdtree`, ...).
    pub engine: &'static str,
    /// Live keys, where the engine knows it exactly.
    pub keys: Option<u64>,
    /// Bytes of user keys and values written through the API (for write amplification).
    pub user_bytes_written: u64,
    /// Bytes of memory the engine holds for data and indexes.
    pub memory_bytes: u64,
    /// I/O counts.
    pub io: IoStats,
    /// Engine-specific counters (merges run, levels, cache hits...), name then value.
    #[cfg_attr(feature = "serde", serde(serialize_with = "serialize_extra"))]
    pub extra: Vec<(&'static str, u64)>,
}

impl Stats {
    /// Stats for `engine` with everything else zero.
    pub fn new(engine: &'static str) -> Self {
        Stats { engine, ..Stats::default() }
    }

    /// Bytes written to storage per byte of user data written (0 if nothing was written).
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        self.io.bytes_written as f64 / self.user_bytes_written as f64
    }
}

/// `Stats::extra` as a JSON-friendly map of name to value, in the engine's order.
#[cfg(feature = "serde")]
fn serialize_extra<S: serde::Serializer>(
    extra: &[(&'static str, u64)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(extra.iter().map(|(name, value)| (*name, *value)))
}

#[cfg(all(test, feature = "serde"))]
mod serde_tests {
    use super::*;

    #[test]
    fn stats_serialize_every_field_and_io_stats_roundtrip() {
        let io = IoStats { reads_random: 3, bytes_written: 4096, syncs: 2, ..IoStats::default() };
        let stats = Stats {
            keys: Some(7),
            user_bytes_written: 99,
            memory_bytes: 1 << 20,
            io,
            extra: vec![("merges", 5), ("levels", 2)],
            ..Stats::new("fdtree")
        };
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(json["engine"], "fdtree");
        assert_eq!(json["keys"], 7);
        assert_eq!(json["user_bytes_written"], 99);
        assert_eq!(json["memory_bytes"], 1 << 20);
        assert_eq!(json["extra"]["merges"], 5);
        assert_eq!(json["extra"]["levels"], 2);
        let back: IoStats = serde_json::from_value(json["io"].clone()).unwrap();
        assert_eq!(back, io);
        assert_eq!(
            serde_json::to_value(Stats::new("mem")).unwrap()["keys"],
            serde_json::Value::Null
        );
    }
}
