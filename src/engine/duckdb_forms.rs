//! DuckDB's forms that DataFusion's parser reads but plans otherwise, made DataFusion's
//! before planning: `FROM t ORDER BY …` with no `SELECT` ([`FromFirst`]), the read
//! functions' options by name and files as tables ([`ReadCalls`]).

use datafusion::sql::parser::{CopyToSource, Statement};
use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};

use super::from_first::FromFirst;
use super::read_calls::ReadCalls;

/// `statement` as DuckDB would run it.
pub fn rewrite(statement: &mut Statement) {
    visit_statement(statement, &mut FromFirst);
    visit_statement(statement, &mut ReadCalls);
}

/// Runs `visitor` over the SQL of `statement`, DataFusion's statements' queries included.
pub fn visit_statement<V: VisitorMut>(statement: &mut Statement, visitor: &mut V) {
    match statement {
        Statement::Statement(statement) => {
            let _ = statement.visit(visitor);
        }
        Statement::CopyTo(copy) => {
            if let CopyToSource::Query(query) = &mut copy.source {
                let _ = query.visit(visitor);
            }
        }
        Statement::Explain(explain) => visit_statement(&mut explain.statement, visitor),
        Statement::CreateExternalTable(_) | Statement::Reset(_) => {}
    }
}
