//! `lamina serve`: the memcached text protocol (classic and meta commands) over any lamina
//! engine, so existing memcached clients, load generators and the nutcracker proxy work
//! unchanged. See `docs/server.md` for what is supported and how.

pub mod protocol;
