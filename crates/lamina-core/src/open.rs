//! What an engine is told when it opens a database, and the names of the options that its
//! errors may advise (so every engine names them the way a user can set them).

/// Whether the database an engine opens must already exist. The facade (`lamina::Db`)
/// knows from its `LAMINA` metadata file; an engine opened on its own storage is told by its
/// caller.
///
/// With [`OpenIntent::MustExist`], an engine whose files are missing or cut short reports
/// [`crate::Error::Corruption`] naming the file, never an empty database: a database that
/// existed and lost its data is damage, not a fresh start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenIntent {
    /// The database may be new: missing files are created.
    #[default]
    CreateIfMissing,
    /// The database exists: missing or truncated files are corruption.
    MustExist,
}

impl OpenIntent {
    /// Whether the database must exist.
    pub fn must_exist(self) -> bool {
        self == OpenIntent::MustExist
    }
}

/// How a user sets the disk budget, for errors that advise raising it: the same name in
/// Rust (`lamina::Options`), C (`lamina_options`) and the `lamina` command line.
pub const DISK_BUDGET_OPTION: &str = "disk_budget_bytes (lamina::Options::disk_budget_bytes in \
                                      Rust, lamina_options.disk_budget_bytes in C, \
                                      --disk-budget-bytes on the lamina command line)";

/// How a user sets the memory limit, for errors that advise raising it.
pub const MEMORY_LIMIT_OPTION: &str = "memory_limit_bytes (lamina::Options::memory_limit_bytes \
                                       in Rust, lamina_options.memory_limit_bytes in C, \
                                       --memory-limit-bytes on the lamina command line)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_hints_name_every_front_end() {
        for (hint, stem) in
            [(DISK_BUDGET_OPTION, "disk_budget_bytes"), (MEMORY_LIMIT_OPTION, "memory_limit_bytes")]
        {
            assert!(hint.starts_with(stem), "{hint}");
            assert!(hint.contains(&format!("Options::{stem}")), "{hint}");
            assert!(hint.contains(&format!("lamina_options.{stem}")), "{hint}");
            assert!(hint.contains(&format!("--{}", stem.replace('_', "-"))), "{hint}");
        }
        assert!(OpenIntent::MustExist.must_exist() && !OpenIntent::default().must_exist());
    }
}
