//! Mutations of valid encodings, for the "decoders never panic" properties every crate
//! with a persistent structure runs (`tests/decoders_never_panic.rs`).

use std::fmt::Debug;

use proptest::prelude::*;
use proptest::sample::Index;

use crate::codec::{Decode, Encode};

/// A change to a valid encoding.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// XOR these bytes (non-zero masks) at these positions.
    Flip(Vec<(Index, u8)>),
    /// Keep only a prefix.
    Truncate(Index),
    /// Append bytes.
    Extend(Vec<u8>),
}

/// Any [`Mutation`]: a few flipped bytes, a truncation or an extension.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        proptest::collection::vec((any::<Index>(), 1..=255u8), 1..4).prop_map(Mutation::Flip),
        any::<Index>().prop_map(Mutation::Truncate),
        proptest::collection::vec(any::<u8>(), 1..16).prop_map(Mutation::Extend),
    ]
}

/// `bytes` changed by `mutation`.
pub fn apply(mut bytes: Vec<u8>, mutation: &Mutation) -> Vec<u8> {
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
pub fn decode_checked<T: Decode + Encode + PartialEq + Debug>(bytes: &[u8]) -> Option<T> {
    let value = T::decode(bytes).ok()?;
    let again = T::decode(&value.encode());
    assert_eq!(again.as_ref(), Ok(&value), "re-encoding {value:?} does not round-trip");
    Some(value)
}
