//! One way to commit to the lake, for every writer (import, export, analyze, outcomes,
//! repair). A writer registers ([`RegisteredWriter`](super::writers::RegisteredWriter))
//! and writes its files under its id with no lock held. To commit, it takes the manifest
//! lock only for as long as it takes to re-read the manifest, change it, save it and sweep
//! the files of writers that are gone ([`commit`]), so writers of different kinds (a
//! scheduled export and an analysis) interleave. A run excludes only another run of its
//! own kind ([`RunLock`]): the part of the manifest that is its own (the import records,
//! the export cursor, the analysis history) can then be read at its start and changed at
//! its end.

use std::collections::HashSet;
use std::fs::{self, File};

use futures::future::try_join_all;

use super::LakeError;
use super::layout::Lake;
use super::remote::{Remote, block_on};
use super::state::Manifest;
use super::writers::sweep_uncommitted;

const MANIFEST_LOCK: &str = "lock";

/// The kinds of runs that write to the lake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    Import,
    Export,
    Analyze,
    Outcomes,
    Collect,
    Risk,
}

impl Run {
    pub const ALL: [Run; 6] = [Run::Import, Run::Export, Run::Analyze, Run::Outcomes, Run::Collect, Run::Risk];

    pub fn as_str(self) -> &'static str {
        match self {
            Run::Import => "import",
            Run::Export => "export",
            Run::Analyze => "analyze",
            Run::Outcomes => "outcomes import",
            Run::Collect => "collect",
            Run::Risk => "risk",
        }
    }

    fn lock_file(self) -> &'static str {
        match self {
            Run::Import => "import.lock",
            Run::Export => "export.lock",
            Run::Analyze => "analyze.lock",
            Run::Outcomes => "outcomes.lock",
            Run::Collect => "collect.lock",
            Run::Risk => "risk.lock",
        }
    }
}

/// The right to run one kind of run on a lake, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    _files: Vec<File>,
}

impl RunLock {
    /// Fails at once when another run of this kind holds it. On object storage, where
    /// there are no locks, runs of a kind do not wait for each other: what they commit is
    /// checked against what another committed meanwhile ([`LakeError::Concurrent`]).
    pub fn acquire(lake: &Lake, run: Run) -> Result<Self, LakeError> {
        if lake.remote().is_some() {
            return Ok(Self { _files: Vec::new() });
        }
        Ok(Self { _files: vec![lock_file(lake, run)?] })
    }

    /// Every kind at once: for a repair, which rewrites the whole manifest.
    pub fn all(lake: &Lake) -> Result<Self, LakeError> {
        if lake.remote().is_some() {
            return Err(LakeError::NotOnObjectStorage {
                lake: lake.location(),
                what: "repair",
                why: "it needs every writer stopped, which object storage cannot tell; a crashed writer's uploads are named by no manifest and never read",
            });
        }
        Ok(Self { _files: Run::ALL.into_iter().map(|run| lock_file(lake, run)).collect::<Result<_, _>>()? })
    }
}

fn lock_file(lake: &Lake, run: Run) -> Result<File, LakeError> {
    let dir = lake.state_dir();
    fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
    let path = dir.join(run.lock_file());
    let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(|e| LakeError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(LakeError::Locked { lake: lake.root().to_path_buf(), run: run.as_str() }),
        Err(fs::TryLockError::Error(e)) => Err(LakeError::io(&path, e)),
    }
}

/// The manifest lock, held for the few milliseconds of a commit.
#[derive(Debug)]
pub struct ManifestLock {
    _file: File,
}

impl ManifestLock {
    /// Waits for another writer's commit to end.
    pub fn acquire(lake: &Lake) -> Result<Self, LakeError> {
        let dir = lake.state_dir();
        fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
        let path = dir.join(MANIFEST_LOCK);
        let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(|e| LakeError::io(&path, e))?;
        file.lock().map_err(|e| LakeError::io(&path, e))?;
        Ok(Self { _file: file })
    }
}

