//! The lake's state ([`Manifest`]: what each import, export, collect and analysis
//! committed) is committed in the Delta log of the `events` table. Every commit to the
//! lake is one version of that log, written create-if-absent, whose `commitInfo` names
//! under [`STATE_KEY`] the state file it commits (`_state/state-<revision>-<id>.json`,
//! written before it), beside the `add` and `remove` actions of the events files it
//! changed and the `txn`s of the lake's revision, the export cursor and each new import.
//! That version is the commit: a writer killed before it committed nothing, one killed
//! after it committed everything. Of two writers that read the same version, one writes
//! the next; the other deletes its state file, reads again and applies its change to what
//! the first committed ([`super::commit::commit`]). The state is a file of its own, not
//! part of the version, so that a log of many small commits (`collect`) does not hold the
//! state once per version. The logs of the other tables follow ([`super::delta`]).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use deltalake_core::DeltaTableError;
use deltalake_core::kernel::Transaction;
use deltalake_core::kernel::transaction::CommitProperties;
use deltalake_core::logstore::LogStoreRef;
use futures::TryStreamExt;
use object_store::path::Path;
use uuid::Uuid;

use super::delta::{self, APP_ID};
use super::layout::{EVENTS_LOG, LEGACY_MANIFEST, Lake, Table};
use super::objects;
use super::remote::block_on;
use super::state::{FileChange, Manifest};
use super::{Damage, LakeError};

/// The key of the state in a version's `commitInfo`.
pub const STATE_KEY: &str = "tracelake";

/// The lake's state as committed last, checked against the files: a local lake with data
/// files but no state, or whose state names a file that is gone, is damaged, and no
/// command may read or write it as if it were whole. A state this process checked or
/// committed is not checked again, so that a commit costs what it changes.
pub fn load(lake: &Lake) -> Result<Manifest, LakeError> {
    let manifest = block_on(read(lake, Check::Files))?;
    if !manifest.exists
        && lake.remote().is_none()
        && Table::ALL.iter().any(|t| super::state::data_files(&lake.table_dir(*t)).is_ok_and(|f| !f.is_empty()))
    {
        return Err(LakeError::Damaged { lake: lake.root().to_path_buf(), problem: Damage::NoManifest });
    }
    Ok(manifest)
}

/// The state as committed last, unchecked (empty for a new lake): for `repair`. A lake
/// that keeps its state in [`LEGACY_MANIFEST`] is refused until `tracelake upgrade`.
pub fn load_unchecked(lake: &Lake) -> Result<Manifest, LakeError> {
    block_on(read(lake, Check::Skip))
}

/// Whether a read checks that the files the state names are there.
#[derive(Clone, Copy, PartialEq)]
enum Check {
    Files,
    Skip,
}

/// Fails when a file `state` names is not in the lake's directory. Object stores keep what
/// they acknowledged: a file the state names was uploaded before the state was committed.
fn check_files(lake: &Lake, state: &Manifest) -> Result<(), LakeError> {
    if lake.remote().is_some() {
        return Ok(());
    }
    let missing: Vec<String> = state.committed_files().into_iter().filter(|f| !lake.root().join(f).is_file()).map(str::to_owned).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(LakeError::Damaged { lake: lake.root().to_path_buf(), problem: Damage::MissingFiles(missing) })
}

/// [`load`] from async code, unchecked on object storage as [`load`] is.
pub async fn load_async(lake: &Lake) -> Result<Manifest, LakeError> {
    match lake.remote() {
        Some(_) => read(lake, Check::Skip).await,
        None => load(lake),
    }
}

