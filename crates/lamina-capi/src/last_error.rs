//! The calling thread's last failure message per handle (`lamina_last_error_message`).
//!
//! Messages live in a thread-local table keyed by the address of the database handle the
//! failing call was about (0 for calls without one: `lamina_open`, `lamina_close`, and calls
//! whose handle argument was NULL). Keying by address means looking a message up never
//! dereferences the handle. The table holds at most [`HANDLES_REMEMBERED_PER_THREAD`]
//! messages, so a thread that touches many handles holds bounded memory; it is freed when
//! the thread exits.

use std::cell::RefCell;
use std::ffi::{CString, c_char};

use crate::db::DbHandle;

/// Handles whose last message one thread remembers; the least recently failed is dropped.
pub(crate) const HANDLES_REMEMBERED_PER_THREAD: usize = 16;

/// Longest message kept, in bytes; longer ones are cut (at a character boundary).
const MESSAGE_BYTES_MAX: usize = 4096;

/// Returned when the thread has no message for the handle.
const NO_MESSAGE: &[u8] = b"\0";

/// Which handle a failure belongs to: its address, or 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scope(usize);

impl Scope {
    /// Failures not tied to a live database handle.
    pub(crate) const NONE: Scope = Scope(0);

    /// The scope of `db` (which may be NULL).
    pub(crate) fn of(db: *const DbHandle) -> Scope {
        Scope(db as usize)
    }
}

thread_local! {
    /// Most recently failed last.
    static MESSAGES: RefCell<Vec<(Scope, CString)>> = const { RefCell::new(Vec::new()) };
}

/// Records `message` as the calling thread's last failure on `scope`.
pub(crate) fn record(scope: Scope, message: &str) {
    let message = to_c_string(message);
    // `try_with` fails only while the thread is being torn down; the message is then lost,
    // which is better than a panic.
    let _ = MESSAGES.try_with(|cell| {
        let Ok(mut table) = cell.try_borrow_mut() else { return };
        table.retain(|(s, _)| *s != scope);
        if table.len() == HANDLES_REMEMBERED_PER_THREAD {
            table.remove(0);
        }
        table.push((scope, message));
        assert!(table.len() <= HANDLES_REMEMBERED_PER_THREAD);
    });
}

/// Forgets the calling thread's message for `scope` (a new handle starts clean).
pub(crate) fn forget(scope: Scope) {
    let _ = MESSAGES.try_with(|cell| {
        if let Ok(mut table) = cell.try_borrow_mut() {
            table.retain(|(s, _)| *s != scope);
        }
    });
}

/// The calling thread's message for `scope`, or the empty string. The pointer stays valid
/// until this thread records another failure on `scope` (or on more than
/// [`HANDLES_REMEMBERED_PER_THREAD`] other handles), or exits.
fn message_ptr(scope: Scope) -> *const c_char {
    MESSAGES
        .try_with(|cell| {
            let table = cell.try_borrow().ok()?;
            table.iter().find(|(s, _)| *s == scope).map(|(_, m)| m.as_ptr())
        })
        .ok()
        .flatten()
        .unwrap_or(NO_MESSAGE.as_ptr().cast())
}

/// A C string of `message`, with interior NULs replaced and the length bounded.
fn to_c_string(message: &str) -> CString {
    let mut end = message.len().min(MESSAGE_BYTES_MAX);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let bytes: Vec<u8> = message[..end].bytes().map(|b| if b == 0 { b'?' } else { b }).collect();
    CString::new(bytes).expect("interior NULs were replaced")
}

/// `const char *lamina_last_error_message(const lamina_db *db)`: the detailed message of
/// the calling thread's last failed call on `db` (NULL: on `lamina_open`, `lamina_close`, or
/// a call whose handle was NULL). Never NULL; "" if there is none. `db` is not dereferenced,
/// so this is safe to call with any pointer value.
#[unsafe(no_mangle)]
pub extern "C" fn lamina_last_error_message(db: *const DbHandle) -> *const c_char {
    let scope = Scope::of(db);
    std::panic::catch_unwind(|| message_ptr(scope)).unwrap_or(NO_MESSAGE.as_ptr().cast())
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    fn message(scope: Scope) -> String {
        // SAFETY: `message_ptr` returns a NUL-terminated string owned by this thread's table
        // (or a static), and nothing records on this thread before the copy is made.
        unsafe { CStr::from_ptr(message_ptr(scope)) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn messages_are_per_scope_and_per_thread() {
        let (a, b) = (Scope(0x1000), Scope(0x2000));
        assert_eq!(message(a), "");
        record(a, "first");
        record(b, "second");
        record(a, "third");
        assert_eq!(message(a), "third");
        assert_eq!(message(b), "second");
        std::thread::spawn(move || assert_eq!(message(a), "")).join().unwrap();
        forget(a);
        assert_eq!(message(a), "");
        assert_eq!(message(b), "second");
    }

    #[test]
    fn the_table_is_bounded() {
        for i in 1..=HANDLES_REMEMBERED_PER_THREAD + 5 {
            record(Scope(i * 16), &format!("failure {i}"));
        }
        assert_eq!(message(Scope(16)), "", "the oldest was dropped");
        let last = HANDLES_REMEMBERED_PER_THREAD + 5;
        assert_eq!(message(Scope(last * 16)), format!("failure {last}"));
        MESSAGES.with(|cell| assert_eq!(cell.borrow().len(), HANDLES_REMEMBERED_PER_THREAD));
    }

    #[test]
    fn nul_bytes_and_huge_messages_are_tamed() {
        record(Scope(8), "a\0b");
        assert_eq!(message(Scope(8)), "a?b");
        record(Scope(8), &"é".repeat(MESSAGE_BYTES_MAX));
        let kept = message(Scope(8));
        assert!(kept.len() <= MESSAGE_BYTES_MAX && kept.len() >= MESSAGE_BYTES_MAX - 1);
    }
}
