//! Where the engines of a comparison keep their files: `--dir DIR` (engine `E` in `DIR/E`,
//! kept), or a temporary directory removed afterwards unless `--keep`.

use std::path::{Path, PathBuf};

use lamina_core::{Error, Result};

/// The base directory of a comparison.
pub(crate) struct WorkDir {
    base: PathBuf,
    temp: Option<tempfile::TempDir>,
}

impl WorkDir {
    /// `dir` if given (refused if an engine's subdirectory there is not empty), else a new
    /// temporary directory.
    pub(crate) fn new(dir: Option<&Path>, engines: &[String]) -> Result<Self> {
        let Some(dir) = dir else {
            let temp = tempfile::Builder::new()
                .prefix("lamina-bench-")
                .tempdir()
                .map_err(|e| Error::io("creating a temporary directory", e))?;
            return Ok(WorkDir { base: temp.path().to_path_buf(), temp: Some(temp) });
        };
        for engine in engines {
            let path = dir.join(engine);
            let occupied = std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some());
            if occupied {
                return Err(Error::option(
                    "dir",
                    format!("{} is not empty; remove it or choose another --dir", path.display()),
                ));
            }
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        Ok(WorkDir { base: dir.to_path_buf(), temp: None })
    }

    /// Engine `engine`'s directory, emptied (an engine always starts from an empty one).
    pub(crate) fn fresh(&self, engine: &str) -> Result<PathBuf> {
        let path = self.base.join(engine);
        if path.exists() {
            std::fs::remove_dir_all(&path)
                .map_err(|e| Error::io(format!("clearing {}", path.display()), e))?;
        }
        std::fs::create_dir_all(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(path)
    }

    /// Removes a temporary directory unless `keep`; returns where the files are if kept.
    pub(crate) fn finish(self, keep: bool, note: &mut dyn FnMut(&str)) -> Result<Option<PathBuf>> {
        match self.temp {
            Some(t) if keep => {
                let path = t.keep();
                note(&format!("kept engine files in {}", path.display()));
                Ok(Some(path))
            }
            Some(t) => {
                t.close().map_err(|e| Error::io("removing the temporary directory", e))?;
                Ok(None)
            }
            None => Ok(Some(self.base)),
        }
    }
}
