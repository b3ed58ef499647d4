//! The lake's state: the manifest of committed data files and of the runs that wrote them.
//! A data file counts only once the state names it ([`super::commit`]); the state is
//! committed in the events table's Delta log ([`super::state_log`]). Files that a crashed
//! writer left behind are swept away by the next commit ([`super::live_writers`]).

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::LakeError;
use super::layout::{Table, partition_value};
use super::parquet_files::sync_dir;
use super::risk::RiskFitRecord;

/// One committed import of a JSONL source.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImportRecord {
    pub writer_id: String,
    /// The source as the user named it (a path, or `-` for standard input).
    pub source: String,
    /// sha256 of the source's bytes, hex.
    pub sha256: String,
    /// A cheap fingerprint (size, first and last MiB) that finds candidate re-imports
    /// without hashing the whole file first.
    #[serde(default)]
    pub quick: String,
    /// The file's absolute path, by which a file that grew is known again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Size and lines of the whole source, also when only its new end was read.
    pub bytes: u64,
    pub lines: u64,
    /// Events and quarantined lines this import wrote.
    pub events: u64,
    pub quarantined: u64,
    pub started_at: String,
    pub finished_at: String,
    /// Data files, relative to the lake root.
    pub files: Vec<String>,
}

/// The position of the export from a JetStream stream, and what it wrote.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExportState {
    pub stream: String,
    /// Subject filters the lake was exported with (empty: the whole stream).
    pub filter_subjects: Vec<String>,
    /// The last stream sequence whose events are in committed files.
    pub cursor: u64,
    /// Data files, relative to the lake root.
    pub files: Vec<String>,
    pub last_run: Option<ExportRun>,
}

/// What the last export run did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExportRun {
    pub started_at: String,
    pub finished_at: String,
    pub events: u64,
    pub quarantined: u64,
    pub first_sequence: u64,
    pub last_sequence: u64,
}

/// What `tracelake collect` committed: its files, and the digests of the requests it
/// committed last, so that a request a client sends again (its answer was lost) is not
/// written twice.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CollectState {
    /// Requests, spans and events committed, over every run.
    pub requests: u64,
    pub spans: u64,
    pub events: u64,
    /// The first 16 hex digits of the sha256 of each of the latest committed requests'
    /// bodies, oldest first.
    pub recent: std::collections::VecDeque<String>,
    pub files: Vec<String>,
}

/// One committed analysis run and the findings files it wrote.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisRecord {
    pub run_id: String,
    pub finished_at: String,
    pub findings: u64,
    pub files: Vec<String>,
    /// The revision that committed it; 0 in lakes that predate it.
    #[serde(default)]
    pub revision: u64,
    /// The full analysis that replaced it, for the records in [`Manifest::replaced_analyses`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<Replacement>,
    /// The processing state the run left (without the list of files read), which a
    /// report as of then shows; absent in lakes that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_after: Option<ProcessingState>,
}

/// The commit of a full analysis that replaced earlier runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    pub revision: u64,
    pub at: String,
}

/// One committed import of a file of session outcomes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeImportRecord {
    pub writer_id: String,
    pub source: String,
    /// sha256 of the file's bytes, hex.
    pub sha256: String,
    pub outcomes: u64,
    /// Lines that were not an outcome.
    pub rejected: u64,
    pub finished_at: String,
    /// Data files, relative to the lake root.
    pub files: Vec<String>,
}

/// Where incremental analysis resumes (spec §10.4 ProcessingState).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProcessingState {
    pub last_processed_ts: i64,
    pub last_processed_seq: u64,
    pub total_events_processed: u64,
    pub total_findings: u64,
    pub updated_at: String,
    /// The committed `events` files the analyses so far have read: the next one reads the
    /// sessions of the others, however old their events (a backfill). `None` in lakes
    /// whose last analysis predates it: the next one resumes by time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analyzed_event_files: Option<Vec<String>>,
}

/// Everything committed to the lake.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub version: u32,
    /// Counts commits: the lake's revision, which `--as-of` takes, and which each version
    /// of a table's log carries as its `txn`.
    #[serde(default)]
    pub revision: u64,
    pub imports: Vec<ImportRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<ExportState>,
    #[serde(default)]
    pub analyses: Vec<AnalysisRecord>,
    /// The runs full analyses replaced, without their files (those are in `removed`
    /// until a vacuum): what `runs` held as of an earlier revision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced_analyses: Vec<AnalysisRecord>,
    #[serde(default)]
    pub processing_state: ProcessingState,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcome_imports: Vec<OutcomeImportRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect: Option<CollectState>,
    /// The latest `tracelake risk` fit, whose risks `session_risk` holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_fit: Option<RiskFitRecord>,
    /// Files a later commit replaced (a full analysis, a re-import, a compaction) that
    /// earlier versions of the tables' Delta logs still name: kept for time travel until
    /// `tracelake vacuum` deletes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Whether this was read from the lake (a new lake has no state yet).
    #[serde(skip)]
    pub exists: bool,
    /// The version of the events table's log it was read at, after which the next commit
    /// goes ([`super::state_log`]); `None` when that log has no version yet.
    #[serde(skip)]
    pub log_version: Option<u64>,
    /// The state file that version names, relative to the lake root.
    #[serde(skip)]
    pub state_file: Option<String>,
}

