//! D-tree files: written with bounded steps, read back by lookups, cursors and verify, over
//! the memory backend (exact I/O counts) and the file backend (read-only maps); every kind of
//! damage is `Corruption` naming the file, never a panic or wrong data.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::Error;
use lamina_nbtree::dtree::{DTree, DTreeParams, DTreeWriter, file_name};
use lamina_storage::{
    AccountingOptions, FileOptions, FileStorage, MemoryStorage, OpenMode, Storage,
};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

fn params(page_bytes: u32) -> DTreeParams {
    DTreeParams { page_bytes, bloom_bits_per_key: 10 }
}

/// A memory storage whose accounting blocks are `page_bytes`: blocks written = pages.
fn memory(page_bytes: u32) -> Arc<dyn Storage> {
    let options = AccountingOptions { block_bytes: u64::from(page_bytes), ..Default::default() };
    Arc::new(MemoryStorage::with_options(options).unwrap())
}

/// Writes `model` as d-tree `id`, `step` pages per `finish_step`, checking the bounds of
/// every push and step by the writer's count and by the storage's.
fn write(
    storage: &Arc<dyn Storage>,
    id: u64,
    p: DTreeParams,
    model: &Model,
    step: u64,
) -> DTreeWriter {
    write_batched(storage, id, p, model, step, 1)
}

/// [`write`] with pushes that gather `batch` pages before writing them.
fn write_batched(
    storage: &Arc<dyn Storage>,
    id: u64,
    p: DTreeParams,
    model: &Model,
    step: u64,
    batch: u64,
) -> DTreeWriter {
    let mut w = DTreeWriter::create(Arc::clone(storage), id, p, model.len() as u64)
        .unwrap()
        .with_write_batch_pages(batch);
    for (k, v) in model {
        let bound = w.push_pages_max();
        let (pages, io) = (w.pages_written(), storage.io_stats());
        w.push(k, v.as_deref()).unwrap();
        let written = w.pages_written() - pages;
        assert!(written <= bound, "a push wrote {written} pages, bound {bound}");
        assert!(storage.io_stats().since(&io).writes() <= 1, "a push writes in one call");
    }
    assert_eq!(w.entries(), model.len() as u64);
    let (finish_bound, start) = (w.finish_pages_max(), w.pages_written());
    loop {
        let (pages, io) = (w.pages_written(), storage.io_stats());
        let done = w.finish_step(step).unwrap();
        let delta = storage.io_stats().since(&io);
        assert!(w.pages_written() - pages <= step, "finish_step wrote more than {step} pages");
        assert!(delta.blocks_written <= step, "the storage saw more than {step} pages");
        assert_eq!(delta.syncs, u64::from(done), "synced exactly when done");
        if done {
            break;
        }
        assert!(w.pages_written() > pages, "a step that is not the last makes progress");
    }
    assert!(w.finish_step(1).unwrap(), "finished stays finished");
    assert!(w.pages_written() - start <= finish_bound, "finish_pages_max is a bound");
    assert_eq!(w.finish_pages_max(), 0);
    w
}