/// Commits: re-reads the manifest under the manifest lock, lets `update` change it, saves
/// it, and sweeps the uncommitted files of writers that are gone (those `update` retired
/// among them). Returns what `update` returned; nothing is saved when it fails.
///
/// On object storage there is no lock: the files the new manifest names are uploaded,
/// and the manifest is written only if no other writer committed since it was read; else
/// `update` runs again on the newer manifest.
pub fn commit<T, E: From<LakeError>>(lake: &Lake, mut update: impl FnMut(&mut Manifest) -> Result<T, E>) -> Result<T, E> {
    if let Some(remote) = lake.remote() {
        return commit_remote(lake, remote, update);
    }
    let lock = ManifestLock::acquire(lake)?;
    let mut manifest = Manifest::load(lake)?;
    let value = update(&mut manifest)?;
    manifest.save(lake)?;
    sweep_uncommitted(lake, &manifest, &lock)?;
    Ok(value)
}

fn commit_remote<T, E: From<LakeError>>(
    lake: &Lake,
    remote: &Remote,
    mut update: impl FnMut(&mut Manifest) -> Result<T, E>,
) -> Result<T, E> {
    let mut uploaded: HashSet<String> = HashSet::new();
    let mut lost = 0u32;
    loop {
        if lost > 0 {
            // Another writer committed first: back off a little, at random, so that writers
            // committing in step do not keep colliding.
            let ms = rand::random_range(0..=(10u64 << lost.min(6)));
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let (mut manifest, version) = block_on(Manifest::read_remote(remote))?;
        let before: HashSet<String> = manifest.committed_files().into_iter().map(str::to_owned).collect();
        let value = update(&mut manifest)?;
        manifest.revision += 1;
        let staged: Vec<String> = manifest
            .committed_files()
            .into_iter()
            .filter(|f| !before.contains(*f) && !uploaded.contains(*f) && lake.root().join(f).is_file())
            .map(str::to_owned)
            .collect();
        let bytes = manifest.to_json();
        let won = block_on(async {
            for files in staged.chunks(UPLOADS) {
                try_join_all(files.iter().map(|f| remote.upload(f))).await?;
            }
            remote.write_manifest(bytes, version).await
        })?;
        uploaded.extend(staged);
        if won {
            for file in &uploaded {
                // Committed and uploaded: the staged copy is no longer needed.
                let _ = fs::remove_file(lake.root().join(file));
            }
            return Ok(value);
        }
        lost += 1;
    }
}

/// Files uploaded at once by a commit to object storage.
const UPLOADS: usize = 8;

/// At the start of a run: sweeps what crashed writers left, and writes the manifest of a
/// new lake, so that a reader never takes the files of a first write still under way for
/// a lake whose manifest is lost. Returns the manifest and how many files were swept.
pub fn begin(lake: &Lake) -> Result<(Manifest, usize), LakeError> {
    if let Some(remote) = lake.remote() {
        let (manifest, _) = block_on(Manifest::read_remote(remote))?;
        if manifest.exists {
            return Ok((manifest, 0));
        }
        // Of two writers making a lake at once, one writes its manifest; both go on.
        block_on(remote.write_manifest(manifest.to_json(), None))?;
        return Ok((block_on(Manifest::read_remote(remote))?.0, 0));
    }
    let lock = ManifestLock::acquire(lake)?;
    let manifest = Manifest::load(lake)?;
    if !manifest.exists {
        manifest.save(lake)?;
    }
    let swept = sweep_uncommitted(lake, &manifest, &lock)?.len();
    Ok((Manifest::load(lake)?, swept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_one_kind_exclude_each_other_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        let export = RunLock::acquire(&lake, Run::Export).unwrap();
        let again = RunLock::acquire(&lake, Run::Export).unwrap_err().to_string();
        assert!(again.contains("another tracelake export is running"), "{again}");
        let analyze = RunLock::acquire(&lake, Run::Analyze).unwrap();
        assert!(RunLock::all(&lake).is_err(), "a repair waits for every run");
        drop((export, analyze));
        let all = RunLock::all(&lake).unwrap();
        assert!(RunLock::acquire(&lake, Run::Import).is_err());
        drop(all);
    }

    #[test]
    fn a_failed_update_saves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        let failed: Result<(), LakeError> = commit(&lake, |m| {
            m.processing_state.total_findings = 7;
            Err(LakeError::Locked { lake: lake.root().to_path_buf(), run: "test" })
        });
        assert!(failed.is_err());
        assert_eq!(Manifest::load(&lake).unwrap().processing_state.total_findings, 0);
        commit::<_, LakeError>(&lake, |m| {
            m.processing_state.total_findings = 7;
            Ok(())
        })
        .unwrap();
        assert_eq!(Manifest::load(&lake).unwrap().processing_state.total_findings, 7);
    }
}
