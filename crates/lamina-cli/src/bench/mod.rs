//! `lamina bench`: the command-line front end of the `lamina-bench` library.

mod args;
mod command;
mod factory;

pub use args::BenchArgs;
pub use command::run;
pub use factory::AllEngines;
