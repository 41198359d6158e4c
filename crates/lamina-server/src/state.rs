//! The server's own persistent state, one record in the engine beside the items: the CAS
//! token lease (so tokens stay unique and increasing across restarts, crashes included)
//! and the `flush_all` epoch.
//!
//! The record lives under [`STATE_KEY`], a key of [`INTERNAL_KEY_BYTES`] bytes: longer than
//! any memcached key (250 bytes, base64 keys included), so no client can read, overwrite or
//! scan it. Layout (little-endian; `docs/format/server-item.md`):
//!
//! ```text
//! offset size field
//!      0    1 STATE_MAGIC (0xA2: format 1)
//!      1    8 cas_lease: every token handed out so far is below it
//!      9    8 flush_epoch: the number of flush_all applied; items stored in an earlier
//!             epoch are dead (at most u32::MAX: items hold it in 32 bits)
//!     17    8 flush_pending_at_secs: Unix time of a delayed flush_all not yet applied; 0 none
//! ```
//!
//! Tokens are handed out from memory; when the next one would reach the lease, the lease is
//! raised by [`CAS_LEASE_TOKENS`] and written and synced *before* any token beyond the old
//! lease is returned. After a restart the first token is the stored lease, above every
//! token ever handed out, at the cost of skipping at most `CAS_LEASE_TOKENS` numbers.
//!
//! A flush is an epoch rather than a CAS watermark because clients may choose CAS tokens
//! (meta `E`): an item stored after a flush with a small client token must stay live.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use lamina::Db;
use lamina_core::codec::{Decode, DecodeError, Encode};
use lamina_core::{Error, Result};
use parking_lot::Mutex;

use crate::protocol::KEY_BYTES_MAX;

/// Length of internal keys: more than any client key can have.
pub const INTERNAL_KEY_BYTES: usize = 256;
const _: () = assert!(INTERNAL_KEY_BYTES > KEY_BYTES_MAX);

/// The key of the state record: `\0lamina-serve/state`, zero-padded to
/// [`INTERNAL_KEY_BYTES`].
pub const STATE_KEY: [u8; INTERNAL_KEY_BYTES] = {
    let name = b"\0lamina-serve/state";
    let mut key = [0u8; INTERNAL_KEY_BYTES];
    let mut i = 0;
    while i < name.len() {
        key[i] = name[i];
        i += 1;
    }
    key
};

/// First byte of the state record.
pub const STATE_MAGIC: u8 = 0xA2;
/// Bytes of the state record.
pub const STATE_BYTES: usize = 25;
/// Tokens leased per persisted lease: one synced write per this many modifications.
pub const CAS_LEASE_TOKENS: u64 = 1 << 20;

/// The state record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerState {
    /// Every CAS token handed out is below this.
    pub cas_lease: u64,
    /// `flush_all`s applied so far; items stored in an earlier epoch are dead.
    pub flush_epoch: u64,
    /// A delayed `flush_all` takes effect at this Unix time; 0: none pending.
    pub flush_pending_at_secs: u64,
}

impl Encode for ServerState {
    fn encoded_len(&self) -> usize {
        STATE_BYTES
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(STATE_MAGIC);
        out.extend_from_slice(&self.cas_lease.to_le_bytes());
        out.extend_from_slice(&self.flush_epoch.to_le_bytes());
        out.extend_from_slice(&self.flush_pending_at_secs.to_le_bytes());
    }
}

impl Decode for ServerState {
    fn decode(input: &[u8]) -> std::result::Result<Self, DecodeError> {
        if input.len() != STATE_BYTES {
            return Err(DecodeError::new(
                0,
                format!("server state of {} bytes, expected {STATE_BYTES}", input.len()),
            ));
        }
        if input[0] != STATE_MAGIC {
            return Err(DecodeError::new(0, format!("server state magic {:#04x}", input[0])));
        }
        let u64_at = |at: usize| u64::from_le_bytes(input[at..at + 8].try_into().unwrap());
        let state = ServerState {
            cas_lease: u64_at(1),
            flush_epoch: u64_at(9),
            flush_pending_at_secs: u64_at(17),
        };
        if state.flush_epoch > u64::from(u32::MAX) {
            return Err(DecodeError::new(9, "flush epoch past 32 bits"));
        }
        Ok(state)
    }
}

