//! The memory limit: writes that would take the tree's memory (`Stats::memory_bytes`) past
//! it fail with `Error::NoSpace` naming the option, before anything changes.
//!
//! An exact figure costs a walk over the counters, the arena and the allocator's per-thread
//! caches, too much for every write; so each growing write adds its growth to a running
//! estimate, and the exact figure is taken whenever the estimate passes the limit or has
//! grown by [`RECHECK_BYTES`] since the last exact one (deletes and the epoch collector
//! lower the real figure meanwhile). Writes may thus pass the limit by at most what
//! concurrent writers add in one such window.

use lamina_core::{Error, MEMORY_LIMIT_OPTION, Result};

use crate::sync::{AtomicU64, Ordering};

/// Growth after which the exact memory figure is taken again.
pub(crate) const RECHECK_BYTES: u64 = 1 << 20;

/// The limit and its running estimate.
#[derive(Debug)]
pub(crate) struct MemoryGate {
    limit: Option<u64>,
    estimate: AtomicU64,
    since_exact: AtomicU64,
}

impl MemoryGate {
    pub(crate) fn new(limit: Option<u64>) -> MemoryGate {
        MemoryGate { limit, estimate: AtomicU64::new(0), since_exact: AtomicU64::new(u64::MAX / 2) }
    }

    /// Admits a write that adds `growth` bytes, or refuses it; `exact` returns the tree's
    /// memory now.
    pub(crate) fn admit(&self, growth: u64, exact: impl FnOnce() -> u64) -> Result<()> {
        let Some(limit) = self.limit else { return Ok(()) };
        if growth == 0 {
            return Ok(());
        }
        let estimate = self.estimate.fetch_add(growth, Ordering::Relaxed) + growth;
        let since = self.since_exact.fetch_add(growth, Ordering::Relaxed) + growth;
        if estimate <= limit && since < RECHECK_BYTES {
            return Ok(());
        }
        self.since_exact.store(0, Ordering::Relaxed);
        let memory = exact();
        self.estimate.store(memory + growth, Ordering::Relaxed);
        if memory + growth > limit {
            self.estimate.fetch_sub(growth, Ordering::Relaxed);
            return Err(Error::NoSpace {
                context: format!(
                    "the trie takes {memory} bytes of memory; this write adding {growth} bytes \
                     would pass its memory limit of {limit} bytes (deletes and writes that do \
                     not grow the data are still accepted); delete data or raise \
                     {MEMORY_LIMIT_OPTION}"
                ),
            });
        }
        Ok(())
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn the_exact_figure_decides_near_the_limit() {
        let gate = MemoryGate::new(Some(10 << 20));
        // The first write takes the exact figure.
        let err = gate.admit(100, || 10 << 20).unwrap_err();
        assert!(err.to_string().contains("--memory-limit-bytes"), "{err}");
        gate.admit(100, || 5 << 20).unwrap();
        // Small growth far below the limit: no exact figure needed.
        gate.admit(100, || unreachable!("estimate is enough")).unwrap();
        // Past the limit by the estimate: the exact figure says whether it really is.
        gate.admit(6 << 20, || 5 << 20).unwrap_err();
        gate.admit(4 << 20, || 5 << 20).unwrap();
        assert!(MemoryGate::new(None).admit(u64::MAX, || unreachable!()).is_ok());
    }
}
