//! `lamina.Db`: an open database, and `lamina.open`.

use std::path::PathBuf;

use lamina::Db;
use parking_lot::RwLock;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::args::{bytes_arg, optional_bytes_arg};
use crate::batch::Batch;
use crate::cas::CasResult;
use crate::errors::to_py;
use crate::iter::RangeIter;
use crate::options::{OpenArgs, options_for};

/// Opens (or creates) the database in `path`. See the crate README for every argument.
#[pyfunction]
#[pyo3(signature = (
    path,
    engine = "fdtree",
    durability = "sync",
    *,
    max_delay_ms = 100,
    create_if_missing = true,
    memory_limit_bytes = 0,
    disk_budget_bytes = 0,
))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments, each documented
pub fn open(
    py: Python<'_>,
    path: PathBuf,
    engine: &str,
    durability: &str,
    max_delay_ms: u64,
    create_if_missing: bool,
    memory_limit_bytes: u64,
    disk_budget_bytes: u64,
) -> PyResult<PyDb> {
    let args = OpenArgs::parse(
        engine,
        durability,
        max_delay_ms,
        create_if_missing,
        memory_limit_bytes,
        disk_budget_bytes,
    )?;
    let options = options_for(&args);
    let db = py.detach(|| Db::open(&path, options)).map_err(to_py)?;
    Ok(PyDb { engine: db.engine().name(), db: RwLock::new(Some(Box::new(db))), path })
}

/// An open database. Safe to share between threads; every call that reaches the engine
/// releases the GIL. A context manager: `with lamina.open(...) as db:` closes on exit.
#[derive(Debug)]
#[pyclass(frozen, module = "lamina", name = "Db")]
pub struct PyDb {
    /// `None` once closed. Calls hold the read lock while the engine works (GIL released);
    /// `close` takes the write lock, so it waits for them and then drops the `Db`, which
    /// releases the directory's lock file (the path may be opened again at once).
    ///
    /// Boxed: `Db` may need more alignment (cache-line padded engine state, 128 bytes) than
    /// the Python allocator gives the object this struct is stored in (16 bytes).
    db: RwLock<Option<Box<Db>>>,
    path: PathBuf,
    engine: &'static str,
}

impl PyDb {
    /// Runs `f` on the open database with the GIL released; `lamina.Closed` once closed.
    pub fn with_db<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Db) -> lamina::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let db = self.db.read();
            match db.as_ref() {
                Some(db) => f(db),
                None => Err(lamina::Error::Closed),
            }
        })
        .map_err(to_py)
    }

    fn get_bytes<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_arg(key, "key")?;
        let value = self.with_db(py, |db| db.get(&key))?;
        Ok(value.map(|value| PyBytes::new(py, &value)))
    }
}

#[pymethods]
impl PyDb {
    /// The value of `key`; `KeyError` when absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.get_bytes(py, key)? {
            Some(value) => Ok(value),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// `db[key] = value` is `db.put(key, value)`.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value)
    }

    /// `del db[key]`; `KeyError` when absent.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.delete(py, key)? { Ok(()) } else { Err(PyKeyError::new_err(key.clone().unbind())) }
    }

    /// `key in db`.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get_bytes(py, key)?.is_some())
    }

    /// The value of `key`, or `default` when absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.get_bytes(py, key)? {
            Some(value) => Ok(Some(value.into_any())),
            None => Ok(default),
        }
    }

    /// Inserts or overwrites `key`.
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = bytes_arg(key, "key")?;
        let value = bytes_arg(value, "value")?;
        self.with_db(py, |db| db.put(&key, &value))
    }

    /// Removes `key`; returns whether it existed.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = bytes_arg(key, "key")?;
        self.with_db(py, |db| db.delete(&key))
    }

    /// Atomically sets `key` to `new` (None: deletes it) if its value equals `expected`
    /// (None: the key must be absent). The result is truthy when swapped; otherwise its
    /// `current` is the value found (None: the key was absent).
    fn compare_and_swap(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        expected: Option<&Bound<'_, PyAny>>,
        new: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<CasResult> {
        let key = bytes_arg(key, "key")?;
        let expected = optional_bytes_arg(expected, "expected")?;
        let new = optional_bytes_arg(new, "new")?;
        let outcome =
            self.with_db(py, |db| db.compare_and_swap(&key, expected.as_deref(), new.as_deref()))?;
        Ok(CasResult::from(outcome))
    }

    /// A lazy iterator of `(key, value)` pairs with `start <= key < end` (None: unbounded),
    /// ascending, or descending with `reverse=True`.
    #[pyo3(signature = (start = None, end = None, reverse = false))]
    fn range(
        slf: &Bound<'_, Self>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<RangeIter> {
        let start = optional_bytes_arg(start, "start")?.map(std::borrow::Cow::into_owned);
        let end = optional_bytes_arg(end, "end")?.map(std::borrow::Cow::into_owned);
        Ok(RangeIter::new(slf.clone().unbind(), start, end, reverse))
    }

    /// A write batch: a context manager that applies its operations atomically on exit, or
    /// discards them if the block raised.
    fn batch(slf: &Bound<'_, Self>) -> Batch {
        Batch::new(slf.clone().unbind())
    }

    /// Counters of the engine's state and I/O, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.with_db(py, |db| Ok(db.stats()))?;
        crate::stats::to_dict(py, &stats)
    }

    /// Makes every acknowledged write durable.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        self.with_db(py, Db::sync)
    }

    /// Flushes and closes the database, waiting for calls in progress; later calls raise
    /// `lamina.Closed`. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let Some(db) = self.db.write().take() else {
                return Ok(());
            };
            let closed = db.close();
            drop(db); // releases the directory's lock file
            closed
        })
        .map_err(to_py)
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.db.read().is_none()
    }

    /// The engine's name (`fdtree-fc` when opened as `fdtree`).
    #[getter]
    fn engine(&self) -> &'static str {
        self.engine
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the database. A close error is raised only if the block did not raise.
    #[pyo3(signature = (exc_type, _exc_value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let closed = self.close(py);
        if exc_type.is_none() {
            closed?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { ", closed" } else { "" };
        format!("<lamina.Db {} engine={}{state}>", self.path.display(), self.engine)
    }
}
