//! Writing each session's risk (`tracelake risk`) into the lake's `session_risk` table. A
//! fit replaces the one before it: the table holds the risks of the latest fit only.

use serde::{Deserialize, Serialize};

use super::LakeError;
use super::commit::{RunKind, RunLock, commit};
use super::layout::{Lake, PartitionDate, Table, part_file_name};
use super::live_writers::RegisteredWriter;
use super::parquet_files::write_parquet_atomic;
use super::schema::{SESSION_RISK_SCHEMA, session_risk_batch};

/// The risk of one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRisk {
    pub session: String,
    /// The model's probability that the session failed, fitted on every scored session.
    pub risk: f64,
    /// Its known outcome, if it has one.
    pub failed: Option<bool>,
    /// Whether any signal found something in it.
    pub flagged: bool,
}

/// The committed fit whose risks `session_risk` holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RiskFitRecord {
    pub writer_id: String,
    /// The outcomes fitted against: `imported` or `inferred`.
    pub outcomes: String,
    pub sessions: u64,
    pub cross_validated_auc: Option<f64>,
    pub finished_at: String,
    /// Data files, relative to the lake root.
    pub files: Vec<String>,
}

/// Replaces the lake's session risks with `risks`, fitted against `outcomes`.
pub fn write_session_risks(lake: &Lake, risks: &[SessionRisk], outcomes: &str, auc: Option<f64>) -> Result<(), LakeError> {
    let _run = RunLock::acquire(lake, RunKind::Risk)?;
    let now = chrono::Utc::now();
    let registered = RegisteredWriter::start(lake)?;
    let writer = registered.id().clone();
    let dir = lake.partition_dir(Table::SessionRisk, &PartitionDate::from_millis(now.timestamp_millis()));
    let batch = session_risk_batch(risks, outcomes, now.timestamp_millis())?;
    let file = write_parquet_atomic(&dir, &part_file_name(&writer, 0), SESSION_RISK_SCHEMA.clone(), [Ok(batch)])?;
    let record = RiskFitRecord {
        writer_id: writer.as_str().to_owned(),
        outcomes: outcomes.to_owned(),
        sessions: risks.len() as u64,
        cross_validated_auc: auc,
        finished_at: now.to_rfc3339(),
        files: vec![lake.relative(&file.path)],
    };
    commit::<_, LakeError>(lake, |manifest| {
        manifest.risk_fit = Some(record.clone());
        Ok(())
    })?;
    registered.finish()
}
