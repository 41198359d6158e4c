//! Executing one request against an engine.

use lamina_core::{KeyRange, OrderedIndex, Result};

use crate::Op;

/// Per-thread buffers holding a request's materialized values, filled before the clock
/// starts so value generation is not timed.
#[derive(Debug, Default)]
pub struct Scratch {
    first: Vec<u8>,
    second: Vec<u8>,
}

impl Scratch {
    /// Materializes `op`'s values.
    pub fn prepare(&mut self, op: &Op) {
        match op {
            Op::Put { value, .. } | Op::Rmw { value, .. } => value.write_into(&mut self.first),
            Op::Cas { expected, new, .. } => {
                if let Some(v) = expected {
                    v.write_into(&mut self.first);
                }
                if let Some(v) = new {
                    v.write_into(&mut self.second);
                }
            }
            Op::Get { .. } | Op::Delete { .. } | Op::Scan { .. } => {}
        }
    }
}

/// Runs `op` (prepared in `scratch`) against `db`. Misses, mismatches and short scans are
/// results, not errors; only the engine's errors are returned.
pub fn execute(db: &dyn OrderedIndex, op: &Op, scratch: &Scratch) -> Result<()> {
    match op {
        Op::Get { key } => {
            db.get(key)?;
        }
        Op::Put { key, .. } => db.put(key, &scratch.first)?,
        Op::Delete { key } => {
            db.delete(key)?;
        }
        Op::Cas { key, expected, new } => {
            let expected = expected.map(|_| scratch.first.as_slice());
            let new = new.map(|_| scratch.second.as_slice());
            db.compare_and_swap(key, expected, new)?;
        }
        Op::Scan { start, limit } => {
            let range = KeyRange::new(start.as_slice()..);
            db.scan(&range, *limit as usize)?;
        }
        Op::Rmw { key, .. } => {
            db.get(key)?;
            db.put(key, &scratch.first)?;
        }
    }
    Ok(())
}
