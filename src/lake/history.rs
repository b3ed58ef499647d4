//! The lake's past, read from its tables' Delta logs: the files each table had at an
//! earlier revision or time (time travel), the vacuum that deletes the files commits
//! replaced once no version within the retention needs them, and the expiry of
//! partitions older than a table's retention in days.
//!
//! A revision is the lake's commit number (`tracelake status` prints it): every version a
//! commit adds to a table's log carries it as the `txn` of app id [`delta::APP_ID`], so
//! one revision names one consistent state of every table. A time names, for each table,
//! its latest version committed at or before it.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use deltalake_core::logstore::LogStoreRef;
use deltalake_core::operations::vacuum::VacuumMode;
use deltalake_core::{DeltaTable, DeltaTableError};
use object_store::ObjectStoreExt;
use object_store::path::Path;

use super::commit::{begin, commit};
use super::delta::{self, APP_ID};
use super::layout::partition_value;
use super::objects;
use super::remote::block_on;
use super::sizes::{TableSize, stored_files};
use super::state::{AnalysisRecord, Manifest};
use super::state_log;
use super::{Lake, LakeError, Table};

/// The directory of a table's Delta log.
const DELTA_LOG: &str = "_delta_log";

/// A point in the lake's past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf {
    /// The lake as the commit of this revision left it.
    Revision(u64),
    /// The lake as it was at this time, ms since the epoch.
    Time(i64),
}

impl fmt::Display for AsOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AsOf::Revision(r) => write!(f, "revision {r}"),
            AsOf::Time(ms) => {
                let time = chrono::DateTime::from_timestamp_millis(*ms).unwrap_or_default();
                write!(f, "{}", time.format("%Y-%m-%d %H:%M:%S UTC"))
            }
        }
    }
}

impl AsOf {
    /// Whether a commit of `revision`, made at `at` (RFC 3339), came at or before this
    /// point. Revision 0 is one a lake did not record: taken as before every revision.
    fn includes(self, revision: u64, at: &str) -> bool {
        match self {
            AsOf::Revision(r) => revision <= r,
            AsOf::Time(ms) => chrono::DateTime::parse_from_rfc3339(at).is_ok_and(|t| t.timestamp_millis() <= ms),
        }
    }
}

/// The lake at a point in its past: each table's files then, and the analysis runs
/// committed by then that no full analysis had replaced yet.
#[derive(Debug, Clone, PartialEq)]
pub struct LakeAsOf {
    pub point: AsOf,
    pub tables: Vec<TableAsOf>,
    pub analyses: Vec<AnalysisRecord>,
}

/// The lake as of `as_of`. Fails when a file a table had then was vacuumed since, or when
/// the logs do not go back that far.
pub fn lake_as_of(lake: &Lake, as_of: AsOf) -> Result<LakeAsOf, LakeError> {
    let manifest = state_log::load_unchecked(lake)?;
    let tables = tables_as_of(lake, &manifest, as_of)?;
    let analyses = manifest
        .replaced_analyses
        .iter()
        .chain(&manifest.analyses)
        .filter(|run| as_of.includes(run.revision, &run.finished_at))
        .filter(|run| !run.replaced.as_ref().is_some_and(|by| as_of.includes(by.revision, &by.at)))
        .cloned()
        .collect();
    Ok(LakeAsOf { point: as_of, tables, analyses })
}

/// The lake as of `as_of` when one is given ([`lake_as_of`]), for the readers that share it.
pub fn lake_as_of_shared(lake: &Lake, as_of: Option<AsOf>) -> Result<Option<Arc<LakeAsOf>>, LakeError> {
    Ok(as_of.map(|as_of| lake_as_of(lake, as_of)).transpose()?.map(Arc::new))
}

/// One table at a point in its past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableAsOf {
    pub table: Table,
    /// The version of its log; `None` when the table had no log then.
    pub version: Option<u64>,
    /// Its files then, relative to the lake root.
    pub files: Vec<String>,
    /// The bytes those files take.
    pub bytes: u64,
}

