//! The persistent leaf (Figure 2), accessed in place in the region.
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | validity bitmap: bit `i` (0..48) set when slot `i` holds a record (written p-atomically, persisted last); bits 48..62: the pending slots of the write in progress (blob records, [`Pending`]) |
//! | 8 | 8 | version lock (transient: never persisted on purpose, reset at recovery; odd = locked) |
//! | 16 | 48 | fingerprints, one byte per slot (section 4.2): with the bitmap, the first cache line |
//! | 64 | 16 | next leaf, a persistent pointer (null for the last leaf) |
//! | 80 | 8 | leaf magic `LEAF_MAGIC` |
//! | 88 | 40 | reserved, 0 |
//! | 128 | 48 x 16 | slots: persistent pointers to record blobs (`crate::blob`), null when the slot is free; with inline records, an 8-byte key and an 8-byte value (`crate::record`) |
//!
//! The paper's one-byte leaf lock becomes an 8-byte version lock (optimistic lock coupling
//! stands in for HTM, section 4.4): writers make it odd with a compare-and-swap and even again
//! (one higher) when done, and readers check that it is even and unchanged around a read.

use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::Result;
use lamina_storage::pmem::{PPtr, PmemRegion, WORD_BYTES};

/// The slots a write in progress may leave holding a blob while invalid (blob records only):
/// an insert's or update's new slot before the bitmap names it, an update's old slot and a
/// delete's slot after it does not and before the blob is freed. Recorded in the bitmap
/// word's bits 48..62, written and persisted before the write makes such a slot (with the
/// new slot's fingerprint, in the same line), and replaced by the commit's bitmap store.
/// Recovery frees a stray blob only in a pending slot: an invalid slot naming a blob
/// anywhere else is damage (a cleared valid bit), `Corruption`, not an interrupted write.
///
/// | bits | field |
/// | --- | --- |
/// | 48..54 | slot `a` |
/// | 54 | `a` present |
/// | 55..61 | slot `b` |
/// | 61 | `b` present |
/// | 62..64 | 0 |
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pending {
    /// A pending slot.
    pub a: Option<u8>,
    /// Another pending slot.
    pub b: Option<u8>,
}

impl Pending {
    /// No pending slot.
    pub const NONE: Pending = Pending { a: None, b: None };

    /// One pending slot.
    pub fn one(slot: usize) -> Self {
        Pending { a: Some(slot_u8(slot)), b: None }
    }

    /// Two pending slots (`b` optional).
    pub fn two(a: usize, b: Option<usize>) -> Self {
        Pending { a: Some(slot_u8(a)), b: b.map(slot_u8) }
    }

    /// Whether `slot` is pending.
    pub fn contains(self, slot: usize) -> bool {
        self.a.is_some_and(|a| usize::from(a) == slot)
            || self.b.is_some_and(|b| usize::from(b) == slot)
    }

    /// The bits of the bitmap word.
    pub fn encode(self) -> u64 {
        let field = |slot: Option<u8>| slot.map_or(0, |s| u64::from(s) | 1 << 6);
        field(self.a) << 48 | field(self.b) << 55
    }

    /// The pending slots of a bitmap word; `None` if its bits 48..64 are not a valid
    /// encoding (bits 62..64 set, or a slot past the leaf's).
    pub fn decode(word: u64) -> Option<Self> {
        if word >> 62 != 0 {
            return None;
        }
        let field = |bits: u64| -> Option<Option<u8>> {
            let slot = bits & 0x3f;
            match (bits >> 6 & 1 == 1, slot < LEAF_SLOTS as u64) {
                (false, _) if slot == 0 => Some(None),
                (true, true) => Some(Some(slot as u8)),
                _ => None,
            }
        };
        Some(Pending { a: field(word >> 48 & 0x7f)?, b: field(word >> 55 & 0x7f)? })
    }
}

