//! Model-based property tests: random programs of every operation, checked step by step
//! against a `BTreeMap` oracle, with close/reopen and crash steps where supported.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::subject::{Subject, dump};
use crate::{CasOutcome, KeyRange, OrderedIndex, WriteBatch};

/// One step of a generated program.
#[derive(Debug, Clone)]
pub enum Step {
    /// `get`.
    Get(Vec<u8>),
    /// `put`.
    Put(Vec<u8>, Vec<u8>),
    /// `delete`.
    Delete(Vec<u8>),
    /// `compare_and_swap`; `expect_current` makes the expectation the oracle's value.
    Cas {
        /// The key.
        key: Vec<u8>,
        /// Use the oracle's current value as the expectation (a CAS that should succeed).
        expect_current: bool,
        /// The expected value (`None`: absent), unless `expect_current`.
        expected: Option<Vec<u8>>,
        /// The new value (`None`: delete).
        new: Option<Vec<u8>>,
    },
    /// `scan` with the given bounds and limit.
    Scan {
        /// The lower bound.
        start: Bound<Vec<u8>>,
        /// The upper bound.
        end: Bound<Vec<u8>>,
        /// The most entries to read.
        limit: usize,
    },
    /// `scan_rev` with the given bounds and limit.
    ScanRev {
        /// The lower bound.
        start: Bound<Vec<u8>>,
        /// The upper bound.
        end: Bound<Vec<u8>>,
        /// The most entries to read.
        limit: usize,
    },
    /// `scan` (or `scan_rev` when `reverse`) of [`KeyRange::prefix`].
    Prefix {
        /// The prefix every key read starts with.
        prefix: Vec<u8>,
        /// The most entries to read.
        limit: usize,
        /// Greatest keys first.
        reverse: bool,
    },
    /// `write_batch` of puts (`Some`) and deletes (`None`).
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// Close and reopen (durable subjects only; otherwise a no-op).
    Reopen,
    /// Simulated crash and reopen (subjects that support it; otherwise a no-op).
    Crash,
}

/// Keys from a small alphabet so that programs collide, share prefixes and hit 0x00/0xFF
/// and the empty key (about one key in 16).
fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(prop::sample::select(vec![0x00u8, b'a', b'b', 0xff]), 0..4),
        1 => proptest::collection::vec(any::<u8>(), 1..40),
    ]
}

fn value_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..12),
        1 => proptest::collection::vec(any::<u8>(), 0..600),
    ]
}

fn bound_strategy() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        key_strategy().prop_map(Bound::Included),
        key_strategy().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => key_strategy().prop_map(Step::Get),
        10 => (key_strategy(), value_strategy()).prop_map(|(k, v)| Step::Put(k, v)),
        4 => key_strategy().prop_map(Step::Delete),
        4 => (key_strategy(), any::<bool>(), proptest::option::of(value_strategy()),
              proptest::option::of(value_strategy()))
            .prop_map(|(key, expect_current, expected, new)| Step::Cas { key, expect_current, expected, new }),
        3 => (bound_strategy(), bound_strategy(), 0usize..20)
            .prop_map(|(start, end, limit)| Step::Scan { start, end, limit }),
        3 => (bound_strategy(), bound_strategy(), 0usize..20)
            .prop_map(|(start, end, limit)| Step::ScanRev { start, end, limit }),
        2 => (proptest::collection::vec(prop::sample::select(vec![0x00u8, b'a', 0xff]), 0..3),
              0usize..20, any::<bool>())
            .prop_map(|(prefix, limit, reverse)| Step::Prefix { prefix, limit, reverse }),
        2 => proptest::collection::vec((key_strategy(), proptest::option::of(value_strategy())), 0..8)
            .prop_map(Step::Batch),
        1 => Just(Step::Reopen),
        1 => Just(Step::Crash),
    ]
}

