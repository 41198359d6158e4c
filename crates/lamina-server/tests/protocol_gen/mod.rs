//! Test support: a proptest generator of valid requests and their serializer (the bytes a
//! client sends), so the parser can be checked to read back exactly what was sent.

use base64::Engine as _;
use lamina_server::protocol::{
    ArithDirection, Command, KEY_BYTES_MAX, MetaFlag, MetaFlags, OPAQUE_BYTES_MAX, SCAN_LIMIT_MAX,
    StoreMode,
};
use proptest::prelude::*;

/// The largest data block generated (tests use an `item_bytes_max` at least this).
pub const DATA_BYTES_MAX: usize = 64;

/// A text key: printable bytes (and some above 0x7f), mostly short, sometimes the longest.
pub fn text_key() -> impl Strategy<Value = Vec<u8>> + Clone {
    let byte = prop_oneof![8 => 0x21u8..=0x7e, 1 => 0x80u8..=0xff];
    prop_oneof![
        8 => prop::collection::vec(byte.clone(), 1..12),
        1 => prop::collection::vec(byte, KEY_BYTES_MAX..=KEY_BYTES_MAX),
    ]
}

/// A key sent base64-encoded: any bytes whose encoding fits the key limit.
fn binary_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 1..=KEY_BYTES_MAX / 4 * 3)
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..=DATA_BYTES_MAX)
}

fn store_mode() -> impl Strategy<Value = StoreMode> {
    prop_oneof![
        Just(StoreMode::Set),
        Just(StoreMode::Add),
        Just(StoreMode::Replace),
        Just(StoreMode::Append),
        Just(StoreMode::Prepend),
    ]
}

fn direction() -> impl Strategy<Value = ArithDirection> {
    prop_oneof![Just(ArithDirection::Incr), Just(ArithDirection::Decr)]
}

/// Which meta command the flags are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Meta {
    Get,
    Set,
    Delete,
    Arith,
}

/// One flag `meta` accepts.
fn meta_flag(meta: Meta) -> BoxedStrategy<MetaFlag> {
    let opaque =
        prop::collection::vec(0x21u8..=0x7e, 0..=OPAQUE_BYTES_MAX).prop_map(MetaFlag::Opaque);
    let common = prop_oneof![
        Just(MetaFlag::Base64Key),
        Just(MetaFlag::ReturnKey),
        Just(MetaFlag::Quiet),
        any::<u64>().prop_map(MetaFlag::CompareCas),
        any::<u64>().prop_map(MetaFlag::NewCas),
        any::<i64>().prop_map(MetaFlag::SetTtl),
        opaque,
    ];
    match meta {
        Meta::Get => prop_oneof![
            common,
            Just(MetaFlag::ReturnCas),
            Just(MetaFlag::ReturnClientFlags),
            Just(MetaFlag::ReturnHit),
            Just(MetaFlag::ReturnLastAccess),
            Just(MetaFlag::ReturnSize),
            Just(MetaFlag::ReturnTtl),
            Just(MetaFlag::NoLruBump),
            Just(MetaFlag::ReturnValue),
            any::<i64>().prop_map(MetaFlag::Vivify),
            any::<i64>().prop_map(MetaFlag::Recache),
        ]
        .boxed(),
        Meta::Set => prop_oneof![
            common,
            Just(MetaFlag::ReturnCas),
            Just(MetaFlag::ReturnSize),
            Just(MetaFlag::Invalidate),
            any::<u32>().prop_map(MetaFlag::SetClientFlags),
            store_mode().prop_map(MetaFlag::StoreMode),
            any::<i64>().prop_map(MetaFlag::Vivify),
        ]
        .boxed(),
        Meta::Delete => {
            prop_oneof![common, Just(MetaFlag::Invalidate), Just(MetaFlag::RemoveValue)].boxed()
        }
        Meta::Arith => prop_oneof![
            common,
            Just(MetaFlag::ReturnCas),
            Just(MetaFlag::ReturnTtl),
            Just(MetaFlag::ReturnValue),
            any::<i64>().prop_map(MetaFlag::Vivify),
            any::<u64>().prop_map(MetaFlag::InitialValue),
            any::<u64>().prop_map(MetaFlag::Delta),
            direction().prop_map(MetaFlag::ArithMode),
        ]
        .boxed(),
    }
}

/// A meta command's key and flags (each flag once; a `b` key is any bytes).
fn meta_key_and_flags(meta: Meta) -> impl Strategy<Value = (Vec<u8>, MetaFlags)> {
    prop::collection::vec(meta_flag(meta), 0..10)
        .prop_map(|mut flags| {
            let mut seen = Vec::new();
            flags.retain(|flag| {
                let letter = letter(flag);
                let first = !seen.contains(&letter);
                seen.push(letter);
                first
            });
            MetaFlags { flags }
        })
        .prop_flat_map(|flags| {
            let key = if flags.has(&MetaFlag::Base64Key) {
                binary_key().boxed()
            } else {
                text_key().boxed()
            };
            (key, Just(flags))
        })
}