fn slot_u8(slot: usize) -> u8 {
    assert!(slot < LEAF_SLOTS, "slot {slot} of a {LEAF_SLOTS}-slot leaf");
    slot as u8
}

/// Slots per leaf (the paper's `m`); every slot's fingerprint fits the first line.
pub const LEAF_SLOTS: usize = 48;
/// All slots valid.
pub const FULL_BITMAP: u64 = (1 << LEAF_SLOTS) - 1;
/// Offset of the validity bitmap.
pub const BITMAP_AT: u64 = 0;
/// Offset of the version lock.
pub const VERSION_AT: u64 = 8;
/// Offset of the fingerprints.
pub const FINGERPRINTS_AT: u64 = 16;
/// Offset of the next pointer.
pub const NEXT_AT: u64 = 64;
/// Offset of the magic word.
pub const MAGIC_AT: u64 = 80;
/// Offset of slot 0.
pub const SLOTS_AT: u64 = 128;
/// Bytes of one slot (a persistent pointer).
pub const SLOT_BYTES: u64 = PPtr::ENCODED_BYTES;
/// Bytes of a leaf (14 cache lines).
pub const LEAF_BYTES: u64 = SLOTS_AT + LEAF_SLOTS as u64 * SLOT_BYTES;
/// The leaf magic word (`"FPLEAF"`, format 1).
pub const LEAF_MAGIC: u64 = u64::from_le_bytes(*b"FPLEAF\0\x01");

const _: () = assert!(FINGERPRINTS_AT + LEAF_SLOTS as u64 <= 64, "fingerprints in line 0");
const _: () = assert!(LEAF_BYTES.is_multiple_of(64), "leaves are whole cache lines");

/// A leaf at byte `at` of `region` (a view; the leaf's storage is the region's).
#[derive(Debug)]
pub struct Leaf<'a, R: PmemRegion + ?Sized> {
    region: &'a R,
    /// The leaf's offset (its [`crate::inner::LeafId`]).
    pub at: u64,
}

impl<R: PmemRegion + ?Sized> Clone for Leaf<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R: PmemRegion + ?Sized> Copy for Leaf<'_, R> {}

impl<'a, R: PmemRegion + ?Sized> Leaf<'a, R> {
    /// The leaf at `at` (the caller has checked that a leaf fits there).
    pub fn new(region: &'a R, at: u64) -> Self {
        debug_assert!(at.is_multiple_of(64) && at + LEAF_BYTES <= region.len_bytes());
        Leaf { region, at }
    }

    fn word(&self, offset: u64) -> &AtomicU64 {
        &self.region.words()[((self.at + offset) / WORD_BYTES) as usize]
    }

    /// The validity bitmap (the valid bits of the bitmap word).
    pub fn bitmap(&self) -> u64 {
        self.bitmap_word() & FULL_BITMAP
    }

    /// The whole bitmap word: valid bits and pending slots.
    pub fn bitmap_word(&self) -> u64 {
        self.word(BITMAP_AT).load(Ordering::Acquire)
    }

    /// Stores the whole bitmap word without persisting it (the caller persists its line).
    pub fn set_bitmap_word_unpersisted(&self, word: u64) {
        self.word(BITMAP_AT).store(word, Ordering::Release);
    }

    /// Stores the valid bits `bitmap` and the pending slots `pending` p-atomically, and
    /// persists the word.
    pub fn set_bitmap_pending(&self, bitmap: u64, pending: Pending) -> Result<()> {
        debug_assert_eq!(bitmap & !FULL_BITMAP, 0);
        self.word(BITMAP_AT).store(bitmap | pending.encode(), Ordering::Release);
        self.region.persist(self.at + BITMAP_AT, WORD_BYTES)?;
        self.region.fence();
        Ok(())
    }

