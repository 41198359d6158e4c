//! The meta commands mg, ms, md, ma, mn with their common flags.

mod common;

use common::TestServer;
use lamina::EngineKind;

#[test]
fn meta_get_and_set() {
    let server = TestServer::start(EngineKind::Trie);
    let mut c = server.client();
    c.expect("mg nothing v\r\n", "EN\r\n");
    c.expect("mg nothing v k Oab\r\n", "EN knothing Oab\r\n");
    c.expect("ms k 3 F5 T0\r\nabc\r\n", "HD\r\n");
    c.expect("mg k v f s t\r\n", "VA 3 f5 s3 t-1\r\nabc\r\n");
    c.expect("mg k k Oxyz\r\n", "HD kk Oxyz\r\n");
    let cas = c.cas_of("k");
    c.expect("mg k c\r\n", &format!("HD c{cas}\r\n"));
    // C with v sends the value only if the item changed since the token.
    c.expect(&format!("mg k v C{cas}\r\n"), "HD\r\n");
    c.expect(&format!("mg k v C{}\r\n", cas - 1), "VA 3\r\nabc\r\n");
    // ms with a CAS compare.
    c.expect(&format!("ms k 1 C{}\r\nx\r\n", cas + 1000), "EX\r\n");
    let next = c_next(&mut c, cas);
    c.expect(&format!("ms k 1 C{cas} c\r\nx\r\n"), &format!("HD c{next}\r\n"));
    // Modes: add, replace, append, prepend.
    c.expect("ms k 1 ME\r\ny\r\n", "NS\r\n");
    c.expect("ms new 1 MR\r\ny\r\n", "NS\r\n");
    c.expect("ms k 2 MA\r\nyz\r\n", "HD\r\n");
    c.expect("ms k 1 MP s\r\nw\r\n", "HD s4\r\n");
    c.expect("mg k v\r\n", "VA 4\r\nwxyz\r\n");
    // Append with N creates a missing item.
    c.expect("ms fresh 2 MA N0\r\nhi\r\n", "HD\r\n");
    c.expect("mg fresh v\r\n", "VA 2\r\nhi\r\n");
    // q hides HD but not other codes; mn marks the end of a pipeline.
    c.expect("ms k 1 q\r\nq\r\nms k 1 ME q\r\nq\r\nmg missing v q\r\nmn\r\n", "NS\r\nMN\r\n");
    // Base64 keys.
    c.expect("ms AAEC 2 b\r\nhi\r\n", "HD\r\n");
    c.expect("mg AAEC b k v\r\n", "VA 2 kAAEC b\r\nhi\r\n");
    // T updates the TTL.
    c.expect("mg k T100 t\r\n", "HD t100\r\n");
    // A client's token (E) is kept, and an item stored after a flush_all stays live however
    // small its token (a flush is an epoch, not a CAS watermark).
    c.expect("flush_all\r\n", "OK\r\n");
    c.expect("ms e 1 E5\r\nx\r\n", "HD\r\n");
    c.expect("mg e v c\r\n", "VA 1 c5\r\nx\r\n");
    c.expect("mg k v\r\n", "EN\r\n");
}

/// The CAS token a store made after `old` returns: read it back with `gets`.
fn c_next(c: &mut common::Client, old: u64) -> u64 {
    // The next modification takes a fresh token; predict it by storing elsewhere first
    // would race, so read it from a throwaway store: tokens are increasing, and no other
    // client writes here, so the ms above gets the token after this one.
    c.expect("set probe 0 0 1\r\np\r\n", "STORED\r\n");
    let probe = c.cas_of("probe");
    assert!(probe > old);
    probe + 1
}

#[test]
fn meta_delete_and_arith() {
    let server = TestServer::start(EngineKind::Mem);
    let mut c = server.client();
    c.expect("md nothing\r\n", "NF\r\n");
    c.expect("ms k 1\r\nx\r\n", "HD\r\n");
    c.expect("md k C999999\r\n", "EX\r\n");
    c.expect("md k q\r\nmn\r\n", "MN\r\n");
    c.expect("mg k v\r\n", "EN\r\n");
    // I marks stale: mg reports X and hands one client the win (W), later ones Z.
    c.expect("ms s 3\r\nold\r\n", "HD\r\n");
    c.expect("md s I T30\r\n", "HD\r\n");
    c.expect("mg s v\r\n", "VA 3 X W\r\nold\r\n");
    c.expect("mg s v\r\n", "VA 3 Z X\r\nold\r\n");
    // A fresh set clears it.
    c.expect("ms s 3\r\nnew\r\n", "HD\r\n");
    c.expect("mg s v\r\n", "VA 3\r\nnew\r\n");
    // x keeps the item with an empty value.
    c.expect("md s x\r\n", "HD\r\n");
    c.expect("mg s v\r\n", "VA 0\r\n\r\n");
    // Arithmetic.
    c.expect("ma n\r\n", "NF\r\n");
    c.expect("ma n N0 J10 v\r\n", "VA 2\r\n10\r\n");
    c.expect("ma n D5 v\r\n", "VA 2\r\n15\r\n");
    c.expect("ma n MD D20 v\r\n", "VA 1\r\n0\r\n");
    c.expect("ma n\r\n", "HD\r\n");
    c.expect("ma n q\r\nmn\r\n", "MN\r\n");
    c.expect("mg n v\r\n", "VA 1\r\n2\r\n");
    c.expect("ma k2 q\r\n", "NF\r\n");
    // Vivify on mg: the first client wins the recache.
    c.expect("mg viv N30 s\r\n", "HD s0 W\r\n");
    c.expect("mg viv N30 s\r\n", "HD s0 Z\r\n");
}
