//! `tracelake compact`: the small files of a partition merged into one, as a commit.
//!
//! `collect` commits a file per request batch and a frequent `export` one per run, so a
//! day's partition can hold thousands of small files that every query lists and opens.
//! Compaction merges, within each partition, the files that one record of the lake's state
//! owns (the collector's, the export's, one import's, the analyses'), so that a re-import
//! with `--force` or a full analysis still replaces exactly its own rows. Files an
//! analysis has read are merged apart from those it has not, so that the next `analyze`
//! reads the same sessions. The replaced files stay for `--as-of` until `vacuum`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{ArrayRef, RecordBatch, new_null_array};
use datafusion::arrow::compute::{SortColumn, cast, concat_batches, lexsort_to_indices, take_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::commit::{begin, commit};
use super::layout::part_file_name;
use super::live_writers::RegisteredWriter;
use super::parquet_files::write_parquet_atomic;
use super::remote::block_on;
use super::schema::file_schema;
use super::sizes::stored_files;
use super::state::Manifest;
use super::{Lake, LakeError, Table};

/// Files at least this large are left as they are: merging them gains little.
const SMALL_FILE_BYTES: u64 = 64 << 20;

/// The most bytes of files merged into one: a merge holds its rows in memory to sort them.
const MERGE_BYTES: u64 = 64 << 20;

/// What a compaction did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CompactSummary {
    /// Files merged, and the files they became.
    pub merged: usize,
    pub written: usize,
    pub rows: u64,
}

/// The record of the lake's state that owns a file list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Owner {
    Import(String),
    Export,
    Collect,
    Analyses,
    Outcomes(String),
}

/// Files that may be merged: of one owner, table and partition, all read by an analysis
/// or none.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Group {
    owner: Owner,
    table: Table,
    partition: String,
    analyzed: bool,
}

/// Files of one owner in one partition of one table, merged into one.
struct Merge {
    owner: Owner,
    table: Table,
    files: Vec<String>,
}

/// Merges the small files of each partition of `tables` (every table when empty).
pub fn compact(lake: &Lake, tables: &[Table]) -> Result<CompactSummary, LakeError> {
    let (manifest, _) = begin(lake)?;
    let merges = plan(lake, &manifest, tables)?;
    if merges.is_empty() {
        return Ok(CompactSummary::default());
    }
    let writer = RegisteredWriter::start(lake)?;
    let mut done = Vec::new();
    let mut summary = CompactSummary::default();
    for (n, merge) in merges.into_iter().enumerate() {
        let partition = merge.files[0].rsplit_once('/').map_or("", |(dir, _)| dir);
        let dir = lake.root().join(partition);
        let schema = file_schema(merge.table);
        let mut batches = Vec::new();
        for file in &merge.files {
            batches.extend(read_file(lake, file, &schema)?);
        }
        let merged = sorted(merge.table, concat_batches(&schema, &batches)?)?;
        drop(batches);
        let written = write_parquet_atomic(&dir, &part_file_name(writer.id(), n), Arc::clone(&schema), [Ok(merged)])?;
        summary.merged += merge.files.len();
        summary.written += 1;
        summary.rows += written.rows as u64;
        done.push((merge, lake.relative(&written.path)));
    }
    let all_placed = commit::<_, LakeError>(lake, |manifest| {
        let mut all = true;
        for (merge, file) in &done {
            all &= replace(manifest, merge, file);
        }
        Ok(all)
    })?;
    if all_placed {
        writer.finish()?;
    }
    // Else the writer is dropped unfinished: the next sweep deletes the merges left out.
    Ok(summary)
}

