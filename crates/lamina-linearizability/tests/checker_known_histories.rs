//! The checker on small histories whose answer is known: classic violations (a stale read
//! after a completed write, a lost update, two CAS from the same expected value both
//! succeeding, delete denying a completed put, ...) must be reported, and linearizable
//! histories with overlapping operations must pass.

use lamina_linearizability::{
    History, Limits, Op, Operation, Report, Ret, Verdict, check, checker::check_key,
};

/// An operation of client `client` on key 0 invoked at `invoke` and returning at `response`.
fn op(client: u32, invoke: u64, response: u64, op: Op, ret: Ret) -> Operation {
    Operation { client, key: 0, op, ret, invoke_ns: invoke, response_ns: response }
}

fn run(operations: Vec<Operation>) -> Report {
    let history = History { operations };
    history.validate().unwrap();
    check(&history, &Limits::default())
}

fn assert_linearizable(operations: Vec<Operation>) {
    let report = run(operations);
    assert_eq!(report.verdict, Verdict::Linearizable, "{report:?}");
}

fn assert_violation(operations: Vec<Operation>) {
    let report = run(operations);
    match report.verdict {
        Verdict::NotLinearizable(v) => println!("{v}"),
        other => panic!("expected a violation, got {other:?}"),
    }
}

fn cas(expected: Option<u64>, new: Option<u64>) -> Op {
    Op::Cas { expected, new }
}

#[test]
fn a_stale_read_after_a_completed_write_is_caught() {
    assert_violation(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 20, 30, Op::Get, Ret::Value(None)),
    ]);
    assert_violation(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(0, 20, 30, Op::Put(2), Ret::Done),
        op(1, 40, 50, Op::Get, Ret::Value(Some(1))),
    ]);
}

#[test]
fn a_read_concurrent_with_a_write_may_see_either_value() {
    for seen in [None, Some(1)] {
        assert_linearizable(vec![
            op(0, 0, 100, Op::Put(1), Ret::Done),
            op(1, 10, 20, Op::Get, Ret::Value(seen)),
        ]);
    }
}

#[test]
fn a_value_seen_cannot_be_unseen_while_the_write_is_still_running() {
    // Two reads inside one put: the first sees the new value, the second the old one.
    assert_violation(vec![
        op(0, 0, 100, Op::Put(1), Ret::Done),
        op(1, 10, 20, Op::Get, Ret::Value(Some(1))),
        op(1, 30, 40, Op::Get, Ret::Value(None)),
    ]);
    assert_linearizable(vec![
        op(0, 0, 100, Op::Put(1), Ret::Done),
        op(1, 10, 20, Op::Get, Ret::Value(None)),
        op(1, 30, 40, Op::Get, Ret::Value(Some(1))),
        op(2, 35, 60, Op::Get, Ret::Value(Some(1))),
    ]);
}

#[test]
fn a_lost_update_under_cas_is_caught() {
    // Sequential CAS from the same expected value: the second must see the first's value.
    assert_violation(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 20, 30, cas(Some(1), Some(2)), Ret::Swapped),
        op(2, 40, 50, cas(Some(1), Some(3)), Ret::Swapped),
    ]);
    // Sequential CAS refused with the wrong current value.
    assert_violation(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 20, 30, cas(Some(1), Some(2)), Ret::Swapped),
        op(2, 40, 50, cas(Some(1), Some(3)), Ret::Mismatch { current: Some(1) }),
    ]);
}

#[test]
fn two_concurrent_cas_from_the_same_value_cannot_both_succeed() {
    let base = op(0, 0, 10, Op::Put(1), Ret::Done);
    assert_violation(vec![
        base,
        op(1, 20, 50, cas(Some(1), Some(2)), Ret::Swapped),
        op(2, 25, 45, cas(Some(1), Some(3)), Ret::Swapped),
    ]);
    // One of them failing, seeing the other's value, is fine either way round.
    assert_linearizable(vec![
        base,
        op(1, 20, 50, cas(Some(1), Some(2)), Ret::Swapped),
        op(2, 25, 45, cas(Some(1), Some(3)), Ret::Mismatch { current: Some(2) }),
    ]);
    assert_linearizable(vec![
        base,
        op(1, 20, 50, cas(Some(1), Some(2)), Ret::Mismatch { current: Some(3) }),
        op(2, 25, 45, cas(Some(1), Some(3)), Ret::Swapped),
    ]);
    // Both creating an absent key: only one may.
    assert_violation(vec![
        op(1, 0, 50, cas(None, Some(2)), Ret::Swapped),
        op(2, 5, 45, cas(None, Some(3)), Ret::Swapped),
    ]);
}

