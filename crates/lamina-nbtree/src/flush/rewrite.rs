//! One unit of flush work: merge a newer stream (a slice of the parent's d-tree) into an
//! older one (a child's live part), or rewrite live parts alone, into one or two new
//! d-trees written sequentially (section 4.1, "Flush(N)" and "SNodeSplit(N)").
//!
//! Resumable: [`Rewrite::step`] writes at most about `pages_max` pages and returns, so the
//! deamortized job (section 5.1) spreads a rewrite over many inserts. A step may overshoot
//! by what one push writes at once (a leaf, or an entry larger than a page, plus the
//! internal nodes that fill with it).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::Result;
use lamina_storage::Storage;

use super::source::Source;
use crate::dtree::{DTree, DTreeParams, DTreeWriter};
use crate::entry::entry_bytes;

/// Where the output is cut in two (SNodeSplit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Split {
    /// One output.
    None,
    /// Two outputs: keys below the s-key, and the rest (an internal s-node's split at its
    /// median s-key).
    AtKey(Vec<u8>),
    /// Two outputs of about half the bytes each, cut between two entries (a leaf's split at
    /// its median d-key).
    AtHalf {
        /// Bytes of all the input.
        total_bytes: u64,
    },
}

/// What a rewrite needs to create d-trees.
#[derive(Debug, Clone)]
pub struct WriterContext {
    /// Where d-trees are written.
    pub storage: Arc<dyn Storage>,
    /// How.
    pub params: DTreeParams,
    /// The id the next d-tree gets (shared by every rewrite of the tree).
    pub next_id: Arc<AtomicU64>,
    /// Pages written by every d-tree writer of the tree (deterministic; tests assert on it).
    pub pages_written: Arc<AtomicU64>,
    /// Pages a d-tree writer gathers before it writes them (`DTreeWriter::with_write_batch_pages`).
    pub write_batch_pages: u64,
}

/// One new d-tree.
#[derive(Debug, Default)]
pub struct Output {
    /// The d-tree (`None`: no entry).
    pub dtree: Option<Arc<DTree>>,
    /// Its first key.
    pub first_key: Option<Vec<u8>>,
    /// Bytes of its entries.
    pub bytes: u64,
    /// Its entries.
    pub entries: u64,
}

/// Where a rewrite's entries go: one or two new d-trees.
#[derive(Debug)]
struct Sink {
    split: Split,
    context: WriterContext,
    keys_max: u64,
    writers: Vec<Option<DTreeWriter>>,
    outputs: Vec<Output>,
    current: usize,
    /// Pages of writers already finished.
    retired_pages: u64,
}

/// A resumable merge into new d-trees.
#[derive(Debug)]
pub struct Rewrite {
    newer: Option<Source>,
    older: Source,
    drop_deletes: bool,
    sink: Sink,
    merged: bool,
    done: bool,
}

impl Rewrite {
    /// A rewrite of `older` with `newer` merged in (newer wins on equal keys), dropping
    /// deletes when the output is a leaf's (nothing older lies below to cancel).
    /// `keys_max` bounds the entries (for the Bloom filters).
    pub fn new(
        newer: Option<Source>,
        older: Source,
        drop_deletes: bool,
        split: Split,
        context: WriterContext,
        keys_max: u64,
    ) -> Rewrite {
        let outputs = if split == Split::None { 1 } else { 2 };
        let sink = Sink {
            split,
            context,
            keys_max,
            writers: (0..outputs).map(|_| None).collect(),
            outputs: (0..outputs).map(|_| Output::default()).collect(),
            current: 0,
            retired_pages: 0,
        };
        Rewrite { newer, older, drop_deletes, sink, merged: false, done: false }
    }

    /// Pages written so far.
    pub fn pages(&self) -> u64 {
        self.sink.retired_pages
            + self.sink.writers.iter().flatten().map(DTreeWriter::pages_written).sum::<u64>()
    }

    /// Whether every output is written, synced and open.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The newer stream (bytes, entries and last key it yielded).
    pub fn newer(&self) -> Option<&Source> {
        self.newer.as_ref()
    }

    /// Whether every entry is written and only the outputs' tails (and their syncs) remain.
    pub fn is_merged(&self) -> bool {
        self.merged
    }

    /// Writes up to about `pages_max` pages; returns the pages written.
    pub fn step(&mut self, pages_max: u64) -> Result<u64> {
        self.step_until(pages_max, true)
    }

