//! Byte and entry counts of one level or run, kept exact by what wrote it. The tree's
//! counters `N_delta` and `N_nabla` (section 2.1) and merge-prepare's sizes (eq. 1) are sums
//! of these.

use lamina_core::codec::{DecodeError, Reader};

use super::entry::EntryRef;

/// Counts of one level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Insert entries.
    pub inserts: u64,
    /// Delete entries.
    pub deletes: u64,
    /// Encoded bytes of insert entries.
    pub insert_bytes: u64,
    /// Encoded bytes of delete entries.
    pub delete_bytes: u64,
    /// Sum of the delete entries' `cancelled_len` (bytes of inserts they were issued to
    /// cancel; see `entry.rs`).
    pub cancelled_bytes: u64,
    /// Encoded bytes of all fences.
    pub fence_bytes: u64,
    /// Encoded bytes of the fences that start a block (I2): block overhead, excluded from
    /// the level's size.
    pub leading_fence_bytes: u64,
}

impl LevelStats {
    /// Counts one entry; `leading` when it is the first entry of its block.
    pub fn add(&mut self, e: &EntryRef<'_>, leading: bool) {
        let n = e.encoded_len() as u64;
        match *e {
            EntryRef::Fence { .. } => {
                self.fence_bytes += n;
                if leading {
                    self.leading_fence_bytes += n;
                }
            }
            EntryRef::Delete { cancelled_len, .. } => {
                self.deletes += 1;
                self.delete_bytes += n;
                self.cancelled_bytes += u64::from(cancelled_len);
            }
            EntryRef::Insert { .. } => {
                self.inserts += 1;
                self.insert_bytes += n;
            }
        }
    }

    /// Adds another level's counts.
    pub fn merge(&mut self, o: &LevelStats) {
        self.inserts += o.inserts;
        self.deletes += o.deletes;
        self.insert_bytes += o.insert_bytes;
        self.delete_bytes += o.delete_bytes;
        self.cancelled_bytes += o.cancelled_bytes;
        self.fence_bytes += o.fence_bytes;
        self.leading_fence_bytes += o.leading_fence_bytes;
    }

    /// Encoded bytes of data entries.
    pub fn data_bytes(&self) -> u64 {
        self.insert_bytes + self.delete_bytes
    }

    /// Data entries.
    pub fn data_entries(&self) -> u64 {
        self.inserts + self.deletes
    }

    /// Bytes that count toward the level's size `B(L_i)` (see `options.rs`).
    pub fn sized_bytes(&self) -> u64 {
        self.data_bytes() + self.fence_bytes - self.leading_fence_bytes
    }

    /// Appends the seven counts, 8 bytes each, little-endian.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        for v in [
            self.inserts,
            self.deletes,
            self.insert_bytes,
            self.delete_bytes,
            self.cancelled_bytes,
            self.fence_bytes,
            self.leading_fence_bytes,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// Reads what [`LevelStats::encode_to`] wrote, checking that it is consistent.
    pub fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let s = LevelStats {
            inserts: r.u64()?,
            deletes: r.u64()?,
            insert_bytes: r.u64()?,
            delete_bytes: r.u64()?,
            cancelled_bytes: r.u64()?,
            fence_bytes: r.u64()?,
            leading_fence_bytes: r.u64()?,
        };
        let sane = s.leading_fence_bytes <= s.fence_bytes
            && s.insert_bytes >= s.inserts
            && s.delete_bytes >= s.deletes
            && s.insert_bytes.checked_add(s.delete_bytes).is_some()
            && (s.insert_bytes + s.delete_bytes).checked_add(s.fence_bytes).is_some();
        if !sane {
            return Err(r.error(format!("inconsistent level counts {s:?}")));
        }
        Ok(s)
    }
}
