//! `lamina serve`: the memcached text protocol (classic and meta commands) over any lamina
//! engine, so existing memcached clients, load generators and the nutcracker proxy work
//! unchanged. See `docs/server.md` for what is supported and how.

#![forbid(unsafe_code)]

pub mod config;
pub mod conn;
pub mod exec;
pub mod group_sync;
pub mod item;
pub mod protocol;
pub mod server;
pub mod shared;
pub mod state;
pub mod sweep;

pub use config::ServerConfig;
pub use server::{Running, ServerError, engine_durability, start};
