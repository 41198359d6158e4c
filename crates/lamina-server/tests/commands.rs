//! The classic text commands, as a memcached client sees them, on every engine.

mod common;

use common::{Client, TestServer};
use lamina::EngineKind;

fn engines() -> [EngineKind; 4] {
    [EngineKind::Mem, EngineKind::Trie, EngineKind::default(), EngineKind::Nbtree]
}

fn storage_commands(c: &mut Client) {
    c.expect("set a 5 0 3\r\nabc\r\n", "STORED\r\n");
    c.expect("get a\r\n", "VALUE a 5 3\r\nabc\r\nEND\r\n");
    c.expect("add a 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    c.expect("add b 7 0 1\r\nx\r\n", "STORED\r\n");
    c.expect("replace c 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    c.expect("replace b 8 0 2\r\nyy\r\n", "STORED\r\n");
    c.expect("get b\r\n", "VALUE b 8 2\r\nyy\r\nEND\r\n");
    c.expect("append a 9 0 2\r\nde\r\n", "STORED\r\n");
    c.expect("prepend a 9 0 2\r\nzz\r\n", "STORED\r\n");
    // append and prepend keep the item's flags.
    c.expect("get a\r\n", "VALUE a 5 7\r\nzzabcde\r\nEND\r\n");
    c.expect("append nope 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    c.expect("prepend nope 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    // Multi-get returns hits in request order and skips misses.
    c.expect("get b nope a\r\n", "VALUE b 8 2\r\nyy\r\nVALUE a 5 7\r\nzzabcde\r\nEND\r\n");
    // Empty values and binary data.
    c.expect("set empty 0 0 0\r\n\r\n", "STORED\r\n");
    c.expect("get empty\r\n", "VALUE empty 0 0\r\n\r\nEND\r\n");
    c.send(b"set bin 0 0 4\r\n\x00\r\n\xff\r\n");
    assert_eq!(c.line(), "STORED\r\n");
    c.send(b"get bin\r\n");
    assert_eq!(c.line(), "VALUE bin 0 4\r\n");
    assert_eq!(c.bytes(6), b"\x00\r\n\xff\r\n");
    assert_eq!(c.line(), "END\r\n");
    // Flags use all 32 bits.
    c.expect("set f 4294967295 0 1\r\nx\r\n", "STORED\r\n");
    c.expect("get f\r\n", "VALUE f 4294967295 1\r\nx\r\nEND\r\n");
}

fn cas_commands(c: &mut Client) {
    c.expect("set k 0 0 1\r\n1\r\n", "STORED\r\n");
    let first = c.cas_of("k");
    c.expect("set k 0 0 1\r\n2\r\n", "STORED\r\n");
    let second = c.cas_of("k");
    assert!(second > first, "CAS tokens increase: {first} then {second}");
    c.expect(&format!("cas k 0 0 1 {first}\r\n3\r\n"), "EXISTS\r\n");
    c.expect(&format!("cas k 0 0 1 {second}\r\n3\r\n"), "STORED\r\n");
    c.expect("get k\r\n", "VALUE k 0 1\r\n3\r\nEND\r\n");
    c.expect("cas missing 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n");
    // A touch keeps the token; any other change replaces it.
    let third = c.cas_of("k");
    c.expect("touch k 100\r\n", "TOUCHED\r\n");
    assert_eq!(c.cas_of("k"), third);
    c.expect("append k 0 0 1\r\n4\r\n", "STORED\r\n");
    assert!(c.cas_of("k") > third);
}

fn delete_arith_touch(c: &mut Client) {
    c.expect("set d 0 0 1\r\nx\r\n", "STORED\r\n");
    c.expect("delete d\r\n", "DELETED\r\n");
    c.expect("delete d\r\n", "NOT_FOUND\r\n");
    c.expect("get d\r\n", "END\r\n");
    c.expect("set n 0 0 2\r\n10\r\n", "STORED\r\n");
    c.expect("incr n 5\r\n", "15\r\n");
    c.expect("decr n 20\r\n", "0\r\n");
    c.expect("incr missing 1\r\n", "NOT_FOUND\r\n");
    c.expect("set n 0 0 20\r\n18446744073709551615\r\n", "STORED\r\n");
    c.expect("incr n 2\r\n", "1\r\n");
    c.expect("set t 0 0 3\r\nabc\r\n", "STORED\r\n");
    c.expect("incr t 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    c.expect("touch t 100\r\n", "TOUCHED\r\n");
    c.expect("touch nothing 100\r\n", "NOT_FOUND\r\n");
    c.expect("gat 100 t nothing\r\n", "VALUE t 0 3\r\nabc\r\nEND\r\n");
    let cas = c.cas_of("t");
    c.expect("gats 0 t\r\n", &format!("VALUE t 0 3 {cas}\r\nabc\r\nEND\r\n"));
}

fn noreply_everywhere(c: &mut Client) {
    c.send(b"set q 0 0 1 noreply\r\n1\r\n");
    c.send(b"add q 0 0 1 noreply\r\n2\r\n");
    c.send(b"replace q 0 0 1 noreply\r\n3\r\n");
    c.send(b"append q 0 0 1 noreply\r\n4\r\n");
    c.send(b"prepend q 0 0 1 noreply\r\n5\r\n");
    c.send(b"incr q 1 noreply\r\n");
    c.send(b"decr q 2 noreply\r\n");
    c.send(b"touch q 100 noreply\r\n");
    c.send(b"cas q 0 0 1 1 noreply\r\nx\r\n");
    c.send(b"set gone 0 0 1 noreply\r\nx\r\n");
    c.send(b"delete gone noreply\r\n");
    c.send(b"verbosity 1 noreply\r\n");
    // Only the get below answers.
    c.expect("get q gone\r\n", "VALUE q 0 3\r\n533\r\nEND\r\n");
}

fn flush_and_expiry(c: &mut Client) {
    c.expect("set e1 0 0 1\r\nx\r\n", "STORED\r\n");
    c.expect("set e2 0 -1 1\r\nx\r\n", "STORED\r\n");
    c.expect("get e2\r\n", "END\r\n");
    // An absolute time in the past is expired too.
    c.expect("set e3 0 2592001 1\r\nx\r\n", "STORED\r\n");
    c.expect("get e3\r\n", "END\r\n");
    c.expect("touch e1 -1\r\n", "TOUCHED\r\n");
    c.expect("get e1\r\n", "END\r\n");
    c.expect("set f1 0 0 1\r\nx\r\n", "STORED\r\n");
    c.expect("flush_all\r\n", "OK\r\n");
    c.expect("get f1\r\n", "END\r\n");
    c.expect("set f2 0 0 1\r\ny\r\n", "STORED\r\n");
    c.expect("get f2\r\n", "VALUE f2 0 1\r\ny\r\nEND\r\n");
    c.expect("add f1 0 0 1\r\nz\r\n", "STORED\r\n");
}

fn misc(c: &mut Client) {
    c.send(b"version\r\n");
    assert!(c.line().starts_with("VERSION 1.6.0-lamina-"));
    c.expect("verbosity 1\r\n", "OK\r\n");
    let stats = c.until_end("stats\r\n");
    assert!(stats.iter().any(|l| l.starts_with("STAT pid ")));
    assert!(stats.iter().any(|l| l.starts_with("STAT lamina_engine ")));
    assert!(stats.iter().any(|l| l.starts_with("STAT cmd_get ")));
    let settings = c.until_end("stats settings\r\n");
    assert!(settings.iter().any(|l| l.starts_with("STAT item_size_max 4074")));
    c.expect("stats nonsense\r\n", "ERROR\r\n");
}

#[test]
fn classic_commands_on_every_engine() {
    for engine in engines() {
        let server = TestServer::start(engine);
        let mut c = server.client();
        storage_commands(&mut c);
        cas_commands(&mut c);
        delete_arith_touch(&mut c);
        noreply_everywhere(&mut c);
        flush_and_expiry(&mut c);
        misc(&mut c);
        server.shutdown();
    }
}

#[test]
fn too_large_items_are_refused_and_the_connection_kept() {
    let server = TestServer::start(EngineKind::Mem);
    let mut c = server.client();
    let max = 4096 - 22;
    let fits = "v".repeat(max);
    c.expect(&format!("set big 0 0 {max}\r\n{fits}\r\n"), "STORED\r\n");
    let over = "v".repeat(max + 1);
    c.expect(
        &format!("set big 0 0 {}\r\n{over}\r\n", max + 1),
        "SERVER_ERROR object too large for cache\r\n",
    );
    // The refused item's data was swallowed; the old value is intact.
    c.expect("get big\r\n", &format!("VALUE big 0 {max}\r\n{fits}\r\nEND\r\n"));
    // Appending past the limit is refused too.
    c.expect("append big 0 0 1\r\nw\r\n", "SERVER_ERROR object too large for cache\r\n");
    c.expect("set small 0 0 1\r\nx\r\n", "STORED\r\n");
}

#[test]
fn quit_closes_after_earlier_replies() {
    let server = TestServer::start(EngineKind::Mem);
    let mut c = server.client();
    c.send(b"set a 0 0 1\r\nx\r\nget a\r\nquit\r\nget a\r\n");
    assert_eq!(c.line(), "STORED\r\n");
    assert_eq!(c.line(), "VALUE a 0 1\r\n");
    assert_eq!(c.line(), "x\r\n");
    assert_eq!(c.line(), "END\r\n");
    assert!(c.is_closed());
}

#[test]
fn lscan_returns_live_items_in_key_order() {
    let server = TestServer::start(EngineKind::Trie);
    let mut c = server.client();
    for key in ["m", "b", "x", "a", "dead"] {
        c.expect(&format!("set {key} 1 0 1\r\n{}\r\n", &key[..1]), "STORED\r\n");
    }
    c.expect("touch dead -1\r\n", "TOUCHED\r\n");
    let all = c.until_end("lscan 10\r\n");
    let keys: Vec<&str> = all
        .iter()
        .filter(|l| l.starts_with("VALUE "))
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(keys, ["a", "b", "m", "x"]);
    c.expect("lscan 2 b\r\n", "VALUE b 1 1\r\nb\r\nVALUE m 1 1\r\nm\r\nEND\r\n");
    c.expect("lscan 5 b n\r\n", "VALUE b 1 1\r\nb\r\nVALUE m 1 1\r\nm\r\nEND\r\n");
}

#[test]
fn cas_tokens_increase_across_restarts() {
    let mut server = TestServer::start(EngineKind::Trie);
    let mut c = server.client();
    c.expect("set k 0 0 1\r\nx\r\n", "STORED\r\n");
    let before = c.cas_of("k");
    server.restart(common::config(lamina::Durability::None));
    let mut c = server.client();
    c.expect("get k\r\n", "VALUE k 0 1\r\nx\r\nEND\r\n");
    assert_eq!(c.cas_of("k"), before, "the stored token survives");
    c.expect("set k 0 0 1\r\ny\r\n", "STORED\r\n");
    assert!(c.cas_of("k") > before);
}

#[test]
fn a_delayed_flush_applies_when_due() {
    let server = TestServer::start(EngineKind::Mem);
    let mut c = server.client();
    c.expect("set a 0 0 1\r\nx\r\n", "STORED\r\n");
    c.expect("flush_all 1\r\n", "OK\r\n");
    c.expect("get a\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    c.expect("get a\r\n", "END\r\n");
}

#[test]
fn items_expire_with_their_ttl() {
    let server = TestServer::start(EngineKind::Mem);
    let mut c = server.client();
    c.expect("set a 0 1 1\r\nx\r\n", "STORED\r\n");
    c.expect("set b 0 100 1\r\nx\r\n", "STORED\r\n");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    c.expect("get a b\r\n", "VALUE b 0 1\r\nx\r\nEND\r\n");
}
