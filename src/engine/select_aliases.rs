//! DuckDB's aliases of the select list named again in the same `SELECT`: in its `WHERE`
//! and in the items after them (`SELECT length(content) AS n, n * 2 FROM events WHERE
//! n > 100`). DataFusion finds them in `GROUP BY`, `HAVING`, `QUALIFY` and `ORDER BY` only.
//! As in DuckDB a column wins over an alias of its name, so an alias is written out only
//! after planning found no column of that name: in one `SELECT` that names it at a time,
//! keeping the change where it moved the error (the error's columns tell its `SELECT`).

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use datafusion::common::SchemaError;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, Select, SelectItem, VisitMut, VisitorMut, visit_expressions};

use super::EngineError;
use super::duckdb_forms::visit_statement;

/// How many aliases one statement may have written out; each planning again.
const MAX_INLINED: usize = 32;

/// Plans `statement`, writing out the aliases it names where DuckDB would take them;
/// `statement` is left as it was planned.
pub async fn plan_statement(ctx: &SessionContext, statement: &mut Statement) -> Result<LogicalPlan, DataFusionError> {
    let mut error = match ctx.state().statement_to_plan(statement.clone()).await {
        Ok(plan) => return Ok(plan),
        Err(error) => error,
    };
    'inlined: for _ in 0..MAX_INLINED {
        let Some(missing) = missing_column(&error) else { break };
        let mut counted = InlineAlias::new(&missing.name, usize::MAX);
        let _ = visit_statement(&mut statement.clone(), &mut counted);
        if let Some(filter) = counted.window_filter {
            let name = missing.name;
            return Err(DataFusionError::External(Box::new(EngineError::WindowAliasInWhere { name, filter })));
        }
        for scope in 0..counted.selects_naming {
            let mut candidate = statement.clone();
            let _ = visit_statement(&mut candidate, &mut InlineAlias::new(&missing.name, scope));
            match ctx.state().statement_to_plan(candidate.clone()).await {
                Ok(plan) => {
                    *statement = candidate;
                    return Ok(plan);
                }
                Err(next) if missing_column(&next).as_ref() == Some(&missing) => {}
                Err(next) => {
                    *statement = candidate;
                    error = next;
                    continue 'inlined;
                }
            }
        }
        break;
    }
    Err(error)
}

/// A column that planning did not find, by the name written unqualified, and the columns
/// of the input it was looked for in.
#[derive(Debug, PartialEq)]
struct MissingColumn {
    name: String,
    columns: BTreeSet<String>,
}

fn missing_column(error: &DataFusionError) -> Option<MissingColumn> {
    let DataFusionError::SchemaError(schema_error, _) = error.find_root() else { return None };
    let SchemaError::FieldNotFound { field, valid_fields } = schema_error.as_ref() else { return None };
    if field.relation.is_some() {
        return None;
    }
    Some(MissingColumn { name: field.name.clone(), columns: valid_fields.iter().map(datafusion::common::Column::flat_name).collect() })
}

/// The name DataFusion gives an identifier: unquoted ones in lower case.
fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// Writes out the alias `name` in the `scope`th `SELECT` that names it, counting them.
struct InlineAlias<'a> {
    name: &'a str,
    scope: usize,
    selects_naming: usize,
    /// A `WHERE` that tests the alias of a window function, which it cannot.
    window_filter: Option<String>,
}

impl<'a> InlineAlias<'a> {
    fn new(name: &'a str, scope: usize) -> Self {
        Self { name, scope, selects_naming: 0, window_filter: None }
    }
}

impl VisitorMut for InlineAlias<'_> {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        let mut inlined = select.clone();
        if inline_alias(&mut inlined, self.name, &mut self.window_filter) {
            if self.selects_naming == self.scope {
                *select = inlined;
            }
            self.selects_naming += 1;
        }
        ControlFlow::Continue(())
    }
}

/// Writes the expression that `select`'s list names `name` in place of that name in its
/// `WHERE` and in the items after it, not in its subqueries; whether it named it there.
/// An item without alias keeps the name it was written with (`n * 2`). A window
/// function's value cannot be tested in `WHERE` (it is computed after it): such a `WHERE`
/// is left as it is and kept in `window_filter`.
fn inline_alias(select: &mut Select, name: &str, window_filter: &mut Option<String>) -> bool {
    let Some(position) =
        select.projection.iter().position(|item| matches!(item, SelectItem::ExprWithAlias { alias, .. } if normalized(alias) == name))
    else {
        return false;
    };
    let SelectItem::ExprWithAlias { expr: aliased, .. } = &select.projection[position] else { return false };
    let mut replace = ReplaceName { name, with: Expr::Nested(Box::new(aliased.clone())), depth: 0, replaced: false };
    let mut named = false;
    for item in &mut select.projection[position + 1..] {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                let written = expr.to_string();
                replace.replaced_in(expr);
                if replace.replaced {
                    *item = SelectItem::ExprWithAlias { expr: expr.clone(), alias: Ident::with_quote('"', written) };
                }
            }
            SelectItem::ExprWithAlias { expr, .. } => replace.replaced_in(expr),
            _ => {}
        }
        named |= replace.replaced;
    }
    if let Some(selection) = &mut select.selection {
        let written = selection.clone();
        replace.replaced_in(selection);
        if replace.replaced && is_windowed(&replace.with) {
            *window_filter = Some(written.to_string());
            *selection = written;
        } else {
            named |= replace.replaced;
        }
    }
    named
}

