//! `--experiment NAME`: scaled-down reproductions of the papers' headline experiments, each
//! a list of [`Phase`]s (one `run_bench` comparison each) run against the same engines.
//!
//! - `fdfc-figure1`: FD+FC Figure 1, "completion time of an insertion request ... over
//!   the course of two million insertions, starting with an empty index ... grouped into
//!   buckets each containing 10,000 requests; we plot the longest observed time per
//!   request in each bucket". Scaled down: 200,000 uniform random inserts (the `insert`
//!   workload), one thread, buckets of `--ops`/200 (1,000; the paper's 2,000,000 inserts in
//!   buckets of 10,000 are `--ops 2000000`).
//! - `nbtree-insert`: NB-tree section 6.1 (8-byte uniform random keys, 128-byte values).
//!   Phase `insert`: `--ops` inserts (500,000 by default, 68 MB of raw data) into an empty index, split into
//!   [`NBTREE_STEPS`] data-size steps whose mean and maximum insert time are Figures 6-7.
//!   Phases `query-N`: n_Q = 10^4 lookups of uniformly chosen existing keys after loading
//!   N records with the insert phase's random keys (workload `insert-query`), for N at a
//!   quarter, half and all of `--ops` (Figures 8-9).
//! - `fdfc-vs-btree`: FD+FC section 5.3, Figure 10: G_R with lookup fraction W_l in
//!   [`FDFC_LOOKUP_RATIOS`], insertions and deletions splitting the rest equally, 8 client
//!   threads (section 5's default), 200,000 requests per ratio over `--preload` keys
//!   (1,000,000 by default, so the index outgrows the 15 MiB cache as in the paper).
//! - `fdfc-figure6`: FD+FC section 5.1, Figure 6: FD+XM vs FD+DS vs FD+FC on G_R with
//!   lookup fraction W_l in [`FDFC_LOOKUP_RATIOS`], insertions and deletions splitting the
//!   rest equally, over `--preload` keys (2,000,000 by default) with `--ops` requests per
//!   ratio (2,000,000), after a warm-up of 10,000 (section 5: "measure performance after a
//!   warm-up of 10K requests"). Section 5's open system: an injection thread fills Q_r and
//!   Q_w (|Q_r| + |Q_w| = 5000, split W_l : (W_i + W_d)), served by T_r = 6 and T_w = 2
//!   worker threads; R_p is what the figure plots. Engines get the paper's defaults scaled
//!   to lamina: kappa_0 = 256 KiB of L_0 memory, gamma = 24, a 15 MiB cache, and keys of
//!   at most [`FIGURE6_KEY_BYTES_MAX`] bytes so that gamma = 24 fits lamina's 32 KiB blocks
//!   ([`Experiment::engine_tuning`]; the command line's flags override them).
//! - `contest`: the SIGMOD 2011 contest mix (prefix-tree paper, section 4, Table 1) at 32
//!   client threads with every write durable (`Durability::Sync`) over 100,000 preloaded
//!   keys; 20,000 measured requests per engine by default (after 2,000 warm-up), so that
//!   the slowest durable engines (LMDB, one synced writer at a time) finish in seconds to
//!   a minute: few requests per client thread, so tails rest on few samples.
//! - `scale`: lamina's own target experiment (docs/DESIGN.md "Targets", issue 22): into one
//!   empty store per engine, `--ops` N uniform random inserts (1,000,000 by default) of
//!   8-byte keys with 128-byte values from one thread, then min(N, 1,000,000) lookups of
//!   inserted keys, then min(N, 200,000) inserts of new keys from 2 threads (closed loop),
//!   then close and a timed reopen (recovery) that must find a sample of the keys. Every
//!   engine gets a 64 MiB cache and a 32 MiB memory budget ([`SCALE_CACHE_BYTES`],
//!   [`SCALE_MEMORY_BUDGET_BYTES`]; the flags override). Its phases share one store, so
//!   `experiment::scale` runs them, not `run_bench`.

