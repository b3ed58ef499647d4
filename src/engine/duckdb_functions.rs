//! DuckDB's functions that DataFusion has under another name or form, written as
//! DataFusion's where they mean the same: `year(ts)` is `date_part('year', ts)`, `first(x)`
//! `first_value(x)`, `count_if(c)` `count(CASE WHEN c THEN 1 END)`, `max_by(x, y)`
//! `first_value(x ORDER BY y DESC NULLS LAST)`. Those whose meaning depends on their
//! argument's type (`len` of a text or a list) are left to say what to write
//! ([`super::duckdb_names`]).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, Select, SelectItem, Value, VisitorMut,
    visit_expressions,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// DuckDB's parts of a time that are functions of their own, and `date_part`'s names.
const PARTS: &[(&str, &str)] = &[
    ("year", "year"),
    ("quarter", "quarter"),
    ("month", "month"),
    ("week", "week"),
    ("weekofyear", "week"),
    ("day", "day"),
    ("dayofmonth", "day"),
    ("dayofweek", "dow"),
    ("dayofyear", "doy"),
    ("hour", "hour"),
    ("minute", "minute"),
    ("second", "second"),
    ("millisecond", "millisecond"),
    ("microsecond", "microsecond"),
];

/// Functions that are DataFusion's under another name with the same arguments (as many
/// as DuckDB takes), and `string_agg` with the separator DuckDB leaves out.
const RENAMED: &[(&str, &str, std::ops::RangeInclusive<usize>)] = &[
    ("first", "first_value", 1..=1),
    ("last", "last_value", 1..=1),
    ("list", "array_agg", 1..=1),
    ("regexp_matches", "regexp_like", 2..=3),
    ("string_split", "string_to_array", 2..=2),
    ("str_split", "string_to_array", 2..=2),
    ("strftime", "to_char", 2..=2),
    ("strptime", "to_timestamp", 2..=2),
    ("typeof", "arrow_typeof", 1..=1),
    ("group_concat", "string_agg", 1..=2),
    ("string_agg", "string_agg", 1..=2),
];

/// Rewrites DuckDB's calls in every expression ([`super::duckdb_forms::visit_statement`]);
/// an item of a select list without alias keeps the name it was written with
/// (`count_if(tool_is_error)`), as DuckDB names it.
#[derive(Default)]
pub struct DuckDbFunctions {
    /// The items of the selects being visited, as written.
    written: Vec<Vec<Option<String>>>,
}

impl VisitorMut for DuckDbFunctions {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        // Only the items that call one of DuckDB's functions are written out to compare.
        let items = select.projection.iter().map(|item| match item {
            SelectItem::UnnamedExpr(expr) if calls_duckdb_function(expr) => Some(expr.to_string()),
            _ => None,
        });
        self.written.push(items.collect());
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        let written = self.written.pop().unwrap_or_default();
        for (item, written) in select.projection.iter_mut().zip(written) {
            if let (SelectItem::UnnamedExpr(expr), Some(written)) = (&*item, written)
                && expr.to_string() != written
            {
                *item = SelectItem::ExprWithAlias { expr: expr.clone(), alias: Ident::with_quote('"', written) };
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr
            && let Some(written) = as_datafusion_writes(function)
        {
            *expr = written;
        }
        ControlFlow::Continue(())
    }
}

/// The functions written as DataFusion's that have no entry of their own above.
const WRITTEN: &[&str] = &["count_if", "max_by", "arg_max", "min_by", "arg_min"];

/// The name of `function`, in lower case, when it is one of DuckDB's written here.
fn duckdb_name(function: &Function) -> Option<String> {
    let [part] = function.name.0.as_slice() else { return None };
    let name = part.as_ident().filter(|id| id.quote_style.is_none())?.value.to_ascii_lowercase();
    let known = PARTS.iter().any(|(duckdb, _)| *duckdb == name)
        || RENAMED.iter().any(|(duckdb, _, _)| *duckdb == name)
        || WRITTEN.contains(&name.as_str());
    known.then_some(name)
}

fn calls_duckdb_function(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match e {
        Expr::Function(function) if duckdb_name(function).is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// `function` as DataFusion writes it, where it is one of DuckDB's.
fn as_datafusion_writes(function: &mut Function) -> Option<Expr> {
    let name = duckdb_name(function)?;
    let FunctionArguments::List(list) = &mut function.args else { return None };
    if let Some((_, renamed, _)) = RENAMED.iter().find(|(duckdb, _, arity)| *duckdb == name && arity.contains(&list.args.len())) {
        if *renamed == "string_agg" && list.args.len() == 1 {
            list.args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(Value::SingleQuotedString(",".to_owned())))));
        }
        function.name = ObjectName::from(vec![Ident::new(*renamed)]);
        return None;
    }
    // The rest take plain arguments only, and no OVER.
    if function.over.is_some() {
        return None;
    }
    let arguments = plain_arguments(&function.args)?;
    let filter = function.filter.as_ref().map(|f| format!(" FILTER (WHERE {f})")).unwrap_or_default();
    let written = match (name.as_str(), arguments.as_slice()) {
        (name, [time]) if let Some((_, part)) = PARTS.iter().find(|(duckdb, _)| *duckdb == name) => {
            format!("date_part('{part}', {time})")
        }
        ("count_if", [condition]) => format!("count(CASE WHEN {condition} THEN 1 END){filter}"),
        ("max_by" | "arg_max", [value, by]) => format!("first_value({value} ORDER BY {by} DESC NULLS LAST){filter}"),
        ("min_by" | "arg_min", [value, by]) => format!("first_value({value} ORDER BY {by} NULLS LAST){filter}"),
        _ => return None,
    };
    Parser::new(&GenericDialect).try_with_sql(&written).ok()?.parse_expr().ok()
}

