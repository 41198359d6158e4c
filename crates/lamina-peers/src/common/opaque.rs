//! Opaque C handle types, shared by every peer's `ffi` module.

/// Declares zero-sized `#[repr(C)]` structs standing for C handles the wrapper only ever holds
/// by pointer, so each kind of handle gets its own pointer type.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {
        $(
            #[repr(C)]
            pub(crate) struct $name {
                _private: [u8; 0],
            }
        )*
    };
}

pub(crate) use opaque;
