//! DuckDB's ways of reading a file, made calls DataFusion plans: the read functions'
//! options by name (`read_csv('x.csv', delim = ';', header = false)`; DataFusion plans a
//! table function's arguments as expressions over no columns, so `header` would be a column
//! it lacks) become `named_struct('delim', ';')` arguments, which
//! [`super::read_functions`] reads; and a file's path as a table (`FROM 'traces.json'`)
//! becomes the read function of its extension, so that it is read as DuckDB reads it
//! (a JSON array, a CSV's delimiter, a `.tsv`), named as DuckDB names it (`traces`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, TableAlias, TableFactor, TableFunctionArgs,
    Value, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::read_functions::{is_glob, is_read_function, read_function_of};

/// Rewrites the read calls and file tables of one statement ([`super::duckdb_forms::visit_statement`]).
pub struct ReadCalls;

impl VisitorMut for ReadCalls {
    type Break = ();

    fn pre_visit_table_factor(&mut self, table: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, args, .. } = table else { return ControlFlow::Continue(()) };
        match args {
            Some(args) if name.0.last().and_then(ObjectNamePart::as_ident).is_some_and(|f| is_read_function(&f.value)) => {
                args.args.iter_mut().skip(1).for_each(option_as_struct);
            }
            None => {
                if let Some((function, path)) = file_table(name) {
                    if alias.is_none()
                        && let Some(table) = table_name(&path)
                    {
                        *alias = Some(TableAlias { explicit: false, name: Ident::with_quote('"', table), columns: vec![], at: None });
                    }
                    *name = ObjectName::from(vec![Ident::new(function)]);
                    let path = FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(Value::SingleQuotedString(path))));
                    *args = Some(TableFunctionArgs { args: vec![path], settings: None });
                }
            }
            Some(_) => {}
        }
        ControlFlow::Continue(())
    }
}

/// `header = false` or `header => false` as `named_struct('header', false)`.
fn option_as_struct(arg: &mut FunctionArg) {
    let (name, value) = match arg {
        FunctionArg::Named { name, arg: FunctionArgExpr::Expr(value), .. } => (name.value.clone(), value.to_string()),
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::BinaryOp { left, op: BinaryOperator::Eq, right })) => match left.as_ref() {
            Expr::Identifier(name) => (name.value.clone(), right.to_string()),
            _ => return,
        },
        _ => return,
    };
    let text = format!("named_struct('{}', {value})", name.to_lowercase().replace('\'', "''"));
    if let Ok(expr) = Parser::new(&GenericDialect {}).try_with_sql(&text).and_then(|mut p| p.parse_expr()) {
        *arg = FunctionArg::Unnamed(FunctionArgExpr::Expr(expr));
    }
}

/// The read function and path of a table named by a local file's path in single quotes
/// (`'traces.json'`, `'logs/*.csv'`) that exists or is a glob; a missing file keeps its
/// own error ("no table, view or file named …").
fn file_table(name: &ObjectName) -> Option<(&'static str, String)> {
    let [ObjectNamePart::Identifier(ident)] = name.0.as_slice() else { return None };
    let path = &ident.value;
    if ident.quote_style != Some('\'') || path.contains("://") {
        return None;
    }
    let function = read_function_of(path)?;
    (is_glob(path) || std::path::Path::new(path).exists()).then(|| (function, path.clone()))
}

/// DuckDB's name for a file's table: its file name up to the first dot (`traces` for
/// `logs/traces.events.jsonl`); none for a glob's.
fn table_name(path: &str) -> Option<String> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let name = file.split('.').next().filter(|n| !n.is_empty())?;
    (!is_glob(name)).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;

    use super::*;
    use crate::engine::duckdb_forms::visit_statement;

    fn rewritten(sql: &str) -> String {
        let mut statements = DFParser::parse_sql(sql).unwrap();
        let _ = visit_statement(&mut statements[0], &mut ReadCalls);
        statements[0].to_string()
    }

    #[test]
    fn options_by_name_become_structs_and_other_functions_keep_theirs() {
        assert_eq!(
            rewritten("SELECT * FROM read_csv('x.csv', header = false, delim => ';', Quote = '''')"),
            "SELECT * FROM read_csv('x.csv', named_struct('header', false), named_struct('delim', ';'), named_struct('quote', ''''))"
        );
        assert_eq!(rewritten("SELECT * FROM generate_series(1, 3)"), "SELECT * FROM generate_series(1, 3)");
        assert_eq!(rewritten("SELECT * FROM read_json('a = b')"), "SELECT * FROM read_json('a = b')", "the path is no option");
    }

    #[test]
    fn a_path_that_is_there_or_a_glob_becomes_its_read_function() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("traces.events.json");
        std::fs::write(&file, "[]").unwrap();
        let file = file.display();
        assert_eq!(rewritten(&format!("SELECT * FROM '{file}'")), format!("SELECT * FROM read_json('{file}') \"traces\""));
        assert_eq!(rewritten(&format!("SELECT * FROM '{file}' AS t")), format!("SELECT * FROM read_json('{file}') AS t"));
        assert_eq!(rewritten("SELECT * FROM 'logs/*.tsv'"), "SELECT * FROM read_csv('logs/*.tsv')");
        assert_eq!(rewritten("SELECT * FROM 'no/such.parquet'"), "SELECT * FROM 'no/such.parquet'");
        assert_eq!(rewritten("SELECT * FROM 's3://b/x.parquet'"), "SELECT * FROM 's3://b/x.parquet'");
        assert_eq!(rewritten("SELECT * FROM \"x.csv\""), "SELECT * FROM \"x.csv\"", "a quoted name is a name");
    }
}
