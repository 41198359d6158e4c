//! Overwrites of one key: the memtable keeps a replaced entry's bytes in its arena until it
//! is dropped (`memtable.rs`), so the engine freezes a memtable whose dead bytes reach
//! sigma as it does one whose live bytes do. Memory stays within three sigma however many
//! times the key is written, and the newest value is the one read, before and after a
//! reopen.

use std::sync::Arc;

use lamina_core::{Durability, OrderedIndex};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};
use lamina_storage::MemoryStorage;

#[test]
fn overwriting_one_key_keeps_memory_within_three_sigma() {
    for deamortization in [Deamortization::Foreground, Deamortization::Background] {
        let storage = Arc::new(MemoryStorage::new());
        let options = NbTreeOptions {
            sigma_bytes: SIGMA_BYTES_MIN,
            page_bytes: 512,
            durability: Durability::None,
            deamortization,
            ..NbTreeOptions::default()
        };
        let db = NbTree::open(storage.clone(), &options).unwrap();
        let value_bytes = 1000;
        // 50 sigma of writes, all to one key. Before dead bytes counted, nothing froze the
        // memtable before the log checkpoint (4 sigma of log): the active and the frozen
        // memtable held up to 8 sigma.
        let writes = 50 * SIGMA_BYTES_MIN / value_bytes;
        let mut memory_max = 0;
        for i in 0..writes {
            db.put(b"the-key", &vec![i as u8; value_bytes as usize]).unwrap();
            memory_max = memory_max.max(db.stats().memory_bytes);
        }
        assert!(
            memory_max <= 3 * SIGMA_BYTES_MIN,
            "{deamortization:?}: memory reached {memory_max} bytes with sigma {SIGMA_BYTES_MIN}"
        );
        let last = vec![(writes - 1) as u8; value_bytes as usize];
        assert_eq!(db.get(b"the-key").unwrap(), Some(last.clone()));
        db.close().unwrap();
        let db = NbTree::open(storage, &options).unwrap();
        assert_eq!(db.get(b"the-key").unwrap(), Some(last));
        db.verify().unwrap();
    }
}
