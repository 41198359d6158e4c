//! An item: the memcached metadata (client flags, CAS token, expiry, meta-protocol state)
//! and the data, stored together as one engine record so that every command is one
//! single-key engine operation (atomic with `compare_and_swap`).
//!
//! Layout of the engine value (little-endian; `docs/format/server-item.md`):
//!
//! ```text
//! offset size field
//!      0    1 ITEM_MAGIC (0xA1: format 1 of the item header)
//!      1    1 state bits: ITEM_STALE (0x01), ITEM_WIN_SENT (0x02); others must be 0
//!      2    4 client flags (opaque to the server; 32 bits, as memcached)
//!      6    8 CAS token (unique per modification unless the client sets it; never 0)
//!     14    4 expiry: Unix seconds at which the item dies; 0 never (32 bits, as memcached)
//!     18    4 flush epoch: the `flush_all` count when the item was stored; an item from an
//!             earlier epoch was flushed
//!     22    n the data (0 <= n <= ITEM_DATA_BYTES_MAX)
//! ```

use lamina_core::codec::{Decode, DecodeError, Encode};
use lamina_core::limits::VALUE_BYTES_MAX;

use crate::protocol::ExpTime;

/// First byte of every item record.
pub const ITEM_MAGIC: u8 = 0xA1;
/// Bytes of the header before the data.
pub const ITEM_HEADER_BYTES: usize = 22;
/// The largest data block an item holds: the engine's value limit minus the header.
pub const ITEM_DATA_BYTES_MAX: usize = VALUE_BYTES_MAX - ITEM_HEADER_BYTES;
/// State bit: the item was invalidated (`md ... I`, `ms ... I`): served with the `X` flag.
pub const ITEM_STALE: u8 = 0x01;
/// State bit: a client was handed the recache win token (`W`); others now see `Z`.
pub const ITEM_WIN_SENT: u8 = 0x02;
/// The state bits this format defines.
const ITEM_STATE_KNOWN: u8 = ITEM_STALE | ITEM_WIN_SENT;

/// The latest expiry an item can have (32-bit Unix seconds: early 2106). Later times are
/// clamped to it, as memcached's 32-bit times are.
pub const EXPIRY_SECS_MAX: u64 = u32::MAX as u64;

/// memcached's boundary between relative and absolute expiry times: 30 days in seconds.
pub const RELATIVE_EXPTIME_SECS_MAX: i64 = 60 * 60 * 24 * 30;

/// The metadata of one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemHeader {
    /// `ITEM_STALE` / `ITEM_WIN_SENT` bits.
    pub state: u8,
    /// The client's opaque flags.
    pub client_flags: u32,
    /// The CAS token of the item's last modification.
    pub cas: u64,
    /// Unix seconds at which the item dies; 0: never. At most [`EXPIRY_SECS_MAX`].
    pub expires_at_secs: u64,
    /// The server's `flush_all` epoch when the item was stored (see `state.rs`).
    pub flush_epoch: u32,
}

impl ItemHeader {
    /// Whether the item is dead at `now_secs` by its expiry time.
    pub fn is_expired(&self, now_secs: u64) -> bool {
        self.expires_at_secs != 0 && self.expires_at_secs <= now_secs
    }

    /// Remaining seconds to live at `now_secs` (memcached's `t` flag): -1 if unlimited.
    pub fn ttl_secs(&self, now_secs: u64) -> i64 {
        if self.expires_at_secs == 0 {
            -1
        } else {
            self.expires_at_secs.saturating_sub(now_secs) as i64
        }
    }

    /// Whether the stale bit is set.
    pub fn is_stale(&self) -> bool {
        self.state & ITEM_STALE != 0
    }

    /// Whether a recache win token was handed out.
    pub fn win_sent(&self) -> bool {
        self.state & ITEM_WIN_SENT != 0
    }
}