/// Every table of the lake, whose state is `manifest`, as of `as_of`.
fn tables_as_of(lake: &Lake, manifest: &Manifest, as_of: AsOf) -> Result<Vec<TableAsOf>, LakeError> {
    let refused = |problem: String| Err(LakeError::AsOf { as_of: as_of.to_string(), problem });
    match as_of {
        AsOf::Revision(revision) => {
            let now = manifest.revision;
            if revision > now {
                return refused(format!("the lake is at revision {now}"));
            }
        }
        AsOf::Time(ms) => {
            if let Some(began) = block_on(began(lake))?
                && ms < began
            {
                return refused(format!("its history begins at {}", AsOf::Time(began)));
            }
        }
    }
    let mut tables = block_on(async {
        let mut tables = Vec::new();
        for table in Table::ALL {
            tables.push(table_as_of(lake, table, as_of).await?);
        }
        Ok::<_, LakeError>(tables)
    })?;
    let mut vacuumed = 0;
    for t in tables.iter_mut().filter(|t| !t.files.is_empty()) {
        let stored = stored_files(lake, t.table)?;
        vacuumed += t.files.iter().filter(|f| !stored.contains_key(f.as_str())).count();
        t.bytes = t.files.iter().filter_map(|f| stored.get(f.as_str())).sum();
    }
    if vacuumed > 0 {
        return Err(LakeError::AsOf { as_of: as_of.to_string(), problem: format!("{vacuumed} of its files were vacuumed since") });
    }
    Ok(tables)
}

async fn table_as_of(lake: &Lake, table: Table, as_of: AsOf) -> Result<TableAsOf, LakeError> {
    let error = |source: DeltaTableError| delta::read_error(table, source);
    let none = TableAsOf { table, version: None, files: Vec::new(), bytes: 0 };
    let Some(log_store) = delta::existing_log_store(lake, table)? else { return Ok(none) };
    let latest = match log_store.get_latest_version(0).await {
        Ok(latest) => latest,
        Err(DeltaTableError::InvalidVersion(_) | DeltaTableError::NotATable(_)) => return Ok(none),
        Err(e) => return Err(error(e)),
    };
    let mut delta = DeltaTable::new(log_store.clone());
    match as_of {
        AsOf::Revision(revision) => {
            let version = version_at_revision(&log_store, latest, revision).await.map_err(error)?;
            let Some(version) = version else {
                let problem =
                    format!("the Delta log of table {} begins after it; `tracelake status` shows the revisions", table.dir_name());
                return Err(LakeError::AsOf { as_of: as_of.to_string(), problem });
            };
            delta.load_version(version).await.map_err(error)?;
        }
        AsOf::Time(ms) => {
            let time = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
            delta.load_with_datetime(time).await.map_err(error)?;
        }
    }
    let prefix = table.dir_name();
    let mut files: Vec<String> = delta.snapshot().map_err(error)?.log_data().iter().map(|f| format!("{prefix}/{}", f.path())).collect();
    files.sort_unstable();
    Ok(TableAsOf { table, version: delta.version(), files, bytes: 0 })
}

/// Every table with files as of a point in the past, as [`super::sizes::table_sizes`]
/// counts them now.
pub fn table_sizes_as_of(tables: &[TableAsOf]) -> Vec<TableSize> {
    tables
        .iter()
        .filter(|t| !t.files.is_empty())
        .map(|t| TableSize { table: t.table, files: t.files.len(), bytes: t.bytes, version: t.version })
        .collect()
}

/// When the first version of any table's log was written, ms since the epoch.
async fn began(lake: &Lake) -> Result<Option<i64>, LakeError> {
    let mut first: Option<i64> = None;
    for table in Table::ALL {
        let Some(log_store) = delta::existing_log_store(lake, table)? else { continue };
        let commit = Path::from(format!("{DELTA_LOG}/{:020}.json", 0));
        match log_store.object_store(None).head(&commit).await {
            Ok(meta) => first = Some(first.map_or(meta.last_modified.timestamp_millis(), |f| f.min(meta.last_modified.timestamp_millis()))),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(delta::read_error(table, e.into())),
        }
    }
    Ok(first)
}

/// The latest version of a log whose revision is at most `revision`; `None` when even
/// its first version holds a later one. Revisions only grow along a log, so a binary
/// search over the versions' commit files finds it.
async fn version_at_revision(log_store: &LogStoreRef, latest: u64, revision: u64) -> Result<Option<u64>, DeltaTableError> {
    let (mut low, mut high) = (0u64, latest);
    if revision_at(log_store, 0).await?.is_none_or(|r| r > revision) {
        return Ok(None);
    }
    // Invariant: the revision at `low` is at most `revision`.
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        match revision_at(log_store, mid).await? {
            Some(r) if r <= revision => low = mid,
            _ => high = mid - 1,
        }
    }
    Ok(Some(low))
}

