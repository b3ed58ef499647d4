//! DuckDB's `PRAGMA` statements that ask what the session holds, written before parsing as
//! the queries that answer them here (sqlparser reads only a quoted argument, DataFusion
//! plans no `PRAGMA`): `PRAGMA table_info('events')` (or `table_info(events)`) in DuckDB's
//! columns, `PRAGMA show('events')` as `DESCRIBE events`, `PRAGMA show_tables` as
//! `SHOW TABLES`. Other pragmas say what to write instead.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use super::EngineError;
use super::sql_text::{byte_offset, statements, tokens_if_it_holds, with_edits};

/// `sql` with each of DuckDB's pragmas written as the statement that answers it here;
/// `None` when it holds none.
pub fn duckdb_pragmas(sql: &str) -> Result<Option<String>, EngineError> {
    let Some(tokens) = tokens_if_it_holds(sql, &["pragma"]) else { return Ok(None) };
    let mut edits = Vec::new();
    for statement in statements(&tokens) {
        if let [first, .., last] | [first @ last] = statement
            && matches!(&first.token, Token::Word(w) if w.keyword == Keyword::PRAGMA)
        {
            let answer = answering_statement(&statement[1..])?;
            edits.push((byte_offset(sql, first.span.start), byte_offset(sql, last.span.end), answer));
        }
    }
    Ok(with_edits(sql, edits))
}

/// The statement that answers `PRAGMA` and the tokens after it.
fn answering_statement(tokens: &[TokenWithSpan]) -> Result<String, EngineError> {
    let words: Vec<&Token> = tokens.iter().map(|t| &t.token).collect();
    let name = match words.first() {
        Some(Token::Word(w)) => w.value.to_ascii_lowercase(),
        _ => return Err(pragma_error("PRAGMA needs a name")),
    };
    if !["table_info", "show", "show_tables", "show_tables_expanded"].contains(&name.as_str()) {
        return Err(pragma_error(format!(
            "PRAGMA {name} is DuckDB's; here PRAGMA table_info('events'), show('events') and show_tables are taken, \
             `SHOW ALL` lists the settings and `SET name = value` changes one"
        )));
    }
    let table = match words.as_slice() {
        [_] => None,
        [_, Token::LParen, Token::Word(w), Token::RParen] => Some(w.value.clone()),
        [_, Token::LParen, Token::SingleQuotedString(s) | Token::DoubleQuotedString(s), Token::RParen] => Some(s.clone()),
        _ => return Err(pragma_error(format!("PRAGMA {name} takes one table: PRAGMA {name}('events')"))),
    };
    match (name.as_str(), table) {
        ("table_info", Some(table)) => Ok(table_info(&table)),
        ("show", Some(table)) => Ok(format!("DESCRIBE {}", quoted_name(&table))),
        ("show_tables" | "show_tables_expanded", None) => Ok("SHOW TABLES".to_owned()),
        (_, None) => Err(pragma_error(format!("PRAGMA {name} takes a table: PRAGMA {name}('events')"))),
        (_, Some(_)) => Err(pragma_error(format!("PRAGMA {name} takes no table"))),
    }
}

/// DuckDB's columns of `PRAGMA table_info`; a table that is not there fails as a query of
/// it does (with the nearest name).
fn table_info(table: &str) -> String {
    let literal = table.replace('\'', "''");
    format!(
        "SELECT CAST(ordinal_position AS INT) AS cid, column_name AS name, data_type AS type, is_nullable = 'NO' AS notnull, \
         column_default AS dflt_value, false AS pk FROM information_schema.columns \
         WHERE table_name = '{literal}' AND NOT EXISTS (SELECT 1 FROM {} WHERE false) ORDER BY ordinal_position",
        quoted_name(table)
    )
}

fn quoted_name(table: &str) -> String {
    format!("\"{}\"", table.replace('"', "\"\""))
}

fn pragma_error(what: impl std::fmt::Display) -> EngineError {
    EngineError::Pragma(what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pragmas_are_written_as_the_statements_that_answer_them() {
        assert_eq!(duckdb_pragmas("SELECT 1").unwrap(), None);
        assert_eq!(duckdb_pragmas("PRAGMA show_tables").unwrap().as_deref(), Some("SHOW TABLES"));
        assert_eq!(duckdb_pragmas("SELECT 1; pragma show(events);").unwrap().as_deref(), Some("SELECT 1; DESCRIBE \"events\";"));
        let info = duckdb_pragmas("PRAGMA table_info('my''t')").unwrap().unwrap();
        assert!(info.contains("WHERE table_name = 'my''t' AND NOT EXISTS (SELECT 1 FROM \"my't\" WHERE false)"), "{info}");
        assert_eq!(duckdb_pragmas("SELECT 'pragma' FROM t").unwrap(), None);
        let refused = duckdb_pragmas("PRAGMA threads = 4").unwrap_err().to_string();
        assert!(refused.starts_with("PRAGMA threads is DuckDB's; here PRAGMA table_info('events')"), "{refused}");
        assert_eq!(
            duckdb_pragmas("PRAGMA table_info").unwrap_err().to_string(),
            "PRAGMA table_info takes a table: PRAGMA table_info('events')"
        );
    }
}
