//! lamina's errors as Python exceptions: a base class `lamina.Error` and one subclass per
//! variant of `lamina::Error`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(lamina, Error, PyException, "Base class of every error lamina raises.");
create_exception!(
    lamina,
    InvalidArgument,
    Error,
    "The call was refused (key or value too long, bad option, batch too large); \
     nothing changed."
);
create_exception!(
    lamina,
    Corruption,
    Error,
    "Stored data failed a check (checksum, magic, structure); the message names the file and \
     offset."
);
create_exception!(lamina, Io, Error, "An I/O operation failed (including a locked database).");
create_exception!(
    lamina,
    NoSpace,
    Error,
    "The device is full, or the disk budget or memory limit is reached; the write was not \
     applied."
);
create_exception!(lamina, Closed, Error, "The database was closed.");
create_exception!(
    lamina,
    Incompatible,
    Error,
    "The directory holds another engine's database, or something that is not lamina's."
);
create_exception!(lamina, Unsupported, Error, "The engine or build does not support this.");

/// The Python exception for `err`; its message is lamina's `Display` text.
#[allow(clippy::needless_pass_by_value)] // by value to read as `.map_err(to_py)`
pub fn to_py(err: lamina::Error) -> PyErr {
    let message = err.to_string();
    match err {
        lamina::Error::InvalidArgument(_) => InvalidArgument::new_err(message),
        lamina::Error::Corruption { .. } => Corruption::new_err(message),
        lamina::Error::Io { .. } => Io::new_err(message),
        lamina::Error::NoSpace { .. } => NoSpace::new_err(message),
        lamina::Error::Closed => Closed::new_err(message),
        lamina::Error::Incompatible { .. } => Incompatible::new_err(message),
        lamina::Error::Unsupported { .. } => Unsupported::new_err(message),
        // `lamina::Error` is non-exhaustive: a variant added later is still a `lamina.Error`
        // until it gets its own class here.
        _ => Error::new_err(message),
    }
}

/// An `InvalidArgument` raised by the binding itself (not by the engine).
pub fn invalid_argument(message: impl Into<String>) -> PyErr {
    InvalidArgument::new_err(message.into())
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("Corruption", py.get_type::<Corruption>())?;
    m.add("Io", py.get_type::<Io>())?;
    m.add("NoSpace", py.get_type::<NoSpace>())?;
    m.add("Closed", py.get_type::<Closed>())?;
    m.add("Incompatible", py.get_type::<Incompatible>())?;
    m.add("Unsupported", py.get_type::<Unsupported>())?;
    Ok(())
}
