//! The classic text commands: retrieval, storage, delete, incr/decr, touch, flush_all,
//! version, verbosity, and lamina's `lscan`.

use lamina_core::codec::Encode;
use lamina_core::{KeyRange, Result};

use super::reply::{push_u64, push_value};
use super::slot::Change;
use super::{Effects, Exec};
use crate::item::{ITEM_STALE, ItemHeader, ItemWrite, expiry_at};
use crate::protocol::{ArithDirection, Command, ExpTime, KEY_BYTES_MAX, StoreMode};
use crate::shared::bump;

/// `version`'s answer: the memcached protocol version whose behaviour lamina follows, then
/// lamina's own version.
pub const VERSION_LINE: &str = concat!("VERSION 1.6.0-lamina-", env!("CARGO_PKG_VERSION"), "\r\n");

/// memcached's reply to incr/decr on a value that is not a decimal number.
const NON_NUMERIC: &[u8] = b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
/// The reply to a store that would make an item larger than the limit.
const TOO_LARGE: &[u8] = b"SERVER_ERROR object too large for cache\r\n";

/// The outcome of a storage command, as its reply word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // memcached's reply words: STORED, NOT_STORED
enum Stored {
    Stored,
    NotStored,
    Exists,
    NotFound,
    TooLarge,
}

