//! Options of the trie engine.

use lamina_core::{Error, Result};

use crate::fragment::PREFIX_BITS_ALLOWED;

/// How to build a [`crate::TrieEngine`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrieOptions {
    /// k': bits of the key consumed per tree level; each inner node has `2^k'` buckets
    /// (paper section 2). One of 1, 2, 4, 8. Default 4, the paper's choice.
    pub prefix_bits: u32,
}

impl Default for TrieOptions {
    fn default() -> Self {
        TrieOptions { prefix_bits: 4 }
    }
}

impl TrieOptions {
    /// Sets k'.
    pub fn prefix_bits(mut self, bits: u32) -> Self {
        self.prefix_bits = bits;
        self
    }

    /// Checks every option; an engine refuses to open with invalid options.
    pub fn validate(&self) -> Result<()> {
        if !PREFIX_BITS_ALLOWED.contains(&self.prefix_bits) {
            return Err(Error::option(
                "prefix_bits",
                format!("{} is not one of {PREFIX_BITS_ALLOWED:?}", self.prefix_bits),
            ));
        }
        Ok(())
    }
}
