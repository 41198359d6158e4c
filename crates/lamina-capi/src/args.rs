//! Turning C arguments into Rust values, and copying results out, with every size checked
//! before a byte is read or written.
//!
//! The size limits are checked before a slice is formed, so an absurd length (say
//! `SIZE_MAX` from an uninitialized variable) is refused without touching memory.

use std::ffi::c_void;

use lamina_facade::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_facade::{Error, InvalidArgument};

use crate::status::Failure;

/// A key argument: 0 to `KEY_BYTES_MAX` bytes at `ptr` (the empty key is a key; `ptr` may be
/// NULL when `len` is 0).
///
/// # Safety
/// If `ptr` is non-NULL and `len` is within the limits, `ptr` must point to `len` readable
/// bytes that stay unchanged for `'a`.
pub(crate) unsafe fn key<'a>(
    name: &str,
    ptr: *const c_void,
    len: usize,
) -> Result<&'a [u8], Failure> {
    if len > KEY_BYTES_MAX {
        return Err(Error::from(InvalidArgument::KeyTooLong { len, max: KEY_BYTES_MAX }).into());
    }
    // SAFETY: `len` is at most KEY_BYTES_MAX; the caller's contract covers `ptr`.
    unsafe { bytes(name, ptr, len) }
}

/// A value argument: 0 to `VALUE_BYTES_MAX` bytes; `ptr` may be NULL when `len` is 0.
///
/// # Safety
/// As for [`key`].
pub(crate) unsafe fn value<'a>(
    name: &str,
    ptr: *const c_void,
    len: usize,
) -> Result<&'a [u8], Failure> {
    if len > VALUE_BYTES_MAX {
        return Err(Error::from(InvalidArgument::ValueTooLong { len, max: VALUE_BYTES_MAX }).into());
    }
    // SAFETY: `len` is at most VALUE_BYTES_MAX; the caller's contract covers `ptr`.
    unsafe { bytes(name, ptr, len) }
}

/// An optional value: NULL with length 0 is "absent" (`None`); anything else is a value.
///
/// # Safety
/// As for [`key`].
pub(crate) unsafe fn optional_value<'a>(
    name: &str,
    ptr: *const c_void,
    len: usize,
) -> Result<Option<&'a [u8]>, Failure> {
    if ptr.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { value(name, ptr, len) }.map(Some)
}

/// A range bound: NULL (with length 0) is unbounded; otherwise 0 to `KEY_BYTES_MAX` bytes.
///
/// # Safety
/// As for [`key`].
pub(crate) unsafe fn bound<'a>(
    name: &str,
    ptr: *const c_void,
    len: usize,
) -> Result<Option<&'a [u8]>, Failure> {
    if ptr.is_null() && len == 0 {
        return Ok(None);
    }
    if len > KEY_BYTES_MAX {
        return Err(Failure::invalid(format!(
            "{name} is {len} bytes, over the {KEY_BYTES_MAX}-byte key limit"
        )));
    }
    // SAFETY: `len` is at most KEY_BYTES_MAX; the caller's contract covers `ptr`.
    unsafe { bytes(name, ptr, len) }.map(Some)
}

/// # Safety
/// `len` is bounded by the caller; if `ptr` is non-NULL it points to `len` readable bytes.
unsafe fn bytes<'a>(name: &str, ptr: *const c_void, len: usize) -> Result<&'a [u8], Failure> {
    assert!(len <= VALUE_BYTES_MAX.max(KEY_BYTES_MAX), "callers bound the length first");
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{name} is NULL but its length is {len}")));
    }
    // SAFETY: non-NULL, `len` readable bytes valid for 'a by the caller's contract, and
    // `len` (at most 4096) is far below isize::MAX.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// An output buffer: `buf` with the capacity `*len` says. `len` must be non-NULL; `buf` may
/// be NULL only when the capacity is 0 (a size query).
#[derive(Debug)]
pub(crate) struct OutBuf {
    buf: *mut u8,
    len: *mut usize,
    capacity: usize,
}

