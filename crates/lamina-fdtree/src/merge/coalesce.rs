//! The coalescing of one key's data entries during a merge (section 2.3): `S` is the net
//! effect of applying `S_m, S_(m-1), ..., S_0` in order.
//!
//! Each merged level holds at most one data entry per key (puts are blind, `entry.rs`), so
//! the net effect is the newest entry: it shadows the older ones, which are dropped. A
//! delete entry that wins a full merge is dropped too (nothing below it is left to cancel),
//! and one that survives a partial merge in which it cancelled an insert no longer cancels
//! anything it was counted for (its `cancelled_len` becomes 0, which keeps the live-size
//! estimate an upper bound).

use crate::format::entry::EntryRef;

/// The net data entry of one key after a merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net<'a> {
    /// The entry to write, if any.
    pub entry: Option<EntryRef<'a>>,
    /// Older entries dropped (shadowed by a newer one of the key).
    pub shadowed: u64,
}

/// Coalesces the data entries of one key, given newest first (`L_0`'s runs, newest first,
/// then `L_1..L_m`). `full`: the merge reads every level.
pub fn coalesce<'a>(newest_first: impl IntoIterator<Item = EntryRef<'a>>, full: bool) -> Net<'a> {
    let mut it = newest_first.into_iter();
    let Some(newest) = it.next() else { return Net { entry: None, shadowed: 0 } };
    debug_assert!(newest.is_data(), "fences are not coalesced");
    let mut shadowed = 0;
    let mut cancelled_insert = false;
    for older in it {
        debug_assert!(older.is_data() && older.key() == newest.key());
        shadowed += 1;
        cancelled_insert |= matches!(older, EntryRef::Insert { .. });
    }
    let entry = match newest {
        EntryRef::Delete { .. } if full => None,
        EntryRef::Delete { key, .. } if cancelled_insert => {
            Some(EntryRef::Delete { key, cancelled_len: 0 })
        }
        e => Some(e),
    };
    Net { entry, shadowed }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(v: &'static [u8]) -> EntryRef<'static> {
        EntryRef::Insert { key: b"k", value: v }
    }
    fn d(c: u32) -> EntryRef<'static> {
        EntryRef::Delete { key: b"k", cancelled_len: c }
    }

    #[test]
    fn the_newest_entry_wins() {
        assert_eq!(coalesce([i(b"b"), i(b"a")], false), Net { entry: Some(i(b"b")), shadowed: 1 });
        assert_eq!(
            coalesce([i(b"b"), d(3), i(b"a")], true),
            Net { entry: Some(i(b"b")), shadowed: 2 }
        );
        assert_eq!(coalesce([d(3)], false), Net { entry: Some(d(3)), shadowed: 0 });
        assert_eq!(coalesce([], false), Net { entry: None, shadowed: 0 });
    }

    #[test]
    fn deletes_go_at_the_bottom_and_forget_what_they_cancelled() {
        assert_eq!(coalesce([d(3)], true), Net { entry: None, shadowed: 0 });
        assert_eq!(coalesce([d(3), i(b"a")], true), Net { entry: None, shadowed: 1 });
        assert_eq!(coalesce([d(3), i(b"a")], false), Net { entry: Some(d(0)), shadowed: 1 });
        assert_eq!(coalesce([d(3), d(5)], false), Net { entry: Some(d(3)), shadowed: 1 });
    }
}