/// The CAS token source and the flush epoch, backed by the state record.
///
/// Invariant: `next < lease` for every token returned, and `lease` is durable in the engine
/// before `next` passes the previous durable lease.
#[derive(Debug)]
pub struct Clock {
    /// The next token to hand out.
    next: AtomicU64,
    /// A copy of `persisted.cas_lease`, read without the lock on the fast path.
    lease: AtomicU64,
    /// The current flush epoch (a copy of `persisted.flush_epoch`).
    flush_epoch: AtomicU32,
    /// A copy of `persisted.flush_pending_at_secs`.
    flush_pending_at: AtomicU64,
    /// The record as last written; held while writing it.
    persisted: Mutex<ServerState>,
}

impl Clock {
    /// Loads the state record (a new database starts at token 1), applies a delayed flush
    /// that came due while the server was down, and writes the first lease of this run.
    pub fn open(db: &Db, now_secs: u64) -> Result<Clock> {
        let mut state = match db.get(STATE_KEY)? {
            Some(bytes) => ServerState::decode(&bytes).map_err(|e| {
                Error::corruption(db.dir(), 0, format!("the server state record: {e}"))
            })?,
            None => ServerState { cas_lease: 1, ..ServerState::default() },
        };
        let first = state.cas_lease.max(1);
        if state.flush_pending_at_secs != 0 && state.flush_pending_at_secs <= now_secs {
            // Every item stored before the restart predates the flush time.
            state.flush_epoch = next_epoch(state.flush_epoch)?;
            state.flush_pending_at_secs = 0;
        }
        state.cas_lease = first + CAS_LEASE_TOKENS;
        persist(db, &state)?;
        Ok(Clock {
            next: AtomicU64::new(first),
            lease: AtomicU64::new(state.cas_lease),
            flush_epoch: AtomicU32::new(state.flush_epoch as u32),
            flush_pending_at: AtomicU64::new(state.flush_pending_at_secs),
            persisted: Mutex::new(state),
        })
    }

    /// A new CAS token, larger than every token handed out before (in this run and any
    /// earlier one).
    pub fn next_cas(&self, db: &Db) -> Result<u64> {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        if token < self.lease.load(Ordering::Acquire) {
            return Ok(token);
        }
        let mut state = self.persisted.lock();
        while token >= state.cas_lease {
            let mut raised = *state;
            raised.cas_lease = state.cas_lease + CAS_LEASE_TOKENS;
            persist(db, &raised)?;
            *state = raised;
        }
        self.lease.store(state.cas_lease, Ordering::Release);
        Ok(token)
    }

    /// The epoch new items are stored in.
    pub fn flush_epoch(&self) -> u32 {
        self.flush_epoch.load(Ordering::Acquire)
    }

    /// Whether an item stored in `epoch` was flushed.
    pub fn is_flushed(&self, epoch: u32) -> bool {
        epoch < self.flush_epoch()
    }

    /// Applies a delayed flush if it is due at `now_secs`. Cheap when none is pending.
    pub fn apply_due_flush(&self, db: &Db, now_secs: u64) -> Result<()> {
        let pending = self.flush_pending_at.load(Ordering::Acquire);
        if pending == 0 || pending > now_secs {
            return Ok(());
        }
        let mut state = self.persisted.lock();
        if state.flush_pending_at_secs == 0 || state.flush_pending_at_secs > now_secs {
            return Ok(()); // applied or replaced meanwhile
        }
        self.flush_locked(db, &mut state, 0)
    }

    /// `flush_all`: every item stored before `at_secs` (0: now) dies at `at_secs`.
    pub fn flush(&self, db: &Db, at_secs: u64, now_secs: u64) -> Result<()> {
        let mut state = self.persisted.lock();
        if at_secs > now_secs {
            let mut pending = *state;
            pending.flush_pending_at_secs = at_secs;
            persist(db, &pending)?;
            *state = pending;
            self.flush_pending_at.store(at_secs, Ordering::Release);
            return Ok(());
        }
        self.flush_locked(db, &mut state, 0)
    }

