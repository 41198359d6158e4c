//! Which workload to generate and with which parameters.

use std::{fmt, path::PathBuf, str::FromStr};

use lamina_core::{Error, Result};
use serde::{Deserialize, Serialize};

use super::{
    Contest, Gr, Insert, InsertQuery, Ltu, Tpcc, TraceReader, Workload, Ycsb, YcsbVariant,
};

/// The workloads `lamina bench` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// G_R of FD+FC (Remark A.7).
    Gr,
    /// G_T of FD+FC (Remark A.8): TPC-C NewOrder primary-key index.
    Tpcc,
    /// SIGMOD 2011 contest mix.
    Contest,
    /// LA-tree uniform workload with a lookup-to-update ratio.
    Ltu,
    /// NB-tree insert workload.
    Insert,
    /// NB-tree query workload: lookups of uniformly chosen keys of an `insert` preload.
    InsertQuery,
    /// YCSB core workload A (50 read / 50 update, zipfian).
    YcsbA,
    /// YCSB B (95 read / 5 update, zipfian).
    YcsbB,
    /// YCSB C (read only, zipfian).
    YcsbC,
    /// YCSB D (95 read / 5 insert, latest).
    YcsbD,
    /// YCSB E (95 scan / 5 insert, zipfian start, uniform length 1..=100).
    YcsbE,
    /// YCSB F (50 read / 50 read-modify-write, zipfian).
    YcsbF,
    /// A recorded trace.
    Replay,
}

impl WorkloadKind {
    /// Every workload, in listing order.
    pub const ALL: [WorkloadKind; 13] = [
        WorkloadKind::Gr,
        WorkloadKind::Tpcc,
        WorkloadKind::Contest,
        WorkloadKind::Ltu,
        WorkloadKind::Insert,
        WorkloadKind::InsertQuery,
        WorkloadKind::YcsbA,
        WorkloadKind::YcsbB,
        WorkloadKind::YcsbC,
        WorkloadKind::YcsbD,
        WorkloadKind::YcsbE,
        WorkloadKind::YcsbF,
        WorkloadKind::Replay,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Gr => "gr",
            WorkloadKind::Tpcc => "tpcc",
            WorkloadKind::Contest => "contest",
            WorkloadKind::Ltu => "ltu",
            WorkloadKind::Insert => "insert",
            WorkloadKind::InsertQuery => "insert-query",
            WorkloadKind::YcsbA => "ycsb-a",
            WorkloadKind::YcsbB => "ycsb-b",
            WorkloadKind::YcsbC => "ycsb-c",
            WorkloadKind::YcsbD => "ycsb-d",
            WorkloadKind::YcsbE => "ycsb-e",
            WorkloadKind::YcsbF => "ycsb-f",
            WorkloadKind::Replay => "replay",
        }
    }

    /// Default preload (records present before the measured requests).
    pub fn default_preload(self) -> u64 {
        match self {
            WorkloadKind::Insert | WorkloadKind::Replay | WorkloadKind::Tpcc => 0,
            WorkloadKind::Ltu => 200_000, // LA-tree section 6: a pre-constructed tree of 200K keys
            _ => 100_000,
        }
    }

    /// Default value size.
    pub fn default_value_bytes(self) -> usize {
        match self {
            WorkloadKind::Insert | WorkloadKind::InsertQuery => 128, // NB-tree section 6.1
            WorkloadKind::YcsbA
            | WorkloadKind::YcsbB
            | WorkloadKind::YcsbC
            | WorkloadKind::YcsbD
            | WorkloadKind::YcsbE
            | WorkloadKind::YcsbF => 100,
            _ => 8,
        }
    }

    /// Default key size.
    pub fn default_key_bytes(self) -> usize {
        if self == WorkloadKind::Tpcc { 4 } else { 8 }
    }

    /// Whether keys are [`crate::int_key`]s (then at least 8 bytes).
    pub fn has_integer_keys(self) -> bool {
        !matches!(
            self,
            WorkloadKind::Insert
                | WorkloadKind::InsertQuery
                | WorkloadKind::Tpcc
                | WorkloadKind::Replay
        )
    }

    /// Expected fraction of requests that are reads (`get`/`scan`), for splitting the
    /// open system's queue slots as FD+FC section 5 does (`W_l : (W_i + W_d)`); `None` when
    /// unknown in advance (a replayed trace).
    pub fn read_fraction(self, config: &WorkloadConfig) -> Option<f64> {
        Some(match self {
            WorkloadKind::Gr => config.mix.normalized()[0],
            WorkloadKind::Tpcc => 8.0 / 93.0,
            WorkloadKind::Ltu => config.ltu_percent / (100.0 + config.ltu_percent),
            WorkloadKind::Insert => 0.0,
            WorkloadKind::Contest | WorkloadKind::YcsbA | WorkloadKind::YcsbF => 0.5,
            WorkloadKind::YcsbB | WorkloadKind::YcsbD | WorkloadKind::YcsbE => 0.95,
            WorkloadKind::YcsbC | WorkloadKind::InsertQuery => 1.0,
            WorkloadKind::Replay => return None,
        })
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WorkloadKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        WorkloadKind::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<_> = WorkloadKind::ALL.iter().map(|k| k.name()).collect();
            Error::option(
                "workload",
                format!("unknown workload `{s}`; known: {}", names.join(", ")),
            )
        })
    }
}

