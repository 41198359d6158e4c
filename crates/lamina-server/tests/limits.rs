//! Limits and bad input: each refusal is a clear reply, the connection is kept where
//! memcached keeps it, and no client can stall the others.

mod common;

use common::{TestServer, config};
use lamina::{Durability, EngineKind};

#[test]
fn connections_over_the_limit_are_told_and_closed() {
    let mut settings = config(Durability::None);
    settings.connections_max = 2;
    let server = TestServer::start_with(EngineKind::Mem, settings);
    let mut first = server.client();
    let mut second = server.client();
    first.send(b"version\r\n");
    assert!(first.line().starts_with(common::VERSION_PREFIX));
    second.send(b"version\r\n");
    assert!(second.line().starts_with(common::VERSION_PREFIX));
    let mut third = server.client();
    assert_eq!(third.line(), "SERVER_ERROR too many open connections\r\n");
    assert!(third.is_closed());
    // Once one leaves, a new client gets in.
    drop(first);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut again = server.client();
        again.send(b"version\r\n");
        let line = again.line();
        if line.starts_with("VERSION") {
            break;
        }
        assert_eq!(line, "SERVER_ERROR too many open connections\r\n");
        assert!(std::time::Instant::now() < deadline, "the slot was never freed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_line_too_long_closes_only_its_connection() {
    let mut settings = config(Durability::None);
    settings.line_bytes_max = 1024;
    let server = TestServer::start_with(EngineKind::Mem, settings);
    let mut other = server.client();
    let mut c = server.client();
    c.send(&vec![b'x'; 4096]);
    assert_eq!(c.line(), "CLIENT_ERROR line too long\r\n");
    assert!(c.is_closed());
    other.expect("set a 0 0 1\r\nx\r\n", "STORED\r\n");
}

#[test]
fn garbage_gets_errors_and_the_connection_goes_on() {
    let server = TestServer::start(EngineKind::Mem);
    let mut c = server.client();
    c.expect("bogus\r\n", "ERROR\r\n");
    c.expect("set k 0 0 notanumber\r\n", "CLIENT_ERROR bad command line format\r\n");
    // The 3 bytes "xyz" are taken as the block (bad: no \r\n after 1 byte); the "\r\n" left
    // over is an empty line.
    c.expect("set k 0 0 1\r\nxyz\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n");
    c.expect("incr k abc\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
    c.expect("mg k zz\r\n", "CLIENT_ERROR invalid flag\r\n");
    c.expect(&format!("get {}\r\n", "k".repeat(251)), "CLIENT_ERROR bad command line format\r\n");
    c.expect("set k 0 0 1\r\nx\r\n", "STORED\r\n");
}

#[test]
fn a_slow_or_silent_client_does_not_stall_others() {
    let server = TestServer::start(EngineKind::Trie);
    let mut slow = server.client();
    // Half a request, and a data block that never completes.
    slow.send(b"set half 0 0 100\r\nonly part of it");
    let mut fast = server.client();
    for i in 0..200 {
        fast.expect(&format!("set k{i} 0 0 1\r\nx\r\n"), "STORED\r\n");
    }
    fast.expect("get half\r\n", "END\r\n");
    // The slow request completes when its bytes arrive.
    slow.send(&[b'.'; 85]);
    slow.send(b"\r\n");
    assert_eq!(slow.line(), "STORED\r\n");
}

#[test]
fn a_client_that_never_reads_replies_is_not_read_either() {
    // Gets of a 4 KB item, sent without reading: the server stops reading once a few MB
    // of replies are pending instead of buffering without bound; another client is served.
    let server = TestServer::start(EngineKind::Mem);
    let mut setup = server.client();
    let value = "v".repeat(4000);
    setup.expect(&format!("set big 0 0 4000\r\n{value}\r\n"), "STORED\r\n");
    let hog = server.client();
    let writer = hog.writer.try_clone().unwrap();
    writer.set_nonblocking(true).unwrap();
    let mut sent = 0usize;
    let request = b"get big\r\n".repeat(1000);
    for _ in 0..20_000 {
        match std::io::Write::write(&mut &writer, &request) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    // The server stopped reading long before all requests (tens of GB of replies) went in.
    assert!(sent < 20_000 * request.len(), "the server read {sent} bytes without replying");
    setup.expect("get nothing\r\n", "END\r\n");
}
