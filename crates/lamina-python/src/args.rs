//! Keys and values from Python: `bytes` and `str` (encoded as UTF-8) are borrowed without a
//! copy (both are immutable, and the caller's reference keeps them alive while the GIL is
//! released); `bytearray` and `memoryview` are copied, since another thread may change them
//! once the GIL is released.

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

/// The bytes of `obj`, a key or value argument named `what` in error messages.
pub fn bytes_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(bytes.as_bytes()));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return Ok(Cow::Borrowed(text.to_str()?.as_bytes()));
    }
    if let Ok(array) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(array.to_vec()));
    }
    if obj.cast::<PyMemoryView>().is_ok() {
        let copy: Bound<'_, PyBytes> = obj.call_method0("tobytes")?.cast_into()?;
        return Ok(Cow::Owned(copy.as_bytes().to_vec()));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes, bytearray, memoryview or str, not {}",
        obj.get_type().name()?
    )))
}

/// Like [`bytes_arg`] for an optional argument (`None` stays `None`).
pub fn optional_bytes_arg<'a>(
    obj: Option<&'a Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<Cow<'a, [u8]>>> {
    match obj {
        Some(obj) if !obj.is_none() => bytes_arg(obj, what).map(Some),
        _ => Ok(None),
    }
}