use std::{fmt, str::FromStr};

use lamina_core::{Durability, Error, Result};

use crate::{Mix, WorkloadConfig, WorkloadKind, runner::RunnerKind};

/// Data-size steps of `nbtree-insert`'s insert phase (one every 10% of the inserts).
pub const NBTREE_STEPS: u64 = 10;
/// n_Q of NB-tree section 6.1: queries per query workload.
pub const NBTREE_QUERIES: u64 = 10_000;
/// Data sizes of the query phases, as fractions of the insert count.
pub const NBTREE_QUERY_FRACTIONS: [(u64, u64); 3] = [(1, 4), (1, 2), (1, 1)];
/// W_l of `fdfc-vs-btree` (FD+FC Figure 10's x axis, scaled to five points).
pub const FDFC_LOOKUP_RATIOS: [f64; 5] = [0.0, 0.2, 0.5, 0.8, 1.0];
/// Client threads of `fdfc-vs-btree` (FD+FC section 5's default worker count).
pub const FDFC_THREADS: usize = 8;
/// Figure 6's T_r and T_w (FD+FC section 5: "we set T_r = 6 and T_w = 2").
pub const FIGURE6_READERS: usize = 6;
/// See [`FIGURE6_READERS`].
pub const FIGURE6_WRITERS: usize = 2;
/// Section 5's |Q_r| + |Q_w|.
pub const FIGURE6_QUEUE_SLOTS: usize = 5000;
/// Section 5's default kappa_0, 256 KB, as L_0's memory budget.
pub const FIGURE6_MEMORY_BUDGET_BYTES: u64 = 256 << 10;
/// Section 5's default size ratio gamma.
pub const FIGURE6_SIZE_RATIO: u32 = 24;
/// FD+tree's longest key in `fdfc-figure6`: with gamma = 24 a block must hold 49 fences of
/// the longest key, which the default 32 KiB blocks cannot for the API's 1 KiB keys; G_R's
/// keys are 8 bytes (the paper's are fixed-size), so 256 bytes costs nothing.
pub const FIGURE6_KEY_BYTES_MAX: usize = 256;
/// Section 5's default buffer cache, 15 MB.
pub const FIGURE6_CACHE_BYTES: u64 = 15 << 20;
/// Buckets of `fdfc-figure1` (its 2,000,000 inserts in buckets of 10,000).
pub const FIGURE1_BUCKETS: u64 = 200;
/// Client threads of the contest (prefix-tree paper, section 4).
pub const CONTEST_THREADS: usize = 32;
/// `scale`'s inserts N when `--ops` is not given: small enough for a quick run (issue 22's
/// headline sizes are `--ops 10000000` and `--ops 50000000`).
pub const SCALE_INSERTS_DEFAULT: u64 = 1_000_000;
/// Most lookups of `scale`'s lookup phase (fewer when N is smaller: min(N, this)).
pub const SCALE_LOOKUPS_MAX: u64 = 1_000_000;
/// Most inserts of `scale`'s two-thread phase (fewer when N is smaller: min(N, this)).
pub const SCALE_CONCURRENT_INSERTS_MAX: u64 = 200_000;
/// Client threads of `scale`'s concurrent insert phase.
pub const SCALE_CONCURRENT_THREADS: usize = 2;
/// Buckets of `scale`'s insert phase: the max insert latency per 1% of the inserts.
pub const SCALE_BUCKETS: u64 = 100;
/// `scale`'s block cache for every engine.
pub const SCALE_CACHE_BYTES: u64 = 64 << 20;
/// `scale`'s memory budget for every engine (L_0, write buffers; B-tree peers' cache gets
/// it added, see docs/peers.md).
pub const SCALE_MEMORY_BUDGET_BYTES: u64 = 32 << 20;

