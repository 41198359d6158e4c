//! One blocking TCP connection to the server: requests written in batches, replies read
//! back in order through a bounded buffer.

use std::{
    io::{ErrorKind, Read, Write},
    net::{TcpStream, ToSocketAddrs},
    time::Duration,
};

use lamina_core::{Error, Result};

use super::protocol::{REPLY_LINE_BYTES_MAX, REPLY_VALUE_BYTES_MAX, Reply, parse_reply};

/// Bytes asked of the socket per read.
const READ_CHUNK_BYTES: usize = 64 << 10;
/// Largest reply the buffer holds: the biggest data block plus its lines.
const REPLY_BYTES_MAX: usize = REPLY_VALUE_BYTES_MAX + 4 * REPLY_LINE_BYTES_MAX;

/// A connection to a memcached-protocol server.
#[derive(Debug)]
pub struct Connection {
    stream: TcpStream,
    server: String,
    /// Receive buffer; `buf[start..end]` is received and not parsed yet.
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Connection {
    /// Connects to `server` (HOST:PORT) with Nagle's algorithm off (requests are small and
    /// latency-bound); a read or write that waits longer than `timeout` fails.
    pub fn open(server: &str, timeout: Duration) -> Result<Self> {
        let context = || format!("connecting to the memcached server at {server}");
        let addrs: Vec<_> =
            server.to_socket_addrs().map_err(|e| Error::io(context(), e))?.collect();
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    let setup = stream
                        .set_nodelay(true)
                        .and_then(|()| stream.set_read_timeout(Some(timeout)))
                        .and_then(|()| stream.set_write_timeout(Some(timeout)));
                    setup.map_err(|e| Error::io(context(), e))?;
                    return Ok(Connection {
                        stream,
                        server: server.to_string(),
                        buf: vec![0; READ_CHUNK_BYTES],
                        start: 0,
                        end: 0,
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(Error::io(
            context(),
            last.unwrap_or_else(|| std::io::Error::new(ErrorKind::NotFound, "no address")),
        ))
    }

    /// Writes `requests` whole.
    pub fn send(&mut self, requests: &[u8]) -> Result<()> {
        self.stream
            .write_all(requests)
            .map_err(|e| Error::io(format!("sending to {}", self.server), e))
    }

    /// The next reply and the bytes its ranges index (valid until the next call).
    pub fn receive(&mut self) -> Result<(Reply, &[u8])> {
        loop {
            let parsed = parse_reply(&self.buf[self.start..self.end]).map_err(|e| {
                Error::io(
                    format!("reading from {}", self.server),
                    std::io::Error::new(ErrorKind::InvalidData, e),
                )
            })?;
            if let Some((reply, used)) = parsed {
                let from = self.start;
                self.start += used;
                return Ok((reply, &self.buf[from..from + used]));
            }
            self.fill()?;
        }
    }

    /// Reads more bytes, first moving the unparsed ones to the front (and growing the
    /// buffer when a reply is bigger than it).
    fn fill(&mut self) -> Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        assert!(self.end <= REPLY_BYTES_MAX, "parse_reply bounds every reply it waits for");
        if self.buf.len() - self.end < READ_CHUNK_BYTES / 2 {
            self.buf.resize(self.end + READ_CHUNK_BYTES, 0);
        }
        let read = loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                other => break other,
            }
        };
        let read = match read {
            Ok(0) => Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                "the server closed the connection",
            )),
            Ok(n) => Ok(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Err(std::io::Error::new(ErrorKind::TimedOut, "no reply within the timeout"))
            }
            Err(e) => Err(e),
        };
        let n = read.map_err(|e| Error::io(format!("reading from {}", self.server), e))?;
        self.end += n;
        Ok(())
    }
}
