//! `lamina_server::protocol::parse`, the memcached text-protocol parser, driven as a
//! connection drives it: the first input byte picks how the rest is split into reads and the
//! limits; each read is appended to a buffer, parsed until `Incomplete`, honouring
//! `consumed`, `swallow_bytes` and `close`. The outcomes must not depend on the split.
#![no_main]

use lamina_server::protocol::{Command, ParseLimits, Parsed, parse};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
enum Outcome {
    Request(Command),
    Refused(String, bool),
}

/// The outcomes of `input` split into reads of `read_bytes` bytes.
fn drive(input: &[u8], read_bytes: usize, limits: &ParseLimits) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut buffer = Vec::new();
    let mut swallow = 0usize;
    for read in input.chunks(read_bytes.max(1)) {
        let dropped = swallow.min(read.len());
        swallow -= dropped;
        buffer.extend_from_slice(&read[dropped..]);
        loop {
            match parse(&buffer, limits) {
                Parsed::Incomplete => break,
                Parsed::Request { command, consumed } => {
                    assert!(consumed >= 1 && consumed <= buffer.len());
                    buffer.drain(..consumed);
                    outcomes.push(Outcome::Request(command));
                }
                Parsed::Refused { reply, consumed, swallow_bytes, close } => {
                    assert!(consumed >= 1 && consumed <= buffer.len());
                    assert!(
                        reply.is_empty()
                            || (reply.ends_with("\r\n")
                                && reply[..reply.len() - 2].find(['\r', '\n']).is_none()
                                && (reply == "ERROR\r\n"
                                    || reply.starts_with("CLIENT_ERROR ")
                                    || reply.starts_with("SERVER_ERROR "))),
                        "{reply:?}"
                    );
                    buffer.drain(..consumed);
                    let dropped = swallow_bytes.min(buffer.len());
                    buffer.drain(..dropped);
                    swallow = swallow_bytes - dropped;
                    outcomes.push(Outcome::Refused(reply, close));
                    if close {
                        return outcomes;
                    }
                }
            }
        }
        // What waits for more bytes is at most one line and one data block.
        assert!(buffer.len() <= limits.line_bytes_max + limits.item_bytes_max + 2);
    }
    outcomes
}

fuzz_target!(|data: &[u8]| {
    let Some((&plan, input)) = data.split_first() else { return };
    let limits = if plan & 0x80 == 0 {
        ParseLimits { line_bytes_max: 2048, item_bytes_max: 1 << 16 }
    } else {
        ParseLimits { line_bytes_max: 64, item_bytes_max: 16 }
    };
    let read_bytes = usize::from(plan & 0x7f) + 1;
    let whole = drive(input, input.len(), &limits);
    assert_eq!(whole, drive(input, read_bytes, &limits));
});
