//! The client's half of memcached's classic text protocol: encoding `set` and `get`, and
//! parsing the replies a server sends back, incrementally (a reply may arrive split over
//! any number of reads). Every length the server states is bounded before it is trusted,
//! so a broken server gets a clear [`ProtocolError`], never an unbounded buffer.

use std::{fmt::Write as _, ops::Range};

/// Longest reply line (without its data block) the client accepts. memcached's own lines
/// are at most ~300 bytes (a `VALUE` header with a 250-byte key).
pub const REPLY_LINE_BYTES_MAX: usize = 2048;
/// Largest data block a `VALUE` reply may announce (memcached's default item size limit).
pub const REPLY_VALUE_BYTES_MAX: usize = 1 << 20;

/// One reply, with its data as ranges into the bytes it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `STORED`
    Stored,
    /// `NOT_STORED`
    NotStored,
    /// `EXISTS`
    Exists,
    /// `NOT_FOUND`
    NotFound,
    /// A retrieval reply: the items before `END` (none for a miss).
    Values(Vec<Item>),
    /// `ERROR`: the server did not know the command.
    Error,
    /// `CLIENT_ERROR <message>`
    ClientError(String),
    /// `SERVER_ERROR <message>`
    ServerError(String),
}

/// One `VALUE <key> <flags> <bytes>` item of a retrieval reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Where the key is in the parsed bytes.
    pub key: Range<usize>,
    /// The client flags.
    pub flags: u32,
    /// Where the data block is in the parsed bytes (without its `\r\n`).
    pub data: Range<usize>,
}

/// A reply the protocol does not allow: the connection is out of step and cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// What is wrong.
    pub reason: String,
    /// The offending line, escaped and cut to 80 characters.
    pub line: String,
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed reply from the server: {} (line `{}`)", self.reason, self.line)
    }
}

impl std::error::Error for ProtocolError {}

impl ProtocolError {
    fn new(reason: impl Into<String>, line: &[u8]) -> Self {
        let mut shown = String::new();
        for &b in line.iter().take(80) {
            if b.is_ascii_graphic() || b == b' ' {
                shown.push(char::from(b));
            } else {
                let _ = write!(shown, "\\x{b:02x}");
            }
        }
        if line.len() > 80 {
            shown.push_str("...");
        }
        ProtocolError { reason: reason.into(), line: shown }
    }
}

/// Appends `set <key> <flags> 0 <len>\r\n<value>\r\n` (no expiry, a reply expected).
pub fn encode_set(key: &[u8], flags: u32, value: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"set ");
    out.extend_from_slice(key);
    let mut header = String::with_capacity(24);
    let _ = write!(header, " {flags} 0 {}\r\n", value.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `get <key>\r\n`.
pub fn encode_get(key: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"get ");
    out.extend_from_slice(key);
    out.extend_from_slice(b"\r\n");
}

/// The first `\r\n`-terminated line of `buf` at or after `from`: `Ok(None)` if it has not
/// all arrived, an error if it is already longer than [`REPLY_LINE_BYTES_MAX`].
fn line_at(buf: &[u8], from: usize) -> Result<Option<Range<usize>>, ProtocolError> {
    let rest = &buf[from..];
    let window = &rest[..rest.len().min(REPLY_LINE_BYTES_MAX + 2)];
    match window.windows(2).position(|w| w == b"\r\n") {
        Some(end) => Ok(Some(from..from + end)),
        None if window.len() > REPLY_LINE_BYTES_MAX => Err(ProtocolError::new(
            format!("no line end within {REPLY_LINE_BYTES_MAX} bytes"),
            window,
        )),
        None => Ok(None),
    }
}

