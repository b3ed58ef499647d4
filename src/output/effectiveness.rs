//! Reading the `rule_effectiveness` view (sql/outputs/rule_effectiveness.sql) for the report.

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::engine::{EngineError, query_json};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleEffectiveness {
    pub rule_id: String,
    #[serde(rename = "type")]
    pub rule_type: String,
    pub signal: String,
    pub created_run_id: String,
    pub failures_before: i64,
    pub failures_after: f64,
    pub runs_after: i64,
    /// Percent drop in failures; `None` while nothing can be said.
    pub effectiveness: Option<f64>,
    /// effective | marginal | ineffective | pending
    pub status: String,
}

pub async fn rule_effectiveness(ctx: &SessionContext) -> Result<Vec<RuleEffectiveness>, EngineError> {
    // Named as the struct's fields are.
    let sql = r#"SELECT rule_id AS "ruleId", type, signal, created_run_id AS "createdRunId",
        CAST(failures_before AS BIGINT) AS "failuresBefore", CAST(failures_after AS DOUBLE) AS "failuresAfter",
        CAST(runs_after AS BIGINT) AS "runsAfter", CAST(effectiveness AS DOUBLE) AS effectiveness, status
        FROM rule_effectiveness ORDER BY rule_id"#;
    query_json(ctx, sql)
        .await?
        .into_iter()
        .map(|row| serde_json::from_value(row).map_err(|source| EngineError::Row { query: "rule_effectiveness", source }))
        .collect()
}
