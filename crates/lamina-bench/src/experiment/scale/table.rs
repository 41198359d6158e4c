//! `scale`'s per-engine table: the three phases' figures side by side with the reopen and
//! the footprints, and every figure also as a ratio to the best peer in its column (docs/DESIGN.md
//! "Targets" are such ratios).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::run::RoundExtras;
use crate::{
    PeerFactory,
    experiment::report::PhaseFailure,
    report::{BenchReport, EngineSummary, fmt_bytes},
};

/// One phase's figures for one engine (rounds: mean throughput, pooled latencies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageFigures {
    /// Requests per second.
    pub throughput_ops_s: f64,
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// 99.99th percentile, microseconds.
    pub p9999_us: f64,
    /// Largest, microseconds.
    pub max_us: f64,
    /// `throughput_ops_s` over the best (highest) peer's; null without a peer.
    pub throughput_x_best_peer: Option<f64>,
    /// `p9999_us` over the best (lowest) peer's.
    pub p9999_x_best_peer: Option<f64>,
    /// `max_us` over the best (lowest) peer's.
    pub max_x_best_peer: Option<f64>,
}

impl StageFigures {
    fn of(summary: &EngineSummary) -> Self {
        StageFigures {
            throughput_ops_s: summary.throughput_ops_s,
            mean_us: summary.all.mean_us,
            p99_us: summary.all.p99_us,
            p9999_us: summary.all.p9999_us,
            max_us: summary.all.max_us,
            throughput_x_best_peer: None,
            p9999_x_best_peer: None,
            max_x_best_peer: None,
        }
    }
}

/// One engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleRow {
    /// Engine name.
    pub engine: String,
    /// Whether it is a peer (the ratios' reference set).
    pub peer: bool,
    /// The N single-thread inserts; null if the engine failed before finishing them.
    pub insert: Option<StageFigures>,
    /// The lookups.
    pub lookup: Option<StageFigures>,
    /// The two-thread inserts.
    pub insert_2t: Option<StageFigures>,
    /// Write amplification of the N inserts (bytes written over key and value bytes).
    pub write_amplification: Option<f64>,
    /// Largest allocated size of the directory over every phase and after the final close.
    pub disk_peak_bytes: u64,
    /// Largest resident set of the process over every phase.
    pub rss_peak_bytes: u64,
    /// The process's resident set just before the engine was opened (largest over rounds),
    /// which `rss_peak_bytes` includes: the bench's own and what earlier engines left.
    pub rss_at_open_bytes: u64,
    /// Allocated directory bytes right after the N inserts, per record (mean over rounds).
    pub disk_bytes_per_record: Option<f64>,
    /// `Stats::memory_bytes` right after the N inserts, per record; null when the engine
    /// reports none.
    pub memory_bytes_per_record: Option<f64>,
    /// Allocated directory bytes after the final close, per record of all the inserts
    /// (mean over rounds): what the store keeps on disk once everything is persisted.
    pub disk_bytes_per_record_closed: Option<f64>,
    /// Seconds to close after the last phase (mean over rounds).
    pub close_s: Option<f64>,
    /// Seconds to reopen: recovery time (mean over rounds).
    pub reopen_s: Option<f64>,
    /// Keys read back and compared after reopen (fewest of any round).
    pub keys_verified: Option<u64>,
    /// The engine's failure, if it failed (the phases after it have no figures).
    pub failed: Option<PhaseFailure>,
}

/// The best peer of a column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Best {
    /// The peer.
    pub engine: String,
    /// Its value.
    pub value: f64,
}

