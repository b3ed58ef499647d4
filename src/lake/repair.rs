//! Rebuilding a damaged lake's state from the files it can read.
//!
//! Nothing is deleted: files the state names but that are gone are dropped from it;
//! data files that do not read as Parquet are moved to `_state/damaged/`; readable files
//! no record names (and whose writer is not known to be gone, and that no commit
//! replaced) are adopted, grouped by the writer that wrote them. Leftovers of writers that
//! are gone are swept as by any writer.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::errors::ParquetError;

use super::commit::RunLock;
use super::delta;
use super::live_writers::{gone_writer_ids, sweep_uncommitted, writer_of};
use super::state::{AnalysisRecord, ExportState, ImportRecord, Manifest, OutcomeImportRecord, data_files};
use super::state_log::{self, Base};
use super::{Lake, LakeError, Table};

/// What a repair would change.
#[derive(Debug, Default)]
pub struct RepairPlan {
    pub manifest_missing: bool,
    /// Committed files that are not there.
    pub missing: Vec<String>,
    /// Data files that do not read as Parquet.
    pub unreadable: Vec<(String, ParquetError)>,
    /// Readable files no record names, by writer id.
    pub adopted: BTreeMap<String, Vec<AdoptedFile>>,
}

#[derive(Debug, Clone)]
pub struct AdoptedFile {
    pub path: String,
    pub table: Table,
    pub rows: u64,
    /// For event files written by an export: the highest stream sequence.
    pub exported_up_to: Option<u64>,
}

impl RepairPlan {
    pub fn is_empty(&self) -> bool {
        !self.manifest_missing && self.missing.is_empty() && self.unreadable.is_empty() && self.adopted.is_empty()
    }
}

/// Looks at the lake and says what a repair would do; changes nothing. Needs the write
/// lock, so that no writer is at work.
pub fn plan_repair(lake: &Lake) -> Result<(Manifest, RepairPlan), LakeError> {
    let manifest = state_log::load_unchecked(lake)?;
    let committed: HashSet<String> = manifest.committed_files().into_iter().map(str::to_owned).collect();
    let mut plan = RepairPlan {
        manifest_missing: !manifest.exists,
        missing: committed.iter().filter(|f| !lake.root().join(f).is_file()).cloned().collect(),
        ..RepairPlan::default()
    };
    plan.missing.sort();
    // Files a commit replaced are kept for time travel: never adopted again. The logs know
    // them also when the state is lost.
    let mut replaced: HashSet<String> = manifest.removed.iter().cloned().collect();
    replaced.extend(delta::removed_files(lake)?);
    let gone = gone_writer_ids(lake)?;
    for table in Table::ALL {
        for path in data_files(&lake.table_dir(table))? {
            let relative = lake.relative(&path);
            let is_temp = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
            let leftover = writer_of(&relative).is_some_and(|w| gone.contains(w));
            if is_temp || leftover {
                continue;
            }
            if committed.contains(&relative) {
                if let Err(e) = read_pages(&path) {
                    plan.unreadable.push((relative, e));
                }
                continue;
            }
            if replaced.contains(&relative) {
                continue;
            }
            if table == Table::SessionRisk {
                // An uncommitted fit's risks are not adopted: `tracelake risk` makes them again.
                continue;
            }
            match read_file(&path, table) {
                Ok((rows, exported_up_to)) => {
                    let writer = writer_of(&relative).unwrap_or("unknown").to_owned();
                    plan.adopted.entry(writer).or_default().push(AdoptedFile { path: relative, table, rows, exported_up_to });
                }
                Err(e) => plan.unreadable.push((relative, e)),
            }
        }
    }
    Ok((manifest, plan))
}

/// The committed files that do not read as Parquet, with why: what a query that failed
/// on a Parquet error was reading. Reads every committed file's footer, and where all of
/// them read, every page of every file (a damaged page leaves the footer readable): for
/// errors only.
pub fn unreadable_committed(lake: &Lake) -> Vec<(String, ParquetError)> {
    let Ok(manifest) = state_log::load_unchecked(lake) else {
        return Vec::new();
    };
    let files = manifest.committed_files();
    let failing = |read: fn(&Path) -> Result<(), ParquetError>| -> Vec<(String, ParquetError)> {
        let mut bad: Vec<_> = files.iter().filter_map(|f| read(&lake.root().join(f)).err().map(|e| ((*f).to_owned(), e))).collect();
        bad.sort_by(|a, b| a.0.cmp(&b.0));
        bad
    };
    let bad = failing(read_footer);
    if bad.is_empty() { failing(read_pages) } else { bad }
}

/// Why a file does not read, in the reader's innermost words: its errors pass each other's
/// on with prefixes (`External: Parquet argument error: External: Data corruption detected`).
pub fn why_unreadable(error: &ParquetError) -> String {
    let mut why = error.to_string();
    while let Some(inner) = ["External: ", "Parquet argument error: ", "Parquet error: "].iter().find_map(|p| why.strip_prefix(p)) {
        why = inner.to_owned();
    }
    why
}

/// A reader of the Parquet file at `path`, its footer read; or why there is none.
fn open_parquet(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, ParquetError> {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)
}

