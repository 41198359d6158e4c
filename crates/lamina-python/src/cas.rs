//! The answer of `Db.compare_and_swap`.

use lamina::CasOutcome;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Whether a compare-and-swap happened and, when it did not, the value it found: `current`
/// is None when the key was absent, so an absent key and a different value are told apart
/// without a second (non-atomic) `get`. Truthy when swapped.
#[derive(Debug)]
#[pyclass(frozen, module = "lamina", name = "CasResult")]
pub struct CasResult {
    swapped: bool,
    current: Option<Vec<u8>>,
}

impl From<CasOutcome> for CasResult {
    fn from(outcome: CasOutcome) -> Self {
        match outcome {
            CasOutcome::Swapped => CasResult { swapped: true, current: None },
            CasOutcome::Mismatch { current } => CasResult { swapped: false, current },
        }
    }
}

#[pymethods]
impl CasResult {
    /// Whether the value matched and was replaced.
    #[getter]
    fn swapped(&self) -> bool {
        self.swapped
    }

    /// When not swapped: the value found at the instant of the comparison, None if the key
    /// was absent. None when swapped.
    #[getter]
    fn current<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.current.as_deref().map(|value| PyBytes::new(py, value))
    }

    /// Not swapped because the key was absent.
    #[getter]
    fn absent(&self) -> bool {
        !self.swapped && self.current.is_none()
    }

    /// Not swapped because the key held another value.
    #[getter]
    fn mismatch(&self) -> bool {
        !self.swapped && self.current.is_some()
    }

    fn __bool__(&self) -> bool {
        self.swapped
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        if self.swapped {
            return Ok("CasResult(swapped=True)".to_string());
        }
        let current = self.current(py).map(|value| value.repr()).transpose()?;
        Ok(match current {
            None => "CasResult(swapped=False, current=None)".to_string(),
            Some(repr) => format!("CasResult(swapped=False, current={repr})"),
        })
    }
}
