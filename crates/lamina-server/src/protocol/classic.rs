//! The classic text commands (`get`, `set`, `delete`...) and lamina's `lscan`.
//!
//! What memcached does with `noreply`: when a command's last token is `noreply`, memcached
//! suppresses every reply of that command, its errors included (`out_string` checks the
//! flag), once it got far enough to look at the last token (a store command with a valid
//! data length; `delete`/`incr`/`decr`/`touch` with their key; `flush_all`, `verbosity` and
//! unknown commands always). The parsers below mirror that: `quiet` is that test.

use crate::protocol::parse::{BAD_FORMAT, Frame, ParseLimits, Parsed, TOO_LARGE};
use crate::protocol::tokens::{
    Tokens, ends_with_noreply, is_text_key, parse_data_len, parse_i64, parse_u32, parse_u64,
};
use crate::protocol::{ArithDirection, Command, GET_KEYS_MAX, Key, SCAN_LIMIT_MAX, StoreMode};

const INVALID_EXPTIME: &str = "CLIENT_ERROR invalid exptime argument\r\n";
const INVALID_DELTA: &str = "CLIENT_ERROR invalid numeric delta argument\r\n";
const DELETE_USAGE: &str =
    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n";
const TOO_MANY_KEYS: &str = "CLIENT_ERROR too many keys\r\n";

/// `get|gets <key>+`.
pub(crate) fn get(frame: &Frame<'_>, cas: bool) -> Parsed {
    match keys(Tokens::new(frame.args)) {
        Ok(keys) => frame.request(Command::Get { keys, cas }),
        Err(reply) => frame.refuse(reply),
    }
}

/// `gat|gats <exptime> <key>+`.
pub(crate) fn get_and_touch(frame: &Frame<'_>, cas: bool) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let Some(exptime_token) = tokens.next() else {
        return frame.refuse(BAD_FORMAT);
    };
    if tokens.is_empty() {
        return frame.refuse(BAD_FORMAT);
    }
    let Some(exptime) = parse_i64(exptime_token) else {
        return frame.refuse(INVALID_EXPTIME);
    };
    match keys(tokens) {
        Ok(keys) => frame.request(Command::GetAndTouch { exptime, keys, cas }),
        Err(reply) => frame.refuse(reply),
    }
}

/// The keys of a retrieval command: 1 to [`GET_KEYS_MAX`] valid keys.
fn keys(tokens: Tokens<'_>) -> Result<Vec<Key>, &'static str> {
    let mut keys = Vec::new();
    for token in tokens {
        if keys.len() == GET_KEYS_MAX {
            return Err(TOO_MANY_KEYS);
        }
        if !is_text_key(token) {
            return Err(BAD_FORMAT);
        }
        keys.push(token.to_vec());
    }
    if keys.is_empty() {
        return Err(BAD_FORMAT);
    }
    Ok(keys)
}

/// `set|add|replace|append|prepend <key> <flags> <exptime> <bytes> [noreply]` and
/// `cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]`, then the data block.
///
/// As memcached: a line without a valid `<bytes>` is refused and nothing is swallowed (the
/// data block, if the client sends one, is then read as commands; memcached keeps the
/// connection too); once `<bytes>` is known, every refusal swallows the block.
pub(crate) fn store(
    frame: &Frame<'_>,
    limits: &ParseLimits,
    mode: StoreMode,
    compare: bool,
) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let (Some(key), Some(flags), Some(exptime), Some(bytes)) =
        (tokens.next(), tokens.next(), tokens.next(), tokens.next())
    else {
        return frame.refuse(BAD_FORMAT);
    };
    let Some(data_len) = parse_data_len(bytes) else {
        return frame.refuse(BAD_FORMAT);
    };
    let quiet = ends_with_noreply(frame.line);
    let swallow = data_len + 2;
    let refuse = |reply| frame.refuse_unless_quiet(quiet, reply, swallow);
    if !is_text_key(key) {
        return refuse(BAD_FORMAT);
    }
    let (Some(client_flags), Some(exptime)) = (parse_u32(flags), parse_i64(exptime)) else {
        return refuse(BAD_FORMAT);
    };
    let compare_cas = if compare {
        match tokens.next().and_then(parse_u64) {
            Some(cas) => Some(cas),
            None => return refuse(BAD_FORMAT),
        }
    } else {
        None
    };
    let Some(noreply) = noreply_or_end(&tokens) else {
        return refuse(BAD_FORMAT);
    };
    if data_len > limits.item_bytes_max {
        return refuse(TOO_LARGE);
    }
    let key = key.to_vec();
    frame.with_data_block(data_len, quiet, |data| Command::Store {
        mode,
        key,
        client_flags,
        exptime,
        data,
        compare_cas,
        noreply,
    })
}

/// What is left after a command's arguments: nothing (`Some(false)`), `noreply`
/// (`Some(true)`), or anything else (`None`: refused, where memcached would ignore it).
fn noreply_or_end(rest: &Tokens<'_>) -> Option<bool> {
    if rest.is_empty() {
        Some(false)
    } else if rest.rest_is_noreply() {
        Some(true)
    } else {
        None
    }
}