    /// Stores the bitmap p-atomically and persists it: the commit point of every leaf change.
    pub fn set_bitmap(&self, bitmap: u64) -> Result<()> {
        debug_assert_eq!(bitmap & !FULL_BITMAP, 0);
        self.word(BITMAP_AT).store(bitmap, Ordering::Release);
        self.region.persist(self.at + BITMAP_AT, WORD_BYTES)?;
        self.region.fence();
        Ok(())
    }

    /// The version lock's current value.
    pub fn version(&self) -> u64 {
        self.word(VERSION_AT).load(Ordering::Acquire)
    }

    /// The version word (the leaf lock, `crate::leaf_lock`).
    pub fn version_word(&self) -> &AtomicU64 {
        self.word(VERSION_AT)
    }

    /// Takes the leaf lock if it is free (even), returning whether it did.
    pub fn try_lock(&self) -> bool {
        crate::leaf_lock::try_lock(self.version_word())
    }

    /// Releases the leaf lock (the version becomes even and one higher).
    pub fn unlock(&self) {
        crate::leaf_lock::unlock(self.version_word());
    }

    /// Sets the version word (a new leaf starts locked with 1; recovery resets to 0).
    pub fn reset_version(&self, v: u64) {
        self.word(VERSION_AT).store(v, Ordering::Release);
    }

    /// Fingerprints of all slots.
    pub fn fingerprints(&self) -> [u8; LEAF_SLOTS] {
        let mut out = [0u8; LEAF_SLOTS];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let w = self.word(FINGERPRINTS_AT + i as u64 * 8).load(Ordering::Acquire);
            chunk.copy_from_slice(&w.to_le_bytes()[..chunk.len()]);
        }
        out
    }

    /// Writes the fingerprint of `slot` (not persisted).
    pub fn set_fingerprint(&self, slot: usize, fingerprint: u8) -> Result<()> {
        self.region.write(self.at + FINGERPRINTS_AT + slot as u64, &[fingerprint])
    }

    /// Region offset of `slot`'s persistent pointer.
    pub fn slot_at(&self, slot: usize) -> u64 {
        assert!(slot < LEAF_SLOTS);
        self.at + SLOTS_AT + slot as u64 * SLOT_BYTES
    }

    /// The persistent pointer in `slot`.
    pub fn slot(&self, slot: usize) -> PPtr {
        let at = self.slot_at(slot);
        PPtr {
            file_id: self.word(at - self.at).load(Ordering::Acquire),
            offset: self.word(at - self.at + 8).load(Ordering::Acquire),
        }
    }

    /// The two words of `slot`: an inline record's key and value (`FpTreeConfig::
    /// inline_records`), or a pointer's file id and offset.
    pub fn slot_words(&self, slot: usize) -> [u64; 2] {
        let at = self.slot_at(slot) - self.at;
        [self.word(at).load(Ordering::Acquire), self.word(at + 8).load(Ordering::Acquire)]
    }

    /// Stores the two words of `slot` (not persisted).
    pub fn set_slot_words(&self, slot: usize, words: [u64; 2]) {
        let at = self.slot_at(slot) - self.at;
        self.word(at).store(words[0], Ordering::Release);
        self.word(at + 8).store(words[1], Ordering::Release);
    }

    /// The next pointer.
    pub fn next(&self) -> PPtr {
        PPtr {
            file_id: self.word(NEXT_AT).load(Ordering::Acquire),
            offset: self.word(NEXT_AT + 8).load(Ordering::Acquire),
        }
    }

    /// Stores and persists the next pointer (two words: not p-atomic; the split and delete
    /// micro-logs redo this write after a crash).
    pub fn set_next(&self, next: PPtr) -> Result<()> {
        next.write_to(self.region, self.at + NEXT_AT)?;
        self.region.persist(self.at + NEXT_AT, PPtr::ENCODED_BYTES)?;
        self.region.fence();
        Ok(())
    }

    /// The magic word.
    pub fn magic(&self) -> u64 {
        self.word(MAGIC_AT).load(Ordering::Acquire)
    }

    /// Formats an empty leaf (bitmap 0, null next and slots, magic) and persists it.
    pub fn format(&self, version: u64) -> Result<()> {
        self.region.write(self.at, &[0u8; LEAF_BYTES as usize])?;
        self.word(MAGIC_AT).store(LEAF_MAGIC, Ordering::Release);
        self.reset_version(version);
        self.region.persist(self.at, LEAF_BYTES)?;
        self.region.fence();
        Ok(())
    }

    /// Copies this leaf's persistent content into `to` (Algorithm 3 line 6) and persists it;
    /// `to`'s version word is set to `to_version`, not copied.
    pub fn copy_to(&self, to: &Leaf<'_, R>, to_version: u64) -> Result<()> {
        for w in (0..LEAF_BYTES).step_by(WORD_BYTES as usize) {
            if w != VERSION_AT {
                to.word(w).store(self.word(w).load(Ordering::Acquire), Ordering::Release);
            }
        }
        to.reset_version(to_version);
        self.region.persist(to.at, LEAF_BYTES)?;
        self.region.fence();
        Ok(())
    }

    /// Resets the pointers of `slots` to null without freeing their blobs (after a split,
    /// the blobs belong to the other leaf), and persists them.
    pub fn clear_slot_pointers(&self, slots: u64) -> Result<()> {
        if slots == 0 {
            return Ok(());
        }
        for slot in bits(slots) {
            PPtr::NULL.write_to(self.region, self.slot_at(slot))?;
        }
        let first = self.slot_at(slots.trailing_zeros() as usize);
        let last = self.slot_at(63 - slots.leading_zeros() as usize) + SLOT_BYTES;
        self.region.persist(first, last - first)?;
        self.region.fence();
        Ok(())
    }
}

