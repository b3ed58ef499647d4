//! DuckDB's `FROM events` with no `SELECT` means `SELECT * FROM events`. sqlparser reads
//! such a query (with `ORDER BY` and `LIMIT`, not `WHERE`) and marks it, but DataFusion
//! plans its empty select list as `SELECT FROM events`: rows of no columns, printed as an
//! empty table. The list is filled in before planning, for that form alone (`SELECT FROM
//! events` keeps its meaning). A statement sqlparser cannot read, such as `FROM events
//! WHERE …`, is given its `SELECT *` in the text and read again ([`with_select_all`]).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Query, SelectFlavor, SelectItem, SetExpr, VisitorMut, WildcardAdditionalOptions};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token};

use super::sql_text::{byte_offset, tokens_if_it_holds, with_edits};

/// Text given `SELECT * ` where DuckDB reads it ([`with_select_all`]).
#[derive(Debug)]
pub struct WithSelectAll {
    pub sql: String,
    /// Where `SELECT * ` went, in the original text, in order.
    inserted: Vec<Location>,
}

/// What `SELECT * ` adds to a line.
const SELECT_ALL: &str = "SELECT * ";

impl WithSelectAll {
    /// A parser's `message` about the new text, with its `Line: L, Column: C` said of the
    /// original text.
    pub fn original_message(&self, message: &str) -> String {
        let Some(at) = message.rfind("Line: ") else { return message.to_owned() };
        let numbers: Vec<u64> = message[at..].split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).take(2).collect();
        let [line, column] = numbers[..] else { return message.to_owned() };
        let width = SELECT_ALL.len() as u64;
        let mut original = column;
        let on_line = self.inserted.iter().filter(|l| l.line == line);
        for (i, inserted) in on_line.enumerate() {
            let new_column = inserted.column + width * i as u64;
            if column >= new_column + width {
                original -= width;
            } else if column >= new_column {
                original = inserted.column;
            }
        }
        format!("{}Line: {line}, Column: {original}", &message[..at])
    }
}

/// `sql` with `SELECT * ` put before each query that starts with `FROM` and has no `SELECT`
/// of its own (`FROM events WHERE type = 'tool.call'`): a statement, a subquery in
/// parentheses or a branch of a `UNION`. `None` when there is none or `sql` does not
/// tokenize.
pub fn with_select_all(sql: &str) -> Option<WithSelectAll> {
    let tokens = tokens_if_it_holds(sql, &["from"])?;
    let mut inserts = Vec::new();
    // The query being read in each open parenthesis, the statement's first.
    let mut queries = vec![QueryStart::default()];
    for token in &tokens {
        let depth = queries.len();
        let query = queries.last_mut().expect("the statement's query stays");
        match &token.token {
            Token::LParen => {
                query.begun = true;
                queries.push(QueryStart::default());
                continue;
            }
            Token::RParen if depth > 1 => {
                inserts.extend(queries.pop().and_then(QueryStart::without_select));
                continue;
            }
            Token::SemiColon if depth == 1 => {
                inserts.extend(std::mem::take(query).without_select());
                continue;
            }
            Token::Word(w) if matches!(w.keyword, Keyword::UNION | Keyword::EXCEPT | Keyword::INTERSECT) => {
                inserts.extend(std::mem::take(query).without_select());
                query.after_set_operator = true;
                continue;
            }
            Token::Word(w) if query.after_set_operator && matches!(w.keyword, Keyword::ALL | Keyword::DISTINCT) => continue,
            Token::Word(w) if !query.begun && w.keyword == Keyword::FROM => query.from = Some(token.span.start),
            Token::Word(w) if w.keyword == Keyword::SELECT => query.selects = true,
            _ => {}
        }
        query.begun = true;
        query.after_set_operator = false;
    }
    inserts.extend(queries.into_iter().filter_map(QueryStart::without_select));
    if inserts.is_empty() {
        return None;
    }
    inserts.sort_unstable_by_key(|at| (at.line, at.column));
    let edits = inserts.iter().map(|at| byte_offset(sql, *at)).map(|offset| (offset, offset, SELECT_ALL.to_owned())).collect();
    Some(WithSelectAll { sql: with_edits(sql, edits)?, inserted: inserts })
}

