//! One way to commit to the lake, for every writer (import, export, analyze, outcomes,
//! repair), on a local disk as on object storage. A writer registers
//! ([`RegisteredWriter`](super::live_writers::RegisteredWriter)) and writes its files
//! under its id with no lock held. To commit, it writes the next version of the events
//! table's log ([`commit`]); writers of different kinds (a scheduled export and an
//! analysis) never wait for each other. A run excludes only another run of its own kind
//! ([`RunLock`]): the part of the state that is its own (the import records, the export
//! cursor, the analysis history) can then be read at its start and changed at its end.

use std::collections::HashSet;
use std::fs::{self, File};
use std::time::Duration;

use futures::future::try_join_all;

use super::holder::{HeldLock, LockHolder};
use super::layout::{LEGACY_MANIFEST, Lake, Table};
use super::live_writers::sweep_uncommitted;
use super::remote::{Remote, block_on};
use super::state::{FileChange, Manifest};
use super::state_log::{self, Base};
use super::{LakeError, delta};

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

    /// Every kind at once: for a repair or an upgrade, which rewrite the whole state.
    pub fn all(lake: &Lake) -> Result<Self, LakeError> {
        if lake.remote().is_some() {
            return Err(LakeError::NotOnObjectStorage {
                lake: lake.location(),
                what: "repair",
                why: "it needs every writer stopped, which object storage cannot tell; a crashed writer's uploads are named by no commit and never read",
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

/// Commits: reads the lake's state, lets `update` change it, and writes the result as the
/// next version of the events table's log ([`state_log`]); when another writer took that
/// version first, reads again and runs `update` on what that writer committed. Then brings
/// the logs of the other tables it changed in step ([`delta`]) and sweeps the uncommitted
/// files of writers that are gone. Files `update` dropped stay, as earlier versions name
/// them, until `tracelake vacuum`. Returns what `update` returned; nothing is committed
/// when it fails.
///
/// On object storage, the files the new state names are uploaded from the writer's
/// staging directory before the version that commits them is written.
pub fn commit<T, E: From<LakeError>>(lake: &Lake, mut update: impl FnMut(&mut Manifest) -> Result<T, E>) -> Result<T, E> {
    let mut uploaded: HashSet<String> = HashSet::new();
    for lost in 0..COMMIT_ATTEMPTS {
        if lost > 0 {
            // Another writer committed first: back off a little, at random, so that writers
            // committing in step do not keep colliding.
            let ms = rand::random_range(0..=(2u64 << lost.min(8)));
            std::thread::sleep(Duration::from_millis(ms));
        }
        let read = state_log::load(lake)?;
        let mut manifest = read.clone();
        let value = update(&mut manifest)?;
        let change = manifest.change_from(&read);
        manifest.keep_removed(&change);
        manifest.revision += 1;
        if let Some(remote) = lake.remote() {
            upload_new(lake, remote, &change, &mut uploaded)?;
        }
        if state_log::write(lake, &read, &manifest, Base::State(&change))? {
            delta::sync_changed(lake, &read, &manifest, &change)?;
            for file in &uploaded {
                // Committed and uploaded: the staged copy is no longer needed.
                let _ = fs::remove_file(lake.root().join(file));
            }
            if lake.remote().is_none() {
                sweep_uncommitted(lake)?;
            }
            return Ok(value);
        }
    }
    Err(LakeError::Concurrent { lake: lake.location(), run: "commit" }.into())
}

/// How many times a commit reads the state again after other writers committed first.
const COMMIT_ATTEMPTS: u32 = 64;

/// Uploads the staged files a commit's `change` adds that are not uploaded yet.
fn upload_new(lake: &Lake, remote: &Remote, change: &FileChange, uploaded: &mut HashSet<String>) -> Result<(), LakeError> {
    let staged: Vec<String> = change.added.iter().filter(|f| !uploaded.contains(*f) && lake.root().join(f).is_file()).cloned().collect();
    block_on(async {
        for files in staged.chunks(UPLOADS) {
            try_join_all(files.iter().map(|f| remote.upload(f))).await?;
        }
        Ok::<_, LakeError>(())
    })?;
    uploaded.extend(staged);
    Ok(())
}

/// Files uploaded at once by a commit to object storage.
const UPLOADS: usize = 8;

/// At the start of a run: commits the empty state of a new lake (of two writers making a
/// lake at once, one does; both go on), brings the other tables' logs in step with the
/// state (after a process killed between the two), and sweeps what crashed writers left.
/// Returns the state and how many files were swept.
pub fn begin(lake: &Lake) -> Result<(Manifest, usize), LakeError> {
    let mut manifest = state_log::load(lake)?;
    if !manifest.exists {
        state_log::write(lake, &manifest, &manifest, Base::State(&FileChange::default()))?;
        manifest = state_log::load(lake)?;
    }
    delta::sync_all(lake, &manifest)?;
    state_log::sweep_state_files(lake, &manifest)?;
    if lake.remote().is_some() {
        return Ok((manifest, 0));
    }
    let swept = sweep_uncommitted(lake)?.len();
    Ok((state_log::load(lake)?, swept))
}

/// Moves the state of a lake made before it lived in the events table's log into that
/// log, in place: the files it names become the tables' current versions (nothing is
/// copied), and [`LEGACY_MANIFEST`] is kept as `manifest.json.upgraded`. Returns the
/// state, or `None` when the lake had nothing to upgrade.
pub fn upgrade(lake: &Lake) -> Result<Option<Manifest>, LakeError> {
    let _runs = if lake.remote().is_none() { Some(RunLock::all(lake)?) } else { None };
    let Some(legacy) = block_on(state_log::legacy_manifest(lake))? else {
        return Ok(None);
    };
    let latest = delta::version(lake, Table::Events)?;
    let before = Manifest { log_version: latest, ..legacy.clone() };
    let after = Manifest { revision: legacy.revision + 1, ..legacy };
    if !state_log::write(lake, &before, &after, Base::Log)? {
        return Err(LakeError::Concurrent { lake: lake.location(), run: "upgrade" });
    }
    delta::sync_all(lake, &after)?;
    let upgraded = format!("{LEGACY_MANIFEST}.upgraded");
    match lake.remote() {
        Some(remote) => block_on(remote.rename(LEGACY_MANIFEST, &upgraded))?,
        None => {
            fs::rename(lake.root().join(LEGACY_MANIFEST), lake.root().join(&upgraded))
                .map_err(|e| LakeError::io(&lake.root().join(&upgraded), e))?;
            // The commit lock of earlier releases, which no commit takes any more.
            let _ = fs::remove_file(lake.state_dir().join("lock"));
        }
    }
    Ok(Some(state_log::load(lake)?))
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
    fn a_failed_update_saves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        let failed: Result<(), LakeError> = commit(&lake, |m| {
            m.processing_state.total_findings = 7;
            Err(LakeError::Locked { lake: lake.root().to_path_buf(), run: "test", holder: None })
        });
        assert!(failed.is_err());
        assert_eq!(state_log::load(&lake).unwrap().processing_state.total_findings, 0);
        commit::<_, LakeError>(&lake, |m| {
            m.processing_state.total_findings = 7;
            Ok(())
        })
        .unwrap();
        assert_eq!(state_log::load(&lake).unwrap().processing_state.total_findings, 7);
    }

    #[test]
    fn a_commit_another_writer_beat_runs_its_update_again_on_what_that_writer_committed() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        let mut runs = 0;
        commit::<_, LakeError>(&lake, |m| {
            runs += 1;
            if runs == 1 {
                // Another writer commits between this one's read and its write.
                commit::<_, LakeError>(&lake, |other| {
                    other.processing_state.total_findings = 5;
                    Ok(())
                })?;
            }
            m.processing_state.total_events_processed += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(runs, 2, "the update ran again after losing the version");
        let state = state_log::load(&lake).unwrap();
        assert_eq!((state.processing_state.total_findings, state.processing_state.total_events_processed), (5, 1), "both count");
        assert_eq!(state.revision, 2);
        assert_eq!(state.log_version, Some(2));
    }
}