/// The merges worth making: two or more small files of one owner in one partition, at
/// most [`MERGE_BYTES`] of them in each.
fn plan(lake: &Lake, manifest: &Manifest, tables: &[Table]) -> Result<Vec<Merge>, LakeError> {
    let analyzed: HashSet<&str> = manifest.processing_state.analyzed_event_files.iter().flatten().map(String::as_str).collect();
    let sizes = file_sizes(lake)?;
    let mut groups: BTreeMap<Group, Vec<(String, u64)>> = BTreeMap::new();
    for (owner, files) in owned_files(manifest) {
        for file in files {
            let mut parts = file.splitn(3, '/');
            let (Some(table), Some(partition)) = (parts.next(), parts.next()) else { continue };
            let Some(table) = Table::from_name(table) else { continue };
            let size = sizes.get(file.as_str()).copied().unwrap_or(0);
            if !(tables.is_empty() || tables.contains(&table)) || size >= SMALL_FILE_BYTES {
                continue;
            }
            let group = Group { owner: owner.clone(), table, partition: partition.to_owned(), analyzed: analyzed.contains(file.as_str()) };
            groups.entry(group).or_default().push((file.clone(), size));
        }
    }
    let mut merges = Vec::new();
    for (Group { owner, table, .. }, files) in groups {
        let mut chunk: Vec<String> = Vec::new();
        let mut bytes = 0;
        for (file, size) in files {
            if bytes + size > MERGE_BYTES && !chunk.is_empty() {
                merges.push(Merge { owner: owner.clone(), table, files: std::mem::take(&mut chunk) });
                bytes = 0;
            }
            chunk.push(file);
            bytes += size;
        }
        merges.push(Merge { owner, table, files: chunk });
    }
    merges.retain(|m| m.files.len() > 1);
    Ok(merges)
}

/// The size of every data file on the lake's store, by path relative to the lake.
fn file_sizes(lake: &Lake) -> Result<HashMap<String, u64>, LakeError> {
    let mut sizes = HashMap::new();
    for table in Table::ALL {
        sizes.extend(stored_files(lake, table)?);
    }
    Ok(sizes)
}

/// Each record's files, in the order they were committed.
fn owned_files(manifest: &Manifest) -> Vec<(Owner, &Vec<String>)> {
    let mut owned: Vec<(Owner, &Vec<String>)> = Vec::new();
    owned.extend(manifest.imports.iter().map(|r| (Owner::Import(r.sha256.clone()), &r.files)));
    owned.extend(manifest.export.iter().map(|e| (Owner::Export, &e.files)));
    owned.extend(manifest.collect.iter().map(|c| (Owner::Collect, &c.files)));
    owned.extend(manifest.analyses.iter().map(|a| (Owner::Analyses, &a.files)));
    owned.extend(manifest.outcome_imports.iter().map(|r| (Owner::Outcomes(r.sha256.clone()), &r.files)));
    owned
}

/// Puts `file` in place of the merged files, where the manifest (as another writer may
/// have changed it since) still names them all; else leaves the merge out. Returns
/// whether it was put in.
fn replace(manifest: &mut Manifest, merge: &Merge, file: &str) -> bool {
    let merged: HashSet<&str> = merge.files.iter().map(String::as_str).collect();
    let mut lists: Vec<&mut Vec<String>> = match &merge.owner {
        Owner::Import(sha) => manifest.imports.iter_mut().filter(|r| &r.sha256 == sha).map(|r| &mut r.files).collect(),
        Owner::Export => manifest.export.iter_mut().map(|e| &mut e.files).collect(),
        Owner::Collect => manifest.collect.iter_mut().map(|c| &mut c.files).collect(),
        Owner::Analyses => manifest.analyses.iter_mut().map(|a| &mut a.files).collect(),
        Owner::Outcomes(sha) => manifest.outcome_imports.iter_mut().filter(|r| &r.sha256 == sha).map(|r| &mut r.files).collect(),
    };
    let named = lists.iter().flat_map(|l| l.iter()).filter(|f| merged.contains(f.as_str())).count();
    if named != merged.len() {
        return false;
    }
    let Some(last) = lists.iter().rposition(|l| l.iter().any(|f| merged.contains(f.as_str()))) else { return false };
    for list in &mut lists {
        list.retain(|f| !merged.contains(f.as_str()));
    }
    lists[last].push(file.to_owned());
    if let Some(analyzed) = manifest.processing_state.analyzed_event_files.as_mut()
        && analyzed.iter().any(|f| merged.contains(f.as_str()))
    {
        analyzed.retain(|f| !merged.contains(f.as_str()));
        analyzed.push(file.to_owned());
    }
    true
}

/// The rows of a committed file, in the table's columns as they are now (a column a file
/// written by an earlier version lacks is null).
fn read_file(lake: &Lake, file: &str, schema: &SchemaRef) -> Result<Vec<RecordBatch>, LakeError> {
    let batches: Vec<RecordBatch> = match lake.remote() {
        Some(remote) => {
            let bytes =
                block_on(remote.read(file))?.ok_or_else(|| LakeError::MissingObject { lake: lake.location(), file: file.to_owned() })?;
            ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes))?.build()?.collect::<Result<_, _>>()?
        }
        None => {
            let path = lake.root().join(file);
            let opened = File::open(&path).map_err(|e| LakeError::io(&path, e))?;
            ParquetRecordBatchReaderBuilder::try_new(opened)?.build()?.collect::<Result<_, _>>()?
        }
    };
    batches.into_iter().map(|b| conform(b, schema)).collect()
}