/// A named experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// FD+FC Figure 1: max insert latency per bucket.
    FdfcFigure1,
    /// NB-tree Figures 6-9: insert and query time vs data size.
    NbtreeInsert,
    /// FD+FC Figure 10: G_R across lookup ratios, FD+FC vs Berkeley DB.
    FdfcVsBtree,
    /// FD+FC Figure 6: G_R across lookup ratios, FD+XM vs FD+DS vs FD+FC.
    FdfcFigure6,
    /// SIGMOD 2011 contest mix, 32 threads, durable writes.
    Contest,
    /// N random inserts, lookups, 2-thread inserts and a reopen, on one store per engine.
    Scale,
}

/// What a phase is for, which decides how the report aggregates it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PhaseRole {
    /// A plain comparison (table with ratios).
    Single,
    /// Inserts split into data-size steps (`steps` buckets of the timeline).
    InsertSteps {
        /// Number of steps.
        steps: u64,
    },
    /// Lookups over an index of `records` records.
    QueryAtSize {
        /// Data size in records.
        records: u64,
    },
    /// G_R at lookup fraction W_l.
    LookupRatio {
        /// W_l.
        lookup_ratio: f64,
    },
}

impl fmt::Display for PhaseRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhaseRole::Single => f.write_str("one comparison"),
            PhaseRole::InsertSteps { steps } => write!(f, "inserts in {steps} data-size steps"),
            PhaseRole::QueryAtSize { records } => write!(f, "lookups over {records} records"),
            PhaseRole::LookupRatio { lookup_ratio } => write!(f, "G_R at W_l = {lookup_ratio}"),
        }
    }
}

/// One comparison of an experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// File-name-safe name (`insert`, `query-50000`, `wl-0.2`, ...).
    pub name: String,
    /// How the report reads it.
    pub role: PhaseRole,
    /// The workload.
    pub workload: WorkloadConfig,
    /// How requests are issued unless the command line chose a runner.
    pub runner: RunnerKind,
    /// Measured requests.
    pub ops: u64,
    /// Warm-up requests.
    pub warmup_ops: u64,
    /// K of the max-latency series.
    pub bucket_ops: u64,
    /// Durability the experiment fixes (the contest's durable writes), if any.
    pub durability: Option<Durability>,
}

/// The command line's say in an experiment's size (`None`: the experiment's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scale {
    /// `--ops`: inserts (nbtree-insert) or measured requests per phase.
    pub ops: Option<u64>,
    /// `--preload`: initial records (not nbtree-insert, which derives its sizes from ops).
    pub preload: Option<u64>,
    /// `--key-bytes`.
    pub key_bytes: Option<usize>,
    /// `--value-bytes`.
    pub value_bytes: Option<usize>,
}

/// Engine settings an experiment fixes unless the command line gives them (`None`: the
/// bench's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineTuning {
    /// L_0 / buffer memory.
    pub memory_budget_bytes: Option<u64>,
    /// Block cache.
    pub cache_bytes: Option<u64>,
    /// FD+tree gamma.
    pub fdtree_size_ratio: Option<u32>,
    /// FD+tree's longest key.
    pub fdtree_key_bytes_max: Option<usize>,
}

/// One G_R phase per lookup fraction W_l of [`FDFC_LOOKUP_RATIOS`] (FD+FC section 5:
/// insertions and deletions split the rest equally), `ops` requests after `preload` keys.
fn gr_lookup_ratio_phases(
    seed: u64,
    preload: u64,
    ops: u64,
    runner: RunnerKind,
    sized: &dyn Fn(WorkloadConfig) -> WorkloadConfig,
) -> Vec<Phase> {
    FDFC_LOOKUP_RATIOS
        .iter()
        .map(|&lookup_ratio| {
            let mut w = WorkloadConfig::new(WorkloadKind::Gr, seed);
            w.preload = preload;
            let rest = (1.0 - lookup_ratio) / 2.0;
            w.mix = Mix { weights: [lookup_ratio, rest, rest] };
            Phase {
                name: format!("wl-{lookup_ratio:.1}"),
                role: PhaseRole::LookupRatio { lookup_ratio },
                workload: sized(w),
                runner,
                ops,
                warmup_ops: (ops / 20).min(10_000),
                bucket_ops: step_ops(ops, 500),
                durability: None,
            }
        })
        .collect()
}

