//! DuckDB's `FROM events` with no `SELECT` means `SELECT * FROM events`. sqlparser reads
//! such a query (with `ORDER BY` and `LIMIT`, not `WHERE`) and marks it, but DataFusion
//! plans its empty select list as `SELECT FROM events`: rows of no columns, printed as an
//! empty table. The list is filled in before planning, for that form alone (`SELECT FROM
//! events` keeps its meaning).

use std::ops::ControlFlow;

use datafusion::sql::parser::{CopyToSource, Statement};
use datafusion::sql::sqlparser::ast::{Query, SelectFlavor, SelectItem, SetExpr, VisitMut, VisitorMut, WildcardAdditionalOptions};

/// Gives every `FROM …` query without `SELECT` in `statement` the select list `*`.
pub fn select_all_where_from_first(statement: &mut Statement) {
    match statement {
        Statement::Statement(statement) => {
            let _ = statement.visit(&mut FromFirst);
        }
        Statement::CopyTo(copy) => {
            if let CopyToSource::Query(query) = &mut copy.source {
                let _ = query.visit(&mut FromFirst);
            }
        }
        Statement::Explain(explain) => select_all_where_from_first(&mut explain.statement),
        Statement::CreateExternalTable(_) | Statement::Reset(_) => {}
    }
}

struct FromFirst;

impl VisitorMut for FromFirst {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        select_all(&mut query.body);
        ControlFlow::Continue(())
    }
}

/// The selects of one query's body; its subqueries are queries of their own, visited apart.
fn select_all(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) if select.flavor == SelectFlavor::FromFirstNoSelect && select.projection.is_empty() => {
            select.projection.push(SelectItem::Wildcard(WildcardAdditionalOptions::default()));
        }
        SetExpr::SetOperation { left, right, .. } => {
            select_all(left);
            select_all(right);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::RecordBatch;
    use datafusion::prelude::SessionContext;
    use serde_json::json;

    use super::*;

    /// The columns and rows `sql` returns over a table of two columns and two rows.
    async fn rows(sql: &str) -> serde_json::Value {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t (a INT, b VARCHAR) AS VALUES (1, 'x'), (2, 'y')").await.unwrap().collect().await.unwrap();
        let mut statement = datafusion::sql::parser::DFParser::parse_sql(sql).unwrap().pop_front().unwrap();
        select_all_where_from_first(&mut statement);
        let plan = ctx.state().statement_to_plan(statement).await.unwrap();
        let batches = ctx.execute_logical_plan(plan).await.unwrap().collect().await.unwrap();
        let columns: usize = batches.first().map_or(0, RecordBatch::num_columns);
        let count: usize = batches.iter().map(RecordBatch::num_rows).sum();
        json!({"columns": columns, "rows": count})
    }

    #[tokio::test]
    async fn from_without_select_selects_every_column() {
        assert_eq!(rows("FROM t").await, json!({"columns": 2, "rows": 2}));
        assert_eq!(rows("FROM t ORDER BY a DESC LIMIT 1").await, json!({"columns": 2, "rows": 1}));
        assert_eq!(rows("SELECT count(*) FROM (FROM t) s").await, json!({"columns": 1, "rows": 1}));
        assert_eq!(rows("FROM t UNION ALL FROM t").await, json!({"columns": 2, "rows": 4}));
        assert_eq!(rows("FROM t SELECT b WHERE a > 1").await, json!({"columns": 1, "rows": 1}), "its list when it has one");
    }

    #[tokio::test]
    async fn select_with_an_empty_list_keeps_its_meaning() {
        assert_eq!(rows("SELECT FROM t").await, json!({"columns": 0, "rows": 2}));
    }
}
