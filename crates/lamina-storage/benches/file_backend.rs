//! Raw block throughput of the `file` backend on this machine: sequential and random 4 KiB
//! writes and reads, and write + fdatasync, buffered and with O_DIRECT.
//!
//! Run: `cargo bench -p lamina-storage -- --warm-up-time 1 --measurement-time 3`

// `criterion_group!` defines a public function it cannot document; a bench has no API.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lamina_storage::{FileOptions, FileStorage, OpenMode, Storage, StorageFile};

const BLOCK_BYTES: u64 = 4096;
/// Working file size: 32 MiB (8192 blocks).
const FILE_BLOCKS: u64 = 8192;

#[repr(align(4096))]
struct Page([u8; BLOCK_BYTES as usize]);

/// xorshift64: cheap, deterministic random block numbers.
struct Xorshift(u64);

impl Xorshift {
    fn next_block(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % FILE_BLOCKS
    }
}

fn setup(direct_io: bool) -> (tempfile::TempDir, FileStorage, Arc<dyn StorageFile>) {
    // Under the target directory rather than /tmp, which may be tmpfs (no O_DIRECT, no disk).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let storage =
        FileStorage::open_dir(dir.path(), FileOptions { direct_io, ..FileOptions::default() })
            .unwrap();
    let file = storage.open("bench.dat", OpenMode::Create).unwrap();
    let page = Box::new(Page([0x5a; BLOCK_BYTES as usize]));
    for block in 0..FILE_BLOCKS {
        file.write_all_at(block * BLOCK_BYTES, &page.0).unwrap();
    }
    file.sync_data().unwrap();
    (dir, storage, file)
}

fn bench_mode(c: &mut Criterion, direct_io: bool) {
    let (_dir, _storage, file) = setup(direct_io);
    let mode = if direct_io { "direct" } else { "buffered" };
    let mut group = c.benchmark_group(format!("file_4k_{mode}"));
    group.throughput(Throughput::Bytes(BLOCK_BYTES));
    let mut page = Box::new(Page([0xa5; BLOCK_BYTES as usize]));

    let mut next = 0u64;
    group.bench_function("seq_write", |b| {
        b.iter(|| {
            file.write_all_at(next * BLOCK_BYTES, &page.0).unwrap();
            next = (next + 1) % FILE_BLOCKS;
        });
    });
    let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
    group.bench_function("rand_write", |b| {
        b.iter(|| file.write_all_at(rng.next_block() * BLOCK_BYTES, &page.0).unwrap());
    });
    file.sync_data().unwrap();
    let mut next = 0u64;
    group.bench_function("seq_read", |b| {
        b.iter(|| {
            file.read_exact_at(next * BLOCK_BYTES, &mut page.0).unwrap();
            next = (next + 1) % FILE_BLOCKS;
            black_box(page.0[0]);
        });
    });
    group.bench_function("rand_read", |b| {
        b.iter(|| {
            file.read_exact_at(rng.next_block() * BLOCK_BYTES, &mut page.0).unwrap();
            black_box(page.0[0]);
        });
    });
    let mut next = 0u64;
    group.bench_function("seq_write_fdatasync", |b| {
        b.iter(|| {
            file.write_all_at(next * BLOCK_BYTES, &page.0).unwrap();
            file.sync_data().unwrap();
            next = (next + 1) % FILE_BLOCKS;
        });
    });
    group.finish();
}

fn file_backend(c: &mut Criterion) {
    bench_mode(c, false);
    bench_mode(c, true);
}

criterion_group!(benches, file_backend);
criterion_main!(benches);