/// The best peer of each ratio column (highest rate, lowest latency); null without peers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BestPeers {
    /// Highest inserts/s of the N inserts.
    pub insert_ops_s: Option<Best>,
    /// Lowest insert p99.99.
    pub insert_p9999_us: Option<Best>,
    /// Lowest largest insert latency.
    pub insert_max_us: Option<Best>,
    /// Highest lookups/s.
    pub lookup_ops_s: Option<Best>,
    /// Lowest lookup p99.99.
    pub lookup_p9999_us: Option<Best>,
    /// Highest two-thread inserts/s.
    pub insert_2t_ops_s: Option<Best>,
    /// Lowest two-thread insert p99.99.
    pub insert_2t_p9999_us: Option<Best>,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleTable {
    /// N: single-thread inserts into the empty store.
    pub inserts: u64,
    /// Lookups of inserted keys.
    pub lookups: u64,
    /// Inserts of new keys from `concurrent_threads` threads.
    pub concurrent_inserts: u64,
    /// Threads of those inserts.
    pub concurrent_threads: usize,
    /// Key plus value bytes of a record (136 for 8 + 128): the raw size per record.
    pub record_bytes: u64,
    /// The best peer of each ratio column.
    pub best_peers: BestPeers,
    /// One row per engine, in run order.
    pub engines: Vec<ScaleRow>,
    /// What each round measured besides the phases (per engine and round).
    pub rounds: Vec<RoundExtras>,
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0u32), |(s, c), v| (s + v, c + 1));
    (count > 0).then(|| sum / f64::from(count))
}

fn best(
    rows: &[ScaleRow],
    pick: impl Fn(&ScaleRow) -> Option<f64>,
    lower_is_better: bool,
) -> Option<Best> {
    rows.iter()
        .filter(|r| r.peer)
        .filter_map(|r| pick(r).map(|v| Best { engine: r.engine.clone(), value: v }))
        .reduce(|a, b| {
            let b_better = if lower_is_better { b.value < a.value } else { b.value > a.value };
            if b_better { b } else { a }
        })
}

fn over(value: f64, best: Option<&Best>) -> Option<f64> {
    best.filter(|b| b.value > 0.0).map(|b| value / b.value)
}

/// `engine`'s row (ratios not yet set).
fn row(
    engine: &str,
    phases: [&BenchReport; 3],
    extras: &[RoundExtras],
    failed: &[PhaseFailure],
) -> ScaleRow {
    let [insert, _, concurrent] = phases;
    let inserts = insert.params.ops.unwrap_or(0);
    let records_closed = inserts + concurrent.params.ops.unwrap_or(0);
    let stages = phases.map(|report| report.summary.iter().find(|s| s.engine == engine).cloned());
    // Rounds whose inserts completed (their after-load figures are real).
    let loaded: Vec<&RoundExtras> = extras
        .iter()
        .filter(|x| {
            x.engine == engine
                && insert.runs.iter().any(|r| r.engine == engine && r.round == x.round)
        })
        .collect();
    let per_record = |bytes: u64, records: u64| bytes as f64 / records.max(1) as f64;
    let fail = failed.iter().find(|f| f.failure.engine == engine).cloned();
    let mine = || extras.iter().filter(|x| x.engine == engine);
    ScaleRow {
        engine: engine.to_string(),
        peer: PeerFactory::is_peer(engine),
        insert: stages[0].as_ref().map(StageFigures::of),
        lookup: stages[1].as_ref().map(StageFigures::of),
        insert_2t: stages[2].as_ref().map(StageFigures::of),
        write_amplification: stages[0].as_ref().map(|s| s.write_amplification),
        disk_peak_bytes: stages
            .iter()
            .flatten()
            .map(|s| s.disk_peak_bytes)
            .chain(mine().filter_map(|x| x.disk_after_close_bytes))
            .max()
            .unwrap_or(0),
        rss_peak_bytes: stages.iter().flatten().map(|s| s.rss_peak_bytes).max().unwrap_or(0),
        rss_at_open_bytes: mine().map(|x| x.rss_at_open_bytes).max().unwrap_or(0),
        disk_bytes_per_record: mean(
            loaded.iter().map(|x| per_record(x.disk_after_load_bytes, inserts)),
        ),
        memory_bytes_per_record: mean(
            loaded
                .iter()
                .filter(|x| x.memory_after_load_bytes > 0)
                .map(|x| per_record(x.memory_after_load_bytes, inserts)),
        ),
        disk_bytes_per_record_closed: mean(
            mine().filter_map(|x| x.disk_after_close_bytes.map(|b| per_record(b, records_closed))),
        ),
        close_s: mean(mine().filter_map(|x| x.close_s)),
        reopen_s: mean(mine().filter_map(|x| x.reopen_s)),
        keys_verified: if fail.is_some() { None } else { mine().map(|x| x.keys_verified).min() },
        failed: fail,
    }
}

