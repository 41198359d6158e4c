//! The engines behind the API, by name.

use lamina_core::Error;

/// An index design. Every engine implements the same [`lamina_core::OrderedIndex`] contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EngineKind {
    /// `mem`: a concurrent in-memory B-tree map; the test oracle and benchmark baseline.
    Mem,
}

impl EngineKind {
    /// Every engine this build contains.
    pub const ALL: &'static [EngineKind] = &[EngineKind::Mem];

    /// The engine's name as used on the command line and in the metadata file.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Mem => "mem",
        }
    }

    /// One line describing the engine.
    pub fn description(self) -> &'static str {
        match self {
            EngineKind::Mem => {
                "in-memory ordered map (RwLock<BTreeMap>); snapshot on clean close; the \
                 oracle of the conformance tests and the baseline of the benchmarks"
            }
        }
    }

    /// The engine called `name`, or an error listing the names.
    pub fn from_name(name: &str) -> Result<Self, Error> {
        EngineKind::ALL.iter().copied().find(|k| k.name() == name).ok_or_else(|| {
            let names: Vec<_> = EngineKind::ALL.iter().map(|k| k.name()).collect();
            Error::option("engine", format!("unknown engine `{name}`; known: {}", names.join(", ")))
        })
    }
}

impl Default for EngineKind {
    /// The default engine. DESIGN.md names `fdtree`; until it lands, `mem`.
    fn default() -> Self {
        EngineKind::Mem
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        for kind in EngineKind::ALL {
            assert_eq!(EngineKind::from_name(kind.name()).unwrap(), *kind);
        }
        let err = EngineKind::from_name("nope").unwrap_err();
        assert!(err.to_string().contains("known: mem"), "{err}");
    }
}