/// The revision a version holds: that of its own `txn`, or of the nearest earlier
/// version with one (a vacuum's versions carry none).
async fn revision_at(log_store: &LogStoreRef, version: u64) -> Result<Option<u64>, DeltaTableError> {
    for v in (0..=version).rev() {
        let Some(bytes) = log_store.read_commit_entry(v).await? else { continue };
        let txn =
            bytes.split(|b| *b == b'\n').filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok()).find_map(|action| {
                let txn = action.get("txn")?;
                (txn.get("appId")?.as_str()? == APP_ID).then(|| txn.get("version")?.as_u64()).flatten()
            });
        if txn.is_some() {
            return Ok(txn);
        }
    }
    Ok(None)
}

/// What a vacuum deleted (or, dry, would delete).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct VacuumSummary {
    /// Files, relative to the lake root.
    pub files: Vec<String>,
    pub dry_run: bool,
}

/// Deletes the files that commits replaced longer than `retain` ago: no version of the
/// logs younger than that needs them. With `dry_run`, deletes nothing and says what it
/// would. Files a writer left uncommitted are the sweep's, not the vacuum's.
pub fn vacuum(lake: &Lake, retain: Duration, dry_run: bool) -> Result<VacuumSummary, LakeError> {
    begin(lake)?;
    let retention = chrono::Duration::from_std(retain).unwrap_or(chrono::Duration::MAX);
    let files = block_on(async {
        let mut files = Vec::new();
        for table in Table::ALL {
            let error = |source: DeltaTableError| delta::read_error(table, source);
            let Some(log) = delta::load(lake, table).await? else { continue };
            let (_, metrics) = log
                .vacuum()
                .with_mode(VacuumMode::Lite)
                .with_retention_period(retention)
                .with_enforce_retention_duration(false)
                .with_dry_run(dry_run)
                .await
                .map_err(error)?;
            files.extend(metrics.files_deleted.iter().map(|f| format!("{}/{}", table.dir_name(), f.trim_start_matches('/'))));
        }
        Ok::<_, LakeError>(files)
    })?;
    if !dry_run && !files.is_empty() {
        let deleted: HashSet<&str> = files.iter().map(String::as_str).collect();
        // The runs replaced before the retention lost their findings with their files:
        // no point in the past that still reads lists them.
        let cutoff = chrono::Utc::now().checked_sub_signed(retention).map_or(i64::MIN, |t| t.timestamp_millis());
        commit::<_, LakeError>(lake, |manifest| {
            manifest.removed.retain(|f| !deleted.contains(f.as_str()));
            manifest
                .replaced_analyses
                .retain(|run| run.replaced.as_ref().is_none_or(|by| !AsOf::Time(cutoff).includes(by.revision, &by.at)));
            Ok(())
        })?;
    }
    Ok(VacuumSummary { files, dry_run })
}

/// Drops, as one commit, the partitions of each table older than its retention in days
/// (whole days before today, UTC), then deletes their files at once: data kept for a
/// privacy rule's time is not kept longer for time travel. Returns the files deleted
/// (with `dry_run`, those it would delete, changing nothing).
pub fn expire(lake: &Lake, retention: &[(Table, u32)], dry_run: bool) -> Result<Vec<String>, LakeError> {
    if retention.is_empty() {
        return Ok(Vec::new());
    }
    let (manifest, _) = begin(lake)?;
    let today = chrono::Utc::now().date_naive();
    let expired: Vec<String> = retention
        .iter()
        .flat_map(|&(table, days)| {
            let cutoff = (today - chrono::Duration::days(i64::from(days))).format("%Y-%m-%d").to_string();
            manifest.table_files(table).into_iter().filter(move |f| date_of(f).is_some_and(|d| d < cutoff.as_str()))
        })
        .map(str::to_owned)
        .collect();
    if expired.is_empty() || dry_run {
        return Ok(expired);
    }
    let dropped: HashSet<&str> = expired.iter().map(String::as_str).collect();
    commit::<_, LakeError>(lake, |manifest| {
        manifest.drop_files(&dropped);
        Ok(())
    })?;
    block_on(delete(lake, &expired))?;
    commit::<_, LakeError>(lake, |manifest| {
        manifest.removed.retain(|f| !dropped.contains(f.as_str()));
        Ok(())
    })?;
    Ok(expired)
}

/// The partition date of a file (`events/date=2026-01-05/part-….parquet`).
fn date_of(file: &str) -> Option<&str> {
    file.split('/').nth(1).and_then(partition_value)
}

/// Deletes files of the lake (relative paths); one that is gone already is no error.
async fn delete(lake: &Lake, files: &[String]) -> Result<(), LakeError> {
    for file in files {
        objects::delete(lake, file).await?;
    }
    Ok(())
}
