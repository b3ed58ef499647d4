//! Functions DuckDB users reach for that DataFusion has in another form, whose meaning
//! here depends on what they are called with (`len` of a text or of a list), or that have
//! no form of one expression (`COLUMNS(…)`): a query that calls one is told what to write
//! here, with the call's own arguments (`epoch_ms(started)` → `CAST(started AS BIGINT)`),
//! or in terms of the lake's columns where they do not fit. Those that mean the same
//! are written as DataFusion's ([`super::duckdb_functions`]).

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, VisitorMut};

use super::duckdb_forms::visit_statement;
use super::duckdb_functions::plain_arguments;

/// What to write here for a call: `{1}`, `{2}`, … stand for its arguments; the example's
/// arguments fill them when the call has another number of them.
struct Here {
    template: &'static str,
    example: &'static [&'static str],
}

const fn here(template: &'static str, example: &'static [&'static str]) -> Here {
    Here { template, example }
}

/// DuckDB's names of a function, and what to write here: one expression, or several for
/// its several uses (`epoch_ms` of a time and of a number).
const DUCKDB_FUNCTIONS: &[(&[&str], &[Here])] = &[
    (&["epoch_ms"], &[here("CAST({1} AS BIGINT)", &["ts"]), here("to_timestamp_millis({1})", &["1767225600000"])]),
    (&["epoch"], &[here("to_unixtime({1})", &["ts"])]),
    (&["date_diff", "datediff"], &[here("date_part('epoch', max(ts) - min(ts))", &[])]),
    (&["len"], &[here("character_length({1})", &["content"]), here("cardinality({1})", &["string_to_array(content, ' ')"])]),
    (&["regexp_extract"], &[here("regexp_match({1}, {2})[1]", &["content", "'([0-9]+)'"])]),
    (&["columns"], &[here("* EXCLUDE (content)", &[]), here("tool_name, tool_params", &[])]),
];

/// What to write here for DuckDB's function `name`, if it is one DataFusion lacks: filled
/// with the arguments of its first call in `statement` where they fit.
pub fn written_here(name: &str, statement: Option<&Statement>) -> Option<Vec<String>> {
    let name = name.to_ascii_lowercase();
    let (_, instead) = DUCKDB_FUNCTIONS.iter().find(|(names, _)| names.contains(&name.as_str()))?;
    let arguments = statement.and_then(|s| call_arguments(s, &name));
    Some(
        instead
            .iter()
            .map(|here| match &arguments {
                Some(arguments) if arguments.len() == here.example.len() => filled(here.template, arguments),
                _ => filled(here.template, here.example),
            })
            .collect(),
    )
}

fn filled(template: &str, arguments: &[impl AsRef<str>]) -> String {
    let mut text = template.to_owned();
    for (i, argument) in arguments.iter().enumerate() {
        text = text.replace(&format!("{{{}}}", i + 1), argument.as_ref());
    }
    text
}

/// The arguments of the first call of `name` in `statement`, as written; `None` when it
/// has none to fill in (`count(*)`, named or `DISTINCT` arguments).
fn call_arguments(statement: &Statement, name: &str) -> Option<Vec<String>> {
    let mut finder = FirstCall { name, arguments: None };
    let _ = visit_statement(&mut statement.clone(), &mut finder);
    finder.arguments.flatten()
}

struct FirstCall<'a> {
    name: &'a str,
    arguments: Option<Option<Vec<String>>>,
}

impl VisitorMut for FirstCall<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Function(function) = expr else { return ControlFlow::Continue(()) };
        if !function.name.0.last().and_then(|part| part.as_ident()).is_some_and(|id| id.value.eq_ignore_ascii_case(self.name)) {
            return ControlFlow::Continue(());
        }
        self.arguments = Some(plain_arguments(&function.args));
        ControlFlow::Break(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;
    use datafusion::sql::parser::DFParser;

    use super::*;

    #[tokio::test]
    async fn what_each_says_to_write_runs_where_its_name_does_not() {
        let ctx = SessionContext::new();
        let table = "CREATE TABLE events (ts TIMESTAMP, type VARCHAR, tool_name VARCHAR, tool_params VARCHAR, content VARCHAR) AS VALUES \
             (TIMESTAMP '2026-01-01 00:00:00', 'msg.in', NULL, NULL, 'order 42 please'), \
             (TIMESTAMP '2026-01-01 00:00:05', 'tool.call', 'cancel_order', '{}', NULL)";
        ctx.sql(table).await.unwrap().collect().await.unwrap();
        for (names, instead) in DUCKDB_FUNCTIONS {
            for here in *instead {
                let sql = format!("SELECT {} FROM events", filled(here.template, here.example));
                let rows = ctx.sql(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
                rows.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            for name in *names {
                let sql = format!("SELECT {name}(ts) FROM events");
                assert!(ctx.sql(&sql).await.is_err(), "{name} is no function of DataFusion's");
                let examples: Vec<String> = instead.iter().map(|h| filled(h.template, h.example)).collect();
                assert_eq!(written_here(&name.to_uppercase(), None), Some(examples));
            }
        }
        assert_eq!(written_here("to_char", None), None);
    }

    #[test]
    fn a_call_is_answered_with_its_own_arguments() {
        let said = |sql: &str, name: &str| {
            let statement = DFParser::parse_sql(sql).unwrap().pop_front().unwrap();
            written_here(name, Some(&statement)).unwrap()
        };
        assert_eq!(
            said("SELECT session, REGEXP_EXTRACT(content, '#W[0-9]+') FROM events", "regexp_extract"),
            ["regexp_match(content, '#W[0-9]+')[1]"]
        );
        assert_eq!(
            said("SELECT 1 FROM t WHERE x IN (SELECT epoch_ms(started) FROM u)", "epoch_ms"),
            ["CAST(started AS BIGINT)", "to_timestamp_millis(started)"]
        );
        assert_eq!(
            said("SELECT epoch_ms(ts, 3) FROM events", "epoch_ms"),
            ["CAST(ts AS BIGINT)", "to_timestamp_millis(1767225600000)"],
            "a call with other arguments than DuckDB's is answered with the example"
        );
        assert_eq!(
            said("SELECT len(DISTINCT type) FROM events", "len"),
            ["character_length(content)", "cardinality(string_to_array(content, ' '))"]
        );
    }
}