impl Exec<'_> {
    /// Runs a classic command (not `quit`, `stats` or meta commands).
    pub(crate) fn classic(&self, command: Command, out: &mut Vec<u8>, effects: &mut Effects) {
        let result = match command {
            Command::Get { keys, cas } => self.get(&keys, cas, None, out, effects),
            Command::GetAndTouch { exptime, keys, cas } => {
                self.get(&keys, cas, Some(exptime), out, effects)
            }
            Command::Store { mode, key, client_flags, exptime, data, compare_cas, noreply } => {
                let request = StoreRequest {
                    mode,
                    client_flags,
                    exptime,
                    compare_cas,
                    invalidate: false,
                    vivify: None,
                };
                self.store_classic(&key, &request, &data, noreply, out, effects)
            }
            Command::Delete { key, noreply } => self.delete(&key, noreply, out, effects),
            Command::Arith { key, direction, delta, noreply } => {
                self.arith_classic(&key, direction, delta, noreply, out, effects)
            }
            Command::Touch { key, exptime, noreply } => {
                self.touch(&key, exptime, noreply, out, effects)
            }
            Command::FlushAll { delay, noreply } => self.flush_all(delay, noreply, out),
            Command::Version => {
                out.extend_from_slice(VERSION_LINE.as_bytes());
                Ok(())
            }
            Command::Verbosity { level, noreply } => {
                self.shared.verbosity.store(level, std::sync::atomic::Ordering::Relaxed);
                if !noreply {
                    out.extend_from_slice(b"OK\r\n");
                }
                Ok(())
            }
            Command::Scan { limit, from, to } => self.scan(limit, from, to, out),
            Command::Quit
            | Command::Stats { .. }
            | Command::MetaGet { .. }
            | Command::MetaSet { .. }
            | Command::MetaDelete { .. }
            | Command::MetaArith { .. }
            | Command::MetaNoop => unreachable!("dispatched in execute"),
        };
        if let Err(e) = result {
            self.engine_error(&e, out);
        }
    }

    /// `get`/`gets` (`touch: None`) and `gat`/`gats`.
    fn get(
        &self,
        keys: &[Vec<u8>],
        with_cas: bool,
        touch: Option<ExpTime>,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) -> Result<()> {
        // Values go straight into `out`; an engine error midway takes them back out, so the
        // request is answered with one SERVER_ERROR line rather than half a reply.
        let start = out.len();
        let result = self.get_values(keys, with_cas, touch, out, effects);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn get_values(
        &self,
        keys: &[Vec<u8>],
        with_cas: bool,
        touch: Option<ExpTime>,
        reply: &mut Vec<u8>,
        effects: &mut Effects,
    ) -> Result<()> {
        let counters = &self.shared.counters;
        for key in keys {
            bump(&counters.cmd_get);
            let hit = match touch {
                None => self.read(key, |item| {
                    item.map(|item| {
                        let cas = with_cas.then_some(item.header.cas);
                        push_value(reply, key, item.header.client_flags, item.data, cas);
                    })
                })?,
                Some(exptime) => {
                    bump(&counters.cmd_touch);
                    let expires = expiry_at(exptime, self.now_secs);
                    let (wrote, hit) = self.update(key, |item| {
                        let Some(item) = item else { return Ok((Change::Keep, None)) };
                        let cas = with_cas.then_some(item.header.cas);
                        let mut value = Vec::new();
                        push_value(&mut value, key, item.header.client_flags, item.data, cas);
                        let change = match expires {
                            None => Change::Delete,
                            Some(expires_at_secs) => {
                                let header = ItemHeader { expires_at_secs, ..item.header };
                                Change::Write(ItemWrite { header, data: [item.data, &[]] }.encode())
                            }
                        };
                        Ok((change, Some(value)))
                    })?;
                    effects.wrote |= wrote;
                    hit.map(|value| reply.extend_from_slice(&value))
                }
            };
            match (hit.is_some(), touch.is_some()) {
                (true, false) => bump(&counters.get_hits),
                (false, false) => bump(&counters.get_misses),
                (true, true) => bump(&counters.touch_hits),
                (false, true) => bump(&counters.touch_misses),
            }
        }
        reply.extend_from_slice(b"END\r\n");
        Ok(())
    }

    /// `set`, `add`, `replace`, `append`, `prepend` and `cas`.
    fn store_classic(
        &self,
        key: &[u8],
        request: &StoreRequest,
        data: &[u8],
        noreply: bool,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) -> Result<()> {
        let (wrote, stored) = self.store(key, request, data, None)?;
        effects.wrote |= wrote;
        let word: &[u8] = match stored.outcome {
            Stored::Stored => b"STORED\r\n",
            Stored::NotStored => b"NOT_STORED\r\n",
            Stored::Exists => b"EXISTS\r\n",
            Stored::NotFound => b"NOT_FOUND\r\n",
            Stored::TooLarge => TOO_LARGE,
        };
        // As memcached, `noreply` silences the normal replies, not the errors.
        if !noreply || stored.outcome == Stored::TooLarge {
            out.extend_from_slice(word);
        }
        Ok(())
    }

    /// The storage commands' common core; `new_cas` overrides the new token (meta `E`).
    /// Returns whether the engine was written and the outcome with the item's new CAS.
    pub(crate) fn store(
        &self,
        key: &[u8],
        request: &StoreRequest,
        data: &[u8],
        new_cas: Option<u64>,
    ) -> Result<(bool, StoreOutcome)> {
        let counters = &self.shared.counters;
        bump(&counters.cmd_set);
        let expires = expiry_at(request.exptime, self.now_secs);
        let item_bytes_max = self.shared.config.item_bytes_max;
        let db = &self.shared.db;
        if request.mode == StoreMode::Set && request.compare_cas.is_none() {
            // No condition: a blind write, no read needed.
            let Some(expires_at_secs) = expires else {
                db.delete(key)?;
                return Ok((true, StoreOutcome { outcome: Stored::Stored, cas: 0, size: 0 }));
            };
            let cas = self.cas_token(new_cas)?;
            let header =
                ItemHeader { cas, ..self.new_header(request.client_flags, expires_at_secs) };
            db.put(key, ItemWrite { header, data: [data, &[]] }.encode())?;
            bump(&counters.total_items);
            let outcome = StoreOutcome { outcome: Stored::Stored, cas, size: data.len() };
            return Ok((true, outcome));
        }
        let (wrote, outcome) = self.update(key, |item| {
            let refuse = |outcome| Ok((Change::Keep, StoreOutcome { outcome, cas: 0, size: 0 }));
            // `ms ... C<token> I`: a token older than the item's stores the item as stale.
            let mut stale = false;
            if let Some(expected) = request.compare_cas {
                match item {
                    None => return refuse(Stored::NotFound),
                    Some(item) if request.invalidate && expected < item.header.cas => {
                        stale = true;
                    }
                    Some(item) if item.header.cas != expected => return refuse(Stored::Exists),
                    Some(_) => {}
                }
            }
            let (header, pieces) = match (request.mode, item) {
                (StoreMode::Add, Some(_)) => return refuse(Stored::NotStored),
                // `ms ... MA N<ttl>`: append or prepend to a missing item creates it.
                (StoreMode::Append | StoreMode::Prepend, None)
                    if let Some(exptime) = request.vivify =>
                {
                    let Some(expires_at_secs) = expiry_at(exptime, self.now_secs) else {
                        return refuse(Stored::NotStored);
                    };
                    (self.new_header(request.client_flags, expires_at_secs), [data, &[][..]])
                }
                (StoreMode::Replace | StoreMode::Append | StoreMode::Prepend, None) => {
                    return refuse(Stored::NotStored);
                }
                (StoreMode::Append, Some(item)) => (item.header, [item.data, data]),
                (StoreMode::Prepend, Some(item)) => (item.header, [data, item.data]),
                (StoreMode::Set | StoreMode::Add | StoreMode::Replace, _) => {
                    let Some(expires_at_secs) = expires else {
                        return Ok((
                            Change::Delete,
                            StoreOutcome { outcome: Stored::Stored, cas: 0, size: 0 },
                        ));
                    };
                    (self.new_header(request.client_flags, expires_at_secs), [data, &[][..]])
                }
            };
            let size = pieces[0].len() + pieces[1].len();
            if size > item_bytes_max {
                return refuse(Stored::TooLarge);
            }
            let cas = self.cas_token(new_cas)?;
            let state = if stale { header.state | ITEM_STALE } else { header.state & !ITEM_STALE };
            let header = ItemHeader { state, cas, ..header };
            let record = ItemWrite { header, data: pieces }.encode();
            Ok((Change::Write(record), StoreOutcome { outcome: Stored::Stored, cas, size }))
        })?;
        if wrote && outcome.outcome == Stored::Stored {
            bump(&counters.total_items);
        }
        if request.compare_cas.is_some() {
            match outcome.outcome {
                Stored::Stored => bump(&counters.cas_hits),
                Stored::NotFound => bump(&counters.cas_misses),
                Stored::Exists => bump(&counters.cas_badval),
                Stored::NotStored | Stored::TooLarge => {}
            }
        }
        Ok((wrote, outcome))
    }

    /// The header of a newly created item (no state bits, the current flush epoch); the
    /// CAS token is set when the item is written.
    pub(crate) fn new_header(&self, client_flags: u32, expires_at_secs: u64) -> ItemHeader {
        ItemHeader {
            state: 0,
            client_flags,
            cas: 0,
            expires_at_secs,
            flush_epoch: self.flush_epoch,
        }
    }

    /// A fresh CAS token, or the client's (meta `E`).
    pub(crate) fn cas_token(&self, requested: Option<u64>) -> Result<u64> {
        match requested {
            // Token 0 is reserved (never a valid item CAS); a client asking for it gets a
            // fresh one instead.
            Some(token) if token != 0 => Ok(token),
            _ => self.shared.clock.next_cas(&self.shared.db),
        }
    }

    fn delete(
        &self,
        key: &[u8],
        noreply: bool,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) -> Result<()> {
        let (wrote, found) = self.update(key, |item| {
            Ok(if item.is_some() { (Change::Delete, true) } else { (Change::Keep, false) })
        })?;
        effects.wrote |= wrote;
        let counters = &self.shared.counters;
        bump(if found { &counters.delete_hits } else { &counters.delete_misses });
        if !noreply {
            out.extend_from_slice(if found { b"DELETED\r\n" } else { b"NOT_FOUND\r\n" });
        }
        Ok(())
    }

    fn arith_classic(
        &self,
        key: &[u8],
        direction: ArithDirection,
        delta: u64,
        noreply: bool,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) -> Result<()> {
        let arith = ArithRequest {
            direction,
            delta,
            compare_cas: None,
            new_cas: None,
            vivify: None,
            ttl: None,
        };
        let (wrote, outcome) = self.arith(key, &arith)?;
        effects.wrote |= wrote;
        match outcome {
            ArithOutcome::Done { value, .. } => {
                if !noreply {
                    push_u64(out, value);
                    out.extend_from_slice(b"\r\n");
                }
            }
            ArithOutcome::NotFound | ArithOutcome::Exists => {
                if !noreply {
                    out.extend_from_slice(b"NOT_FOUND\r\n");
                }
            }
            // An error is answered even under noreply, as memcached does.
            ArithOutcome::NonNumeric => out.extend_from_slice(NON_NUMERIC),
        }
        Ok(())
    }

    /// incr/decr's core, shared with `ma`.
    pub(crate) fn arith(&self, key: &[u8], request: &ArithRequest) -> Result<(bool, ArithOutcome)> {
        let counters = &self.shared.counters;
        let (wrote, outcome) = self.update(key, |item| {
            let Some(item) = item else {
                let Some((initial, exptime)) = request.vivify else {
                    return Ok((Change::Keep, ArithOutcome::NotFound));
                };
                let Some(expires_at_secs) = expiry_at(exptime, self.now_secs) else {
                    return Ok((Change::Keep, ArithOutcome::NotFound));
                };
                let cas = self.cas_token(request.new_cas)?;
                let header = ItemHeader { cas, ..self.new_header(0, expires_at_secs) };
                let digits = initial.to_string();
                let record = ItemWrite { header, data: [digits.as_bytes(), &[]] }.encode();
                return Ok((Change::Write(record), ArithOutcome::Done { value: initial, header }));
            };
            if request.compare_cas.is_some_and(|expected| expected != item.header.cas) {
                return Ok((Change::Keep, ArithOutcome::Exists));
            }
            let Some(current) = parse_counter(item.data) else {
                return Ok((Change::Keep, ArithOutcome::NonNumeric));
            };
            let value = match request.direction {
                ArithDirection::Incr => current.wrapping_add(request.delta),
                ArithDirection::Decr => current.saturating_sub(request.delta),
            };
            let mut header = ItemHeader { cas: self.cas_token(request.new_cas)?, ..item.header };
            if let Some(exptime) = request.ttl {
                match expiry_at(exptime, self.now_secs) {
                    Some(expires_at_secs) => header.expires_at_secs = expires_at_secs,
                    None => return Ok((Change::Delete, ArithOutcome::Done { value, header })),
                }
            }
            let digits = value.to_string();
            let record = ItemWrite { header, data: [digits.as_bytes(), &[]] }.encode();
            Ok((Change::Write(record), ArithOutcome::Done { value, header }))
        })?;
        let (hits, misses) = match request.direction {
            ArithDirection::Incr => (&counters.incr_hits, &counters.incr_misses),
            ArithDirection::Decr => (&counters.decr_hits, &counters.decr_misses),
        };
        bump(if matches!(outcome, ArithOutcome::Done { .. }) { hits } else { misses });
        Ok((wrote, outcome))
    }

    fn touch(
        &self,
        key: &[u8],
        exptime: ExpTime,
        noreply: bool,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) -> Result<()> {
        bump(&self.shared.counters.cmd_touch);
        let expires = expiry_at(exptime, self.now_secs);
        let (wrote, found) = self.update(key, |item| {
            let Some(item) = item else { return Ok((Change::Keep, false)) };
            let Some(expires_at_secs) = expires else { return Ok((Change::Delete, true)) };
            // As memcached, touch changes the expiry but not the CAS token.
            let header = ItemHeader { expires_at_secs, ..item.header };
            Ok((Change::Write(ItemWrite { header, data: [item.data, &[]] }.encode()), true))
        })?;
        effects.wrote |= wrote;
        let counters = &self.shared.counters;
        bump(if found { &counters.touch_hits } else { &counters.touch_misses });
        if !noreply {
            out.extend_from_slice(if found { b"TOUCHED\r\n" } else { b"NOT_FOUND\r\n" });
        }
        Ok(())
    }

    fn flush_all(&self, delay: ExpTime, noreply: bool, out: &mut Vec<u8>) -> Result<()> {
        bump(&self.shared.counters.cmd_flush);
        // A delay follows the exptime rules; zero, negative or past times flush now.
        let at_secs = match delay {
            0 => 0,
            delay => expiry_at(delay, self.now_secs).unwrap_or(0),
        };
        self.shared.clock.flush(&self.shared.db, at_secs, self.now_secs)?;
        if !noreply {
            out.extend_from_slice(b"OK\r\n");
        }
        Ok(())
    }

    /// `lscan <limit> [<from> [<to>]]`: live items in key order, as `VALUE` lines.
    fn scan(
        &self,
        limit: u32,
        from: Option<Vec<u8>>,
        to: Option<Vec<u8>>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        bump(&self.shared.counters.cmd_scan);
        let mut range = match (from, to) {
            (None, _) => KeyRange::all(),
            (Some(from), None) => KeyRange::new(from..),
            (Some(from), Some(to)) => KeyRange::new(from..to),
        };
        let mut reply = Vec::new();
        let mut left = limit as usize;
        // Dead and internal records are skipped, so a page may yield fewer items than it
        // read; read pages until the limit is met or the range ends.
        while left > 0 {
            let page = self.shared.db.scan(&range, left.max(64))?;
            let exhausted = page.len() < left.max(64);
            for (key, record) in &page {
                if left == 0 {
                    break;
                }
                if key.len() > KEY_BYTES_MAX {
                    continue; // the server's own records
                }
                if let Some(item) = self.live(key, record)? {
                    push_value(&mut reply, key, item.header.client_flags, item.data, None);
                    left -= 1;
                }
            }
            match page.last() {
                Some((last, _)) if !exhausted => range = range.resume_after(last),
                _ => break,
            }
        }
        out.extend_from_slice(&reply);
        out.extend_from_slice(b"END\r\n");
        Ok(())
    }
}

