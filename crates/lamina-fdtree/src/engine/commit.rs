//! Commits (`persist/mod.rs`): each one under the commit lock, with the state to commit and
//! the files it makes obsolete taken together under the tree lock.

use std::sync::Arc;

use lamina_core::{Error, Result};
use parking_lot::RwLock;

use super::control::RETRY_INTERVAL;
use super::inner::Inner;
use crate::fc::FcHost;
use crate::level::writer::RetryPolicy;
use crate::tree::Tree;

impl Inner {
    /// Runs `work` under the commit lock, then commits the tree's state: a persistent tree
    /// commits its manifest, removes the files the previous state named and this one does
    /// not, and truncates the log; a volatile tree only removes them.
    pub fn commit_after(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let mut persist = self.persist.lock();
        work()?;
        let Some(p) = persist.as_mut() else {
            let obsolete = self.write(|t| Ok(t.take_obsolete()))?;
            return self.remove_files(&obsolete);
        };
        let (manifest, obsolete) = self.write(|t| Ok((t.manifest(), t.take_obsolete())))?;
        if let Err(e) = p.commit(&self.store, self.log.as_deref(), &manifest) {
            // Still named by the committed state: kept for the next commit.
            let _ = self.write(|t| {
                t.obsolete_files.extend(obsolete);
                Ok(())
            });
            return Err(e);
        }
        drop(persist);
        self.remove_files(&obsolete)?;
        if let Some(log) = &self.log {
            log.truncate(manifest.applied_seq)?;
        }
        Ok(())
    }

    fn remove_files(&self, ids: &[u32]) -> Result<()> {
        for &id in ids {
            self.store.forget_file(id);
            self.store.remove_all(id)?;
        }
        Ok(())
    }
}

impl FcHost for Inner {
    fn tree(&self) -> &RwLock<Option<Tree>> {
        &self.tree
    }

    fn stage_gate(&self) -> &RwLock<()> {
        &self.stage_gate
    }

    fn hold_point(&self) {
        self.control.hold_point();
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
            std::thread::sleep(RETRY_INTERVAL);
            true
        }))
    }

    fn persistent(&self) -> bool {
        self.persistent
    }

    fn commit_after(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        Inner::commit_after(self, work)
    }
}
