//! The frame around every exported call: panics are caught (nothing unwinds into C) and
//! failures are recorded for `lamina_last_error_message`.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::last_error::{self, Scope};
use crate::status::{Failure, LAMINA_ERROR};

/// Runs `body`, returning its status; a failure is recorded under `scope` and a panic
/// becomes `LAMINA_ERROR`.
///
/// `AssertUnwindSafe`: after a panic the only shared state a caller can reach is the
/// database handle, whose engine uses non-poisoning locks and keeps its own invariants
/// (engines never panic on input; a panic is a bug, reported as `LAMINA_ERROR` with the
/// panic message, and the caller should close the handle).
pub(crate) fn guarded(scope: Scope, body: impl FnOnce() -> Result<c_int, Failure>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => status,
        Ok(Err(failure)) => {
            assert_ne!(failure.status, crate::status::LAMINA_OK, "a failure is not OK");
            last_error::record(scope, &failure.message);
            failure.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".to_owned());
            // Recording allocates; should that panic too, the status still gets out.
            let _ = catch_unwind(|| {
                last_error::record(scope, &format!("internal error (a bug in lamina): {what}"));
            });
            // Dropping the payload could itself panic; leak it instead.
            std::mem::forget(panic);
            LAMINA_ERROR
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;
    use crate::last_error::lamina_last_error_message;
    use crate::status::{LAMINA_INVALID_ARGUMENT, LAMINA_OK};

    fn message(db: usize) -> String {
        let ptr = lamina_last_error_message(db as *const _);
        // SAFETY: a NUL-terminated string of this thread's table, copied at once.
        unsafe { CStr::from_ptr(ptr) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn a_panic_becomes_an_error_status_with_a_message() {
        let scope = Scope::of(0x40 as *const _);
        let status = guarded(scope, || panic!("boom {}", 7));
        assert_eq!(status, LAMINA_ERROR);
        assert!(message(0x40).contains("boom 7"), "{}", message(0x40));
    }

    #[test]
    fn failures_are_recorded_and_successes_leave_the_message() {
        let scope = Scope::of(0x80 as *const _);
        assert_eq!(guarded(scope, || Err(Failure::invalid("bad thing"))), LAMINA_INVALID_ARGUMENT);
        assert_eq!(guarded(scope, || Ok(LAMINA_OK)), LAMINA_OK);
        assert_eq!(message(0x80), "bad thing");
    }
}
