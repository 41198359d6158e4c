//! `lamina_core::codec::Reader`: the first input byte picks a sequence of reads over the rest.
#![no_main]

use lamina_core::codec::{Reader, varint_len};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&plan, bytes)) = data.split_first() else { return };
    let mut r = Reader::new(bytes);
    for step in 0..8 {
        let before = r.position();
        let ok = match (plan >> step) & 3 {
            0 => r.varint().map(|v| assert_eq!(r.position() - before, varint_len(v))).is_ok(),
            1 => r.bytes_with_len(64).map(|b| assert!(b.len() <= 64)).is_ok(),
            2 => r.u32().is_ok(),
            _ => r.u8().is_ok(),
        };
        assert!(r.position() <= bytes.len());
        if !ok {
            break;
        }
    }
    let _ = r.finish();
});