/// How a query read so far began.
#[derive(Debug, Default)]
struct QueryStart {
    begun: bool,
    after_set_operator: bool,
    /// Where it starts with `FROM`.
    from: Option<Location>,
    selects: bool,
}

impl QueryStart {
    /// Where a query that starts with `FROM` and has no `SELECT` needs one.
    fn without_select(self) -> Option<Location> {
        self.from.filter(|_| !self.selects)
    }
}

/// Gives every `FROM …` query without `SELECT` the select list `*`
/// ([`super::duckdb_forms::visit_statement`]).
pub struct FromFirst;

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
        let _ = crate::engine::duckdb_forms::visit_statement(&mut statement, &mut FromFirst);
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

    fn sql_with_select_all(sql: &str) -> Option<String> {
        with_select_all(sql).map(|w| w.sql)
    }

    #[test]
    fn a_statement_that_starts_with_from_and_has_no_select_gets_one() {
        assert_eq!(sql_with_select_all("FROM t WHERE a > 1").as_deref(), Some("SELECT * FROM t WHERE a > 1"));
        assert_eq!(
            sql_with_select_all("SELECT 'é';\n  -- ü\n  from t WHERE b = 'FROM' ; FROM t SELECT a WHERE a > 1").as_deref(),
            Some("SELECT 'é';\n  -- ü\n  SELECT * from t WHERE b = 'FROM' ; FROM t SELECT a WHERE a > 1"),
            "at the FROM of its line, after characters of two bytes, and not where a SELECT follows"
        );
        assert_eq!(sql_with_select_all("SELECT 'é'; FROM t WHERE a > 1").as_deref(), Some("SELECT 'é'; SELECT * FROM t WHERE a > 1"));
        assert_eq!(sql_with_select_all("FROM t WHERE a IN (SELECT 1)").as_deref(), Some("SELECT * FROM t WHERE a IN (SELECT 1)"));
        assert_eq!(
            sql_with_select_all("SELECT count(*) FROM (FROM t WHERE a > 1) s UNION ALL FROM t WHERE a = 1").as_deref(),
            Some("SELECT count(*) FROM (SELECT * FROM t WHERE a > 1) s UNION ALL SELECT * FROM t WHERE a = 1"),
            "a subquery and a branch of a union"
        );
        assert_eq!(sql_with_select_all("SELECT extract(year FROM a) FROM t WHERE"), None, "a FROM inside a call starts no query");
        assert_eq!(sql_with_select_all("SELECT * FROM t WHERE"), None);
        assert_eq!(sql_with_select_all("FROM t WHERE b = 'unterminated"), None);
    }

    #[test]
    fn an_error_in_the_new_text_is_placed_in_the_original() {
        let sql = "SELECT 1;\nFROM t WHERE a = = 1; FROM u WHERE";
        let rewritten = with_select_all(sql).unwrap();
        assert_eq!(rewritten.sql, "SELECT 1;\nSELECT * FROM t WHERE a = = 1; SELECT * FROM u WHERE");
        let said = |column: usize| rewritten.original_message(&format!("Expected: an expression, found: = at Line: 2, Column: {column}"));
        assert!(said(27).ends_with("Line: 2, Column: 18"), "the second = of the first statement: {}", said(27));
        assert!(said(5).ends_with("Line: 2, Column: 1"), "inside what was put in: {}", said(5));
        assert_eq!(rewritten.original_message("Expected: an expression, found: EOF"), "Expected: an expression, found: EOF");
    }

    #[tokio::test]
    async fn select_with_an_empty_list_keeps_its_meaning() {
        assert_eq!(rows("SELECT FROM t").await, json!({"columns": 0, "rows": 2}));
    }
}
