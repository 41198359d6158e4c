//! Helpers shared by the integration tests.

use std::collections::BTreeSet;
use std::sync::Arc;

use lamina_nbtree::{NbTree, dtree};
use lamina_storage::Storage;

/// D-tree files in `storage` that no committed s-tree of `db` names.
pub fn leaked(storage: &Arc<dyn Storage>, db: &NbTree) -> Vec<u64> {
    let named: BTreeSet<u64> = db.stree().dtrees().map(|d| d.id()).collect();
    storage
        .list()
        .unwrap()
        .iter()
        .filter_map(|n| dtree::parse_file_name(n))
        .filter(|id| !named.contains(id))
        .collect()
}
