//! Answers already paid for, keyed by finding, model and prompt version, so that a re-run
//! never asks the same question twice. Kept as one JSON file under the lake's `_state/`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

use super::PROMPT_VERSION;
use crate::lake::state::write_json_atomic;
use crate::lake::{Lake, LakeError};

const CACHE_FILE: &str = "llm-cache.json";

#[derive(Debug, Default)]
pub struct LlmCache {
    path: Option<PathBuf>,
    answers: Mutex<BTreeMap<String, String>>,
    dirty: AtomicBool,
}

impl LlmCache {
    /// A cache that lives only as long as this value.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// The lake's cache; a missing or unreadable file is an empty cache.
    pub fn open(lake: &Lake) -> Self {
        let path = lake.state_dir().join(CACHE_FILE);
        let answers = std::fs::read(&path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
        Self { path: Some(path), answers: Mutex::new(answers), dirty: AtomicBool::new(false) }
    }

    /// `tier` is "triage" or "deep"; `finding` the finding's deterministic id.
    pub fn key(tier: &str, finding: &str, model: &str) -> String {
        let digest = Sha256::digest(format!("{tier}|{finding}|{model}|{PROMPT_VERSION}"));
        hex::encode(&digest[..16])
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.answers.lock().expect("cache lock").get(key).cloned()
    }

    pub fn put(&self, key: String, answer: String) {
        self.answers.lock().expect("cache lock").insert(key, answer);
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Writes the cache back if anything was added.
    pub fn save(&self) -> Result<(), LakeError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if !self.dirty.load(Ordering::Relaxed) {
            return Ok(());
        }
        write_json_atomic(path, &*self.answers.lock().expect("cache lock"))
    }
}
