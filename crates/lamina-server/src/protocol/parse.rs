//! The incremental request parser: bytes in, one [`Parsed`] out.
//!
//! [`parse`] frames the command line (up to `\n`, at most `line_bytes_max` bytes), dispatches
//! on the command name, and leaves the arguments to `classic.rs` and `meta.rs`. Replies to
//! refused input are memcached's, word for word where memcached has one (its `proto_text.c`
//! and `proto_parser.c`); `docs/server.md` lists them.

use crate::protocol::tokens::ends_with_noreply;
use crate::protocol::{Command, classic, meta};

/// Limits the parser enforces (each refusal names its limit in the reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// The longest command line, `\r\n` included. A buffer holding this many bytes with no
    /// `\n` is refused with `CLIENT_ERROR line too long` and the connection is closed (as
    /// memcached does: it cannot find where the next request starts).
    pub line_bytes_max: usize,
    /// The largest data block of a store command (`set`, `ms`...): the engine's value limit
    /// minus the item header. Larger blocks are answered `SERVER_ERROR object too large for
    /// cache` and their bytes are swallowed, and the connection stays open.
    pub item_bytes_max: usize,
}

/// The outcome of parsing the front of a connection's input buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// The buffer does not yet hold a whole request: read more and call again. Nothing is
    /// consumed.
    Incomplete,
    /// A request, which took the first `consumed` bytes (its line and data block).
    Request {
        /// The parsed request.
        command: Command,
        /// Bytes of the buffer it took.
        consumed: usize,
    },
    /// Input refused: send `reply` (a whole line with its `\r\n`: `ERROR\r\n`,
    /// `CLIENT_ERROR ...\r\n` or `SERVER_ERROR ...\r\n`), drop the first `consumed` bytes,
    /// then discard the next `swallow_bytes` bytes as they arrive (the data block of a
    /// refused store command, `\r\n` included), and close the connection if `close`.
    /// `reply` is empty for a refused request that asked for no reply (`noreply`), where
    /// memcached sends nothing either.
    Refused {
        /// The error line to send (empty under `noreply`).
        reply: String,
        /// Bytes of the buffer to drop now.
        consumed: usize,
        /// Bytes still to arrive that belong to the refused request, to discard.
        swallow_bytes: usize,
        /// Whether to close the connection after the reply.
        close: bool,
    },
}

/// memcached's reply to a malformed command line.
pub(crate) const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format\r\n";
/// memcached's reply to an unknown command.
pub(crate) const UNKNOWN_COMMAND: &str = "ERROR\r\n";
/// memcached's reply to a data block not followed by `\r\n`.
pub(crate) const BAD_DATA_CHUNK: &str = "CLIENT_ERROR bad data chunk\r\n";
/// memcached's reply to a data block over the item size limit.
pub(crate) const TOO_LARGE: &str = "SERVER_ERROR object too large for cache\r\n";
/// The reply to a line over `line_bytes_max` (memcached closes silently).
pub(crate) const LINE_TOO_LONG: &str = "CLIENT_ERROR line too long\r\n";

/// One command line, framed: what the command parsers need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame<'a> {
    /// The whole line without its `\n` or `\r\n`, command name included.
    pub(crate) line: &'a [u8],
    /// The line after the command name.
    pub(crate) args: &'a [u8],
    /// The line's length in the input, `\n` included.
    pub(crate) line_bytes: usize,
    /// The input after the line (where a data block starts).
    pub(crate) after: &'a [u8],
}

impl Frame<'_> {
    /// Refuses the line with `reply`, nothing to swallow.
    pub(crate) fn refuse(&self, reply: &str) -> Parsed {
        self.refuse_swallowing(reply, 0)
    }

    /// Refuses the line with `reply`, then swallows `swallow_bytes` (a data block).
    pub(crate) fn refuse_swallowing(&self, reply: &str, swallow_bytes: usize) -> Parsed {
        debug_assert!(reply.ends_with("\r\n") || reply.is_empty());
        Parsed::Refused {
            reply: reply.to_owned(),
            consumed: self.line_bytes,
            swallow_bytes,
            close: false,
        }
    }

    /// Refuses the line, silently if `quiet` (a classic command ending in `noreply`).
    pub(crate) fn refuse_unless_quiet(
        &self,
        quiet: bool,
        reply: &str,
        swallow_bytes: usize,
    ) -> Parsed {
        self.refuse_swallowing(if quiet { "" } else { reply }, swallow_bytes)
    }

    /// The request `command`, taking the line only.
    pub(crate) fn request(&self, command: Command) -> Parsed {
        Parsed::Request { command, consumed: self.line_bytes }
    }

    /// The data block of `data_len` bytes after the line, then `\r\n`: `Incomplete` until it
    /// has arrived, refused with `CLIENT_ERROR bad data chunk` (silently if `quiet`) when the
    /// two bytes after it are not `\r\n` (memcached consumes the block and its two bytes
    /// either way), else the request `build(data)`.
    pub(crate) fn with_data_block(
        &self,
        data_len: usize,
        quiet: bool,
        build: impl FnOnce(Vec<u8>) -> Command,
    ) -> Parsed {
        let block_bytes = data_len + 2;
        let Some(block) = self.after.get(..block_bytes) else {
            return Parsed::Incomplete;
        };
        let consumed = self.line_bytes + block_bytes;
        if &block[data_len..] != b"\r\n" {
            return Parsed::Refused {
                reply: if quiet { String::new() } else { BAD_DATA_CHUNK.to_owned() },
                consumed,
                swallow_bytes: 0,
                close: false,
            };
        }
        Parsed::Request { command: build(block[..data_len].to_vec()), consumed }
    }
}

