//! One client connection: read, parse and run requests, send replies.
//!
//! Requests are run in order; replies go out in order. All complete requests in the input
//! are run before the next read, and their replies are sent with one write (pipelining).
//! Under `Sync` durability, replies that follow a write are sent only after the group sync
//! that covers it (see `group_sync.rs`).
//!
//! Limits: the input holds at most one incomplete request (its line is bounded by
//! `line_bytes_max` and its data block by `item_bytes_max`) plus one read; the replies of
//! one batch are sent once they reach `pending_reply_bytes_max`, so a client that does not
//! read its replies stops being read (TCP back-pressure) rather than growing the server.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::exec::{Effects, Flow, execute};
use crate::group_sync::GroupSync;
use crate::protocol::{ParseLimits, Parsed, parse};
use crate::shared::{Shared, bump};

/// Bytes requested from the socket per read.
const READ_CHUNK_BYTES: usize = 64 << 10;

/// Why a connection ended, for the log.
#[derive(Debug)]
pub enum Ended {
    /// The client closed it, sent `quit`, or the server shut down.
    Normally,
    /// A refused request that closes the connection (a line too long).
    Refused,
    /// Reading or writing the socket failed.
    Io(std::io::Error),
    /// A sync failed: the replies that would have acknowledged the writes were not sent.
    SyncFailed(String),
}

/// Serves `stream` until the client leaves, sends `quit`, or `shutdown` turns true.
pub async fn serve(
    mut stream: TcpStream,
    shared: Arc<Shared>,
    group_sync: GroupSync,
    mut shutdown: watch::Receiver<bool>,
) -> Ended {
    let _ = stream.set_nodelay(true);
    let limits = ParseLimits {
        line_bytes_max: shared.config.line_bytes_max,
        item_bytes_max: shared.config.item_bytes_max,
    };
    let pending_max = shared.config.pending_reply_bytes_max;
    let mut input: Vec<u8> = Vec::with_capacity(16 << 10);
    let mut out: Vec<u8> = Vec::with_capacity(16 << 10);
    let mut swallow = 0usize;
    loop {
        if *shutdown.borrow() {
            return Ended::Normally;
        }
        input.reserve(READ_CHUNK_BYTES);
        let read = tokio::select! {
            read = stream.read_buf(&mut input) => read,
            _ = shutdown.changed() => return Ended::Normally,
        };
        let read = match read {
            Ok(0) => return Ended::Normally,
            Ok(read) => read,
            Err(e) => return Ended::Io(e),
        };
        shared.counters.bytes_read.fetch_add(read as u64, Ordering::Relaxed);
        let mut start = 0;
        let mut effects = Effects::default();
        let mut ending = None;
        loop {
            if swallow > 0 {
                let dropped = swallow.min(input.len() - start);
                start += dropped;
                swallow -= dropped;
                if swallow > 0 {
                    break;
                }
            }
            match parse(&input[start..], &limits) {
                Parsed::Incomplete => break,
                Parsed::Request { command, consumed } => {
                    assert!(consumed > 0 && consumed <= input.len() - start, "parser progress");
                    start += consumed;
                    if execute(&shared, command, &mut out, &mut effects) == Flow::Quit {
                        ending = Some(Ended::Normally);
                        break;
                    }
                }
                Parsed::Refused { reply, consumed, swallow_bytes, close } => {
                    assert!(consumed > 0 && consumed <= input.len() - start, "parser progress");
                    bump(&shared.counters.protocol_errors);
                    out.extend_from_slice(reply.as_bytes());
                    start += consumed;
                    swallow = swallow_bytes;
                    if close {
                        ending = Some(Ended::Refused);
                        break;
                    }
                }
            }
            if out.len() >= pending_max
                && let Err(ended) =
                    send(&mut stream, &shared, &group_sync, &mut out, &mut effects).await
            {
                return ended;
            }
        }
        input.drain(..start);
        if let Err(ended) = send(&mut stream, &shared, &group_sync, &mut out, &mut effects).await {
            return ended;
        }
        if let Some(ending) = ending {
            let _ = stream.shutdown().await;
            return ending;
        }
    }
}

/// Sends the replies in `out`, first waiting for durability if they acknowledge writes.
async fn send(
    stream: &mut TcpStream,
    shared: &Shared,
    group_sync: &GroupSync,
    out: &mut Vec<u8>,
    effects: &mut Effects,
) -> Result<(), Ended> {
    if effects.wrote && shared.sync_replies() {
        bump(&shared.counters.sync_waits);
        group_sync.wait().await.map_err(Ended::SyncFailed)?;
    }
    effects.wrote = false;
    if out.is_empty() {
        return Ok(());
    }
    stream.write_all(out).await.map_err(Ended::Io)?;
    shared.counters.bytes_written.fetch_add(out.len() as u64, Ordering::Relaxed);
    out.clear();
    Ok(())
}
