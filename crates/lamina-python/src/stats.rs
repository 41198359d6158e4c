//! `Db.stats()`: lamina's `Stats` as a dict.

use lamina::Stats;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `stats` as a dict: `engine`, `keys` (None where the engine does not know it exactly),
/// `user_bytes_written`, `memory_bytes`, `write_amplification`, `io` (a dict of I/O
/// counters) and `extra` (a dict of engine-specific counters).
pub fn to_dict<'py>(py: Python<'py>, stats: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let io = PyDict::new(py);
    let counters = stats.io;
    for (name, value) in [
        ("reads_sequential", counters.reads_sequential),
        ("reads_random", counters.reads_random),
        ("writes_sequential", counters.writes_sequential),
        ("writes_random", counters.writes_random),
        ("blocks_read", counters.blocks_read),
        ("blocks_written", counters.blocks_written),
        ("bytes_read", counters.bytes_read),
        ("bytes_written", counters.bytes_written),
        ("syncs", counters.syncs),
        ("files_created", counters.files_created),
        ("files_deleted", counters.files_deleted),
        ("live_bytes", counters.live_bytes),
        ("live_bytes_peak", counters.live_bytes_peak),
        ("modeled_device_ns", counters.modeled_device_ns),
        ("punches", counters.punches),
        ("bytes_punched", counters.bytes_punched),
    ] {
        io.set_item(name, value)?;
    }
    let extra = PyDict::new(py);
    for (name, value) in &stats.extra {
        extra.set_item(*name, *value)?;
    }
    let dict = PyDict::new(py);
    dict.set_item("engine", stats.engine)?;
    dict.set_item("keys", stats.keys)?;
    dict.set_item("user_bytes_written", stats.user_bytes_written)?;
    dict.set_item("memory_bytes", stats.memory_bytes)?;
    dict.set_item("write_amplification", stats.write_amplification())?;
    dict.set_item("io", io)?;
    dict.set_item("extra", extra)?;
    Ok(dict)
}
