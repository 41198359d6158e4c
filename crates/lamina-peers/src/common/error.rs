//! Library errors as lamina errors, keeping the library's message.

use std::ffi::{CStr, c_char, c_int};
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

/// Bytes of a shim's detail message kept (longer ones arrive truncated).
const SHIM_DETAIL_BYTES: usize = 1024;

/// The message of return code `rc` from a C shim (`csrc/*_shim.c`): the library's name for
/// the code, then the detail its error callback kept for the calling thread, if any.
///
/// # Safety
/// `strerror` returns a NUL-terminated message valid for the call for any code;
/// `take_error` writes a NUL-terminated string within the `len` bytes at `out`.
pub(crate) unsafe fn shim_message(
    strerror: unsafe extern "C" fn(rc: c_int) -> *const c_char,
    take_error: unsafe extern "C" fn(out: *mut c_char, len: usize),
    rc: c_int,
) -> String {
    // SAFETY: `strerror` names any code with a NUL-terminated message (the contract).
    let code = unsafe { c_message(strerror(rc)) };
    let mut detail = [0 as c_char; SHIM_DETAIL_BYTES];
    // SAFETY: `detail` has the length passed; `take_error` NUL-terminates within it.
    let detail = unsafe {
        take_error(detail.as_mut_ptr(), detail.len());
        c_message(detail.as_ptr())
    };
    if detail.is_empty() { code } else { format!("{code}: {detail}") }
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

    unsafe extern "C" fn fake_strerror(_rc: c_int) -> *const c_char {
        c"Invalid argument".as_ptr()
    }

    unsafe extern "C" fn no_detail(out: *mut c_char, len: usize) {
        assert!(len > 0);
        // SAFETY: `out` has `len` > 0 bytes (`shim_message`'s buffer).
        unsafe { *out = 0 };
    }

    unsafe extern "C" fn some_detail(out: *mut c_char, len: usize) {
        let detail = c"bad page size";
        assert!(len > detail.to_bytes_with_nul().len());
        // SAFETY: `out` has `len` bytes, more than the detail and its NUL.
        unsafe { std::ptr::copy_nonoverlapping(detail.as_ptr(), out, detail.count_bytes() + 1) };
    }

    #[test]
    fn shim_messages_join_code_and_detail() {
        // SAFETY: the fakes honour `shim_message`'s contract.
        let bare = unsafe { shim_message(fake_strerror, no_detail, 22) };
        assert_eq!(bare, "Invalid argument");
        // SAFETY: as above.
        let detailed = unsafe { shim_message(fake_strerror, some_detail, 22) };
        assert_eq!(detailed, "Invalid argument: bad page size");
    }
}
