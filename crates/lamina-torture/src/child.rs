//! The child process: writes through `lamina::Db` from [`WRITER_THREADS`] threads with
//! `Durability::Sync` (puts, deletes, compare-and-swaps, batches, values of 0 to 4096 bytes)
//! while a scanner checks that every value it sees is one a write produced and that keys
//! ascend, printing the ledger (`ledger.rs`) to stdout, until it is killed.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use lamina::{CasOutcome, Db, KeyRange, WriteBatch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ledger::{Line, Op};
use crate::settings::options;
use crate::value::{KEYS_PER_THREAD, is_plausible, key, value};

/// Writer threads.
pub const WRITER_THREADS: u64 = 8;
/// Most operations in one batch.
const BATCH_OPS_MAX: u64 = 8;

/// Exit code of a child that found a problem (printed to stderr) before it was killed.
pub const EXIT_FAILED: i32 = 3;

/// Runs the child of cycle `cycle` until killed. Any failure is printed to stderr and ends
/// the process with [`EXIT_FAILED`].
pub fn run(dir: &Path, engine: lamina::EngineKind, seed: u64, cycle: u64) -> ! {
    let db = Db::open(dir, options(engine)).unwrap_or_else(|e| fail(&format!("open: {e}")));
    let out = Mutex::new(std::io::stdout());
    std::thread::scope(|s| {
        for thread in 0..WRITER_THREADS {
            let (db, out) = (&db, &out);
            s.spawn(move || {
                if let Err(e) = write_forever(db, out, seed, cycle, thread) {
                    fail(&format!("writer {thread}: {e}"));
                }
            });
        }
        s.spawn(|| {
            if let Err(e) = scan_forever(&db) {
                fail(&format!("scanner: {e}"));
            }
        });
    });
    unreachable!("the writers never return")
}

fn fail(message: &str) -> ! {
    eprintln!("lamina-torture child: {message}");
    std::process::exit(EXIT_FAILED)
}

fn print(out: &Mutex<std::io::Stdout>, line: &Line) -> Result<(), String> {
    let mut out = out.lock().unwrap();
    writeln!(out, "{}", line.encode()).and_then(|()| out.flush()).map_err(|e| e.to_string())
}

fn write_forever(
    db: &Db,
    out: &Mutex<std::io::Stdout>,
    seed: u64,
    cycle: u64,
    thread: u64,
) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (cycle << 20) ^ (thread << 8));
    for counter in 0u64..u64::from(u32::MAX) {
        let version = (cycle << 40) | (thread << 32) | counter;
        let k = key(thread, rng.random_range(0..KEYS_PER_THREAD));
        let op = match rng.random_range(0..10) {
            0..5 => Op::Put { key: k, version },
            5..7 => Op::Delete { key: k },
            7..9 => Op::Cas { key: k, version },
            _ => {
                let n = rng.random_range(2..=BATCH_OPS_MAX);
                let mut keys: Vec<u64> =
                    (0..n).map(|_| rng.random_range(0..KEYS_PER_THREAD)).collect();
                keys.sort_unstable();
                keys.dedup();
                let writes = keys
                    .into_iter()
                    .map(|i| (key(thread, i), rng.random_bool(0.8).then_some(version)))
                    .collect();
                Op::Batch { writes }
            }
        };
        // A compare-and-swap compares with what the key holds now (no other thread writes it).
        let current = match &op {
            Op::Cas { key, .. } => db.get(key).map_err(|e| format!("get: {e}"))?,
            _ => None,
        };
        print(out, &Line::Begin { thread, op: op.clone() })?;
        apply(db, &op, current.as_deref())?;
        print(out, &Line::Ack { thread })?;
    }
    Ok(())
}

fn apply(db: &Db, op: &Op, current: Option<&[u8]>) -> Result<(), String> {
    match op {
        Op::Put { key, version } => db.put(key, value(key, *version)).map_err(|e| e.to_string()),
        Op::Delete { key } => db.delete(key).map(drop).map_err(|e| e.to_string()),
        Op::Cas { key, version } => {
            match db.compare_and_swap(key, current, Some(&value(key, *version))) {
                Ok(CasOutcome::Swapped) => Ok(()),
                Ok(other) => Err(format!(
                    "compare-and-swap of {} lost to nobody: {other:?}",
                    String::from_utf8_lossy(key)
                )),
                Err(e) => Err(e.to_string()),
            }
        }
        Op::Batch { writes } => {
            let mut batch = WriteBatch::new();
            for (key, outcome) in writes {
                match outcome {
                    Some(version) => batch.put(key.clone(), value(key, *version)),
                    None => batch.delete(key.clone()),
                };
            }
            db.write_batch(&batch).map_err(|e| e.to_string())
        }
    }
}

/// Scans the whole key space in pages, over and over: keys ascend and every value is one a
/// write produced.
fn scan_forever(db: &Db) -> Result<(), String> {
    loop {
        let mut range = KeyRange::all();
        loop {
            let page = db.scan(&range, 256).map_err(|e| format!("scan: {e}"))?;
            for pair in page.windows(2) {
                if pair[0].0 >= pair[1].0 {
                    return Err(format!("keys out of order: {:?} then {:?}", pair[0].0, pair[1].0));
                }
            }
            for (key, bytes) in &page {
                if !is_plausible(key, bytes) {
                    return Err(format!(
                        "key {} holds {} bytes no write produced",
                        String::from_utf8_lossy(key),
                        bytes.len()
                    ));
                }
            }
            match page.last() {
                Some((key, _)) if page.len() == 256 => range = range.resume_after(key),
                _ => break,
            }
        }
    }
}
