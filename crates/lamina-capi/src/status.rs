//! Status codes (the `LAMINA_*` constants of `lamina.h`) and how errors map onto them.

use std::ffi::{c_char, c_int};

use lamina_facade::Error;

/// Success.
pub const LAMINA_OK: c_int = 0;
/// The key does not exist (get, delete) or the iterator is exhausted.
pub const LAMINA_NOT_FOUND: c_int = 1;
/// The key buffer given to `lamina_iter_next` is too small; nothing was copied.
pub const LAMINA_KEY_BUFFER_TOO_SMALL: c_int = 2;
/// The value buffer is too small; nothing was copied.
pub const LAMINA_VALUE_BUFFER_TOO_SMALL: c_int = 3;
/// `lamina_compare_and_swap` found another value; nothing changed.
pub const LAMINA_COMPARE_FAILED: c_int = 4;
/// Oversized key or value, NULL where not allowed, an option out of range.
pub const LAMINA_INVALID_ARGUMENT: c_int = 5;
/// The device (or a disk budget) is full; the write was not applied.
pub const LAMINA_NO_SPACE: c_int = 6;
/// Stored data failed a check; the message names the file and offset.
pub const LAMINA_CORRUPTION: c_int = 7;
/// An I/O operation failed (including: the directory is locked by another handle).
pub const LAMINA_IO_ERROR: c_int = 8;
/// Any other failure: closed handle, incompatible directory, internal error.
pub const LAMINA_ERROR: c_int = 9;
/// The engine or this build does not support what was asked (an option, a durability).
pub const LAMINA_UNSUPPORTED: c_int = 10;

/// A failed call: the status returned and the message recorded for
/// `lamina_last_error_message`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: c_int,
    pub(crate) message: String,
}

impl Failure {
    /// A `LAMINA_INVALID_ARGUMENT` failure.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Failure { status: LAMINA_INVALID_ARGUMENT, message: message.into() }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure { status: status_of(&error), message: error.to_string() }
    }
}

/// The status code of a Rust API error.
pub(crate) fn status_of(error: &Error) -> c_int {
    match error {
        Error::InvalidArgument(_) => LAMINA_INVALID_ARGUMENT,
        Error::Corruption { .. } => LAMINA_CORRUPTION,
        Error::Io { .. } => LAMINA_IO_ERROR,
        Error::NoSpace { .. } => LAMINA_NO_SPACE,
        Error::Unsupported { .. } => LAMINA_UNSUPPORTED,
        // Closed, Incompatible, and variants added later.
        _ => LAMINA_ERROR,
    }
}

/// The static description of a status (the text, NUL-terminated).
fn description(status: c_int) -> &'static [u8] {
    match status {
        LAMINA_OK => b"ok\0",
        LAMINA_NOT_FOUND => b"not found\0",
        LAMINA_KEY_BUFFER_TOO_SMALL => b"key buffer too small\0",
        LAMINA_VALUE_BUFFER_TOO_SMALL => b"value buffer too small\0",
        LAMINA_COMPARE_FAILED => b"compare failed: the current value differs\0",
        LAMINA_INVALID_ARGUMENT => b"invalid argument\0",
        LAMINA_NO_SPACE => b"no space left\0",
        LAMINA_CORRUPTION => b"corruption\0",
        LAMINA_IO_ERROR => b"I/O error\0",
        LAMINA_ERROR => b"error\0",
        LAMINA_UNSUPPORTED => b"unsupported\0",
        _ => b"unknown lamina status\0",
    }
}

/// `const char *lamina_strerror(int status)`: a static, NUL-terminated description of
/// `status`; never NULL, never freed by the caller. Unknown codes get a generic text.
#[unsafe(no_mangle)]
pub extern "C" fn lamina_strerror(status: c_int) -> *const c_char {
    // Nothing here can panic: a match over integers and a static byte string.
    description(status).as_ptr().cast()
}

/// `const char *lamina_version(void)`: the library version ("0.1.0"), static.
#[unsafe(no_mangle)]
pub extern "C" fn lamina_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use lamina_facade::InvalidArgument;

    use super::*;

    fn text(ptr: *const c_char) -> &'static str {
        // SAFETY: `lamina_strerror` and `lamina_version` return static NUL-terminated ASCII.
        unsafe { CStr::from_ptr(ptr) }.to_str().unwrap()
    }

    #[test]
    fn every_status_has_its_own_description() {
        let all: Vec<&str> =
            (LAMINA_OK..=LAMINA_UNSUPPORTED).map(|s| text(lamina_strerror(s))).collect();
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "{all:?}");
        assert_eq!(text(lamina_strerror(-1)), "unknown lamina status");
        assert_eq!(text(lamina_strerror(c_int::MAX)), "unknown lamina status");
    }

    #[test]
    fn errors_map_to_their_status() {
        let cases = [
            (Error::from(InvalidArgument::KeyEmpty), LAMINA_INVALID_ARGUMENT),
            (Error::corruption("f", 1, "bad"), LAMINA_CORRUPTION),
            (Error::io("x", std::io::Error::other("eio")), LAMINA_IO_ERROR),
            (Error::io("x", std::io::ErrorKind::StorageFull.into()), LAMINA_NO_SPACE),
            (Error::Closed, LAMINA_ERROR),
            (Error::Incompatible { reason: "r".into() }, LAMINA_ERROR),
            (Error::Unsupported { what: "w".into() }, LAMINA_UNSUPPORTED),
        ];
        for (error, status) in cases {
            let failure = Failure::from(error);
            assert_eq!(failure.status, status, "{}", failure.message);
        }
    }

    #[test]
    fn version_is_the_crate_version() {
        assert_eq!(text(lamina_version()), env!("CARGO_PKG_VERSION"));
    }
}