/// `delete <key> [0] [noreply]`: memcached 1.5's rule (the legacy hold time `0` is accepted,
/// nothing else; memcapable checks that `delete a b c d e` is refused).
pub(crate) fn delete(frame: &Frame<'_>) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let Some(key) = tokens.next() else {
        return frame.refuse(BAD_FORMAT);
    };
    let quiet = ends_with_noreply(frame.line);
    let mut rest = tokens.clone();
    if rest.next() == Some(b"0".as_slice()) {
        tokens = rest;
    }
    let Some(noreply) = noreply_or_end(&tokens) else {
        return frame.refuse_unless_quiet(quiet, DELETE_USAGE, 0);
    };
    if !is_text_key(key) {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    }
    frame.request(Command::Delete { key: key.to_vec(), noreply })
}

/// `incr|decr <key> <delta> [noreply]`.
pub(crate) fn arith(frame: &Frame<'_>, direction: ArithDirection) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let (Some(key), Some(delta)) = (tokens.next(), tokens.next()) else {
        return frame.refuse(BAD_FORMAT);
    };
    let quiet = ends_with_noreply(frame.line);
    if !is_text_key(key) {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    }
    let Some(delta) = parse_u64(delta) else {
        return frame.refuse_unless_quiet(quiet, INVALID_DELTA, 0);
    };
    let Some(noreply) = noreply_or_end(&tokens) else {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    };
    frame.request(Command::Arith { key: key.to_vec(), direction, delta, noreply })
}

/// `touch <key> <exptime> [noreply]`.
pub(crate) fn touch(frame: &Frame<'_>) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let (Some(key), Some(exptime)) = (tokens.next(), tokens.next()) else {
        return frame.refuse(BAD_FORMAT);
    };
    let quiet = ends_with_noreply(frame.line);
    if !is_text_key(key) {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    }
    let Some(exptime) = parse_i64(exptime) else {
        return frame.refuse_unless_quiet(quiet, INVALID_EXPTIME, 0);
    };
    let Some(noreply) = noreply_or_end(&tokens) else {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    };
    frame.request(Command::Touch { key: key.to_vec(), exptime, noreply })
}

/// `flush_all [delay] [noreply]`.
pub(crate) fn flush_all(frame: &Frame<'_>) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let quiet = ends_with_noreply(frame.line);
    let mut delay = 0;
    if !tokens.is_empty() && !tokens.rest_is_noreply() {
        let Some(parsed) = tokens.next().and_then(parse_i64) else {
            return frame.refuse_unless_quiet(quiet, INVALID_EXPTIME, 0);
        };
        delay = parsed;
    }
    let Some(noreply) = noreply_or_end(&tokens) else {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    };
    frame.request(Command::FlushAll { delay, noreply })
}

/// `stats [group]`: further tokens are ignored, as memcached does for the groups it has.
/// A group that is not UTF-8 cannot be one the executor knows: `ERROR`, memcached's reply to
/// an unknown group. `stats noreply` is the group `noreply` (memcached: `ERROR`).
pub(crate) fn stats(frame: &Frame<'_>) -> Parsed {
    let group = match Tokens::new(frame.args).next() {
        None => None,
        Some(token) => match std::str::from_utf8(token) {
            Ok(group) => Some(group.to_owned()),
            Err(_) => return frame.refuse(crate::protocol::parse::UNKNOWN_COMMAND),
        },
    };
    frame.request(Command::Stats { group })
}

/// `verbosity <level> [noreply]` (memcapable: no level is an error, `verbosity noreply` is
/// refused silently, which looks like acceptance).
pub(crate) fn verbosity(frame: &Frame<'_>) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let quiet = ends_with_noreply(frame.line);
    let Some(level) = tokens.next().and_then(parse_u32) else {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    };
    let Some(noreply) = noreply_or_end(&tokens) else {
        return frame.refuse_unless_quiet(quiet, BAD_FORMAT, 0);
    };
    frame.request(Command::Verbosity { level, noreply })
}

/// lamina's `lscan <limit> [<from> [<to>]]` (not memcached's): `limit` is 1 to
/// [`SCAN_LIMIT_MAX`], the bounds are text keys.
pub(crate) fn scan(frame: &Frame<'_>) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let Some(limit) =
        tokens.next().and_then(parse_u32).filter(|limit| (1..=SCAN_LIMIT_MAX).contains(limit))
    else {
        return frame.refuse(BAD_FORMAT);
    };
    let from = tokens.next();
    let to = tokens.next();
    if !tokens.is_empty() || !from.is_none_or(is_text_key) || !to.is_none_or(is_text_key) {
        return frame.refuse(BAD_FORMAT);
    }
    frame.request(Command::Scan {
        limit,
        from: from.map(<[u8]>::to_vec),
        to: to.map(<[u8]>::to_vec),
    })
}
