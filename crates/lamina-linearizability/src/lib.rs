//! Linearizability of lamina's single-key operations (issue 20): record histories of
//! concurrent get, put, delete and compare-and-swap calls with their real-time intervals
//! (`recorder`) on any engine through `lamina::Db`, and check them against the sequential
//! register model (`model`) with a Wing-Gong/Lowe checker (`checker`).

pub mod checker;
pub mod engine;
pub mod history;
pub mod model;
pub mod recorder;
pub mod store;
pub mod value;

pub use checker::{Limits, Report, Verdict, Violation, check};
pub use engine::{Fault, RoundSummary, options_for, run_round};
pub use history::{History, Operation};
pub use model::{Op, Ret, State, ValueId};
pub use recorder::Workload;
pub use store::{NonAtomicCas, StaleReads, Store};
