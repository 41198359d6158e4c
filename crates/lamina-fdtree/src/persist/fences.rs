//! The fences file: `L_0`'s fences as of a commit (`fd-<id>.fen`, sealed by a masked CRC32C;
//! layout in `docs/format/fdtree-manifest.md`). Written after every merge, which is the only
//! thing that changes them.

use lamina_core::codec::{DecodeError, Reader, put_bytes, put_varint};

use crate::format::entry::BlockPtr;
use crate::format::sealed;
use crate::top::Fences;

const MAGIC: u32 = u32::from_le_bytes(*b"FDFN");
const VERSION: u32 = 1;

/// The sealed encoding of `fences`.
pub fn encode(fences: &Fences) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + fences.bytes() as usize);
    sealed::seal(&mut out, |out| {
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        put_varint(out, fences.len() as u64);
        for (key, ptr) in fences.iter() {
            put_bytes(out, key);
            out.extend_from_slice(&ptr.file.to_le_bytes());
            out.extend_from_slice(&ptr.index.to_le_bytes());
        }
    });
    out
}

/// Decodes what [`encode`] wrote: keys strictly increasing, each at most `key_bytes_max`.
pub fn decode(input: &[u8], key_bytes_max: usize) -> Result<Fences, DecodeError> {
    let body = sealed::unseal(input, "fences file")?;
    let mut r = Reader::new(body);
    if r.u32()? != MAGIC {
        return Err(DecodeError::new(0, "not an fdtree fences file"));
    }
    let version = r.u32()?;
    if version != VERSION {
        return Err(DecodeError::new(4, format!("fences file version {version}")));
    }
    let n = r.varint()?;
    if n > r.remaining() as u64 {
        return Err(r.error(format!("{n} fences")));
    }
    let mut fences = Fences::new();
    let mut prev: Option<&[u8]> = None;
    for _ in 0..n {
        let key = r.bytes_with_len(key_bytes_max)?;
        let ptr = BlockPtr { file: r.u32()?, index: r.u32()? };
        if prev.is_some_and(|p| p >= key) {
            return Err(r.error("fences out of order"));
        }
        prev = Some(key);
        fences.add(key, ptr);
    }
    r.finish()?;
    Ok(fences)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_damage() {
        let mut f = Fences::new();
        f.add(b"", BlockPtr { file: 3, index: 0 });
        f.add(b"m", BlockPtr { file: 3, index: 7 });
        let bytes = encode(&f);
        let back = decode(&bytes, 16).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), f.iter().collect::<Vec<_>>());
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(decode(&bad, 16).is_err(), "flip at {i}");
        }
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len], 16).is_err());
        }
        assert!(decode(&bytes, 0).is_err(), "a key over the limit");
    }
}
