//! The coalescing of one key's data entries during a merge (section 2.3): `S` is the net
//! effect of applying `S_m, S_(m-1), ..., S_0` in order. It has at most two entries (a delete
//! then an insert), and each cancellation of an insert by a delete lowers both counters.

use crate::entry::{Entry, insert_bytes};

/// The net data entries of one key after a merge, and the cancellations that produced them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Net {
    /// A delete entry survives (it cancels an insert below the merged levels).
    pub delete: bool,
    /// The surviving insert entry's value.
    pub insert: Option<Vec<u8>>,
    /// Insert/delete pairs that cancelled out.
    pub cancellations: u64,
    /// Encoded bytes of the cancelled insert entries.
    pub cancelled_bytes: u64,
}

impl Net {
    /// The entries to write, in level order (the value moves).
    pub fn into_entries(self, key: &[u8]) -> impl Iterator<Item = Entry> {
        let d = self.delete.then(|| Entry::Delete { key: key.to_vec() });
        let i = self.insert.map(|value| Entry::Insert { key: key.to_vec(), value });
        d.into_iter().chain(i)
    }
}

/// Coalesces the data entries of `key`, given level by level from the deepest merged level
/// up to `L_0` (consumed: values move into the result). An impossible sequence (two inserts
/// without a delete between them, or a delete with nothing to cancel) is reported as an
/// error: it means corrupt levels.
pub fn coalesce<L: IntoIterator<Item = Entry>>(
    key: &[u8],
    levels_deepest_first: impl IntoIterator<Item = L>,
) -> Result<Net, &'static str> {
    let mut net = Net::default();
    for level in levels_deepest_first {
        for e in level {
            match e {
                Entry::Delete { .. } => {
                    if let Some(v) = net.insert.take() {
                        net.cancellations += 1;
                        net.cancelled_bytes += insert_bytes(key.len(), v.len()) as u64;
                    } else if net.delete {
                        return Err("two delete entries for one key with no insert between");
                    } else {
                        net.delete = true;
                    }
                }
                Entry::Insert { value, .. } => {
                    if net.insert.is_some() {
                        return Err("two insert entries for one key with no delete between");
                    }
                    net.insert = Some(value);
                }
                Entry::Fence { .. } => {}
            }
        }
    }
    Ok(net)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(v: &[u8]) -> Entry {
        Entry::Insert { key: b"k".to_vec(), value: v.to_vec() }
    }
    fn d() -> Entry {
        Entry::Delete { key: b"k".to_vec() }
    }

    #[test]
    fn the_four_cases() {
        let n = coalesce(b"k", [vec![i(b"a")], vec![d(), i(b"b")]]).unwrap();
        assert_eq!((n.delete, n.insert.as_deref(), n.cancellations), (false, Some(&b"b"[..]), 1));
        let n = coalesce(b"k", [vec![d()], vec![i(b"b")]]).unwrap();
        assert_eq!((n.delete, n.insert.as_deref(), n.cancellations), (true, Some(&b"b"[..]), 0));
        let n = coalesce(b"k", [vec![i(b"a")], vec![d()]]).unwrap();
        assert_eq!((n.delete, n.insert.is_none(), n.cancellations), (false, true, 1));
        assert_eq!(n.cancelled_bytes, insert_bytes(1, 1) as u64);
        let n = coalesce(b"k", [vec![], vec![d()]]).unwrap();
        assert!(n.delete && n.insert.is_none());
    }

    #[test]
    fn impossible_sequences_are_errors() {
        assert!(coalesce(b"k", [vec![i(b"a")], vec![i(b"b")]]).is_err());
        assert!(coalesce(b"k", [vec![d()], vec![d()]]).is_err());
    }
}
