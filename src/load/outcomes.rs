//! Importing a file of session outcomes into the lake's `outcomes` table, committed like
//! every other write: a file under a writer id, named by the commit that makes it count.

use sha2::{Digest, Sha256};

use super::LoadError;
use crate::ingest::outcomes::{BadOutcome, parse_outcomes};
use crate::lake::LakeError;
use crate::lake::commit::{RunKind, RunLock, begin, commit};
use crate::lake::layout::{Lake, PartitionDate, Table, part_file_name};
use crate::lake::live_writers::RegisteredWriter;
use crate::lake::parquet_files::write_parquet_atomic;
use crate::lake::schema::{OUTCOMES_SCHEMA, outcomes_batch};
use crate::lake::state::OutcomeImportRecord;

/// What importing a file of outcomes did.
#[derive(Debug)]
pub enum OutcomeImport {
    Imported {
        outcomes: u64,
        rejected: Vec<BadOutcome>,
        replaced: bool,
    },
    /// Nothing in the file is an outcome; nothing was written.
    NoOutcomes {
        rejected: Vec<BadOutcome>,
    },
    AlreadyImported {
        previous: Box<OutcomeImportRecord>,
    },
}

/// Imports `bytes` (read from `source`): CSV when `csv`, JSON Lines when not, guessed from
/// the content when `None`. The same content imported again is skipped unless `force`.
pub fn import_outcomes(lake: &Lake, source: &str, bytes: &[u8], csv: Option<bool>, force: bool) -> Result<OutcomeImport, LoadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| LoadError::Read {
        source_name: source.to_owned(),
        error: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not UTF-8 text ({e})")),
    })?;
    let sha256 = hex::encode(Sha256::digest(bytes));
    let _run = RunLock::acquire(lake, RunKind::Outcomes)?;
    let (manifest, _) = begin(lake)?;
    let previous = manifest.outcome_imports.iter().find(|r| r.sha256 == sha256).cloned();
    if let Some(previous) = previous.clone().filter(|_| !force) {
        return Ok(OutcomeImport::AlreadyImported { previous: Box::new(previous) });
    }
    let parsed = parse_outcomes(text, csv, source);
    if parsed.outcomes.is_empty() {
        return Ok(OutcomeImport::NoOutcomes { rejected: parsed.bad });
    }
    let now = chrono::Utc::now();
    let registered = RegisteredWriter::start(lake)?;
    let writer = registered.id().clone();
    let dir = lake.partition_dir(Table::Outcomes, &PartitionDate::from_millis(now.timestamp_millis()));
    let batch = outcomes_batch(&parsed.outcomes, now.timestamp_millis()).map_err(LakeError::from)?;
    let file = write_parquet_atomic(&dir, &part_file_name(&writer, 0), OUTCOMES_SCHEMA.clone(), [Ok(batch)])?;
    let record = OutcomeImportRecord {
        writer_id: writer.as_str().to_owned(),
        source: source.to_owned(),
        sha256,
        outcomes: parsed.outcomes.len() as u64,
        rejected: parsed.bad.len() as u64,
        finished_at: now.to_rfc3339(),
        files: vec![lake.relative(&file.path)],
    };
    commit::<_, LakeError>(lake, |manifest| {
        manifest.outcome_imports.retain(|r| r.sha256 != record.sha256);
        manifest.outcome_imports.push(record.clone());
        Ok(())
    })?;
    registered.finish()?;
    Ok(OutcomeImport::Imported { outcomes: parsed.outcomes.len() as u64, rejected: parsed.bad, replaced: previous.is_some() })
}
