//! The codec's reader ([`Reader`]), which every decoder is built on, never panics and never
//! reads past its buffer: arbitrary sequences of reads over arbitrary bytes either succeed
//! within bounds or fail with an error at an offset inside the buffer. Varints are canonical:
//! each value has exactly one accepted encoding, the one `put_varint` writes.

use lamina_core::codec::{Reader, VARINT_BYTES_MAX, put_bytes, put_varint, varint_len};
use proptest::prelude::*;

/// One read a decoder may make.
#[derive(Debug, Clone, Copy)]
enum Read {
    U8,
    U16,
    U32,
    U64,
    Varint,
    Bytes(usize),
    BytesWithLen(usize),
    Finish,
}

fn read_strategy() -> impl Strategy<Value = Read> {
    prop_oneof![
        Just(Read::U8),
        Just(Read::U16),
        Just(Read::U32),
        Just(Read::U64),
        Just(Read::Varint),
        (0usize..40).prop_map(Read::Bytes),
        prop_oneof![0usize..40, Just(usize::MAX)].prop_map(Read::BytesWithLen),
        Just(Read::Finish),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reads_stay_in_bounds(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        reads in proptest::collection::vec(read_strategy(), 0..16),
    ) {
        let mut r = Reader::new(&bytes);
        for read in reads {
            let before = r.position();
            let result = match read {
                Read::U8 => r.u8().map(|_| ()),
                Read::U16 => r.u16().map(|_| ()),
                Read::U32 => r.u32().map(|_| ()),
                Read::U64 => r.u64().map(|_| ()),
                Read::Varint => r.varint().map(|v| {
                    assert!(r.position() - before <= VARINT_BYTES_MAX);
                    assert_eq!(r.position() - before, varint_len(v), "non-canonical varint");
                }),
                Read::Bytes(n) => r.bytes(n).map(|b| assert_eq!(b.len(), n)),
                Read::BytesWithLen(max) => r.bytes_with_len(max).map(|b| assert!(b.len() <= max)),
                Read::Finish => r.finish(),
            };
            prop_assert!(r.position() <= bytes.len());
            prop_assert_eq!(r.remaining(), bytes.len() - r.position());
            if let Err(e) = result {
                prop_assert!(e.offset <= bytes.len(), "error offset {} past the end", e.offset);
            }
        }
    }

    #[test]
    fn varints_and_byte_strings_roundtrip(
        value in any::<u64>(),
        data in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let mut out = Vec::new();
        put_varint(&mut out, value);
        put_bytes(&mut out, &data);
        let mut r = Reader::new(&out);
        prop_assert_eq!(r.varint().unwrap(), value);
        prop_assert_eq!(r.bytes_with_len(data.len()).unwrap(), &data[..]);
        r.finish().unwrap();
    }
}

/// Regression (found by `reads_stay_in_bounds`): the reader accepted overlong varints such as
/// `80 00` for 0, although the codec documents them as errors; a decoded value then re-encoded
/// to different bytes.
#[test]
fn overlong_varints_are_refused() {
    for bytes in [&[0x80, 0x00][..], &[0xff, 0x00], &[0x81, 0x80, 0x00], &[0x80; 9]] {
        let mut bytes = bytes.to_vec();
        if bytes.len() == 9 {
            bytes.push(0x00);
        }
        let err = Reader::new(&bytes).varint().unwrap_err();
        assert_eq!(err.offset, 0, "{bytes:02x?}");
    }
    assert_eq!(Reader::new(&[0x00]).varint(), Ok(0));
    assert_eq!(Reader::new(&[0x80, 0x01]).varint(), Ok(128));
    let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    assert_eq!(Reader::new(&max).varint(), Ok(u64::MAX));
}
