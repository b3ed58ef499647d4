//! Every table of the lake is also a Delta table, so DuckDB, Spark, Polars and delta-rs
//! read exactly the committed rows. The events table's log is the commit itself
//! ([`super::state_log`]); the logs of the other tables follow it here.
//!
//! After each commit, each other table whose files changed gets one Delta version whose
//! `add` and `remove` actions make its files those the state names. The version carries
//! the lake's revision as the `txn` of app id [`APP_ID`]: a log that already holds a
//! later revision is never taken back to an earlier one (two writers sync in any order).
//! A process killed between the commit and these logs leaves each at its previous
//! version, whole; the next run's [`sync_all`] catches up.
//!
//! A sync reads a log whole (delta-rs's snapshot holds every file of the table) only
//! when it does not know it: the first time in a process, or after another writer. Then
//! this process remembers the version it wrote and the revision that version holds, and
//! its next sync appends the difference between the two states as the next version,
//! written create-if-absent, without reading the log again ([`append`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

use deltalake_core::checkpoints;
use deltalake_core::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake_core::kernel::transaction::{CommitBuilder, CommitData, CommitProperties, TransactionError};
use deltalake_core::kernel::{Action, Add, DataType, Remove, StructField, StructType, Transaction};
use deltalake_core::logstore::{CommitOrBytes, LogStoreRef, StorageConfig, default_logstore};
use deltalake_core::operations::create::CreateBuilder;
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::table::state::DeltaTableState;
use deltalake_core::{DeltaTable, DeltaTableError, TableProperty};
use futures::future::try_join_all;
use futures::{StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;
use uuid::Uuid;

use super::LakeError;
use super::layout::{Lake, Table, partition_value};
use super::remote::block_on;
use super::schema::{PARTITION_COLUMN, file_schema};
use super::state::{FileChange, Manifest};

/// The application id of the `txn` whose version is the lake's revision a log is at.
pub const APP_ID: &str = "tracelake";

/// How many times a sync reads a log again after another writer took its next version.
const SYNC_ATTEMPTS: usize = 20;

/// Versions between checkpoints (Delta's default), which readers start from.
pub(super) const CHECKPOINT_INTERVAL: u64 = 100;

/// Files whose size is read at once when a sync adds many (a lake's first sync).
const HEADS: usize = 16;

/// Brings the logs of the tables whose files `change` took from those of `before` to
/// those of `after` (the state as committed) in step with `after`.
pub fn sync_changed(lake: &Lake, before: &Manifest, after: &Manifest, change: &FileChange) -> Result<(), LakeError> {
    let changed: Vec<Table> = followers().filter(|t| change.touches(*t)).collect();
    sync(lake, after, &changed, Order::Revision, Some((before, change)))
}

/// Brings the log of every table but events in step with `manifest`, making the logs of
/// a new lake.
pub fn sync_all(lake: &Lake, manifest: &Manifest) -> Result<(), LakeError> {
    sync(lake, manifest, &followers().collect::<Vec<_>>(), Order::Revision, None)
}

/// Brings the log of every table but events in step with a repaired state, whatever
/// revision the logs hold (that of a state that was lost, say). Every writer is stopped
/// meanwhile.
pub fn sync_repaired(lake: &Lake, manifest: &Manifest) -> Result<(), LakeError> {
    sync(lake, manifest, &followers().collect::<Vec<_>>(), Order::Overrule, None)
}

/// The tables whose logs follow the events table's, which holds the commits.
fn followers() -> impl Iterator<Item = Table> {
    Table::ALL.into_iter().filter(|t| *t != Table::Events)
}

/// Whether a log that holds a later revision is left as it is.
#[derive(Clone, Copy, PartialEq)]
enum Order {
    Revision,
    Overrule,
}

/// Brings the logs of `tables` in step with `manifest`; with the state it replaced and
/// the change from that (`before`), a log this process wrote last is appended to without
/// being read.
fn sync(
    lake: &Lake,
    manifest: &Manifest,
    tables: &[Table],
    order: Order,
    before: Option<(&Manifest, &FileChange)>,
) -> Result<(), LakeError> {
    if tables.is_empty() {
        return Ok(());
    }
    // The tables' logs are independent: each waits on its own store round trips.
    block_on(try_join_all(tables.iter().map(|&table| sync_table(lake, manifest, table, order, before)))).map(drop)
}

async fn sync_table(
    lake: &Lake,
    manifest: &Manifest,
    table: Table,
    order: Order,
    before: Option<(&Manifest, &FileChange)>,
) -> Result<(), LakeError> {
    let error = |source: DeltaTableError| LakeError::Delta { table: table.dir_name(), source: Box::new(source) };
    if lake.remote().is_none() {
        let dir = lake.table_dir(table);
        std::fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
    }
    let log_store = log_store(lake, table)?;
    if let Some((before, change)) = before
        && append(&log_store, table, before, manifest, change).await.map_err(error)?
    {
        return Ok(());
    }
    let want = table_relative(manifest, table);
    let revision = revision_of(manifest);
    let mut delta = DeltaTable::new(log_store.clone());
    for _ in 0..SYNC_ATTEMPTS {
        let txn = Transaction::new(APP_ID, revision);
        match delta.load().await {
            Ok(()) => {}
            Err(DeltaTableError::NotATable(_)) => {
                // The table's first version holds the files committed so far.
                let files = want.iter().map(|f| (*f).to_owned()).collect();
                let adds = adds(&log_store, files).await.map_err(error)?;
                match create(&log_store, table, adds, CommitProperties::default().with_application_transaction(txn)).await {
                    Ok(()) => {
                        remember(&log_store, Known { version: 0, revision });
                        return Ok(());
                    }
                    // Another writer made it first: then the log reads now.
                    Err(e) if lost_the_race(&e) || DeltaTable::new(log_store.clone()).load().await.is_ok() => continue,
                    Err(e) => return Err(error(e)),
                }
            }
            Err(e) => return Err(error(e)),
        }
        let snapshot = delta.snapshot().map_err(error)?;
        let at = snapshot.transaction_version(log_store.as_ref(), APP_ID).await.map_err(error)?;
        if order == Order::Revision
            && let Some(at) = at.filter(|at| *at > revision)
        {
            remember(&log_store, Known { version: snapshot.version(), revision: at });
            return Ok(());
        }
        let (added, removes) = difference(Some(snapshot), &want);
        if added.is_empty() && removes.is_empty() {
            remember(&log_store, Known { version: snapshot.version(), revision });
            return Ok(());
        }
        let operation = write_operation(!removes.is_empty());
        let mut actions = adds(&log_store, added).await.map_err(error)?;
        actions.extend(removes);
        // No retry inside delta-rs: after another writer's version, the difference is
        // worked out again from the log as it now is.
        let commit = CommitBuilder::from(CommitProperties::default().with_application_transaction(txn))
            .with_actions(actions)
            .with_max_retries(0)
            .build(Some(snapshot), log_store.clone(), operation);
        match commit.await {
            Ok(finalized) => {
                remember(&log_store, Known { version: finalized.version(), revision });
                return Ok(());
            }
            Err(e) if lost_the_race(&e) => {}
            Err(e) => return Err(error(e)),
        }
    }
    Err(LakeError::Concurrent { lake: lake.location(), run: "commit" })
}

/// What this process knows of a table's log, by table URL: the version it last read or
/// wrote, and the revision that version holds.
#[derive(Clone, Copy)]
struct Known {
    version: u64,
    revision: i64,
}

static KNOWN: LazyLock<Mutex<HashMap<String, Known>>> = LazyLock::new(Mutex::default);

fn known(log_store: &LogStoreRef) -> Option<Known> {
    KNOWN.lock().ok()?.get(log_store.root_url().as_str()).copied()
}

fn remember(log_store: &LogStoreRef, known: Known) {
    if let Ok(mut all) = KNOWN.lock() {
        all.insert(log_store.root_url().to_string(), known);
    }
}

/// Appends the change from `before` to `after` to the table's log as its next version,
/// when this process wrote the log's last version and that holds `before`'s revision.
/// Returns `false`, having written nothing, when it does not know the log to be there, or
/// when another writer took the next version. The log is not listed first: the version is
/// written create-if-absent, which finds another writer's, and a listing of the log costs
/// as much as the versions it holds (a `collect` commits five times a second).
async fn append(
    log_store: &LogStoreRef,
    table: Table,
    before: &Manifest,
    after: &Manifest,
    change: &FileChange,
) -> Result<bool, DeltaTableError> {
    let Some(known) = known(log_store) else { return Ok(false) };
    if known.revision != revision_of(before) || revision_of(after) <= known.revision {
        return Ok(false);
    }
    let actions = changes(log_store, table, change).await?;
    let version = known.version + 1;
    let txn = Transaction::new(APP_ID, revision_of(after));
    if !write_version(log_store, version, actions, HashMap::new(), vec![txn]).await? {
        return Ok(false);
    }
    remember(log_store, Known { version, revision: revision_of(after) });
    Ok(true)
}

/// Writes `actions` as `version` of the log, create-if-absent, with `metadata` in its
/// `commitInfo` and the `txns`, then the checkpoint when one is due. Returns `false`,
/// having written nothing, when another writer took that version.
pub(super) async fn write_version(
    log_store: &LogStoreRef,
    version: u64,
    actions: Vec<Action>,
    metadata: HashMap<String, serde_json::Value>,
    txns: Vec<Transaction>,
) -> Result<bool, DeltaTableError> {
    let replaces = actions.iter().any(|a| matches!(a, Action::Remove(_)));
    let bytes = CommitData::new(actions, write_operation(replaces), metadata, txns).get_bytes()?;
    match log_store.write_commit_entry(version, CommitOrBytes::LogBytes(bytes), Uuid::new_v4()).await {
        Ok(()) => {}
        Err(TransactionError::VersionAlreadyExists(_)) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    checkpoint_if_due(log_store, version).await?;
    Ok(true)
}

/// The `add` and `remove` actions of a table's files that `change` adds and drops.
pub(super) async fn changes(log_store: &LogStoreRef, table: Table, change: &FileChange) -> Result<Vec<Action>, DeltaTableError> {
    let (added, dropped) = change.of_table(table);
    let added: Vec<String> = added.into_iter().map(str::to_owned).collect();
    let now = chrono::Utc::now().timestamp_millis();
    let removes = dropped.into_iter().map(|f| {
        Action::Remove(Remove {
            path: f.to_owned(),
            data_change: true,
            deletion_timestamp: Some(now),
            partition_values: Some(partition_values(f)),
            ..Default::default()
        })
    });
    let mut actions = adds(log_store, added).await?;
    actions.extend(removes);
    Ok(actions)
}

/// The `add` and `remove` actions that take a table's files from those its log names at
/// `version` (none without one) to those `after` names.
pub(super) async fn changes_from_log(
    log_store: &LogStoreRef,
    table: Table,
    version: Option<u64>,
    after: &Manifest,
) -> Result<Vec<Action>, DeltaTableError> {
    let mut delta = DeltaTable::new(log_store.clone());
    if let Some(version) = version {
        delta.load_version(version).await?;
    }
    let (added, removes) = difference(version.map(|_| delta.snapshot()).transpose()?, &table_relative(after, table));
    let mut actions = adds(log_store, added).await?;
    actions.extend(removes);
    Ok(actions)
}

/// The files of `want` that a log's `snapshot` (none: an empty log) lacks, and the
/// `remove` actions of those it has that `want` does not name.
fn difference(snapshot: Option<&DeltaTableState>, want: &HashSet<&str>) -> (Vec<String>, Vec<Action>) {
    let mut have = HashSet::new();
    let mut removes = Vec::new();
    if let Some(snapshot) = snapshot {
        for file in snapshot.log_data().iter() {
            if want.contains(file.path().as_ref()) {
                have.insert(file.path().into_owned());
            } else {
                removes.push(Action::Remove(file.remove_action(true)));
            }
        }
    }
    let added = want.iter().filter(|f| !have.contains(**f)).map(|f| (*f).to_owned()).collect();
    (added, removes)
}

/// Writes the checkpoint readers start from at every [`CHECKPOINT_INTERVAL`]th version.
async fn checkpoint_if_due(log_store: &LogStoreRef, version: u64) -> Result<(), DeltaTableError> {
    if version.is_multiple_of(CHECKPOINT_INTERVAL) {
        let mut delta = DeltaTable::new(log_store.clone());
        delta.load_version(version).await?;
        checkpoints::create_checkpoint(&delta, None).await?;
    }
    Ok(())
}

/// The version of the log's last checkpoint, from `_delta_log/_last_checkpoint`.
pub(super) async fn last_checkpoint(log_store: &LogStoreRef) -> Result<Option<u64>, DeltaTableError> {
    let store = log_store.object_store(None);
    match store.get(&Path::from("_delta_log/_last_checkpoint")).await {
        Ok(got) => {
            let bytes = got.bytes().await?;
            let hint: serde_json::Value = serde_json::from_slice(&bytes).map_err(|json_err| DeltaTableError::InvalidJsonLog {
                json_err,
                line: String::from_utf8_lossy(&bytes).into_owned(),
                version: 0,
            })?;
            Ok(hint.get("version").and_then(serde_json::Value::as_u64))
        }
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A commit's operation as the log records it: one that replaces files (a full analysis,
/// a repair) overwrites part of the table.
fn write_operation(replaces: bool) -> DeltaOperation {
    DeltaOperation::Write {
        mode: if replaces { SaveMode::Overwrite } else { SaveMode::Append },
        partition_by: Some(vec![PARTITION_COLUMN.to_owned()]),
        predicate: None,
    }
}

/// The lake's revision, as a `txn` version.
fn revision_of(manifest: &Manifest) -> i64 {
    i64::try_from(manifest.revision).unwrap_or(i64::MAX)
}

/// The committed files of a table, relative to it (`date=…/part-….parquet`).
fn table_relative(manifest: &Manifest, table: Table) -> HashSet<&str> {
    manifest.table_files(table).into_iter().filter_map(|f| table.relative(f)).collect()
}

/// The partition values of a file, from its path.
fn partition_values(file: &str) -> HashMap<String, Option<String>> {
    let date = file.split('/').next().and_then(partition_value).map(str::to_owned);
    HashMap::from([(PARTITION_COLUMN.to_owned(), date)])
}

/// Whether a commit failed only because another writer took the version it meant to write.
pub(super) fn lost_the_race(error: &DeltaTableError) -> bool {
    matches!(
        error,
        DeltaTableError::Transaction { source: TransactionError::VersionAlreadyExists(_) | TransactionError::MaxCommitAttempts(_) }
    )
}

/// Makes the table's log: version 0 with the table's columns and `adds`.
pub(super) async fn create(
    log_store: &LogStoreRef,
    table: Table,
    adds: Vec<Action>,
    properties: CommitProperties,
) -> Result<(), DeltaTableError> {
    CreateBuilder::new()
        .with_log_store(log_store.clone())
        .with_table_name(table.dir_name())
        .with_columns(columns(table)?.fields().cloned())
        .with_partition_columns([PARTITION_COLUMN])
        .with_configuration_property(TableProperty::CheckpointInterval, Some(CHECKPOINT_INTERVAL.to_string()))
        .with_actions(adds)
        .with_commit_properties(properties)
        .await?;
    Ok(())
}

/// The Delta columns of a table: those of its files, then the partition column.
pub fn columns(table: Table) -> Result<StructType, DeltaTableError> {
    let files: StructType = file_schema(table).as_ref().try_into_kernel()?;
    let partition = StructField::new(PARTITION_COLUMN, DataType::STRING, false);
    Ok(StructType::try_new(files.fields().cloned().chain([partition]))?)
}

/// `add` actions for files of the table (paths relative to it, `date=…/part-….parquet`).
async fn adds(log_store: &LogStoreRef, files: Vec<String>) -> Result<Vec<Action>, DeltaTableError> {
    let store = log_store.object_store(None);
    let heads = files.into_iter().map(move |file| {
        let store = Arc::clone(&store);
        async move {
            let meta = store.head(&Path::from(file.as_str())).await?;
            Ok::<_, DeltaTableError>(Action::Add(Add {
                partition_values: partition_values(&file),
                path: file,
                size: i64::try_from(meta.size).unwrap_or(i64::MAX),
                modification_time: meta.last_modified.timestamp_millis(),
                data_change: true,
                ..Default::default()
            }))
        }
    });
    futures::stream::iter(heads).buffered(HEADS).try_collect().await
}

/// The log store of a table: on the lake's object store, or on the local file system.
pub(super) fn log_store(lake: &Lake, table: Table) -> Result<LogStoreRef, LakeError> {
    let (root, prefix, url): (Arc<dyn ObjectStore>, Path, Url) = match lake.remote() {
        Some(remote) => {
            let table_url = remote.table_url(table);
            let url = Url::parse(&table_url).map_err(|source| LakeError::NotAUrl { location: table_url.clone(), source })?;
            (remote.store(), remote.key(table.dir_name()), url)
        }
        None => {
            let dir = lake.resolved_root().map_err(|e| LakeError::io(lake.root(), e))?.join(table.dir_name());
            let prefix = Path::from_absolute_path(&dir).map_err(|e| LakeError::ObjectPath {
                lake: lake.location(),
                path: dir.display().to_string(),
                source: Box::new(e),
            })?;
            let url = Url::from_directory_path(&dir).map_err(|()| LakeError::NotALocalPath { lake: dir.display().to_string() })?;
            (Arc::new(LocalFileSystem::new()), prefix, url)
        }
    };
    let prefixed: Arc<dyn ObjectStore> = Arc::new(PrefixStore::new(Arc::clone(&root), prefix));
    Ok(default_logstore(prefixed, root, &url, &StorageConfig::default()))
}

/// The log store of a table that may have a log: `None` for a local table with no directory.
pub fn existing_log_store(lake: &Lake, table: Table) -> Result<Option<LogStoreRef>, LakeError> {
    if lake.remote().is_none() && !lake.table_dir(table).is_dir() {
        return Ok(None);
    }
    log_store(lake, table).map(Some)
}

/// A table's log loaded at its latest version; `None` when the table has none.
pub async fn load(lake: &Lake, table: Table) -> Result<Option<DeltaTable>, LakeError> {
    let Some(log_store) = existing_log_store(lake, table)? else { return Ok(None) };
    let mut delta = DeltaTable::new(log_store);
    match delta.load().await {
        Ok(()) => Ok(Some(delta)),
        Err(DeltaTableError::NotATable(_)) => Ok(None),
        Err(e) => Err(read_error(table, e)),
    }
}

/// The files of the latest version of each of `tables`, relative to the lake root: what a
/// reader of the lake sees.
pub async fn committed_files(lake: &Lake, tables: &[Table]) -> Result<HashSet<String>, LakeError> {
    let tables = try_join_all(tables.iter().map(|&table| async move { Ok::<_, LakeError>((table, load(lake, table).await?)) })).await?;
    let mut files = HashSet::new();
    for (table, delta) in tables {
        let Some(delta) = delta else { continue };
        let snapshot = delta.snapshot().map_err(|e| read_error(table, e))?;
        files.extend(snapshot.log_data().iter().map(|f| format!("{}/{}", table.dir_name(), f.path())));
    }
    Ok(files)
}

/// The tables among `tables` that have no Delta log: those of a lake made before tables
/// had one, which `tracelake upgrade` gives theirs.
pub async fn without_log(lake: &Lake, tables: &[Table]) -> Result<Vec<Table>, LakeError> {
    let mut missing = Vec::new();
    for &table in tables {
        let Some(log_store) = existing_log_store(lake, table)? else {
            missing.push(table);
            continue;
        };
        let mut listed = log_store.object_store(None).list(Some(&Path::from("_delta_log")));
        if listed
            .next()
            .await
            .transpose()
            .map_err(|e| LakeError::ObjectStore {
                lake: lake.location(),
                key: format!("{}/_delta_log", table.dir_name()),
                source: Box::new(e),
            })?
            .is_none()
        {
            missing.push(table);
        }
    }
    Ok(missing)
}

/// An error reading a table's log.
pub fn read_error(table: Table, source: DeltaTableError) -> LakeError {
    LakeError::DeltaRead { table: table.dir_name(), source: Box::new(source) }
}

/// The files the tables' logs removed and did not add again, relative to the lake root:
/// files commits replaced, which no current version names.
pub fn removed_files(lake: &Lake) -> Result<HashSet<String>, LakeError> {
    block_on(async {
        let mut removed = HashSet::new();
        for table in Table::ALL {
            let Some(delta) = load(lake, table).await? else { continue };
            let snapshot = delta.snapshot().map_err(|e| read_error(table, e))?;
            let mut tombstones = snapshot.all_tombstones(delta.log_store().as_ref());
            while let Some(tombstone) = tombstones.next().await {
                removed.insert(format!("{}/{}", table.dir_name(), tombstone.map_err(|e| read_error(table, e))?.path()));
            }
        }
        Ok(removed)
    })
}

/// The version a table's log is at; `None` when it has none yet.
pub fn version(lake: &Lake, table: Table) -> Result<Option<u64>, LakeError> {
    block_on(async { Ok(load(lake, table).await?.and_then(|delta| delta.version())) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::commit::{begin, commit};
    use crate::lake::state::AnalysisRecord;
    use crate::lake::state_log;

    /// The files of a table's log as a Delta reader sees them, relative to the lake.
    fn files_in_log(lake: &Lake, table: Table) -> Vec<String> {
        let log_store = log_store(lake, table).unwrap();
        block_on(async {
            let mut delta = DeltaTable::new(log_store);
            delta.load().await.unwrap();
            let mut files: Vec<String> =
                delta.snapshot().unwrap().log_data().iter().map(|f| format!("{}/{}", table.dir_name(), f.path())).collect();
            files.sort();
            files
        })
    }

    /// A data file of `table` (the log reads only its size).
    fn data_file(lake: &Lake, table: Table, name: &str) -> String {
        let relative = format!("{}/date=2026-01-01/{name}", table.dir_name());
        let path = lake.root().join(&relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"PAR1").unwrap();
        relative
    }

    fn analysis(files: &[&String]) -> AnalysisRecord {
        AnalysisRecord { run_id: "r".into(), files: files.iter().map(|f| (*f).clone()).collect(), ..AnalysisRecord::default() }
    }

    #[test]
    fn each_commit_brings_the_logs_of_the_tables_it_changed_in_step() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        assert_eq!(version(&lake, Table::Findings).unwrap(), Some(0), "a new lake's tables have logs");
        let first = data_file(&lake, Table::Findings, "part-0000000000000001-00001.parquet");
        commit::<_, LakeError>(&lake, |m| {
            m.analyses.push(analysis(&[&first]));
            Ok(())
        })
        .unwrap();
        assert_eq!(files_in_log(&lake, Table::Findings), vec![first.clone()]);
        assert_eq!(version(&lake, Table::Outcomes).unwrap(), Some(0), "a table the commit did not change keeps its version");
        assert_eq!(version(&lake, Table::Events).unwrap(), Some(1), "every commit is a version of the events log");

        let second = data_file(&lake, Table::Findings, "part-0000000000000002-00001.parquet");
        commit::<_, LakeError>(&lake, |m| {
            m.analyses = vec![analysis(&[&second])];
            Ok(())
        })
        .unwrap();
        assert_eq!(files_in_log(&lake, Table::Findings), vec![second], "a replaced file is removed from the log");
        assert_eq!(version(&lake, Table::Findings).unwrap(), Some(2));
    }

    #[test]
    fn a_process_that_appends_version_after_version_writes_the_checkpoints_readers_start_from() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        let mut files = Vec::new();
        for n in 1..=CHECKPOINT_INTERVAL {
            let file = data_file(&lake, Table::Findings, &format!("part-{n:016x}-00001.parquet"));
            commit::<_, LakeError>(&lake, |m| {
                m.analyses.push(analysis(&[&file]));
                Ok(())
            })
            .unwrap();
            files.push(file);
        }
        let checkpoint = format!("{CHECKPOINT_INTERVAL:020}.checkpoint.parquet");
        assert!(lake.table_dir(Table::Findings).join("_delta_log").join(checkpoint).is_file());
        files.sort();
        assert_eq!(files_in_log(&lake, Table::Findings), files);
        assert_eq!(version(&lake, Table::Findings).unwrap(), Some(CHECKPOINT_INTERVAL));
    }

    #[test]
    fn a_version_another_writer_took_sends_the_commit_back_to_read_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        let first = data_file(&lake, Table::Findings, "part-0000000000000001-00001.parquet");
        commit::<_, LakeError>(&lake, |m| {
            m.analyses.push(analysis(&[&first]));
            Ok(())
        })
        .unwrap();
        // A version this process did not write and has not read: the next append must not
        // take it for its own.
        let log = lake.table_dir(Table::Findings).join("_delta_log");
        std::fs::copy(log.join(format!("{:020}.json", 1)), log.join(format!("{:020}.json", 2))).unwrap();
        let second = data_file(&lake, Table::Findings, "part-0000000000000002-00001.parquet");
        commit::<_, LakeError>(&lake, |m| {
            m.analyses.push(analysis(&[&second]));
            Ok(())
        })
        .unwrap();
        assert_eq!(files_in_log(&lake, Table::Findings), vec![first, second]);
        assert_eq!(version(&lake, Table::Findings).unwrap(), Some(3));
    }

    #[test]
    fn a_log_is_never_taken_back_to_an_earlier_revision_but_a_repair_overrules() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        let file = data_file(&lake, Table::Findings, "part-0000000000000001-00001.parquet");
        let newer = Manifest { revision: 5, analyses: vec![analysis(&[&file])], ..Manifest::default() };
        sync_all(&lake, &newer).unwrap();
        let older = Manifest { revision: 4, ..Manifest::default() };
        sync_changed(&lake, &newer, &older, &older.change_from(&newer)).unwrap();
        assert_eq!(files_in_log(&lake, Table::Findings), vec![file], "a writer that synced late changes nothing");
        sync_repaired(&lake, &older).unwrap();
        assert!(files_in_log(&lake, Table::Findings).is_empty());
    }

    #[test]
    fn a_log_a_killed_process_left_behind_catches_up_at_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        begin(&lake).unwrap();
        let file = data_file(&lake, Table::Findings, "part-0000000000000001-00001.parquet");
        let read = state_log::load(&lake).unwrap();
        let mut manifest = read.clone();
        manifest.analyses.push(analysis(&[&file]));
        manifest.revision += 1;
        let change = manifest.change_from(&read);
        assert!(state_log::write(&lake, &read, &manifest, state_log::Base::State(&change)).unwrap()); // and killed before the logs
        assert!(files_in_log(&lake, Table::Findings).is_empty());
        begin(&lake).unwrap();
        assert_eq!(files_in_log(&lake, Table::Findings), vec![file]);
    }

    #[test]
    fn every_table_has_delta_columns_with_its_partition_last() {
        for table in Table::ALL {
            let columns = columns(table).unwrap();
            assert_eq!(columns.fields().len(), file_schema(table).fields().len() + 1, "{table:?}");
            assert_eq!(columns.fields().last().unwrap().name(), PARTITION_COLUMN);
        }
    }
}