/// A storage request's parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreRequest {
    pub mode: StoreMode,
    pub client_flags: u32,
    pub exptime: ExpTime,
    pub compare_cas: Option<u64>,
    /// `ms I`: with `compare_cas`, an older token stores the item marked stale.
    pub invalidate: bool,
    /// `ms N<ttl>` in append/prepend mode: create a missing item with this TTL.
    pub vivify: Option<ExpTime>,
}

/// What a storage request did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreOutcome {
    outcome: Stored,
    /// The new CAS token if stored (0 otherwise).
    pub cas: u64,
    /// The stored item's data size.
    pub size: usize,
}

impl StoreOutcome {
    /// Meta's reply code.
    pub(crate) fn meta_code(&self) -> &'static [u8] {
        match self.outcome {
            Stored::Stored => b"HD",
            Stored::NotStored => b"NS",
            Stored::Exists => b"EX",
            Stored::NotFound => b"NF",
            Stored::TooLarge => b"SERVER_ERROR object too large for cache",
        }
    }

    /// Whether the item was stored.
    pub(crate) fn stored(&self) -> bool {
        self.outcome == Stored::Stored
    }

    /// Whether the request failed with an error line (not a status code).
    pub(crate) fn is_error(&self) -> bool {
        self.outcome == Stored::TooLarge
    }
}

