//! Algorithm 2 within one block, on the encoded payload: finds the key's data entries (the
//! four cases of section 2.2) and the fence with the largest key `<= key` (footnote 4) in one
//! forward pass that stops at the first larger key, without decoding the block into owned
//! entries (lookups and the existence check of every put run this on each level).

use lamina_core::codec::{DecodeError, Reader};

use crate::entry::{BlockPtr, KIND_DELETE, KIND_FENCE, KIND_INSERT};

/// The data entries of the key in this block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataHit {
    /// Case 1: none; follow the fence.
    None,
    /// Case 3: a delete entry only; the key is absent.
    Delete,
    /// Cases 2 and 4: the insert entry's value.
    Insert(Vec<u8>),
}

/// What one block says about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The key's data entries.
    pub data: DataHit,
    /// The fence with the largest key `<= key`, if any.
    pub fence: Option<BlockPtr>,
}

/// Probes an encoded block payload (see `block.rs`) for `key`.
pub fn probe(
    payload: &[u8],
    key: &[u8],
    key_bytes_max: usize,
    value_bytes_max: usize,
) -> Result<Probe, DecodeError> {
    let mut r = Reader::new(payload);
    let count = r.u32()?;
    let mut out = Probe { data: DataHit::None, fence: None };
    for _ in 0..count {
        let at = r.position();
        let kind = r.u8()?;
        let k = r.bytes_with_len(key_bytes_max)?;
        let past = k > key;
        match kind {
            KIND_FENCE => {
                let ptr = BlockPtr { file: r.u32()?, index: r.u32()? };
                if !past {
                    out.fence = Some(ptr);
                }
            }
            KIND_DELETE => {
                if k == key {
                    out.data = DataHit::Delete;
                }
            }
            KIND_INSERT => {
                let v = r.bytes_with_len(value_bytes_max)?;
                if k == key {
                    out.data = DataHit::Insert(v.to_vec());
                }
            }
            other => return Err(DecodeError::new(at, format!("unknown entry kind {other}"))),
        }
        if past {
            break; // entries are sorted: nothing further can match
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::Block;
    use crate::entry::Entry;

    #[test]
    fn probe_agrees_with_the_decoded_block() {
        let p = |i| BlockPtr { file: 1, index: i };
        let block = Block {
            entries: vec![
                Entry::Fence { key: vec![], ptr: p(0) },
                Entry::Insert { key: b"a".to_vec(), value: b"1".to_vec() },
                Entry::Fence { key: b"c".to_vec(), ptr: p(1) },
                Entry::Delete { key: b"c".to_vec() },
                Entry::Insert { key: b"c".to_vec(), value: b"3".to_vec() },
                Entry::Delete { key: b"d".to_vec() },
                Entry::Fence { key: b"f".to_vec(), ptr: p(2) },
            ],
        };
        let payload = block.encode_payload();
        let at = |k: &[u8]| probe(&payload, k, 8, 8).unwrap();
        assert_eq!(at(b"a"), Probe { data: DataHit::Insert(b"1".to_vec()), fence: Some(p(0)) });
        assert_eq!(at(b"b"), Probe { data: DataHit::None, fence: Some(p(0)) });
        assert_eq!(at(b"c"), Probe { data: DataHit::Insert(b"3".to_vec()), fence: Some(p(1)) });
        assert_eq!(at(b"d"), Probe { data: DataHit::Delete, fence: Some(p(1)) });
        assert_eq!(at(b"z"), Probe { data: DataHit::None, fence: Some(p(2)) });
        assert!(probe(&payload[..payload.len() - 3], b"z", 8, 8).is_err());
    }
}