/// The set bits of `bitmap`, lowest first.
pub fn bits(mut bitmap: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (bitmap != 0).then(|| {
            let bit = bitmap.trailing_zeros() as usize;
            bitmap &= bitmap - 1;
            bit
        })
    })
}

/// The first free slot of a bitmap, if any.
pub fn first_free(bitmap: u64) -> Option<usize> {
    let free = !bitmap & FULL_BITMAP;
    (free != 0).then(|| free.trailing_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use lamina_storage::pmem::{SimulatedOptions, SimulatedRegion};

    use super::*;

    #[test]
    fn bitmap_helpers() {
        assert_eq!(bits(0b1010_0001).collect::<Vec<_>>(), vec![0, 5, 7]);
        assert_eq!(first_free(0b0111), Some(3));
        assert_eq!(first_free(FULL_BITMAP), None);
    }

    #[test]
    fn the_version_lock_is_odd_while_held() {
        let region = SimulatedRegion::new(4096, SimulatedOptions::default()).unwrap();
        let leaf = Leaf::new(&region, 1024);
        leaf.format(0).unwrap();
        assert!(leaf.try_lock());
        assert!(!leaf.try_lock(), "a held lock is not taken twice");
        assert_eq!(leaf.version(), 1);
        leaf.unlock();
        assert_eq!(leaf.version(), 2);
        assert_eq!(leaf.magic(), LEAF_MAGIC);
    }

    #[test]
    fn fingerprints_and_slots_are_where_the_layout_says() {
        let region = SimulatedRegion::new(4096, SimulatedOptions::default()).unwrap();
        let leaf = Leaf::new(&region, 1024);
        leaf.format(0).unwrap();
        leaf.set_fingerprint(47, 0xAB).unwrap();
        assert_eq!(leaf.fingerprints()[47], 0xAB);
        assert_eq!(region.load_u64(1024 + 56).unwrap() >> 56, 0xAB);
        PPtr::new(3, 4096).write_to(&region, leaf.slot_at(2)).unwrap();
        assert_eq!(leaf.slot(2), PPtr::new(3, 4096));
        leaf.clear_slot_pointers(0b100).unwrap();
        assert!(leaf.slot(2).is_null());
    }
}