impl Manifest {
    pub fn find_import(&self, sha256: &str) -> Option<&ImportRecord> {
        self.imports.iter().find(|r| r.sha256 == sha256)
    }

    /// The committed files of `table`, sorted.
    pub fn table_files(&self, table: Table) -> Vec<&str> {
        let mut files: Vec<&str> = self.committed_files().into_iter().filter(|f| table.holds(f)).collect();
        files.sort_unstable();
        files
    }

    /// The committed `events` files (imported, exported, collected) that no analysis has
    /// read, and those one has; `None` when the last analysis kept no list of them.
    pub fn event_files_by_analysis(&self) -> Option<(Vec<String>, Vec<String>)> {
        let analyzed: HashSet<&str> = self.processing_state.analyzed_event_files.as_ref()?.iter().map(String::as_str).collect();
        Some(self.table_files(Table::Events).into_iter().map(str::to_owned).partition(|f| !analyzed.contains(f.as_str())))
    }

    /// Drops `files` from every record (and from the events files the analyses have read).
    pub fn drop_files(&mut self, files: &HashSet<&str>) {
        let keep = |list: &mut Vec<String>| list.retain(|f| !files.contains(f.as_str()));
        self.imports.iter_mut().for_each(|r| keep(&mut r.files));
        self.analyses.iter_mut().for_each(|r| keep(&mut r.files));
        self.outcome_imports.iter_mut().for_each(|r| keep(&mut r.files));
        self.export.iter_mut().for_each(|e| keep(&mut e.files));
        self.collect.iter_mut().for_each(|c| keep(&mut c.files));
        self.risk_fit.iter_mut().for_each(|r| keep(&mut r.files));
        self.processing_state.analyzed_event_files.iter_mut().for_each(keep);
    }

    /// Moves the analysis runs to [`Self::replaced_analyses`] as replaced by the commit of
    /// `revision` (a full analysis); their files leave the committed set. Returns how many.
    pub fn replace_analyses(&mut self, revision: u64) -> usize {
        let replaced = Replacement { revision, at: chrono::Utc::now().to_rfc3339() };
        let runs = std::mem::take(&mut self.analyses);
        let count = runs.len();
        self.replaced_analyses.extend(runs.into_iter().map(|run| AnalysisRecord {
            files: Vec::new(),
            replaced: Some(replaced.clone()),
            ..run
        }));
        count
    }

    /// The committed files this state adds to those of `before`, and those it drops.
    pub fn change_from(&self, before: &Manifest) -> FileChange {
        let (old, new) = (before.committed_files(), self.committed_files());
        let sorted = |files: std::collections::hash_set::Difference<'_, &str, _>| {
            let mut files: Vec<String> = files.map(|f| (*f).to_owned()).collect();
            files.sort_unstable();
            files
        };
        FileChange { added: sorted(new.difference(&old)), dropped: sorted(old.difference(&new)) }
    }

    /// Adds to `removed` the files a commit's `change` drops.
    pub fn keep_removed(&mut self, change: &FileChange) {
        self.removed.extend(change.dropped.iter().cloned());
    }

    /// The data files no writer's leftovers may be taken for: those committed, and those
    /// replaced but kept for time travel.
    pub fn kept_files(&self) -> HashSet<&str> {
        let mut kept = self.committed_files();
        kept.extend(self.removed.iter().map(String::as_str));
        kept
    }

    /// Every committed data file, relative to the lake root.
    pub fn committed_files(&self) -> HashSet<&str> {
        let exported = self.export.iter().flat_map(|e| e.files.iter().map(String::as_str));
        let analysed = self.analyses.iter().flat_map(|a| a.files.iter().map(String::as_str));
        let outcomes = self.outcome_imports.iter().flat_map(|o| o.files.iter().map(String::as_str));
        let collected = self.collect.iter().flat_map(|c| c.files.iter().map(String::as_str));
        let risks = self.risk_fit.iter().flat_map(|r| r.files.iter().map(String::as_str));
        self.imports
            .iter()
            .flat_map(|r| r.files.iter().map(String::as_str))
            .chain(exported)
            .chain(analysed)
            .chain(outcomes)
            .chain(collected)
            .chain(risks)
            .collect()
    }
}

