//! The engines behind the API, by name.

use lamina_core::Error;
#[cfg(feature = "fdtree")]
use lamina_fdtree::FcMode;

/// An index design. Every engine implements the same [`lamina_core::OrderedIndex`] contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EngineKind {
    /// `mem`: a concurrent in-memory B-tree map; the test oracle and benchmark baseline.
    #[cfg(feature = "mem")]
    Mem,
    /// `fdtree`: the FD+tree (logarithmic method + fractional cascading) with a concurrency
    /// scheme. The on-disk format is the same for every scheme, so a directory created with
    /// one may be opened with another.
    #[cfg(feature = "fdtree")]
    Fdtree(FcMode),
    /// `trie`: the SIGMOD 2011 contest's generalized prefix tree (k' = 4) with non-blocking
    /// reads, durable through the coalesced cyclic log.
    #[cfg(feature = "trie")]
    Trie,
    /// `nbtree`: the NB-tree (nested B-trees: an s-tree whose nodes each own a d-tree
    /// written sequentially, with Bloom filters and deamortized flushes; Zeighami and Wong).
    #[cfg(feature = "nbtree")]
    Nbtree,
    /// `latree`: the Lazy-Adaptive Tree (a B+tree with cascaded flash-resident buffers
    /// emptied by the ADAPT online algorithm; Agrawal et al., VLDB 2009).
    #[cfg(feature = "latree")]
    Latree,
    /// `latree-btree`: the LA-tree engine with buffering off, a plain B+tree (the paper's
    /// baseline). Its own on-disk format name: a buffered tree is not opened as one.
    #[cfg(feature = "latree")]
    LatreeBtree,
    /// `fptree`: the Fingerprinting Persistent Tree (leaves in persistent memory, here a
    /// memory-mapped region file; DRAM inner nodes rebuilt at open; Oukid et al., SIGMOD 2016).
    /// Its region file is fixed at creation ([`crate::FPTREE_REGION_BYTES_DEFAULT`],
    /// 8 GiB sparse): at least 10 million records of an 8-byte key and a 128-byte value,
    /// about 35 million at most; past it writes fail with `NoSpace`.
    #[cfg(feature = "fptree")]
    Fptree,
}

impl EngineKind {
    /// Every engine this build contains, under every name it answers to.
    pub const ALL: &'static [EngineKind] = &[
        #[cfg(feature = "fdtree")]
        EngineKind::Fdtree(FcMode::Fc),
        #[cfg(feature = "fdtree")]
        EngineKind::Fdtree(FcMode::Xm),
        #[cfg(feature = "fdtree")]
        EngineKind::Fdtree(FcMode::Ds),
        #[cfg(feature = "nbtree")]
        EngineKind::Nbtree,
        #[cfg(feature = "latree")]
        EngineKind::Latree,
        #[cfg(feature = "latree")]
        EngineKind::LatreeBtree,
        #[cfg(feature = "fptree")]
        EngineKind::Fptree,
        #[cfg(feature = "trie")]
        EngineKind::Trie,
        #[cfg(feature = "mem")]
        EngineKind::Mem,
    ];

    /// The engine's name as used on the command line and in benchmarks.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "mem")]
            EngineKind::Mem => "mem",
            #[cfg(feature = "fdtree")]
            EngineKind::Fdtree(FcMode::Xm) => "fdtree-xm",
            #[cfg(feature = "fdtree")]
            EngineKind::Fdtree(FcMode::Ds) => "fdtree-ds",
            #[cfg(feature = "fdtree")]
            EngineKind::Fdtree(FcMode::Fc) => "fdtree-fc",
            #[cfg(feature = "trie")]
            EngineKind::Trie => "trie",
            #[cfg(feature = "nbtree")]
            EngineKind::Nbtree => "nbtree",
            #[cfg(feature = "latree")]
            EngineKind::Latree => "latree",
            #[cfg(feature = "latree")]
            EngineKind::LatreeBtree => "latree-btree",
            #[cfg(feature = "fptree")]
            EngineKind::Fptree => "fptree",
        }
    }

    /// The name recorded in the database directory: the on-disk format, not the runtime
    /// scheme (`fdtree` for every FD+tree mode).
    pub fn format_name(self) -> &'static str {
        match self {
            #[cfg(feature = "mem")]
            EngineKind::Mem => "mem",
            #[cfg(feature = "fdtree")]
            EngineKind::Fdtree(_) => "fdtree",
            #[cfg(feature = "trie")]
            EngineKind::Trie => "trie",
            #[cfg(feature = "nbtree")]
            EngineKind::Nbtree => "nbtree",
            #[cfg(feature = "latree")]
            EngineKind::Latree => "latree",
            #[cfg(feature = "latree")]
            EngineKind::LatreeBtree => "latree-btree",
            #[cfg(feature = "fptree")]
            EngineKind::Fptree => "fptree",
        }
    }

    /// One line describing the engine.
    pub fn description(self) -> &'static str {
        match self {
            #[cfg(feature = "mem")]
            EngineKind::Mem => {
                "in-memory ordered map (RwLock<BTreeMap>) made durable by the coalesced cyclic \
                 log (group commit); the oracle of the tests and the baseline of benchmarks"
            }
            #[cfg(feature = "fdtree")]
            EngineKind::Fdtree(FcMode::Xm) => {
                "FD+tree (logarithmic method + fractional cascading, one-pass multi-level \
                 merge) with FD+XM: one readers-writer lock held by merges; logged, crash-safe"
            }
            #[cfg(feature = "fdtree")]
            EngineKind::Fdtree(FcMode::Ds) => {
                "FD+tree with FD+DS: a background thread merges into new levels on the side \
                 while lookups use the old ones; logged, crash-safe"
            }
            #[cfg(feature = "fdtree")]
            EngineKind::Fdtree(FcMode::Fc) => {
                "FD+tree with FD+FC (the default): background wavefront merges moving data \
                 block by block, lookups with latch coupling never wait for a merge; logged, \
                 crash-safe"
            }
            #[cfg(feature = "trie")]
            EngineKind::Trie => {
                "generalized prefix tree (k' = 4, dynamic expansion) with lock-free reads, \
                 durable through the coalesced cyclic log (SIGMOD 2011 contest)"
            }
            #[cfg(feature = "nbtree")]
            EngineKind::Nbtree => {
                "NB-tree (nested B-trees: an s-tree of sequentially written d-trees with Bloom \
                 filters, single recursive flush and deamortized insertion; Zeighami and Wong)"
            }
            #[cfg(feature = "latree")]
            EngineKind::Latree => {
                "LA-tree (B+tree with cascaded flash-resident buffers emptied by the ADAPT online \
                 algorithm; Agrawal et al.): one tree lock, logged, checkpointed, crash-safe"
            }
            #[cfg(feature = "latree")]
            EngineKind::LatreeBtree => {
                "the LA-tree engine with buffering off: a plain B+tree, the LA-tree paper's \
                 baseline; logged, checkpointed, crash-safe"
            }
            #[cfg(feature = "fptree")]
            EngineKind::Fptree => {
                "FPTree (fingerprinted unsorted leaves in a persistent-memory region file, DRAM \
                 inner nodes rebuilt at open, micro-logged splits and deletes; Oukid et al.)"
            }
        }
    }

    /// The engine called `name` (`fdtree` is the FD+tree with its default scheme), or an
    /// error listing the names.
    pub fn from_name(name: &str) -> Result<Self, Error> {
        #[cfg(feature = "fdtree")]
        if name == "fdtree" {
            return Ok(EngineKind::Fdtree(FcMode::default()));
        }
        EngineKind::ALL.iter().copied().find(|k| k.name() == name).ok_or_else(|| {
            if let Some((_, feature)) =
                ENGINE_FEATURES.iter().find(|(names, _)| names.contains(&name))
            {
                return Error::Unsupported {
                    what: format!(
                        "engine `{name}`: this build of lamina leaves it out (enable the \
                         `lamina` crate's `{feature}` feature)"
                    ),
                };
            }
            let fdtree = if cfg!(feature = "fdtree") { "fdtree, " } else { "" };
            let names: Vec<_> = EngineKind::ALL.iter().map(|k| k.name()).collect();
            Error::option(
                "engine",
                format!("unknown engine `{name}`; known: {fdtree}{}", names.join(", ")),
            )
        })
    }

    /// The engine that a directory whose metadata names `format_name` is opened with when
    /// the caller does not choose.
    pub fn from_format_name(format_name: &str) -> Result<Self, Error> {
        match format_name {
            #[cfg(feature = "fdtree")]
            "fdtree" => Ok(EngineKind::Fdtree(FcMode::default())),
            other => EngineKind::from_name(other),
        }
    }
}

