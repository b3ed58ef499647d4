//! One way to commit to the lake, for every writer (import, export, analyze, outcomes,
//! repair). A writer registers ([`RegisteredWriter`](super::live_writers::RegisteredWriter))
//! and writes its files under its id with no lock held. To commit, it takes the manifest
//! lock only for as long as it takes to re-read the manifest, change it, save it and sweep
//! the files of writers that are gone ([`commit`]), so writers of different kinds (a
//! scheduled export and an analysis) interleave. A run excludes only another run of its
//! own kind ([`RunLock`]): the part of the manifest that is its own (the import records,
//! the export cursor, the analysis history) can then be read at its start and changed at
//! its end.

use std::collections::HashSet;
use std::fs::{self, File};
use std::time::{Duration, Instant};

use futures::future::try_join_all;

use super::holder::{HeldLock, LockHolder};
use super::layout::Lake;
use super::live_writers::sweep_uncommitted;
use super::remote::{Remote, block_on};
use super::state::Manifest;
use super::{LakeError, delta};

const MANIFEST_LOCK: &str = "lock";

/// How long a commit waits for another writer's: commits take milliseconds, so a lock held
/// this long belongs to a process that is stopped or hung.
const COMMIT_LOCK_WAIT: Duration = Duration::from_secs(30);

/// The kinds of runs that write to the lake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    Import,
    Export,
    Analyze,
    Outcomes,
    Collect,
    Risk,
}

impl RunKind {
    pub const ALL: [RunKind; 6] = [RunKind::Import, RunKind::Export, RunKind::Analyze, RunKind::Outcomes, RunKind::Collect, RunKind::Risk];

    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Import => "import",
            RunKind::Export => "export",
            RunKind::Analyze => "analyze",
            RunKind::Outcomes => "outcomes import",
            RunKind::Collect => "collect",
            RunKind::Risk => "risk",
        }
    }

    fn lock_file(self) -> &'static str {
        match self {
            RunKind::Import => "import.lock",
            RunKind::Export => "export.lock",
            RunKind::Analyze => "analyze.lock",
            RunKind::Outcomes => "outcomes.lock",
            RunKind::Collect => "collect.lock",
            RunKind::Risk => "risk.lock",
        }
    }
}

/// The right to run one kind of run on a lake, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    _files: Vec<HeldLock>,
}

impl RunLock {
    /// Fails at once when another run of this kind holds it. On object storage, where
    /// there are no locks, runs of a kind do not wait for each other: what they commit is
    /// checked against what another committed meanwhile ([`LakeError::Concurrent`]).
    pub fn acquire(lake: &Lake, run: RunKind) -> Result<Self, LakeError> {
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
        Ok(Self { _files: RunKind::ALL.into_iter().map(|run| lock_file(lake, run)).collect::<Result<_, _>>()? })
    }
}

fn lock_file(lake: &Lake, run: RunKind) -> Result<HeldLock, LakeError> {
    let (path, file) = open_lock_file(lake, run.lock_file())?;
    match take_lock(&path, file)? {
        Ok(file) => Ok(file),
        Err(holder) => Err(LakeError::Locked { lake: lake.root().to_path_buf(), run: run.as_str(), holder }),
    }
}

fn open_lock_file(lake: &Lake, name: &str) -> Result<(std::path::PathBuf, File), LakeError> {
    let dir = lake.state_dir();
    fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
    let path = dir.join(name);
    let file = File::options().create(true).truncate(false).read(true).write(true).open(&path).map_err(|e| LakeError::io(&path, e))?;
    Ok((path, file))
}

/// Locks `file` and writes this process into it, or says who holds it.
fn take_lock(path: &std::path::Path, mut file: File) -> Result<Result<HeldLock, Option<LockHolder>>, LakeError> {
    match file.try_lock() {
        Ok(()) => {
            LockHolder::this_process().write_to(&mut file).map_err(|e| LakeError::io(path, e))?;
            Ok(Ok(HeldLock(file)))
        }
        Err(fs::TryLockError::WouldBlock) => Ok(Err(LockHolder::read_from(&file))),
        Err(fs::TryLockError::Error(e)) => Err(LakeError::io(path, e)),
    }
}

/// The manifest lock, held for the few milliseconds of a commit.
#[derive(Debug)]
pub struct ManifestLock {
    _file: HeldLock,
}

impl ManifestLock {
    /// Waits for another writer's commit to end, for at most [`COMMIT_LOCK_WAIT`].
    pub fn acquire(lake: &Lake) -> Result<Self, LakeError> {
        Self::acquire_within(lake, COMMIT_LOCK_WAIT)
    }

