//! Which engines a comparison runs, by the names they are listed under.

use lamina_core::{Error, Result};

use crate::{EngineFactory, EngineInfo, EngineParams, report::SkippedEngine};

/// Resolves `names` against `factory`: each name (or alias, resolved to the listed name, so
/// reports always show that one) must exist, appear once, and accept `params` (else an
/// error, before anything runs). With no names: every listed engine that accepts `params`,
/// the others returned as skipped with their reason.
pub fn resolve_engines(
    factory: &dyn EngineFactory,
    names: &[String],
    params: &EngineParams,
) -> Result<(Vec<String>, Vec<SkippedEngine>)> {
    let listed = factory.engines();
    let mut skipped = Vec::new();
    let mut engines: Vec<String> = Vec::new();
    if names.is_empty() {
        for info in listed {
            match factory.check(&info.name, params) {
                Ok(()) => engines.push(info.name),
                Err(e) => skipped.push(SkippedEngine { engine: info.name, reason: e.to_string() }),
            }
        }
        if engines.is_empty() {
            let reasons: Vec<String> =
                skipped.iter().map(|s| format!("{}: {}", s.engine, s.reason)).collect();
            return Err(Error::option(
                "engines",
                format!("no engine accepts these settings ({})", reasons.join("; ")),
            ));
        }
        return Ok((engines, skipped));
    }
    for given in names {
        let Some(info) = listed.iter().find(|e| e.answers_to(given)) else {
            let known: Vec<String> = listed.iter().map(EngineInfo::display_name).collect();
            return Err(Error::option(
                "engines",
                format!("unknown engine `{given}`; known: {}", known.join(", ")),
            ));
        };
        let name = &info.name;
        if engines.contains(name) {
            let same = if given == name { String::new() } else { format!(" (as `{given}`)") };
            return Err(Error::option("engines", format!("engine `{name}` is listed twice{same}")));
        }
        factory
            .check(name, params)
            .map_err(|e| Error::option("engines", format!("engine `{name}` cannot run: {e}")))?;
        engines.push(name.clone());
    }
    Ok((engines, skipped))
}

#[cfg(test)]
mod tests {
    use std::{path::Path, sync::Arc};

    use lamina_core::OrderedIndex;

    use super::*;

    /// `fc` (alias `fd`) and `xm`; `xm` refuses everything.
    struct Two;

    impl EngineFactory for Two {
        fn engines(&self) -> Vec<EngineInfo> {
            let mut fc = EngineInfo::new("fc", "");
            fc.aliases.push("fd".into());
            vec![fc, EngineInfo::new("xm", "")]
        }
        fn check(&self, name: &str, _: &EngineParams) -> Result<()> {
            assert_ne!(name, "fd", "aliases are resolved before check");
            if name == "xm" {
                return Err(Error::Unsupported { what: "xm refuses".into() });
            }
            Ok(())
        }
        fn open(&self, _: &str, _: &Path, _: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
            unreachable!("resolution opens nothing")
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn aliases_resolve_to_the_listed_name_and_count_as_that_engine() {
        let p = EngineParams::default();
        let (engines, skipped) = resolve_engines(&Two, &names(&["fd"]), &p).unwrap();
        assert_eq!((engines, skipped), (names(&["fc"]), vec![]));
        let err = resolve_engines(&Two, &names(&["fc", "fd"]), &p).unwrap_err().to_string();
        assert!(err.contains("engine `fc` is listed twice (as `fd`)"), "{err}");
        let err = resolve_engines(&Two, &names(&["nope"]), &p).unwrap_err().to_string();
        assert!(err.contains("known: fc (also fd), xm"), "{err}");
        let err = resolve_engines(&Two, &names(&["xm"]), &p).unwrap_err().to_string();
        assert!(err.contains("engine `xm` cannot run"), "{err}");
        let (engines, skipped) = resolve_engines(&Two, &[], &p).unwrap();
        assert_eq!(engines, names(&["fc"]));
        assert_eq!(skipped[0].engine, "xm");
    }
}