fn read_footer(path: &Path) -> Result<(), ParquetError> {
    open_parquet(path).map(|_| ())
}

/// Every page of every column of the Parquet file at `path`, decoded.
fn read_pages(path: &Path) -> Result<(), ParquetError> {
    for batch in open_parquet(path)?.build()? {
        batch?;
    }
    Ok(())
}

/// Rows of a data file, and for an exported events file its highest stream sequence. Every
/// column is read: a file with a damaged page is not readable.
fn read_file(path: &Path, table: Table) -> Result<(u64, Option<u64>), ParquetError> {
    let (mut rows, mut exported_up_to) = (0, None::<u64>);
    for batch in open_parquet(path)?.build()? {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        if table != Table::Events {
            continue;
        }
        let (Some(seq), Some(subject)) = (batch.column_by_name("stream_seq"), batch.column_by_name("subject")) else { continue };
        let seq = seq.as_primitive::<UInt64Type>();
        for i in (0..batch.num_rows()).filter(|&i| subject.is_valid(i)) {
            exported_up_to = Some(exported_up_to.unwrap_or(0).max(seq.value(i)));
        }
    }
    Ok((rows, exported_up_to))
}

/// Applies `plan` to `manifest` and commits it; `stream` names the JetStream stream that
/// adopted exported events came from.
/// The caller holds every run lock ([`RunLock::all`]), so nothing else changes the state.
pub fn apply_repair(lake: &Lake, mut manifest: Manifest, plan: &RepairPlan, stream: &str, _runs: &RunLock) -> Result<Manifest, LakeError> {
    let missing: HashSet<&str> = plan.missing.iter().chain(plan.unreadable.iter().map(|(f, _)| f)).map(String::as_str).collect();
    manifest.drop_files(&missing);
    manifest.removed.retain(|f| lake.root().join(f).is_file());

    let damaged_dir = lake.state_dir().join("damaged");
    for (file, _) in &plan.unreadable {
        fs::create_dir_all(&damaged_dir).map_err(|e| LakeError::io(&damaged_dir, e))?;
        let to: PathBuf = damaged_dir.join(file.replace('/', "__"));
        fs::rename(lake.root().join(file), &to).map_err(|e| LakeError::io(&to, e))?;
    }

    let now = chrono::Utc::now().to_rfc3339();
    for (writer, files) in &plan.adopted {
        let of = |tables: &[Table]| -> Vec<&AdoptedFile> { files.iter().filter(|f| tables.contains(&f.table)).collect() };
        let paths = |files: &[&AdoptedFile]| files.iter().map(|f| f.path.clone()).collect::<Vec<_>>();
        let rows = |files: &[&AdoptedFile], table: Table| files.iter().filter(|f| f.table == table).map(|f| f.rows).sum::<u64>();

        let ingested = of(&[Table::Events, Table::Quarantine]);
        let exported_up_to = ingested.iter().filter_map(|f| f.exported_up_to).max();
        match exported_up_to {
            Some(cursor) => {
                let export = manifest.export.get_or_insert_with(|| ExportState { stream: stream.to_owned(), ..ExportState::default() });
                export.files.extend(paths(&ingested));
                export.cursor = export.cursor.max(cursor);
            }
            None if !ingested.is_empty() => manifest.imports.push(ImportRecord {
                writer_id: writer.clone(),
                source: "recovered by tracelake repair".into(),
                sha256: format!("recovered-{writer}"),
                quick: String::new(),
                path: None,
                bytes: 0,
                lines: 0,
                events: rows(&ingested, Table::Events),
                quarantined: rows(&ingested, Table::Quarantine),
                started_at: now.clone(),
                finished_at: now.clone(),
                files: paths(&ingested),
            }),
            None => {}
        }
        let analysed = of(&[Table::Findings, Table::Failures, Table::Classifications, Table::Outputs, Table::CortexMessages]);
        if !analysed.is_empty() {
            manifest.analyses.push(AnalysisRecord {
                run_id: format!("recovered-{writer}"),
                finished_at: now.clone(),
                findings: rows(&analysed, Table::Findings),
                files: paths(&analysed),
                ..AnalysisRecord::default()
            });
        }
        let outcomes = of(&[Table::Outcomes]);
        if !outcomes.is_empty() {
            manifest.outcome_imports.push(OutcomeImportRecord {
                writer_id: writer.clone(),
                source: "recovered by tracelake repair".into(),
                sha256: format!("recovered-{writer}"),
                outcomes: rows(&outcomes, Table::Outcomes),
                rejected: 0,
                finished_at: now.clone(),
                files: paths(&outcomes),
            });
        }
    }
    manifest.version = manifest.version.max(1);
    // The log may hold no state, or another than the damaged one read: the version goes
    // after its latest, and takes its files to those of the repaired state.
    let before = Manifest { log_version: delta::version(lake, Table::Events)?, ..manifest.clone() };
    let after = Manifest { revision: manifest.revision + 1, ..manifest };
    if !state_log::write(lake, &before, &after, Base::Log)? {
        return Err(LakeError::Concurrent { lake: lake.location(), run: "repair" });
    }
    delta::sync_repaired(lake, &after)?;
    sweep_uncommitted(lake)?;
    state_log::load(lake)
}
