//! The metadata file's decoder ([`lamina::Meta`]) refuses arbitrary bytes with an error and
//! never panics: arbitrary byte strings, valid encodings with flipped bytes, truncations and
//! extensions, and arbitrary bodies sealed with a correct checksum (so the parser behind the
//! checksum is exercised too). Whatever it accepts re-encodes to the same bytes.
//! The cargo-fuzz target `fuzz/fuzz_targets/meta.rs` runs the same decoder with coverage
//! guidance; this file is what CI runs.

use lamina::Meta;
use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::Encode;
use lamina_core::testkit::mutation::{apply, decode_checked, mutation};
use proptest::prelude::*;

fn meta_strategy() -> impl Strategy<Value = Meta> {
    ("[!-~]{1,32}", any::<bool>()).prop_map(|(engine, created)| Meta { engine, created })
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
            // A version 1 file is read (as a created database) and written back as version 2:
            // what it says survives the round trip, not its bytes.
            prop_assert_eq!(decode_checked::<Meta>(&meta.encode()), Some(meta));
        }
    }
}
