//! Which engines an experiment compares, from what the build offers.

use super::Experiment;

/// Peers of `nbtree-insert` (NB-tree section 6.1 compares LevelDB, RocksDB and B-trees).
pub const NBTREE_PEERS: [&str; 3] = ["rocksdb", "leveldb", "wiredtiger-btree"];
/// The concurrency schemes FD+FC Figure 6 compares, in its order.
pub const FIGURE6_MODES: [&str; 3] = ["fdtree-xm", "fdtree-ds", "fdtree-fc"];
/// The B+-tree of FD+FC section 5.3.
pub const FDFC_BTREE: &str = "bdb";
/// lamina's engines in `scale` (issue 22: FD+FC, FD+XM, the trie and the in-memory map;
/// issue 16: the NB-tree; issue 18: the LA-tree).
pub const SCALE_LAMINA: [&str; 6] = ["fdtree-fc", "fdtree-xm", "nbtree", "latree", "trie", "mem"];
/// The engine whose paper `nbtree-insert` reproduces: its first lamina engine.
pub const NBTREE_ENGINE: &str = "nbtree";
/// The peers in `scale`: every peer library, the LSMs in their tuned configurations (Bloom
/// filters, larger write buffers), both WiredTiger layouts.
pub const SCALE_PEERS: [&str; 6] =
    ["rocksdb-tuned", "leveldb-tuned", "lmdb", "bdb", "wiredtiger-btree", "wiredtiger-lsm"];

/// The engines an experiment runs and the ones it wanted but this build lacks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EngineSelection {
    /// Engines to run, in order (ratios are to the first); empty: every engine that
    /// accepts the experiment's settings (the bench skips the others with a note).
    pub engines: Vec<String>,
    /// Wanted but not offered, each with a one-line reason.
    pub missing: Vec<(String, String)>,
}

fn is_lamina_disk_engine(name: &str) -> bool {
    name.starts_with("fdtree") || name == "nbtree" || name == "trie" || name == "mem"
}

/// The best FD+tree concurrency scheme offered: FD+FC, else the default `fdtree`, else
/// any other `fdtree-*`.
pub fn best_fdtree(offered: &[String]) -> Option<String> {
    ["fdtree-fc", "fdtree"]
        .into_iter()
        .find(|name| offered.iter().any(|o| o == name))
        .map(str::to_string)
        .or_else(|| offered.iter().find(|o| o.starts_with("fdtree")).cloned())
}