/// The state the newest version of the events log that names one holds, with the
/// log's latest version; a new lake's empty state when there is no log.
async fn read(lake: &Lake, check: Check) -> Result<Manifest, LakeError> {
    let log_store = delta::log_store(lake, Table::Events)?;
    let mut gone = None;
    // A state file is deleted once a later version is committed: read that one then.
    for _ in 0..READS {
        let last = last_read(&log_store);
        let Some(latest) = latest_version(lake, &log_store, last.as_ref().and_then(|(m, _)| m.log_version)).await? else { break };
        if let Some((last, checked)) = last.filter(|(m, _)| m.log_version == Some(latest)) {
            if check == Check::Files && !checked {
                check_files(lake, &last)?;
                remember(&log_store, &last, true);
            }
            return Ok(last);
        }
        let Some(pointer) = newest_pointer(lake, &log_store, latest).await? else { break };
        let Some(bytes) = objects::read(lake, &pointer.state).await? else {
            gone = Some(pointer.state);
            continue;
        };
        let corrupt = |source| LakeError::CorruptState { path: format!("{}/{}", lake.location(), pointer.state).into(), source };
        let state: Manifest = serde_json::from_slice(&bytes).map_err(corrupt)?;
        let state = Manifest { exists: true, log_version: Some(latest), state_file: Some(pointer.state), ..state };
        if check == Check::Files {
            check_files(lake, &state)?;
        }
        remember(&log_store, &state, check == Check::Files);
        return Ok(state);
    }
    if let Some(file) = gone {
        return Err(LakeError::Damaged { lake: lake.root().to_path_buf(), problem: Damage::MissingFiles(vec![file]) });
    }
    if legacy_manifest(lake).await?.is_some() {
        return Err(LakeError::LegacyManifest { lake: lake.location() });
    }
    Ok(Manifest { version: 1, ..Manifest::default() })
}

/// How many times a read follows newer versions whose state files replaced the one it found.
const READS: usize = 8;

/// What a version's `commitInfo` holds under [`STATE_KEY`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Pointer {
    revision: u64,
    /// The state file, relative to the lake root.
    state: String,
}

/// The pointer of the newest version up to `latest` that has one. Versions other tools
/// wrote (a vacuum by delta-rs, say) have none; the logs of lakes made before the state
/// moved there have none at all.
async fn newest_pointer(lake: &Lake, log_store: &LogStoreRef, latest: u64) -> Result<Option<Pointer>, LakeError> {
    for version in (latest.saturating_sub(delta::CHECKPOINT_INTERVAL)..=latest).rev() {
        let Some(bytes) = log_store.read_commit_entry(version).await.map_err(read_error)? else { continue };
        let corrupt =
            |source| LakeError::CorruptState { path: format!("{}/{EVENTS_LOG}/{version:020}.json", lake.location()).into(), source };
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let action: serde_json::Value = serde_json::from_slice(line).map_err(corrupt)?;
            if let Some(pointer) = action.get("commitInfo").and_then(|info| info.get(STATE_KEY)) {
                return serde_json::from_value(pointer.clone()).map(Some).map_err(corrupt);
            }
        }
    }
    Ok(None)
}

/// The state this process read or committed last, by the URL of the events log, and
/// whether its files were checked: the next commit of a `collect` or an `export --every`
/// then looks for one file, the version after it, instead of listing the log, reading the
/// state again and checking every file it names.
static LAST_READ: LazyLock<Mutex<HashMap<String, (Manifest, bool)>>> = LazyLock::new(Mutex::default);

fn last_read(log_store: &LogStoreRef) -> Option<(Manifest, bool)> {
    LAST_READ.lock().ok()?.get(log_store.root_url().as_str()).cloned()
}

fn remember(log_store: &LogStoreRef, state: &Manifest, checked: bool) {
    if let Ok(mut all) = LAST_READ.lock() {
        all.insert(log_store.root_url().to_string(), (state.clone(), checked));
    }
}

