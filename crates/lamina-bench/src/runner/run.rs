//! One run: preload (unmeasured), then warm-up and measured requests with the chosen
//! runner, while the calling thread samples disk and memory use and draws the progress bar.

use std::{
    io::IsTerminal,
    path::Path,
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lamina_core::{IoStats, OrderedIndex, Result, Stats, WriteBatch};

use super::{
    RunConfig, RunnerKind,
    closed::closed_worker,
    exec::{Scratch, execute},
    open::run_open,
    recorder::{Measurements, ThreadRecorder},
    source::OpSource,
};
use crate::{
    Op,
    metrics::{dir_size_bytes, reset_rss_peak, rss_bytes, rss_peak_bytes},
    workload::Workload,
};

/// Preload requests per write batch.
const PRELOAD_BATCH_OPS: usize = 1000;
/// How often disk and memory are sampled and the progress bar redrawn: often enough to catch
/// a merge's transient footprint (FD+FC section 5.4 compares peak disk during merges).
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// Most disk samples kept for the median (at [`SAMPLE_EVERY`], about 14 hours); later
/// samples still count toward the peak.
const DISK_SAMPLES_MAX: usize = 1 << 20;

/// What the worker threads share.
pub(crate) struct Shared<'a> {
    pub db: &'a dyn OrderedIndex,
    pub source: &'a OpSource,
    pub warmup_ops: u64,
    /// When the injection of requests began: time 0 of the open system's arrival schedule.
    pub run_start: Instant,
    /// Start of the first measured request: the origin of the throughput intervals.
    pub origin: OnceLock<Instant>,
    pub bucket_ops: u64,
    pub interval_ns: u64,
    /// Requests completed (warm-up included), for the progress bar.
    pub done: AtomicU64,
}

impl Shared<'_> {
    /// The interval origin, set by the first measured request to start.
    pub fn origin(&self, start: Instant) -> Instant {
        *self.origin.get_or_init(|| start)
    }
}

/// The outcome of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Latencies, timeline, elapsed time.
    pub measurements: Measurements,
    /// Preload requests applied.
    pub preloaded_ops: u64,
    /// I/O during the measured phase (warm-up included).
    pub io: IoStats,
    /// User bytes the engine counted during the measured phase (0: it does not count).
    pub engine_user_bytes_written: u64,
    /// The engine's stats at the end of the run.
    pub stats: Stats,
    /// Largest disk footprint seen: the directory's allocated bytes (`st_blocks * 512`, so
    /// punched holes and sparse files count what they occupy), sampled every
    /// [`SAMPLE_EVERY`] during the measured phase and at its start and end.
    pub disk_peak_bytes: u64,
    /// Median of those samples: the steady-state footprint (merges that inflate it are
    /// transient), to set the peak against.
    pub disk_median_bytes: u64,
    /// Largest resident set seen.
    pub rss_peak_bytes: u64,
}

fn preload(
    db: &dyn OrderedIndex,
    workload: &mut dyn Workload,
    progress: &ProgressBar,
) -> Result<u64> {
    let mut batch = WriteBatch::new();
    let mut scratch = Scratch::default();
    let mut value = Vec::new();
    let mut count = 0u64;
    while let Some(op) = workload.next_preload()? {
        count += 1;
        match &op {
            Op::Put { key, value: v } => {
                v.write_into(&mut value);
                batch.put(key.clone(), value.clone());
            }
            Op::Delete { key } => {
                batch.delete(key.clone());
            }
            other => {
                if !batch.is_empty() {
                    db.write_batch(&batch)?;
                    batch = WriteBatch::new();
                }
                scratch.prepare(other);
                execute(db, other, &scratch)?;
            }
        }
        if batch.len() >= PRELOAD_BATCH_OPS {
            db.write_batch(&batch)?;
            batch = WriteBatch::new();
            progress.set_position(count);
        }
    }
    if !batch.is_empty() {
        db.write_batch(&batch)?;
    }
    // The preload's flush is not the measurement's; with nothing preloaded there is nothing
    // to flush (and a stage that continues on a loaded store, as `--experiment scale`'s
    // lookups do, must not have the whole store synced before it).
    if count > 0 {
        db.sync()?;
    }
    Ok(count)
}

