//! Library errors as lamina errors, keeping the library's message.

use std::ffi::{CStr, c_char};
use std::path::Path;

use lamina_core::Error;

/// The error for a failed library call: its message classified into lamina's variants
/// (`NoSpace` for a full disk, `Corruption` when the library reports corruption, `Io`
/// otherwise), prefixed with the peer and the operation.
pub(crate) fn library_error(peer: &str, operation: &str, dir: &Path, message: &str) -> Error {
    let lower = message.to_ascii_lowercase();
    let context = format!("{peer} {operation} in {}", dir.display());
    if lower.contains("no space left") || lower.contains("enospc") || lower.contains("map_full") {
        return Error::NoSpace { context: format!("{context}: {message}") };
    }
    if lower.contains("corrupt") || lower.contains("checksum") {
        return Error::corruption(dir, 0, format!("{peer} {operation}: {message}"));
    }
    Error::Io { context, source: std::io::Error::other(message.to_string()) }
}

/// Copies a NUL-terminated C message (`"(null)"` for a null pointer).
///
/// # Safety
/// `message` is null or points to a NUL-terminated string valid for the call.
pub(crate) unsafe fn c_message(message: *const c_char) -> String {
    if message.is_null() {
        return "(null)".to_string();
    }
    // SAFETY: non-null and NUL-terminated per this function's contract.
    unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified() {
        let dir = Path::new("/tmp/x");
        let e = library_error("rocksdb", "put", dir, "IO error: No space left on device");
        assert!(matches!(e, Error::NoSpace { .. }), "{e:?}");
        let e = library_error("leveldb", "get", dir, "Corruption: bad block");
        assert!(matches!(e, Error::Corruption { .. }), "{e:?}");
        let e = library_error("lmdb", "open", dir, "Permission denied");
        assert!(e.to_string().contains("Permission denied") && e.to_string().contains("lmdb open"));
    }
}
