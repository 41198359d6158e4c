//! Records sealed by a trailing masked CRC32C of everything before it (the manifest, the
//! FD+FC merge progress record): the one implementation is `lamina_core::checksum`'s.

pub(crate) use lamina_core::checksum::{seal, sealed_len, unseal};
