//! Runs a load: one client thread per connection, the phases in order, every reply
//! checked against what the record must hold.

use std::{
    sync::{
        Barrier,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use lamina_core::{Error, Result};

use super::{
    config::{LoadConfig, Phase},
    connection::Connection,
    keys::KeySpace,
    protocol::{Reply, encode_get, encode_set},
    report::ReplyErrors,
};
use crate::{metrics::LatencyHistogram, op::splitmix64};

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct PhaseOutcome {
    /// The phase.
    pub phase: Phase,
    /// From the start signal to the last connection's last reply.
    pub elapsed: Duration,
    /// Latency of every get, from sending its batch to parsing its reply.
    pub gets: LatencyHistogram,
    /// Latency of every set.
    pub sets: LatencyHistogram,
    /// Replies that were not what the record holds.
    pub errors: ReplyErrors,
}

impl PhaseOutcome {
    /// Requests answered.
    pub fn requests(&self) -> u64 {
        self.gets.count() + self.sets.count()
    }
}

#[derive(Debug, Clone, Copy)]
enum Request {
    Get(u64),
    Set(u64),
}

/// Where a connection's requests come from in a phase.
#[derive(Debug)]
enum Source {
    /// Records `next`, `next + step`, ... below the record count, each set once.
    Load { next: u64, step: u64 },
    /// `left` random requests (or until the deadline when `left` is `None`).
    Random { rng: u64, left: Option<u64>, get_percent: u32 },
}

impl Source {
    fn next(&mut self, keys: &KeySpace) -> Option<Request> {
        match self {
            Source::Load { next, step } => {
                let index = *next;
                (index < keys.count()).then(|| {
                    *next += *step;
                    Request::Set(index)
                })
            }
            Source::Random { rng, left, get_percent } => {
                if let Some(left) = left {
                    if *left == 0 {
                        return None;
                    }
                    *left -= 1;
                }
                let index = splitmix64(rng) % keys.count();
                let get = splitmix64(rng) % 100 < u64::from(*get_percent);
                Some(if get { Request::Get(index) } else { Request::Set(index) })
            }
        }
    }
}

/// One connection's share of a phase.
struct Worker<'a> {
    conn: &'a mut Connection,
    keys: &'a KeySpace,
    depth: usize,
    gets: LatencyHistogram,
    sets: LatencyHistogram,
    errors: ReplyErrors,
    out: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
    batch: Vec<Request>,
}

impl Worker<'_> {
    /// Sends up to `depth` requests from `source` and checks their replies; false when the
    /// source is exhausted.
    fn batch(&mut self, source: &mut Source) -> Result<bool> {
        self.out.clear();
        self.batch.clear();
        while self.batch.len() < self.depth {
            let Some(request) = source.next(self.keys) else { break };
            match request {
                Request::Get(i) => {
                    self.keys.key_into(i, &mut self.key);
                    encode_get(&self.key, &mut self.out);
                }
                Request::Set(i) => {
                    self.keys.key_into(i, &mut self.key);
                    self.keys.value_into(i, &mut self.value);
                    encode_set(&self.key, self.keys.flags(i), &self.value, &mut self.out);
                }
            }
            self.batch.push(request);
        }
        if self.batch.is_empty() {
            return Ok(false);
        }
        let sent = Instant::now();
        self.conn.send(&self.out)?;
        for at in 0..self.batch.len() {
            let request = self.batch[at];
            let (reply, bytes) = self.conn.receive()?;
            let latency_ns = sent.elapsed().as_nanos() as u64;
            match request {
                Request::Get(i) => {
                    self.gets.record_ns(latency_ns);
                    self.keys.key_into(i, &mut self.key);
                    self.keys.value_into(i, &mut self.value);
                    let flags = self.keys.flags(i);
                    check_get(&reply, bytes, &self.key, flags, &self.value, &mut self.errors)?;
                }
                Request::Set(i) => {
                    self.sets.record_ns(latency_ns);
                    self.keys.key_into(i, &mut self.key);
                    check_set(&reply, &self.key, &mut self.errors)?;
                }
            }
        }
        Ok(true)
    }
}

fn out_of_step(request: &str, key: &[u8], reply: &Reply) -> Error {
    Error::io(
        "checking replies",
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{request} {} got {reply:?}: the replies are out of step with the requests",
                String::from_utf8_lossy(key)
            ),
        ),
    )
}

/// Counts an error reply (the protocol's own error lines); other unexpected replies are
/// left to the caller.
fn error_reply(request: &str, key: &[u8], reply: &Reply, errors: &mut ReplyErrors) -> bool {
    let message = match reply {
        Reply::Error => "ERROR".to_string(),
        Reply::ClientError(m) => format!("CLIENT_ERROR {m}"),
        Reply::ServerError(m) => format!("SERVER_ERROR {m}"),
        _ => return false,
    };
    errors.error_replies += 1;
    errors.note(|| format!("{request} {}: {message}", String::from_utf8_lossy(key)));
    true
}

/// Checks a get's reply: one item, the key asked for, the record's flags and value.
pub(crate) fn check_get(
    reply: &Reply,
    bytes: &[u8],
    key: &[u8],
    flags: u32,
    value: &[u8],
    errors: &mut ReplyErrors,
) -> Result<()> {
    let shown = || String::from_utf8_lossy(key).into_owned();
    match reply {
        Reply::Values(items) if items.is_empty() => {
            errors.get_misses += 1;
            errors.note(|| format!("get {}: a miss (END) for a loaded key", shown()));
        }
        Reply::Values(items) => {
            let item = &items[0];
            let what = if items.len() > 1 {
                Some(format!("{} items", items.len()))
            } else if &bytes[item.key.clone()] != key {
                Some(format!("key {}", String::from_utf8_lossy(&bytes[item.key.clone()])))
            } else if item.flags != flags {
                Some(format!("flags {} instead of {flags}", item.flags))
            } else if &bytes[item.data.clone()] != value {
                Some(format!("a {}-byte value that is not the one set", item.data.len()))
            } else {
                None
            };
            if let Some(what) = what {
                errors.get_wrong += 1;
                errors.note(|| format!("get {}: {what}", shown()));
            }
        }
        other => {
            if !error_reply("get", key, other, errors) {
                return Err(out_of_step("get", key, other));
            }
        }
    }
    Ok(())
}

