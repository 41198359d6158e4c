//! The meta commands `mg`, `ms`, `md` and `ma` (memcached's protocol.txt, "Meta Commands").
//!
//! Reply flags come back in the order the client sent them, as memcached does. `h` and `l`
//! (hit before, last access) are accepted but not tracked, since tracking them would turn
//! every read into a write of the engine: lamina answers `h0` and `l0`, documented in
//! `docs/server.md`.

use base64::Engine as _;
use lamina_core::codec::Encode;

use super::classic::{ArithOutcome, ArithRequest, StoreRequest};
use super::reply::{push_i64, push_u64};
use super::slot::Change;
use super::{Effects, Exec};
use crate::item::{ITEM_STALE, ITEM_WIN_SENT, ItemHeader, ItemWrite, expiry_at};
use crate::protocol::{ArithDirection, ExpTime, MetaFlag, MetaFlags, StoreMode};
use crate::shared::bump;

/// The tokens of a request's flags, gathered once.
#[derive(Debug, Default)]
#[allow(clippy::struct_excessive_bools)] // one field per meta flag, as the protocol has them
struct Tokens<'a> {
    quiet: bool,
    value: bool,
    base64: bool,
    compare_cas: Option<u64>,
    new_cas: Option<u64>,
    client_flags: Option<u32>,
    ttl: Option<ExpTime>,
    vivify: Option<ExpTime>,
    recache: Option<ExpTime>,
    invalidate: bool,
    remove_value: bool,
    store_mode: Option<StoreMode>,
    arith_mode: Option<ArithDirection>,
    delta: Option<u64>,
    initial: Option<u64>,
    opaque: Option<&'a [u8]>,
}

impl<'a> Tokens<'a> {
    fn of(flags: &'a MetaFlags) -> Tokens<'a> {
        let mut t = Tokens::default();
        for flag in flags.iter() {
            match flag {
                MetaFlag::Quiet => t.quiet = true,
                MetaFlag::ReturnValue => t.value = true,
                MetaFlag::Base64Key => t.base64 = true,
                MetaFlag::CompareCas(c) => t.compare_cas = Some(*c),
                MetaFlag::NewCas(c) => t.new_cas = Some(*c),
                MetaFlag::SetClientFlags(f) => t.client_flags = Some(*f),
                MetaFlag::SetTtl(ttl) => t.ttl = Some(*ttl),
                MetaFlag::Vivify(ttl) => t.vivify = Some(*ttl),
                MetaFlag::Recache(ttl) => t.recache = Some(*ttl),
                MetaFlag::Invalidate => t.invalidate = true,
                MetaFlag::RemoveValue => t.remove_value = true,
                MetaFlag::StoreMode(mode) => t.store_mode = Some(*mode),
                MetaFlag::ArithMode(direction) => t.arith_mode = Some(*direction),
                MetaFlag::Delta(d) => t.delta = Some(*d),
                MetaFlag::InitialValue(v) => t.initial = Some(*v),
                MetaFlag::Opaque(o) => t.opaque = Some(o),
                MetaFlag::ReturnCas
                | MetaFlag::ReturnClientFlags
                | MetaFlag::ReturnHit
                | MetaFlag::ReturnKey
                | MetaFlag::ReturnLastAccess
                | MetaFlag::ReturnSize
                | MetaFlag::ReturnTtl
                | MetaFlag::NoLruBump => {}
            }
        }
        t
    }
}

/// What a reply's flags describe.
#[derive(Debug, Clone, Copy)]
struct Described<'a> {
    key: &'a [u8],
    header: Option<ItemHeader>,
    size: usize,
    now_secs: u64,
}

/// Appends the requested return flags (` c123 f0 k... O...`), in request order.
fn push_return_flags(out: &mut Vec<u8>, flags: &MetaFlags, d: &Described<'_>, base64: bool) {
    for flag in flags.iter() {
        push_flag(out, flag, d, base64);
    }
}

