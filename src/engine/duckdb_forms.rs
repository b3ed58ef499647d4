//! DuckDB's forms that DataFusion's parser does not read or plans otherwise, made
//! DataFusion's before planning: `FROM t WHERE …` with no `SELECT` ([`with_select_all`],
//! [`FromFirst`]), `ORDER BY ALL` ([`OrderByAll`]), functions DataFusion names otherwise
//! ([`DuckDbFunctions`]), the read functions' options by name
//! and files as tables ([`ReadCalls`]), samples ([`duckdb_samples`], [`Samples`]), the
//! options of `COPY … TO` ([`duckdb_copy`]), the pragmas that ask what the session holds
//! ([`duckdb_pragmas`]); `PIVOT`, which DataFusion has not, says what to write instead.

use std::collections::VecDeque;
use std::ops::ControlFlow;

use datafusion::error::DataFusionError;
use datafusion::sql::parser::{CopyToSource, DFParser, Statement};
use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::EngineError;
use super::copy_options::duckdb_copy;
use super::duckdb_functions::DuckDbFunctions;
use super::from_first::{FromFirst, with_select_all};
use super::order_by_all::OrderByAll;
use super::pragmas::duckdb_pragmas;
use super::read_calls::ReadCalls;
use super::samples::{Samples, duckdb_samples};
use super::sql_text::{statements, tokens_if_it_holds};

/// The statements of `sql`, read as DuckDB reads them.
pub fn parse_statements(sql: &str) -> Result<VecDeque<Statement>, EngineError> {
    let sampled = duckdb_samples(sql)?;
    let sql = sampled.as_deref().unwrap_or(sql);
    let copied = duckdb_copy(sql)?;
    let sql = copied.as_deref().unwrap_or(sql);
    let answered = duckdb_pragmas(sql)?;
    let sql = answered.as_deref().unwrap_or(sql);
    let mut statements = match DFParser::parse_sql(sql) {
        Ok(statements) => statements,
        Err(_) if let Some((name, instead)) = pivot_statement(sql) => {
            return Err(EngineError::DuckDbFunction { name, instead: instead.iter().map(|s| (*s).to_owned()).collect() });
        }
        // Read again as DuckDB reads it; an error then is said of the text as written.
        Err(error) => match with_select_all(sql) {
            None => return Err(syntax_error(error)),
            Some(rewritten) => DFParser::parse_sql(&rewritten.sql).map_err(|e| match syntax_error(e) {
                EngineError::Syntax(text) => EngineError::Syntax(rewritten.original_message(&text)),
                other => other,
            })?,
        },
    };
    for statement in &mut statements {
        rewrite(statement)?;
    }
    Ok(statements)
}

/// What DuckDB's `PIVOT` and `UNPIVOT` statements are written as here.
const PIVOT_HERE: &[&str] = &[
    "SELECT session, count(*) FILTER (WHERE type = 'tool.call') AS tool_calls, count(*) FILTER (WHERE type = 'msg.in') AS messages_in FROM events GROUP BY session",
];
const UNPIVOT_HERE: &[&str] = &[
    "SELECT session, 'usage_input' AS name, usage_input AS value FROM events UNION ALL SELECT session, 'usage_output', usage_output FROM events",
];

/// `PIVOT` or `UNPIVOT`, and what to write instead, when a statement of `sql` is one of
/// DuckDB's pivot statements, which DataFusion has not.
fn pivot_statement(sql: &str) -> Option<(String, &'static [&'static str])> {
    let tokens = tokens_if_it_holds(sql, &["pivot", "unpivot"])?;
    statements(&tokens).filter_map(<[_]>::first).find_map(|t| match &t.token {
        Token::Word(w) if w.keyword == Keyword::PIVOT => Some(("PIVOT".to_owned(), PIVOT_HERE)),
        Token::Word(w) if w.keyword == Keyword::UNPIVOT => Some(("UNPIVOT".to_owned(), UNPIVOT_HERE)),
        _ => None,
    })
}

/// A parser's error as one line; DataFusion wraps some ("Expected: end of statement") in a
/// diagnostic that says the same.
fn syntax_error(error: DataFusionError) -> EngineError {
    use datafusion::sql::sqlparser::parser::ParserError;
    match error {
        DataFusionError::SQL(error, _) => EngineError::Syntax(match *error {
            ParserError::ParserError(text) | ParserError::TokenizerError(text) => text,
            ParserError::RecursionLimitExceeded => "the statement nests too deeply".to_owned(),
        }),
        DataFusionError::Diagnostic(_, inner) => syntax_error(*inner),
        other => other.into(),
    }
}

/// `statement` as DuckDB would run it.
fn rewrite(statement: &mut Statement) -> Result<(), EngineError> {
    // These never break.
    let _ = visit_statement(statement, &mut FromFirst);
    let _ = visit_statement(statement, &mut OrderByAll);
    let _ = visit_statement(statement, &mut DuckDbFunctions::default());
    let _ = visit_statement(statement, &mut ReadCalls);
    match visit_statement(statement, &mut Samples) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(error) => Err(error),
    }
}

/// Runs `visitor` over the SQL of `statement`, DataFusion's statements' queries included.
pub fn visit_statement<V: VisitorMut>(statement: &mut Statement, visitor: &mut V) -> ControlFlow<V::Break> {
    match statement {
        Statement::Statement(statement) => statement.visit(visitor),
        Statement::CopyTo(copy) => match &mut copy.source {
            CopyToSource::Query(query) => query.visit(visitor),
            CopyToSource::Relation(_) => ControlFlow::Continue(()),
        },
        Statement::Explain(explain) => visit_statement(&mut explain.statement, visitor),
        Statement::CreateExternalTable(_) | Statement::Reset(_) => ControlFlow::Continue(()),
    }
}
