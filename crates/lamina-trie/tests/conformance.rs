//! The conformance kit against the `trie` engine: volatile with the paper's k' = 4, and
//! with k' = 1 (deep, binary trees: many expansions and long paths) and k' = 8.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use lamina_core::Result;
use lamina_core::testkit::Subject;
use lamina_trie::{TrieEngine, TrieOptions};

/// A volatile trie with the given k'.
struct VolatileSubject {
    prefix_bits: u32,
}

impl Subject for VolatileSubject {
    type Index = TrieEngine;

    fn open(&mut self) -> Result<TrieEngine> {
        TrieEngine::volatile(TrieOptions::default().prefix_bits(self.prefix_bits))
    }

    fn durable(&self) -> bool {
        false
    }
}

lamina_core::conformance_tests!(super::VolatileSubject { prefix_bits: 4 });

mod binary {
    lamina_core::conformance_tests!(super::super::VolatileSubject { prefix_bits: 1 });
}

mod byte_wide {
    lamina_core::conformance_tests!(super::super::VolatileSubject { prefix_bits: 8 });
}
