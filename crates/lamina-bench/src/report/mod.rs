//! Reports: the versioned JSON schema (`docs/bench-json.md`), the db_bench-style table and
//! the CSV timeline.

mod csv;
mod schema;
mod table;

pub use csv::{timeline_csv, write_timeline_csv};
pub use schema::{
    BenchParams, BenchReport, EngineSummary, FailedEngine, IoReport, RunReport, SCHEMA_NAME,
    SCHEMA_VERSION, SkippedEngine, TimelineReport,
};
pub use table::{fmt_bytes, render_comparison, render_table};

#[cfg(test)]
pub(crate) use schema::tests::sample_report;