/// An arithmetic request (`incr`/`decr`/`ma`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArithRequest {
    pub direction: ArithDirection,
    pub delta: u64,
    pub compare_cas: Option<u64>,
    pub new_cas: Option<u64>,
    /// `ma N`: on a miss, create the item with this initial value and TTL.
    pub vivify: Option<(u64, ExpTime)>,
    /// `ma T`: set the TTL on success.
    pub ttl: Option<ExpTime>,
}

/// What an arithmetic request did.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ArithOutcome {
    Done { value: u64, header: ItemHeader },
    NotFound,
    Exists,
    NonNumeric,
}

/// A counter's value: decimal digits, optionally followed by spaces (memcached pads values
/// it decremented in place), at most 20 digits and at most `u64::MAX`.
fn parse_counter(data: &[u8]) -> Option<u64> {
    let digits_len = data.iter().position(|b| !b.is_ascii_digit()).unwrap_or(data.len());
    if digits_len == 0 || data[digits_len..].iter().any(|&b| b != b' ') {
        return None;
    }
    std::str::from_utf8(&data[..digits_len]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::parse_counter;

    #[test]
    fn counters_parse_like_memcached() {
        assert_eq!(parse_counter(b"0"), Some(0));
        assert_eq!(parse_counter(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_counter(b"18446744073709551616"), None);
        assert_eq!(parse_counter(b"12  "), Some(12));
        assert_eq!(parse_counter(b""), None);
        assert_eq!(parse_counter(b"-1"), None);
        assert_eq!(parse_counter(b"1x"), None);
        assert_eq!(parse_counter(b" 1"), None);
    }
}