/// Events in the order every events file holds them: by agent, session and time.
fn sorted(table: Table, batch: RecordBatch) -> Result<RecordBatch, LakeError> {
    if table != Table::Events {
        return Ok(batch);
    }
    let keys = ["agent", "session", "ts"]
        .iter()
        .map(|name| {
            let values = batch.column_by_name(name).ok_or_else(|| ArrowError::SchemaError(format!("no column {name}")))?;
            Ok(SortColumn { values: Arc::clone(values), options: None })
        })
        .collect::<Result<Vec<_>, ArrowError>>()?;
    let order = lexsort_to_indices(&keys, None)?;
    Ok(take_record_batch(&batch, &order)?)
}

fn conform(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, LakeError> {
    if batch.schema() == *schema {
        return Ok(batch);
    }
    let columns = schema
        .fields()
        .iter()
        .map(|field| match batch.column_by_name(field.name()) {
            Some(column) if column.data_type() == field.data_type() => Ok(Arc::clone(column)),
            Some(column) => Ok(cast(column, field.data_type())?),
            None => Ok(new_null_array(field.data_type(), batch.num_rows())),
        })
        .collect::<Result<Vec<ArrayRef>, LakeError>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::event_sink::EventSink;
    use crate::lake::history::{AsOf, lake_as_of, vacuum};
    use crate::lake::state_log;
    use crate::model::event::{Event, Schema};
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::TimestampMillisecondType;
    use std::time::Duration;

    const DAY_MS: i64 = 86_400_000;
    const FIRST_DAY: i64 = 1_767_571_200_000;

    /// `n` commits of what `collect` writes: one small events file each, over two days.
    fn collected(lake: &Lake, n: usize) {
        begin(lake).unwrap();
        for i in 0..n {
            let writer = RegisteredWriter::start(lake).unwrap();
            let mut sink = EventSink::new(lake.clone(), writer.id().clone(), 1 << 20, 1);
            let ts = FIRST_DAY + (i as i64 % 2) * DAY_MS + (n - i) as i64;
            sink.push(Event::new(i as u64, format!("e{i}"), ts, format!("a{}", i % 3), format!("s{}", i % 4), "msg.in", Schema::A))
                .unwrap();
            let files: Vec<String> = sink.flush_all().unwrap().iter().map(|f| lake.relative(&f.path)).collect();
            commit::<_, LakeError>(lake, |m| {
                m.collect.get_or_insert_default().files.extend(files.iter().cloned());
                Ok(())
            })
            .unwrap();
            writer.finish().unwrap();
        }
    }

    /// (agent, session, ts, id) of every row of an events file.
    fn rows(lake: &Lake, file: &str) -> Vec<(String, String, i64, String)> {
        read_file(lake, file, &file_schema(Table::Events))
            .unwrap()
            .iter()
            .flat_map(|b| {
                let text = |name: &str| b.column_by_name(name).unwrap().as_string::<i32>().clone();
                let (agent, session, id) = (text("agent"), text("session"), text("id"));
                let ts = b.column_by_name("ts").unwrap().as_primitive::<TimestampMillisecondType>().clone();
                (0..b.num_rows())
                    .map(move |i| (agent.value(i).to_owned(), session.value(i).to_owned(), ts.value(i), id.value(i).to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn ids(lake: &Lake, files: &[&str]) -> Vec<String> {
        let mut ids: Vec<String> = files.iter().flat_map(|f| rows(lake, f)).map(|r| r.3).collect();
        ids.sort();
        ids
    }

    #[test]
    fn small_commits_become_one_sorted_file_per_partition_and_the_old_ones_stay_for_time_travel_until_a_vacuum() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        collected(&lake, 40);
        let before = state_log::load(&lake).unwrap();
        let old_files: Vec<String> = before.table_files(Table::Events).into_iter().map(str::to_owned).collect();
        assert_eq!(old_files.len(), 40);
        let old_ids = ids(&lake, &before.table_files(Table::Events));

        let summary = compact(&lake, &[]).unwrap();
        assert_eq!((summary.merged, summary.written, summary.rows), (40, 2, 40));
        let after = state_log::load(&lake).unwrap();
        let new_files = after.table_files(Table::Events);
        assert_eq!(new_files.len(), 2, "one file per partition: {new_files:?}");
        assert_eq!(ids(&lake, &new_files), old_ids, "the same rows");
        for file in &new_files {
            let rows = rows(&lake, file);
            assert!(rows.windows(2).all(|w| (&w[0].0, &w[0].1, w[0].2) <= (&w[1].0, &w[1].1, w[1].2)), "{file} is sorted");
        }
        assert_eq!(after.removed, old_files, "the replaced files are kept");
        assert_eq!(compact(&lake, &[]).unwrap(), CompactSummary::default(), "nothing left to merge");

        begin(&lake).unwrap();
        assert!(old_files.iter().all(|f| lake.root().join(f).is_file()), "a sweep keeps replaced files");
        let then = lake_as_of(&lake, AsOf::Revision(before.revision)).unwrap().tables;
        let events_then = &then.iter().find(|t| t.table == Table::Events).unwrap().files;
        assert_eq!(events_then, &old_files, "as of the earlier revision, the table has its earlier files");
        let now = lake_as_of(&lake, AsOf::Revision(after.revision)).unwrap().tables;
        assert_eq!(now.iter().find(|t| t.table == Table::Events).unwrap().files, new_files);

        assert!(vacuum(&lake, Duration::from_secs(3600), false).unwrap().files.is_empty(), "younger than the retention");
        let dry = vacuum(&lake, Duration::ZERO, true).unwrap();
        assert_eq!(dry.files.len(), 40);
        assert!(old_files.iter().all(|f| lake.root().join(f).is_file()), "a dry run deletes nothing");
        let mut vacuumed = vacuum(&lake, Duration::ZERO, false).unwrap().files;
        vacuumed.sort();
        assert_eq!(vacuumed, old_files);
        assert!(old_files.iter().all(|f| !lake.root().join(f).exists()));
        assert!(state_log::load(&lake).unwrap().removed.is_empty());
        let error = lake_as_of(&lake, AsOf::Revision(before.revision)).unwrap_err().to_string();
        assert!(error.contains("40 of its files were vacuumed since"), "{error}");
        assert_eq!(ids(&lake, &state_log::load(&lake).unwrap().table_files(Table::Events)), old_ids, "the lake keeps its rows");
    }

    #[test]
    fn a_merge_of_files_another_commit_replaced_meanwhile_is_left_out() {
        let files = |names: &[&str]| names.iter().map(|n| format!("events/date=2026-01-05/{n}")).collect::<Vec<_>>();
        let mut manifest = Manifest::default();
        manifest.collect.get_or_insert_default().files = files(&["a", "b"]);
        let stale = Merge { owner: Owner::Collect, table: Table::Events, files: files(&["a", "b", "c"]) };
        assert!(!replace(&mut manifest, &stale, "events/date=2026-01-05/m"));
        assert_eq!(manifest.collect.as_ref().unwrap().files, files(&["a", "b"]), "nothing changed");
        let merge = Merge { owner: Owner::Collect, table: Table::Events, files: files(&["a", "b"]) };
        assert!(replace(&mut manifest, &merge, "events/date=2026-01-05/m"));
        assert_eq!(manifest.collect.unwrap().files, files(&["m"]));
    }

    #[test]
    fn files_an_analysis_read_are_not_merged_with_those_it_did_not() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        collected(&lake, 8);
        let read: Vec<String> = state_log::load(&lake).unwrap().table_files(Table::Events).into_iter().map(str::to_owned).collect();
        commit::<_, LakeError>(&lake, |m| {
            m.processing_state.analyzed_event_files = Some(read.clone());
            Ok(())
        })
        .unwrap();
        collected(&lake, 8);
        let summary = compact(&lake, &[Table::Events]).unwrap();
        assert_eq!((summary.merged, summary.written), (16, 4));
        let manifest = state_log::load(&lake).unwrap();
        let (new, analyzed) = manifest.event_files_by_analysis().unwrap();
        assert_eq!((new.len(), analyzed.len()), (2, 2), "the next analysis reads the same sessions");
        assert_eq!(
            ids(&lake, &analyzed.iter().map(String::as_str).collect::<Vec<_>>()),
            ids(&lake, &read.iter().map(String::as_str).collect::<Vec<_>>())
        );
    }
}
