//! The record check of recovery (Algorithm 9 line 8's traversal, Algorithm 17's loop), run on
//! several threads: every valid slot of every leaf names an allocated record blob whose
//! checksum holds and whose fingerprint matches; a blob is named by one valid slot; a leaf
//! holds a key once. The keys' order across leaves is checked by the caller from each leaf's
//! smallest and largest key.
//!
//! Why threads and a chunk bitmap: open is the paper's recovery, whose point is to be much
//! faster than rebuilding the tree (section 6.1, Figure 7 right: 50x and more), and lamina
//! also reads and checks every record at open (a damaged region is `Corruption`, never wrong
//! data). A record costs one cache miss (its blob) plus a checksum; the list is followed on
//! one thread (a chain of dependent loads) while others check the leaves it has passed, in
//! batches, and it joins them when the list ends; the lines of the next leaves and of a leaf's blobs are
//! asked for (prefetched) before they are read, so their misses overlap; and "named by one
//! valid slot" is a bit per allocator chunk (a bit found set is a blob named twice), in
//! place of a hash set of offsets that cost as much as the reads.

use std::sync::mpsc::Receiver;

use lamina_core::{Error, Result};
use lamina_storage::pmem::{PPtr, PmemRegion};
use lamina_storage::prefetch::prefetch_read;
use parking_lot::Mutex;

use crate::fingerprint::fingerprint;
use crate::leaf::{FULL_BITMAP, LEAF_BYTES, LEAF_SLOTS, Leaf, Pending, bits};
use crate::store::Store;

/// Most threads recovery uses.
pub const RECOVERY_THREADS_MAX: usize = 8;
/// Leaves between the one checked and the one whose lines are asked for.
const LEAVES_PREFETCHED_AHEAD: usize = 2;
/// Fewest leaves worth a thread of their own (below, one thread checks them all).
pub const RECOVERY_LEAVES_PER_THREAD_MIN: usize = 1024;

/// One bit per allocator chunk.
pub(crate) struct ChunkMarks {
    words: Vec<u64>,
}

impl ChunkMarks {
    pub(crate) fn new(chunk_count: u64) -> Self {
        let words = usize::try_from(chunk_count.div_ceil(64)).expect("chunk bitmap fits memory");
        ChunkMarks { words: vec![0; words] }
    }

    /// Sets the bit of `chunk`; false if it was set already.
    pub(crate) fn mark(&mut self, chunk: u64) -> bool {
        let bit = 1u64 << (chunk % 64);
        let word = &mut self.words[(chunk / 64) as usize];
        let fresh = *word & bit == 0;
        *word |= bit;
        fresh
    }

    pub(crate) fn contains(&self, chunk: u64) -> bool {
        self.words[(chunk / 64) as usize] & (1u64 << (chunk % 64)) != 0
    }

    /// Adds `other`'s marks; a chunk marked in both is returned (and nothing is added).
    fn absorb(&mut self, other: &ChunkMarks) -> std::result::Result<(), u64> {
        assert_eq!(self.words.len(), other.words.len());
        for (i, (mine, theirs)) in self.words.iter_mut().zip(&other.words).enumerate() {
            let both = *mine & *theirs;
            if both != 0 {
                return Err(i as u64 * 64 + u64::from(both.trailing_zeros()));
            }
            *mine |= *theirs;
        }
        Ok(())
    }
}

/// Leaves handed to a checking thread at a time.
pub const CHECK_BATCH_LEAVES: usize = 256;

/// A batch of leaves to check: the position of its first leaf in the list, and the leaves.
type Batch = (usize, Vec<(u64, u64)>);

/// What a checking thread found.
struct Checker {
    /// The batches it checked: their first position and each leaf's result (a batch with an
    /// error stops there).
    batches: Vec<(usize, Vec<LeafRecordsChecked>)>,
    /// Its first error in list order, with the leaf's position.
    first_error: Option<(usize, Error)>,
    /// The blobs the valid slots it saw name.
    named: ChunkMarks,
}

/// The leaf list, followed and checked.
pub(crate) struct WalkedAndChecked {
    /// Each leaf's offset and bitmap, in list order.
    pub leaves: Vec<(u64, u64)>,
    /// What each leaf holds, in the same order.
    pub checked: Vec<LeafRecordsChecked>,
    /// The chunks of every blob a valid slot names.
    pub named: ChunkMarks,
}