/// Appends the return flags a command has: `k` and `O` always, others where `has` says.
fn push_flags_where(
    out: &mut Vec<u8>,
    flags: &MetaFlags,
    d: &Described<'_>,
    base64: bool,
    has: impl Fn(&MetaFlag) -> bool,
) {
    for flag in flags.iter() {
        if matches!(flag, MetaFlag::ReturnKey | MetaFlag::Opaque(_)) || has(flag) {
            push_flag(out, flag, d, base64);
        }
    }
}

/// Appends one return flag if `flag` asks for one and the item has it.
fn push_flag(out: &mut Vec<u8>, flag: &MetaFlag, d: &Described<'_>, base64: bool) {
    {
        match (flag, d.header) {
            (MetaFlag::ReturnKey, _) => {
                out.extend_from_slice(b" k");
                if base64 {
                    // As memcached: a binary key comes back encoded, marked by ` b`.
                    out.extend_from_slice(
                        base64::engine::general_purpose::STANDARD.encode(d.key).as_bytes(),
                    );
                    out.extend_from_slice(b" b");
                } else {
                    out.extend_from_slice(d.key);
                }
            }
            (MetaFlag::Opaque(o), _) => {
                out.extend_from_slice(b" O");
                out.extend_from_slice(o);
            }
            (MetaFlag::ReturnCas, Some(h)) => {
                out.extend_from_slice(b" c");
                push_u64(out, h.cas);
            }
            (MetaFlag::ReturnClientFlags, Some(h)) => {
                out.extend_from_slice(b" f");
                push_u64(out, u64::from(h.client_flags));
            }
            (MetaFlag::ReturnHit, Some(_)) => out.extend_from_slice(b" h0"),
            (MetaFlag::ReturnLastAccess, Some(_)) => out.extend_from_slice(b" l0"),
            (MetaFlag::ReturnSize, Some(_)) => {
                out.extend_from_slice(b" s");
                push_u64(out, d.size as u64);
            }
            (MetaFlag::ReturnTtl, Some(h)) => {
                out.extend_from_slice(b" t");
                push_i64(out, h.ttl_secs(d.now_secs));
            }
            _ => {}
        }
    }
}

/// Only `O`, `k` and `b` are returned with a miss or a refusal.
fn push_miss_flags(out: &mut Vec<u8>, flags: &MetaFlags, key: &[u8], base64: bool) {
    let d = Described { key, header: None, size: 0, now_secs: 0 };
    push_return_flags(out, flags, &d, base64);
}

/// What `mg` found and did.
#[derive(Debug)]
struct Got {
    header: ItemHeader,
    data: Option<Vec<u8>>,
    size: usize,
    won: bool,
    already_won: bool,
}

