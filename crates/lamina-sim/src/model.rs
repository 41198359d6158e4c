//! The model: what each key may hold. A key is certain after an acknowledged write; a write
//! whose outcome is unknown (in flight at a crash, or failed with an I/O error or a full disk)
//! adds its value to the key's possible values, and a batch of unknown outcome must turn out
//! all or nothing. A recovered store that passed the check resolves every key to what it
//! holds (recovery read it from durable state, so a later crash may not take it back).

use std::collections::BTreeMap;

use crate::value::write_no_of;

/// One write of the workload, as (key, new value or `None` for a delete) pairs; a batch has
/// several distinct keys, every other write one.
pub type Effects = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// One key of a batch of unknown outcome.
#[derive(Debug, Clone)]
struct GroupEntry {
    key: Vec<u8>,
    /// What the key may have held before the batch.
    before: Vec<Option<Vec<u8>>>,
    /// What the batch sets it to.
    new: Option<Vec<u8>>,
}

/// What the store may hold.
#[derive(Debug, Default, Clone)]
pub struct Model {
    /// Every key ever written with the values it may hold now (`None`: absent). Keys never
    /// written are absent. One entry: certain.
    keys: BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
    /// Batches of unknown outcome still unresolved: each must be applied entirely or not at
    /// all (keys written since, acknowledged or not, leave their group).
    groups: Vec<Vec<GroupEntry>>,
}

impl Model {
    /// An empty store.
    pub fn new() -> Self {
        Model::default()
    }

    /// The value `key` certainly holds (`Some(None)`: certainly absent), or `None` if its
    /// state is unknown.
    pub fn certain(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        match self.keys.get(key) {
            None => Some(None),
            Some(values) if values.len() == 1 => Some(values[0].as_deref()),
            Some(_) => None,
        }
    }