/// Checks a set's reply: `STORED`.
pub(crate) fn check_set(reply: &Reply, key: &[u8], errors: &mut ReplyErrors) -> Result<()> {
    match reply {
        Reply::Stored => {}
        Reply::NotStored | Reply::Exists | Reply::NotFound => {
            errors.set_not_stored += 1;
            errors.note(|| format!("set {}: {reply:?}", String::from_utf8_lossy(key)));
        }
        other => {
            if !error_reply("set", key, other, errors) {
                return Err(out_of_step("set", key, other));
            }
        }
    }
    Ok(())
}

/// One connection's work in a phase: batches until its source is exhausted, the deadline
/// passes or another connection failed.
fn drive(
    worker: &mut Worker<'_>,
    mut source: Source,
    duration: Option<Duration>,
    start: &Barrier,
    abort: &AtomicBool,
) -> Result<Instant> {
    start.wait();
    let deadline = duration.map(|d| Instant::now() + d);
    loop {
        if abort.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        match worker.batch(&mut source) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                abort.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }
    Ok(Instant::now())
}

fn source(config: &LoadConfig, phase: Phase, conn: usize) -> (Source, Option<Duration>) {
    let n = config.connections as u64;
    let c = conn as u64;
    match phase {
        Phase::Set => (Source::Load { next: c, step: n }, None),
        Phase::Get | Phase::Mixed => {
            let left = config.ops.map(|ops| ops / n + u64::from(c < ops % n));
            let mut rng = config.seed ^ (c << 32) ^ ((phase as u64) << 56);
            splitmix64(&mut rng);
            let get_percent = if phase == Phase::Get { 100 } else { config.mixed_get_percent };
            (Source::Random { rng, left, get_percent }, config.duration)
        }
    }
}

fn run_phase(config: &LoadConfig, phase: Phase, conns: &mut [Connection]) -> Result<PhaseOutcome> {
    let start = Barrier::new(conns.len() + 1);
    let abort = AtomicBool::new(false);
    let (started, results) = std::thread::scope(|scope| {
        let handles: Vec<_> = conns
            .iter_mut()
            .enumerate()
            .map(|(i, conn)| {
                let (src, duration) = source(config, phase, i);
                let (start, abort) = (&start, &abort);
                std::thread::Builder::new()
                    .name(format!("memcached-load-{i}"))
                    .spawn_scoped(scope, move || {
                        let mut worker = Worker {
                            conn,
                            keys: &config.keys,
                            depth: config.pipeline_depth,
                            gets: LatencyHistogram::new(),
                            sets: LatencyHistogram::new(),
                            errors: ReplyErrors::default(),
                            out: Vec::new(),
                            key: Vec::new(),
                            value: Vec::new(),
                            batch: Vec::with_capacity(config.pipeline_depth),
                        };
                        let end = drive(&mut worker, src, duration, start, abort)?;
                        Ok((end, worker.gets, worker.sets, worker.errors))
                    })
                    .expect("spawning a client thread")
            })
            .collect();
        start.wait();
        let started = Instant::now();
        let results: Vec<Result<_>> =
            handles.into_iter().map(|h| h.join().expect("client threads return errors")).collect();
        (started, results)
    });
    let mut outcome = PhaseOutcome {
        phase,
        elapsed: Duration::ZERO,
        gets: LatencyHistogram::new(),
        sets: LatencyHistogram::new(),
        errors: ReplyErrors::default(),
    };
    for result in results {
        let (end, gets, sets, errors) = result?;
        outcome.elapsed = outcome.elapsed.max(end.saturating_duration_since(started));
        outcome.gets.merge(&gets);
        outcome.sets.merge(&sets);
        outcome.errors.add(&errors);
    }
    Ok(outcome)
}

/// Opens the connections and runs every phase of `config`, calling `progress` before each.
/// A connection that fails (refused, closed, a malformed reply, no reply within the
/// timeout) fails the load; a wrong reply is counted in the phase's errors and the load
/// goes on.
pub fn run_load(config: &LoadConfig, progress: &mut dyn FnMut(&str)) -> Result<Vec<PhaseOutcome>> {
    config.validate()?;
    let mut conns = (0..config.connections)
        .map(|_| Connection::open(&config.server, config.reply_timeout))
        .collect::<Result<Vec<_>>>()?;
    let mut outcomes = Vec::with_capacity(config.phases.len());
    for &phase in &config.phases {
        progress(&format!(
            "phase {phase}: {}",
            match (phase, config.ops, config.duration) {
                (Phase::Set, _, _) => format!("setting {} records", config.keys.count()),
                (_, Some(ops), _) => format!("{ops} requests"),
                (_, None, Some(d)) => format!("{:.1} s", d.as_secs_f64()),
                (_, None, None) => unreachable!("validated: ops or duration"),
            }
        ));
        let outcome = run_phase(config, phase, &mut conns)?;
        assert!(
            phase != Phase::Set || outcome.sets.count() == config.keys.count(),
            "the set phase sets every record once"
        );
        outcomes.push(outcome);
    }
    Ok(outcomes)
}