impl Exec<'_> {
    #[allow(clippy::too_many_lines)] // mg's flags interact; one place states their order
    pub(crate) fn meta_get(
        &self,
        key: &[u8],
        flags: &MetaFlags,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) {
        let t = Tokens::of(flags);
        let counters = &self.shared.counters;
        let result = self.update(key, |item| {
            let Some(item) = item else {
                // `N<ttl>`: create an empty stub and hand this client the recache win.
                let Some(vivify) = t.vivify else { return Ok((Change::Keep, None)) };
                let Some(expires_at_secs) = expiry_at(vivify, self.now_secs) else {
                    return Ok((Change::Keep, None));
                };
                let cas = self.cas_token(t.new_cas)?;
                let header =
                    ItemHeader { state: ITEM_WIN_SENT, cas, ..self.new_header(0, expires_at_secs) };
                let record = ItemWrite { header, data: [&[], &[]] }.encode();
                let got = Got {
                    header,
                    data: t.value.then(Vec::new),
                    size: 0,
                    won: true,
                    already_won: false,
                };
                return Ok((Change::Write(record), Some(got)));
            };
            let mut header = item.header;
            let already_won = header.win_sent();
            let mut won = false;
            if !already_won {
                let recache_due = t.recache.is_some_and(|r| {
                    header.expires_at_secs != 0 && header.ttl_secs(self.now_secs) < r
                });
                if recache_due || header.is_stale() {
                    won = true;
                    header.state |= ITEM_WIN_SENT;
                }
            }
            let mut changed = won;
            if let Some(ttl) = t.ttl {
                match expiry_at(ttl, self.now_secs) {
                    Some(expires_at_secs) => header.expires_at_secs = expires_at_secs,
                    None => header.expires_at_secs = self.now_secs.max(1),
                }
                changed = true;
            }
            // `C<token>` with `v`: send the value only if the item changed since the token.
            let send_value = t.value && t.compare_cas != Some(item.header.cas);
            let got = Got {
                header,
                data: send_value.then(|| item.data.to_vec()),
                size: item.data.len(),
                won,
                already_won,
            };
            let change = if changed {
                Change::Write(ItemWrite { header, data: [item.data, &[]] }.encode())
            } else {
                Change::Keep
            };
            Ok((change, Some(got)))
        });
        let got = match result {
            Ok((wrote, got)) => {
                effects.wrote |= wrote;
                got
            }
            Err(e) => return self.engine_error(&e, out),
        };
        bump(&counters.cmd_get);
        if t.ttl.is_some() {
            bump(&counters.cmd_touch);
        }
        let Some(got) = got else {
            bump(&counters.get_misses);
            if !t.quiet {
                out.extend_from_slice(b"EN");
                push_miss_flags(out, flags, key, t.base64);
                out.extend_from_slice(b"\r\n");
            }
            return;
        };
        bump(&counters.get_hits);
        match &got.data {
            Some(data) => {
                out.extend_from_slice(b"VA ");
                push_u64(out, data.len() as u64);
            }
            None => out.extend_from_slice(b"HD"),
        }
        let d =
            Described { key, header: Some(got.header), size: got.size, now_secs: self.now_secs };
        push_return_flags(out, flags, &d, t.base64);
        if got.already_won {
            out.extend_from_slice(b" Z");
        }
        if got.header.is_stale() {
            out.extend_from_slice(b" X");
        }
        if got.won {
            out.extend_from_slice(b" W");
        }
        out.extend_from_slice(b"\r\n");
        if let Some(data) = &got.data {
            out.extend_from_slice(data);
            out.extend_from_slice(b"\r\n");
        }
    }

    pub(crate) fn meta_set(
        &self,
        key: &[u8],
        data: &[u8],
        flags: &MetaFlags,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) {
        let t = Tokens::of(flags);
        let request = StoreRequest {
            mode: t.store_mode.unwrap_or(StoreMode::Set),
            client_flags: t.client_flags.unwrap_or(0),
            exptime: t.ttl.unwrap_or(0),
            compare_cas: t.compare_cas,
            invalidate: t.invalidate,
            vivify: t.vivify,
        };
        let outcome = match self.store(key, &request, data, t.new_cas) {
            Ok((wrote, outcome)) => {
                effects.wrote |= wrote;
                outcome
            }
            Err(e) => return self.engine_error(&e, out),
        };
        if outcome.is_error() {
            out.extend_from_slice(outcome.meta_code());
            out.extend_from_slice(b"\r\n");
            return;
        }
        if t.quiet && outcome.stored() {
            return;
        }
        out.extend_from_slice(outcome.meta_code());
        let header = outcome
            .stored()
            .then(|| ItemHeader { cas: outcome.cas, ..self.new_header(request.client_flags, 0) });
        let d = Described { key, header, size: outcome.size, now_secs: self.now_secs };
        // `ms` returns c, k, O and s; it has no f, t, h or l.
        push_flags_where(out, flags, &d, t.base64, |flag| {
            matches!(flag, MetaFlag::ReturnCas | MetaFlag::ReturnSize)
        });
        out.extend_from_slice(b"\r\n");
    }

    pub(crate) fn meta_delete(
        &self,
        key: &[u8],
        flags: &MetaFlags,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) {
        let t = Tokens::of(flags);
        let result = self.update(key, |item| {
            let Some(item) = item else { return Ok((Change::Keep, &b"NF"[..])) };
            if t.compare_cas.is_some_and(|c| c != item.header.cas) {
                return Ok((Change::Keep, &b"EX"[..]));
            }
            if !t.invalidate && !t.remove_value {
                return Ok((Change::Delete, &b"HD"[..]));
            }
            // `I`: keep the item, stale, with a new token (and `T` updates its TTL); `x`:
            // keep the item with an empty value.
            let mut header = ItemHeader { cas: self.cas_token(t.new_cas)?, ..item.header };
            if t.invalidate {
                header.state = (header.state | ITEM_STALE) & !ITEM_WIN_SENT;
                if let Some(ttl) = t.ttl {
                    match expiry_at(ttl, self.now_secs) {
                        Some(expires_at_secs) => header.expires_at_secs = expires_at_secs,
                        None => return Ok((Change::Delete, &b"HD"[..])),
                    }
                }
            }
            let data: &[u8] = if t.remove_value {
                header.client_flags = 0;
                &[]
            } else {
                item.data
            };
            Ok((Change::Write(ItemWrite { header, data: [data, &[]] }.encode()), &b"HD"[..]))
        });
        let code = match result {
            Ok((wrote, code)) => {
                effects.wrote |= wrote;
                code
            }
            Err(e) => return self.engine_error(&e, out),
        };
        let counters = &self.shared.counters;
        bump(if code == b"HD" { &counters.delete_hits } else { &counters.delete_misses });
        if t.quiet && code == b"HD" {
            return;
        }
        out.extend_from_slice(code);
        push_miss_flags(out, flags, key, t.base64);
        out.extend_from_slice(b"\r\n");
    }

    pub(crate) fn meta_arith(
        &self,
        key: &[u8],
        flags: &MetaFlags,
        out: &mut Vec<u8>,
        effects: &mut Effects,
    ) {
        let t = Tokens::of(flags);
        let request = ArithRequest {
            direction: t.arith_mode.unwrap_or(ArithDirection::Incr),
            delta: t.delta.unwrap_or(1),
            compare_cas: t.compare_cas,
            new_cas: t.new_cas,
            vivify: t.vivify.map(|ttl| (t.initial.unwrap_or(0), ttl)),
            ttl: t.ttl,
        };
        let outcome = match self.arith(key, &request) {
            Ok((wrote, outcome)) => {
                effects.wrote |= wrote;
                outcome
            }
            Err(e) => return self.engine_error(&e, out),
        };
        let (value, header) = match outcome {
            ArithOutcome::Done { value, header } => (value, header),
            ArithOutcome::NonNumeric => {
                out.extend_from_slice(
                    b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
                );
                return;
            }
            ArithOutcome::NotFound | ArithOutcome::Exists => {
                let code: &[u8] =
                    if matches!(outcome, ArithOutcome::NotFound) { b"NF" } else { b"EX" };
                out.extend_from_slice(code);
                push_miss_flags(out, flags, key, t.base64);
                out.extend_from_slice(b"\r\n");
                return;
            }
        };
        let mut digits = Vec::new();
        push_u64(&mut digits, value);
        if t.value {
            out.extend_from_slice(b"VA ");
            push_u64(out, digits.len() as u64);
        } else if t.quiet {
            return;
        } else {
            out.extend_from_slice(b"HD");
        }
        let d =
            Described { key, header: Some(header), size: digits.len(), now_secs: self.now_secs };
        // `ma` returns c, k, O and t.
        push_flags_where(out, flags, &d, t.base64, |flag| {
            matches!(flag, MetaFlag::ReturnCas | MetaFlag::ReturnTtl)
        });
        out.extend_from_slice(b"\r\n");
        if t.value {
            out.extend_from_slice(&digits);
            out.extend_from_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_flags_follow_request_order() {
        let flags = MetaFlags {
            flags: vec![
                MetaFlag::ReturnTtl,
                MetaFlag::Opaque(b"op".to_vec()),
                MetaFlag::ReturnCas,
                MetaFlag::ReturnKey,
                MetaFlag::ReturnSize,
            ],
        };
        let header =
            ItemHeader { state: 0, client_flags: 3, cas: 42, expires_at_secs: 0, flush_epoch: 0 };
        let d = Described { key: b"k1", header: Some(header), size: 5, now_secs: 10 };
        let mut out = Vec::new();
        push_return_flags(&mut out, &flags, &d, false);
        assert_eq!(out, b" t-1 Oop c42 kk1 s5");
        let mut out = Vec::new();
        push_miss_flags(&mut out, &flags, b"\x00\x01", true);
        assert_eq!(out, b" Oop kAAE= b");
    }
}