/// Any valid request.
pub fn command() -> impl Strategy<Value = Command> {
    let keys = prop::collection::vec(text_key(), 1..5);
    prop_oneof![
        (keys.clone(), any::<bool>()).prop_map(|(keys, cas)| Command::Get { keys, cas }),
        (any::<i64>(), keys, any::<bool>()).prop_map(|(exptime, keys, cas)| Command::GetAndTouch {
            exptime,
            keys,
            cas
        }),
        (
            store_mode(),
            text_key(),
            any::<u32>(),
            any::<i64>(),
            data(),
            any::<Option<u64>>(),
            any::<bool>()
        )
            .prop_map(|(mode, key, client_flags, exptime, data, compare_cas, noreply)| {
                // `cas` is the only way to send a compare, and it stores in mode Set.
                let mode = if compare_cas.is_some() { StoreMode::Set } else { mode };
                Command::Store { mode, key, client_flags, exptime, data, compare_cas, noreply }
            }),
        (text_key(), any::<bool>()).prop_map(|(key, noreply)| Command::Delete { key, noreply }),
        (text_key(), direction(), any::<u64>(), any::<bool>()).prop_map(
            |(key, direction, delta, noreply)| Command::Arith { key, direction, delta, noreply }
        ),
        (text_key(), any::<i64>(), any::<bool>())
            .prop_map(|(key, exptime, noreply)| Command::Touch { key, exptime, noreply }),
        (any::<i64>(), any::<bool>())
            .prop_map(|(delay, noreply)| Command::FlushAll { delay, noreply }),
        proptest::option::of("[a-z]{1,10}").prop_map(|group| Command::Stats { group }),
        Just(Command::Version),
        (any::<u32>(), any::<bool>())
            .prop_map(|(level, noreply)| Command::Verbosity { level, noreply }),
        Just(Command::Quit),
        meta_key_and_flags(Meta::Get).prop_map(|(key, flags)| Command::MetaGet { key, flags }),
        (meta_key_and_flags(Meta::Set), data()).prop_map(|((key, flags), data)| Command::MetaSet {
            key,
            data,
            flags
        }),
        meta_key_and_flags(Meta::Delete)
            .prop_map(|(key, flags)| Command::MetaDelete { key, flags }),
        meta_key_and_flags(Meta::Arith).prop_map(|(key, flags)| Command::MetaArith { key, flags }),
        Just(Command::MetaNoop),
        (1..=SCAN_LIMIT_MAX, proptest::option::of((text_key(), proptest::option::of(text_key()))))
            .prop_map(|(limit, bounds)| {
                let (from, to) = bounds.map_or((None, None), |(from, to)| (Some(from), to));
                Command::Scan { limit, from, to }
            }),
    ]
}

/// The flag letter of `flag`.
fn letter(flag: &MetaFlag) -> u8 {
    match flag {
        MetaFlag::Base64Key => b'b',
        MetaFlag::ReturnCas => b'c',
        MetaFlag::CompareCas(_) => b'C',
        MetaFlag::Delta(_) => b'D',
        MetaFlag::NewCas(_) => b'E',
        MetaFlag::ReturnClientFlags => b'f',
        MetaFlag::SetClientFlags(_) => b'F',
        MetaFlag::ReturnHit => b'h',
        MetaFlag::Invalidate => b'I',
        MetaFlag::InitialValue(_) => b'J',
        MetaFlag::ReturnKey => b'k',
        MetaFlag::ReturnLastAccess => b'l',
        MetaFlag::StoreMode(_) | MetaFlag::ArithMode(_) => b'M',
        MetaFlag::Vivify(_) => b'N',
        MetaFlag::Opaque(_) => b'O',
        MetaFlag::Quiet => b'q',
        MetaFlag::Recache(_) => b'R',
        MetaFlag::ReturnSize => b's',
        MetaFlag::ReturnTtl => b't',
        MetaFlag::SetTtl(_) => b'T',
        MetaFlag::NoLruBump => b'u',
        MetaFlag::ReturnValue => b'v',
        MetaFlag::RemoveValue => b'x',
    }
}

/// The token of `flag` after its letter.
fn flag_token(flag: &MetaFlag) -> Vec<u8> {
    match flag {
        MetaFlag::CompareCas(n)
        | MetaFlag::Delta(n)
        | MetaFlag::NewCas(n)
        | MetaFlag::InitialValue(n) => n.to_string().into_bytes(),
        MetaFlag::SetClientFlags(n) => n.to_string().into_bytes(),
        MetaFlag::Vivify(t) | MetaFlag::Recache(t) | MetaFlag::SetTtl(t) => {
            t.to_string().into_bytes()
        }
        MetaFlag::Opaque(o) => o.clone(),
        MetaFlag::StoreMode(mode) => vec![match mode {
            StoreMode::Set => b'S',
            StoreMode::Add => b'E',
            StoreMode::Replace => b'R',
            StoreMode::Append => b'A',
            StoreMode::Prepend => b'P',
        }],
        MetaFlag::ArithMode(ArithDirection::Incr) => b"I".to_vec(),
        MetaFlag::ArithMode(ArithDirection::Decr) => b"D".to_vec(),
        _ => Vec::new(),
    }
}

