//! When an acknowledged write survives a crash.

use std::time::Duration;

/// The durability of writes, chosen when a database is opened.
///
/// After a crash, recovery yields a state that contains every write acknowledged under
/// `Sync`, reflects a prefix of the acknowledged history, and never a torn record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A write call returns only once its effect survives power loss.
    #[default]
    Sync,
    /// A write call returns at once; its effect survives power loss at most `max_delay`
    /// later.
    Buffered {
        /// Upper bound on the time from acknowledgement to durability.
        max_delay: Duration,
    },
    /// Writes survive a clean `close`; a crash may lose any suffix of them.
    None,
}

impl Durability {
    /// Longest `Buffered` delay accepted (one minute): beyond it, `None` says what is meant.
    pub const MAX_DELAY_MAX: Duration = Duration::from_mins(1);

    /// Checks the mode's parameters.
    pub fn validate(self) -> Result<(), crate::Error> {
        if let Durability::Buffered { max_delay } = self
            && (max_delay.is_zero() || max_delay > Self::MAX_DELAY_MAX)
        {
            return Err(crate::Error::option(
                "durability",
                format!(
                    "buffered max_delay must be in (0, {:?}], got {max_delay:?}",
                    Self::MAX_DELAY_MAX
                ),
            ));
        }
        Ok(())
    }
}
