//! The engines the simulation drives, their options (small, so that a few dozen writes flush,
//! merge, checkpoint and wrap logs), and what "abandon after a crash", "settle" and "verify"
//! mean for each.

use std::sync::Arc;

use lamina_core::{Durability, Error, OpenIntent, OrderedIndex, Result};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};
use lamina_fptree::inner::InnerIndex;
use lamina_fptree::{FpTreeConfig, FpTreeEngine};
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_mem::{MemEngine, MemOptions};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};
use lamina_storage::pmem::SimulatedRegion;
use lamina_storage::{DeviceProfile, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

/// An engine the simulation knows, by the name `scripts/simulate` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineName {
    /// `mem`: the in-memory map with its log ring.
    Mem,
    /// `trie`: the prefix tree with its coalesced cyclic log.
    Trie,
    /// `fdtree-fc`, `fdtree-xm`, `fdtree-ds`: the FD+tree per concurrency scheme.
    Fdtree(FcMode),
    /// `nbtree`: the NB-tree (foreground deamortization: deterministic operation order).
    Nbtree,
    /// `latree`: the LA-tree.
    Latree,
    /// `latree-btree`: the LA-tree engine with buffering off.
    LatreeBtree,
    /// `fptree`: the FPTree over a simulated persistent-memory region.
    Fptree,
}