fn parse_decimal<T: std::str::FromStr>(field: &[u8]) -> Option<T> {
    if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// Parses `VALUE <key> <flags> <bytes>[ <cas>]` (the line without `VALUE `), offsets
/// relative to `line_start`.
fn parse_value_header(
    buf: &[u8],
    line: Range<usize>,
) -> Result<(Range<usize>, u32, usize), ProtocolError> {
    let text = &buf[line.clone()];
    let bad = |reason: &str| ProtocolError::new(reason, text);
    let fields: Vec<&[u8]> = text.split(|&b| b == b' ').collect();
    if !(4..=5).contains(&fields.len()) || fields[1].is_empty() {
        return Err(bad("a VALUE line needs a key, flags and a length"));
    }
    let key_start = line.start + "VALUE ".len();
    let key = key_start..key_start + fields[1].len();
    let flags = parse_decimal::<u32>(fields[2]).ok_or_else(|| bad("flags are not a u32"))?;
    let len = parse_decimal::<usize>(fields[3]).ok_or_else(|| bad("length is not a number"))?;
    if len > REPLY_VALUE_BYTES_MAX {
        return Err(bad(&format!("length {len} over the {REPLY_VALUE_BYTES_MAX}-byte limit")));
    }
    if fields.len() == 5 && parse_decimal::<u64>(fields[4]).is_none() {
        return Err(bad("CAS token is not a u64"));
    }
    Ok((key, flags, len))
}

/// Parses one whole reply from the start of `buf`: `Ok(Some((reply, bytes used)))`,
/// `Ok(None)` if more bytes are needed, or an error for bytes no reply can start with.
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let mut items = Vec::new();
    let mut at = 0;
    loop {
        let Some(line) = line_at(buf, at)? else {
            return Ok(None);
        };
        let next = line.end + 2;
        let text = &buf[line.clone()];
        if text.starts_with(b"VALUE ") {
            let (key, flags, len) = parse_value_header(buf, line)?;
            let data = next..next + len;
            if buf.len() < data.end + 2 {
                return Ok(None);
            }
            if &buf[data.end..data.end + 2] != b"\r\n" {
                let tail = &buf[data.end..buf.len().min(data.end + 16)];
                return Err(ProtocolError::new(
                    format!("the {len}-byte data block is not followed by \\r\\n"),
                    tail,
                ));
            }
            at = data.end + 2;
            items.push(Item { key, flags, data });
            continue;
        }
        if text == b"END" {
            return Ok(Some((Reply::Values(items), next)));
        }
        if !items.is_empty() {
            return Err(ProtocolError::new("a retrieval reply must end with END", text));
        }
        let message = |prefix: &str| String::from_utf8_lossy(&text[prefix.len()..]).into_owned();
        let reply = match text {
            b"STORED" => Reply::Stored,
            b"NOT_STORED" => Reply::NotStored,
            b"EXISTS" => Reply::Exists,
            b"NOT_FOUND" => Reply::NotFound,
            b"ERROR" => Reply::Error,
            _ if text.starts_with(b"CLIENT_ERROR") => {
                Reply::ClientError(message("CLIENT_ERROR").trim_start().to_string())
            }
            _ if text.starts_with(b"SERVER_ERROR") => {
                Reply::ServerError(message("SERVER_ERROR").trim_start().to_string())
            }
            _ => return Err(ProtocolError::new("not a reply to set or get", text)),
        };
        return Ok(Some((reply, next)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(bytes: &[u8]) -> (Reply, usize) {
        parse_reply(bytes).expect("well formed").expect("complete")
    }

    #[test]
    fn requests_are_encoded_as_memcached_expects() {
        let mut out = Vec::new();
        encode_set(b"k01", 7, b"hello", &mut out);
        encode_get(b"k01", &mut out);
        assert_eq!(out, b"set k01 7 0 5\r\nhello\r\nget k01\r\n");
    }

    #[test]
    fn storage_and_error_replies() {
        assert_eq!(whole(b"STORED\r\n"), (Reply::Stored, 8));
        assert_eq!(whole(b"NOT_STORED\r\nSTORED\r\n"), (Reply::NotStored, 12));
        assert_eq!(whole(b"EXISTS\r\n").0, Reply::Exists);
        assert_eq!(whole(b"NOT_FOUND\r\n").0, Reply::NotFound);
        assert_eq!(whole(b"ERROR\r\n").0, Reply::Error);
        assert_eq!(
            whole(b"SERVER_ERROR object too large for cache\r\n").0,
            Reply::ServerError("object too large for cache".into())
        );
        assert_eq!(
            whole(b"CLIENT_ERROR bad data chunk\r\n").0,
            Reply::ClientError("bad data chunk".into())
        );
    }

    #[test]
    fn retrieval_replies_give_key_flags_and_data() {
        let bytes = b"VALUE k01 7 5\r\nhe\r\no\r\nEND\r\nSTORED\r\n";
        let (reply, used) = whole(bytes);
        assert_eq!(used, bytes.len() - 8);
        let Reply::Values(items) = reply else { panic!("{reply:?}") };
        assert_eq!(items.len(), 1);
        assert_eq!(&bytes[items[0].key.clone()], b"k01");
        assert_eq!(items[0].flags, 7);
        assert_eq!(&bytes[items[0].data.clone()], b"he\r\no", "data may hold \\r\\n");
        assert_eq!(whole(b"END\r\n"), (Reply::Values(Vec::new()), 5), "a miss");
        let (reply, _) = whole(b"VALUE a 0 0 99\r\n\r\nVALUE b 1 1\r\nx\r\nEND\r\n");
        let Reply::Values(items) = reply else { panic!("{reply:?}") };
        assert_eq!((items.len(), items[0].data.len(), items[1].flags), (2, 0, 1), "gets' CAS");
    }

    #[test]
    fn a_reply_split_anywhere_waits_for_the_rest() {
        let bytes = b"VALUE key 4294967295 10\r\n0123456789\r\nEND\r\n";
        for cut in 0..bytes.len() {
            assert_eq!(parse_reply(&bytes[..cut]), Ok(None), "cut at {cut}");
        }
        let (reply, used) = whole(bytes);
        assert_eq!(used, bytes.len());
        let Reply::Values(items) = reply else { panic!("{reply:?}") };
        assert_eq!(items[0].flags, u32::MAX);
    }

    #[test]
    fn malformed_replies_are_errors_not_hangs() {
        let bad = |bytes: &[u8], fragment: &str| {
            let err = parse_reply(bytes).expect_err("malformed").to_string();
            assert!(err.contains(fragment), "{err}");
        };
        bad(b"HELLO\r\n", "not a reply");
        bad(b"VALUE k 0\r\n", "needs a key");
        bad(b"VALUE k x 1\r\n", "flags");
        bad(b"VALUE k 4294967296 1\r\n", "flags");
        bad(b"VALUE k 0 -1\r\n", "length");
        bad(b"VALUE k 0 1 z\r\n", "CAS");
        bad(b"VALUE k 0 1048577\r\n", "limit");
        bad(b"VALUE k 0 2\r\nabcd\r\nEND\r\n", "not followed");
        bad(b"VALUE k 0 1\r\na\r\nSTORED\r\n", "must end with END");
        bad(&[b'x'; REPLY_LINE_BYTES_MAX + 3], "no line end");
        // A long line still arriving is not an error until it passes the limit.
        assert_eq!(parse_reply(&[b'S'; REPLY_LINE_BYTES_MAX]), Ok(None));
        let err = parse_reply(b"\x00\xff\r\n").unwrap_err();
        assert_eq!(err.line, "\\x00\\xff");
    }
}