/// What a commit changes in the committed files (relative to the lake root, sorted):
/// worked out once per commit, so that a commit costs what it changes, not what the lake
/// holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileChange {
    pub added: Vec<String>,
    pub dropped: Vec<String>,
}

impl FileChange {
    /// Whether the change adds or drops a file of `table`.
    pub fn touches(&self, table: Table) -> bool {
        self.added.iter().chain(&self.dropped).any(|f| table.holds(f))
    }

    /// The files of `table` the change adds and drops, relative to the table's directory.
    pub fn of_table(&self, table: Table) -> (Vec<&str>, Vec<&str>) {
        fn relative(table: Table, files: &[String]) -> Vec<&str> {
            files.iter().filter_map(|f| table.relative(f)).collect()
        }
        (relative(table, &self.added), relative(table, &self.dropped))
    }
}

/// Writes `value` as JSON to `path` atomically (temp file, fsync, rename, fsync dir).
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), LakeError> {
    write_atomic(path, &serde_json::to_vec_pretty(value).expect("state serializes"))
}

/// Writes `bytes` to `path` atomically (temp file, fsync, rename, fsync dir).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LakeError> {
    // A bare file name lives in the working directory.
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| LakeError::io(dir, e))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp).map_err(|e| LakeError::io(&tmp, e))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|e| LakeError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| LakeError::io(path, e))?;
    sync_dir(dir)
}

/// Files in a table's partitions: `*.parquet`, and the `.*.tmp` files of unfinished writes.
pub fn data_files(table_dir: &Path) -> Result<Vec<PathBuf>, LakeError> {
    let mut files = Vec::new();
    let partitions = match fs::read_dir(table_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(LakeError::io(table_dir, e)),
    };
    for partition in partitions {
        let partition = partition.map_err(|e| LakeError::io(table_dir, e))?.path();
        // `_delta_log` holds the table's Delta log, checkpoints in Parquet among it.
        let is_partition = partition.file_name().is_some_and(|n| partition_value(&n.to_string_lossy()).is_some());
        if !is_partition || !partition.is_dir() {
            continue;
        }
        for entry in fs::read_dir(&partition).map_err(|e| LakeError::io(&partition, e))? {
            let path = entry.map_err(|e| LakeError::io(&partition, e))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let is_data = name.ends_with(".parquet") && !name.starts_with('.');
            let is_temp = name.starts_with('.') && name.ends_with(".tmp");
            if is_data || is_temp {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis(files: &[&str]) -> AnalysisRecord {
        AnalysisRecord { files: files.iter().map(|f| (*f).to_owned()).collect(), ..AnalysisRecord::default() }
    }

    #[test]
    fn a_commit_s_change_names_only_the_files_it_adds_and_drops_and_their_tables() {
        let kept = "findings/date=2026-01-01/part-0000000000000001-00001.parquet";
        let dropped = "findings/date=2026-01-01/part-0000000000000002-00001.parquet";
        let added = "failures/date=2026-01-02/part-0000000000000003-00002.parquet";
        let before = Manifest { analyses: vec![analysis(&[kept]), analysis(&[dropped])], ..Manifest::default() };
        let mut after = Manifest { analyses: vec![analysis(&[kept]), analysis(&[added])], ..Manifest::default() };
        let change = after.change_from(&before);
        assert_eq!(change, FileChange { added: vec![added.to_owned()], dropped: vec![dropped.to_owned()] });
        assert!(change.touches(Table::Findings) && change.touches(Table::Failures) && !change.touches(Table::Events));
        assert_eq!(change.of_table(Table::Failures), (vec!["date=2026-01-02/part-0000000000000003-00002.parquet"], vec![]));
        assert_eq!(change.of_table(Table::Findings), (vec![], vec!["date=2026-01-01/part-0000000000000002-00001.parquet"]));
        after.keep_removed(&change);
        assert_eq!(after.removed, vec![dropped.to_owned()], "kept for time travel");
        assert_eq!(after.change_from(&after), FileChange::default());
    }

    #[test]
    fn a_table_holds_its_own_files_only() {
        assert_eq!(Table::Events.relative("events/date=2026-01-01/a.parquet"), Some("date=2026-01-01/a.parquet"));
        assert!(!Table::Events.holds("events_old/date=2026-01-01/a.parquet"));
        assert!(!Table::Outcomes.holds("outputs/date=2026-01-01/a.parquet"));
    }
}