    /// Keys ever written.
    pub fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.keys.keys()
    }

    /// How many keys are certainly present.
    pub fn present_count(&self) -> usize {
        self.keys.values().filter(|v| v.len() == 1 && v[0].is_some()).count()
    }

    /// The write was acknowledged.
    pub fn ack(&mut self, effects: &Effects) {
        for (key, new) in effects {
            self.keys.insert(key.clone(), vec![new.clone()]);
            for group in &mut self.groups {
                group.retain(|entry| entry.key != *key);
            }
        }
        self.groups.retain(|g| g.len() > 1);
    }

    /// The write's outcome is unknown.
    pub fn unknown(&mut self, effects: &Effects) {
        let mut group = Vec::new();
        for (key, new) in effects {
            let before = self.keys.get(key).cloned().unwrap_or_else(|| vec![None]);
            group.push(GroupEntry { key: key.clone(), before, new: new.clone() });
        }
        for (key, new) in effects {
            let values = self.keys.entry(key.clone()).or_insert_with(|| vec![None]);
            if !values.contains(new) {
                values.push(new.clone());
            }
            // What the key holds no longer tells whether an earlier batch applied: this
            // write may have overwritten it, even with a value the key held before that
            // batch (a delete of a key the batch created).
            for earlier in &mut self.groups {
                earlier.retain(|entry| entry.key != *key);
            }
        }
        self.groups.retain(|g| g.len() > 1);
        if group.len() > 1 {
            self.groups.push(group);
        }
    }

    /// Checks what `key` holds against the model. `damaged`: a bit flip may have struck, so
    /// any value once written for the key is accepted (counted by the caller) and only a
    /// value never written for it is wrong.
    pub fn check(&self, key: &[u8], got: Option<&[u8]>, damaged: bool) -> Verdict {
        let allowed = self.keys.get(key).map_or(&[None][..], Vec::as_slice);
        if allowed.iter().any(|v| v.as_deref() == got) {
            return Verdict::Expected;
        }
        if damaged && got.is_none_or(|v| write_no_of(key, v).is_some()) {
            return Verdict::Older;
        }
        Verdict::Wrong(format!(
            "key {} holds {}, expected {}",
            show(key),
            show_value(key, got),
            allowed.iter().map(|v| show_value(key, v.as_deref())).collect::<Vec<_>>().join(" or ")
        ))
    }

    /// Checks the unresolved batches against a complete observation of the store.
    pub fn check_groups(&self, observed: &BTreeMap<Vec<u8>, Vec<u8>>) -> Result<(), String> {
        for group in &self.groups {
            // A key proves the batch applied if it holds the batch's value and held no such
            // value before; not applied if it holds an older value other than the batch's.
            let (mut applied, mut not_applied) = (Vec::new(), Vec::new());
            for entry in group {
                let got = observed.get(&entry.key).cloned();
                if got == entry.new && !entry.before.contains(&got) {
                    applied.push(show(&entry.key));
                } else if got != entry.new && entry.before.contains(&got) {
                    not_applied.push(show(&entry.key));
                }
            }
            if !applied.is_empty() && !not_applied.is_empty() {
                return Err(format!(
                    "a batch of unknown outcome is partly applied: keys {} hold its values, \
                     keys {} do not",
                    applied.join(", "),
                    not_applied.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The store was observed completely to hold `observed` after recovery: every key is
    /// certain from now on.
    pub fn resolve(&mut self, observed: &BTreeMap<Vec<u8>, Vec<u8>>) {
        for (key, values) in &mut self.keys {
            *values = vec![observed.get(key).cloned()];
        }
        for (key, value) in observed {
            self.keys.insert(key.clone(), vec![Some(value.clone())]);
        }
        self.groups.clear();
    }
}

/// The outcome of checking one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// One of the values the model allows.
    Expected,
    /// Not allowed, but a value once written for the key (or absent), under a bit flip.
    Older,
    /// Wrong: what and why.
    Wrong(String),
}

/// A key for messages.
pub fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// A value for messages: its write number if it is one, else its length.
fn show_value(key: &[u8], value: Option<&[u8]>) -> String {
    match value {
        None => "nothing".into(),
        Some(v) => match write_no_of(key, v) {
            Some(n) => format!("write #{n} ({} bytes)", v.len()),
            None => format!("{} bytes written by no write to it", v.len()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_batches_are_all_or_nothing() {
        let mut model = Model::new();
        let put = |k: &str, v: &str| (k.as_bytes().to_vec(), Some(v.as_bytes().to_vec()));
        model.ack(&vec![put("a", "1")]);
        model.unknown(&vec![put("a", "2"), put("b", "2")]);
        let observed = |pairs: &[(&str, &str)]| {
            pairs.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
        };
        assert!(model.check_groups(&observed(&[("a", "1")])).is_ok());
        assert!(model.check_groups(&observed(&[("a", "2"), ("b", "2")])).is_ok());
        assert!(model.check_groups(&observed(&[("a", "1"), ("b", "2")])).is_err());
        assert_eq!(model.check(b"a", Some(b"2"), false), Verdict::Expected);
        assert!(matches!(model.check(b"a", Some(b"3"), false), Verdict::Wrong(_)));
        model.resolve(&observed(&[("a", "2"), ("b", "2")]));
        assert_eq!(model.certain(b"b"), Some(Some(&b"2"[..])));
    }

    /// Seed 1122 of fdtree-fc: batch A put keys that were absent, a later batch B of unknown
    /// outcome deleted one of them; both applied left that key absent, as before A. That
    /// is A and B applied, not A half applied.
    #[test]
    fn a_later_unknown_write_takes_its_key_out_of_an_earlier_batch() {
        let mut model = Model::new();
        let put = |k: &str, v: &str| (k.as_bytes().to_vec(), Some(v.as_bytes().to_vec()));
        let delete = |k: &str| (k.as_bytes().to_vec(), None);
        model.unknown(&vec![put("a", "1"), put("b", "1"), put("c", "1")]);
        model.unknown(&vec![delete("b"), put("d", "2")]);
        let observed: BTreeMap<Vec<u8>, Vec<u8>> = [("a", "1"), ("c", "1"), ("d", "2")]
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert!(model.check_groups(&observed).is_ok());
        // Still all or nothing on the keys nobody wrote since: A's "c" missing is caught.
        let half: BTreeMap<Vec<u8>, Vec<u8>> = [("a", "1")]
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert!(model.check_groups(&half).is_err());
    }
}