impl ScaleTable {
    /// The table of `phases` (insert, lookup, two-thread insert reports, in that order),
    /// `extras` and `failed` (every phase's failures).
    pub fn new(
        phases: [&BenchReport; 3],
        extras: Vec<RoundExtras>,
        failed: &[PhaseFailure],
    ) -> Self {
        let [insert, lookup, concurrent] = phases;
        let inserts = insert.params.ops.unwrap_or(0);
        let mut rows: Vec<ScaleRow> =
            insert.params.engines.iter().map(|e| row(e, phases, &extras, failed)).collect();
        let t = |s: &Option<StageFigures>| s.as_ref().map(|f| f.throughput_ops_s);
        let p = |s: &Option<StageFigures>| s.as_ref().map(|f| f.p9999_us);
        let best_peers = BestPeers {
            insert_ops_s: best(&rows, |r| t(&r.insert), false),
            insert_p9999_us: best(&rows, |r| p(&r.insert), true),
            insert_max_us: best(&rows, |r| r.insert.as_ref().map(|f| f.max_us), true),
            lookup_ops_s: best(&rows, |r| t(&r.lookup), false),
            lookup_p9999_us: best(&rows, |r| p(&r.lookup), true),
            insert_2t_ops_s: best(&rows, |r| t(&r.insert_2t), false),
            insert_2t_p9999_us: best(&rows, |r| p(&r.insert_2t), true),
        };
        let b = &best_peers;
        for row in &mut rows {
            let columns = [
                (&mut row.insert, &b.insert_ops_s, &b.insert_p9999_us, &b.insert_max_us),
                (&mut row.lookup, &b.lookup_ops_s, &b.lookup_p9999_us, &None),
                (&mut row.insert_2t, &b.insert_2t_ops_s, &b.insert_2t_p9999_us, &None),
            ];
            for (stage, ops, p9999, max) in columns {
                if let Some(f) = stage {
                    f.throughput_x_best_peer = over(f.throughput_ops_s, ops.as_ref());
                    f.p9999_x_best_peer = over(f.p9999_us, p9999.as_ref());
                    f.max_x_best_peer = over(f.max_us, max.as_ref());
                }
            }
        }
        let record_bytes = (insert.params.key_bytes + insert.params.value_bytes) as u64;
        ScaleTable {
            inserts,
            lookups: lookup.params.ops.unwrap_or(0),
            concurrent_inserts: concurrent.params.ops.unwrap_or(0),
            concurrent_threads: concurrent.params.threads.unwrap_or(0),
            record_bytes,
            best_peers,
            engines: rows,
            rounds: extras,
        }
    }