/// The latest version of the log; `None` when it has none. Looked for from `known`, the
/// version this process read last, else from the last checkpoint, as a reader of the table
/// starts there: on a disk version after version (a listing reads the whole directory), on
/// object storage by listing what follows.
async fn latest_version(lake: &Lake, log_store: &LogStoreRef, known: Option<u64>) -> Result<Option<u64>, LakeError> {
    let log = lake.root().join(EVENTS_LOG);
    let committed = |version: u64| log.join(format!("{version:020}.json")).is_file();
    // A local lake made again at the same path does not have the version known.
    let known = if lake.remote().is_none() { known.filter(|v| committed(*v)) } else { known };
    let from = match known {
        Some(known) => Some(known),
        None => delta::last_checkpoint(log_store).await.map_err(read_error)?,
    };
    if lake.remote().is_none() {
        let mut latest = from;
        while committed(latest.map_or(0, |v| v + 1)) {
            latest = Some(latest.map_or(0, |v| v + 1));
        }
        return Ok(latest);
    }
    let offset = Path::from(format!("_delta_log/{:020}", from.unwrap_or(0)));
    let listed: Vec<_> = log_store
        .object_store(None)
        .list_with_offset(Some(&Path::from("_delta_log")), &offset)
        .try_collect()
        .await
        .map_err(|e| LakeError::ObjectStore { lake: lake.location(), key: EVENTS_LOG.into(), source: Box::new(e) })?;
    let commits = listed.iter().filter_map(|meta| meta.location.filename()?.strip_suffix(".json")?.parse::<u64>().ok());
    Ok(commits.max().or(from))
}

/// The state a lake made before the state moved into the events log kept, if it has one.
pub async fn legacy_manifest(lake: &Lake) -> Result<Option<Manifest>, LakeError> {
    let Some(bytes) = objects::read(lake, LEGACY_MANIFEST).await? else { return Ok(None) };
    let path = format!("{}/{LEGACY_MANIFEST}", lake.location());
    serde_json::from_slice(&bytes)
        .map(|m| Some(Manifest { exists: true, ..m }))
        .map_err(|e| LakeError::CorruptState { path: path.into(), source: e })
}

/// Which files the version a commit writes changes: those the commit changed in the state
/// it read (every commit), or those that differ from what the log names (an upgrade, a
/// repair, whose log may name other files than the state).
#[derive(Debug, Clone, Copy)]
pub enum Base<'a> {
    State(&'a FileChange),
    Log,
}

/// Commits `after`, the state `before` (as read) changed by a writer, as the events log's
/// next version. Returns `false`, having written nothing, when another writer took it.
pub fn write(lake: &Lake, before: &Manifest, after: &Manifest, base: Base) -> Result<bool, LakeError> {
    let error = |source: DeltaTableError| LakeError::Delta { table: "events", source: Box::new(source) };
    block_on(async {
        if lake.remote().is_none() {
            let dir = lake.table_dir(Table::Events);
            std::fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
        }
        let log_store = delta::log_store(lake, Table::Events)?;
        let actions = match base {
            Base::State(change) => delta::changes(&log_store, Table::Events, change).await.map_err(error)?,
            Base::Log => delta::changes_from_log(&log_store, Table::Events, before.log_version, after).await.map_err(error)?,
        };
        let state_file = format!("_state/state-{:020}-{}.json", after.revision, Uuid::new_v4().simple());
        objects::write(lake, &state_file, serde_json::to_vec(after).expect("state serializes")).await?;
        let pointer = Pointer { revision: after.revision, state: state_file.clone() };
        let metadata = HashMap::from([(STATE_KEY.to_owned(), serde_json::to_value(&pointer).expect("a pointer serializes"))]);
        // An upgrade or a repair names every import and the export cursor anew.
        let nothing = Manifest::default();
        let txns = transactions(if matches!(base, Base::Log) { &nothing } else { before }, after);
        let Some(latest) = before.log_version else {
            let properties = CommitProperties::default().with_metadata(metadata).with_application_transactions(txns);
            let won = match delta::create(&log_store, Table::Events, actions, properties).await {
                Ok(()) => true,
                // Another writer made the log first.
                Err(e) if delta::lost_the_race(&e) || latest_version(lake, &log_store, None).await?.is_some() => false,
                Err(e) => return Err(error(e)),
            };
            return settle(lake, &log_store, before, after, 0, state_file, won).await;
        };
        let version = latest + 1;
        let won = match delta::write_version(&log_store, version, actions, metadata, txns).await {
            Ok(won) => won,
            Err(DeltaTableError::ObjectStore { source: object_store::Error::NotImplemented { .. } }) => {
                return Err(LakeError::NoConditionalWrites { lake: lake.location() });
            }
            Err(e) => return Err(error(e)),
        };
        settle(lake, &log_store, before, after, version, state_file, won).await
    })
}

