//! The LMDB long-key bucket's decoder refuses arbitrary bytes with an error and never panics:
//! arbitrary byte strings, valid encodings with flipped bytes, truncations and extensions,
//! and arbitrary bodies sealed with a correct checksum (so the parser behind the checksum is
//! exercised too). Whatever it accepts re-encodes to the same value.
//!
//! The bucket lives in the private, feature-gated `lmdb` module; its file is pure Rust over
//! `lamina-core`, so this test compiles it directly (without the `peers` feature or LMDB).
//! The cargo-fuzz target `fuzz/fuzz_targets/lmdb_bucket.rs` does the same.

use lamina_core::checksum::{crc32c, mask};
use lamina_core::codec::{Decode, Encode};
use lamina_core::testkit::mutation::{apply, decode_checked, mutation};
use proptest::prelude::*;

#[allow(dead_code, unreachable_pub, clippy::pedantic)] // only `Bucket` is used here
#[path = "../src/lmdb/long_keys.rs"]
mod long_keys;

use long_keys::Bucket;

fn bucket_strategy() -> impl Strategy<Value = Bucket> {
    proptest::collection::btree_map(
        proptest::collection::vec(any::<u8>(), 1..12),
        proptest::collection::vec(any::<u8>(), 0..12),
        1..6,
    )
    .prop_map(|map| Bucket { entries: map.into_iter().collect() })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn bucket_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        decode_checked::<Bucket>(&bytes);
    }

    #[test]
    fn bucket_survives_mutations(bucket in bucket_strategy(), m in mutation()) {
        prop_assert_eq!(Bucket::decode(&bucket.encode()), Ok(bucket.clone()));
        if let Some(back) = decode_checked::<Bucket>(&apply(bucket.encode(), &m)) {
            prop_assert_eq!(back, bucket, "a mutated bucket passed its CRC");
        }
    }

    #[test]
    fn bucket_behind_a_valid_crc(
        bucket in bucket_strategy(),
        m in mutation(),
        body in proptest::collection::vec(any::<u8>(), 0..60),
        arbitrary_body in any::<bool>(),
    ) {
        let bytes = bucket.encode();
        let mut body = if arbitrary_body {
            let mut b = vec![1u8];
            b.extend_from_slice(&body);
            b
        } else {
            apply(bytes[..bytes.len() - 4].to_vec(), &m)
        };
        let crc = mask(crc32c(&body));
        body.extend_from_slice(&crc.to_le_bytes());
        decode_checked::<Bucket>(&body);
    }
}
