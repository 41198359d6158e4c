//! `lamina_storage::Superblock::open` over a file holding arbitrary bytes (two 512-byte slots).
#![no_main]

use std::sync::Arc;

use lamina_storage::{MemoryStorage, OpenMode, Storage, Superblock};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let file = storage.open("sb", OpenMode::Create).expect("memory storage");
    file.write_all_at(0, data).expect("memory storage");
    drop(file);
    let owner = data.get(8..16).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8")));
    if let Ok(sb) = Superblock::open(storage, "sb", owner, 512) {
        let _ = (sb.current(), sb.slots());
    }
});