    fn acquire_within(lake: &Lake, wait: Duration) -> Result<Self, LakeError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let (path, file) = open_lock_file(lake, MANIFEST_LOCK)?;
            match take_lock(&path, file)? {
                Ok(file) => return Ok(Self { _file: file }),
                Err(holder) if started.elapsed() >= wait => {
                    return Err(LakeError::CommitLockHeld {
                        lake: lake.root().to_path_buf(),
                        waited_s: started.elapsed().as_secs(),
                        holder,
                    });
                }
                Err(_) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
            }
        }
    }
}

/// Commits: re-reads the manifest under the manifest lock, lets `update` change it, saves
/// it, brings the Delta logs of the tables it changed in step ([`delta`]), and sweeps the
/// uncommitted files of writers that are gone. Files `update` dropped stay, as the logs'
/// earlier versions name them, until `tracelake vacuum`.
/// Returns what `update` returned; nothing is saved when it fails.
///
/// On object storage there is no lock: the files the new manifest names are uploaded,
/// and the manifest is written only if no other writer committed since it was read; else
/// `update` runs again on the newer manifest.
pub fn commit<T, E: From<LakeError>>(lake: &Lake, mut update: impl FnMut(&mut Manifest) -> Result<T, E>) -> Result<T, E> {
    if let Some(remote) = lake.remote() {
        return commit_remote(lake, remote, update);
    }
    let lock = ManifestLock::acquire(lake)?;
    let before = Manifest::load(lake)?;
    let mut manifest = before.clone();
    let value = update(&mut manifest)?;
    manifest.keep_removed(&before);
    manifest.revision += 1;
    manifest.save(lake)?;
    delta::sync_changed(lake, &before, &manifest)?;
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
        let (read, version) = block_on(Manifest::read_remote(remote))?;
        let before: HashSet<String> = read.committed_files().into_iter().map(str::to_owned).collect();
        let mut manifest = read.clone();
        let value = update(&mut manifest)?;
        manifest.keep_removed(&read);
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
            delta::sync_changed(lake, &read, &manifest)?;
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

/// At the start of a run: sweeps what crashed writers left, brings the tables' Delta logs
/// in step with the manifest (after a process killed between the two), and writes the
/// manifest of a new lake, so that a reader never takes the files of a first write still under way for
/// a lake whose manifest is lost. Returns the manifest and how many files were swept.
pub fn begin(lake: &Lake) -> Result<(Manifest, usize), LakeError> {
    if let Some(remote) = lake.remote() {
        let (manifest, _) = block_on(Manifest::read_remote(remote))?;
        if manifest.exists {
            delta::sync_all(lake, &manifest)?;
            return Ok((manifest, 0));
        }
        // Of two writers making a lake at once, one writes its manifest; both go on.
        block_on(remote.write_manifest(manifest.to_json(), None))?;
        let manifest = block_on(Manifest::read_remote(remote))?.0;
        delta::sync_all(lake, &manifest)?;
        return Ok((manifest, 0));
    }
    let lock = ManifestLock::acquire(lake)?;
    let manifest = Manifest::load(lake)?;
    if !manifest.exists {
        manifest.save(lake)?;
    }
    delta::sync_all(lake, &manifest)?;
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
        let export = RunLock::acquire(&lake, RunKind::Export).unwrap();
        let again = RunLock::acquire(&lake, RunKind::Export).unwrap_err().to_string();
        let pid = std::process::id();
        assert!(again.contains("another tracelake export is running"), "{again}");
        assert!(again.contains(&format!("(pid {pid}, since ")), "the holder is named: {again}");
        let analyze = RunLock::acquire(&lake, RunKind::Analyze).unwrap();
        assert!(RunLock::all(&lake).is_err(), "a repair waits for every run");
        drop((export, analyze));
        let all = RunLock::all(&lake).unwrap();
        assert!(RunLock::acquire(&lake, RunKind::Import).is_err());
        drop(all);
    }

    #[test]
    fn a_commit_lock_held_too_long_fails_naming_its_holder_instead_of_waiting_forever() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        let held = ManifestLock::acquire(&lake).unwrap();
        let waiting = {
            let lake = lake.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(ManifestLock::acquire_within(&lake, Duration::from_millis(200)).map(drop)));
            rx.recv_timeout(Duration::from_secs(10)).expect("a held commit lock is waited for a bounded time")
        };
        let message = waiting.unwrap_err().to_string();
        assert!(message.contains("its commit lock has been held for 0 s by tracelake "), "{message}");
        assert!(message.contains(&format!("(pid {}, since ", std::process::id())), "{message}");
        drop(held);
        ManifestLock::acquire_within(&lake, Duration::from_millis(200)).expect("a released lock is taken");
    }

    #[test]
    fn a_failed_update_saves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        let failed: Result<(), LakeError> = commit(&lake, |m| {
            m.processing_state.total_findings = 7;
            Err(LakeError::Locked { lake: lake.root().to_path_buf(), run: "test", holder: None })
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
