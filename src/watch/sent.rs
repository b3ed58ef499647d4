//! The ids of findings already alerted on, kept across restarts so that no finding is
//! sent twice.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::lake::LakeError;
use crate::lake::state::write_json_atomic;

#[derive(Debug, Default)]
pub struct SentAlerts {
    path: Option<PathBuf>,
    ids: BTreeSet<String>,
}

impl SentAlerts {
    /// The ids in `path` (a missing file: none yet).
    pub fn load(path: Option<PathBuf>) -> Self {
        let ids =
            path.as_ref().and_then(|p| std::fs::read(p).ok()).and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
        Self { path, ids }
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Records `id`, on disk before returning.
    pub fn insert(&mut self, id: &str) -> Result<(), LakeError> {
        self.ids.insert(id.to_owned());
        match &self.path {
            Some(path) => write_json_atomic(path, &self.ids),
            None => Ok(()),
        }
    }
}