fn cases() -> u32 {
    std::env::var("LAMINA_MODEL_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(48)
}

/// Random programs of up to 120 steps; after each step the engine's answer must equal the
/// oracle's, and at the end (and after every reopen or crash) the whole content must.
/// `LAMINA_MODEL_CASES` sets the number of programs (default 48).
pub fn model_random_sequences<S: Subject>(make: &impl Fn() -> S) {
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let programs = proptest::collection::vec(step_strategy(), 1..120);
    let result = runner.run(&programs, |program| run_program(make(), &program));
    if let Err(err) = result {
        panic!("model-based test failed: {err}");
    }
}

/// The oracle's answer to a scan (`reverse`: to a reverse scan) of `range`.
fn oracle_scan(
    oracle: &BTreeMap<Vec<u8>, Vec<u8>>,
    range: &KeyRange,
    limit: usize,
    reverse: bool,
) -> Vec<crate::Entry> {
    let inside = oracle.iter().filter(|(k, _)| range.contains(k));
    let pairs: Vec<_> = if reverse { inside.rev().collect() } else { inside.collect() };
    pairs.into_iter().take(limit).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn check(cond: bool, what: impl FnOnce() -> String) -> Result<(), TestCaseError> {
    if cond { Ok(()) } else { Err(TestCaseError::fail(what())) }
}

#[allow(clippy::too_many_lines)] // one match arm per operation reads best as one function
fn run_program<S: Subject>(mut subject: S, program: &[Step]) -> Result<(), TestCaseError> {
    let program = if subject.accepts_empty_key() {
        program.to_vec()
    } else {
        program.iter().map(without_empty_key).collect()
    };
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut db = Some(subject.open().map_err(|e| TestCaseError::fail(e.to_string()))?);
    for (i, step) in program.iter().enumerate() {
        let index = db.as_ref().unwrap();
        match step {
            Step::Get(k) => {
                let got = index.get(k).unwrap();
                check(got.as_ref() == oracle.get(k), || format!("step {i} {step:?}: got {got:?}"))?;
            }
            Step::Put(k, v) => {
                index.put(k, v).unwrap();
                oracle.insert(k.clone(), v.clone());
            }
            Step::Delete(k) => {
                let existed = index.delete(k).unwrap();
                check(existed == oracle.remove(k).is_some(), || format!("step {i} {step:?}"))?;
            }
            Step::Cas { key, expect_current, expected, new } => {
                let expected =
                    if *expect_current { oracle.get(key).cloned() } else { expected.clone() };
                let current = oracle.get(key).cloned();
                let outcome =
                    index.compare_and_swap(key, expected.as_deref(), new.as_deref()).unwrap();
                if current == expected {
                    check(outcome == CasOutcome::Swapped, || format!("step {i}: {outcome:?}"))?;
                    match new {
                        Some(v) => oracle.insert(key.clone(), v.clone()),
                        None => oracle.remove(key),
                    };
                } else {
                    check(outcome == CasOutcome::Mismatch { current: current.clone() }, || {
                        format!("step {i} {step:?}: {outcome:?}, oracle has {current:?}")
                    })?;
                }
            }
            Step::Scan { start, end, limit } => {
                let range = KeyRange { start: start.clone(), end: end.clone() };
                let got = index.scan(&range, *limit).unwrap();
                let expect: Vec<_> = oracle
                    .iter()
                    .filter(|(k, _)| range.contains(k))
                    .take(*limit)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                check(got == expect, || format!("step {i} {step:?}: got {got:?}"))?;
            }
            Step::ScanRev { start, end, limit } => {
                let range = KeyRange { start: start.clone(), end: end.clone() };
                let got = index.scan_rev(&range, *limit).unwrap();
                let expect = oracle_scan(&oracle, &range, *limit, true);
                check(got == expect, || format!("step {i} {step:?}: got {got:?}"))?;
            }
            Step::Prefix { prefix, limit, reverse } => {
                let range = KeyRange::prefix(prefix);
                let got = if *reverse {
                    index.scan_rev(&range, *limit).unwrap()
                } else {
                    index.scan(&range, *limit).unwrap()
                };
                let expect: Vec<_> = oracle_scan(&oracle, &KeyRange::all(), usize::MAX, *reverse)
                    .into_iter()
                    .filter(|(k, _)| k.starts_with(prefix))
                    .take(*limit)
                    .collect();
                check(got == expect, || format!("step {i} {step:?}: got {got:?}"))?;
            }
            Step::Batch(ops) => {
                let mut batch = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(v) => {
                            batch.put(k.clone(), v.clone());
                            oracle.insert(k.clone(), v.clone());
                        }
                        None => {
                            batch.delete(k.clone());
                            oracle.remove(k);
                        }
                    }
                }
                index.write_batch(&batch).unwrap();
            }
            Step::Reopen => {
                if subject.durable() {
                    let reopened = subject.close_and_reopen(db.take().unwrap()).unwrap();
                    db = Some(reopened);
                    let content = dump(db.as_ref().unwrap());
                    check(content == oracle, || format!("step {i}: content differs after reopen"))?;
                }
            }
            Step::Crash => {
                if subject.can_crash() {
                    subject.crash(db.take().unwrap());
                    db = Some(subject.open().map_err(|e| TestCaseError::fail(e.to_string()))?);
                    let content = dump(db.as_ref().unwrap());
                    check(content == oracle, || format!("step {i}: content differs after crash"))?;
                }
            }
        }
    }
    let index = db.take().unwrap();
    let content = dump(&index);
    check(content == oracle, || "final content differs from the oracle".to_string())?;
    index.close().unwrap();
    Ok(())
}

/// The step with every written or read empty key replaced by `[0x00]`, for subjects that
/// refuse the empty key (scan bounds keep it: it is a valid bound everywhere).
fn without_empty_key(step: &Step) -> Step {
    let fix = |k: &Vec<u8>| if k.is_empty() { vec![0x00] } else { k.clone() };
    match step {
        Step::Get(k) => Step::Get(fix(k)),
        Step::Put(k, v) => Step::Put(fix(k), v.clone()),
        Step::Delete(k) => Step::Delete(fix(k)),
        Step::Cas { key, expect_current, expected, new } => Step::Cas {
            key: fix(key),
            expect_current: *expect_current,
            expected: expected.clone(),
            new: new.clone(),
        },
        Step::Batch(ops) => Step::Batch(ops.iter().map(|(k, v)| (fix(k), v.clone())).collect()),
        other => other.clone(),
    }
}
