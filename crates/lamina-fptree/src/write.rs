//! The write operations: insert (Algorithms 2 and 14) and update (Algorithms 8 and 16) behind
//! one `put`, and delete (Algorithms 5 and 15).
//!
//! Concurrency (section 4.4 with optimistic lock coupling for HTM): the traversal of the inner
//! nodes is `InnerIndex::locate`; its `visit` takes the leaf's version lock (and, for a delete
//! that empties its leaf, the previous leaf's), the paper's `Leaf.lock = 1` inside the
//! transaction, and asks for a restart when a lock is busy (the paper's abort). The persistent
//! changes run after `locate` returns, outside the optimistic section, and the inner nodes are
//! updated afterwards (the paper's second transaction) while the leaf locks are still held.

use lamina_core::Result;
use lamina_core::limits::{check_key, check_value};
use lamina_storage::pmem::PmemRegion;

use crate::fingerprint::fingerprint;
use crate::inner::{InnerIndex, Visit};
use crate::leaf::{FULL_BITMAP, Leaf, Pending, first_free};
use crate::store::{Store, bump};
use crate::tree::FpTree;

/// Leaves a delete holds locked.
#[derive(Debug, Clone, Copy)]
struct Locked {
    leaf: u64,
    /// The previous leaf, locked when the delete will remove `leaf`.
    prev: Option<u64>,
}

impl<R: PmemRegion + ?Sized, I: InnerIndex> FpTree<R, I> {
    /// Inserts `key` or replaces its value. Durable when it returns.
    ///
    /// Insert (Algorithms 2, 14): a free slot gets a newly allocated blob with the record, its
    /// fingerprint, then the bitmap bit (p-atomic, persisted last). Update (Algorithms 8, 16):
    /// the same in a free slot, and one bitmap write clears the old slot's bit and sets the
    /// new one; the old blob is freed afterwards. A full leaf is split first (Algorithm 3).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.store.check_record_size(key, value)?;
        let leaf_at = self.lock_leaf(key);
        let store = &self.store;
        let leaf = store.leaf(leaf_at);
        let mut split = None;
        let result = (|| {
            let mut target = leaf;
            if leaf.bitmap() == FULL_BITMAP {
                let (split_key, new_at) = store.split_leaf(leaf)?; // Algorithm 2 line 11
                if key >= split_key.as_slice() {
                    target = store.leaf(new_at);
                }
                split = Some((split_key, new_at));
            }
            put_in_leaf(store, target, key, value)
        })();
        if let Some((split_key, new_at)) = split {
            self.inner.insert_separator(&split_key, new_at); // Algorithm 2 lines 16-19
            store.leaf(new_at).unlock();
        }
        leaf.unlock(); // Algorithm 2 line 20
        result
    }

    /// Deletes `key`; returns whether it was there. Durable when it returns.
    ///
    /// Algorithms 5 and 15: the bit is cleared (p-atomic, persisted), then the blob freed;
    /// when that empties a leaf other than the first, the leaf leaves the inner nodes and is
    /// unlinked and freed (Algorithm 6) while it and the previous leaf are locked.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        let store = &self.store;
        let fp = fingerprint(key);
        let (locked, found) = self.inner.locate(
            key,
            |leaf_at, prev| {
                let leaf = store.leaf(leaf_at);
                if !leaf.try_lock() {
                    return Visit::Restart; // Algorithm 5 lines 6-7
                }
                let found = store.find_slot(leaf, key, fp);
                let empties = matches!(found, Ok((Some(_), _))) && leaf.bitmap().is_power_of_two();
                let prev = match prev {
                    Some(prev) if empties => {
                        if !store.leaf(prev).try_lock() {
                            leaf.unlock();
                            return Visit::Restart; // lines 9-10
                        }
                        Some(prev) // line 11
                    }
                    _ => None,
                };
                Visit::Done((Locked { leaf: leaf_at, prev }, found))
            },
            |(locked, _)| unlock(store, locked),
        );
        let leaf = store.leaf(locked.leaf);
        let slot = match found {
            Ok((Some(slot), probes)) => {
                bump(&store.counters.searches_found, 1);
                bump(&store.counters.key_probes_found, probes);
                slot
            }
            Ok((None, _)) => {
                unlock(store, locked);
                return Ok(false);
            }
            Err(e) => {
                unlock(store, locked);
                return Err(e);
            }
        };
        let result = (|| {
            // Algorithm 15 line 17; the slot stays pending until its blob is freed.
            let pending = if store.pending_slots { Pending::one(slot) } else { Pending::NONE };
            leaf.set_bitmap_pending(leaf.bitmap() & !(1 << slot), pending)?;
            store.release_record(leaf, slot) // line 18
        })();
        if let Err(e) = result {
            unlock(store, locked);
            return Err(e);
        }
        let Some(prev) = locked.prev else {
            leaf.unlock(); // line 23
            return Ok(true);
        };
        // Lines 19-21: the inner nodes first (no new reader reaches the leaf), then the
        // persistent unlink, `prev` unlocked, and the leaf freed once no optimistic reader
        // can hold it (`Store::delete_leaf`). The removed leaf stays locked until it is freed.
        self.inner.remove_leaf(key, locked.leaf);
        store.delete_leaf(leaf, store.leaf(prev), false, || store.leaf(prev).unlock())?;
        Ok(true)
    }

    /// The traversal of Algorithm 2 lines 2-9: locates the leaf for `key` and locks it.
    fn lock_leaf(&self, key: &[u8]) -> u64 {
        let store = &self.store;
        self.inner.locate(
            key,
            |leaf_at, _| {
                if store.leaf(leaf_at).try_lock() { Visit::Done(leaf_at) } else { Visit::Restart }
            },
            |leaf_at| store.leaf(leaf_at).unlock(),
        )
    }
}

