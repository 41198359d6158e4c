//! lamina's C API: the functions declared in `include/lamina.h`, built as `liblamina.so` and
//! `liblamina.a`.
//!
//! Every exported function is `extern "C"`, catches panics (a panic becomes `LAMINA_ERROR`
//! with a message, never an unwind across the boundary), checks its pointer arguments for
//! NULL, checks sizes before it reads a byte, and reports failures as a status code plus a
//! per-thread message (`lamina_last_error_message`). The handle types are thread-safe: one
//! `lamina_db` may be used from any number of threads at once.
//!
//! `docs/c-api.md` documents the API for C users; the header is the reference.

mod args;
mod batch;
mod call;
mod db;
mod iter;
mod last_error;
mod options;
mod status;

#[cfg(test)]
mod ffi_tests;

pub use batch::{
    BatchHandle, lamina_batch_clear, lamina_batch_count, lamina_batch_create, lamina_batch_delete,
    lamina_batch_destroy, lamina_batch_put, lamina_write_batch,
};
pub use db::{
    DbHandle, lamina_close, lamina_compare_and_swap, lamina_delete, lamina_get, lamina_open,
    lamina_put, lamina_sync,
};
pub use iter::{IterHandle, lamina_iter_close, lamina_iter_next, lamina_iter_open};
pub use last_error::lamina_last_error_message;
pub use options::{LaminaOptions, lamina_options_init};
pub use status::{lamina_strerror, lamina_version};