impl Experiment {
    /// The engines this experiment compares among `offered` (the factory's names).
    pub fn select_engines(self, offered: &[String]) -> EngineSelection {
        let has = |name: &str| offered.iter().any(|o| o == name);
        let mut selection = EngineSelection::default();
        let want_peer = |name: &str, selection: &mut EngineSelection| {
            if has(name) {
                selection.engines.push(name.to_string());
            } else {
                selection.missing.push((
                    name.to_string(),
                    "not in this build (peers need `--features peers`)".to_string(),
                ));
            }
        };
        match self {
            Experiment::FdfcFigure1 | Experiment::Contest => {}
            Experiment::NbtreeInsert => {
                // The NB-tree first (ratios are to the first engine), then lamina's others.
                if !has(NBTREE_ENGINE) {
                    selection.missing.push((NBTREE_ENGINE.into(), "not in this build".into()));
                }
                let lamina = offered.iter().filter(|o| is_lamina_disk_engine(o));
                let (nbtree, others): (Vec<&String>, Vec<&String>) =
                    lamina.partition(|o| *o == NBTREE_ENGINE);
                selection.engines = nbtree.into_iter().chain(others).cloned().collect();
                for peer in NBTREE_PEERS {
                    want_peer(peer, &mut selection);
                }
            }
            Experiment::FdfcVsBtree => {
                match best_fdtree(offered) {
                    Some(name) => {
                        if name != "fdtree-fc" {
                            selection.missing.push((
                                "fdtree-fc".into(),
                                format!("FD+FC is not in this build; using `{name}` instead"),
                            ));
                        }
                        selection.engines.push(name);
                    }
                    None => selection
                        .missing
                        .push(("fdtree-fc".into(), "no FD+tree engine in this build".into())),
                }
                want_peer(FDFC_BTREE, &mut selection);
            }
            Experiment::Scale => {
                for engine in SCALE_LAMINA {
                    if has(engine) {
                        selection.engines.push(engine.to_string());
                    } else {
                        selection.missing.push((engine.to_string(), "not in this build".into()));
                    }
                }
                for peer in SCALE_PEERS {
                    want_peer(peer, &mut selection);
                }
            }
            Experiment::FdfcFigure6 => {
                for mode in FIGURE6_MODES {
                    if has(mode) {
                        selection.engines.push(mode.to_string());
                    } else {
                        selection.missing.push((mode.to_string(), "not in this build".into()));
                    }
                }
            }
        }
        selection
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn nbtree_takes_the_nbtree_first_then_lamina_engines_then_the_peers_it_finds() {
        let offered = names(&["fdtree-xm", "nbtree", "mem", "rocksdb", "leveldb", "lmdb", "bdb"]);
        let s = Experiment::NbtreeInsert.select_engines(&offered);
        assert_eq!(s.engines, names(&["nbtree", "fdtree-xm", "mem", "rocksdb", "leveldb"]));
        assert_eq!(s.missing.len(), 1);
        assert_eq!(s.missing[0].0, "wiredtiger-btree");
        let lamina_only =
            Experiment::NbtreeInsert.select_engines(&names(&["fdtree-xm", "mem", "nbtree"]));
        assert_eq!(lamina_only.engines, names(&["nbtree", "fdtree-xm", "mem"]));
        assert_eq!(lamina_only.missing.len(), 3);
        let without = Experiment::NbtreeInsert.select_engines(&names(&["fdtree-xm", "mem"]));
        assert_eq!(without.engines, names(&["fdtree-xm", "mem"]));
        assert_eq!(without.missing[0], ("nbtree".to_string(), "not in this build".to_string()));
        assert_eq!(without.missing.len(), 4);
    }

    #[test]
    fn fdfc_vs_btree_prefers_fdfc_and_falls_back_with_a_note() {
        let with_fc = names(&["fdtree-xm", "fdtree-fc", "mem", "bdb"]);
        let s = Experiment::FdfcVsBtree.select_engines(&with_fc);
        assert_eq!((s.engines, s.missing), (names(&["fdtree-fc", "bdb"]), vec![]));
        let s = Experiment::FdfcVsBtree.select_engines(&names(&["fdtree-xm", "mem"]));
        assert_eq!(s.engines, names(&["fdtree-xm"]));
        let missing: Vec<&str> = s.missing.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(missing, ["fdtree-fc", "bdb"]);
        assert_eq!(best_fdtree(&names(&["fdtree", "fdtree-xm"])).as_deref(), Some("fdtree"));
        assert_eq!(best_fdtree(&names(&["mem"])), None);
    }

    #[test]
    fn figure6_takes_the_three_modes_it_finds() {
        let s = Experiment::FdfcFigure6.select_engines(&names(&["mem", "fdtree-ds", "fdtree-xm"]));
        assert_eq!(s.engines, names(&["fdtree-xm", "fdtree-ds"]));
        assert_eq!(s.missing, vec![("fdtree-fc".to_string(), "not in this build".to_string())]);
    }

    #[test]
    fn scale_takes_lamina_engines_then_the_tuned_lsms_and_the_other_peers() {
        let offered = names(&[
            "fdtree-fc",
            "fdtree-xm",
            "fdtree-ds",
            "nbtree",
            "latree",
            "latree-btree",
            "trie",
            "mem",
            "rocksdb",
            "rocksdb-tuned",
            "leveldb",
            "leveldb-tuned",
            "lmdb",
            "bdb",
            "wiredtiger-btree",
            "wiredtiger-lsm",
        ]);
        let s = Experiment::Scale.select_engines(&offered);
        let expected = names(&[
            "fdtree-fc",
            "fdtree-xm",
            "nbtree",
            "latree",
            "trie",
            "mem",
            "rocksdb-tuned",
            "leveldb-tuned",
            "lmdb",
            "bdb",
            "wiredtiger-btree",
            "wiredtiger-lsm",
        ]);
        assert_eq!((s.engines, s.missing), (expected, vec![]));
        let lamina_only = Experiment::Scale.select_engines(&names(&["fdtree-fc", "mem"]));
        assert_eq!(lamina_only.engines, names(&["fdtree-fc", "mem"]));
        assert_eq!(lamina_only.missing.len(), 4 + SCALE_PEERS.len());
    }

    #[test]
    fn contest_and_figure1_take_every_engine_that_accepts_the_settings() {
        let offered = names(&["fdtree-xm", "mem", "bdb"]);
        for e in [Experiment::Contest, Experiment::FdfcFigure1] {
            assert_eq!(e.select_engines(&offered), EngineSelection::default());
        }
    }
}
