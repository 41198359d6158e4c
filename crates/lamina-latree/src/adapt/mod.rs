//! ADAPT, the online algorithm deciding when to empty a buffer (LA-tree section 2.2), the
//! linear cost model it is analysed under (section 2.2.1) and the offline optimum `OPT` it is
//! 2-competitive against (Theorem 1).

mod linear;
mod opt;
mod register;
mod state;

pub use linear::{BufferOp, LinearCostModel, ScheduleCost, run_adapt, schedule_cost};
pub use opt::{OPT_CELLS_MAX, optimal_schedule};
pub use register::{LookupCosts, Register, SavingsRule};
pub use state::{AdaptOptions, AdaptState, Decision, EmptyReason, REGISTERS_MAX};
