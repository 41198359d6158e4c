//! The metadata file at the root of every database directory: which engine created it, and
//! whether the engine's files were all created (so that an engine opening an existing
//! database knows that missing files are damage, not a new database).
//!
//! Layout (little-endian; see `docs/format/meta.md`):
//!
//! ```text
//! offset  size  field
//! 0       8     magic "LAMINADB"
//! 8       4     format version of this file (2; version 1 has no flags byte)
//! 12      1     engine name length n (1..=32)
//! 13      n     engine name, ASCII (`mem`, `fdtree`, `trie`, `nbtree`, `latree`, ...)
//! 13+n    1     flags: bit 0 = the engine's files exist (created); other bits zero
//! 14+n    4     masked CRC32C of bytes 0..14+n
//! ```
//!
//! A version 1 file (written before the flag existed, once the engine was opened) reads as
//! created.

use std::path::Path;

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};
use lamina_core::{Error, Result};

/// File name of the metadata file.
pub const META_FILE_NAME: &str = "LAMINA";
const MAGIC: [u8; 8] = *b"LAMINADB";
const FORMAT_VERSION: u32 = 2;
const ENGINE_NAME_BYTES_MAX: usize = 32;
/// Flag: the engine's files were created (the database exists).
const FLAG_CREATED: u8 = 1;

/// What the metadata file records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// Name of the engine that created the directory.
    pub engine: String,
    /// Whether the engine's files were created: the facade writes the file first without
    /// it, opens the engine (which creates its files), then sets it. Once set, an engine is
    /// opened with `OpenIntent::MustExist`.
    pub created: bool,
}

impl Encode for Meta {
    fn encoded_len(&self) -> usize {
        8 + 4 + 1 + self.engine.len() + 1 + 4
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        assert!(
            (1..=ENGINE_NAME_BYTES_MAX).contains(&self.engine.len()),
            "engine names are 1 to 32 bytes"
        );
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.push(self.engine.len() as u8);
        out.extend_from_slice(self.engine.as_bytes());
        out.push(if self.created { FLAG_CREATED } else { 0 });
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

impl Decode for Meta {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(input);
        if reader.array::<8>().ok() != Some(MAGIC) {
            return Err(DecodeError::new(0, "not a lamina metadata file (bad magic)"));
        }
        let version = reader.u32()?;
        if version != FORMAT_VERSION && version != 1 {
            return Err(DecodeError::new(
                8,
                format!("metadata format version {version}; this build reads {FORMAT_VERSION}"),
            ));
        }
        let len = usize::from(reader.u8()?);
        if !(1..=ENGINE_NAME_BYTES_MAX).contains(&len) {
            return Err(DecodeError::new(12, format!("engine name length {len}")));
        }
        let name = reader.bytes(len)?;
        // Version 1 has no flags: it was written once the engine had been opened.
        let flags = if version == 1 { FLAG_CREATED } else { reader.u8()? };
        if flags & !FLAG_CREATED != 0 {
            return Err(DecodeError::new(13 + len, format!("unknown flags {flags:#x}")));
        }
        let body_len = reader.position();
        let crc = reader.u32()?;
        reader.finish()?;
        if masked_crc32c(&input[..body_len]) != crc {
            return Err(DecodeError::new(body_len, "checksum mismatch"));
        }
        let engine = std::str::from_utf8(name)
            .ok()
            .filter(|s| s.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| DecodeError::new(13, "engine name is not ASCII"))?;
        Ok(Meta { engine: engine.to_string(), created: flags & FLAG_CREATED != 0 })
    }
}

impl Meta {
    /// Reads the metadata file of `dir`; `None` if there is none.
    pub fn read(dir: &Path) -> Result<Option<Meta>> {
        let path = dir.join(META_FILE_NAME);
        match std::fs::read(&path) {
            Ok(bytes) => Meta::decode(&bytes).map(Some).map_err(|e| e.at(&path, 0)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
        }
    }

    /// Writes the metadata file of `dir` durably (temporary file, fsync, rename, fsync dir).
    pub fn write(&self, dir: &Path) -> Result<()> {
        use std::io::Write;
        let path = dir.join(META_FILE_NAME);
        let tmp = dir.join(format!("{META_FILE_NAME}.tmp"));
        let io = |what: &str, e| Error::io(format!("{what} {}", path.display()), e);
        let mut file = std::fs::File::create(&tmp).map_err(|e| io("creating", e))?;
        file.write_all(&self.encode()).map_err(|e| io("writing", e))?;
        file.sync_all().map_err(|e| io("syncing", e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io("renaming", e))?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("syncing dir of", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        for created in [false, true] {
            let meta = Meta { engine: "fdtree".into(), created };
            assert_eq!(Meta::decode(&meta.encode()).unwrap(), meta);
        }
    }

    #[test]
    fn version_1_reads_as_created() {
        // Version 1: no flags byte.
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.push(3);
        bytes.extend_from_slice(b"mem");
        let crc = masked_crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(Meta::decode(&bytes).unwrap(), Meta { engine: "mem".into(), created: true });
    }

    #[test]
    fn corruption_and_truncation_are_detected() {
        let bytes = Meta { engine: "mem".into(), created: true }.encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x04;
            assert!(Meta::decode(&bad).is_err(), "flip at {i}");
        }
        for len in 0..bytes.len() {
            assert!(Meta::decode(&bytes[..len]).is_err(), "truncated to {len}");
        }
    }

    #[test]
    fn future_version_is_named() {
        let mut bytes = Meta { engine: "mem".into(), created: true }.encode();
        bytes[8] = 9;
        assert!(Meta::decode(&bytes).unwrap_err().reason.contains("version 9"));
    }
}
