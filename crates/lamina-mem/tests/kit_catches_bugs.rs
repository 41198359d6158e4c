//! The conformance kit must fail on broken engines: each test wraps the `mem` engine with
//! one deliberate bug and expects the matching kit case to panic. A kit case that passed
//! here would be a test that cannot fail.

use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::testkit::{self as kit, Subject};
use lamina_core::{BatchOp, CasOutcome, Entry, KeyRange, OrderedIndex, Result, Stats, WriteBatch};
use lamina_mem::MemEngine;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bug {
    DeleteAlwaysTrue,
    ScanIgnoresLimit,
    ScanDropsLastKey,
    CasIsNotAtomic,
    BatchAppliesHalf,
    BatchNotAtomic,
    PutIgnoresLongValues,
    LosesEveryTwentiethPut,
    /// `scan_rev` skips the greatest key of the range.
    ScanRevSkipsGreatest,
    /// `scan` treats an exclusive end as inclusive.
    ScanEndAlwaysInclusive,
    /// No bug: the engine without its native `scan_rev` (the trait's default).
    DefaultReverse,
}

#[derive(Debug)]
struct Buggy {
    inner: MemEngine,
    bug: Bug,
    puts: AtomicU64,
}

impl OrderedIndex for Buggy {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.bug == Bug::PutIgnoresLongValues && value.len() > 4096 {
            return Ok(());
        }
        if self.bug == Bug::LosesEveryTwentiethPut
            && self.puts.fetch_add(1, Ordering::Relaxed) % 20 == 19
        {
            return Ok(());
        }
        self.inner.put(key, value)
    }
    fn delete(&self, key: &[u8]) -> Result<bool> {
        let existed = self.inner.delete(key)?;
        Ok(existed || self.bug == Bug::DeleteAlwaysTrue)
    }
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        if self.bug != Bug::CasIsNotAtomic {
            return self.inner.compare_and_swap(key, expected, new);
        }
        let current = self.inner.get(key)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Mismatch { current });
        }
        std::thread::yield_now();
        match new {
            Some(v) => self.inner.put(key, v)?,
            None => drop(self.inner.delete(key)?),
        }
        Ok(CasOutcome::Swapped)
    }
    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        match self.bug {
            Bug::ScanIgnoresLimit => self.inner.scan(range, lamina_core::limits::SCAN_LIMIT_MAX),
            Bug::ScanDropsLastKey => {
                let mut out = self.inner.scan(range, limit)?;
                if out.len() > 1 && out.len() < limit {
                    out.pop();
                }
                Ok(out)
            }
            Bug::ScanEndAlwaysInclusive => {
                let mut range = range.clone();
                if let std::ops::Bound::Excluded(end) = range.end {
                    range.end = std::ops::Bound::Included(end);
                }
                self.inner.scan(&range, limit)
            }
            _ => self.inner.scan(range, limit),
        }
    }
    fn scan_rev(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        match self.bug {
            Bug::ScanRevSkipsGreatest => {
                let mut out = self.inner.scan_rev(range, limit.saturating_add(1))?;
                if !out.is_empty() {
                    out.remove(0);
                }
                out.truncate(limit);
                Ok(out)
            }
            Bug::DefaultReverse => {
                lamina_core::reverse::scan_rev_by_forward_scans(self, range, limit)
            }
            _ => self.inner.scan_rev(range, limit),
        }
    }
    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        match self.bug {
            Bug::BatchAppliesHalf => {
                for op in batch.ops() {
                    match op {
                        BatchOp::Put { key, value } => self.inner.put(key, value)?,
                        BatchOp::Delete { key } => drop(self.inner.delete(key)?),
                    }
                }
                Ok(())
            }
            Bug::BatchNotAtomic => {
                for op in batch.ops() {
                    if let BatchOp::Put { key, value } = op {
                        self.inner.put(key, value)?;
                        std::thread::yield_now();
                    }
                }
                Ok(())
            }
            _ => self.inner.write_batch(batch),
        }
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

struct BuggySubject(Bug);

impl Subject for BuggySubject {
    type Index = Buggy;
    fn open(&mut self) -> Result<Buggy> {
        Ok(Buggy { inner: MemEngine::volatile(), bug: self.0, puts: AtomicU64::new(0) })
    }
    fn durable(&self) -> bool {
        false
    }
}

fn with(bug: Bug) -> impl Fn() -> BuggySubject {
    move || BuggySubject(bug)
}

#[test]
#[should_panic(expected = "second delete")]
fn catches_delete_reporting_missing_keys() {
    kit::basic_put_get_overwrite_delete(&with(Bug::DeleteAlwaysTrue));
}

#[test]
#[should_panic(expected = "limit")]
fn catches_scan_ignoring_its_limit() {
    kit::scan_bounds_and_limits(&with(Bug::ScanIgnoresLimit));
}

#[test]
#[should_panic(expected = "model-based test failed")]
fn model_catches_scan_dropping_keys() {
    kit::model_random_sequences(&with(Bug::ScanDropsLastKey));
}

#[test]
#[should_panic(expected = "lost or duplicated CAS increments")]
fn catches_non_atomic_cas() {
    // Four threads racing read-then-write CAS lose increments with overwhelming probability;
    // retry a few times so a lucky interleaving cannot make this test flaky.
    for _ in 0..20 {
        kit::cas_concurrent_increment(&with(Bug::CasIsNotAtomic));
    }
}

#[test]
#[should_panic(expected = "unchanged")]
fn catches_batches_applied_halfway() {
    kit::batch_is_all_or_nothing_on_bad_input(&with(Bug::BatchAppliesHalf));
}

#[test]
#[should_panic(expected = "half a batch")]
fn catches_batches_visible_halfway() {
    for _ in 0..20 {
        kit::batch_is_atomic_to_readers(&with(Bug::BatchNotAtomic));
    }
}

#[test]
#[should_panic(expected = "model-based test failed")]
fn model_catches_lost_writes() {
    kit::model_random_sequences(&with(Bug::LosesEveryTwentiethPut));
}

#[test]
#[should_panic(expected = "range")]
fn catches_reverse_scans_skipping_the_greatest_key() {
    kit::scan_rev_bounds_and_limits(&with(Bug::ScanRevSkipsGreatest));
}

#[test]
#[should_panic(expected = "model-based test failed")]
fn model_catches_reverse_scans_skipping_the_greatest_key() {
    kit::model_random_sequences(&with(Bug::ScanRevSkipsGreatest));
}

#[test]
#[should_panic(expected = "prefix")]
fn catches_prefix_scans_past_the_prefix() {
    kit::prefix_scans_forward_and_reverse(&with(Bug::ScanEndAlwaysInclusive));
}

/// The trait's default `scan_rev` (built from forward scans), used by every engine without a
/// native one, passes the reverse and prefix cases and the model.
#[test]
fn the_default_reverse_scan_passes_the_kit() {
    let make = with(Bug::DefaultReverse);
    kit::scan_rev_bounds_and_limits(&make);
    kit::prefix_scans_forward_and_reverse(&make);
    kit::model_random_sequences(&make);
    kit::basic_put_get_overwrite_delete(&make);
}

#[test]
fn refused_input_case_passes_on_the_real_engine_only() {
    // PutIgnoresLongValues returns Ok for an oversized value: the kit must call that a bug.
    let caught = std::panic::catch_unwind(|| {
        kit::refused_input_changes_nothing(&with(Bug::PutIgnoresLongValues));
    });
    assert!(caught.is_err());
}