/// The bytes a client sends for `command`.
#[allow(clippy::too_many_lines, reason = "one arm per command, each a few words")]
pub fn serialize(command: &Command) -> Vec<u8> {
    let mut out = Vec::new();
    let word = |out: &mut Vec<u8>, bytes: &[u8]| {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(bytes);
    };
    let noreply = |out: &mut Vec<u8>, noreply: bool| {
        if noreply {
            out.extend_from_slice(b" noreply");
        }
    };
    let meta =
        |out: &mut Vec<u8>, name: &[u8], key: &[u8], len: Option<usize>, flags: &MetaFlags| {
            out.extend_from_slice(name);
            out.push(b' ');
            if flags.has(&MetaFlag::Base64Key) {
                out.extend_from_slice(
                    base64::engine::general_purpose::STANDARD.encode(key).as_bytes(),
                );
            } else {
                out.extend_from_slice(key);
            }
            if let Some(len) = len {
                out.extend_from_slice(format!(" {len}").as_bytes());
            }
            for flag in flags.iter() {
                out.push(b' ');
                out.push(letter(flag));
                out.extend_from_slice(&flag_token(flag));
            }
        };
    match command {
        Command::Get { keys, cas } => {
            word(&mut out, if *cas { b"gets" } else { b"get" });
            for key in keys {
                word(&mut out, key);
            }
        }
        Command::GetAndTouch { exptime, keys, cas } => {
            word(&mut out, if *cas { b"gats" } else { b"gat" });
            word(&mut out, exptime.to_string().as_bytes());
            for key in keys {
                word(&mut out, key);
            }
        }
        Command::Store { mode, key, client_flags, exptime, data, compare_cas, noreply: quiet } => {
            let name: &[u8] = match (mode, compare_cas) {
                (_, Some(_)) => b"cas",
                (StoreMode::Set, None) => b"set",
                (StoreMode::Add, None) => b"add",
                (StoreMode::Replace, None) => b"replace",
                (StoreMode::Append, None) => b"append",
                (StoreMode::Prepend, None) => b"prepend",
            };
            word(&mut out, name);
            word(&mut out, key);
            let numbers = format!("{client_flags} {exptime} {}", data.len());
            word(&mut out, numbers.as_bytes());
            if let Some(cas) = compare_cas {
                word(&mut out, cas.to_string().as_bytes());
            }
            noreply(&mut out, *quiet);
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(data);
        }
        Command::Delete { key, noreply: quiet } => {
            word(&mut out, b"delete");
            word(&mut out, key);
            noreply(&mut out, *quiet);
        }
        Command::Arith { key, direction, delta, noreply: quiet } => {
            word(&mut out, if *direction == ArithDirection::Incr { b"incr" } else { b"decr" });
            word(&mut out, key);
            word(&mut out, delta.to_string().as_bytes());
            noreply(&mut out, *quiet);
        }
        Command::Touch { key, exptime, noreply: quiet } => {
            word(&mut out, b"touch");
            word(&mut out, key);
            word(&mut out, exptime.to_string().as_bytes());
            noreply(&mut out, *quiet);
        }
        Command::FlushAll { delay, noreply: quiet } => {
            word(&mut out, b"flush_all");
            word(&mut out, delay.to_string().as_bytes());
            noreply(&mut out, *quiet);
        }
        Command::Stats { group } => {
            word(&mut out, b"stats");
            if let Some(group) = group {
                word(&mut out, group.as_bytes());
            }
        }
        Command::Version => word(&mut out, b"version"),
        Command::Verbosity { level, noreply: quiet } => {
            word(&mut out, b"verbosity");
            word(&mut out, level.to_string().as_bytes());
            noreply(&mut out, *quiet);
        }
        Command::Quit => word(&mut out, b"quit"),
        Command::MetaGet { key, flags } => meta(&mut out, b"mg", key, None, flags),
        Command::MetaSet { key, data, flags } => {
            meta(&mut out, b"ms", key, Some(data.len()), flags);
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(data);
        }
        Command::MetaDelete { key, flags } => meta(&mut out, b"md", key, None, flags),
        Command::MetaArith { key, flags } => meta(&mut out, b"ma", key, None, flags),
        Command::MetaNoop => word(&mut out, b"mn"),
        Command::Scan { limit, from, to } => {
            word(&mut out, b"lscan");
            word(&mut out, limit.to_string().as_bytes());
            for key in from.iter().chain(to) {
                word(&mut out, key);
            }
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}