fn progress_bar(config: &RunConfig, label: &str) -> ProgressBar {
    if !config.progress || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
    bar.set_style(style("{prefix:>12} preloading: {pos} requests"));
    bar.set_prefix(label.to_string());
    bar
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// Runs `workload` against `db` (whose files are in `dir`) as `config` says.
///
/// `read_fraction` splits the open system's queue slots; `label` names the run on the
/// progress bar. The engine is left open.
pub fn run_workload(
    db: &dyn OrderedIndex,
    mut workload: Box<dyn Workload>,
    config: &RunConfig,
    read_fraction: Option<f64>,
    dir: &Path,
    label: &str,
) -> Result<RunResult> {
    config.validate()?;
    let bar = progress_bar(config, label);
    let preloaded_ops = preload(db, workload.as_mut(), &bar)?;

    let before = db.stats();
    let rss_reset = reset_rss_peak();
    let mut rss_peak = rss_bytes().unwrap_or(0);
    let mut disk = DiskSamples::default();
    disk.sample(dir);
    bar.set_position(0);
    match config.total_ops() {
        Some(total) => {
            bar.set_length(total);
            bar.set_style(style(
                "{prefix:>12} [{wide_bar}] {pos}/{len} requests, {msg}, ETA {eta}",
            ));
        }
        None => {
            bar.set_style(style("{prefix:>12} {spinner} {pos} requests, {msg}, {elapsed} elapsed"));
        }
    }
    bar.reset();

    let source = OpSource::new(workload, config.total_ops());
    let interval_ns = config.interval.as_nanos() as u64;
    let shared = Shared {
        db,
        source: &source,
        warmup_ops: config.warmup_ops,
        run_start: Instant::now(),
        origin: OnceLock::new(),
        bucket_ops: config.bucket_ops,
        interval_ns,
        done: AtomicU64::new(0),
    };
    let mut measure_start: Option<Instant> = None;
    let mut monitor = |finished: &dyn Fn() -> bool| {
        while !finished() {
            std::thread::sleep(SAMPLE_EVERY);
            let done = shared.done.load(Ordering::Relaxed);
            bar.set_position(done);
            let seconds = shared.run_start.elapsed().as_secs_f64();
            if seconds > 0.0 {
                bar.set_message(format!("{:.0} ops/s", done as f64 / seconds));
            }
            if let Some(duration) = config.duration {
                if measure_start.is_none() && done >= config.warmup_ops {
                    measure_start = Some(Instant::now());
                }
                if measure_start.is_some_and(|s| s.elapsed() >= duration) {
                    source.stop();
                }
            }
            rss_peak = rss_peak.max(rss_bytes().unwrap_or(0));
            disk.sample(dir);
        }
    };
    let recorders: Vec<ThreadRecorder> = match config.runner {
        RunnerKind::Closed { threads } => {
            let results: Vec<Result<ThreadRecorder>> = std::thread::scope(|scope| {
                let workers: Vec<_> =
                    (0..threads).map(|_| scope.spawn(|| closed_worker(&shared))).collect();
                monitor(&|| workers.iter().all(std::thread::ScopedJoinHandle::is_finished));
                workers
                    .into_iter()
                    .map(|w| w.join().expect("client threads do not panic"))
                    .collect()
            });
            results.into_iter().collect::<Result<_>>()?
        }
        RunnerKind::Open { readers, writers, rate_per_s, queue_slots } => run_open(
            &shared,
            readers,
            writers,
            rate_per_s,
            queue_slots,
            read_fraction,
            &mut monitor,
        )?,
    };
    bar.finish_and_clear();

    let origin = shared.origin.get().copied().unwrap_or_else(Instant::now);
    let measurements = Measurements::merge(&recorders, origin, config.bucket_ops, interval_ns);
    let after = db.stats();
    if rss_reset {
        rss_peak = rss_peak.max(rss_peak_bytes().unwrap_or(0));
    }
    disk.sample(dir);
    Ok(RunResult {
        measurements,
        preloaded_ops,
        io: after.io.since(&before.io),
        engine_user_bytes_written: after
            .user_bytes_written
            .saturating_sub(before.user_bytes_written),
        stats: after,
        disk_peak_bytes: disk.peak_bytes,
        disk_median_bytes: median(&mut disk.samples),
        rss_peak_bytes: rss_peak,
    })
}

/// Allocated bytes of an engine's directory over a run.
#[derive(Default)]
struct DiskSamples {
    samples: Vec<u64>,
    peak_bytes: u64,
}

impl DiskSamples {
    fn sample(&mut self, dir: &Path) {
        let bytes = dir_size_bytes(dir);
        self.peak_bytes = self.peak_bytes.max(bytes);
        if self.samples.len() < DISK_SAMPLES_MAX {
            self.samples.push(bytes);
        }
    }
}

/// The median (upper one for an even count) of `samples`, which is not empty.
fn median(samples: &mut [u64]) -> u64 {
    assert!(!samples.is_empty(), "the start and end are always sampled");
    let mid = samples.len() / 2;
    *samples.select_nth_unstable(mid).1
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_samples() {
        assert_eq!(super::median(&mut [5]), 5);
        assert_eq!(super::median(&mut [9, 1, 5]), 5);
        assert_eq!(super::median(&mut [9, 1, 5, 7]), 7);
    }
}
