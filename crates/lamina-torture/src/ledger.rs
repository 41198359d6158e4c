//! The ledger: the child prints `B <thread> <op>` before it issues an operation and
//! `A <thread>` once the operation is acknowledged (`Durability::Sync`: durable), one line
//! each, flushed at once. A line the kill cut short is ignored (its operation was not yet
//! issued, or its acknowledgement is not known: the operation stays in flight).
//!
//! Operations (keys are ASCII without spaces, versions decimal, `-` for "absent"):
//! `P key version` put, `D key` delete, `C key version` compare-and-swap from the value
//! the thread read just before to this version, `W n key=version|- ...` a batch.

/// What one key becomes: a version's value, or absent.
pub type Outcome = Option<u64>;

/// An operation as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `put(key, value(key, version))`.
    Put {
        /// The key written.
        key: Vec<u8>,
        /// The version whose value was written (`value(key, version)`).
        version: u64,
    },
    /// `delete(key)`.
    Delete {
        /// The key deleted.
        key: Vec<u8>,
    },
    /// `compare_and_swap(key, <the value just read>, value(key, version))`.
    Cas {
        /// The key swapped.
        key: Vec<u8>,
        /// The version whose value was swapped in.
        version: u64,
    },
    /// `write_batch` of these keys' outcomes, all or nothing.
    Batch {
        /// Each key of the batch and what it becomes.
        writes: Vec<(Vec<u8>, Outcome)>,
    },
}

impl Op {
    /// The keys it changes and what each becomes.
    pub fn effects(&self) -> Vec<(Vec<u8>, Outcome)> {
        match self {
            Op::Put { key, version } | Op::Cas { key, version } => {
                vec![(key.clone(), Some(*version))]
            }
            Op::Delete { key } => vec![(key.clone(), None)],
            Op::Batch { writes } => writes.clone(),
        }
    }

    /// The ledger text.
    pub fn encode(&self) -> String {
        let text = |key: &[u8]| String::from_utf8(key.to_vec()).expect("torture keys are ASCII");
        match self {
            Op::Put { key, version } => format!("P {} {version}", text(key)),
            Op::Delete { key } => format!("D {}", text(key)),
            Op::Cas { key, version } => format!("C {} {version}", text(key)),
            Op::Batch { writes } => {
                use std::fmt::Write as _;
                let mut line = format!("W {}", writes.len());
                for (key, outcome) in writes {
                    let _ = match outcome {
                        Some(version) => write!(line, " {}={version}", text(key)),
                        None => write!(line, " {}=-", text(key)),
                    };
                }
                line
            }
        }
    }

    /// Parses [`Op::encode`]'s text.
    pub fn decode(text: &str) -> Option<Op> {
        let mut words = text.split(' ');
        let op = match words.next()? {
            "P" => Op::Put { key: words.next()?.into(), version: words.next()?.parse().ok()? },
            "D" => Op::Delete { key: words.next()?.into() },
            "C" => Op::Cas { key: words.next()?.into(), version: words.next()?.parse().ok()? },
            "W" => {
                let n: usize = words.next()?.parse().ok()?;
                let mut writes = Vec::with_capacity(n.min(64));
                for _ in 0..n {
                    let (key, outcome) = words.next()?.split_once('=')?;
                    let outcome = if outcome == "-" { None } else { Some(outcome.parse().ok()?) };
                    writes.push((key.into(), outcome));
                }
                Op::Batch { writes }
            }
            _ => return None,
        };
        words.next().is_none().then_some(op)
    }
}

/// A ledger line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Thread `thread` is about to issue `op`.
    Begin {
        /// The writing thread's number.
        thread: u64,
        /// The operation it is about to issue.
        op: Op,
    },
    /// Thread `thread`'s last begun operation was acknowledged.
    Ack {
        /// The writing thread's number.
        thread: u64,
    },
}

impl Line {
    /// The ledger text (without the newline).
    pub fn encode(&self) -> String {
        match self {
            Line::Begin { thread, op } => format!("B {thread} {}", op.encode()),
            Line::Ack { thread } => format!("A {thread}"),
        }
    }

    /// Parses a complete line; `None` for anything else.
    pub fn decode(text: &str) -> Option<Line> {
        let (kind, rest) = text.split_once(' ')?;
        match kind {
            "A" => Some(Line::Ack { thread: rest.parse().ok()? }),
            "B" => {
                let (thread, op) = rest.split_once(' ')?;
                Some(Line::Begin { thread: thread.parse().ok()?, op: Op::decode(op)? })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_roundtrip_and_garbage_is_refused() {
        let ops = [
            Op::Put { key: b"t01-k00002".to_vec(), version: 7 },
            Op::Delete { key: b"t01-k00003".to_vec() },
            Op::Cas { key: b"t01-k00004".to_vec(), version: 9 },
            Op::Batch { writes: vec![(b"a".to_vec(), Some(1)), (b"b".to_vec(), None)] },
        ];
        for op in ops {
            for line in [Line::Begin { thread: 3, op: op.clone() }, Line::Ack { thread: 3 }] {
                assert_eq!(Line::decode(&line.encode()), Some(line.clone()));
                let text = line.encode();
                assert_ne!(Line::decode(&text[..text.len() - 1]).as_ref(), Some(&line));
            }
        }
        assert_eq!(Line::decode("B 1 W 2 a=1"), None);
        assert_eq!(Line::decode("X 1"), None);
    }
}