/// `scale`'s phases, in the order they run on each engine's one store: `insert` (N inserts,
/// one thread, in [`SCALE_BUCKETS`] buckets), `lookup` (one thread), `insert-2t`
/// ([`SCALE_CONCURRENT_THREADS`] threads). The workload configurations carry the seed and
/// the key and value sizes; `experiment::scale` generates the requests (keys numbered so
/// that lookups and the later inserts can name inserted and new keys without remembering
/// them).
fn scale_phases(
    seed: u64,
    scale: Scale,
    sized: &dyn Fn(WorkloadConfig) -> WorkloadConfig,
) -> Result<Vec<Phase>> {
    if scale.preload.is_some() {
        return Err(Error::option(
            "preload",
            "scale starts from an empty store and loads it with its --ops inserts",
        ));
    }
    let inserts = scale.ops.unwrap_or(SCALE_INSERTS_DEFAULT);
    if inserts == 0 {
        return Err(Error::option("ops", "must be at least 1"));
    }
    let mut workload = WorkloadConfig::new(WorkloadKind::Insert, seed);
    workload.preload = 0;
    let workload = sized(workload);
    if workload.key_bytes < 8 {
        return Err(Error::option(
            "key-bytes",
            format!(
                "scale numbers its keys with 8 bytes (so every insert is a new key); --key-bytes must be at least 8, got {}",
                workload.key_bytes
            ),
        ));
    }
    let phase = |name: &str, role, threads, ops| Phase {
        name: name.into(),
        role,
        workload: workload.clone(),
        runner: RunnerKind::Closed { threads },
        ops,
        warmup_ops: 0, // every request is part of the experiment: the store is built by them
        bucket_ops: step_ops(ops, SCALE_BUCKETS),
        durability: None, // the command line's, `none` by default
    };
    Ok(vec![
        phase("insert", PhaseRole::InsertSteps { steps: SCALE_BUCKETS }, 1, inserts),
        phase("lookup", PhaseRole::Single, 1, inserts.min(SCALE_LOOKUPS_MAX)),
        phase(
            "insert-2t",
            PhaseRole::Single,
            SCALE_CONCURRENT_THREADS,
            inserts.min(SCALE_CONCURRENT_INSERTS_MAX),
        ),
    ])
}

/// What an experiment fixes for its first phase (kept for flag validation).
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentPlan {
    /// The workload.
    pub workload: WorkloadConfig,
    /// The runner.
    pub runner: RunnerKind,
    /// Measured requests unless overridden.
    pub ops: u64,
    /// K of the max-latency series.
    pub bucket_ops: u64,
    /// Warm-up requests.
    pub warmup_ops: u64,
}

/// `total` requests in `steps` steps: requests per step (the last may be short).
pub fn step_ops(total: u64, steps: u64) -> u64 {
    assert!(steps > 0, "at least one step");
    total.div_ceil(steps).max(1)
}