fn check_tree(tree: &Arc<DTree>, model: &Model, probes: &[Vec<u8>]) {
    assert_eq!(tree.entries(), model.len() as u64);
    let bytes: u64 = model
        .iter()
        .map(|(k, v)| lamina_nbtree::entry::entry_bytes(k.len(), v.as_ref().map(Vec::len)))
        .sum();
    assert_eq!(tree.bytes(), bytes);
    for (k, v) in model {
        assert!(tree.may_contain(k));
        assert_eq!(tree.get(k).unwrap(), Some(v.clone()), "key {k:?}");
    }
    for probe in probes {
        assert_eq!(tree.get(probe).unwrap(), model.get(probe).cloned());
        let mut c = tree.cursor(Some(probe)).unwrap();
        let mut expected = model.range(probe.clone()..);
        for _ in 0..5 {
            let got = c.next_entry().unwrap();
            assert_eq!(got, expected.next().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let mut c = tree.cursor(None).unwrap();
    let mut all = Vec::new();
    while let Some(e) = c.next_entry().unwrap() {
        all.push(e);
    }
    assert!(c.next_entry().unwrap().is_none());
    assert_eq!(all, model.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>());
    tree.verify().unwrap();
}

fn entries() -> impl Strategy<Value = Model> {
    proptest::collection::btree_map(
        proptest::collection::vec(any::<u8>(), 1..24),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..400)),
        0..300,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn written_trees_read_back(
        model in entries(),
        probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..24), 0..12),
        page_shift in 0u32..4,
        step in 1u64..6,
        batch in 1u64..6,
    ) {
        let page = 512 << (page_shift * 2);
        let storage = memory(page);
        let w = write_batched(&storage, 7, params(page), &model, step, batch);
        let written = w.into_dtree().unwrap();
        check_tree(&written, &model, &probes);
        let opened = DTree::open(Arc::clone(&storage), 7).unwrap();
        prop_assert_eq!(opened.file_bytes(), written.file_bytes());
        prop_assert_eq!(opened.height(), written.height());
        check_tree(&opened, &model, &probes);
    }
}

/// A model of `n` entries with 8-byte keys, every third a delete.
fn numbered(n: u64, value_bytes: usize) -> Model {
    (0..n)
        .map(|i| {
            let value = (i % 3 != 0).then(|| vec![(i % 251) as u8; value_bytes]);
            ((i * 2).to_be_bytes().to_vec(), value)
        })
        .collect()
}

#[test]
fn tall_trees_read_back_and_lookups_read_one_leaf() {
    let model = numbered(20_000, 8);
    let storage = memory(512);
    let p = params(512);
    write(&storage, 1, p, &model, 3);
    let tree = DTree::open(Arc::clone(&storage), 1).unwrap();
    assert!(tree.height() >= 3, "height {}", tree.height());
    let probes: Vec<Vec<u8>> = (0..50u64).map(|i| (i * 797).to_be_bytes().to_vec()).collect();
    check_tree(&tree, &model, &probes);
    for (i, k) in model.keys().enumerate().step_by(97) {
        let before = storage.io_stats();
        tree.get(k).unwrap().unwrap();
        let delta = storage.io_stats().since(&before);
        assert_eq!((delta.reads(), delta.blocks_read), (1, 1), "lookup {i}");
    }
    // A key the filter rules out costs nothing; the filter's false-positive rate is low.
    let before = storage.io_stats();
    let absent = (0..2000u64).filter(|i| tree.get(&(i * 2 + 1).to_be_bytes()).unwrap().is_some());
    assert_eq!(absent.count(), 0);
    assert!(storage.io_stats().since(&before).reads() < 100);
}

#[test]
fn empty_trees_are_valid() {
    for bits in [0, 10] {
        let storage = memory(4096);
        let p = DTreeParams { page_bytes: 4096, bloom_bits_per_key: bits };
        let w = write(&storage, 3, p, &Model::new(), 1);
        assert_eq!(w.pages_written(), 2, "a Bloom page and the footer page");
        let written = w.into_dtree().unwrap();
        let opened = DTree::open(Arc::clone(&storage), 3).unwrap();
        for tree in [written, opened] {
            assert_eq!((tree.entries(), tree.height(), tree.file_bytes()), (0, 0, 8192));
            assert_eq!(tree.get(b"k").unwrap(), None);
            assert!(tree.cursor(None).unwrap().next_entry().unwrap().is_none());
            assert!(tree.cursor(Some(b"a")).unwrap().next_entry().unwrap().is_none());
            tree.verify().unwrap();
        }
    }
}