/// Parses the request at the front of `input`.
///
/// Contract:
/// - Never panics, for any bytes and any split of them across calls.
/// - `Incomplete` consumes nothing; `Request`/`Refused` consume at least one byte, so a
///   caller looping on `parse` always makes progress.
/// - A command line ends at `\n` (a preceding `\r` is dropped), as memcached accepts both.
/// - The outcome depends only on the bytes, not on how they were split: a line is looked
///   for in the first `line_bytes_max` bytes only, and a store command's data block is
///   waited for only once its line is known to be valid.
pub fn parse(input: &[u8], limits: &ParseLimits) -> Parsed {
    if input.is_empty() {
        return Parsed::Incomplete;
    }
    let window = &input[..input.len().min(limits.line_bytes_max)];
    let Some(newline) = window.iter().position(|&b| b == b'\n') else {
        if input.len() >= limits.line_bytes_max {
            // No way to find where the next request starts: refuse and close.
            return Parsed::Refused {
                reply: LINE_TOO_LONG.to_owned(),
                consumed: input.len(),
                swallow_bytes: 0,
                close: true,
            };
        }
        return Parsed::Incomplete;
    };
    let line = input[..newline].strip_suffix(b"\r").unwrap_or(&input[..newline]);
    let name_len = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
    let (name, args) = line.split_at(name_len);
    let frame = Frame { line, args, line_bytes: newline + 1, after: &input[newline + 1..] };
    let parsed = dispatch(name, &frame, limits);
    debug_assert!(match &parsed {
        Parsed::Incomplete => true,
        Parsed::Request { consumed, .. } | Parsed::Refused { consumed, .. } =>
            *consumed >= 1 && *consumed <= input.len(),
    });
    parsed
}

/// Runs the parser of the command `name`.
fn dispatch(name: &[u8], frame: &Frame<'_>, limits: &ParseLimits) -> Parsed {
    use crate::protocol::StoreMode::{Add, Append, Prepend, Replace, Set};
    match name {
        b"get" => classic::get(frame, false),
        b"gets" => classic::get(frame, true),
        b"gat" => classic::get_and_touch(frame, false),
        b"gats" => classic::get_and_touch(frame, true),
        b"set" => classic::store(frame, limits, Set, false),
        b"add" => classic::store(frame, limits, Add, false),
        b"replace" => classic::store(frame, limits, Replace, false),
        b"append" => classic::store(frame, limits, Append, false),
        b"prepend" => classic::store(frame, limits, Prepend, false),
        b"cas" => classic::store(frame, limits, Set, true),
        b"delete" => classic::delete(frame),
        b"incr" => classic::arith(frame, crate::protocol::ArithDirection::Incr),
        b"decr" => classic::arith(frame, crate::protocol::ArithDirection::Decr),
        b"touch" => classic::touch(frame),
        b"flush_all" => classic::flush_all(frame),
        b"stats" => classic::stats(frame),
        // memcached 1.6 ignores extra tokens of `version` and `quit` (memcapable checks
        // either behaviour, by the version string).
        b"version" => frame.request(Command::Version),
        b"quit" => frame.request(Command::Quit),
        b"verbosity" => classic::verbosity(frame),
        b"lscan" => classic::scan(frame),
        b"mg" => meta::parse_meta(frame, limits, meta::MetaKind::Get),
        b"ms" => meta::parse_meta(frame, limits, meta::MetaKind::Set),
        b"md" => meta::parse_meta(frame, limits, meta::MetaKind::Delete),
        b"ma" => meta::parse_meta(frame, limits, meta::MetaKind::Arith),
        // memcached ignores anything after `mn`.
        b"mn" => frame.request(Command::MetaNoop),
        _ => unknown(frame),
    }
}

/// An unknown command (or an empty line, or one starting with a space): `ERROR`, which
/// memcached leaves out when the line ends in `noreply`, and an HTTP request line
/// (`... HTTP/1.1`) closes the connection without a reply, as memcached does.
fn unknown(frame: &Frame<'_>) -> Parsed {
    let last = crate::protocol::tokens::last_token_after_first(frame.line);
    if last.is_some_and(|token| token.starts_with(b"HTTP/")) {
        return Parsed::Refused {
            reply: String::new(),
            consumed: frame.line_bytes,
            swallow_bytes: 0,
            close: true,
        };
    }
    frame.refuse_unless_quiet(ends_with_noreply(frame.line), UNKNOWN_COMMAND, 0)
}