impl EngineName {
    /// Every engine, in the order `all` runs them.
    pub const ALL: [EngineName; 9] = [
        EngineName::Mem,
        EngineName::Trie,
        EngineName::Fdtree(FcMode::Fc),
        EngineName::Fdtree(FcMode::Xm),
        EngineName::Fdtree(FcMode::Ds),
        EngineName::Nbtree,
        EngineName::Latree,
        EngineName::LatreeBtree,
        EngineName::Fptree,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            EngineName::Mem => "mem",
            EngineName::Trie => "trie",
            EngineName::Fdtree(FcMode::Fc) => "fdtree-fc",
            EngineName::Fdtree(FcMode::Xm) => "fdtree-xm",
            EngineName::Fdtree(FcMode::Ds) => "fdtree-ds",
            EngineName::Nbtree => "nbtree",
            EngineName::Latree => "latree",
            EngineName::LatreeBtree => "latree-btree",
            EngineName::Fptree => "fptree",
        }
    }

    /// The engine called `name`.
    pub fn parse(name: &str) -> Option<EngineName> {
        EngineName::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Largest value the workload writes to this engine (the tiny configurations below
    /// lower some engines' limits).
    pub fn value_bytes_max(self) -> usize {
        match self {
            EngineName::Fdtree(_) | EngineName::Nbtree => 120,
            _ => 300,
        }
    }

    /// Whether the engine stores through [`Storage`] (and so meets EIO, ENOSPC and file bit
    /// flips); `fptree` stores in a persistent-memory region instead.
    pub fn on_storage(self) -> bool {
        self != EngineName::Fptree
    }
}

/// An open engine of any kind.
#[derive(Debug)]
pub enum Engine {
    /// `mem`.
    Mem(MemEngine),
    /// `trie`.
    Trie(Box<TrieEngine>),
    /// `fdtree-*`.
    Fdtree(FdTree),
    /// `nbtree`.
    Nbtree(NbTree),
    /// `latree`, `latree-btree`.
    Latree(LaTreeEngine),
    /// `fptree`.
    Fptree(Box<FpTreeEngine<SimulatedRegion>>),
}

/// Log buffers and segments of the log-based engines: the smallest the log accepts, so that
/// rings wrap and garbage collection runs within a few cycles.
const LOG_BUFFER_BYTES: usize = 16 << 10;
/// Segment size of a new ring: the smallest the log accepts for [`LOG_BUFFER_BYTES`] (12
/// chunks of twice the buffer, in whole 4 KiB blocks).
const LOG_SEGMENT_BYTES: u64 = 448 << 10;

/// Opens `engine` over `storage` with the simulation's options (`Durability::Sync`).
pub fn open_on_storage(engine: EngineName, storage: Arc<dyn Storage>) -> Result<Engine> {
    Ok(match engine {
        EngineName::Mem => {
            let options = MemOptions {
                durability: Durability::Sync,
                log_segment_bytes: Some(LOG_SEGMENT_BYTES),
                log_buffer_bytes: LOG_BUFFER_BYTES,
                ..MemOptions::default()
            };
            Engine::Mem(MemEngine::open(storage, &options)?)
        }
        EngineName::Trie => {
            let options = TrieOptions::default()
                .durability(Durability::Sync)
                .log_buffer_bytes(LOG_BUFFER_BYTES)
                .log_segment_bytes(LOG_SEGMENT_BYTES);
            Engine::Trie(Box::new(TrieEngine::open(storage, options)?))
        }
        EngineName::Fdtree(mode) => {
            let options = FdTreeOptions {
                mode,
                memory_budget_bytes: 2048,
                block_bytes: 1024,
                segment_bytes: 1024,
                size_ratio: 2,
                key_bytes_max: 16,
                value_bytes_max: EngineName::Fdtree(mode).value_bytes_max(),
                durability: Durability::Sync,
                merge_commit_bytes: 2048,
                ..FdTreeOptions::default()
            };
            Engine::Fdtree(FdTree::open(storage, &options)?)
        }
        EngineName::Nbtree => {
            let options = NbTreeOptions {
                sigma_bytes: SIGMA_BYTES_MIN,
                page_bytes: 512,
                durability: Durability::Sync,
                deamortization: Deamortization::Foreground,
                ..NbTreeOptions::default()
            };
            Engine::Nbtree(NbTree::open(storage, &options)?)
        }
        EngineName::Latree | EngineName::LatreeBtree => {
            let mut options = LaTreeEngineOptions::for_device(DeviceProfile::ssd_msp7525());
            options.tree.buffered = engine == EngineName::Latree;
            options.tree.buffer_entries_max = 64;
            options.tree.memory_bytes = 1 << 20;
            options.durability = Durability::Sync;
            // No background checkpoints: the driver checkpoints at seeded points, so the
            // storage operations (and so the crash points) come in a deterministic order.
            options.checkpoint_log_bytes = lamina_latree::engine::CHECKPOINT_LOG_BYTES_MAX;
            options.checkpoint_inline_bytes_max = 64;
            Engine::Latree(LaTreeEngine::open(storage, &options)?)
        }
        EngineName::Fptree => {
            return Err(Error::Unsupported { what: "fptree over a Storage".into() });
        }
    })
}

/// Opens the FPTree engine over a simulated persistent-memory region.
pub fn open_on_region(region: Arc<SimulatedRegion>, intent: OpenIntent) -> Result<Engine> {
    let config = FpTreeConfig::default();
    Ok(Engine::Fptree(Box::new(FpTreeEngine::open_region(region, config, intent)?)))
}

impl Engine {
    /// The engine behind the common API.
    pub fn index(&self) -> &dyn OrderedIndex {
        match self {
            Engine::Mem(e) => e,
            Engine::Trie(e) => &**e,
            Engine::Fdtree(e) => e,
            Engine::Nbtree(e) => e,
            Engine::Latree(e) => e,
            Engine::Fptree(e) => &**e,
        }
    }

    /// Waits for the engine's background work (fdtree's merges), so that the storage
    /// operations of one run come in the same order every time.
    pub fn settle(&self) -> Result<()> {
        match self {
            Engine::Fdtree(e) => e.wait_for_merges(),
            _ => Ok(()),
        }
    }

    /// A maintenance step the driver inserts at seeded points: a checkpoint (latree), a
    /// flush (fdtree, nbtree), a sync (the others).
    pub fn maintain(&self) -> Result<()> {
        match self {
            Engine::Latree(e) => e.checkpoint(),
            Engine::Fdtree(e) => e.flush(),
            Engine::Nbtree(e) => e.flush_now(),
            other => other.index().sync(),
        }
    }

    /// The engine's own structural check where it defines one (mem and trie check every
    /// record while opening; fptree: no persistent leak, allocator and inner nodes agree).
    pub fn verify(&self) -> Result<()> {
        match self {
            Engine::Mem(_) | Engine::Trie(_) => Ok(()),
            Engine::Fdtree(e) => e.verify(),
            Engine::Nbtree(e) => e.verify(),
            Engine::Latree(e) => e.verify().map(|_| ()),
            Engine::Fptree(e) => verify_fptree(e),
        }
    }

    /// Drops the engine after a simulated crash without flushing anything, the way each
    /// engine's own crash tests do.
    pub fn abandon(self) {
        match &self {
            Engine::Mem(e) => e.abandon(),
            Engine::Trie(e) => e.abandon(),
            Engine::Nbtree(e) => e.crash(),
            Engine::Latree(e) => e.crash(),
            Engine::Fdtree(_) | Engine::Fptree(_) => {}
        }
        drop(self);
    }
}

fn verify_fptree(engine: &FpTreeEngine<SimulatedRegion>) -> Result<()> {
    let tree = engine.tree();
    let broken =
        |reason: String| Err(Error::corruption("<simulated persistent region>", 0, reason));
    let (used, reachable) = (tree.allocator_stats().used_chunks, tree.reachable_chunks()?);
    if used != reachable {
        return broken(format!("persistent leak: {used} chunks used, {reachable} reachable"));
    }
    tree.allocator().check()?;
    let (inner, listed) = (tree.inner().leaf_count(), tree.list_leaves()?);
    if inner != listed {
        return broken(format!("inner nodes index {inner} leaves, the leaf list has {listed}"));
    }
    Ok(())
}