/// Resolves a client's exptime (memcached's rules) into an absolute expiry at `now_secs`:
/// `Some(0)` never expires, `Some(t)` dies at `t`, `None` is already expired (a negative
/// exptime, or an absolute time in the past: memcached stores such items dead).
pub fn expiry_at(exptime: ExpTime, now_secs: u64) -> Option<u64> {
    match exptime {
        0 => Some(0),
        t if t < 0 => None,
        t if t <= RELATIVE_EXPTIME_SECS_MAX => Some((now_secs + t as u64).min(EXPIRY_SECS_MAX)),
        t if (t as u64) <= now_secs => None,
        t => Some((t as u64).min(EXPIRY_SECS_MAX)),
    }
}

/// A decoded item record, borrowing its data from the record's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemRef<'a> {
    /// The metadata.
    pub header: ItemHeader,
    /// The data block.
    pub data: &'a [u8],
}

impl<'a> ItemRef<'a> {
    /// Decodes a record (an engine value), borrowing its data.
    pub fn parse(record: &'a [u8]) -> Result<ItemRef<'a>, DecodeError> {
        if record.len() < ITEM_HEADER_BYTES {
            return Err(DecodeError::new(
                record.len(),
                format!(
                    "item record of {} bytes is shorter than its {ITEM_HEADER_BYTES}-byte header",
                    record.len()
                ),
            ));
        }
        if record[0] != ITEM_MAGIC {
            return Err(DecodeError::new(
                0,
                format!("item magic {:#04x}, expected {ITEM_MAGIC:#04x}", record[0]),
            ));
        }
        let state = record[1];
        if state & !ITEM_STATE_KNOWN != 0 {
            return Err(DecodeError::new(1, format!("unknown item state bits {state:#04x}")));
        }
        let u32_at = |at: usize| u32::from_le_bytes(record[at..at + 4].try_into().unwrap());
        let header = ItemHeader {
            state,
            client_flags: u32_at(2),
            cas: u64::from_le_bytes(record[6..14].try_into().unwrap()),
            expires_at_secs: u64::from(u32_at(14)),
            flush_epoch: u32_at(18),
        };
        if header.cas == 0 {
            return Err(DecodeError::new(6, "item CAS token 0 (tokens start at 1)"));
        }
        Ok(ItemRef { header, data: &record[ITEM_HEADER_BYTES..] })
    }
}

/// An item to be written: its header and its data in pieces (append and prepend write the
/// old and new data without concatenating them first).
#[derive(Debug, Clone, Copy)]
pub struct ItemWrite<'a> {
    /// The metadata.
    pub header: ItemHeader,
    /// The data, the concatenation of these slices.
    pub data: [&'a [u8]; 2],
}

impl ItemWrite<'_> {
    /// Bytes of data.
    pub fn data_len(&self) -> usize {
        self.data[0].len() + self.data[1].len()
    }
}

impl Encode for ItemWrite<'_> {
    fn encoded_len(&self) -> usize {
        ITEM_HEADER_BYTES + self.data_len()
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        assert!(self.data_len() <= ITEM_DATA_BYTES_MAX, "item data over the limit");
        assert!(self.header.cas != 0, "CAS tokens start at 1");
        assert_eq!(self.header.state & !ITEM_STATE_KNOWN, 0, "unknown state bits");
        assert!(self.header.expires_at_secs <= EXPIRY_SECS_MAX, "expiry past 32 bits");
        out.push(ITEM_MAGIC);
        out.push(self.header.state);
        out.extend_from_slice(&self.header.client_flags.to_le_bytes());
        out.extend_from_slice(&self.header.cas.to_le_bytes());
        out.extend_from_slice(&(self.header.expires_at_secs as u32).to_le_bytes());
        out.extend_from_slice(&self.header.flush_epoch.to_le_bytes());
        out.extend_from_slice(self.data[0]);
        out.extend_from_slice(self.data[1]);
    }
}

/// An owned item, for tests and tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The metadata.
    pub header: ItemHeader,
    /// The data.
    pub data: Vec<u8>,
}

