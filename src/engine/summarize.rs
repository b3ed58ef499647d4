//! DuckDB's `SUMMARIZE events` (or `SUMMARIZE SELECT …`): a row per column with its type,
//! least and greatest value, approximate number of distinct values, average, standard
//! deviation and approximate quartiles (of numbers), count of values and share of nulls,
//! in DuckDB's columns, from one aggregate over the relation, so one scan whatever its
//! width.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::common::plan_err;
use datafusion::error::DataFusionError;
use datafusion::error::Result;
use datafusion::prelude::{DataFrame, SessionContext};

use super::duckdb_forms;

/// The longest least or greatest value shown, in characters: longer texts are cut.
const VALUE_CHARS: usize = 60;

/// The aggregates computed per column, in this order, after the relation's `count(*)`.
const PER_COLUMN: usize = 9;

/// What `sql` summarizes, when it is one `SUMMARIZE` statement (after `--` comments, as a
/// file may begin).
pub fn summarize_target(sql: &str) -> Option<&str> {
    let mut statement = sql.trim();
    while let Some(comment) = statement.strip_prefix("--") {
        statement = comment.split_once('\n').map_or("", |(_, rest)| rest).trim_start();
    }
    let statement = statement.trim_end_matches(';').trim_end();
    let (keyword, target) = statement.split_once(char::is_whitespace)?;
    (keyword.eq_ignore_ascii_case("summarize") && !target.contains(';')).then(|| target.trim())
}

/// One query, read as DuckDB reads it (`SUMMARIZE 'x.tsv'`); its own errors are carried
/// whole.
async fn duckdb_sql(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    let statements = duckdb_forms::parse_statements(sql).map_err(|e| DataFusionError::External(Box::new(e)))?;
    let Some(statement) = statements.into_iter().next() else { return plan_err!("nothing to summarize") };
    let plan = ctx.state().statement_to_plan(statement).await?;
    ctx.execute_logical_plan(plan).await
}

/// The summary of `target`, a table, view or file, or a query.
pub async fn summarize(ctx: &SessionContext, target: &str) -> Result<DataFrame> {
    let first_word = target.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
    let query = ["select", "with", "from", "values", "("].iter().any(|start| first_word.starts_with(start));
    let relation = if query { format!("({target}) AS summarized") } else { target.to_owned() };
    let fields = duckdb_sql(ctx, &format!("SELECT * FROM {relation}")).await?.schema().fields().clone();
    let mut aggregates = vec!["count(*)".to_owned()];
    for field in &fields {
        aggregates.extend(column_aggregates(field.name(), field.data_type()));
    }
    // Named by position: two NULLs of one type would otherwise share a name.
    let aggregates: Vec<String> = aggregates.iter().enumerate().map(|(i, aggregate)| format!("{aggregate} AS a{i}")).collect();
    let aggregated = duckdb_sql(ctx, &format!("SELECT {} FROM {relation}", aggregates.join(", "))).await?;
    let schema = Arc::new(aggregated.schema().as_arrow().clone());
    // One row: an aggregate with no GROUP BY has one, over no rows too.
    let row = datafusion::arrow::compute::concat_batches(&schema, &aggregated.collect().await?)?;
    let value = |i: usize| -> Result<Option<String>> {
        let column = row.column(i);
        Ok(if column.is_null(0) { None } else { Some(array_value_to_string(column, 0)?) })
    };
    let rows = value(0)?.and_then(|n| n.parse::<i64>().ok()).unwrap_or(0);
    let mut summary = Summary::default();
    for (i, field) in fields.iter().enumerate() {
        let at = 1 + PER_COLUMN * i;
        let count = value(at)?.and_then(|n| n.parse::<i64>().ok()).unwrap_or(0);
        summary.name.push(Some(field.name().clone()));
        summary.data_type.push(Some(field.data_type().to_string()));
        summary.min.push(value(at + 1)?.map(|v| clipped(&v)));
        summary.max.push(value(at + 2)?.map(|v| clipped(&v)));
        summary.approx_unique.push(value(at + 3)?.and_then(|n| n.parse().ok()));
        summary.avg.push(value(at + 4)?.and_then(|n| n.parse().ok()));
        summary.std.push(value(at + 5)?.and_then(|n| n.parse().ok()));
        summary.q25.push(value(at + 6)?.and_then(|n| n.parse().ok()));
        summary.q50.push(value(at + 7)?.and_then(|n| n.parse().ok()));
        summary.q75.push(value(at + 8)?.and_then(|n| n.parse().ok()));
        summary.count.push(Some(count));
        let nulls = if rows == 0 { 0.0 } else { 100.0 * (rows - count) as f64 / rows as f64 };
        summary.null_percentage.push(Some((nulls * 100.0).round() / 100.0));
    }
    ctx.read_batch(summary.into_batch()?)
}