/// A call's arguments as written, when they are expressions only: no `DISTINCT`, no
/// `ORDER BY` inside, none named.
pub fn plain_arguments(arguments: &FunctionArguments) -> Option<Vec<String>> {
    let FunctionArguments::List(list) = arguments else { return None };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    list.args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr.to_string()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;
    use datafusion::sql::parser::DFParser;

    use super::*;
    use crate::engine::duckdb_forms::visit_statement;

    fn rewritten(sql: &str) -> String {
        let mut statement = DFParser::parse_sql(sql).unwrap().pop_front().unwrap();
        let _ = visit_statement(&mut statement, &mut DuckDbFunctions::default());
        statement.to_string()
    }

    #[test]
    fn duckdbs_calls_are_written_as_datafusions() {
        assert_eq!(
            rewritten(
                "SELECT year(ts) AS y, DayOfWeek(ts) AS d, first(x ORDER BY ts) AS f, count_if(n > 1) FILTER (WHERE n < 9) AS c FROM t"
            ),
            "SELECT date_part('year', ts) AS y, date_part('dow', ts) AS d, first_value(x ORDER BY ts) AS f, \
             count(CASE WHEN n > 1 THEN 1 END) FILTER (WHERE n < 9) AS c FROM t"
        );
        assert_eq!(
            rewritten("SELECT max_by(page, n), group_concat(page) g, n + 1 FROM t WHERE hour(ts) > 3 AND n IN (SELECT year(ts) FROM u)"),
            "SELECT first_value(page ORDER BY n DESC NULLS LAST) AS \"max_by(page, n)\", string_agg(page, ',') AS g, n + 1 FROM t \
             WHERE date_part('hour', ts) > 3 AND n IN (SELECT date_part('year', ts) AS \"year(ts)\" FROM u)",
            "an item without alias keeps its name"
        );
        assert_eq!(
            rewritten("SELECT \"year\"(ts), year(a, b), t.year, string_agg(x, ';') FROM t"),
            "SELECT \"year\"(ts), year(a, b), t.year, string_agg(x, ';') FROM t",
            "a quoted name, another number of arguments, a column: left as written"
        );
    }

    #[tokio::test]
    async fn what_they_are_written_as_runs_as_duckdb_runs_them() {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t (n INT, page VARCHAR, ts TIMESTAMP) AS VALUES (1, 'a', TIMESTAMP '2026-01-04 05:06:07'), (3, 'c', NULL), (2, 'b', TIMESTAMP '2025-12-31 23:00:00')")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let sql = rewritten(
            "SELECT max_by(page, ts), min_by(page, n), count_if(n > 1), string_agg(page ORDER BY page), \
             max(year(ts)), min(dayofweek(ts)), list(page ORDER BY n), typeof(max(n)) FROM t",
        );
        let rows = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        let printed = datafusion::arrow::util::pretty::pretty_format_batches(&rows).unwrap().to_string();
        let row = printed.lines().nth(3).unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(cells, ["a", "a", "2", "a,b,c", "2026", "0", "[a, b, c]", "Int32"], "{printed}");
    }
}