    /// The tables as markdown.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "## Scale: {} inserts, {} lookups, {} inserts from {} threads, reopen\n",
            count(self.inserts as f64),
            count(self.lookups as f64),
            count(self.concurrent_inserts as f64),
            self.concurrent_threads
        );
        let _ = writeln!(
            md,
            "{} B of key and value per record. `x best peer`: the value over the best peer's in \
             that column (highest rate, lowest latency), so above 1 beats every peer for a rate, \
             below 1 for a latency. Disk and memory per record are taken right after the {} \
             inserts (store open; what is still in memory buffers is not on disk yet), \
             `disk B/record closed` after the final close over all {} records; peak disk and \
             RSS over every phase (RSS is the whole process's: `RSS at open` is what it was \
             when the engine was opened, after the previous engine's freed memory was handed \
             back to the OS).\n",
            self.record_bytes,
            count(self.inserts as f64),
            count((self.inserts + self.concurrent_inserts) as f64),
        );
        md.push_str(&self.best_line());
        self.insert_table(&mut md);
        self.lookup_table(&mut md);
        self.concurrent_table(&mut md);
        let failures: Vec<&PhaseFailure> =
            self.engines.iter().filter_map(|r| r.failed.as_ref()).collect();
        if !failures.is_empty() {
            md.push_str("### Failed engines\n\n");
            for f in failures {
                let _ = writeln!(
                    md,
                    "- `{}`: phase `{}`, round {}, step `{}`: {}",
                    f.failure.engine, f.phase, f.failure.round, f.failure.step, f.failure.error
                );
            }
            md.push('\n');
        }
        md
    }

    fn best_line(&self) -> String {
        let b = &self.best_peers;
        let columns = [
            ("inserts/s", &b.insert_ops_s, false),
            ("insert p99.99", &b.insert_p9999_us, true),
            ("insert max", &b.insert_max_us, true),
            ("lookups/s", &b.lookup_ops_s, false),
            ("lookup p99.99", &b.lookup_p9999_us, true),
            ("2-thread inserts/s", &b.insert_2t_ops_s, false),
            ("2-thread p99.99", &b.insert_2t_p9999_us, true),
        ];
        let named: Vec<String> = columns
            .iter()
            .filter_map(|(what, best, latency)| {
                best.as_ref().map(|b| {
                    let value =
                        if *latency { format!("{} µs", us(b.value)) } else { count(b.value) };
                    format!("{what} `{}` ({value})", b.engine)
                })
            })
            .collect();
        if named.is_empty() {
            "No peer ran, so there are no `x best peer` ratios.\n\n".into()
        } else {
            format!("Best peers: {}.\n\n", named.join(", "))
        }
    }

    fn failed_cells(row: &ScaleRow, columns: usize) -> String {
        let what = row.failed.as_ref().map_or_else(
            || "not run".to_string(),
            |f| format!("failed ({}: {})", f.phase, f.failure.step),
        );
        format!("{what} |{}", " - |".repeat(columns - 1))
    }

    fn insert_table(&self, md: &mut String) {
        let _ = write!(
            md,
            "### {} inserts into an empty store, 1 thread\n\n\
             | engine | inserts/s | x best peer | p99 µs | p99.99 µs | x best peer | max µs | x best peer | write-amp | disk B/record | memory B/record | peak disk | peak RSS | RSS at open |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            count(self.inserts as f64)
        );
        for row in &self.engines {
            let _ = write!(md, "| {} | ", row.engine);
            match &row.insert {
                Some(f) => {
                    let _ = writeln!(
                        md,
                        "{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        count(f.throughput_ops_s),
                        ratio(f.throughput_x_best_peer),
                        us(f.p99_us),
                        us(f.p9999_us),
                        ratio(f.p9999_x_best_peer),
                        us(f.max_us),
                        ratio(f.max_x_best_peer),
                        row.write_amplification.map_or("-".into(), |w| format!("{w:.1}")),
                        per_record(row.disk_bytes_per_record),
                        per_record(row.memory_bytes_per_record),
                        fmt_bytes(row.disk_peak_bytes),
                        fmt_bytes(row.rss_peak_bytes),
                        fmt_bytes(row.rss_at_open_bytes),
                    );
                }
                None => {
                    let _ = writeln!(md, "{}", Self::failed_cells(row, 13));
                }
            }
        }
        md.push('\n');
    }

    fn lookup_table(&self, md: &mut String) {
        let _ = write!(
            md,
            "### {} lookups of inserted keys, 1 thread\n\n\
             | engine | lookups/s | x best peer | mean µs | p99 µs | p99.99 µs | x best peer | max µs |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|\n",
            count(self.lookups as f64)
        );
        for row in &self.engines {
            let _ = write!(md, "| {} | ", row.engine);
            match &row.lookup {
                Some(f) => {
                    let _ = writeln!(
                        md,
                        "{} | {} | {} | {} | {} | {} | {} |",
                        count(f.throughput_ops_s),
                        ratio(f.throughput_x_best_peer),
                        us(f.mean_us),
                        us(f.p99_us),
                        us(f.p9999_us),
                        ratio(f.p9999_x_best_peer),
                        us(f.max_us),
                    );
                }
                None => {
                    let _ = writeln!(md, "{}", Self::failed_cells(row, 7));
                }
            }
        }
        md.push('\n');
    }

    fn concurrent_table(&self, md: &mut String) {
        let _ = write!(
            md,
            "### {} inserts of new keys from {} threads, then close and reopen\n\n\
             | engine | inserts/s | x best peer | p99 µs | p99.99 µs | x best peer | max µs | close s | reopen s | keys verified | disk B/record closed |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            count(self.concurrent_inserts as f64),
            self.concurrent_threads
        );
        let seconds = |s: Option<f64>| s.map_or("-".into(), |s| format!("{s:.3}"));
        for row in &self.engines {
            let _ = write!(md, "| {} | ", row.engine);
            match &row.insert_2t {
                Some(f) => {
                    let _ = writeln!(
                        md,
                        "{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        count(f.throughput_ops_s),
                        ratio(f.throughput_x_best_peer),
                        us(f.p99_us),
                        us(f.p9999_us),
                        ratio(f.p9999_x_best_peer),
                        us(f.max_us),
                        seconds(row.close_s),
                        seconds(row.reopen_s),
                        row.keys_verified.map_or_else(
                            || row
                                .failed
                                .as_ref()
                                .map_or("-".into(), |f| format!("failed ({})", f.failure.step)),
                            |k| k.to_string()
                        ),
                        per_record(row.disk_bytes_per_record_closed),
                    );
                }
                None => {
                    let _ = writeln!(md, "{}", Self::failed_cells(row, 10));
                }
            }
        }
        md.push('\n');
    }
}

