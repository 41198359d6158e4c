//! The sequential specification every key must follow: a register holding an optional value,
//! with get, put, delete and compare-and-swap (`lamina_core::OrderedIndex`'s single-key
//! contract). Values are represented by the unique id of the write that produced them
//! (`crate::value`), so a state is `Option<ValueId>`.

/// The id of one write's value: unique per write in a history (`crate::value` encodes it in
/// the value's bytes).
pub type ValueId = u64;

/// The register's state: the value the key holds, `None` when absent.
pub type State = Option<ValueId>;

/// A single-key operation as invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `get(key)`.
    Get,
    /// `put(key, value)`.
    Put(ValueId),
    /// `delete(key)`.
    Delete,
    /// `compare_and_swap(key, expected, new)`; `None` as `expected` means "absent", as `new`
    /// means "delete".
    Cas {
        /// The value the key must hold for the swap.
        expected: Option<ValueId>,
        /// The value the key holds after a swap.
        new: Option<ValueId>,
    },
}

/// What an operation returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ret {
    /// A get's result.
    Value(Option<ValueId>),
    /// A put's acknowledgement.
    Done,
    /// A delete's result: whether the key existed.
    Existed(bool),
    /// A compare-and-swap that swapped.
    Swapped,
    /// A compare-and-swap that did not, with the value it found.
    Mismatch {
        /// The key's value when the swap was refused.
        current: Option<ValueId>,
    },
}

/// Applies `op` to `state` sequentially: the new state and what the operation returns.
pub fn apply(state: State, op: Op) -> (State, Ret) {
    match op {
        Op::Get => (state, Ret::Value(state)),
        Op::Put(v) => (Some(v), Ret::Done),
        Op::Delete => (None, Ret::Existed(state.is_some())),
        Op::Cas { expected, new } => {
            if state == expected {
                (new, Ret::Swapped)
            } else {
                (state, Ret::Mismatch { current: state })
            }
        }
    }
}

/// The state after `op` if it may return `ret` from `state`, `None` if it may not.
pub fn step(state: State, op: Op, ret: Ret) -> Option<State> {
    let (next, expected) = apply(state, op);
    (expected == ret).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_follows_the_register_contract() {
        assert_eq!(step(None, Op::Get, Ret::Value(None)), Some(None));
        assert_eq!(step(Some(1), Op::Get, Ret::Value(None)), None);
        assert_eq!(step(None, Op::Put(2), Ret::Done), Some(Some(2)));
        assert_eq!(step(Some(2), Op::Delete, Ret::Existed(true)), Some(None));
        assert_eq!(step(Some(2), Op::Delete, Ret::Existed(false)), None);
        assert_eq!(step(None, Op::Delete, Ret::Existed(false)), Some(None));
        let cas = Op::Cas { expected: Some(2), new: Some(3) };
        assert_eq!(step(Some(2), cas, Ret::Swapped), Some(Some(3)));
        assert_eq!(step(Some(4), cas, Ret::Swapped), None);
        assert_eq!(step(Some(4), cas, Ret::Mismatch { current: Some(4) }), Some(Some(4)));
        assert_eq!(step(Some(4), cas, Ret::Mismatch { current: Some(2) }), None);
        let cas_delete = Op::Cas { expected: Some(3), new: None };
        assert_eq!(step(Some(3), cas_delete, Ret::Swapped), Some(None));
        let cas_create = Op::Cas { expected: None, new: Some(5) };
        assert_eq!(step(None, cas_create, Ret::Swapped), Some(Some(5)));
    }
}
