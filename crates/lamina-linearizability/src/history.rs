//! A recorded history: every operation with the client that ran it, the key, what it returned
//! and its real-time interval (nanoseconds since the recording's start, taken just before the
//! call and just after it returned).

use std::collections::BTreeMap;
use std::fmt;

use crate::model::{Op, Ret, ValueId};

/// One completed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// The client (thread) that ran it; a client runs one operation at a time.
    pub client: u32,
    /// The key, as an index into the recording's keys.
    pub key: u32,
    /// What was invoked.
    pub op: Op,
    /// What it returned.
    pub ret: Ret,
    /// When it was invoked (taken before the call).
    pub invoke_ns: u64,
    /// When it returned (taken after the call).
    pub response_ns: u64,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Get => "get".to_string(),
            Op::Put(v) => format!("put({})", ValueName(Some(v))),
            Op::Delete => "delete".to_string(),
            Op::Cas { expected, new } => {
                format!("cas({} -> {})", ValueName(expected), ValueName(new))
            }
        };
        let ret = match self.ret {
            Ret::Value(v) => ValueName(v).to_string(),
            Ret::Done => "ok".to_string(),
            Ret::Existed(existed) => format!("existed={existed}"),
            Ret::Swapped => "swapped".to_string(),
            Ret::Mismatch { current } => format!("mismatch(current {})", ValueName(current)),
        };
        write!(
            f,
            "client {} key {} [{}..{} ns] {op} -> {ret}",
            self.client, self.key, self.invoke_ns, self.response_ns
        )
    }
}

/// A value id as the recorder builds it (client + 1 in the bits from 40 up, the client's
/// write count below): `c3#17` is client 3's 17th value, `absent` is no value.
#[derive(Debug, Clone, Copy)]
pub struct ValueName(pub Option<ValueId>);

impl fmt::Display for ValueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => write!(f, "absent"),
            Some(v) if v >> 40 > 0 => write!(f, "c{}#{}", (v >> 40) - 1, v & ((1 << 40) - 1)),
            Some(v) => write!(f, "v{v}"),
        }
    }
}

/// The operations of one recording, in any order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Every completed operation.
    pub operations: Vec<Operation>,
}

impl History {
    /// Checks the history is well formed: every interval ends after it starts and each
    /// client's operations do not overlap (a client waits for each call). A violation is a
    /// recorder bug, not an engine's.
    pub fn validate(&self) -> Result<(), String> {
        let mut by_client: BTreeMap<u32, Vec<&Operation>> = BTreeMap::new();
        for op in &self.operations {
            if op.response_ns < op.invoke_ns {
                return Err(format!("returns before it is invoked: {op}"));
            }
            by_client.entry(op.client).or_default().push(op);
        }
        for ops in by_client.values_mut() {
            ops.sort_by_key(|op| op.invoke_ns);
            for pair in ops.windows(2) {
                if pair[1].invoke_ns < pair[0].response_ns {
                    return Err(format!("one client, overlapping: {} and {}", pair[0], pair[1]));
                }
            }
        }
        Ok(())
    }

    /// The sub-history of each key (linearizability is compositional: a history is
    /// linearizable iff each object's sub-history is), each sorted by invocation time.
    pub fn by_key(&self) -> BTreeMap<u32, Vec<Operation>> {
        let mut keys: BTreeMap<u32, Vec<Operation>> = BTreeMap::new();
        for op in &self.operations {
            keys.entry(op.key).or_default().push(*op);
        }
        for ops in keys.values_mut() {
            ops.sort_by_key(|op| (op.invoke_ns, op.response_ns));
        }
        keys
    }

    /// How many operations overlap in real time with another operation on the same key
    /// (a measure of how much the checker had to decide: a history without overlap has a
    /// single candidate order).
    pub fn overlapping_operations(&self) -> usize {
        let mut overlapping = 0;
        for ops in self.by_key().values() {
            let mut response_max_before = None;
            for (i, op) in ops.iter().enumerate() {
                let with_earlier = response_max_before.is_some_and(|r| op.invoke_ns <= r);
                let with_later =
                    ops.get(i + 1).is_some_and(|next| next.invoke_ns <= op.response_ns);
                overlapping += usize::from(with_earlier || with_later);
                response_max_before = response_max_before.max(Some(op.response_ns));
            }
        }
        overlapping
    }
}
