//! Micro-logs (sections 5 and Appendix B): small cache-line-aligned records of two persistent
//! pointers in the region's root area, set at the start of a structural change and reset at
//! its end, so recovery can finish or undo it (Algorithms 4, 7, 11, 13).
//!
//! A log line holds pointer A at +0 and pointer B at +16 (16 bytes each, `PPtr` layout):
//! split log = (`PCurrentLeaf`, `PNewLeaf`), delete log = (`PCurrentLeaf`, `PPrevLeaf`),
//! get-leaf log = (`PNewGroup`, -), free-leaf log = (`PCurrentGroup`, `PPrevGroup`).
//! Recovery reads a log pointer by its offset word alone (0 = null): a reset torn between
//! the two words of a pointer leaves a file id without an offset, which is null.
//!
//! The split and delete logs form arrays indexed by a transient queue ([`LogQueue`], a mutex
//! and a condition variable: a thread waits when all logs of a kind are in use), rebuilt at
//! recovery (Algorithm 9 line 9).

use lamina_core::Result;
use lamina_storage::pmem::{PPtr, PmemRegion};
use parking_lot::{Condvar, Mutex};

use crate::layout::LINE_BYTES;

/// Offset of pointer A within a log line.
pub const LOG_A: u64 = 0;
/// Offset of pointer B within a log line.
pub const LOG_B: u64 = 16;

/// Reads a log pointer at `at`: its offset, or `None` when null.
pub fn log_pointer(region: &(impl PmemRegion + ?Sized), at: u64) -> Result<Option<u64>> {
    let offset = region.load_u64(at + 8)?;
    Ok((offset != 0).then_some(offset))
}

/// Stores a log pointer and persists it.
pub fn set_log_pointer(
    region: &(impl PmemRegion + ?Sized),
    at: u64,
    file_id: u64,
    offset: u64,
) -> Result<()> {
    PPtr::new(file_id, offset).write_to(region, at)?;
    region.persist(at, PPtr::ENCODED_BYTES)?;
    region.fence();
    Ok(())
}

/// Resets a whole log line (both pointers null) with one persist.
pub fn reset_log(region: &(impl PmemRegion + ?Sized), line: u64) -> Result<()> {
    region.write(line, &[0u8; 2 * PPtr::ENCODED_BYTES as usize])?;
    region.persist(line, LINE_BYTES)?;
    region.fence();
    Ok(())
}

/// A transient queue of free micro-logs of one kind (the paper's `SplitLogQueue` and
/// `DeleteLogQueue`).
#[derive(Debug)]
pub struct LogQueue {
    free: Mutex<Vec<u64>>,
    returned: Condvar,
}

impl LogQueue {
    /// A queue over `count` log lines from `first`.
    pub fn new(first: u64, count: usize) -> Self {
        let free = (0..count as u64).rev().map(|i| first + i * LINE_BYTES).collect();
        LogQueue { free: Mutex::new(free), returned: Condvar::new() }
    }

    /// Takes a free log line, waiting while all are in use.
    pub fn take(&self) -> LogGuard<'_> {
        let mut free = self.free.lock();
        loop {
            if let Some(line) = free.pop() {
                return LogGuard { queue: self, line };
            }
            self.returned.wait(&mut free);
        }
    }
}

/// A log line taken from a [`LogQueue`]; returned to it when dropped (after the operation
/// has reset the log).
#[derive(Debug)]
pub struct LogGuard<'a> {
    queue: &'a LogQueue,
    /// The log line's offset.
    pub line: u64,
}

impl Drop for LogGuard<'_> {
    fn drop(&mut self) {
        self.queue.free.lock().push(self.line);
        self.queue.returned.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use lamina_storage::pmem::{SimulatedOptions, SimulatedRegion};

    use super::*;

    #[test]
    fn a_queue_hands_out_each_log_once() {
        let queue = LogQueue::new(256, 2);
        let a = queue.take();
        let b = queue.take();
        assert_ne!(a.line, b.line);
        let a_line = a.line;
        drop(a);
        assert_eq!(queue.take().line, a_line);
    }

    #[test]
    fn a_log_pointer_is_null_by_its_offset_word() {
        let region = SimulatedRegion::new(1024, SimulatedOptions::default()).unwrap();
        assert_eq!(log_pointer(&region, 256).unwrap(), None);
        set_log_pointer(&region, 256, 7, 4096).unwrap();
        assert_eq!(log_pointer(&region, 256).unwrap(), Some(4096));
        region.store_u64(264, 0).unwrap(); // a torn reset: file id left, offset gone
        assert_eq!(log_pointer(&region, 256).unwrap(), None);
        set_log_pointer(&region, 272, 7, 8192).unwrap();
        reset_log(&region, 256).unwrap();
        assert_eq!(log_pointer(&region, 272).unwrap(), None);
    }
}
