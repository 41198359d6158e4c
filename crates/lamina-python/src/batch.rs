//! `Db.batch()`: operations collected in Python and applied atomically.

use lamina::WriteBatch;
use pyo3::prelude::*;

use crate::args::bytes_arg;
use crate::db::PyDb;
use crate::errors::invalid_argument;

/// A write batch. As a context manager it commits on exit (atomically: readers see all of
/// it or none of it) and discards its operations if the block raised. Without `with`, call
/// `commit()`. Limits (operations, bytes, key and value sizes) are checked at commit, which
/// then changes nothing.
#[derive(Debug)]
#[pyclass(module = "lamina", name = "Batch")]
pub struct Batch {
    db: Py<PyDb>,
    /// `None` once committed or discarded.
    ops: Option<WriteBatch>,
}

impl Batch {
    pub fn new(db: Py<PyDb>) -> Batch {
        Batch { db, ops: Some(WriteBatch::new()) }
    }

    fn ops(&mut self) -> PyResult<&mut WriteBatch> {
        self.ops
            .as_mut()
            .ok_or_else(|| invalid_argument("this batch was already committed or discarded"))
    }
}

#[pymethods]
impl Batch {
    /// Adds a put of `key` (a later operation on the same key wins).
    fn put(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_arg(key, "key")?.into_owned();
        let value = bytes_arg(value, "value")?.into_owned();
        self.ops()?.put(key, value);
        Ok(())
    }

    /// Adds a delete of `key`.
    fn delete(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_arg(key, "key")?.into_owned();
        self.ops()?.delete(key);
        Ok(())
    }

    /// Applies every operation atomically (GIL released). The batch is spent afterwards,
    /// also when the commit failed (a failed commit changed nothing).
    fn commit(&mut self, py: Python<'_>) -> PyResult<()> {
        let ops = self.ops()?;
        let ops = std::mem::take(ops);
        self.ops = None;
        if ops.is_empty() {
            return Ok(());
        }
        self.db.get().with_db(py, |db| db.write_batch(&ops))
    }

    /// Drops every operation; nothing is written.
    fn discard(&mut self) {
        self.ops = None;
    }

    /// Operations added so far (0 once spent).
    fn __len__(&self) -> usize {
        self.ops.as_ref().map_or(0, WriteBatch::len)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits if the block finished normally, discards if it raised.
    #[pyo3(signature = (exc_type, _exc_value, _traceback))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some() {
            self.discard();
        } else if self.ops.is_some() {
            self.commit(py)?;
        }
        Ok(false)
    }
}
