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

use super::source::{Item, Source};
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

/// A resumable merge into new d-trees.
#[derive(Debug)]
pub struct Rewrite {
    newer: Option<Source>,
    older: Source,
    drop_deletes: bool,
    split: Split,
    context: WriterContext,
    keys_max: u64,
    writers: Vec<Option<DTreeWriter>>,
    outputs: Vec<Output>,
    current: usize,
    /// Pages of writers already finished.
    retired_pages: u64,
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
        Rewrite {
            newer,
            older,
            drop_deletes,
            split,
            context,
            keys_max,
            writers: (0..outputs).map(|_| None).collect(),
            outputs: (0..outputs).map(|_| Output::default()).collect(),
            current: 0,
            retired_pages: 0,
            merged: false,
            done: false,
        }
    }

    /// Pages written so far.
    pub fn pages(&self) -> u64 {
        self.retired_pages
            + self.writers.iter().flatten().map(DTreeWriter::pages_written).sum::<u64>()
    }

    /// Whether every output is written, synced and open.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The newer stream (bytes, entries and last key it yielded).
    pub fn newer(&self) -> Option<&Source> {
        self.newer.as_ref()
    }

    /// Writes up to about `pages_max` pages; returns the pages written.
    pub fn step(&mut self, pages_max: u64) -> Result<u64> {
        assert!(pages_max > 0 && !self.done);
        let start = self.pages();
        while !self.merged && self.pages() - start < pages_max {
            match self.next_merged()? {
                Some(item) => self.push(item)?,
                None => self.merged = true,
            }
        }
        if self.merged {
            for i in 0..self.writers.len() {
                loop {
                    let spent = self.pages() - start;
                    if spent >= pages_max {
                        return Ok(spent);
                    }
                    let Some(writer) = self.writers[i].as_mut() else { break };
                    let before = writer.pages_written();
                    let finished = writer.finish_step(pages_max - spent)?;
                    let written = writer.pages_written() - before;
                    self.context.pages_written.fetch_add(written, Ordering::Relaxed);
                    if finished {
                        let writer = self.writers[i].take().expect("checked above");
                        self.retired_pages += writer.pages_written();
                        self.outputs[i].dtree = Some(writer.into_dtree()?);
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
        self.outputs
    }

    /// Stops: removes the files of unfinished and finished-but-uninstalled outputs.
    pub fn abandon(mut self) {
        for writer in self.writers.iter_mut().filter_map(Option::take) {
            // An error leaves an orphan file, which recovery removes.
            let _ = writer.abandon();
        }
        for dtree in self.outputs.iter().filter_map(|o| o.dtree.as_ref()) {
            dtree.remove_when_unused();
        }
    }

    fn next_merged(&mut self) -> Result<Option<Item>> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        loop {
            // Compare the heads in place (no key copies: this runs once per entry moved).
            let newer = match &mut self.newer {
                Some(n) => n.peek()?,
                None => None,
            };
            let older = self.older.peek()?;
            let order = match (newer, older) {
                (None, None) => return Ok(None),
                (Some(_), None) => Less,
                (None, Some(_)) => Greater,
                (Some((n, _)), Some((o, _))) => n.cmp(o),
            };
            let item = match order {
                Equal => {
                    self.older.next_item()?; // shadowed by the newer entry
                    self.newer.as_mut().expect("peeked").next_item()?
                }
                Less => self.newer.as_mut().expect("peeked").next_item()?,
                Greater => self.older.next_item()?,
            };
            let item = item.expect("peeked");
            if self.drop_deletes && item.1.is_none() {
                continue;
            }
            return Ok(Some(item));
        }
    }

    fn push(&mut self, (key, slot): Item) -> Result<()> {
        let bytes = entry_bytes(key.len(), slot.as_ref().map(Vec::len));
        let target = match &self.split {
            Split::None => 0,
            Split::AtKey(k) => usize::from(key.as_slice() >= k.as_slice()),
            Split::AtHalf { total_bytes } => {
                if self.current == 0
                    && self.outputs[0].entries > 0
                    && self.outputs[0].bytes + bytes / 2 >= total_bytes / 2
                {
                    self.current = 1;
                }
                self.current
            }
        };
        if self.writers[target].is_none() {
            // Outputs are written in key order: the first is finished before the second
            // starts only at the end (both stay open; each is written sequentially).
            let id = self.context.next_id.fetch_add(1, Ordering::Relaxed);
            self.writers[target] = Some(DTreeWriter::create(
                self.context.storage.clone(),
                id,
                self.context.params,
                self.keys_max,
            )?);
            self.outputs[target].first_key = Some(key.clone());
        }
        let writer = self.writers[target].as_mut().expect("created above");
        let before = writer.pages_written();
        writer.push(&key, slot.as_deref())?;
        self.context.pages_written.fetch_add(writer.pages_written() - before, Ordering::Relaxed);
        let out = &mut self.outputs[target];
        out.bytes += bytes;
        out.entries += 1;
        Ok(())
    }
}