impl Experiment {
    /// Every experiment.
    pub const ALL: [Experiment; 6] = [
        Experiment::FdfcFigure1,
        Experiment::NbtreeInsert,
        Experiment::FdfcVsBtree,
        Experiment::FdfcFigure6,
        Experiment::Contest,
        Experiment::Scale,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::FdfcFigure1 => "fdfc-figure1",
            Experiment::NbtreeInsert => "nbtree-insert",
            Experiment::FdfcVsBtree => "fdfc-vs-btree",
            Experiment::FdfcFigure6 => "fdfc-figure6",
            Experiment::Contest => "contest",
            Experiment::Scale => "scale",
        }
    }

    /// The paper figure it reproduces, for report titles.
    pub fn title(self) -> &'static str {
        match self {
            Experiment::FdfcFigure1 => "FD+FC Figure 1: max insert latency per bucket",
            Experiment::NbtreeInsert => {
                "NB-tree Figures 6-9: insert and query time vs data size (8-byte keys, 128-byte values)"
            }
            Experiment::FdfcVsBtree => {
                "FD+FC Figure 10: G_R across lookup ratios, FD+tree vs Berkeley DB"
            }
            Experiment::FdfcFigure6 => {
                "FD+FC Figure 6: G_R across lookup ratios, FD+XM vs FD+DS vs FD+FC (kappa_0 256 KiB, gamma 24, 15 MiB cache)"
            }
            Experiment::Contest => {
                "SIGMOD 2011 contest mix, 32 client threads, every write durable"
            }
            Experiment::Scale => {
                "Scale: N random inserts (8-byte keys, 128-byte values) into an empty store, \
                 lookups, 2-thread inserts and a timed reopen, on one store per engine"
            }
        }
    }

    /// Whether the phases continue on one store per engine (`scale`) instead of each
    /// starting from an empty one.
    pub fn shares_store(self) -> bool {
        self == Experiment::Scale
    }

    /// Engine settings the experiment fixes unless the command line gives them.
    pub fn engine_tuning(self) -> EngineTuning {
        match self {
            Experiment::FdfcFigure6 => EngineTuning {
                memory_budget_bytes: Some(FIGURE6_MEMORY_BUDGET_BYTES),
                cache_bytes: Some(FIGURE6_CACHE_BYTES),
                fdtree_size_ratio: Some(FIGURE6_SIZE_RATIO),
                fdtree_key_bytes_max: Some(FIGURE6_KEY_BYTES_MAX),
            },
            Experiment::Scale => EngineTuning {
                memory_budget_bytes: Some(SCALE_MEMORY_BUDGET_BYTES),
                cache_bytes: Some(SCALE_CACHE_BYTES),
                ..EngineTuning::default()
            },
            _ => EngineTuning::default(),
        }
    }

    /// The phases with `seed`, scaled by the command line.
    #[allow(clippy::too_many_lines)] // one match arm per experiment, each a literal table
    pub fn phases(self, seed: u64, scale: Scale) -> Result<Vec<Phase>> {
        let sized = |mut w: WorkloadConfig| {
            if let Some(k) = scale.key_bytes {
                w.key_bytes = k;
            }
            if let Some(v) = scale.value_bytes {
                w.value_bytes = v;
            }
            w
        };
        let phases = match self {
            Experiment::FdfcFigure1 => {
                let mut w = WorkloadConfig::new(WorkloadKind::Insert, seed);
                w.preload = scale.preload.unwrap_or(0); // the figure starts from an empty index
                let ops = scale.ops.unwrap_or(200_000);
                vec![Phase {
                    name: "insert".into(),
                    role: PhaseRole::Single,
                    workload: sized(w),
                    runner: RunnerKind::Closed { threads: 1 },
                    ops,
                    warmup_ops: 0,
                    bucket_ops: step_ops(ops, FIGURE1_BUCKETS),
                    durability: None,
                }]
            }
            Experiment::NbtreeInsert => {
                if scale.preload.is_some() {
                    return Err(Error::option(
                        "preload",
                        "nbtree-insert starts from an empty index and sizes its query phases from --ops",
                    ));
                }
                let inserts = scale.ops.unwrap_or(500_000);
                let mut insert = WorkloadConfig::new(WorkloadKind::Insert, seed);
                insert.preload = 0;
                let mut phases = vec![Phase {
                    name: "insert".into(),
                    role: PhaseRole::InsertSteps { steps: NBTREE_STEPS },
                    workload: sized(insert),
                    runner: RunnerKind::Closed { threads: 1 },
                    ops: inserts,
                    warmup_ops: 0, // Figure 6 starts from an empty index
                    bucket_ops: step_ops(inserts, NBTREE_STEPS),
                    durability: None,
                }];
                for (num, den) in NBTREE_QUERY_FRACTIONS {
                    let records = (inserts * num / den).max(1);
                    let mut query = WorkloadConfig::new(WorkloadKind::InsertQuery, seed);
                    query.preload = records;
                    phases.push(Phase {
                        name: format!("query-{records}"),
                        role: PhaseRole::QueryAtSize { records },
                        workload: sized(query),
                        runner: RunnerKind::Closed { threads: 1 },
                        ops: NBTREE_QUERIES,
                        warmup_ops: 0, // the paper measures n_Q queries on the built index
                        bucket_ops: step_ops(NBTREE_QUERIES, NBTREE_STEPS),
                        durability: None,
                    });
                }
                phases
            }
            Experiment::FdfcVsBtree => {
                let ops = scale.ops.unwrap_or(200_000);
                let preload = scale.preload.unwrap_or(1_000_000);
                let runner = RunnerKind::Closed { threads: FDFC_THREADS };
                gr_lookup_ratio_phases(seed, preload, ops, runner, &sized)
            }
            Experiment::FdfcFigure6 => {
                let ops = scale.ops.unwrap_or(2_000_000);
                let preload = scale.preload.unwrap_or(2_000_000);
                let runner = RunnerKind::Open {
                    readers: FIGURE6_READERS,
                    writers: FIGURE6_WRITERS,
                    rate_per_s: None,
                    queue_slots: FIGURE6_QUEUE_SLOTS,
                };
                gr_lookup_ratio_phases(seed, preload, ops, runner, &sized)
            }
            Experiment::Contest => {
                let ops = scale.ops.unwrap_or(20_000);
                let mut w = WorkloadConfig::new(WorkloadKind::Contest, seed);
                w.preload = scale.preload.unwrap_or(100_000);
                vec![Phase {
                    name: "contest".into(),
                    role: PhaseRole::Single,
                    workload: sized(w),
                    runner: RunnerKind::Closed { threads: CONTEST_THREADS },
                    ops,
                    warmup_ops: ops / 10,
                    bucket_ops: step_ops(ops, 100),
                    durability: Some(Durability::Sync),
                }]
            }
            Experiment::Scale => scale_phases(seed, scale, &sized)?,
        };
        for phase in &phases {
            phase.workload.validate()?;
        }
        Ok(phases)
    }

    /// The first phase's settings with `seed` at `scale` (what the command line validates
    /// its flags against, and runs as is for a one-phase experiment like `fdfc-figure1`).
    pub fn plan(self, seed: u64, scale: Scale) -> Result<ExperimentPlan> {
        let first = self.phases(seed, scale)?.swap_remove(0);
        Ok(ExperimentPlan {
            workload: first.workload,
            runner: first.runner,
            ops: first.ops,
            bucket_ops: first.bucket_ops,
            warmup_ops: first.warmup_ops,
        })
    }
}

