//! `lamina bench`: the command-line front end of the `lamina-bench` library.

mod args;
mod command;
mod factory;
mod server;

pub use args::{AFTER_HELP, BenchArgs};
pub use command::{failure_message, run};
pub use factory::{DEFAULT_ENGINE_NAME, LaminaFactory};

/// Whether this build links the peer engines (feature `peers`). Without it they are not
/// listed, and `lamina bench` refuses a peer by name with an error naming the feature.
pub fn peers_built() -> bool {
    cfg!(feature = "peers")
}
