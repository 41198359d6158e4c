//! Runs parsed requests on the engine and writes their replies.

mod classic;
mod errors;
mod meta;
mod reply;
mod slot;
mod stats;

pub use errors::{log_error_class, server_error_line};

use crate::protocol::Command;
use crate::shared::{Shared, bump, unix_now_secs};

/// What the connection does after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read the next request.
    Continue,
    /// Close the connection once the replies before are sent (`quit`).
    Quit,
}

/// What running requests did that the connection must act on.
#[derive(Debug, Default, Clone, Copy)]
pub struct Effects {
    /// A write was applied: under `Sync` durability, the replies written since must wait
    /// for a sync before they are sent.
    pub wrote: bool,
}

/// One request's context: the shared state and the time it runs at.
#[derive(Debug)]
pub(crate) struct Exec<'a> {
    pub shared: &'a Shared,
    pub now_secs: u64,
    /// The flush epoch items stored by this request are stamped with.
    pub flush_epoch: u32,
}

/// Runs `command`, appending its reply (if any) to `out`.
pub fn execute(
    shared: &Shared,
    command: Command,
    out: &mut Vec<u8>,
    effects: &mut Effects,
) -> Flow {
    let now_secs = unix_now_secs();
    if let Err(e) = shared.clock.apply_due_flush(&shared.db, now_secs) {
        let exec = Exec { shared, now_secs, flush_epoch: 0 };
        exec.engine_error(&e, out);
        return Flow::Continue;
    }
    let exec = Exec { shared, now_secs, flush_epoch: shared.clock.flush_epoch() };
    match command {
        Command::Quit => return Flow::Quit,
        Command::MetaGet { key, flags } => {
            bump(&shared.counters.cmd_meta);
            exec.meta_get(&key, &flags, out, effects);
        }
        Command::MetaSet { key, data, flags } => {
            bump(&shared.counters.cmd_meta);
            exec.meta_set(&key, &data, &flags, out, effects);
        }
        Command::MetaDelete { key, flags } => {
            bump(&shared.counters.cmd_meta);
            exec.meta_delete(&key, &flags, out, effects);
        }
        Command::MetaArith { key, flags } => {
            bump(&shared.counters.cmd_meta);
            exec.meta_arith(&key, &flags, out, effects);
        }
        Command::MetaNoop => out.extend_from_slice(b"MN\r\n"),
        Command::Stats { group } => exec.stats(group.as_deref(), out),
        other => exec.classic(other, out, effects),
    }
    Flow::Continue
}
