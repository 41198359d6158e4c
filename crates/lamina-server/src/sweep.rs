//! The background sweep: walks the key space in pages and removes items that expired or
//! were flushed, so their space is reclaimed even if no client touches them again. Reads
//! never depend on it (dead items are invisible at once); it only bounds dead data.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lamina_core::KeyRange;

use crate::item::ItemRef;
use crate::protocol::KEY_BYTES_MAX;
use crate::shared::{Shared, bump, unix_now_secs};

/// Records read per page of the sweep.
pub const SWEEP_PAGE_RECORDS: usize = 256;
/// Pause between pages, so a sweep of a large database yields the engine to clients.
pub const SWEEP_PAGE_PAUSE: Duration = Duration::from_millis(1);

/// The sweep thread.
#[derive(Debug)]
pub struct Sweeper {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Sweeper {
    /// Starts sweeping every `shared.config.sweep_interval` (not at all if it is zero).
    pub fn start(shared: Arc<Shared>) -> std::io::Result<Option<Sweeper>> {
        let interval = shared.config.sweep_interval;
        if interval.is_zero() {
            return Ok(None);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop_seen = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("lamina-serve-sweep".to_string()).spawn(
            move || {
                let mut next = Instant::now() + interval;
                while !stop_seen.load(Ordering::Acquire) {
                    if Instant::now() < next {
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                    if let Err(e) = sweep_once(&shared, &stop_seen) {
                        crate::exec::log_error_class(&e);
                    }
                    next = Instant::now() + interval;
                }
            },
        )?;
        Ok(Some(Sweeper { stop, thread }))
    }

    /// Stops the sweep (mid-pass if need be) and waits for the thread.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.thread.join();
    }
}

/// One pass over every item; returns how many dead items it removed.
pub fn sweep_once(shared: &Shared, stop: &AtomicBool) -> lamina::Result<u64> {
    let mut range = KeyRange::all();
    let mut removed = 0;
    while !stop.load(Ordering::Acquire) {
        let page = shared.db.scan(&range, SWEEP_PAGE_RECORDS)?;
        let now_secs = unix_now_secs();
        for (key, record) in &page {
            if key.len() > KEY_BYTES_MAX {
                continue; // the server's own records
            }
            let Ok(item) = ItemRef::parse(record) else { continue };
            let dead = item.header.is_expired(now_secs)
                || shared.clock.is_flushed(item.header.flush_epoch);
            // Removed only if unchanged since read: a client may have just rewritten it.
            if dead && shared.db.compare_and_swap(key, Some(record), None)?.is_swapped() {
                bump(&shared.counters.reclaimed);
                removed += 1;
            }
        }
        match page.last() {
            Some((last, _)) if page.len() == SWEEP_PAGE_RECORDS => {
                range = range.resume_after(last);
            }
            _ => break,
        }
        std::thread::sleep(SWEEP_PAGE_PAUSE);
    }
    bump(&shared.counters.sweeps);
    tracing::debug!(removed, "sweep pass done");
    Ok(removed)
}
