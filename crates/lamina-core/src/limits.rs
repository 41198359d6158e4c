//! Named limits of the API. Every entry point checks its input against these before it
//! changes anything, so oversized input is refused with [`Error::InvalidArgument`] and the
//! store is left as it was.
//!
//! The numbers are those of the SIGMOD 2011 programming contest API (keys of 0 to 1024
//! bytes, values of up to 4096 bytes), which docs/DESIGN.md adopts for every engine. The
//! empty key is a key like any other (as in the contest, RocksDB, LevelDB and Berkeley DB):
//! every engine stores it, and it sorts before every other key.

use crate::error::{Error, InvalidArgument};

/// Smallest key, in bytes: the empty key is valid and sorts first. (Until format changes of
/// November 2026 it was 1, and engines used the empty key as "-infinity"; none does now.)
pub const KEY_BYTES_MIN: usize = 0;
/// Largest key, in bytes.
pub const KEY_BYTES_MAX: usize = 1024;
/// Largest value, in bytes. The empty value is allowed.
pub const VALUE_BYTES_MAX: usize = 4096;
/// Most operations in one [`crate::WriteBatch`]. Bounds the memory one call may pin.
pub const BATCH_OPS_MAX: usize = 65_536;
/// Most key and value bytes in one [`crate::WriteBatch`] (64 MiB).
pub const BATCH_BYTES_MAX: usize = 64 << 20;
/// Most entries one `scan` call returns; larger requests are paged by the caller.
pub const SCAN_LIMIT_MAX: usize = 1 << 20;

/// Checks a key against [`KEY_BYTES_MIN`]..=[`KEY_BYTES_MAX`] (the empty key is valid).
pub fn check_key(key: &[u8]) -> Result<(), Error> {
    if key.len() > KEY_BYTES_MAX {
        return Err(Error::InvalidArgument(InvalidArgument::KeyTooLong {
            len: key.len(),
            max: KEY_BYTES_MAX,
        }));
    }
    Ok(())
}

/// Checks the bounds of a scan: a bound key longer than [`KEY_BYTES_MAX`] names no key a
/// store can hold, so it is refused like such a key (`KeyTooLong`). The empty key is a valid
/// bound (everything sorts at or after it).
pub fn check_range(range: &crate::KeyRange) -> Result<(), Error> {
    for bound in [&range.start, &range.end] {
        if let std::ops::Bound::Included(key) | std::ops::Bound::Excluded(key) = bound
            && key.len() > KEY_BYTES_MAX
        {
            return Err(Error::InvalidArgument(InvalidArgument::KeyTooLong {
                len: key.len(),
                max: KEY_BYTES_MAX,
            }));
        }
    }
    Ok(())
}

/// Checks a value against [`VALUE_BYTES_MAX`].
pub fn check_value(value: &[u8]) -> Result<(), Error> {
    if value.len() > VALUE_BYTES_MAX {
        return Err(Error::InvalidArgument(InvalidArgument::ValueTooLong {
            len: value.len(),
            max: VALUE_BYTES_MAX,
        }));
    }
    Ok(())
}

/// Checks the arguments of a compare-and-swap: the key, and the expected and new values.
pub fn check_cas(key: &[u8], expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<(), Error> {
    check_key(key)?;
    for value in [expected, new].into_iter().flatten() {
        check_value(value)?;
    }
    Ok(())
}

/// Checks a scan limit against [`SCAN_LIMIT_MAX`]; zero is allowed and returns nothing.
pub fn check_scan_limit(limit: usize) -> Result<(), Error> {
    if limit > SCAN_LIMIT_MAX {
        return Err(Error::InvalidArgument(InvalidArgument::ScanLimitTooLarge {
            limit,
            max: SCAN_LIMIT_MAX,
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_limits_are_inclusive() {
        assert!(check_key(&[0u8; KEY_BYTES_MIN]).is_ok());
        assert!(check_key(&[]).is_ok(), "the empty key is a key");
        let bounded = |start: Vec<u8>, end: Vec<u8>| crate::KeyRange {
            start: std::ops::Bound::Included(start),
            end: std::ops::Bound::Excluded(end),
        };
        assert!(check_range(&bounded(vec![], vec![0u8; KEY_BYTES_MAX])).is_ok());
        assert!(check_range(&bounded(vec![0u8; KEY_BYTES_MAX + 1], vec![1])).is_err());
        assert!(check_range(&bounded(vec![1], vec![0u8; KEY_BYTES_MAX + 1])).is_err());
        assert!(check_key(&[0u8; KEY_BYTES_MAX]).is_ok());
        let err = check_key(&[0u8; KEY_BYTES_MAX + 1]).unwrap_err();
        assert!(err.to_string().contains("1024-byte"), "{err}");
        assert!(err.to_string().contains("1025"), "{err}");
    }

    #[test]
    fn value_limits_are_inclusive() {
        assert!(check_value(&[]).is_ok());
        assert!(check_value(&[0u8; VALUE_BYTES_MAX]).is_ok());
        let err = check_value(&[0u8; VALUE_BYTES_MAX + 1]).unwrap_err();
        assert!(err.to_string().contains("4096-byte"), "{err}");
    }
}
