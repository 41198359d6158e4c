//! Opening a peer by configuration name.

use std::path::Path;

use lamina_core::{Error, OrderedIndex, Result};

use crate::{PeerName, PeerOptions};

/// What a build without the `peers` feature says when asked for a peer.
pub const FEATURE_MISSING: &str = "built without the `peers` feature; rebuild with \
    `--features peers` (e.g. `cargo build -p lamina-cli --features peers`) after installing \
    the Debian packages listed in crates/lamina-peers/README.md";

/// Whether this build links the peer libraries.
pub const fn peers_built() -> bool {
    cfg!(feature = "peers")
}

/// Opens (creating if needed) the peer configuration `name` in directory `dir`.
///
/// Errors: [`Error::InvalidArgument`] for an unknown name or bad options,
/// [`Error::Unsupported`] when built without the `peers` feature, and the library's own
/// error (as [`Error::Io`], [`Error::Corruption`], ...) when it fails to open.
pub fn open_peer(name: &str, dir: &Path, options: &PeerOptions) -> Result<Box<dyn OrderedIndex>> {
    let Some(peer) = PeerName::parse(name) else {
        return Err(Error::option(
            "engine",
            format!("unknown peer `{name}`; peers are {}", crate::PEER_NAMES.join(", ")),
        ));
    };
    options.validate()?;
    open_checked(peer, dir, options)
}

#[cfg(not(feature = "peers"))]
fn open_checked(
    peer: PeerName,
    _dir: &Path,
    _options: &PeerOptions,
) -> Result<Box<dyn OrderedIndex>> {
    Err(Error::Unsupported { what: format!("peer engine `{peer}`: {FEATURE_MISSING}") })
}

#[cfg(feature = "peers")]
fn open_checked(
    peer: PeerName,
    dir: &Path,
    options: &PeerOptions,
) -> Result<Box<dyn OrderedIndex>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    Ok(match peer {
        PeerName::RocksDb | PeerName::RocksDbTuned => {
            Box::new(crate::rocksdb::open(peer, dir, options)?)
        }
        PeerName::LevelDb | PeerName::LevelDbTuned => {
            Box::new(crate::leveldb::open(peer, dir, options)?)
        }
        PeerName::Lmdb => Box::new(crate::lmdb::open(peer, dir, options)?),
        PeerName::Bdb => Box::new(crate::bdb::open(peer, dir, options)?),
        PeerName::WiredTigerBtree | PeerName::WiredTigerLsm => {
            Box::new(crate::wiredtiger::open(peer, dir, options)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_peer("mysql", dir.path(), &PeerOptions::default()).err().unwrap();
        assert!(err.to_string().contains("rocksdb"), "{err}");
    }

    #[cfg(not(feature = "peers"))]
    #[test]
    fn without_the_feature_every_peer_names_it() {
        let dir = tempfile::tempdir().unwrap();
        for name in crate::PEER_NAMES {
            let err = open_peer(name, dir.path(), &PeerOptions::default()).err().unwrap();
            assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
            assert!(err.to_string().contains("`peers` feature"), "{err}");
        }
    }
}
