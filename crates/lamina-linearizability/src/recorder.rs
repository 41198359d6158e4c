//! Records a history: `clients` threads run random get, put, delete and compare-and-swap
//! calls on a few keys (so calls on one key overlap heavily), each call's interval taken
//! with `Instant` just before the call and just after it returns, while a filler thread
//! writes other keys so the engine's flushes, merges and buffer emptying run during the
//! history. Every write's value is unique ([`crate::value`]).

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use lamina::{CasOutcome, WriteBatch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::history::{History, Operation};
use crate::model::{Op, Ret, ValueId};
use crate::store::Store;
use crate::value;

/// Most recording clients.
pub const CLIENTS_MAX: u32 = 64;
/// Most keys a history is recorded on.
pub const KEYS_MAX: u32 = 1024;
/// Most operations per client.
pub const OPS_PER_CLIENT_MAX: u32 = 1_000_000;
/// Keys the filler thread writes (values up to 2 KiB: up to about 8 MiB of live data).
pub const FILLER_KEYS: u32 = 4096;

/// What to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Threads recording operations.
    pub clients: u32,
    /// Keys they share.
    pub keys: u32,
    /// Operations each client runs.
    pub ops_per_client: u32,
    /// Seed of every random choice.
    pub seed: u64,
    /// Whether a filler thread writes other keys meanwhile.
    pub filler: bool,
}

impl Workload {
    /// Checks the limits.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=CLIENTS_MAX).contains(&self.clients) {
            return Err(format!("clients: {} not in 1..={CLIENTS_MAX}", self.clients));
        }
        if !(1..=KEYS_MAX).contains(&self.keys) {
            return Err(format!("keys: {} not in 1..={KEYS_MAX}", self.keys));
        }
        if !(1..=OPS_PER_CLIENT_MAX).contains(&self.ops_per_client) {
            return Err(format!(
                "ops per client: {} not in 1..={OPS_PER_CLIENT_MAX}",
                self.ops_per_client
            ));
        }
        Ok(())
    }
}

/// Nanoseconds since one start, shared by every part of a history.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn start() -> Self {
        Clock { start: Instant::now() }
    }

    /// Nanoseconds since the start.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).expect("a history shorter than 584 years")
    }
}

/// The bytes of hot key `key`.
pub fn hot_key(key: u32) -> Vec<u8> {
    format!("lin-{key:04}").into_bytes()
}

/// A recorded history and what ran beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// The clients' operations.
    pub history: History,
    /// Key writes (in batches) the filler thread made to other keys meanwhile.
    pub filler_ops: u64,
}

/// Runs `op` on `key`, timing it: the operation as recorded, or the store's error.
pub fn timed<S: Store>(
    store: &S,
    clock: &Clock,
    client: u32,
    key: u32,
    op: Op,
) -> Result<Operation, String> {
    let key_bytes = hot_key(key);
    let encoded = |v: Option<ValueId>| v.map(value::encode);
    let decoded = |bytes: Option<Vec<u8>>| bytes.as_deref().map(value::decode).transpose();
    let failed = |e: lamina::Error| format!("client {client}: {op:?} on key {key}: {e}");
    let (ret, invoke_ns, response_ns) = match op {
        Op::Get => {
            let invoke_ns = clock.now_ns();
            let found = store.get(&key_bytes).map_err(failed)?;
            let response_ns = clock.now_ns();
            (Ret::Value(decoded(found)?), invoke_ns, response_ns)
        }
        Op::Put(v) => {
            let bytes = value::encode(v);
            let invoke_ns = clock.now_ns();
            store.put(&key_bytes, &bytes).map_err(failed)?;
            (Ret::Done, invoke_ns, clock.now_ns())
        }
        Op::Delete => {
            let invoke_ns = clock.now_ns();
            let existed = store.delete(&key_bytes).map_err(failed)?;
            (Ret::Existed(existed), invoke_ns, clock.now_ns())
        }
        Op::Cas { expected, new } => {
            let (expected_bytes, new_bytes) = (encoded(expected), encoded(new));
            let invoke_ns = clock.now_ns();
            let outcome = store
                .compare_and_swap(&key_bytes, expected_bytes.as_deref(), new_bytes.as_deref())
                .map_err(failed)?;
            let response_ns = clock.now_ns();
            let ret = match outcome {
                CasOutcome::Swapped => Ret::Swapped,
                CasOutcome::Mismatch { current } => Ret::Mismatch { current: decoded(current)? },
            };
            (ret, invoke_ns, response_ns)
        }
    };
    Ok(Operation { client, key, op, ret, invoke_ns, response_ns })
}

