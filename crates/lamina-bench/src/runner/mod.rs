//! Drives an engine with a workload: preload, warm-up, then the measured requests, in a
//! closed loop (`closed`) or as the open system of FD+FC section 5 (`open`).

mod closed;
mod config;
mod exec;
mod open;
mod recorder;
mod run;
mod source;

pub use config::{RunConfig, RunnerKind};
pub use exec::{Scratch, execute};
pub use recorder::{KindHistograms, Measurements, ThreadRecorder};
pub use run::{RunResult, run_workload};
pub use source::OpSource;
