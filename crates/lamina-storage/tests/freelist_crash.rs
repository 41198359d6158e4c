//! Space freed by a "merge" is reused, and never while a durable root still points at it:
//! checked at every crash point.

use std::sync::Arc;

use lamina_core::codec::{Decode, Encode};
use lamina_core::{Error, Result};
use lamina_storage::{
    Block, BlockType, FaultPlan, FreeList, OpenMode, Storage, StorageFile, Superblock,
    for_each_crash_point, read_block, write_block,
};

const OWNER: u64 = 1;
const BLOCK_BYTES: usize = 4096;

fn encode_root(version: u64, blocks: &[u64], free: &FreeList) -> Vec<u8> {
    let mut out = version.to_le_bytes().to_vec();
    out.push(blocks.len() as u8);
    for b in blocks {
        out.extend_from_slice(&b.to_le_bytes());
    }
    out.extend_from_slice(&free.encode());
    out
}

fn decode_root(payload: &[u8]) -> (u64, Vec<u64>, FreeList) {
    let version = u64::from_le_bytes(payload[..8].try_into().unwrap());
    let n = payload[8] as usize;
    let blocks =
        (0..n).map(|i| u64::from_le_bytes(payload[9 + 8 * i..17 + 8 * i].try_into().unwrap()));
    (version, blocks.collect(), FreeList::decode(&payload[9 + 8 * n..]).unwrap())
}

fn check_root(s: &Arc<dyn Storage>, data: &dyn StorageFile, payload: &[u8]) -> Result<u64> {
    let (version, blocks, free) = decode_root(payload);
    for &b in &blocks {
        assert!(!free.is_free(b), "root block {b} is on the free list");
        let block = read_block(data, &s.path_of("data"), BLOCK_BYTES, BlockType(16), OWNER, b)?;
        if block.payload != vec![version as u8; 100] {
            return Err(Error::corruption(s.path_of("data"), 0, format!("block {b} overwritten")));
        }
    }
    assert_eq!(free.used_blocks(), blocks.len() as u64);
    Ok(version)
}

/// Four merges, each writing two new blocks and freeing the previous two.
fn merges(s: &Arc<dyn Storage>) -> Result<FreeList> {
    let mut sb = Superblock::open(s.clone(), "SUPER", OWNER, BLOCK_BYTES)?;
    let data = s.open("data", OpenMode::Create)?;
    let mut free = FreeList::new(0, 64)?;
    let mut root: Vec<u64> = Vec::new();
    for version in 1..=4u64 {
        let new: Vec<u64> = (0..2).map(|_| free.allocate()).collect::<Result<_>>()?;
        for &b in &new {
            let payload = vec![version as u8; 100];
            write_block(&*data, &Block::new(BLOCK_BYTES, BlockType(16), OWNER, b, payload)?)?;
        }
        data.sync_data()?;
        for b in root {
            free.free(b)?;
        }
        root = new;
        sb.commit(&encode_root(version, &root, &free))?;
        free.commit_durable();
    }
    Ok(free)
}

#[test]
fn merged_space_is_reused_safely_at_every_crash_point() {
    for seed in 0..4 {
        let runs = for_each_crash_point(
            &FaultPlan::none().with_seed(seed).unsynced_survival(if seed % 2 == 0 {
                0
            } else {
                50
            }),
            |_| Ok(()),
            |s| {
                let free = merges(s)?;
                assert_eq!((free.end_block(), free.reused_total()), (4, 4), "blocks were reused");
                Ok(())
            },
            |s, _| {
                let sb = Superblock::open(s.clone(), "SUPER", OWNER, BLOCK_BYTES)?;
                if let Some(committed) = sb.current() {
                    let data = s.open("data", OpenMode::Existing)?;
                    assert_eq!(check_root(s, &*data, &committed.payload)?, committed.seq);
                }
                Ok(())
            },
        )
        .unwrap();
        assert!(runs.crash_points > 20, "{runs:?}");
    }
}