/// A count or rate with thousands separators, no decimals.
fn count(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds: no decimals from 100, one below, two below 10.
fn us(value: f64) -> String {
    if value >= 100.0 {
        count(value)
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn ratio(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.2}"))
}

fn per_record(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.0}"))
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::*;
    use crate::report::{FailedEngine, sample_report};

    fn phase(engines: &[(&str, f64, f64)], ops: u64) -> BenchReport {
        let mut report = sample_report();
        report.params.ops = Some(ops);
        report.params.key_bytes = 8;
        report.params.value_bytes = 128;
        report.params.threads = Some(2);
        report.params.engines = engines.iter().map(|e| e.0.to_string()).collect();
        let template = report.summary[0].clone();
        let run = report.runs[0].clone();
        report.summary = engines
            .iter()
            .map(|(engine, ops_s, p9999)| {
                let mut s = template.clone();
                s.engine = (*engine).into();
                s.throughput_ops_s = *ops_s;
                s.all.p9999_us = *p9999;
                s.all.max_us = p9999 * 10.0;
                s
            })
            .collect();
        report.runs = engines
            .iter()
            .map(|(engine, ..)| RunReport { engine: (*engine).into(), ..run.clone() })
            .collect();
        report
    }

    use crate::report::RunReport;

    fn extras(engine: &str) -> RoundExtras {
        RoundExtras {
            engine: engine.into(),
            round: 1,
            rss_at_open_bytes: 1 << 20,
            disk_after_load_bytes: 2720,
            memory_after_load_bytes: if engine == "lmdb" { 0 } else { 1360 },
            close_s: Some(0.5),
            reopen_s: Some(0.25),
            disk_after_close_bytes: Some(1 << 30),
            keys_verified: 10,
        }
    }

    #[test]
    fn ratios_are_to_the_best_peer_of_each_column_and_failures_show() {
        let insert = phase(
            &[
                ("fdtree-fc", 300.0, 50.0),
                ("rocksdb-tuned", 100.0, 20.0),
                ("lmdb", 150.0, 40.0),
                ("trie", 0.0, 0.0),
            ],
            10,
        );
        let mut insert = insert;
        insert.summary.retain(|s| s.engine != "trie");
        let lookup = phase(
            &[("fdtree-fc", 1000.0, 5.0), ("rocksdb-tuned", 500.0, 10.0), ("lmdb", 2000.0, 2.0)],
            10,
        );
        let concurrent = phase(
            &[("fdtree-fc", 300.0, 50.0), ("rocksdb-tuned", 600.0, 20.0), ("lmdb", 150.0, 40.0)],
            10,
        );
        let failed = vec![PhaseFailure {
            phase: "insert".into(),
            failure: FailedEngine {
                engine: "trie".into(),
                round: 1,
                step: "run".into(),
                error: "no space left: ring".into(),
            },
        }];
        let table = ScaleTable::new(
            [&insert, &lookup, &concurrent],
            vec![extras("fdtree-fc"), extras("rocksdb-tuned"), extras("lmdb")],
            &failed,
        );
        assert_eq!(table.record_bytes, 136);
        let b = &table.best_peers;
        assert_eq!(b.insert_ops_s.as_ref().unwrap().engine, "lmdb");
        assert_eq!(b.insert_p9999_us.as_ref().unwrap().engine, "rocksdb-tuned");
        assert_eq!(b.lookup_ops_s.as_ref().unwrap().value, 2000.0);
        let fc = &table.engines[0];
        assert!(!fc.peer && table.engines[1].peer);
        let insert_fc = fc.insert.as_ref().unwrap();
        assert_eq!(insert_fc.throughput_x_best_peer, Some(2.0));
        assert_eq!(insert_fc.p9999_x_best_peer, Some(2.5));
        assert_eq!(insert_fc.max_x_best_peer, Some(2.5));
        assert_eq!(fc.lookup.as_ref().unwrap().throughput_x_best_peer, Some(0.5));
        assert_eq!(fc.insert_2t.as_ref().unwrap().throughput_x_best_peer, Some(0.5));
        assert_eq!(fc.disk_bytes_per_record, Some(272.0));
        assert_eq!(fc.memory_bytes_per_record, Some(136.0));
        assert_eq!(table.engines[2].memory_bytes_per_record, None, "lmdb reports none");
        assert_eq!((fc.reopen_s, fc.keys_verified), (Some(0.25), Some(10)));
        assert_eq!(fc.disk_peak_bytes, 1 << 30);
        assert_eq!(fc.disk_bytes_per_record_closed, Some(f64::from(1 << 30) / 20.0));
        let trie = &table.engines[3];
        assert!(trie.insert.is_none() && trie.failed.is_some() && trie.keys_verified.is_none());
        let md = table.to_markdown();
        assert!(
            md.contains("| fdtree-fc | 300 | 2.00 | 4.00 | 50.0 | 2.50 | 500 | 2.50 |"),
            "{md}"
        );
        assert!(md.contains("| trie | failed (insert: run) | - |"), "{md}");
        assert!(
            md.contains("- `trie`: phase `insert`, round 1, step `run`: no space left: ring"),
            "{md}"
        );
        assert!(md.contains("Best peers: inserts/s `lmdb` (150)"), "{md}");
        assert!(md.contains("| lmdb | 150 | 1.00 |"), "{md}");
        assert_eq!(md.lines().filter(|l| l.starts_with("| trie |")).count(), 3, "{md}");
    }

    #[test]
    fn without_peers_there_are_no_ratios_and_counts_have_separators() {
        let insert = phase(&[("mem", 1_234_567.0, 5.0)], 1_000_000);
        let table = ScaleTable::new([&insert, &insert, &insert], vec![extras("mem")], &[]);
        assert_eq!(table.best_peers, BestPeers::default());
        assert_eq!(table.engines[0].insert.as_ref().unwrap().throughput_x_best_peer, None);
        let md = table.to_markdown();
        assert!(md.contains("No peer ran"), "{md}");
        assert!(md.contains("| mem | 1,234,567 | - |"), "{md}");
        assert!(md.contains("## Scale: 1,000,000 inserts"), "{md}");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1000.4), "1,000");
    }
}
