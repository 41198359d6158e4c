//! Commits (`persist/mod.rs`): each one under the commit lock, with the state to commit and
//! the files it makes obsolete taken together under the tree lock.

use std::sync::Arc;

use lamina_core::{Error, Result};
use lamina_storage::StorageFile;
use parking_lot::{MutexGuard, RwLock};

use super::inner::Inner;
use crate::fc::FcHost;
use crate::level::writer::RetryPolicy;
use crate::persist::Persist;
use crate::tree::Tree;

impl Inner {
    /// Runs `work` under the commit lock, then commits the tree's state: a persistent tree
    /// commits its manifest, removes the files the previous state named and this one does
    /// not, and truncates the log; a volatile tree only removes them.
    pub fn commit_after(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.commit_locked(self.persist.lock(), work)
    }

    /// [`Inner::commit_after`] with the commit lock already taken (`persist`).
    pub fn commit_locked(
        &self,
        mut persist: MutexGuard<'_, Option<Persist>>,
        work: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        work()?;
        let Some(p) = persist.as_mut() else {
            // A volatile tree commits nothing: its runs need no sync.
            let obsolete = self.write(|t| {
                t.unsynced_files.clear();
                Ok(t.take_obsolete())
            })?;
            return self.remove_files(obsolete);
        };
        // The manifest and the runs' files not synced yet, together: every file the manifest
        // names is synced before the superblock names it (`Tree::unsynced_files`).
        let (manifest, obsolete, unsynced) = self.write(|t| {
            Ok((t.manifest(), t.take_obsolete(), std::mem::take(&mut t.unsynced_files)))
        })?;
        // A commit is retryable: a failed superblock write leaves its sequence number and
        // slot to the next attempt, the other slot holding the previous commit.
        let committed = self
            .sync_files(&unsynced)
            .and_then(|()| self.retrying(|| p.commit(&self.store, self.log.as_deref(), &manifest)));
        if let Err(e) = committed {
            // Still named by the committed state: kept for the next commit; and the next
            // commit syncs the files again before it names them.
            let _ = self.write(|t| {
                t.obsolete_files.extend(obsolete);
                t.unsynced_files.extend(unsynced);
                Ok(())
            });
            return Err(e);
        }
        drop(persist);
        self.remove_files(obsolete)?;
        if let Some(log) = &self.log {
            match log.truncate(manifest.applied_seq) {
                // The log keeps records the tree already holds (replay skips them); the next
                // commit truncates it.
                Ok(_) | Err(Error::NoSpace { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Removes the files a commit made obsolete. The commit is durable whatever happens
    /// here: a file that cannot be removed is kept for the next commit to remove (and
    /// recovery removes every file the committed state does not name), and only an error
    /// other than a full disk is reported.
    fn remove_files(&self, ids: Vec<u32>) -> Result<()> {
        let mut first_error = None;
        let mut kept = Vec::new();
        for id in ids {
            self.store.forget_file(id);
            if let Err(e) = self.store.remove_all(id) {
                kept.push(id);
                if !matches!(e, Error::NoSpace { .. }) {
                    first_error.get_or_insert(e);
                }
            }
        }
        if !kept.is_empty() {
            self.write(|t| {
                t.obsolete_files.extend(kept);
                Ok(())
            })?;
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Syncs files written without a sync (runs' level and index files), retrying a full
    /// disk as other writes do.
    fn sync_files(&self, files: &[Arc<dyn StorageFile>]) -> Result<()> {
        for file in files {
            self.retrying(|| file.sync_data())?;
        }
        Ok(())
    }

    /// Runs `op` until it succeeds, fails with something other than a full disk, or the
    /// retry policy gives up on the full disk (the engine is closing).
    pub fn retrying<T>(&self, op: impl FnMut() -> Result<T>) -> Result<T> {
        FcHost::retry_policy(self).run(op)
    }
}

impl FcHost for Inner {
    fn tree(&self) -> &RwLock<Option<Tree>> {
        &self.tree
    }

    fn hold_point(&self) {
        self.control.hold_point();
    }

    fn progressed(&self, fraction: f64) {
        self.pacer.progressed(fraction);
    }

    fn retry_policy(&self) -> RetryPolicy {
        // The control block outlives the merge (the engine joins the thread before it is
        // dropped); the policy holds a weak handle so it never keeps the engine alive.
        let weak = self.me.clone();
        RetryPolicy(Arc::new(move |err: &Error| {
            let Some(inner) = weak.upgrade() else { return false };
            if !matches!(err, Error::NoSpace { .. }) || inner.control.stopping() {
                return false;
            }
            // A full disk: tell writers (they get the error instead of waiting for room),
            // wait, retry. Writers that free space (deletes, a user freeing the disk) let it
            // go on.
            inner.control.background_result(&Err(super::control::clone_error(err)));
            inner.control.retry_pause();
            true
        }))
    }

    fn persistent(&self) -> bool {
        self.persistent
    }

    fn commit_after(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        Inner::commit_after(self, work)
    }

    fn cpu_turn(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        Some(self.cpu_turn.lock())
    }

    fn stopping(&self) -> bool {
        self.control.stopping()
    }
}