    fn flush_locked(&self, db: &Db, state: &mut ServerState, pending_at: u64) -> Result<()> {
        // Items stored concurrently with the flush may be stamped with either epoch, as in
        // memcached where such a set may land before or after the flush.
        let mut flushed = *state;
        flushed.flush_epoch = next_epoch(state.flush_epoch)?;
        flushed.flush_pending_at_secs = pending_at;
        persist(db, &flushed)?;
        *state = flushed;
        self.flush_epoch.store(flushed.flush_epoch as u32, Ordering::Release);
        self.flush_pending_at.store(pending_at, Ordering::Release);
        Ok(())
    }

    /// The state as last persisted (for stats and tests).
    pub fn state(&self) -> ServerState {
        *self.persisted.lock()
    }
}

/// The epoch after `epoch`; refused (nothing changes) once items could not hold it.
fn next_epoch(epoch: u64) -> Result<u64> {
    if epoch >= u64::from(u32::MAX) {
        return Err(Error::Unsupported {
            what: format!("flush_all: {epoch} flushes is the most a database can record"),
        });
    }
    Ok(epoch + 1)
}

/// Writes the state record and makes it durable, whatever the database's durability.
fn persist(db: &Db, state: &ServerState) -> Result<()> {
    db.put(STATE_KEY, state.encode())?;
    db.sync()
}

#[cfg(test)]
mod tests {
    use lamina::{Durability, EngineKind, Options};

    use super::*;

    fn open(dir: &std::path::Path) -> Db {
        let options =
            Options { engine: EngineKind::Mem, durability: Durability::None, ..Options::default() };
        Db::open(dir, options).unwrap()
    }

    #[test]
    fn state_roundtrips_and_rejects_damage() {
        let state = ServerState { cas_lease: 99, flush_epoch: 7, flush_pending_at_secs: 5 };
        let bytes = state.encode();
        assert_eq!(bytes.len(), STATE_BYTES);
        assert_eq!(ServerState::decode(&bytes).unwrap(), state);
        assert!(ServerState::decode(&bytes[..STATE_BYTES - 1]).is_err());
        let mut bad = bytes.clone();
        bad[0] ^= 1;
        assert!(ServerState::decode(&bad).is_err());
        let mut bad = bytes;
        bad[9..17].copy_from_slice(&(1u64 << 32).to_le_bytes());
        assert_eq!(ServerState::decode(&bad).unwrap_err().offset, 9);
    }

    #[test]
    fn tokens_increase_across_reopens_and_leases() {
        let dir = tempfile::tempdir().unwrap();
        let mut last = 0;
        for _ in 0..3 {
            let db = open(dir.path());
            let clock = Clock::open(&db, 1000).unwrap();
            for _ in 0..10 {
                let token = clock.next_cas(&db).unwrap();
                assert!(token > last, "{token} after {last}");
                last = token;
            }
            db.close().unwrap();
        }
    }

    #[test]
    fn a_lease_is_raised_when_used_up() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let clock = Clock::open(&db, 1000).unwrap();
        let lease = clock.state().cas_lease;
        clock.next.store(lease - 1, Ordering::Relaxed);
        assert_eq!(clock.next_cas(&db).unwrap(), lease - 1);
        assert_eq!(clock.next_cas(&db).unwrap(), lease);
        assert_eq!(clock.state().cas_lease, lease + CAS_LEASE_TOKENS);
    }

    #[test]
    fn flush_now_and_delayed_and_across_restart() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let clock = Clock::open(&db, 1000).unwrap();
        let old = clock.flush_epoch();
        clock.flush(&db, 0, 1000).unwrap();
        assert!(clock.is_flushed(old));
        let newer = clock.flush_epoch();
        assert!(!clock.is_flushed(newer));
        clock.flush(&db, 1010, 1000).unwrap();
        clock.apply_due_flush(&db, 1009).unwrap();
        assert!(!clock.is_flushed(newer));
        clock.apply_due_flush(&db, 1010).unwrap();
        assert!(clock.is_flushed(newer));
        // A delayed flush that comes due while the server is down applies at open.
        let before = clock.flush_epoch();
        clock.flush(&db, 1020, 1011).unwrap();
        db.close().unwrap();
        drop(db);
        let db = open(dir.path());
        let clock = Clock::open(&db, 1030).unwrap();
        assert!(clock.is_flushed(before));
        assert!(!clock.is_flushed(clock.flush_epoch()));
        assert_eq!(clock.state().flush_pending_at_secs, 0);
    }
}
