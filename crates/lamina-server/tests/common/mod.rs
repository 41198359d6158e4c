//! A server on a free loopback port over a fresh database, and a raw protocol client.

#![allow(dead_code)] // each test file uses a part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use lamina::{Db, Durability, EngineKind, Options};
use lamina_server::{Running, ServerConfig, engine_durability};

/// A running server and the directory of its database.
pub struct TestServer {
    pub running: Option<Running>,
    pub dir: tempfile::TempDir,
    pub engine: EngineKind,
}

pub fn config(durability: Durability) -> ServerConfig {
    let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    config.durability = durability;
    config.threads = 2;
    config
}

pub fn open_db(dir: &Path, engine: EngineKind, durability: Durability) -> Db {
    let options =
        Options { engine, durability: engine_durability(durability), ..Options::default() };
    Db::open(dir, options).unwrap()
}

impl TestServer {
    pub fn start(engine: EngineKind) -> TestServer {
        TestServer::start_with(engine, config(Durability::None))
    }

    pub fn start_with(engine: EngineKind, config: ServerConfig) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path(), engine, config.durability);
        let running = lamina_server::start(db, config, false).unwrap();
        TestServer { running: Some(running), dir, engine }
    }

    /// Shuts down and starts again on the same directory (a new port).
    pub fn restart(&mut self, config: ServerConfig) {
        self.running.take().unwrap().shutdown().unwrap();
        let db = open_db(self.dir.path(), self.engine, config.durability);
        self.running = Some(lamina_server::start(db, config, false).unwrap());
    }

    pub fn client(&self) -> Client {
        Client::connect(self.running.as_ref().unwrap().local_addr())
    }

    pub fn shutdown(mut self) {
        self.running.take().unwrap().shutdown().unwrap();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.shutdown();
        }
    }
}

/// A blocking client speaking raw bytes.
pub struct Client {
    pub reader: BufReader<TcpStream>,
    pub writer: TcpStream,
}

impl Client {
    pub fn connect(addr: std::net::SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.set_nodelay(true).unwrap();
        Client { reader: BufReader::new(stream.try_clone().unwrap()), writer: stream }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
    }

    /// One reply line, `\r\n` included.
    pub fn line(&mut self) -> String {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).unwrap();
        String::from_utf8_lossy(&line).into_owned()
    }

    /// Exactly `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0; n];
        self.reader.read_exact(&mut buf).unwrap();
        buf
    }

    /// Sends `request` and checks the reply is exactly `reply`.
    #[track_caller]
    pub fn expect(&mut self, request: &str, reply: &str) {
        self.send(request.as_bytes());
        let got = self.bytes(reply.len());
        assert_eq!(String::from_utf8_lossy(&got), reply, "reply to {request:?}");
    }

    /// Sends `request` and returns the reply lines up to and including `END\r\n`.
    pub fn until_end(&mut self, request: &str) -> Vec<String> {
        self.send(request.as_bytes());
        let mut lines = Vec::new();
        loop {
            let line = self.line();
            assert!(!line.is_empty(), "connection closed before END");
            let end = line == "END\r\n";
            lines.push(line);
            if end {
                return lines;
            }
        }
    }

    /// Whether the server closed the connection (a read returns end of file).
    pub fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        matches!(self.reader.read(&mut buf), Ok(0))
    }

    /// The CAS token `gets` reports for `key`.
    pub fn cas_of(&mut self, key: &str) -> u64 {
        let lines = self.until_end(&format!("gets {key}\r\n"));
        let header = &lines[0];
        header.trim_end().rsplit(' ').next().unwrap().parse().unwrap()
    }
}

/// The start of every `version` reply.
pub const VERSION_PREFIX: &str = "VERSION 1.6.0-lamina-";
