//! The requests of the memcached text protocol (classic and meta commands), as parsed.
//!
//! The parser (`parse.rs`) turns bytes into these; the executor (`crate::exec`) runs them on
//! the engine and writes the replies. Every field is already validated against the
//! protocol's rules and the server's limits (key length and characters, numbers in range,
//! meta flags allowed for their command), so the executor never re-checks syntax.

/// A key as the client named it: 1 to [`crate::protocol::KEY_BYTES_MAX`] bytes. Classic
/// commands allow no control characters or spaces in keys (the tokenizer splits on spaces);
/// meta commands with the `b` flag carry any bytes (decoded from base64).
pub type Key = Vec<u8>;

/// Expiry as the client sent it (`exptime` / `T` / `N` tokens): 0 never expires; 1 to
/// 2,592,000 (30 days) is relative seconds from now; larger values are absolute Unix
/// times; negative values mean "already expired". Resolved by `crate::item::expiry_at`.
pub type ExpTime = i64;

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `get <key>*` (`cas: false`) or `gets <key>*` (`cas: true`): at least one key.
    Get {
        /// The keys, in request order.
        keys: Vec<Key>,
        /// Whether the reply carries each item's CAS token (`gets`).
        cas: bool,
    },
    /// `gat <exptime> <key>*` / `gats <exptime> <key>*`: get and touch.
    GetAndTouch {
        /// The items' new expiry.
        exptime: ExpTime,
        /// The keys, in request order.
        keys: Vec<Key>,
        /// Whether the reply carries each item's CAS token (`gats`).
        cas: bool,
    },
    /// `set|add|replace|append|prepend <key> <flags> <exptime> <bytes> [noreply]` and
    /// `cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]` (mode `Set`, with
    /// `compare_cas`), each followed by its data block.
    Store {
        /// Which store command (`cas` is `Set` with `compare_cas`).
        mode: StoreMode,
        /// The item's key.
        key: Key,
        /// The client's opaque 32-bit flags, returned with the item.
        client_flags: u32,
        /// The item's expiry.
        exptime: ExpTime,
        /// The data block without its trailing `\r\n`.
        data: Vec<u8>,
        /// `cas`: store only if the item's CAS token equals this.
        compare_cas: Option<u64>,
        /// `noreply`: send nothing back, not even an error.
        noreply: bool,
    },
    /// `delete <key> [0] [noreply]` (the legacy `0` time is accepted, any other is refused).
    Delete {
        /// The item's key.
        key: Key,
        /// `noreply`: send nothing back.
        noreply: bool,
    },
    /// `incr|decr <key> <delta> [noreply]`; `delta` is a 64-bit unsigned decimal.
    Arith {
        /// The item's key (its value must be a decimal number).
        key: Key,
        /// `incr` or `decr`.
        direction: ArithDirection,
        /// The amount to add or subtract.
        delta: u64,
        /// `noreply`: send nothing back.
        noreply: bool,
    },
    /// `touch <key> <exptime> [noreply]`.
    Touch {
        /// The item's key.
        key: Key,
        /// The item's new expiry.
        exptime: ExpTime,
        /// `noreply`: send nothing back.
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`: invalidate every item now, or `delay_secs` from now
    /// (the same exptime rules: relative or absolute).
    FlushAll {
        /// When the flush takes effect (0: now).
        delay: ExpTime,
        /// `noreply`: send nothing back.
        noreply: bool,
    },
    /// `stats [group]`: `None` is the general group; `Some("settings")`, `Some("lamina")`...
    /// (the executor answers groups it does not know with an error line).
    Stats {
        /// The group asked for, if any.
        group: Option<String>,
    },
    /// `version` (memcached 1.6 ignores extra tokens).
    Version,
    /// `verbosity <level> [noreply]`.
    Verbosity {
        /// The requested verbosity level (recorded by the server).
        level: u32,
        /// `noreply`: send nothing back.
        noreply: bool,
    },
    /// `quit`: close the connection after the replies before it.
    Quit,
    /// `mg <key> <flags>*`.
    MetaGet {
        /// The item's key (decoded if the `b` flag was given).
        key: Key,
        /// The request's meta flags.
        flags: MetaFlags,
    },
    /// `ms <key> <datalen> <flags>*` and its data block (without the `\r\n`).
    MetaSet {
        /// The item's key (decoded if the `b` flag was given).
        key: Key,
        /// The data block without its trailing `\r\n`.
        data: Vec<u8>,
        /// The request's meta flags.
        flags: MetaFlags,
    },
    /// `md <key> <flags>*`.
    MetaDelete {
        /// The item's key (decoded if the `b` flag was given).
        key: Key,
        /// The request's meta flags.
        flags: MetaFlags,
    },
    /// `ma <key> <flags>*`.
    MetaArith {
        /// The item's key (decoded if the `b` flag was given).
        key: Key,
        /// The request's meta flags.
        flags: MetaFlags,
    },
    /// `mn`: replies `MN` (clients put it after quiet-mode requests to know they are done).
    MetaNoop,
    /// lamina's ordered extension (not memcached's): `lscan <limit> [<from> [<to>]]`: up to
    /// `limit` live items with `from <= key < to` in key order, answered like `get`
    /// (`VALUE` lines, then `END`). `limit` is 1 to [`crate::protocol::SCAN_LIMIT_MAX`].
    Scan {
        /// The most items to return.
        limit: u32,
        /// The first key to consider (inclusive); `None`: from the start.
        from: Option<Key>,
        /// The end of the range (exclusive); `None`: to the end.
        to: Option<Key>,
    },
}

/// How a store command treats an existing or missing item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    /// Store unconditionally (`set`, `ms` mode `S`, the default).
    Set,
    /// Store only if absent (`add`, mode `E`).
    Add,
    /// Store only if present (`replace`, mode `R`).
    Replace,
    /// Add the data after the existing value, keeping flags and expiry (`append`, mode `A`).
    Append,
    /// Add the data before the existing value (`prepend`, mode `P`).
    Prepend,
}

/// `incr` or `decr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithDirection {
    /// Add, wrapping at 2^64 as memcached does.
    Incr,
    /// Subtract, stopping at 0 (memcached's decr never goes below zero).
    Decr,
}

/// The flags of one meta command, in the order the client sent them (memcached returns
/// the requested fields in that order). Each flag appears at most once per request after
/// parsing (a repeated flag is refused as `CLIENT_ERROR duplicate flag`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaFlags {
    /// The flags, in request order.
    pub flags: Vec<MetaFlag>,
}

