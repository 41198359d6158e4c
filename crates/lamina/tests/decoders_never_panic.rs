//! The metadata file's decoder ([`lamina::Meta`]) refuses arbitrary bytes with an error and
//! never panics: arbitrary byte strings, valid encodings with flipped bytes, truncations and
//! extensions, and arbitrary bodies sealed with a correct checksum (so the parser behind the
//! checksum is exercised too). Whatever it accepts re-encodes to the same bytes.
//! The cargo-fuzz target `fuzz/fuzz_targets/meta.rs` runs the same decoder with coverage
//! guidance; this file is what CI runs.

use std::fmt::Debug;

use lamina::Meta;
use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use proptest::prelude::*;
use proptest::sample::Index;

/// A change to a valid encoding.
#[derive(Debug, Clone)]
enum Mutation {
    /// XOR these bytes (non-zero masks) at these positions.
    Flip(Vec<(Index, u8)>),
    /// Keep only a prefix.
    Truncate(Index),
    /// Append bytes.
    Extend(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        proptest::collection::vec((any::<Index>(), 1..=255u8), 1..4).prop_map(Mutation::Flip),
        any::<Index>().prop_map(Mutation::Truncate),
        proptest::collection::vec(any::<u8>(), 1..16).prop_map(Mutation::Extend),
    ]
}

fn apply(mut bytes: Vec<u8>, mutation: &Mutation) -> Vec<u8> {
    match mutation {
        Mutation::Flip(flips) if !bytes.is_empty() => {
            for (at, xor) in flips {
                let i = at.index(bytes.len());
                bytes[i] ^= xor;
            }
        }
        Mutation::Flip(_) => {}
        Mutation::Truncate(at) => bytes.truncate(at.index(bytes.len().max(1))),
        Mutation::Extend(more) => bytes.extend_from_slice(more),
    }
    bytes
}

/// Decodes `bytes`; if accepted, the value's encoding must decode to the same value.
fn decode_checked<T: Decode + Encode + PartialEq + Debug>(bytes: &[u8]) -> Option<T> {
    let value = T::decode(bytes).ok()?;
    let again = T::decode(&value.encode());
    assert_eq!(again.as_ref(), Ok(&value), "re-encoding {value:?} does not round-trip");
    Some(value)
}
fn meta_strategy() -> impl Strategy<Value = Meta> {
    "[!-~]{1,32}".prop_map(|engine| Meta { engine })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn meta_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
        decode_checked::<Meta>(&bytes);
    }

    #[test]
    fn meta_survives_mutations(meta in meta_strategy(), m in mutation()) {
        let bytes = apply(meta.encode(), &m);
        if let Some(back) = decode_checked::<Meta>(&bytes) {
            prop_assert_eq!(back.encode(), bytes, "a mutated metadata file passed its CRC");
        }
    }

    #[test]
    fn meta_behind_a_valid_crc(len in any::<u8>(), name in proptest::collection::vec(any::<u8>(), 0..40)) {
        let mut bytes = b"LAMINADB".to_vec();
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.push(len % 40);
        bytes.extend_from_slice(&name);
        let crc = masked_crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        if let Some(meta) = decode_checked::<Meta>(&bytes) {
            prop_assert_eq!(meta.encode(), bytes);
        }
    }
}