/// After a commit's version is written or taken: the state file the lost one staged, or
/// the one the won one replaced, is deleted. Returns `won`.
async fn settle(
    lake: &Lake,
    log_store: &LogStoreRef,
    before: &Manifest,
    after: &Manifest,
    version: u64,
    state_file: String,
    won: bool,
) -> Result<bool, LakeError> {
    if !won {
        objects::delete(lake, &state_file).await?;
        return Ok(false);
    }
    if let Some(replaced) = &before.state_file {
        objects::delete(lake, replaced).await?;
    }
    // What this process committed: the files it read (checked) and those it wrote.
    let committed = Manifest { exists: true, log_version: Some(version), state_file: Some(state_file), ..after.clone() };
    remember(log_store, &committed, true);
    Ok(true)
}

/// Deletes the state files no version will name: those of revisions before the current
/// one, which commits that lost or were killed left. A writer's file staged for the next
/// revision is after the current one, and kept.
pub fn sweep_state_files(lake: &Lake, state: &Manifest) -> Result<usize, LakeError> {
    block_on(async {
        let listed: Vec<String> = match lake.remote() {
            Some(remote) => remote.list_sizes("_state").await?.into_iter().map(|(key, _)| key).collect(),
            None => match std::fs::read_dir(lake.state_dir()) {
                Ok(entries) => entries.flatten().map(|e| format!("_state/{}", e.file_name().to_string_lossy())).collect(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(LakeError::io(&lake.state_dir(), e)),
            },
        };
        let mut swept = 0;
        for file in listed {
            let revision = file.strip_prefix("_state/state-").and_then(|rest| rest.get(..20)).and_then(|r| r.parse::<u64>().ok());
            if revision.is_some_and(|r| r < state.revision) && state.state_file.as_deref() != Some(file.as_str()) {
                objects::delete(lake, &file).await?;
                swept += 1;
            }
        }
        Ok(swept)
    })
}

/// The `txn`s of a commit: the lake's revision, and where the export cursor moved or an
/// import was committed, their identities, so that any Delta reader sees them.
fn transactions(before: &Manifest, after: &Manifest) -> Vec<Transaction> {
    let revision = i64::try_from(after.revision).unwrap_or(i64::MAX);
    let mut txns = vec![Transaction::new(APP_ID, revision)];
    if let Some(export) = &after.export
        && before.export.as_ref().is_none_or(|was| was.cursor != export.cursor)
    {
        let cursor = i64::try_from(export.cursor).unwrap_or(i64::MAX);
        txns.push(Transaction::new(format!("{APP_ID}-export-{}", export.stream), cursor));
    }
    for import in after.imports.iter().filter(|i| !before.imports.iter().any(|was| was.sha256 == i.sha256)) {
        let lines = i64::try_from(import.lines).unwrap_or(i64::MAX);
        txns.push(Transaction::new(format!("{APP_ID}-import-{}", import.sha256), lines));
    }
    txns
}

fn read_error(source: DeltaTableError) -> LakeError {
    delta::read_error(Table::Events, source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::commit::{begin, commit, upgrade};

    fn commit_findings(lake: &Lake, total: u64) {
        commit::<_, LakeError>(lake, |m| {
            m.processing_state.total_findings = total;
            Ok(())
        })
        .unwrap();
    }

    fn forget(lake: &Lake) {
        let log_store = delta::log_store(lake, Table::Events).unwrap();
        LAST_READ.lock().unwrap().remove(log_store.root_url().as_str());
    }

    #[test]
    fn each_commit_is_a_version_of_the_events_log_that_carries_the_whole_state() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        commit_findings(&lake, 3);
        let commit = std::fs::read_to_string(dir.path().join(EVENTS_LOG).join(format!("{:020}.json", 1))).unwrap();
        let info: serde_json::Value = commit
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find_map(|a| a.get("commitInfo").cloned())
            .unwrap();
        assert_eq!(info[STATE_KEY]["revision"], 1);
        let state_file = info[STATE_KEY]["state"].as_str().unwrap();
        assert!(state_file.starts_with("_state/state-00000000000000000001-"), "{state_file}");
        let state: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join(state_file)).unwrap()).unwrap();
        assert_eq!(state["processingState"]["totalFindings"], 3);
        assert!(commit.contains(r#""txn":{"appId":"tracelake","version":1"#), "{commit}");
        let state_files: Vec<String> = std::fs::read_dir(dir.path().join("_state"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("state-"))
            .collect();
        assert_eq!(state_files, vec![state_file.trim_start_matches("_state/").to_owned()], "the state it replaced is deleted");
    }

    #[test]
    fn state_files_no_version_names_are_swept_and_a_staged_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        commit_findings(&lake, 1);
        commit_findings(&lake, 2);
        // What a commit that lost, or was killed, left: of an earlier revision and of the next.
        let left = dir.path().join("_state/state-00000000000000000001-0123.json");
        let staged = dir.path().join("_state/state-00000000000000000003-4567.json");
        std::fs::write(&left, b"{}").unwrap();
        std::fs::write(&staged, b"{}").unwrap();
        let state = load(&lake).unwrap();
        assert_eq!(sweep_state_files(&lake, &state).unwrap(), 1);
        assert!(!left.exists() && staged.exists());
        assert!(dir.path().join(state.state_file.unwrap()).exists());
    }

    #[test]
    fn a_process_that_did_not_write_the_last_versions_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        for total in 1..=3 {
            commit_findings(&lake, total);
        }
        forget(&lake);
        let state = load(&lake).unwrap();
        assert_eq!((state.log_version, state.processing_state.total_findings), (Some(3), 3));
        // A version another tool wrote, without the state: the newest state is read, and
        // the next commit goes after that version.
        let log = dir.path().join(EVENTS_LOG);
        let commit = std::fs::read_to_string(log.join(format!("{:020}.json", 3))).unwrap();
        let without_state: Vec<&str> = commit.lines().filter(|l| !l.contains("commitInfo")).collect();
        std::fs::write(log.join(format!("{:020}.json", 4)), without_state.join("\n")).unwrap();
        let state = load(&lake).unwrap();
        assert_eq!((state.log_version, state.processing_state.total_findings), (Some(4), 3));
        commit_findings(&lake, 5);
        forget(&lake);
        let state = load(&lake).unwrap();
        assert_eq!((state.log_version, state.processing_state.total_findings), (Some(5), 5));
    }

    #[test]
    fn a_lake_of_an_earlier_release_is_refused_until_upgraded_and_then_reads_its_state() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        std::fs::create_dir_all(dir.path().join("_state")).unwrap();
        let legacy = serde_json::json!({"version": 1, "revision": 7, "imports": [], "processingState": {
            "lastProcessedTs": 0, "lastProcessedSeq": 0, "totalEventsProcessed": 10, "totalFindings": 2, "updatedAt": ""}});
        std::fs::write(dir.path().join(LEGACY_MANIFEST), legacy.to_string()).unwrap();
        std::fs::write(dir.path().join("_state/lock"), b"").unwrap();
        let refused = load(&lake).unwrap_err().to_string();
        assert!(refused.contains("run `tracelake upgrade --lake "), "{refused}");
        let upgraded = upgrade(&lake).unwrap().expect("there was a state to move");
        assert_eq!((upgraded.revision, upgraded.processing_state.total_findings), (8, 2));
        assert!(!dir.path().join(LEGACY_MANIFEST).exists());
        assert!(dir.path().join("_state/manifest.json.upgraded").exists());
        assert!(!dir.path().join("_state/lock").exists(), "nor the commit lock of earlier releases");
        forget(&lake);
        assert_eq!(load(&lake).unwrap().processing_state.total_events_processed, 10);
        assert!(upgrade(&lake).unwrap().is_none(), "once");
    }
}