/// One client's operations.
fn client_run<S: Store>(
    store: &S,
    clock: &Clock,
    workload: &Workload,
    client: u32,
) -> Result<Vec<Operation>, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(
        workload.seed ^ u64::from(client + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    // Value ids: the client in the high bits, so ids are unique across clients.
    let mut written = 0u64;
    let mut fresh = || {
        written += 1;
        (u64::from(client) + 1) << 40 | written
    };
    // What this client last saw of each key: the expected value of its swaps.
    let mut seen: Vec<Option<ValueId>> = vec![None; workload.keys as usize];
    let mut ops = Vec::with_capacity(workload.ops_per_client as usize);
    for _ in 0..workload.ops_per_client {
        let key = rng.random_range(0..workload.keys);
        let op = match rng.random_range(0..100) {
            0..35 => Op::Get,
            35..60 => Op::Put(fresh()),
            60..70 => Op::Delete,
            _ => {
                let expected = if rng.random_bool(0.85) {
                    seen[key as usize]
                } else if rng.random_bool(0.5) {
                    None
                } else {
                    Some(fresh())
                };
                let new = if rng.random_bool(0.1) { None } else { Some(fresh()) };
                Op::Cas { expected, new }
            }
        };
        let done = timed(store, clock, client, key, op)?;
        seen[key as usize] = match (done.op, done.ret) {
            (_, Ret::Value(v) | Ret::Mismatch { current: v }) => v,
            (Op::Put(v), _) => Some(v),
            (Op::Delete, _) => None,
            (Op::Cas { new, .. }, _) => new,
            (Op::Get, _) => unreachable!("a get returns a value"),
        };
        ops.push(done);
    }
    Ok(ops)
}

/// Keys per filler batch: one filler thread must write enough distinct keys beside 8
/// clients to make every engine flush, merge or empty buffers during the history.
pub const FILLER_BATCH_KEYS: usize = 16;

/// The filler: batches of puts (and some deletes) of other keys until every client is done.
fn filler_run<S: Store>(
    store: &S,
    seed: u64,
    clients_done: &AtomicU32,
    clients: u32,
) -> Result<u64, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xf111);
    let mut writes = 0u64;
    while clients_done.load(Ordering::Acquire) < clients {
        let mut batch = WriteBatch::new();
        for _ in 0..FILLER_BATCH_KEYS {
            let key = format!("fill-{:06}", rng.random_range(0..FILLER_KEYS)).into_bytes();
            if rng.random_bool(0.1) {
                batch.delete(key);
            } else {
                batch.put(key, value::encode(rng.random()));
            }
        }
        store.write_batch(&batch).map_err(|e| format!("filler: write batch: {e}"))?;
        writes += FILLER_BATCH_KEYS as u64;
    }
    Ok(writes)
}

/// Records `workload` on `store`, timed by `clock`.
pub fn record<S: Store>(
    store: &S,
    workload: &Workload,
    clock: &Clock,
) -> Result<Recording, String> {
    workload.validate()?;
    let threads = workload.clients as usize + usize::from(workload.filler);
    let barrier = Barrier::new(threads);
    let clients_done = AtomicU32::new(0);
    let (results, filler) = std::thread::scope(|scope| {
        let filler = workload.filler.then(|| {
            scope.spawn(|| {
                barrier.wait();
                filler_run(store, workload.seed, &clients_done, workload.clients)
            })
        });
        let handles: Vec<_> = (0..workload.clients)
            .map(|client| {
                let (barrier, clients_done) = (&barrier, &clients_done);
                scope.spawn(move || {
                    barrier.wait();
                    let result = client_run(store, clock, workload, client);
                    clients_done.fetch_add(1, Ordering::AcqRel);
                    result
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (results, filler.map(|h| h.join().unwrap()))
    });
    let mut history = History::default();
    for ops in results {
        history.operations.extend(ops?);
    }
    let filler_ops = filler.transpose()?.unwrap_or(0);
    Ok(Recording { history, filler_ops })
}
