//! The error type of the public API. Errors are values: no engine panics on bad input, I/O
//! failure or corruption. Each variant carries what a user needs to act on it (the limit and
//! the size given, the file and offset of a corruption, the I/O operation that failed).

use std::path::PathBuf;

/// Result with lamina's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error lamina returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller passed something the API refuses; nothing was changed.
    #[error("invalid argument: {0}")]
    InvalidArgument(InvalidArgument),
    /// Stored data failed a check (checksum, magic, structure). Names where it was found.
    #[error("corruption in {} at offset {offset}: {reason}", file.display())]
    Corruption {
        /// The file (or region) holding the bad data.
        file: PathBuf,
        /// Byte offset of the bad record or block within `file`.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// An I/O operation failed.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What lamina was doing ("writing block 12 of L3.dat").
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The device is full, or the configured disk budget or memory limit is reached (the
    /// message names the option); the operation was not applied.
    #[error("no space left: {context}")]
    NoSpace {
        /// What needed the space.
        context: String,
    },
    /// The handle was closed; no further operations are accepted.
    #[error("the database is closed")]
    Closed,
    /// The directory or file was written by something this build cannot read (another
    /// engine, a future format version, not a lamina file at all).
    #[error("incompatible: {reason}")]
    Incompatible {
        /// Why the data cannot be opened.
        reason: String,
    },
    /// The operation or option is not supported by this engine or build.
    #[error("unsupported: {what}")]
    Unsupported {
        /// What was asked for.
        what: String,
    },
}

/// Why an argument was refused. Each message names the limit and what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidArgument {
    /// The empty key, refused by a store that cannot hold it (some peer engines, and the
    /// memcached protocol). lamina's own engines accept it ([`crate::limits::KEY_BYTES_MIN`]
    /// is 0).
    #[error("key is empty; this store does not accept the empty key")]
    KeyEmpty,
    /// Key longer than [`crate::limits::KEY_BYTES_MAX`].
    #[error("key is {len} bytes, over the {max}-byte limit")]
    KeyTooLong {
        /// The key's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Value longer than [`crate::limits::VALUE_BYTES_MAX`].
    #[error("value is {len} bytes, over the {max}-byte limit")]
    ValueTooLong {
        /// The value's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A write batch over [`crate::limits::BATCH_OPS_MAX`] operations or
    /// [`crate::limits::BATCH_BYTES_MAX`] bytes.
    #[error(
        "write batch of {ops} operations and {bytes} bytes is over the limit of {ops_max} operations and {bytes_max} bytes"
    )]
    BatchTooLarge {
        /// Operations given.
        ops: usize,
        /// Key and value bytes given.
        bytes: usize,
        /// Operation limit.
        ops_max: usize,
        /// Byte limit.
        bytes_max: usize,
    },
    /// A scan limit over [`crate::limits::SCAN_LIMIT_MAX`].
    #[error("scan limit {limit} is over the maximum of {max}")]
    ScanLimitTooLarge {
        /// The limit given.
        limit: usize,
        /// The maximum.
        max: usize,
    },
    /// An option out of its range, or options that contradict each other.
    #[error("option `{name}`: {reason}")]
    Option {
        /// The option's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl Error {
    /// An [`Error::Io`] with the operation that failed, mapping `ENOSPC`/`EDQUOT` to
    /// [`Error::NoSpace`] so callers can tell a full disk from other failures.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        let context = context.into();
        if matches!(
            source.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ) {
            return Error::NoSpace { context: format!("{context}: {source}") };
        }
        Error::Io { context, source }
    }

    /// An [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption { file: file.into(), offset, reason: reason.into() }
    }

    /// An [`InvalidArgument::Option`] error.
    pub fn option(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument(InvalidArgument::Option { name, reason: reason.into() })
    }

    /// Whether this is a bad-argument error (the store is unchanged).
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, Error::InvalidArgument(_))
    }
}

impl From<InvalidArgument> for Error {
    fn from(value: InvalidArgument) -> Self {
        Error::InvalidArgument(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_disk_is_no_space() {
        let err = Error::io("appending", std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert!(matches!(err, Error::NoSpace { .. }), "{err:?}");
        let err = Error::io("reading", std::io::Error::other("boom"));
        assert!(matches!(err, Error::Io { .. }));
    }

    #[test]
    fn corruption_names_file_and_offset() {
        let err = Error::corruption("/tmp/x/L1.dat", 8192, "checksum mismatch");
        assert_eq!(
            err.to_string(),
            "corruption in /tmp/x/L1.dat at offset 8192: checksum mismatch"
        );
    }
}