/// G_R's lookup : insert : delete proportion `W_l : W_i : W_d` (FD+FC Remark A.7).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    /// Weights as given (any positive scale).
    pub weights: [f64; 3],
}

impl Mix {
    /// The weights scaled to sum to 1.
    pub fn normalized(&self) -> [f64; 3] {
        let sum: f64 = self.weights.iter().sum();
        self.weights.map(|w| w / sum)
    }
}

impl Default for Mix {
    fn default() -> Self {
        Mix { weights: [0.5, 0.25, 0.25] }
    }
}

impl FromStr for Mix {
    type Err = Error;

    /// `L:I:D` with non-negative integers or decimals, not all zero (`50:25:25`,
    /// `0.5:0.25:0.25`).
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::option("mix", format!("`{s}`: {why}; expected L:I:D, e.g. 50:25:25"))
        };
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 3 {
            return Err(bad("need exactly three weights"));
        }
        let mut weights = [0.0; 3];
        for (slot, part) in weights.iter_mut().zip(&parts) {
            let w: f64 = part.trim().parse().map_err(|_| bad("a weight is not a number"))?;
            if !w.is_finite() || w < 0.0 {
                return Err(bad("weights must be finite and non-negative"));
            }
            *slot = w;
        }
        if weights.iter().sum::<f64>() <= 0.0 {
            return Err(bad("weights are all zero"));
        }
        Ok(Mix { weights })
    }
}

/// Everything a generator needs. Build one with [`WorkloadConfig::new`] and adjust fields.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadConfig {
    /// Which workload.
    pub kind: WorkloadKind,
    /// Seed of every random choice: the same seed gives the same requests.
    pub seed: u64,
    /// Records loaded before the measured requests (ignored by `tpcc`, whose preload is 3
    /// orders per customer, and by `replay`, whose trace holds its preload).
    pub preload: u64,
    /// Key size (integer workloads: at least 8; `tpcc`: 4).
    pub key_bytes: usize,
    /// Value size.
    pub value_bytes: usize,
    /// `gr`: lookup : insert : delete.
    pub mix: Mix,
    /// `tpcc`: warehouses (1..=255, the 8 bits of the key).
    pub warehouses: u32,
    /// `ltu`: lookups per 100 updates.
    pub ltu_percent: f64,
    /// `replay`: the trace file.
    pub trace: Option<PathBuf>,
}

impl WorkloadConfig {
    /// The workload's defaults with `seed`.
    pub fn new(kind: WorkloadKind, seed: u64) -> Self {
        WorkloadConfig {
            kind,
            seed,
            preload: kind.default_preload(),
            key_bytes: kind.default_key_bytes(),
            value_bytes: kind.default_value_bytes(),
            mix: Mix::default(),
            warehouses: 1,
            ltu_percent: 100.0,
            trace: None,
        }
    }

