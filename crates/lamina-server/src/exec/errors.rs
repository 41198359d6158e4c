//! Engine errors as replies and log lines.

use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::Error;

use super::Exec;
use crate::shared::bump;

/// The reply line for an engine error. A full disk or memory limit is memcached's "out of
/// memory" reply, which clients know; anything else names the error on one line.
pub fn server_error_line(error: &Error) -> String {
    match error {
        Error::NoSpace { .. } => "SERVER_ERROR out of memory storing object\r\n".to_string(),
        other => {
            let text: String = other
                .to_string()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(512)
                .collect();
            format!("SERVER_ERROR {text}\r\n")
        }
    }
}

/// The error classes logged, each with its occurrence count.
static CLASS_COUNTS: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];
const CLASSES: [&str; 8] =
    ["no_space", "corruption", "io", "closed", "invalid", "unsupported", "incompatible", "other"];

fn class_of(error: &Error) -> usize {
    match error {
        Error::NoSpace { .. } => 0,
        Error::Corruption { .. } => 1,
        Error::Io { .. } => 2,
        Error::Closed => 3,
        Error::InvalidArgument(_) => 4,
        Error::Unsupported { .. } => 5,
        Error::Incompatible { .. } => 6,
        _ => 7,
    }
}

/// Logs an error of a class at its 1st, 2nd, 4th, 8th... occurrence: one line per error
/// class when it first happens, and a bounded number of lines however often it repeats.
pub fn log_error_class(error: &Error) {
    let class = class_of(error);
    let count = CLASS_COUNTS[class].fetch_add(1, Ordering::Relaxed) + 1;
    if count.is_power_of_two() {
        tracing::error!(class = CLASSES[class], occurrences = count, error = %error, "engine error");
    }
}

impl Exec<'_> {
    /// Answers an engine error: the reply, the counter and the log line.
    pub(crate) fn engine_error(&self, error: &Error, out: &mut Vec<u8>) {
        bump(&self.shared.counters.engine_errors);
        log_error_class(error);
        out.extend_from_slice(server_error_line(error).as_bytes());
    }
}
