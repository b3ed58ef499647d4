//! DuckDB's forms that DataFusion's parser does not read or plans otherwise, made
//! DataFusion's before planning: `FROM t WHERE …` with no `SELECT` ([`with_select_all`],
//! [`FromFirst`]), `ORDER BY ALL` ([`OrderByAll`]), the read functions' options by name
//! and files as tables ([`ReadCalls`]), samples ([`duckdb_samples`], [`Samples`]), the
//! options of `COPY … TO` ([`duckdb_copy`]).

use std::collections::VecDeque;
use std::ops::ControlFlow;

use datafusion::error::DataFusionError;
use datafusion::sql::parser::{CopyToSource, DFParser, Statement};
use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};

use super::EngineError;
use super::copy_options::duckdb_copy;
use super::from_first::{FromFirst, with_select_all};
use super::order_by_all::OrderByAll;
use super::read_calls::ReadCalls;
use super::samples::{Samples, duckdb_samples};

/// The statements of `sql`, read as DuckDB reads them.
pub fn parse_statements(sql: &str) -> Result<VecDeque<Statement>, EngineError> {
    let sampled = duckdb_samples(sql)?;
    let sql = sampled.as_deref().unwrap_or(sql);
    let copied = duckdb_copy(sql)?;
    let sql = copied.as_deref().unwrap_or(sql);
    let mut statements = match DFParser::parse_sql(sql) {
        Ok(statements) => statements,
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
    // These three never break.
    let _ = visit_statement(statement, &mut FromFirst);
    let _ = visit_statement(statement, &mut OrderByAll);
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