/// Every engine name, with the cargo feature of the `lamina` crate that builds it.
const ENGINE_FEATURES: &[(&[&str], &str)] = &[
    (&["mem"], "mem"),
    (&["fdtree", "fdtree-fc", "fdtree-xm", "fdtree-ds"], "fdtree"),
    (&["trie"], "trie"),
    (&["nbtree"], "nbtree"),
    (&["latree", "latree-btree"], "latree"),
    (&["fptree"], "fptree"),
];

#[cfg(not(any(
    feature = "mem",
    feature = "fdtree",
    feature = "trie",
    feature = "nbtree",
    feature = "latree",
    feature = "fptree"
)))]
compile_error!(
    "lamina needs at least one engine feature: mem, fdtree, trie, nbtree, latree or fptree"
);

impl Default for EngineKind {
    /// The default engine: the FD+tree (docs/DESIGN.md, "Papers") with its default
    /// concurrency scheme; in a build without it, the first of trie, nbtree, latree, fptree,
    /// mem that is built.
    #[allow(unreachable_code)] // all but the first engine built are unreachable
    fn default() -> Self {
        #[cfg(feature = "fdtree")]
        return EngineKind::Fdtree(FcMode::default());
        #[cfg(feature = "trie")]
        return EngineKind::Trie;
        #[cfg(feature = "nbtree")]
        return EngineKind::Nbtree;
        #[cfg(feature = "latree")]
        return EngineKind::Latree;
        #[cfg(feature = "fptree")]
        return EngineKind::Fptree;
        #[cfg(feature = "mem")]
        return EngineKind::Mem;
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(all(
    test,
    feature = "mem",
    feature = "fdtree",
    feature = "trie",
    feature = "nbtree",
    feature = "latree",
    feature = "fptree"
))]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        for kind in EngineKind::ALL {
            assert_eq!(EngineKind::from_name(kind.name()).unwrap(), *kind);
            assert_eq!(
                EngineKind::from_format_name(kind.format_name()).unwrap().format_name(),
                kind.format_name()
            );
        }
        assert_eq!(EngineKind::from_name("fdtree").unwrap(), EngineKind::default());
        let err = EngineKind::from_name("nope").unwrap_err();
        assert!(
            err.to_string().contains(
                "known: fdtree, fdtree-fc, fdtree-xm, fdtree-ds, nbtree, latree, \
                     latree-btree, fptree, trie, mem"
            ),
            "{err}"
        );
    }
}