impl fmt::Display for Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Experiment {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Experiment::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
            let names: Vec<_> = Experiment::ALL.iter().map(|e| e.name()).collect();
            Error::option(
                "experiment",
                format!("unknown experiment `{s}`; known: {}", names.join(", ")),
            )
        })
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip_and_unknown_names_are_refused() {
        for e in Experiment::ALL {
            assert_eq!(e.name().parse::<Experiment>().unwrap(), e);
        }
        assert!("nope".parse::<Experiment>().unwrap_err().to_string().contains("nbtree-insert"));
    }

    #[test]
    fn step_ops_covers_the_total_in_at_most_the_given_steps() {
        assert_eq!(step_ops(200_000, 10), 20_000);
        assert_eq!(step_ops(105, 10), 11); // 9 steps of 11 and one of 6
        assert_eq!(step_ops(5, 10), 1);
        for (total, steps) in [(1, 1), (7, 3), (1000, 10), (999, 7)] {
            let k = step_ops(total, steps);
            assert!(total.div_ceil(k) <= steps && k * steps >= total, "{total} {steps}");
        }
    }

    #[test]
    fn nbtree_insert_is_inserts_in_ten_steps_then_queries_at_three_sizes() {
        let phases = Experiment::NbtreeInsert.phases(7, Scale::default()).unwrap();
        let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["insert", "query-125000", "query-250000", "query-500000"]);
        let insert = &phases[0];
        assert_eq!(insert.workload.kind, WorkloadKind::Insert);
        assert_eq!((insert.workload.key_bytes, insert.workload.value_bytes), (8, 128));
        assert_eq!((insert.workload.preload, insert.ops, insert.bucket_ops), (0, 500_000, 50_000));
        assert_eq!(insert.role, PhaseRole::InsertSteps { steps: 10 });
        for q in &phases[1..] {
            assert_eq!(q.workload.kind, WorkloadKind::InsertQuery);
            assert_eq!((q.workload.key_bytes, q.workload.value_bytes), (8, 128));
            assert_eq!(q.ops, NBTREE_QUERIES);
            assert_eq!(q.role, PhaseRole::QueryAtSize { records: q.workload.preload });
        }
        let scaled =
            Experiment::NbtreeInsert.phases(7, Scale { ops: Some(1000), ..Scale::default() });
        let scaled = scaled.unwrap();
        assert_eq!((scaled[0].ops, scaled[0].bucket_ops), (1000, 100));
        assert_eq!(scaled[3].workload.preload, 1000);
        let preload = Scale { preload: Some(5), ..Scale::default() };
        assert!(Experiment::NbtreeInsert.phases(7, preload).is_err());
    }

    #[test]
    fn fdfc_vs_btree_sweeps_the_lookup_ratio_with_equal_inserts_and_deletes() {
        let phases = Experiment::FdfcVsBtree.phases(7, Scale::default()).unwrap();
        assert_eq!(phases.len(), FDFC_LOOKUP_RATIOS.len());
        for (p, wl) in phases.iter().zip(FDFC_LOOKUP_RATIOS) {
            let [l, i, d] = p.workload.mix.normalized();
            assert!((l - wl).abs() < 1e-12 && (i - d).abs() < 1e-12 && (l + i + d - 1.0) < 1e-12);
            assert_eq!(p.role, PhaseRole::LookupRatio { lookup_ratio: wl });
            assert_eq!(p.runner, RunnerKind::Closed { threads: FDFC_THREADS });
            assert_eq!(p.workload.preload, 1_000_000);
        }
        assert_eq!(phases[1].name, "wl-0.2");
    }

    #[test]
    fn contest_is_durable_at_32_threads() {
        let phases = Experiment::Contest.phases(7, Scale::default()).unwrap();
        let [p] = phases.as_slice() else { panic!("one phase") };
        assert_eq!(p.workload.kind, WorkloadKind::Contest);
        assert_eq!(p.runner, RunnerKind::Closed { threads: 32 });
        assert_eq!(p.durability, Some(Durability::Sync));
        let plan = Experiment::Contest.plan(7, Scale::default()).unwrap();
        assert_eq!(plan.runner, RunnerKind::Closed { threads: 32 });
    }

    #[test]
    fn figure1_buckets_are_a_two_hundredth_of_the_inserts() {
        let fig1 = Experiment::FdfcFigure1.plan(7, Scale::default()).unwrap();
        assert_eq!((fig1.ops, fig1.bucket_ops, fig1.warmup_ops), (200_000, 1_000, 0));
        let paper = Scale { ops: Some(2_000_000), ..Scale::default() };
        let fig1 = Experiment::FdfcFigure1.plan(7, paper).unwrap();
        assert_eq!((fig1.ops, fig1.bucket_ops), (2_000_000, 10_000));
    }

    #[test]
    fn scale_is_inserts_in_one_percent_buckets_then_lookups_then_two_thread_inserts() {
        let phases = Experiment::Scale.phases(7, Scale::default()).unwrap();
        let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["insert", "lookup", "insert-2t"]);
        let [insert, lookup, concurrent] = phases.as_slice() else { panic!("three phases") };
        assert_eq!((insert.ops, insert.bucket_ops), (1_000_000, 10_000));
        assert_eq!(insert.role, PhaseRole::InsertSteps { steps: 100 });
        assert_eq!((insert.workload.key_bytes, insert.workload.value_bytes), (8, 128));
        assert_eq!(insert.workload.preload, 0);
        assert_eq!(insert.runner, RunnerKind::Closed { threads: 1 });
        assert_eq!((lookup.ops, lookup.runner), (1_000_000, RunnerKind::Closed { threads: 1 }));
        assert_eq!(concurrent.ops, 200_000);
        assert_eq!(concurrent.runner, RunnerKind::Closed { threads: 2 });
        assert!(phases.iter().all(|p| p.warmup_ops == 0 && p.durability.is_none()));
        let big = Experiment::Scale.phases(7, Scale { ops: Some(50_000_000), ..Scale::default() });
        let big = big.unwrap();
        assert_eq!((big[0].ops, big[0].bucket_ops, big[1].ops), (50_000_000, 500_000, 1_000_000));
        let small = Experiment::Scale.phases(7, Scale { ops: Some(150), ..Scale::default() });
        let small = small.unwrap();
        assert_eq!((small[0].bucket_ops, small[1].ops, small[2].ops), (2, 150, 150));
        let preload = Scale { preload: Some(5), ..Scale::default() };
        assert!(Experiment::Scale.phases(7, preload).is_err());
        let short = Scale { key_bytes: Some(4), ..Scale::default() };
        let err = Experiment::Scale.phases(7, short).unwrap_err().to_string();
        assert!(err.contains("at least 8"), "{err}");
        let tuning = Experiment::Scale.engine_tuning();
        assert_eq!(
            (tuning.cache_bytes, tuning.memory_budget_bytes),
            (Some(64 << 20), Some(32 << 20))
        );
        assert!(Experiment::Scale.shares_store() && !Experiment::Contest.shares_store());
    }

    #[test]
    fn figure6_is_the_open_system_over_two_million_keys_with_the_papers_tuning() {
        let phases = Experiment::FdfcFigure6.phases(7, Scale::default()).unwrap();
        assert_eq!(phases.len(), FDFC_LOOKUP_RATIOS.len());
        for (p, wl) in phases.iter().zip(FDFC_LOOKUP_RATIOS) {
            let [l, i, d] = p.workload.mix.normalized();
            assert!((l - wl).abs() < 1e-12 && (i - d).abs() < 1e-12);
            assert_eq!((p.workload.preload, p.ops, p.warmup_ops), (2_000_000, 2_000_000, 10_000));
            let open =
                RunnerKind::Open { readers: 6, writers: 2, rate_per_s: None, queue_slots: 5000 };
            assert_eq!(p.runner, open);
        }
        let small = Scale { ops: Some(1000), preload: Some(500), ..Scale::default() };
        let phases = Experiment::FdfcFigure6.phases(7, small).unwrap();
        assert_eq!(
            (phases[0].workload.preload, phases[0].ops, phases[0].warmup_ops),
            (500, 1000, 50)
        );
        let tuning = Experiment::FdfcFigure6.engine_tuning();
        assert_eq!(tuning.memory_budget_bytes, Some(256 << 10));
        assert_eq!((tuning.fdtree_size_ratio, tuning.cache_bytes), (Some(24), Some(15 << 20)));
        assert_eq!(tuning.fdtree_key_bytes_max, Some(FIGURE6_KEY_BYTES_MAX));
        assert_eq!(Experiment::Contest.engine_tuning(), EngineTuning::default());
    }
}