impl Encode for Item {
    fn encoded_len(&self) -> usize {
        ITEM_HEADER_BYTES + self.data.len()
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        ItemWrite { header: self.header, data: [&self.data, &[]] }.encode_to(out);
    }
}

impl Decode for Item {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let item = ItemRef::parse(input)?;
        Ok(Item { header: item.header, data: item.data.to_vec() })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn header(cas: u64) -> ItemHeader {
        ItemHeader {
            state: ITEM_STALE,
            client_flags: 0xDEAD_BEEF,
            cas,
            expires_at_secs: 1 << 31,
            flush_epoch: 3,
        }
    }

    #[test]
    fn layout_is_as_documented() {
        let item = Item { header: header(7), data: b"xyz".to_vec() };
        let bytes = item.encode();
        assert_eq!(bytes.len(), ITEM_HEADER_BYTES + 3);
        assert_eq!(bytes[0], ITEM_MAGIC);
        assert_eq!(bytes[1], ITEM_STALE);
        assert_eq!(&bytes[2..6], &0xDEAD_BEEFu32.to_le_bytes());
        assert_eq!(&bytes[6..14], &7u64.to_le_bytes());
        assert_eq!(&bytes[14..18], &(1u32 << 31).to_le_bytes());
        assert_eq!(&bytes[18..22], &3u32.to_le_bytes());
        assert_eq!(&bytes[22..], b"xyz");
    }

    #[test]
    fn corruption_is_an_error_naming_the_offset() {
        let good = Item { header: header(9), data: b"v".to_vec() }.encode();
        assert_eq!(Item::decode(&good[..ITEM_HEADER_BYTES - 1]).unwrap_err().offset, 21);
        let mut bad = good.clone();
        bad[0] = 0;
        assert_eq!(Item::decode(&bad).unwrap_err().offset, 0);
        let mut bad = good.clone();
        bad[1] = 0x80;
        assert_eq!(Item::decode(&bad).unwrap_err().offset, 1);
        let mut bad = good;
        bad[6..14].fill(0);
        assert_eq!(Item::decode(&bad).unwrap_err().offset, 6);
    }

    #[test]
    fn exptime_rules_follow_memcached() {
        let now = 1_700_000_000;
        assert_eq!(expiry_at(0, now), Some(0));
        assert_eq!(expiry_at(-1, now), None);
        assert_eq!(expiry_at(10, now), Some(now + 10));
        assert_eq!(
            expiry_at(RELATIVE_EXPTIME_SECS_MAX, now),
            Some(now + RELATIVE_EXPTIME_SECS_MAX as u64)
        );
        assert_eq!(expiry_at(RELATIVE_EXPTIME_SECS_MAX + 1, now), None, "absolute, in the past");
        assert_eq!(expiry_at(now as i64 + 5, now), Some(now + 5));
        assert_eq!(expiry_at(i64::MAX, now), Some(EXPIRY_SECS_MAX), "clamped to 32 bits");
        let h = ItemHeader {
            state: 0,
            client_flags: 0,
            cas: 1,
            expires_at_secs: now + 5,
            flush_epoch: 0,
        };
        assert!(!h.is_expired(now + 4));
        assert!(h.is_expired(now + 5));
        assert_eq!(h.ttl_secs(now), 5);
        assert_eq!(ItemHeader { expires_at_secs: 0, ..h }.ttl_secs(now), -1);
    }

    proptest! {
        #[test]
        fn roundtrip(state in 0u8..4, flags: u32, cas in 1u64.., exp in 0..=EXPIRY_SECS_MAX,
                     epoch: u32,
                     data in proptest::collection::vec(any::<u8>(), 0..=ITEM_DATA_BYTES_MAX)) {
            let item = Item {
                header: ItemHeader {
                    state,
                    client_flags: flags,
                    cas,
                    expires_at_secs: exp,
                    flush_epoch: epoch,
                },
                data,
            };
            prop_assert_eq!(Item::decode(&item.encode()).unwrap(), item);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Item::decode(&bytes);
        }
    }
}