    /// Checks the parameters against the workload's definition.
    pub fn validate(&self) -> Result<()> {
        use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
        if self.kind.has_integer_keys() && !(8..=KEY_BYTES_MAX).contains(&self.key_bytes) {
            return Err(Error::option(
                "key-bytes",
                format!(
                    "workload {} uses 8-byte integer keys; --key-bytes must be 8..={KEY_BYTES_MAX}, got {}",
                    self.kind, self.key_bytes
                ),
            ));
        }
        if self.kind == WorkloadKind::Tpcc && self.key_bytes != 4 {
            return Err(Error::option(
                "key-bytes",
                format!("tpcc keys are 4 bytes (FD+FC Remark A.8), got {}", self.key_bytes),
            ));
        }
        if !(1..=KEY_BYTES_MAX).contains(&self.key_bytes) {
            return Err(Error::option(
                "key-bytes",
                format!("must be 1..={KEY_BYTES_MAX}, got {}", self.key_bytes),
            ));
        }
        if self.value_bytes > VALUE_BYTES_MAX {
            return Err(Error::option(
                "value-bytes",
                format!("must be at most {VALUE_BYTES_MAX}, got {}", self.value_bytes),
            ));
        }
        if self.kind == WorkloadKind::Tpcc && !(1..=255).contains(&self.warehouses) {
            return Err(Error::option(
                "warehouses",
                format!("must be 1..=255 (8 bits of the key), got {}", self.warehouses),
            ));
        }
        if !(self.ltu_percent.is_finite() && self.ltu_percent >= 0.0) {
            return Err(Error::option(
                "ltu",
                format!("must be a non-negative percentage, got {}", self.ltu_percent),
            ));
        }
        let needs_records = matches!(
            self.kind,
            WorkloadKind::Contest
                | WorkloadKind::YcsbA
                | WorkloadKind::YcsbB
                | WorkloadKind::YcsbC
                | WorkloadKind::YcsbE
                | WorkloadKind::YcsbF
                | WorkloadKind::InsertQuery
        );
        if needs_records && self.preload == 0 {
            return Err(Error::option(
                "preload",
                format!(
                    "workload {} draws keys from the preloaded records; --preload must be at least 1",
                    self.kind
                ),
            ));
        }
        let keys_max = super::INSERT_QUERY_KEYS_BYTES_MAX / self.key_bytes.max(1) as u64;
        if self.kind == WorkloadKind::InsertQuery && self.preload > keys_max {
            return Err(Error::option(
                "preload",
                format!(
                    "insert-query keeps its preloaded keys in memory ({} bytes at most); with \
                     {}-byte keys --preload must be at most {keys_max}",
                    super::INSERT_QUERY_KEYS_BYTES_MAX,
                    self.key_bytes
                ),
            ));
        }
        if self.preload > PRELOAD_MAX {
            return Err(Error::option(
                "preload",
                format!("at most {PRELOAD_MAX}, got {}", self.preload),
            ));
        }
        if (self.kind == WorkloadKind::Replay) != self.trace.is_some() {
            return Err(Error::option(
                "trace",
                "--trace FILE goes with --workload replay, and replay needs it",
            ));
        }
        Ok(())
    }

    /// The generator (or trace reader) for this configuration.
    pub fn build(&self) -> Result<Box<dyn Workload>> {
        self.validate()?;
        Ok(match self.kind {
            WorkloadKind::Gr => Box::new(Gr::new(self)),
            WorkloadKind::Tpcc => Box::new(Tpcc::new(self)),
            WorkloadKind::Contest => Box::new(Contest::new(self)),
            WorkloadKind::Ltu => Box::new(Ltu::new(self)),
            WorkloadKind::Insert => Box::new(Insert::new(self)),
            WorkloadKind::InsertQuery => Box::new(InsertQuery::new(self)?),
            WorkloadKind::YcsbA => Box::new(Ycsb::new(self, YcsbVariant::A)),
            WorkloadKind::YcsbB => Box::new(Ycsb::new(self, YcsbVariant::B)),
            WorkloadKind::YcsbC => Box::new(Ycsb::new(self, YcsbVariant::C)),
            WorkloadKind::YcsbD => Box::new(Ycsb::new(self, YcsbVariant::D)),
            WorkloadKind::YcsbE => Box::new(Ycsb::new(self, YcsbVariant::E)),
            WorkloadKind::YcsbF => Box::new(Ycsb::new(self, YcsbVariant::F)),
            WorkloadKind::Replay => {
                Box::new(TraceReader::open(self.trace.as_deref().expect("validated"))?)
            }
        })
    }
}

/// Largest preload (bounds the generators' key-set memory).
pub const PRELOAD_MAX: u64 = 1 << 30;
