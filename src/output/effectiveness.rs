//! Reading the `rule_effectiveness` view (sql/outputs/rule_effectiveness.sql) for the report.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::prelude::SessionContext;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
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

pub async fn rule_effectiveness(ctx: &SessionContext) -> Result<Vec<RuleEffectiveness>, datafusion::error::DataFusionError> {
    let sql = "SELECT rule_id, type, signal, created_run_id, CAST(failures_before AS BIGINT), CAST(failures_after AS DOUBLE), \
               CAST(runs_after AS BIGINT), CAST(effectiveness AS DOUBLE), status FROM rule_effectiveness ORDER BY rule_id";
    let mut rules = Vec::new();
    for batch in ctx.sql(sql).await?.collect().await? {
        let text: Vec<_> = [0, 1, 2, 3, 8].iter().map(|&i| cast(batch.column(i), &DataType::Utf8)).collect::<Result<_, _>>()?;
        let t: Vec<_> = text.iter().map(|a| a.as_string::<i32>()).collect();
        let before = batch.column(4).as_primitive::<Int64Type>();
        let after = batch.column(5).as_primitive::<Float64Type>();
        let runs = batch.column(6).as_primitive::<Int64Type>();
        let eff = batch.column(7).as_primitive::<Float64Type>();
        for i in 0..batch.num_rows() {
            rules.push(RuleEffectiveness {
                rule_id: t[0].value(i).to_owned(),
                rule_type: t[1].value(i).to_owned(),
                signal: t[2].value(i).to_owned(),
                created_run_id: t[3].value(i).to_owned(),
                failures_before: before.value(i),
                failures_after: after.value(i),
                runs_after: runs.value(i),
                effectiveness: (!eff.is_null(i)).then(|| eff.value(i)),
                status: t[4].value(i).to_owned(),
            });
        }
    }
    Ok(rules)
}
