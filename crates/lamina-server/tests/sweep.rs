//! The background sweep removes expired and flushed items, and only those.

use std::sync::atomic::{AtomicBool, Ordering};

use lamina::{Db, Durability, EngineKind, Options};
use lamina_core::codec::Encode;
use lamina_server::ServerConfig;
use lamina_server::item::{ItemHeader, ItemWrite};
use lamina_server::shared::{Shared, unix_now_secs};
use lamina_server::sweep::{SWEEP_PAGE_RECORDS, sweep_once};

fn item(cas: u64, expires_at_secs: u64, flush_epoch: u32) -> Vec<u8> {
    let header = ItemHeader { state: 0, client_flags: 0, cas, expires_at_secs, flush_epoch };
    ItemWrite { header, data: [b"data", &[]] }.encode()
}

#[test]
fn sweep_removes_dead_items_across_pages() {
    let dir = tempfile::tempdir().unwrap();
    let options =
        Options { engine: EngineKind::Trie, durability: Durability::None, ..Options::default() };
    let db = Db::open(dir.path(), options).unwrap();
    let shared = Shared::new(db, ServerConfig::new("127.0.0.1:0".parse().unwrap())).unwrap();
    let now = unix_now_secs();
    // More than two pages, every third item expired.
    let count = SWEEP_PAGE_RECORDS * 2 + 100;
    for i in 0..count {
        let cas = shared.clock.next_cas(&shared.db).unwrap();
        let expires = if i % 3 == 0 { now - 10 } else { now + 3600 };
        shared
            .db
            .put(format!("k{i:05}").as_bytes(), item(cas, expires, shared.clock.flush_epoch()))
            .unwrap();
    }
    let stop = AtomicBool::new(false);
    let removed = sweep_once(&shared, &stop).unwrap();
    assert_eq!(removed as usize, count.div_ceil(3));
    for i in 0..count {
        let present = shared.db.get(format!("k{i:05}").as_bytes()).unwrap().is_some();
        assert_eq!(present, i % 3 != 0, "key {i}");
    }
    // A flush makes every remaining item dead; the sweep removes them all but the server's
    // own state record.
    shared.clock.flush(&shared.db, 0, now).unwrap();
    let removed = sweep_once(&shared, &stop).unwrap();
    assert_eq!(removed as usize, count - count.div_ceil(3));
    assert_eq!(shared.db.stats().keys, Some(1), "only the state record is left");
    assert_eq!(shared.counters.reclaimed.load(Ordering::Relaxed) as usize, count);
    // A stop request ends a pass early.
    stop.store(true, Ordering::Release);
    assert_eq!(sweep_once(&shared, &stop).unwrap(), 0);
}
