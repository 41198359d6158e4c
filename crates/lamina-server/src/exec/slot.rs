//! Single-key read-modify-write of items: read the record, decide, and write it back with
//! the engine's `compare_and_swap`, retrying when another connection changed it between.
//! Every command is one such step, so each is atomic without server-side locks.

use lamina_core::{CasOutcome, Error, Result};

use super::Exec;
use crate::item::ItemRef;
use crate::shared::bump;

/// The most retries of one read-modify-write under contention before the request fails
/// with `SERVER_ERROR` (each retry means another writer succeeded, so the system as a
/// whole progresses; the bound keeps one request from spinning forever).
pub(crate) const CAS_RETRIES_MAX: usize = 10_000;

/// What a read-modify-write decides.
#[derive(Debug)]
pub(crate) enum Change {
    /// Leave the record as it is.
    Keep,
    /// Replace it with this encoded item.
    Write(Vec<u8>),
    /// Remove it.
    Delete,
}

impl Exec<'_> {
    /// Decodes a record and tells whether the item is live now (not expired, not flushed).
    pub(crate) fn live<'r>(&self, key: &[u8], record: &'r [u8]) -> Result<Option<ItemRef<'r>>> {
        let item = ItemRef::parse(record).map_err(|e| {
            Error::corruption(
                self.shared.db.dir(),
                0,
                format!(
                    "the record of key {:?} is not a lamina serve item ({e}); was it written \
                     by another client of the database?",
                    String::from_utf8_lossy(key)
                ),
            )
        })?;
        if item.header.is_expired(self.now_secs) {
            bump(&self.shared.counters.get_expired);
            return Ok(None);
        }
        if self.shared.clock.is_flushed(item.header.flush_epoch) {
            bump(&self.shared.counters.get_flushed);
            return Ok(None);
        }
        Ok(Some(item))
    }

    /// Reads `key` and hands `read` the live item (or `None`) with its record's bytes.
    /// A dead record found on the way is removed (lazy expiry).
    pub(crate) fn read<T>(
        &self,
        key: &[u8],
        read: impl FnOnce(Option<ItemRef<'_>>) -> T,
    ) -> Result<T> {
        let record = self.shared.db.get(key)?;
        let Some(record) = record else { return Ok(read(None)) };
        match self.live(key, &record)? {
            Some(item) => Ok(read(Some(item))),
            None => {
                self.reclaim(key, &record)?;
                Ok(read(None))
            }
        }
    }

    /// Removes a dead record unless it changed meanwhile.
    pub(crate) fn reclaim(&self, key: &[u8], record: &[u8]) -> Result<()> {
        if self.shared.db.compare_and_swap(key, Some(record), None)?.is_swapped() {
            bump(&self.shared.counters.reclaimed);
        }
        Ok(())
    }

    /// Read-modify-write of `key`: `decide` sees the live item (or `None`: missing, expired
    /// or flushed) and returns the change and the result; the change is applied only if the
    /// record is still the one `decide` saw, else `decide` runs again on the new one.
    pub(crate) fn update<T>(
        &self,
        key: &[u8],
        mut decide: impl FnMut(Option<ItemRef<'_>>) -> Result<(Change, T)>,
    ) -> Result<(bool, T)> {
        let mut record = self.shared.db.get(key)?;
        for _ in 0..CAS_RETRIES_MAX {
            let live = match &record {
                Some(record) => self.live(key, record)?,
                None => None,
            };
            let dead_record = record.is_some() && live.is_none();
            let (change, result) = decide(live)?;
            let new = match change {
                Change::Keep => {
                    if dead_record {
                        self.reclaim(key, record.as_deref().unwrap())?;
                    }
                    return Ok((false, result));
                }
                Change::Write(bytes) => Some(bytes),
                Change::Delete => None,
            };
            if new.is_none() && record.is_none() {
                return Ok((false, result));
            }
            match self.shared.db.compare_and_swap(key, record.as_deref(), new.as_deref())? {
                CasOutcome::Swapped => {
                    if dead_record {
                        bump(&self.shared.counters.reclaimed);
                    }
                    return Ok((true, result));
                }
                // Another writer got there first: decide again on what it wrote.
                CasOutcome::Mismatch { current } => record = current,
            }
        }
        Err(Error::Io {
            context: format!("updating an item: {CAS_RETRIES_MAX} conflicting writes in a row"),
            source: std::io::Error::new(std::io::ErrorKind::WouldBlock, "contention"),
        })
    }
}