impl OutBuf {
    /// Checks and captures an output buffer.
    ///
    /// # Safety
    /// If `len` is non-NULL it must point to a readable and writable `size_t`; if `buf` is
    /// non-NULL it must point to `*len` writable bytes. Both must stay valid while the
    /// `OutBuf` is used.
    pub(crate) unsafe fn new(
        buf_name: &str,
        buf: *mut c_void,
        len_name: &str,
        len: *mut usize,
    ) -> Result<OutBuf, Failure> {
        if len.is_null() {
            return Err(Failure::invalid(format!("{len_name} is NULL")));
        }
        // SAFETY: non-NULL and readable by the contract.
        let capacity = unsafe { len.read() };
        if buf.is_null() && capacity > 0 {
            return Err(Failure::invalid(format!(
                "{buf_name} is NULL but *{len_name} is {capacity}"
            )));
        }
        Ok(OutBuf { buf: buf.cast(), len, capacity })
    }

    /// Whether `data` fits.
    pub(crate) fn fits(&self, data: &[u8]) -> bool {
        data.len() <= self.capacity
    }

    /// Stores `full_len` in the length slot without copying (too small, or not found).
    pub(crate) fn set_len(&self, full_len: usize) {
        // SAFETY: `len` was checked non-NULL and is writable by the contract of `new`.
        unsafe { self.len.write(full_len) };
    }

    /// Copies `data`, which must fit, and stores its length.
    pub(crate) fn write(&self, data: &[u8]) {
        assert!(self.fits(data), "callers check fits() first");
        if !data.is_empty() {
            // SAFETY: `buf` is non-NULL (capacity >= data.len() > 0), has `capacity` writable
            // bytes by the contract of `new`, and cannot overlap `data`, which lamina owns.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.buf, data.len()) };
        }
        self.set_len(data.len());
    }
}

#[cfg(test)]
mod tests {
    use std::ptr::{null, null_mut};

    use super::*;
    use crate::status::LAMINA_INVALID_ARGUMENT;

    #[test]
    fn keys_are_checked_before_they_are_read() {
        let k = b"key";
        // SAFETY: `k` has 3 readable bytes; the other calls must not read at all.
        unsafe {
            assert_eq!(key("key", k.as_ptr().cast(), 3).unwrap(), b"key");
            let err = key("key", k.as_ptr().cast(), usize::MAX).unwrap_err();
            assert_eq!(err.status, LAMINA_INVALID_ARGUMENT);
            assert!(err.message.contains("1024-byte"), "{}", err.message);
            assert_eq!(key("key", k.as_ptr().cast(), 0).unwrap(), b"", "the empty key is a key");
            assert_eq!(key("key", null(), 0).unwrap(), b"", "NULL with length 0 is the empty key");
            assert!(key("key", null(), 3).unwrap_err().message.contains("key is NULL"));
        }
    }

    #[test]
    fn values_and_bounds_accept_null_only_when_empty() {
        // SAFETY: NULL with length 0 reads nothing; the over-long lengths are refused first.
        unsafe {
            assert_eq!(value("value", null(), 0).unwrap(), b"");
            assert!(value("value", null(), 1).is_err());
            assert!(
                value("value", null(), VALUE_BYTES_MAX + 1).unwrap_err().message.contains("4096")
            );
            assert_eq!(optional_value("expected", null(), 0).unwrap(), None);
            assert_eq!(optional_value("expected", b"".as_ptr().cast(), 0).unwrap(), Some(&b""[..]));
            assert_eq!(bound("start", null(), 0).unwrap(), None);
            assert!(bound("start", null(), 2).is_err());
            assert!(bound("end", b"x".as_ptr().cast(), KEY_BYTES_MAX + 1).is_err());
        }
    }

    #[test]
    fn out_buffers_copy_only_what_fits() {
        let mut buf = [0u8; 4];
        let mut len = 4usize;
        // SAFETY: `buf` has 4 writable bytes and `len` is a live usize.
        let out =
            unsafe { OutBuf::new("buf", buf.as_mut_ptr().cast(), "len", &raw mut len) }.unwrap();
        assert!(out.fits(b"abcd") && !out.fits(b"abcde"));
        out.write(b"ab");
        assert_eq!((&buf[..2], len), (&b"ab"[..], 2));
        // SAFETY: a NULL buffer with capacity 0 is a size query; NULL length is refused.
        unsafe {
            let mut zero = 0usize;
            assert!(OutBuf::new("buf", null_mut(), "len", &raw mut zero).is_ok());
            let mut four = 4usize;
            assert!(OutBuf::new("buf", null_mut(), "len", &raw mut four).is_err());
            assert!(OutBuf::new("buf", buf.as_mut_ptr().cast(), "len", null_mut()).is_err());
        }
    }
}
