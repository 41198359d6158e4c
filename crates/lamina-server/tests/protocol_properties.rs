//! Properties of the parser over generated input: it never panics and always makes
//! progress; its outcome does not depend on how the bytes were split into reads; valid
//! requests read back as sent; every refusal's reply is one well-formed error line.

mod protocol_gen;

use lamina_server::protocol::{Command, ParseLimits, Parsed, parse};
use proptest::prelude::*;
use protocol_gen::{DATA_BYTES_MAX, command, serialize};

/// What a connection would do with one parse outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Request(Command),
    Refused { reply: String, close: bool },
}

/// Feeds `chunks` to the parser the way a connection does (an accumulating buffer, bytes
/// to swallow dropped as they arrive, stop at `close`), checking the contract at each step.
fn drive(chunks: &[&[u8]], limits: &ParseLimits) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut buffer: Vec<u8> = Vec::new();
    let mut swallow = 0usize;
    for chunk in chunks {
        let dropped = swallow.min(chunk.len());
        swallow -= dropped;
        buffer.extend_from_slice(&chunk[dropped..]);
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
                    assert_well_formed(&reply);
                    buffer.drain(..consumed);
                    let dropped = swallow_bytes.min(buffer.len());
                    buffer.drain(..dropped);
                    swallow = swallow_bytes - dropped;
                    outcomes.push(Outcome::Refused { reply, close });
                    if close {
                        return outcomes;
                    }
                }
            }
        }
    }
    outcomes
}

/// One error line, or nothing (a refusal under `noreply`).
fn assert_well_formed(reply: &str) {
    if reply.is_empty() {
        return;
    }
    assert!(reply.ends_with("\r\n"), "{reply:?}");
    let line = &reply[..reply.len() - 2];
    assert!(!line.contains(['\r', '\n']), "{reply:?}");
    assert!(
        line == "ERROR" || line.starts_with("CLIENT_ERROR ") || line.starts_with("SERVER_ERROR "),
        "{reply:?}"
    );
}

/// Splits `bytes` at the (sorted, deduplicated) `cuts`.
fn split<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in cuts {
        chunks.push(&bytes[start..cut]);
        start = cut;
    }
    chunks.push(&bytes[start..]);
    chunks
}

/// Input that reaches the parser's paths: valid requests, lines of protocol words with
/// random arguments, and random bytes, concatenated.
fn protocol_soup() -> impl Strategy<Value = Vec<u8>> {
    let words = prop::sample::select(vec![
        "get",
        "gets",
        "gat",
        "set",
        "add",
        "cas",
        "append",
        "delete",
        "incr",
        "decr",
        "touch",
        "flush_all",
        "stats",
        "version",
        "verbosity",
        "quit",
        "lscan",
        "mg",
        "ms",
        "md",
        "ma",
        "mn",
        "noreply",
        "0",
        "1",
        "5",
        "-1",
        "k",
        "v",
        "q",
        "b",
        "T1",
        "MS",
        "Mx",
        "O1",
        "C",
        "D9",
        "Zm9v",
        "HTTP/1.1",
        "\r",
        "\n",
        "\r\n",
        "  ",
        "\t",
    ]);
    let piece = prop_oneof![
        3 => command().prop_map(|c| serialize(&c)),
        3 => prop::collection::vec(words, 1..8).prop_map(|w| w.join(" ").into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..40),
        1 => Just(b"\r\n".to_vec()),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

fn small_limits() -> ParseLimits {
    ParseLimits { line_bytes_max: 96, item_bytes_max: 16 }
}

fn roomy_limits() -> ParseLimits {
    ParseLimits { line_bytes_max: 8192, item_bytes_max: DATA_BYTES_MAX }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic_and_progress(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        line_bytes_max in 0usize..128,
        item_bytes_max in 0usize..64,
    ) {
        let limits = ParseLimits { line_bytes_max, item_bytes_max };
        drive(&[&bytes], &limits);
    }

    #[test]
    fn the_split_does_not_matter(
        bytes in protocol_soup(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        small in any::<bool>(),
    ) {
        let limits = if small { small_limits() } else { roomy_limits() };
        let whole = drive(&[&bytes], &limits);
        let pieces = drive(&split(&bytes, &cuts), &limits);
        prop_assert_eq!(whole, pieces);
        let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(drive(&[&bytes], &limits), drive(&bytewise, &limits));
    }

    #[test]
    fn valid_requests_read_back_as_sent(
        commands in prop::collection::vec(command(), 1..12),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let bytes: Vec<u8> = commands.iter().flat_map(serialize).collect();
        let expected: Vec<Outcome> = commands.into_iter().map(Outcome::Request).collect();
        prop_assert_eq!(&drive(&[&bytes], &roomy_limits()), &expected);
        prop_assert_eq!(&drive(&split(&bytes, &cuts), &roomy_limits()), &expected);
    }

    #[test]
    fn a_truncated_request_is_incomplete(command in command(), cut in any::<usize>()) {
        let bytes = serialize(&command);
        let cut = cut % bytes.len();
        prop_assert_eq!(parse(&bytes[..cut], &roomy_limits()), Parsed::Incomplete);
    }
}