fn unlock<R: PmemRegion + ?Sized>(store: &Store<R>, locked: Locked) {
    store.leaf(locked.leaf).unlock();
    if let Some(prev) = locked.prev {
        store.leaf(prev).unlock();
    }
}

/// Writes `key` = `value` into the locked leaf `leaf`, which has a free slot: Algorithm 14
/// lines 12-18 for a new key, Algorithm 16 lines 8-16 for an existing one.
fn put_in_leaf<R: PmemRegion + ?Sized>(
    store: &Store<R>,
    leaf: Leaf<'_, R>,
    key: &[u8],
    value: &[u8],
) -> Result<()> {
    let fp = fingerprint(key);
    let (old, probes) = store.find_slot(leaf, key, fp)?;
    if old.is_some() {
        bump(&store.counters.searches_found, 1);
        bump(&store.counters.key_probes_found, probes);
    }
    let bitmap = leaf.bitmap();
    let slot = first_free(bitmap).expect("a leaf with a free slot");
    let region = store.region();
    if store.pending_slots {
        // The fingerprint (line 16) goes first, with the slots this write may leave holding
        // a blob while invalid (the new one, and an update's old one) in the bitmap word of
        // the same line: one persist, before the allocation makes a stray possible.
        leaf.set_fingerprint(slot, fp)?;
        leaf.set_bitmap_word_unpersisted(bitmap | Pending::two(slot, old).encode());
        region.persist(leaf.at, crate::layout::LINE_BYTES)?; // line 17
        region.fence();
        store.write_record(leaf, slot, key, value)?; // lines 13-15
    } else {
        store.write_record(leaf, slot, key, value)?; // lines 13-15
        leaf.set_fingerprint(slot, fp)?; // line 16
        region.persist(leaf.at + crate::leaf::FINGERPRINTS_AT + slot as u64, 1)?; // line 17
        region.fence();
    }
    let mut new_bitmap = bitmap | 1 << slot;
    if let Some(old) = old {
        new_bitmap &= !(1 << old); // Algorithm 8 lines 17-18: both bits in one write
    }
    // Line 18, the commit. An update's old slot stays pending until its blob is freed.
    let pending = match old {
        Some(old) if store.pending_slots => Pending::one(old),
        _ => Pending::NONE,
    };
    leaf.set_bitmap_pending(new_bitmap, pending)?;
    if let Some(old) = old {
        // Algorithm 16 line 16 resets the old slot's pointer; here a blob holds key and value,
        // so the old blob is freed, which resets the pointer (nothing for an inline record).
        store.release_record(leaf, old)?;
    }
    Ok(())
}
