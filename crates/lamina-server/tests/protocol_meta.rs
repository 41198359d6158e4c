//! The parser on the meta commands (`mg`, `ms`, `md`, `ma`, `mn`): each flag, the flags each
//! command accepts, and memcached's error replies (`proto_parser.c`).

use lamina_server::protocol::{
    ArithDirection, Command, KEY_BYTES_MAX, META_TOKENS_MAX, MetaFlag, MetaFlags, OPAQUE_BYTES_MAX,
    ParseLimits, Parsed, StoreMode, parse,
};

const LIMITS: ParseLimits = ParseLimits { line_bytes_max: 4096, item_bytes_max: 100 };

fn request(input: &[u8]) -> Command {
    match parse(input, &LIMITS) {
        Parsed::Request { command, consumed } => {
            assert_eq!(consumed, input.len(), "{:?}", String::from_utf8_lossy(input));
            command
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
    }
}

/// The refusal of `input`: (reply, consumed, swallow_bytes); never closes.
fn refused(input: &[u8]) -> (String, usize, usize) {
    match parse(input, &LIMITS) {
        Parsed::Refused { reply, consumed, swallow_bytes, close } => {
            assert!(!close);
            (reply, consumed, swallow_bytes)
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
    }
}

/// The reply to `input`, refused on its line alone.
fn reply(input: &[u8]) -> String {
    let (reply, consumed, swallow) = refused(input);
    assert_eq!((consumed, swallow), (input.len(), 0), "{reply}");
    reply
}

fn flags(flags: Vec<MetaFlag>) -> MetaFlags {
    MetaFlags { flags }
}

const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format\r\n";
const INVALID_FLAG: &str = "CLIENT_ERROR invalid flag\r\n";
const BAD_TOKEN: &str = "CLIENT_ERROR bad token in command line format\r\n";

#[test]
fn mg_with_every_flag() {
    let command = request(b"mg Zm9v b c C12 f h k l Oab q s t u v E9 N-1 R30 T60 P/x L/y\r\n");
    let Command::MetaGet { key, flags: got } = command else { panic!("{command:?}") };
    assert_eq!(key, b"foo"); // "Zm9v" is base64
    assert_eq!(
        got,
        flags(vec![
            MetaFlag::Base64Key,
            MetaFlag::ReturnCas,
            MetaFlag::CompareCas(12),
            MetaFlag::ReturnClientFlags,
            MetaFlag::ReturnHit,
            MetaFlag::ReturnKey,
            MetaFlag::ReturnLastAccess,
            MetaFlag::Opaque(b"ab".to_vec()),
            MetaFlag::Quiet,
            MetaFlag::ReturnSize,
            MetaFlag::ReturnTtl,
            MetaFlag::NoLruBump,
            MetaFlag::ReturnValue,
            MetaFlag::NewCas(9),
            MetaFlag::Vivify(-1),
            MetaFlag::Recache(30),
            MetaFlag::SetTtl(60),
        ])
    );
    assert!(got.has(&MetaFlag::CompareCas(0)));
    assert!(!got.has(&MetaFlag::RemoveValue));
    assert_eq!(
        request(b"mg k\r\n"),
        Command::MetaGet { key: b"k".to_vec(), flags: MetaFlags::default() }
    );
    assert_eq!(
        request(b"mg k v  t\n"),
        Command::MetaGet {
            key: b"k".to_vec(),
            flags: flags(vec![MetaFlag::ReturnValue, MetaFlag::ReturnTtl])
        }
    );
}

#[test]
fn ms_with_its_data_block() {
    assert_eq!(
        request(b"ms aw== 3 b c C1 E2 F4294967295 I k O1 q s T-1 MA N10\r\nabc\r\n"),
        Command::MetaSet {
            key: b"k".to_vec(),
            data: b"abc".to_vec(),
            flags: flags(vec![
                MetaFlag::Base64Key,
                MetaFlag::ReturnCas,
                MetaFlag::CompareCas(1),
                MetaFlag::NewCas(2),
                MetaFlag::SetClientFlags(u32::MAX),
                MetaFlag::Invalidate,
                MetaFlag::ReturnKey,
                MetaFlag::Opaque(b"1".to_vec()),
                MetaFlag::Quiet,
                MetaFlag::ReturnSize,
                MetaFlag::SetTtl(-1),
                MetaFlag::StoreMode(StoreMode::Append),
                MetaFlag::Vivify(10),
            ])
        }
    );
    assert_eq!(
        request(b"ms k 0\r\n\r\n"),
        Command::MetaSet { key: b"k".to_vec(), data: vec![], flags: MetaFlags::default() }
    );
    for (token, mode) in [
        ("S", StoreMode::Set),
        ("E", StoreMode::Add),
        ("A", StoreMode::Append),
        ("P", StoreMode::Prepend),
        ("R", StoreMode::Replace),
        ("s", StoreMode::Set),
        ("e", StoreMode::Add),
        ("a", StoreMode::Append),
        ("p", StoreMode::Prepend),
        ("r", StoreMode::Replace),
    ] {
        let line = format!("ms k 1 M{token}\r\nx\r\n");
        assert_eq!(
            request(line.as_bytes()),
            Command::MetaSet {
                key: b"k".to_vec(),
                data: b"x".to_vec(),
                flags: flags(vec![MetaFlag::StoreMode(mode)])
            }
        );
    }
    assert_eq!(parse(b"ms k 3 T1\r\nab", &LIMITS), Parsed::Incomplete);
}

#[test]
fn ms_refusals() {
    // No valid length: nothing to swallow.
    for line in [&b"ms\r\n"[..], b"ms k\r\n", b"ms k x\r\n", b"ms k -1\r\n", b"ms k T1\r\n"] {
        assert_eq!(reply(line), BAD_FORMAT, "{:?}", String::from_utf8_lossy(line));
    }
    // A known length: every refusal swallows the block, and q never silences an error.
    let mode = "CLIENT_ERROR invalid mode for ms M token\r\n";
    for (line, expected) in [
        (&b"ms k 5 q Mx\r\n"[..], mode),
        (b"ms k 5 MSS\r\n", mode),
        (b"ms k 5 M\r\n", mode),
        (b"ms k 5 MI\r\n", mode),
        (b"ms k 5 v\r\n", INVALID_FLAG),
        (b"ms k 5 q q\r\n", "CLIENT_ERROR duplicate flag\r\n"),
        (b"ms k 5 Fx\r\n", BAD_FORMAT),
        (b"ms k 5 F4294967296\r\n", BAD_FORMAT),
        (b"ms k 5 Cx\r\n", BAD_TOKEN),
        (b"ms k 5 T\r\n", BAD_TOKEN),
        (b"ms ! 5 b\r\n", "CLIENT_ERROR error decoding key\r\n"),
        (b"ms k 101 q\r\n", "SERVER_ERROR object too large for cache\r\n"),
    ] {
        let len: usize = std::str::from_utf8(line)
            .unwrap()
            .split(' ')
            .nth(2)
            .unwrap()
            .trim_end()
            .parse()
            .unwrap();
        assert_eq!(
            refused(line),
            (expected.to_owned(), line.len(), len + 2),
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
    assert_eq!(refused(b"ms k 1 q\r\nxyz"), ("CLIENT_ERROR bad data chunk\r\n".to_owned(), 13, 0));
}

#[test]
fn md_and_ma() {
    assert_eq!(
        request(b"md aw== b C1 E2 I k O3 q T4 x\r\n"),
        Command::MetaDelete {
            key: b"k".to_vec(),
            flags: flags(vec![
                MetaFlag::Base64Key,
                MetaFlag::CompareCas(1),
                MetaFlag::NewCas(2),
                MetaFlag::Invalidate,
                MetaFlag::ReturnKey,
                MetaFlag::Opaque(b"3".to_vec()),
                MetaFlag::Quiet,
                MetaFlag::SetTtl(4),
                MetaFlag::RemoveValue,
            ])
        }
    );
    assert_eq!(
        request(b"ma k C1 E2 N3 J4 D5 T6 MD O7 q t c v k\r\n"),
        Command::MetaArith {
            key: b"k".to_vec(),
            flags: flags(vec![
                MetaFlag::CompareCas(1),
                MetaFlag::NewCas(2),
                MetaFlag::Vivify(3),
                MetaFlag::InitialValue(4),
                MetaFlag::Delta(5),
                MetaFlag::SetTtl(6),
                MetaFlag::ArithMode(ArithDirection::Decr),
                MetaFlag::Opaque(b"7".to_vec()),
                MetaFlag::Quiet,
                MetaFlag::ReturnTtl,
                MetaFlag::ReturnCas,
                MetaFlag::ReturnValue,
                MetaFlag::ReturnKey,
            ])
        }
    );
    for (token, direction) in [
        ("I", ArithDirection::Incr),
        ("i", ArithDirection::Incr),
        ("+", ArithDirection::Incr),
        ("D", ArithDirection::Decr),
        ("d", ArithDirection::Decr),
        ("-", ArithDirection::Decr),
    ] {
        let line = format!("ma k M{token}\r\n");
        assert_eq!(
            request(line.as_bytes()),
            Command::MetaArith {
                key: b"k".to_vec(),
                flags: flags(vec![MetaFlag::ArithMode(direction)])
            }
        );
    }
    assert_eq!(request(b"mn\r\n"), Command::MetaNoop);
    assert_eq!(request(b"mn ignored\r\n"), Command::MetaNoop);
}

#[test]
fn meta_refusals() {
    assert_eq!(reply(b"mg\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"md \r\n"), BAD_FORMAT);
    assert_eq!(reply(b"ma\r\n"), BAD_FORMAT);
    let long_key = format!("mg {}\r\n", "k".repeat(KEY_BYTES_MAX + 1));
    assert_eq!(reply(long_key.as_bytes()), BAD_FORMAT);
    // Control bytes in keys are accepted, as memcached does.
    assert!(matches!(request(b"mg k\x01 v\r\n"), Command::MetaGet { .. }));
    assert_eq!(reply(b"mg k x\r\n"), INVALID_FLAG); // md's flag
    assert_eq!(reply(b"mg k F1\r\n"), INVALID_FLAG); // ms's flag
    assert_eq!(reply(b"md k v\r\n"), INVALID_FLAG);
    assert_eq!(reply(b"mg k 1\r\n"), INVALID_FLAG);
    assert_eq!(reply(b"mg k \xc3\r\n"), INVALID_FLAG);
    assert_eq!(reply(b"mg k vv\r\n"), INVALID_FLAG); // v takes no token
    assert_eq!(reply(b"mg k v v\r\n"), "CLIENT_ERROR duplicate flag\r\n");
    assert_eq!(reply(b"mg k Pa Pb\r\n"), "CLIENT_ERROR duplicate flag\r\n");
    assert_eq!(reply(b"mg k C\r\n"), BAD_TOKEN);
    assert_eq!(reply(b"mg k C-1\r\n"), BAD_TOKEN);
    assert_eq!(reply(b"mg k E18446744073709551616\r\n"), BAD_TOKEN);
    assert_eq!(reply(b"mg k Nx\r\n"), BAD_TOKEN);
    assert_eq!(reply(b"mg k Rx\r\n"), BAD_TOKEN);
    assert_eq!(reply(b"md k T\r\n"), BAD_TOKEN);
    assert_eq!(reply(b"mg k Oa\x01\r\n"), BAD_TOKEN);
    let longest = format!("mg k O{}\r\n", "o".repeat(OPAQUE_BYTES_MAX));
    assert!(matches!(request(longest.as_bytes()), Command::MetaGet { .. }));
    let too_long = format!("mg k O{}\r\n", "o".repeat(OPAQUE_BYTES_MAX + 1));
    assert_eq!(reply(too_long.as_bytes()), "CLIENT_ERROR opaque token too long\r\n");
    assert_eq!(reply(b"mg ### b\r\n"), "CLIENT_ERROR error decoding key\r\n");
    assert_eq!(reply(b"mg Zm8 b\r\n"), "CLIENT_ERROR error decoding key\r\n"); // padding
    assert_eq!(reply(b"mg = b\r\n"), "CLIENT_ERROR error decoding key\r\n");
    assert_eq!(
        // not base64 without b
        request(b"mg Zm9v\r\n"),
        Command::MetaGet { key: b"Zm9v".to_vec(), flags: MetaFlags::default() }
    );
    // Too many tokens (name, key, flags): counted before duplicates, as memcached.
    let most: String = [
        "b", "c", "f", "h", "k", "l", "q", "s", "t", "u", "v", "C1", "E1", "N1", "R1", "T1", "O1",
        "P1", "L1",
    ]
    .iter()
    .flat_map(|f| [" ", f])
    .collect();
    assert!(matches!(request(format!("mg aw=={most}\r\n").as_bytes()), Command::MetaGet { .. }));
    let many: String = (0..META_TOKENS_MAX - 1).map(|_| " v").collect();
    assert_eq!(
        reply(format!("mg k{many}\r\n").as_bytes()),
        "CLIENT_ERROR options flags are too long\r\n"
    );
    let most_repeated: String = (0..META_TOKENS_MAX - 2).map(|_| " v").collect();
    assert_eq!(
        reply(format!("mg k{most_repeated}\r\n").as_bytes()),
        "CLIENT_ERROR duplicate flag\r\n"
    );
    // ma answers every flag error alike, as memcached.
    let ma = "CLIENT_ERROR invalid or duplicate flag\r\n";
    for line in [&b"ma k x\r\n"[..], b"ma k q q\r\n", b"ma k Dx\r\n", b"ma k Jx\r\n", b"ma k C\r\n"]
    {
        assert_eq!(reply(line), ma, "{:?}", String::from_utf8_lossy(line));
    }
    assert_eq!(reply(b"ma k MS\r\n"), "CLIENT_ERROR invalid mode for ma M token\r\n");
    assert_eq!(reply(b"ma k MII\r\n"), "CLIENT_ERROR invalid mode for ma M token\r\n");
}