    /// [`Rewrite::step`], stopping before the outputs' tails unless `finish` (a writer
    /// helping the background thread leaves the syncs to it).
    pub fn step_until(&mut self, pages_max: u64, finish: bool) -> Result<u64> {
        assert!(pages_max > 0 && !self.done);
        let start = self.pages();
        while !self.merged && self.pages() - start < pages_max {
            match self.next_merged()? {
                Some(from_newer) => {
                    let source = if from_newer {
                        self.newer.as_mut().expect("a newer stream")
                    } else {
                        &mut self.older
                    };
                    let (key, slot) = source.head();
                    push(&mut self.sink, key, slot.as_deref())?;
                    source.advance();
                }
                None => self.merged = true,
            }
        }
        if self.merged && finish {
            for i in 0..self.sink.writers.len() {
                loop {
                    let spent = self.pages() - start;
                    if spent >= pages_max {
                        return Ok(spent);
                    }
                    let Some(writer) = self.sink.writers[i].as_mut() else { break };
                    let before = writer.pages_written();
                    let finished = writer.finish_step(pages_max - spent)?;
                    let written = writer.pages_written() - before;
                    self.sink.context.pages_written.fetch_add(written, Ordering::Relaxed);
                    if finished {
                        let writer = self.sink.writers[i].take().expect("checked above");
                        self.sink.retired_pages += writer.pages_written();
                        self.sink.outputs[i].dtree = Some(writer.into_dtree()?);
                    }
                }
            }
            self.done = true;
        }
        Ok(self.pages() - start)
    }

    /// The new d-trees (once done).
    pub fn into_outputs(self) -> Vec<Output> {
        assert!(self.done);
        self.sink.outputs
    }

    /// Stops: removes the files of unfinished and finished-but-uninstalled outputs.
    pub fn abandon(mut self) {
        for writer in self.sink.writers.iter_mut().filter_map(Option::take) {
            // An error leaves an orphan file, which recovery removes.
            let _ = writer.abandon();
        }
        for dtree in self.sink.outputs.iter().filter_map(|o| o.dtree.as_ref()) {
            dtree.remove_when_unused();
        }
    }

    /// Which stream holds the next entry of the merge (`true`: the newer), its head left
    /// in place for the caller to copy; entries shadowed by a newer one, and deletes when
    /// the output is a leaf's, are passed over.
    fn next_merged(&mut self) -> Result<Option<bool>> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        loop {
            // Compare the heads in place (no key copies: this runs once per entry moved).
            let newer = match &mut self.newer {
                Some(n) => n.peek()?,
                None => None,
            };
            let older = self.older.peek()?;
            let (order, winner_is_delete) = match (newer, older) {
                (None, None) => return Ok(None),
                (Some(n), None) => (Less, n.1.is_none()),
                (None, Some(o)) => (Greater, o.1.is_none()),
                (Some(n), Some(o)) => {
                    let order = n.0.cmp(&o.0);
                    (order, if order == Greater { o.1.is_none() } else { n.1.is_none() })
                }
            };
            if order == Equal {
                self.older.advance(); // shadowed by the newer entry
            }
            let from_newer = order != Greater;
            if self.drop_deletes && winner_is_delete {
                if from_newer {
                    self.newer.as_mut().expect("peeked").advance();
                } else {
                    self.older.advance();
                }
                continue;
            }
            return Ok(Some(from_newer));
        }
    }
}

/// Appends an entry to the output it belongs to (creating that output's writer at its
/// first entry).
fn push(sink: &mut Sink, key: &[u8], slot: Option<&[u8]>) -> Result<()> {
    let bytes = entry_bytes(key.len(), slot.map(<[u8]>::len));
    let target = match &sink.split {
        Split::None => 0,
        Split::AtKey(k) => usize::from(key >= k.as_slice()),
        Split::AtHalf { total_bytes } => {
            if sink.current == 0
                && sink.outputs[0].entries > 0
                && sink.outputs[0].bytes + bytes / 2 >= total_bytes / 2
            {
                sink.current = 1;
            }
            sink.current
        }
    };
    if sink.writers[target].is_none() {
        // Both outputs stay open until the end; each is written sequentially.
        let id = sink.context.next_id.fetch_add(1, Ordering::Relaxed);
        sink.writers[target] = Some(
            DTreeWriter::create(
                sink.context.storage.clone(),
                id,
                sink.context.params,
                sink.keys_max,
            )?
            .with_write_batch_pages(sink.context.write_batch_pages),
        );
        sink.outputs[target].first_key = Some(key.to_vec());
    }
    let writer = sink.writers[target].as_mut().expect("created above");
    let before = writer.pages_written();
    writer.push(key, slot)?;
    sink.context.pages_written.fetch_add(writer.pages_written() - before, Ordering::Relaxed);
    let out = &mut sink.outputs[target];
    out.bytes += bytes;
    out.entries += 1;
    Ok(())
}