#[test]
fn delete_denying_a_completed_put_is_caught() {
    assert_violation(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 20, 30, Op::Delete, Ret::Existed(false)),
    ]);
    // Two deletes of one value cannot both find it.
    assert_violation(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 20, 40, Op::Delete, Ret::Existed(true)),
        op(2, 25, 45, Op::Delete, Ret::Existed(true)),
    ]);
    assert_linearizable(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 20, 40, Op::Delete, Ret::Existed(true)),
        op(2, 25, 45, Op::Delete, Ret::Existed(false)),
        op(0, 50, 60, Op::Get, Ret::Value(None)),
    ]);
}

#[test]
fn a_read_of_a_value_nobody_wrote_is_caught() {
    assert_violation(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 5, 30, Op::Get, Ret::Value(Some(7))),
    ]);
}

#[test]
fn a_read_may_not_see_a_write_invoked_after_it_returned() {
    assert_violation(vec![
        op(1, 0, 10, Op::Get, Ret::Value(Some(1))),
        op(0, 20, 30, Op::Put(1), Ret::Done),
    ]);
}

#[test]
fn heavy_overlap_with_a_consistent_order_is_linearizable() {
    // Four clients, every operation overlapping every other; the order
    // put 1, cas 1->2, get 2, put 3, delete (existed), cas None->4, get 4 explains it.
    assert_linearizable(vec![
        op(0, 0, 100, Op::Put(1), Ret::Done),
        op(1, 1, 101, cas(Some(1), Some(2)), Ret::Swapped),
        op(2, 2, 102, Op::Get, Ret::Value(Some(4))),
        op(3, 3, 103, Op::Put(3), Ret::Done),
        op(4, 4, 104, Op::Delete, Ret::Existed(true)),
        op(5, 5, 105, cas(None, Some(4)), Ret::Swapped),
        op(6, 6, 106, Op::Get, Ret::Value(Some(2))),
    ]);
}

#[test]
fn equal_timestamps_count_as_concurrent() {
    // The clock cannot order a response and an invocation taken in the same nanosecond.
    assert_linearizable(vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 10, 20, Op::Get, Ret::Value(None)),
    ]);
}

#[test]
fn keys_are_checked_independently_and_the_bad_one_is_named() {
    let mut ops =
        vec![op(0, 0, 10, Op::Put(1), Ret::Done), op(1, 20, 30, Op::Get, Ret::Value(Some(1)))];
    ops.push(Operation { key: 5, ..op(0, 40, 50, Op::Put(2), Ret::Done) });
    ops.push(Operation { key: 5, ..op(1, 60, 70, Op::Get, Ret::Value(None)) });
    let report = run(ops);
    match report.verdict {
        Verdict::NotLinearizable(v) => {
            assert_eq!(v.key, 5);
            assert_eq!(v.linearized_max, 1);
            assert_eq!(v.stuck.len(), 1);
            assert_eq!(v.stuck[0].op, Op::Get);
        }
        other => panic!("expected a violation, got {other:?}"),
    }
    assert_eq!(report.keys, 2);
}

#[test]
fn past_a_limit_the_answer_is_undecided() {
    let ops: Vec<Operation> = (0..50)
        .map(|i| op(i, i.into(), 1000, Op::Put(i.into()), Ret::Done))
        .chain([op(99, 2000, 2010, Op::Get, Ret::Value(Some(1000)))])
        .collect();
    let tight = Limits { operations_per_key_max: 10, ..Limits::default() };
    assert!(matches!(check_key(0, &ops, &tight).0, Verdict::Undecided { .. }));
    // 50 concurrent puts then an impossible read: the search must try 2^50 subsets, so
    // it stops at the state bound instead of hanging.
    let bounded = Limits { states_visited_per_key_max: 10_000, ..Limits::default() };
    let (verdict, visited) = check_key(0, &ops, &bounded);
    assert!(matches!(verdict, Verdict::Undecided { .. }), "{verdict:?}");
    assert_eq!(visited, 10_001);
}

#[test]
fn a_client_overlapping_itself_is_a_malformed_history() {
    let history = History {
        operations: vec![
            op(0, 0, 10, Op::Put(1), Ret::Done),
            op(0, 5, 20, Op::Get, Ret::Value(Some(1))),
        ],
    };
    assert!(history.validate().is_err());
    let backwards = History { operations: vec![op(0, 10, 5, Op::Get, Ret::Value(None))] };
    assert!(backwards.validate().is_err());
}

#[test]
fn overlap_is_counted_per_key() {
    let mut ops = vec![
        op(0, 0, 10, Op::Put(1), Ret::Done),
        op(1, 5, 30, Op::Get, Ret::Value(Some(1))),
        op(2, 40, 50, Op::Get, Ret::Value(Some(1))),
        op(3, 50, 60, Op::Get, Ret::Value(Some(1))),
    ];
    // Overlapping in time but on another key: not counted.
    ops.push(Operation { key: 1, ..op(4, 0, 100, Op::Get, Ret::Value(None)) });
    assert_eq!(History { operations: ops }.overlapping_operations(), 4);
}