#[test]
fn entries_larger_than_a_page_get_leaves_of_several_pages() {
    for page in [512u32, 4096] {
        let mut model = Model::new();
        for i in 0..40u8 {
            let key = vec![i; if i % 2 == 0 { 1024 } else { 3 }];
            let value = match i % 4 {
                0 => Some(vec![i; 4096]),
                1 => None,
                2 => Some(Vec::new()),
                _ => Some(vec![i; 700]),
            };
            model.insert(key, value);
        }
        let storage = memory(page);
        write(&storage, 5, params(page), &model, 1).into_dtree().unwrap();
        let tree = DTree::open(Arc::clone(&storage), 5).unwrap();
        let probes = vec![vec![0u8], vec![7u8; 1024], vec![255u8; 2]];
        check_tree(&tree, &model, &probes);
    }
}

#[test]
fn without_a_filter_every_key_may_be_present() {
    let storage = memory(4096);
    let model = numbered(100, 4);
    let p = DTreeParams { page_bytes: 4096, bloom_bits_per_key: 0 };
    let tree = write(&storage, 2, p, &model, 2).into_dtree().unwrap();
    assert!(tree.may_contain(b"absent"));
    check_tree(&tree, &model, &[b"absent".to_vec()]);
}

#[test]
fn the_file_backend_reads_through_a_map() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap());
    let model = numbered(5000, 16);
    let written = write(&storage, 4, params(4096), &model, 4).into_dtree().unwrap();
    let opened = DTree::open(Arc::clone(&storage), 4).unwrap();
    for tree in [&written, &opened] {
        let before = storage.io_stats();
        for k in model.keys().step_by(7) {
            assert_eq!(tree.get(k).unwrap(), Some(model[k].clone()));
        }
        assert_eq!(storage.io_stats().since(&before).reads(), 0, "lookups read the map");
        check_tree(tree, &model, &[vec![0u8; 3]]);
    }
    // Damage under the map is still caught.
    drop((written, opened));
    let file = storage.open(&file_name(4), OpenMode::Existing).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(100, &mut byte).unwrap();
    file.write_all_at(100, &[byte[0] ^ 0x40]).unwrap();
    let tree = DTree::open(Arc::clone(&storage), 4).unwrap();
    let first = model.keys().next().unwrap();
    assert_corruption(&tree.get(first).unwrap_err(), &storage, 4);
    assert_corruption(&tree.verify().unwrap_err(), &storage, 4);
}

fn assert_corruption(err: &Error, storage: &Arc<dyn Storage>, id: u64) {
    match err {
        Error::Corruption { file, .. } => assert_eq!(file, &storage.path_of(&file_name(id))),
        other => panic!("expected corruption naming the file, got {other:?}"),
    }
}

/// Every way of reading `id`: each result is either right (as in `model`) or corruption
/// naming the file; returns whether any check found the damage.
fn damage_found(storage: &Arc<dyn Storage>, id: u64, model: &Model) -> bool {
    let tree = match DTree::open(Arc::clone(storage), id) {
        Ok(tree) => tree,
        Err(e) => {
            assert_corruption(&e, storage, id);
            return true;
        }
    };
    let mut found = false;
    for (k, v) in model {
        match tree.get(k) {
            Ok(got) => assert!(got.is_none() || got.as_ref() == Some(v), "wrong data for {k:?}"),
            Err(e) => {
                assert_corruption(&e, storage, id);
                found = true;
            }
        }
    }
    let mut c = tree.cursor(None).unwrap();
    let mut expected = model.iter();
    loop {
        match c.next_entry() {
            Ok(Some((k, v))) => {
                // Entries of a leaf whose damage lies past them may be returned first.
                let (ek, ev) = expected.next().expect("no entries beyond the model");
                assert_eq!((&k, &v), (ek, ev), "wrong data from the cursor");
            }
            Ok(None) => break,
            Err(e) => {
                assert_corruption(&e, storage, id);
                found = true;
                break;
            }
        }
    }
    match tree.verify() {
        Ok(()) => found,
        Err(e) => {
            assert_corruption(&e, storage, id);
            true
        }
    }
}