/// One meta flag: a letter and, for some, a token. Which flags each command accepts is the
/// table in `docs/server.md` (from memcached's protocol.txt); others are refused with
/// `CLIENT_ERROR invalid flag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaFlag {
    /// `b`: the key was sent base64-encoded (already decoded in the command's key); return
    /// it encoded again (with `k`).
    Base64Key,
    /// `c`: return the item's CAS token (`c<token>`).
    ReturnCas,
    /// `C<token>`: compare CAS; for `mg`, a match removes the value from the reply.
    CompareCas(u64),
    /// `D<token>`: `ma` delta (default 1).
    Delta(u64),
    /// `E<token>`: use this as the item's new CAS token if it is modified.
    NewCas(u64),
    /// `f`: return client flags (`f<flags>`).
    ReturnClientFlags,
    /// `F<token>`: set client flags (32-bit unsigned).
    SetClientFlags(u32),
    /// `h`: return whether the item was hit before (`h0`/`h1`).
    ReturnHit,
    /// `I`: invalidate (mark stale) instead of deleting / set-to-invalid if CAS is older.
    Invalidate,
    /// `J<token>`: `ma` initial value on autovivify (default 0).
    InitialValue(u64),
    /// `k`: return the key (`k<key>`).
    ReturnKey,
    /// `l`: return seconds since last access (`l<secs>`).
    ReturnLastAccess,
    /// `M<token>` on `ms`: the store mode.
    StoreMode(StoreMode),
    /// `M<token>` on `ma`: incr or decr.
    ArithMode(ArithDirection),
    /// `N<token>`: vivify on miss with this TTL.
    Vivify(ExpTime),
    /// `O<token>`: opaque, echoed back (at most [`crate::protocol::OPAQUE_BYTES_MAX`] bytes).
    Opaque(Vec<u8>),
    /// `q`: quiet (noreply semantics for the common reply: `EN` for mg, `HD` for ms/md/ma).
    Quiet,
    /// `R<token>`: win for recache if remaining TTL is below the token.
    Recache(ExpTime),
    /// `s`: return the item's size (`s<bytes>`).
    ReturnSize,
    /// `t`: return remaining TTL in seconds (`t<secs>`, `t-1` for unlimited).
    ReturnTtl,
    /// `T<token>`: set the TTL.
    SetTtl(ExpTime),
    /// `u`: do not bump the item in the LRU (accepted; lamina has no LRU).
    NoLruBump,
    /// `v`: return the value (mg: `VA <size>` and a data block; ma: the number).
    ReturnValue,
    /// `x`: `md` removes the value but keeps the item.
    RemoveValue,
}

impl MetaFlags {
    /// Whether `wanted` is among the flags (compared by variant, ignoring tokens).
    pub fn has(&self, wanted: &MetaFlag) -> bool {
        self.flags.iter().any(|f| std::mem::discriminant(f) == std::mem::discriminant(wanted))
    }

    /// The flags in request order.
    pub fn iter(&self) -> impl Iterator<Item = &MetaFlag> {
        self.flags.iter()
    }
}
