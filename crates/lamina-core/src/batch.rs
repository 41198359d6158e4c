//! Atomic write batches: all operations apply, or none do.

use crate::error::{Error, InvalidArgument};
use crate::limits::{self, BATCH_BYTES_MAX, BATCH_OPS_MAX};

/// One operation of a [`WriteBatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// Insert or overwrite.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Remove the key if present.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
}

impl BatchOp {
    /// The key this operation writes.
    pub fn key(&self) -> &[u8] {
        match self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key } => key,
        }
    }
}

/// Operations applied atomically and in order by `OrderedIndex::write_batch`: a later
/// operation on the same key wins. Readers never observe part of a batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    ops: Vec<BatchOp>,
    bytes: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch::default()
    }

    /// Adds a put. Limits are checked by [`WriteBatch::validate`], not here, so that
    /// building a batch never fails halfway.
    pub fn put(&mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> &mut Self {
        let (key, value) = (key.into(), value.into());
        self.bytes += key.len() + value.len();
        self.ops.push(BatchOp::Put { key, value });
        self
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: impl Into<Vec<u8>>) -> &mut Self {
        let key = key.into();
        self.bytes += key.len();
        self.ops.push(BatchOp::Delete { key });
        self
    }

    /// The operations, in order.
    pub fn ops(&self) -> &[BatchOp] {
        &self.ops
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether there are no operations.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Key and value bytes in the batch.
    pub fn payload_bytes(&self) -> usize {
        self.bytes
    }

    /// Checks every key and value and the batch's size; an engine calls this before it
    /// applies anything, so a bad batch changes nothing.
    pub fn validate(&self) -> Result<(), Error> {
        if self.ops.len() > BATCH_OPS_MAX || self.bytes > BATCH_BYTES_MAX {
            return Err(InvalidArgument::BatchTooLarge {
                ops: self.ops.len(),
                bytes: self.bytes,
                ops_max: BATCH_OPS_MAX,
                bytes_max: BATCH_BYTES_MAX,
            }
            .into());
        }
        for op in &self.ops {
            limits::check_key(op.key())?;
            if let BatchOp::Put { value, .. } = op {
                limits::check_value(value)?;
            }
        }
        Ok(())
    }
}

impl FromIterator<BatchOp> for WriteBatch {
    fn from_iter<T: IntoIterator<Item = BatchOp>>(iter: T) -> Self {
        let mut batch = WriteBatch::new();
        for op in iter {
            match op {
                BatchOp::Put { key, value } => batch.put(key, value),
                BatchOp::Delete { key } => batch.delete(key),
            };
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_finds_a_bad_op_anywhere() {
        let mut batch = WriteBatch::new();
        batch.put("a", "1").delete("b").put(vec![0u8; 1025], "x");
        assert_eq!(batch.len(), 3);
        assert!(batch.validate().unwrap_err().is_invalid_argument());
        let mut batch = WriteBatch::new();
        batch.put("a", vec![0u8; 4097]);
        assert!(batch.validate().is_err());
        let mut batch = WriteBatch::new();
        batch.delete(Vec::new()).put(Vec::new(), "v");
        assert!(batch.validate().is_ok(), "the empty key is a key");
    }

    #[test]
    fn too_many_ops_is_refused() {
        let batch: WriteBatch =
            (0..=BATCH_OPS_MAX).map(|_| BatchOp::Delete { key: b"k".to_vec() }).collect();
        assert!(matches!(
            batch.validate(),
            Err(Error::InvalidArgument(InvalidArgument::BatchTooLarge { .. }))
        ));
    }
}
