//! lamina's Python binding: the extension module `lamina._lamina`, re-exported by the
//! package `lamina` (python/lamina/__init__.py). See the crate README for the API and the
//! GIL policy: every call that reaches the engine releases the GIL.

mod args;
mod batch;
mod cas;
mod db;
mod errors;
mod iter;
mod options;
mod stats;

use pyo3::prelude::*;

/// The extension module. Its name is the last part of pyproject.toml's `module-name`.
#[pymodule]
#[pyo3(name = "_lamina")]
fn lamina_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(db::open, m)?)?;
    m.add_class::<db::PyDb>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<iter::RangeIter>()?;
    m.add_class::<cas::CasResult>()?;
    errors::register(m)?;
    let mut engines: Vec<&str> = vec!["fdtree"];
    engines.extend(lamina::EngineKind::ALL.iter().map(|kind| kind.name()));
    m.add("ENGINES", engines)?;
    m.add("KEY_BYTES_MAX", lamina::limits::KEY_BYTES_MAX)?;
    m.add("VALUE_BYTES_MAX", lamina::limits::VALUE_BYTES_MAX)?;
    m.add("BATCH_OPS_MAX", lamina::limits::BATCH_OPS_MAX)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