#[test]
fn every_flipped_byte_is_found_and_never_returns_wrong_data() {
    // A small tree of every section: leaves, internal nodes, Bloom pages, the footer page.
    let model = numbered(120, 6);
    let storage = memory(512);
    write(&storage, 6, params(512), &model, 2);
    let name = file_name(6);
    let good = storage.read_all(&name).unwrap();
    let tree = DTree::open(Arc::clone(&storage), 6).unwrap();
    assert!(tree.height() >= 2, "the tree has internal nodes");
    drop(tree);
    let file = storage.open(&name, OpenMode::Existing).unwrap();
    for (at, &byte) in good.iter().enumerate() {
        file.write_all_at(at as u64, &[byte ^ 0x01]).unwrap();
        assert!(damage_found(&storage, 6, &model), "flip at byte {at} was not found");
        file.write_all_at(at as u64, &[byte]).unwrap();
    }
    assert!(!damage_found(&storage, 6, &model));
}

#[test]
fn truncated_extended_and_missing_files_are_corruption() {
    let model = numbered(300, 10);
    let storage = memory(512);
    write(&storage, 8, params(512), &model, 8);
    let name = file_name(8);
    let good = storage.read_all(&name).unwrap();
    let file = storage.open(&name, OpenMode::Existing).unwrap();
    for len in [0, 1, 100, 511, 512, 4096, good.len() as u64 - 512, good.len() as u64 - 1] {
        file.set_len(len).unwrap();
        assert!(damage_found(&storage, 8, &model), "truncated to {len}");
        file.write_all_at(0, &good).unwrap();
    }
    file.write_all_at(good.len() as u64, &[0u8; 512]).unwrap();
    assert!(damage_found(&storage, 8, &model), "extended");
    file.set_len(good.len() as u64).unwrap();
    assert!(!damage_found(&storage, 8, &model));
    storage.remove(&name).unwrap();
    assert_corruption(&DTree::open(Arc::clone(&storage), 8).unwrap_err(), &storage, 8);
}

#[test]
fn another_trees_file_is_corruption() {
    let storage = memory(512);
    write(&storage, 1, params(512), &numbered(50, 4), 1);
    storage.rename(&file_name(1), &file_name(2)).unwrap();
    assert_corruption(&DTree::open(Arc::clone(&storage), 2).unwrap_err(), &storage, 2);
}

#[test]
fn files_are_removed_when_asked_and_unused() {
    let storage = memory(4096);
    let model = numbered(1000, 8);
    let tree = write(&storage, 9, params(4096), &model, 5).into_dtree().unwrap();
    let mut cursor = tree.cursor(None).unwrap();
    tree.remove_when_unused();
    drop(tree);
    assert!(storage.exists(&file_name(9)).unwrap(), "the cursor holds the d-tree");
    let mut n = 0;
    while cursor.next_entry().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, model.len());
    drop(cursor);
    assert!(!storage.exists(&file_name(9)).unwrap());
    assert_corruption(&DTree::open(Arc::clone(&storage), 9).unwrap_err(), &storage, 9);
    // Without the flag the file stays.
    write(&storage, 10, params(4096), &model, 5).into_dtree().unwrap();
    assert!(storage.exists(&file_name(10)).unwrap());
}

#[test]
fn unfinished_writers_are_abandoned_or_dropped() {
    let storage = memory(512);
    let model = numbered(500, 8);
    let mut w = DTreeWriter::create(Arc::clone(&storage), 11, params(512), 500).unwrap();
    for (k, v) in &model {
        w.push(k, v.as_deref()).unwrap();
    }
    assert!(w.pages_written() > 0);
    assert!(!w.finish_step(1).unwrap());
    w.abandon().unwrap();
    assert!(!storage.exists(&file_name(11)).unwrap());
    let mut w = DTreeWriter::create(Arc::clone(&storage), 12, params(512), 500).unwrap();
    w.push(b"k", None).unwrap();
    drop(w);
    assert_corruption(&DTree::open(Arc::clone(&storage), 12).unwrap_err(), &storage, 12);
    // The file exists: a second writer of the same id is refused.
    assert!(DTreeWriter::create(Arc::clone(&storage), 12, params(512), 1).is_err());
}

