//! `fptree`: the Fingerprinting Persistent Tree of Oukid, Lasperas, Nica, Willhalm and Lehner
//! (SIGMOD 2016, `../shared/papers/fptree-hybrid-scm-dram-btree.md`): leaves in persistent
//! memory (unsorted, a validity bitmap written p-atomically, one-byte fingerprints, micro-logs
//! for splits and deletes), inner nodes in DRAM rebuilt from the leaves on recovery, and
//! selective concurrency (optimistic version locks on the inner nodes in place of HTM, leaf
//! locks for the persistent part).
//!
//! Built so far (issue 19, in progress): the contract of the DRAM inner nodes (`inner`), with
//! a reference implementation under one reader-writer lock.

pub mod inner;