/// Count, least, greatest, approximate distinct values, average, standard deviation and
/// approximate quartiles of one column; NULL where the type has none (no order for lists
/// and structs, no average for texts, no quartiles for decimals).
fn column_aggregates(name: &str, data_type: &DataType) -> [String; PER_COLUMN] {
    let column = format!("\"{}\"", name.replace('"', "\"\""));
    let ordered = data_type.is_numeric()
        || data_type.is_temporal()
        || matches!(data_type, DataType::Boolean | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let numbers = data_type.is_integer() || data_type.is_floating();
    let when = |yes: bool, aggregate: String, none: &str| if yes { aggregate } else { format!("CAST(NULL AS {none})") };
    let quartile =
        |q: f64| when(numbers, format!("CAST(approx_percentile_cont({q}) WITHIN GROUP (ORDER BY {column}) AS DOUBLE)"), "DOUBLE");
    [
        format!("count({column})"),
        when(ordered, format!("CAST(min({column}) AS VARCHAR)"), "VARCHAR"),
        when(ordered, format!("CAST(max({column}) AS VARCHAR)"), "VARCHAR"),
        when(ordered, format!("approx_distinct({column})"), "BIGINT"),
        when(data_type.is_numeric(), format!("CAST(avg({column}) AS DOUBLE)"), "DOUBLE"),
        when(numbers, format!("CAST(stddev({column}) AS DOUBLE)"), "DOUBLE"),
        quartile(0.25),
        quartile(0.5),
        quartile(0.75),
    ]
}

fn clipped(value: &str) -> String {
    match value.char_indices().nth(VALUE_CHARS) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_owned(),
    }
}

/// The summary's columns, as DuckDB names them.
#[derive(Default)]
struct Summary {
    name: Vec<Option<String>>,
    data_type: Vec<Option<String>>,
    min: Vec<Option<String>>,
    max: Vec<Option<String>>,
    approx_unique: Vec<Option<u64>>,
    avg: Vec<Option<f64>>,
    std: Vec<Option<f64>>,
    q25: Vec<Option<f64>>,
    q50: Vec<Option<f64>>,
    q75: Vec<Option<f64>>,
    count: Vec<Option<i64>>,
    null_percentage: Vec<Option<f64>>,
}

impl Summary {
    fn into_batch(self) -> Result<RecordBatch> {
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("column_name", Arc::new(StringArray::from(self.name))),
            ("column_type", Arc::new(StringArray::from(self.data_type))),
            ("min", Arc::new(StringArray::from(self.min))),
            ("max", Arc::new(StringArray::from(self.max))),
            ("approx_unique", Arc::new(UInt64Array::from(self.approx_unique))),
            ("avg", Arc::new(Float64Array::from(self.avg))),
            ("std", Arc::new(Float64Array::from(self.std))),
            ("q25", Arc::new(Float64Array::from(self.q25))),
            ("q50", Arc::new(Float64Array::from(self.q50))),
            ("q75", Arc::new(Float64Array::from(self.q75))),
            ("count", Arc::new(Int64Array::from(self.count))),
            ("null_percentage", Arc::new(Float64Array::from(self.null_percentage))),
        ];
        Ok(RecordBatch::try_from_iter_with_nullable(columns.into_iter().map(|(name, array)| (name, array, true)))?)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::query_json;

    #[test]
    fn only_a_summarize_statement_of_its_own_is_one() {
        assert_eq!(summarize_target("SUMMARIZE events;"), Some("events"));
        assert_eq!(summarize_target("  summarize SELECT type FROM events\n"), Some("SELECT type FROM events"));
        assert_eq!(summarize_target("SUMMARIZE events; SELECT 1"), None);
        assert_eq!(summarize_target("SELECT 1"), None);
        assert_eq!(summarize_target("summarize"), None);
        assert_eq!(summarize_target("-- what the lake holds\n-- per column\nSUMMARIZE events;\n"), Some("events"));
        assert_eq!(summarize_target("-- SUMMARIZE events"), None);
    }

    #[tokio::test]
    async fn each_column_is_summarized_by_what_its_type_has() {
        let ctx = SessionContext::new();
        let table = "CREATE TABLE t (n INT, word VARCHAR, tags INT[]) AS VALUES \
             (1, 'b', [1]), (3, NULL, NULL), (NULL, 'a long word that is cut where it passes sixty characters, like this one', [2, 3]), (2, 'b', NULL)";
        ctx.sql(table).await.unwrap().collect().await.unwrap();
        ctx.register_table("summary", summarize(&ctx, "t").await.unwrap().into_view()).unwrap();
        let rows = query_json(&ctx, "SELECT * FROM summary").await.unwrap();
        let mut n = rows[0].clone();
        let (q25, q75) = (n["q25"].as_f64().unwrap(), n["q75"].as_f64().unwrap());
        assert!((1.0..=2.0).contains(&q25) && (2.0..=3.0).contains(&q75), "quartiles of 1, 2, 3: {n}");
        n.as_object_mut().unwrap().retain(|key, _| key != "q25" && key != "q75");
        assert_eq!(
            n,
            json!({"column_name": "n", "column_type": "Int32", "min": "1", "max": "3", "approx_unique": 3, "avg": 2.0, "std": 1.0,
                "q50": 2.0, "count": 3, "null_percentage": 25.0})
        );
        assert_eq!(
            (&rows[1]["min"], &rows[1]["count"], &rows[1]["avg"]),
            (&json!("a long word that is cut where it passes sixty characters, li…"), &json!(3), &serde_json::Value::Null)
        );
        assert_eq!((&rows[2]["min"], &rows[2]["count"], &rows[2]["null_percentage"]), (&serde_json::Value::Null, &json!(2), &json!(50.0)));

        let query = summarize(&ctx, "SELECT word FROM t WHERE n > 1").await.unwrap().collect().await.unwrap();
        assert_eq!((query[0].num_rows(), array_value_to_string(query[0].column(10), 0).unwrap()), (1, "1".to_owned()));
        let nothing = summarize(&ctx, "SELECT * FROM t WHERE false").await.unwrap().collect().await.unwrap();
        assert_eq!(nothing[0].num_rows(), 3, "a row per column of no rows");
        assert_eq!(
            (array_value_to_string(nothing[0].column(10), 0).unwrap(), array_value_to_string(nothing[0].column(11), 0).unwrap()),
            ("0".to_owned(), "0.0".to_owned())
        );
    }
}
