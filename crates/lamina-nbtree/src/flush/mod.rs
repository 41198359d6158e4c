//! The flush work of a full root d-tree: its inputs (`source`), one unit of it (`rewrite`)
//! and the cascade (`job`).

pub mod job;
pub mod rewrite;
pub mod source;
pub mod underflow;

pub use job::{Event, FlushJob, Stepped, work_bound_pages};
pub use rewrite::{Output, Rewrite, Split, WriterContext};
