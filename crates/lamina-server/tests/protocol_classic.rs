//! The parser on the classic text commands: each command, each of its error replies, and
//! memcached's `noreply` and swallow rules (memcached's `proto_text.c`/`proto_parser.c`,
//! libmemcached's memcapable ASCII tests).

use lamina_server::protocol::{
    ArithDirection, Command, GET_KEYS_MAX, KEY_BYTES_MAX, ParseLimits, Parsed, SCAN_LIMIT_MAX,
    StoreMode, parse,
};

const LIMITS: ParseLimits = ParseLimits { line_bytes_max: 4096, item_bytes_max: 100 };

/// The request `input` holds, which must take all of it.
fn request(input: &[u8]) -> Command {
    match parse(input, &LIMITS) {
        Parsed::Request { command, consumed } => {
            assert_eq!(consumed, input.len(), "{:?}", String::from_utf8_lossy(input));
            command
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
    }
}

/// The refusal of `input`: (reply, consumed, swallow_bytes, close).
fn refused(input: &[u8]) -> (String, usize, usize, bool) {
    match parse(input, &LIMITS) {
        Parsed::Refused { reply, consumed, swallow_bytes, close } => {
            (reply, consumed, swallow_bytes, close)
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
    }
}

/// The reply to `input`, refused on its line alone (no swallow, no close).
fn reply(input: &[u8]) -> String {
    let (reply, consumed, swallow, close) = refused(input);
    assert_eq!((consumed, swallow, close), (input.len(), 0, false), "{reply}");
    reply
}

const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format\r\n";

fn keys(keys: &[&str]) -> Vec<Vec<u8>> {
    keys.iter().map(|k| k.as_bytes().to_vec()).collect()
}

#[test]
fn get_and_gets() {
    assert_eq!(request(b"get a\r\n"), Command::Get { keys: keys(&["a"]), cas: false });
    assert_eq!(request(b"gets a  b c\n"), Command::Get { keys: keys(&["a", "b", "c"]), cas: true });
    assert_eq!(request(b"get a \r\n"), Command::Get { keys: keys(&["a"]), cas: false });
    assert_eq!(reply(b"get\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"gets \r\n"), BAD_FORMAT);
    let long = format!("get a {}\r\n", "k".repeat(KEY_BYTES_MAX + 1));
    assert_eq!(reply(long.as_bytes()), BAD_FORMAT);
    let longest = format!("get {}\r\n", "k".repeat(KEY_BYTES_MAX));
    assert!(matches!(request(longest.as_bytes()), Command::Get { .. }));
    // Control bytes in keys are accepted, as memcached does (memaslap sends them).
    assert_eq!(
        request(b"get a\x01b\r\n"),
        Command::Get { keys: vec![b"a\x01b".to_vec()], cas: false }
    );
    assert_eq!(request(b"get a\tb\r\n"), Command::Get { keys: keys(&["a\tb"]), cas: false });
    // `noreply` is a key to get (memcached looks it up too).
    assert_eq!(request(b"get noreply\r\n"), Command::Get { keys: keys(&["noreply"]), cas: false });
}

#[test]
fn get_key_count_is_bounded() {
    let limits = ParseLimits { line_bytes_max: 1 << 20, item_bytes_max: 100 };
    let line = |n: usize| format!("get{}\r\n", " k".repeat(n));
    let most = line(GET_KEYS_MAX);
    match parse(most.as_bytes(), &limits) {
        Parsed::Request { command: Command::Get { keys, .. }, .. } => {
            assert_eq!(keys.len(), GET_KEYS_MAX);
        }
        other => panic!("{other:?}"),
    }
    let too_many = line(GET_KEYS_MAX + 1);
    match parse(too_many.as_bytes(), &limits) {
        Parsed::Refused { reply, consumed, .. } => {
            assert_eq!(reply, "CLIENT_ERROR too many keys\r\n");
            assert_eq!(consumed, too_many.len());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn gat_and_gats() {
    assert_eq!(
        request(b"gat 10 a b\r\n"),
        Command::GetAndTouch { exptime: 10, keys: keys(&["a", "b"]), cas: false }
    );
    assert_eq!(
        request(b"gats -1 a\r\n"),
        Command::GetAndTouch { exptime: -1, keys: keys(&["a"]), cas: true }
    );
    assert_eq!(reply(b"gat\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"gat 10\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"gat x a\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
    assert!(matches!(request(b"gats 1 a\x7f\r\n"), Command::GetAndTouch { .. }));
}

fn store(mode: StoreMode, key: &str, flags: u32, exptime: i64, data: &[u8]) -> Command {
    store_cas(mode, key, flags, exptime, data, None, false)
}

fn store_cas(
    mode: StoreMode,
    key: &str,
    client_flags: u32,
    exptime: i64,
    data: &[u8],
    compare_cas: Option<u64>,
    noreply: bool,
) -> Command {
    Command::Store {
        mode,
        key: key.as_bytes().to_vec(),
        client_flags,
        exptime,
        data: data.to_vec(),
        compare_cas,
        noreply,
    }
}

#[test]
fn store_commands() {
    for (name, mode) in [
        ("set", StoreMode::Set),
        ("add", StoreMode::Add),
        ("replace", StoreMode::Replace),
        ("append", StoreMode::Append),
        ("prepend", StoreMode::Prepend),
    ] {
        let input = format!("{name} k 5 -1 3\r\na\r\n\r\n");
        assert_eq!(request(input.as_bytes()), store(mode, "k", 5, -1, b"a\r\n"));
    }
    assert_eq!(
        request(b"set k 4294967295 0 0 noreply\r\n\r\n"),
        store_cas(StoreMode::Set, "k", u32::MAX, 0, b"", None, true)
    );
    assert_eq!(
        request(b"cas k 1 2 1 18446744073709551615\r\nx\r\n"),
        store_cas(StoreMode::Set, "k", 1, 2, b"x", Some(u64::MAX), false)
    );
    assert_eq!(
        request(b"cas k 1 2 1 7 noreply\nx\r\n"),
        store_cas(StoreMode::Set, "k", 1, 2, b"x", Some(7), true)
    );
    // The data block is waited for; nothing is consumed meanwhile.
    for cut in 0..b"set k 0 0 3\r\nabc\r\n".len() {
        assert_eq!(parse(&b"set k 0 0 3\r\nabc\r\n"[..cut], &LIMITS), Parsed::Incomplete);
    }
    // What follows the block is left for the next call.
    match parse(b"set k 0 0 1\r\nx\r\nget k\r\n", &LIMITS) {
        Parsed::Request { consumed, .. } => assert_eq!(consumed, 16),
        other => panic!("{other:?}"),
    }
}

#[test]
fn store_line_errors_swallow_only_once_the_length_is_known() {
    // No valid length: refused, nothing swallowed, connection kept (as memcached).
    for line in [
        &b"set k 0 0\r\n"[..],
        b"set\r\n",
        b"set k 0 0 x\r\n",
        b"set k 0 0 -1\r\n",
        b"set k 0 0 2147483646\r\n",
        b"set k 0 0 -1 noreply\r\n",
    ] {
        assert_eq!(reply(line), BAD_FORMAT, "{:?}", String::from_utf8_lossy(line));
    }
    // A known length: refusals swallow the block and its \r\n.
    let long_key = format!("set {} 0 0 5\r\n", "k".repeat(KEY_BYTES_MAX + 1));
    for line in [
        long_key.as_bytes(),
        b"set k x 0 5\r\n",
        b"set k 4294967296 0 5\r\n",
        b"set k 0 x 5\r\n",
        b"cas k 0 0 5\r\n",
        b"cas k 0 0 5 x\r\n",
        b"set k 0 0 5 extra\r\n",
        b"set k 0 0 5 noreply extra\r\n",
    ] {
        assert_eq!(
            refused(line),
            (BAD_FORMAT.to_owned(), line.len(), 7, false),
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn store_errors_are_silent_with_noreply() {
    assert_eq!(refused(b"set k x 0 5 noreply\r\n"), (String::new(), 21, 7, false));
    assert_eq!(refused(b"cas k 0 0 5 noreply\r\n"), (String::new(), 21, 7, false));
    assert_eq!(refused(b"set k 0 0 101 noreply\r\n"), (String::new(), 23, 103, false));
    assert_eq!(refused(b"set k 0 0 1 noreply\r\nxyz"), (String::new(), 24, 0, false));
}

#[test]
fn too_large_swallows_and_keeps_the_connection() {
    assert_eq!(
        refused(b"set k 0 0 101\r\n"),
        ("SERVER_ERROR object too large for cache\r\n".to_owned(), 15, 103, false)
    );
    assert_eq!(
        refused(b"set k 0 0 2147483645\r\n"),
        ("SERVER_ERROR object too large for cache\r\n".to_owned(), 22, 2_147_483_647, false)
    );
    let exactly = format!("set k 0 0 100\r\n{}\r\n", "v".repeat(100));
    assert!(matches!(request(exactly.as_bytes()), Command::Store { .. }));
}

#[test]
fn bad_data_chunk_consumes_the_block() {
    assert_eq!(
        refused(b"set k 0 0 3\r\nabcde\r\n"),
        ("CLIENT_ERROR bad data chunk\r\n".to_owned(), 18, 0, false)
    );
    assert_eq!(
        refused(b"set k 0 0 1\r\nx\n\r"),
        ("CLIENT_ERROR bad data chunk\r\n".to_owned(), 16, 0, false)
    );
}

#[test]
fn delete() {
    let del = |key: &str, noreply| Command::Delete { key: key.as_bytes().to_vec(), noreply };
    assert_eq!(request(b"delete k\r\n"), del("k", false));
    assert_eq!(request(b"delete k 0\r\n"), del("k", false));
    assert_eq!(request(b"delete k noreply\r\n"), del("k", true));
    assert_eq!(request(b"delete k 0 noreply\r\n"), del("k", true));
    assert_eq!(reply(b"delete\r\n"), BAD_FORMAT);
    let usage = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n";
    assert_eq!(reply(b"delete a b c d e\r\n"), usage);
    assert_eq!(reply(b"delete k 1\r\n"), usage);
    assert_eq!(reply(b"delete k 1 noreply\r\n"), "");
    assert_eq!(
        request(b"delete k\x01\r\n"),
        Command::Delete { key: b"k\x01".to_vec(), noreply: false }
    );
}

#[test]
fn incr_and_decr() {
    assert_eq!(
        request(b"incr k 18446744073709551615\r\n"),
        Command::Arith {
            key: b"k".to_vec(),
            direction: ArithDirection::Incr,
            delta: u64::MAX,
            noreply: false
        }
    );
    assert_eq!(
        request(b"decr k 1 noreply\r\n"),
        Command::Arith {
            key: b"k".to_vec(),
            direction: ArithDirection::Decr,
            delta: 1,
            noreply: true
        }
    );
    let invalid = "CLIENT_ERROR invalid numeric delta argument\r\n";
    assert_eq!(reply(b"incr k x\r\n"), invalid);
    assert_eq!(reply(b"incr k -1\r\n"), invalid);
    assert_eq!(reply(b"incr k 18446744073709551616\r\n"), invalid);
    assert_eq!(reply(b"incr k x noreply\r\n"), "");
    assert_eq!(reply(b"incr k\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"decr k 1 2\r\n"), BAD_FORMAT);
}

#[test]
fn touch() {
    assert_eq!(
        request(b"touch k 100\r\n"),
        Command::Touch { key: b"k".to_vec(), exptime: 100, noreply: false }
    );
    assert_eq!(
        request(b"touch k -5 noreply\r\n"),
        Command::Touch { key: b"k".to_vec(), exptime: -5, noreply: true }
    );
    assert_eq!(reply(b"touch k\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"touch k x\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
    assert_eq!(reply(b"touch k 1 x\r\n"), BAD_FORMAT);
}

#[test]
fn flush_all() {
    let flush = |delay, noreply| Command::FlushAll { delay, noreply };
    assert_eq!(request(b"flush_all\r\n"), flush(0, false));
    assert_eq!(request(b"flush_all 10\r\n"), flush(10, false));
    assert_eq!(request(b"flush_all noreply\r\n"), flush(0, true));
    assert_eq!(request(b"flush_all 10 noreply\r\n"), flush(10, true));
    assert_eq!(reply(b"flush_all foo bar\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
    assert_eq!(reply(b"flush_all 1 2\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"flush_all x noreply\r\n"), "");
}

#[test]
fn stats_version_verbosity_quit() {
    assert_eq!(request(b"stats\r\n"), Command::Stats { group: None });
    assert_eq!(request(b"stats settings\r\n"), Command::Stats { group: Some("settings".into()) });
    assert_eq!(request(b"stats detail on\r\n"), Command::Stats { group: Some("detail".into()) });
    // memcapable: `stats noreply` is an error (the executor's unknown-group reply).
    assert_eq!(request(b"stats noreply\r\n"), Command::Stats { group: Some("noreply".into()) });
    assert_eq!(reply(b"stats \xff\r\n"), "ERROR\r\n");
    // memcached 1.6 ignores extra tokens of version and quit.
    assert_eq!(request(b"version\r\n"), Command::Version);
    assert_eq!(request(b"version foo bar\r\n"), Command::Version);
    assert_eq!(request(b"version noreply\r\n"), Command::Version);
    assert_eq!(request(b"quit\r\n"), Command::Quit);
    assert_eq!(request(b"quit foo bar\r\n"), Command::Quit);
    // memcapable's verbosity checks.
    assert_eq!(request(b"verbosity 1\r\n"), Command::Verbosity { level: 1, noreply: false });
    assert_eq!(request(b"verbosity 0 noreply\r\n"), Command::Verbosity { level: 0, noreply: true });
    assert_eq!(reply(b"verbosity\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"verbosity foo bar my\r\n"), BAD_FORMAT);
    assert_eq!(reply(b"verbosity noreply\r\n"), "");
    assert_eq!(reply(b"verbosity 1 2\r\n"), BAD_FORMAT);
}

#[test]
fn lscan() {
    let scan = |limit, from: Option<&str>, to: Option<&str>| Command::Scan {
        limit,
        from: from.map(|k| k.as_bytes().to_vec()),
        to: to.map(|k| k.as_bytes().to_vec()),
    };
    assert_eq!(request(b"lscan 10\r\n"), scan(10, None, None));
    assert_eq!(request(b"lscan 1 a\r\n"), scan(1, Some("a"), None));
    let max = format!("lscan {SCAN_LIMIT_MAX} a b\r\n");
    assert_eq!(request(max.as_bytes()), scan(SCAN_LIMIT_MAX, Some("a"), Some("b")));
    let over = format!("lscan {} a b\r\n", SCAN_LIMIT_MAX + 1);
    for bad in
        [&b"lscan\r\n"[..], b"lscan 0\r\n", b"lscan x\r\n", over.as_bytes(), b"lscan 1 a b c\r\n"]
    {
        assert_eq!(reply(bad), BAD_FORMAT, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn unknown_commands_and_empty_lines() {
    assert_eq!(reply(b"foo\r\n"), "ERROR\r\n");
    assert_eq!(reply(b"GET a\r\n"), "ERROR\r\n"); // names are case-sensitive
    assert_eq!(reply(b"\r\n"), "ERROR\r\n");
    assert_eq!(reply(b"\n"), "ERROR\r\n");
    assert_eq!(reply(b" get a\r\n"), "ERROR\r\n"); // memcached: leading space, no command
    assert_eq!(reply(b"foo bar noreply\r\n"), ""); // memcached suppresses it too
    assert_eq!(reply(b"noreply\r\n"), "ERROR\r\n");
    // An HTTP request: closed without a reply, as memcached.
    assert_eq!(refused(b"GET / HTTP/1.1\r\n"), (String::new(), 16, 0, true));
}

#[test]
fn line_framing() {
    assert_eq!(parse(b"", &LIMITS), Parsed::Incomplete);
    assert_eq!(parse(b"get a", &LIMITS), Parsed::Incomplete);
    assert_eq!(parse(b"get a\r", &LIMITS), Parsed::Incomplete);
    // A \r elsewhere than before the \n is part of the line (here: a bad key).
    assert_eq!(request(b"get a\rb\r\n"), Command::Get { keys: vec![b"a\rb".to_vec()], cas: false });
    // The key is `a\r`: only the last `\r` before the `\n` belongs to the line end.
    assert_eq!(request(b"get a\r\r\n"), Command::Get { keys: vec![b"a\r".to_vec()], cas: false });
    assert_eq!(request(b"get a\n"), Command::Get { keys: vec![b"a".to_vec()], cas: false });
}

#[test]
fn line_too_long_closes() {
    let limits = ParseLimits { line_bytes_max: 16, item_bytes_max: 100 };
    assert_eq!(parse(&[b'g'; 15], &limits), Parsed::Incomplete);
    let refused = Parsed::Refused {
        reply: "CLIENT_ERROR line too long\r\n".to_owned(),
        consumed: 16,
        swallow_bytes: 0,
        close: true,
    };
    assert_eq!(parse(&[b'g'; 16], &limits), refused);
    // A newline past the limit does not help: the outcome must not depend on the split.
    let mut late = vec![b'g'; 16];
    late.extend_from_slice(b"\r\n");
    assert!(matches!(parse(&late, &limits), Parsed::Refused { close: true, .. }));
    // A line of exactly the limit, \r\n included, is fine.
    assert_eq!(
        parse(b"get abcdefghij\r\n", &limits),
        Parsed::Request {
            command: Command::Get { keys: vec![b"abcdefghij".to_vec()], cas: false },
            consumed: 16,
        }
    );
    let zero = ParseLimits { line_bytes_max: 0, item_bytes_max: 0 };
    assert!(matches!(parse(b"x", &zero), Parsed::Refused { consumed: 1, close: true, .. }));
}
