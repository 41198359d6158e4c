//! [`LsmLibrary`]: what differs between the LevelDB and RocksDB peers once their shared C
//! entry points ([`LsmCApi`]) are written once in [`LsmStore`].

use lamina_core::{Result, Stats};

use super::{LsmCApi, LsmStore};

/// One LSM library's own choices on top of the shared entry points.
pub(crate) trait LsmLibrary: LsmCApi {
    /// Library-specific objects the database was opened with (filter policy, table options,
    /// extra write options). [`LsmStore`] drops them after closing the database, so the
    /// database never sees them freed; their `Drop` frees them.
    type OpenedWith: Send + Sync;

    /// Makes every acknowledged write durable (each library has its own way to sync its log).
    fn sync(store: &LsmStore<Self>) -> Result<()>;

    /// Adds the library's properties to `stats`.
    fn fill_stats(store: &LsmStore<Self>, stats: &mut Stats);
}