/// Whether `expr` calls a window function.
fn is_windowed(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match e {
        Expr::Function(function) if function.over.is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Replaces the unqualified identifier `name` outside subqueries.
struct ReplaceName<'a> {
    name: &'a str,
    with: Expr,
    depth: usize,
    replaced: bool,
}

impl ReplaceName<'_> {
    fn replaced_in(&mut self, expr: &mut Expr) {
        self.replaced = false;
        let _ = expr.visit(self);
    }
}

impl VisitorMut for ReplaceName<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.depth == 0
            && let Expr::Identifier(ident) = expr
            && normalized(ident) == self.name
        {
            *expr = self.with.clone();
            self.replaced = true;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;

    use super::*;

    fn inlined(sql: &str, name: &str, scope: usize) -> (String, usize) {
        let mut statement = DFParser::parse_sql(sql).unwrap().pop_front().unwrap();
        let mut visitor = InlineAlias::new(name, scope);
        let _ = visit_statement(&mut statement, &mut visitor);
        (statement.to_string(), visitor.selects_naming)
    }

    #[test]
    fn an_alias_is_written_out_in_where_and_in_the_items_after_it() {
        assert_eq!(
            inlined("SELECT length(content) AS n, n * 2, n + 1 AS m FROM events WHERE n > 100", "n", 0),
            (
                "SELECT length(content) AS n, (length(content)) * 2 AS \"n * 2\", (length(content)) + 1 AS m FROM events WHERE (length(content)) > 100"
                    .to_owned(),
                1
            )
        );
        assert_eq!(inlined("SELECT N + 1 AS m, upper(type) AS n FROM events", "n", 0).1, 0, "an item before the alias is not its");
        assert_eq!(inlined("SELECT 1 AS \"N\", n FROM t", "n", 0).1, 0, "a quoted alias keeps its case");
        assert_eq!(inlined("SELECT 1 AS n FROM t WHERE x IN (SELECT n FROM u)", "n", 0).1, 0, "a subquery has names of its own");
    }

    #[test]
    fn only_the_chosen_select_is_changed() {
        let sql = "SELECT a AS n, n FROM (SELECT b AS n, n + 1 AS c FROM t) WHERE n > 0";
        assert_eq!(inlined(sql, "n", 1), ("SELECT a AS n, n FROM (SELECT b AS n, (b) + 1 AS c FROM t) WHERE n > 0".to_owned(), 2));
        assert_eq!(
            inlined(sql, "n", 0),
            ("SELECT a AS n, (a) AS \"n\" FROM (SELECT b AS n, n + 1 AS c FROM t) WHERE (a) > 0".to_owned(), 2)
        );
    }

    async fn planned_columns(ctx: &SessionContext, sql: &str) -> Result<(Vec<String>, String), DataFusionError> {
        let mut statement = DFParser::parse_sql(sql)?.pop_front().unwrap();
        let plan = plan_statement(ctx, &mut statement).await?;
        Ok((plan.schema().fields().iter().map(|f| f.name().clone()).collect(), statement.to_string()))
    }

    #[tokio::test]
    async fn a_column_wins_over_an_alias_of_its_name() {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t (i BIGINT, s VARCHAR) AS VALUES (1, 'x1'), (2, 'x2'), (3, 'x3')").await.unwrap().collect().await.unwrap();

        let (columns, planned) = planned_columns(&ctx, "SELECT upper(s) AS s, i FROM t WHERE s = 'x1'").await.unwrap();
        assert_eq!(planned, "SELECT upper(s) AS s, i FROM t WHERE s = 'x1'", "nothing written out");
        assert_eq!(columns, ["s", "i"]);

        let sql = "SELECT i + 1 AS a, a + 1 AS b, b * 10 FROM t WHERE b > 3";
        let (columns, _) = planned_columns(&ctx, sql).await.unwrap();
        assert_eq!(columns, ["a", "b", "b * 10"]);
        let rows = ctx.sql(&planned_columns(&ctx, sql).await.unwrap().1).await.unwrap().collect().await.unwrap();
        let printed = datafusion::arrow::util::pretty::pretty_format_batches(&rows).unwrap().to_string();
        assert!(
            printed.contains("| 3 | 4 | 40     |") && printed.contains("| 4 | 5 | 50     |") && !printed.contains("| 2 |"),
            "{printed}"
        );

        let error = planned_columns(&ctx, "SELECT row_number() OVER (ORDER BY i) AS r FROM t WHERE r < 3 AND i > 0").await.unwrap_err();
        let DataFusionError::External(error) = error else { panic!("{error}") };
        assert_eq!(
            error.to_string(),
            "r is a window function's value, which WHERE cannot test (it is computed after the WHERE): test it in \
             QUALIFY, as in `… QUALIFY r < 3 AND i > 0`"
        );
        let (columns, _) = planned_columns(&ctx, "SELECT row_number() OVER (ORDER BY i) AS r, r * 10 FROM t").await.unwrap();
        assert_eq!(columns, ["r", "r * 10"], "the items after it can name it");

        let error = planned_columns(&ctx, "SELECT i AS a FROM t WHERE nope > 1").await.unwrap_err();
        assert_eq!(missing_column(&error).map(|m| m.name), Some("nope".to_owned()), "{error}");
    }
}
