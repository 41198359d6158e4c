//! `lamina.open`'s arguments turned into `lamina::Options`, in one place so that a change to
//! the Rust API's options touches only [`options_for`].

use std::time::Duration;

use lamina::{Durability, EngineKind, Options};
use pyo3::prelude::*;

use crate::errors::{invalid_argument, to_py};

/// What `lamina.open` accepts besides the path.
#[derive(Debug, Clone, Copy)]
pub struct OpenArgs {
    pub engine: EngineKind,
    pub durability: Durability,
    pub create_if_missing: bool,
    pub memory_limit_bytes: u64,
    pub disk_budget_bytes: u64,
}

impl OpenArgs {
    /// Parses the names given to `lamina.open`.
    pub fn parse(
        engine: &str,
        durability: &str,
        max_delay_ms: u64,
        create_if_missing: bool,
        memory_limit_bytes: u64,
        disk_budget_bytes: u64,
    ) -> PyResult<OpenArgs> {
        let engine = EngineKind::from_name(engine).map_err(to_py)?;
        let durability = match durability {
            "sync" => Durability::Sync,
            "buffered" => Durability::Buffered { max_delay: Duration::from_millis(max_delay_ms) },
            "none" => Durability::None,
            other => {
                return Err(invalid_argument(format!(
                    "option `durability`: unknown durability `{other}`; known: sync, buffered, \
                     none"
                )));
            }
        };
        Ok(OpenArgs {
            engine,
            durability,
            create_if_missing,
            memory_limit_bytes,
            disk_budget_bytes,
        })
    }
}

/// The Rust API's options for `args`; everything not settable from Python takes the Rust
/// API's default.
pub fn options_for(args: &OpenArgs) -> Options {
    Options {
        engine: args.engine,
        durability: args.durability,
        create_if_missing: args.create_if_missing,
        memory_limit_bytes: args.memory_limit_bytes,
        disk_budget_bytes: args.disk_budget_bytes,
        ..Options::default()
    }
}