#[test]
fn bad_params_are_refused() {
    let storage = memory(512);
    for p in [
        DTreeParams { page_bytes: 256, bloom_bits_per_key: 10 },
        DTreeParams { page_bytes: 3000, bloom_bits_per_key: 10 },
        DTreeParams { page_bytes: 4096, bloom_bits_per_key: 65 },
    ] {
        assert!(
            DTreeWriter::create(Arc::clone(&storage), 1, p, 10).unwrap_err().is_invalid_argument()
        );
    }
}

#[test]
#[should_panic(expected = "ascend")]
fn keys_out_of_order_are_a_caller_bug() {
    let storage = memory(512);
    let mut w = DTreeWriter::create(storage, 1, params(512), 10).unwrap();
    w.push(b"b", None).unwrap();
    w.push(b"a", None).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_files_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..3000),
        tail in proptest::option::of(0usize..120),
    ) {
        let storage = memory(512);
        let file = storage.open(&file_name(1), OpenMode::CreateNew).unwrap();
        file.write_all_at(0, &bytes).unwrap();
        if let Some(cut) = tail {
            // A real footer at the end of garbage: decoding goes on into the nodes.
            let model = numbered(30, 4);
            write(&storage, 2, params(512), &model, 4);
            let real = storage.read_all(&file_name(2)).unwrap();
            let footer = &real[real.len() - 120 + cut.min(119)..];
            file.write_all_at(bytes.len() as u64, footer).unwrap();
        }
        if let Ok(tree) = DTree::open(Arc::clone(&storage), 1) {
            let _ = tree.get(b"k");
            let _ = tree.verify();
        }
    }
}

/// Writes `model` over `storage`; the first error ends the attempt, and every call after it
/// fails too (the writer does not write on after an I/O error). True when finished.
fn try_write(storage: &Arc<dyn Storage>, model: &Model) -> bool {
    let Ok(mut w) = DTreeWriter::create(Arc::clone(storage), 1, params(512), 200) else {
        return false;
    };
    let mut failed = false;
    for (k, v) in model {
        let result = w.push(k, v.as_deref());
        assert!(!failed || result.is_err(), "a push after a failure went through");
        failed |= result.is_err();
    }
    loop {
        match w.finish_step(2) {
            Ok(true) => {
                assert!(!failed, "finished after a failure");
                return true;
            }
            Ok(false) => assert!(!failed, "a step after a failure went through"),
            Err(_) if failed => return false,
            Err(_) => failed = true,
        }
    }
}

#[test]
fn io_errors_and_crashes_never_leave_a_tree_that_reads_wrong() {
    use lamina_storage::{FailKind, FaultPlan, FaultyStorage};
    let model = numbered(600, 8);
    let clean = FaultyStorage::in_memory(FaultPlan::none());
    assert!(try_write(&(Arc::new(clean.clone()) as Arc<dyn Storage>), &model));
    let ops = clean.ops() + 2;
    assert!(ops > 20, "{ops} operations");
    for op in 1..=ops {
        for kind in [FailKind::Eio, FailKind::NoSpace] {
            let faulty = FaultyStorage::in_memory(FaultPlan::none().fail_at(op, kind, false));
            let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
            let finished = try_write(&storage, &model);
            faulty.stop_failing();
            if finished {
                check_tree(&DTree::open(Arc::clone(&storage), 1).unwrap(), &model, &[]);
            }
        }
        // A crash: a tree whose finish_step returned true, and whose name the engine then
        // made durable (`sync_dir`: the writer syncs the file's data only), survives it
        // whole; any other file is refused when opened, or reads right.
        let faulty = FaultyStorage::in_memory(FaultPlan::none().crash_at(op));
        let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
        let durable = try_write(&storage, &model) && storage.sync_dir().is_ok();
        let after: Arc<dyn Storage> = Arc::new(faulty.reopen_after_crash().unwrap());
        if durable {
            check_tree(&DTree::open(Arc::clone(&after), 1).unwrap(), &model, &[]);
        } else if after.exists(&file_name(1)).unwrap() {
            let _ = damage_found(&after, 1, &model);
        }
    }
}