/// What the check found in one leaf.
pub(crate) struct LeafRecordsChecked {
    pub min_key: Option<Vec<u8>>,
    pub max_key: Option<Vec<u8>>,
    pub records: usize,
    /// Invalid slots that still name a blob: (slot offset, pointer, whether the slot is one
    /// of the leaf's pending slots).
    pub strays: Vec<(u64, PPtr, bool)>,
}

/// A thread's reusable buffers.
#[derive(Default)]
struct Scratch {
    /// The blob being read.
    blob: Vec<u8>,
    /// The leaf's keys, back to back.
    keys: Vec<u8>,
    /// Each key's start and length in `keys`, and its fingerprint.
    spans: Vec<(u32, u32, u8)>,
}

impl<R: PmemRegion + ?Sized> Store<R> {
    /// Follows the leaf list with `walk` on this thread while other threads check the
    /// records of the leaves it has passed: `walk` calls `emit(offset, bitmap)` for each leaf
    /// in list order, and every [`CHECK_BATCH_LEAVES`] leaves go to the checking threads
    /// (started once [`RECOVERY_LEAVES_PER_THREAD_MIN`] leaves are known, up to
    /// [`RECOVERY_THREADS_MAX`] with this one); when the list ends this thread checks too.
    /// Returns the leaves, what each holds and the chunks of every blob a valid slot names.
    /// An error of `walk` comes first, then the first error of the check in list order.
    /// Each thread marks its own bitmap of named blobs (an atomic `or` per record serialized
    /// the blobs' cache misses), merged after.
    pub(crate) fn walk_and_check(
        &self,
        walk: impl FnOnce(&mut dyn FnMut(u64, u64)) -> Result<()>,
    ) -> Result<WalkedAndChecked> {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let helpers_max = cores.min(RECOVERY_THREADS_MAX) - 1;
        let (sender, receiver) = std::sync::mpsc::channel::<Batch>();
        let receiver = Mutex::new(receiver);
        let (walked, leaves, parts) = std::thread::scope(|scope| {
            let mut helpers = Vec::new();
            let mut leaves: Vec<(u64, u64)> = Vec::new();
            let mut batch_start = 0;
            let walked = walk(&mut |at, bitmap| {
                leaves.push((at, bitmap));
                if leaves.len() - batch_start < CHECK_BATCH_LEAVES {
                    return;
                }
                // A send fails only once every receiver is gone, which the scope rules out.
                let _ = sender.send((batch_start, leaves[batch_start..].to_vec()));
                batch_start = leaves.len();
                if helpers.len() < helpers_max
                    && leaves.len() >= RECOVERY_LEAVES_PER_THREAD_MIN * (helpers.len() + 1)
                {
                    let receiver = &receiver;
                    helpers.push(
                        std::thread::Builder::new()
                            .name("fptree-recovery".into())
                            .spawn_scoped(scope, move || self.check_batches(receiver)),
                    );
                }
            });
            if leaves.len() > batch_start {
                let _ = sender.send((batch_start, leaves[batch_start..].to_vec()));
            }
            drop(sender);
            let mut parts = vec![Ok(self.check_batches(&receiver))];
            for helper in helpers {
                parts.push(match helper {
                    Ok(h) => Ok(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
                    Err(e) => Err(Error::io("starting a recovery thread", e)),
                });
            }
            (walked, leaves, parts)
        });
        walked?;
        let mut batches = Vec::new();
        let mut first_error: Option<(usize, Error)> = None;
        let mut named: Option<ChunkMarks> = None;
        for part in parts {
            let part = part?;
            batches.extend(part.batches);
            if let Some((at, e)) = part.first_error
                && first_error.as_ref().is_none_or(|(first, _)| at < *first)
            {
                first_error = Some((at, e));
            }
            match &mut named {
                None => named = Some(part.named),
                Some(named) => named.absorb(&part.named).map_err(|chunk| {
                    let offset = self.alloc.header().layout.chunk_offset(chunk);
                    Error::corruption(self.path(), offset, "a blob is named by two valid slots")
                })?,
            }
        }
        if let Some((_, e)) = first_error {
            return Err(e);
        }
        batches.sort_unstable_by_key(|b| b.0);
        let mut checked = Vec::with_capacity(leaves.len());
        for (start, part) in batches {
            assert_eq!(start, checked.len(), "every batch was checked once");
            checked.extend(part);
        }
        assert_eq!(checked.len(), leaves.len(), "every leaf was checked");
        let named = named.expect("this thread checked");
        Ok(WalkedAndChecked { leaves, checked, named })
    }

    /// A checking thread: checks batches until the walk is over and none is left. A batch
    /// stops at its first error; the others are still checked (so the first error in list
    /// order is among those found).
    fn check_batches(&self, receiver: &Mutex<Receiver<Batch>>) -> Checker {
        let mut scratch = Scratch::default();
        let mut out = Checker {
            batches: Vec::new(),
            first_error: None,
            named: ChunkMarks::new(self.alloc.header().layout.chunk_count),
        };
        loop {
            // The lock is held only to take a batch.
            let Ok((start, leaves)) = receiver.lock().recv() else {
                return out;
            };
            let mut checked = Vec::with_capacity(leaves.len());
            for (i, &(at, bitmap)) in leaves.iter().enumerate() {
                if let Some(&(ahead, _)) = leaves.get(i + LEAVES_PREFETCHED_AHEAD) {
                    self.prefetch_leaf(ahead);
                }
                match self.check_leaf(at, bitmap, &mut out.named, &mut scratch) {
                    Ok(leaf) => checked.push(leaf),
                    Err(e) => {
                        if out.first_error.as_ref().is_none_or(|(first, _)| start + i < *first) {
                            out.first_error = Some((start + i, e));
                        }
                        break;
                    }
                }
            }
            out.batches.push((start, checked));
        }
    }

    /// Asks for the lines of the leaf at `at` that the check reads (bitmap, fingerprints,
    /// slots), so that its misses overlap the work on the leaves before it.
    fn prefetch_leaf(&self, at: u64) {
        let words = self.region().words();
        for line_at in (at..at + LEAF_BYTES).step_by(64) {
            if let Some(word) = words.get((line_at / 8) as usize) {
                prefetch_read(std::ptr::from_ref(word).cast());
            }
        }
    }

    /// Checks the leaf at `at` whose bitmap word (valid bits and pending slots, checked by
    /// the walk) is `word`.
    fn check_leaf(
        &self,
        at: u64,
        word: u64,
        named: &mut ChunkMarks,
        scratch: &mut Scratch,
    ) -> Result<LeafRecordsChecked> {
        let bitmap = word & FULL_BITMAP;
        let pending = Pending::decode(word).unwrap_or_default();
        // The path only on an error: building it is an allocation per leaf.
        let corrupt = |at: u64, why: String| Error::corruption(self.path(), at, why);
        let leaf = self.leaf(at);
        let fingerprints = leaf.fingerprints();
        scratch.keys.clear();
        scratch.spans.clear();
        let mut strays = Vec::new();
        reset_held_lock(leaf);
        if self.config.inline_records {
            return check_inline_keys(leaf, bitmap, &fingerprints)
                .map_err(|(at, why)| corrupt(at, why));
        }
        self.collect_blob_keys(leaf, bitmap, pending, &fingerprints, named, scratch, &mut strays)?;
        let Scratch { keys, spans, .. } = scratch;
        let key_of =
            |&(start, len, _): &(u32, u32, u8)| &keys[start as usize..(start + len) as usize];
        // A key twice: only keys with equal fingerprints can be equal (section 4.2), so the
        // pairs compared are few (48 keys over 256 fingerprints); no sort.
        let mut fingerprints_seen = [0u64; 4];
        for (i, a) in spans.iter().enumerate() {
            let (word, bit) = (usize::from(a.2 / 64), 1u64 << (a.2 % 64));
            if fingerprints_seen[word] & bit != 0
                && spans[..i].iter().any(|b| b.2 == a.2 && key_of(b) == key_of(a))
            {
                return Err(corrupt(at, "a key appears twice in a leaf".into()));
            }
            fingerprints_seen[word] |= bit;
        }
        let min = spans.iter().min_by(|a, b| key_of(a).cmp(key_of(b)));
        let max = spans.iter().max_by(|a, b| key_of(a).cmp(key_of(b)));
        debug_assert_eq!(spans.len(), bits(bitmap).count());
        Ok(LeafRecordsChecked {
            min_key: min.map(|s| key_of(s).to_vec()),
            max_key: max.map(|s| key_of(s).to_vec()),
            records: spans.len(),
            strays,
        })
    }

    /// The keys of `leaf`'s valid slots, each from its blob (checked, and marked in
    /// `named`), into `scratch`; the invalid slots that still name a blob into `strays`.
    #[allow(clippy::too_many_arguments, reason = "the parts of one leaf's check")]
    fn collect_blob_keys(
        &self,
        leaf: Leaf<'_, R>,
        bitmap: u64,
        pending: Pending,
        fingerprints: &[u8; LEAF_SLOTS],
        named: &mut ChunkMarks,
        scratch: &mut Scratch,
        strays: &mut Vec<(u64, PPtr, bool)>,
    ) -> Result<()> {
        // The path only on an error: building it is an allocation per leaf.
        let corrupt = |at: u64, why: String| Error::corruption(self.path(), at, why);
        let layout = self.alloc.header().layout;
        let mut valid = [(0usize, PPtr::NULL); LEAF_SLOTS];
        let mut valid_count = 0;
        for slot in 0..LEAF_SLOTS {
            let p = leaf.slot(slot);
            if bitmap & (1 << slot) == 0 {
                if !p.is_null() {
                    strays.push((leaf.slot_at(slot), p, pending.contains(slot)));
                }
                continue;
            }
            // The blobs' cache misses overlap: each is asked for before any is read.
            if let Some(word) = self.region().words().get((p.offset / 8) as usize) {
                prefetch_read(std::ptr::from_ref(word).cast());
            }
            valid[valid_count] = (slot, p);
            valid_count += 1;
        }
        let Scratch { blob, keys, spans } = scratch;
        for &(slot, p) in &valid[..valid_count] {
            if p.is_null() {
                return Err(corrupt(leaf.slot_at(slot), "a valid slot is null".into()));
            }
            let (key, _) = self.read_blob(p, blob)?;
            if fingerprints[slot] != fingerprint(key) {
                return Err(corrupt(leaf.at, format!("slot {slot}: fingerprint mismatch")));
            }
            let chunk = layout.chunk_at(p.offset).expect("block_of checked the pointer");
            if !named.mark(chunk) {
                return Err(corrupt(p.offset, "a blob is named by two valid slots".into()));
            }
            let start = u32::try_from(keys.len()).expect("48 keys of 1 KiB");
            keys.extend_from_slice(key);
            spans.push((start, key.len() as u32, fingerprints[slot]));
        }
        Ok(())
    }
}

/// Algorithm 9: leaf locks are reset. Only a held lock (an odd version) is: any even version
/// is a free lock, and a store to every leaf would take a write fault on each leaf's page of
/// a mapped file, waiting for any writeback of the page, and make the kernel write the pages
/// again.
fn reset_held_lock<R: PmemRegion + ?Sized>(leaf: Leaf<'_, R>) {
    let version = leaf.version();
    if !version.is_multiple_of(2) {
        leaf.reset_version(version.wrapping_add(1));
    }
}

/// The check of a leaf of inline records, whose keys are in its slots: fingerprints, a key
/// once, and the smallest and largest key. Keys are compared as big-endian words (the
/// bytes' order) with no copy: this is all the work recovery does per leaf of inline records.
fn check_inline_keys<R: PmemRegion + ?Sized>(
    leaf: Leaf<'_, R>,
    bitmap: u64,
    fingerprints: &[u8; LEAF_SLOTS],
) -> std::result::Result<LeafRecordsChecked, (u64, String)> {
    let mut ordered = [0u64; LEAF_SLOTS];
    let mut count = 0;
    let (mut min, mut max) = (u64::MAX, 0u64);
    let mut fingerprints_seen = [0u64; 4];
    for slot in bits(bitmap) {
        let key = leaf.slot_words(slot)[0].to_le_bytes();
        let fp = fingerprints[slot];
        if fp != fingerprint(&key) {
            return Err((leaf.at, format!("slot {slot}: fingerprint mismatch")));
        }
        let word = u64::from_be_bytes(key);
        let (seen_at, bit) = (usize::from(fp / 64), 1u64 << (fp % 64));
        if fingerprints_seen[seen_at] & bit != 0 && ordered[..count].contains(&word) {
            return Err((leaf.at, "a key appears twice in a leaf".into()));
        }
        fingerprints_seen[seen_at] |= bit;
        ordered[count] = word;
        count += 1;
        min = min.min(word);
        max = max.max(word);
    }
    let key = |word: u64| (count > 0).then(|| word.to_be_bytes().to_vec());
    Ok(LeafRecordsChecked {
        min_key: key(min),
        max_key: key(max),
        records: count,
        strays: Vec::new(),
    })
}
