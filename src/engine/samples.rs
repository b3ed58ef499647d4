//! Samples as DuckDB takes them: `FROM events USING SAMPLE 10%`, `USING SAMPLE 50 ROWS`,
//! `FROM events TABLESAMPLE 10 PERCENT (bernoulli)`, `USING SAMPLE reservoir(50 ROWS)`.
//! DataFusion reads sqlparser's `TABLESAMPLE` and then ignores it, returning every row, and
//! sqlparser reads neither `USING SAMPLE` nor `10%`. So DuckDB's clauses are first written
//! in sqlparser's form ([`duckdb_samples`], on the tokens), and every sampled table then
//! becomes a subquery that samples it ([`Samples`], on the AST): a percentage keeps each
//! row with that probability (`random() < p`; DuckDB's `system` sampling, which keeps whole
//! vectors, is taken row by row), a number of rows keeps that many chosen at random
//! (ordered by `random()` and cut at n, a top-k that holds n rows). A seed (`REPEATABLE`) is
//! refused: DataFusion's `random()` takes none, so no sample can be drawn again.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, ObjectNamePart, Query, SetExpr, TableAlias, TableFactor, TableSample, TableSampleKind, TableSampleMethod, TableSampleUnit, Value,
    VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use super::EngineError;
use super::sql_text::{byte_offset, tokens_if_it_holds, with_edits};

/// How much of a table a sample keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Size {
    /// A percentage, each row kept with that probability.
    Percent(f64),
    /// A number of rows chosen at random.
    Rows(u64),
}

impl Size {
    /// sqlparser's form of the sample.
    fn tablesample(self) -> String {
        match self {
            Size::Percent(p) => format!("TABLESAMPLE BERNOULLI ({p} PERCENT)"),
            Size::Rows(n) => format!("TABLESAMPLE ({n} ROWS)"),
        }
    }

    /// The query that samples `FROM t` (`t` is replaced by the sampled table).
    fn query(self) -> String {
        match self {
            Size::Percent(p) => format!("SELECT * FROM t WHERE random() < {}", p / 100.0),
            // The key is a column of its own: DataFusion 55's top-k over a table of whose
            // columns none is read (`SELECT count(*)` over the sample) fails.
            Size::Rows(n) => {
                format!("SELECT * EXCLUDE ({SAMPLE_KEY}) FROM (SELECT *, random() AS {SAMPLE_KEY} FROM t) ORDER BY {SAMPLE_KEY} LIMIT {n}")
            }
        }
    }
}

/// The column that orders a sample of rows.
const SAMPLE_KEY: &str = "__tracelake_sample_key";

/// What DuckDB calls its sampling methods; sqlparser's `ROW` and `BLOCK` are the standard's
/// names for `bernoulli` and `system`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    Reservoir,
    Bernoulli,
    System,
}

impl Method {
    fn named(word: &str) -> Option<Method> {
        match word.to_ascii_lowercase().as_str() {
            "reservoir" => Some(Method::Reservoir),
            "bernoulli" | "row" => Some(Method::Bernoulli),
            "system" | "block" => Some(Method::System),
            _ => None,
        }
    }
}

/// The sample's size from a number, its unit (`None`: none written) and its method: a
/// number with no unit is a percentage for `bernoulli` and `system` (as in standard SQL's
/// `TABLESAMPLE BERNOULLI (10)`), else a number of rows (as in DuckDB's `USING SAMPLE 50`).
fn size(number: &str, percent: Option<bool>, method: Option<Method>) -> Result<Size, EngineError> {
    let by_share = matches!(method, Some(Method::Bernoulli | Method::System));
    let percent = percent.unwrap_or(by_share);
    let value: f64 = number.parse().map_err(|_| EngineError::Sample(format!("{number} is not a number")))?;
    match (percent, method) {
        (true, Some(Method::Reservoir)) => Err(EngineError::Sample(format!(
            "a reservoir sample here is a number of rows (USING SAMPLE reservoir(50 ROWS)); for {number} % of the rows write USING SAMPLE {number}%"
        ))),
        (false, Some(Method::Bernoulli | Method::System)) => Err(EngineError::Sample(format!(
            "bernoulli and system samples keep a share of the rows (USING SAMPLE {number}% (bernoulli)); for {number} rows write USING SAMPLE {number} ROWS"
        ))),
        (true, _) if !(0.0..=100.0).contains(&value) => {
            Err(EngineError::Sample(format!("a sample of {number} %: a percentage is from 0 to 100")))
        }
        (true, _) => Ok(Size::Percent(value)),
        (false, _) if value < 0.0 || value.fract() != 0.0 => {
            Err(EngineError::Sample(format!("a sample of {number} rows: a number of rows is a whole number, 0 or more")))
        }
        (false, _) => Ok(Size::Rows(value as u64)),
    }
}

const NO_SEED: &str =
    "REPEATABLE: a sample here cannot be drawn again with a seed (DataFusion's random() takes none); each run draws a new one";

/// `sql` with DuckDB's sample clauses in sqlparser's form: `USING SAMPLE …` moved after
/// its query's table as `TABLESAMPLE …`, and `TABLESAMPLE 10%` written
/// `TABLESAMPLE BERNOULLI (10 PERCENT)`. `None` when `sql` has no sample clause.
pub fn duckdb_samples(sql: &str) -> Result<Option<String>, EngineError> {
    let Some(tokens) = tokens_if_it_holds(sql, &["sample", "tablesample"]) else { return Ok(None) };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    // The FROM clause of the query being read at each depth of parentheses.
    let mut froms = vec![FromClause::default()];
    let mut i = 0;
    while i < tokens.len() {
        let depth = froms.len();
        let from = froms.last_mut().expect("the statement's level stays");
        match &tokens[i].token {
            Token::LParen => froms.push(FromClause::default()),
            Token::RParen if depth > 1 => {
                froms.pop();
            }
            Token::SemiColon => *from = FromClause::default(),
            Token::Comma if from.open() => from.joined = true,
            // Not `IS DISTINCT FROM`.
            Token::Word(w) if w.keyword == Keyword::FROM && !is_word(i.checked_sub(1).and_then(|j| tokens.get(j)), Keyword::DISTINCT) => {
                *from = FromClause { start: Some(i), ..FromClause::default() }
            }
            Token::Word(w) if w.keyword == Keyword::JOIN && from.open() => from.joined = true,
            Token::Word(w) if w.keyword == Keyword::USING && is_word(tokens.get(i + 1), Keyword::SAMPLE) => {
                let (size, end) = read_sample(&tokens, i + 2)?;
                if from.start.is_none() {
                    return Err(EngineError::Sample("USING SAMPLE samples the rows of a FROM clause, and this query has none".to_owned()));
                }
                if from.joined {
                    return Err(EngineError::Sample(
                        "USING SAMPLE over a join or a list of tables: sample one of them with TABLESAMPLE after it (FROM events TABLESAMPLE 10% JOIN …)"
                            .to_owned(),
                    ));
                }
                let clause = (byte_offset(sql, tokens[i].span.start), byte_offset(sql, tokens[end - 1].span.end));
                match from.end {
                    Some(at) if at != i => {
                        let at = byte_offset(sql, tokens[at].span.start);
                        edits.push((at, at, format!("{} ", size.tablesample())));
                        edits.push((clause.0, clause.1, String::new()));
                    }
                    _ => edits.push((clause.0, clause.1, size.tablesample())),
                }
                from.end.get_or_insert(i);
                i = end;
                continue;
            }
            Token::Word(w) if w.keyword == Keyword::TABLESAMPLE => {
                let (size, end) = read_sample(&tokens, i + 1)?;
                edits.push((byte_offset(sql, tokens[i].span.start), byte_offset(sql, tokens[end - 1].span.end), size.tablesample()));
                i = end;
                continue;
            }
            Token::Word(w) if from.open() && ENDS_TABLES.contains(&w.keyword) => from.end = Some(i),
            _ => {}
        }
        i += 1;
    }
    Ok(with_edits(sql, edits))
}

/// The clauses that end a FROM clause's tables.
const ENDS_TABLES: [Keyword; 10] = [
    Keyword::WHERE,
    Keyword::GROUP,
    Keyword::HAVING,
    Keyword::WINDOW,
    Keyword::QUALIFY,
    Keyword::ORDER,
    Keyword::LIMIT,
    Keyword::UNION,
    Keyword::EXCEPT,
    Keyword::INTERSECT,
];

/// Where a query's FROM clause starts and where its tables end, as token indices.
#[derive(Debug, Default)]
struct FromClause {
    start: Option<usize>,
    end: Option<usize>,
    /// Whether it joins or lists more than one table.
    joined: bool,
}

impl FromClause {
    /// Whether its tables are being read.
    fn open(&self) -> bool {
        self.start.is_some() && self.end.is_none()
    }
}

fn is_word(token: Option<&TokenWithSpan>, keyword: Keyword) -> bool {
    matches!(token.map(|t| &t.token), Some(Token::Word(w)) if w.keyword == keyword)
}

fn word(token: Option<&TokenWithSpan>) -> Option<&str> {
    match token.map(|t| &t.token) {
        Some(Token::Word(w)) => Some(&w.value),
        _ => None,
    }
}

/// A sample's size from `tokens[i..]`, in any of DuckDB's and the standard's forms:
/// `[method] [(] size [ROWS | PERCENT | %] [)] [(method [, seed])] [REPEATABLE (seed)]`;
/// and the index after it.
fn read_sample(tokens: &[TokenWithSpan], mut i: usize) -> Result<(Size, usize), EngineError> {
    let at = |i: usize| tokens.get(i).map(|t| &t.token);
    let mut method = word(tokens.get(i)).and_then(Method::named);
    if method.is_some() {
        i += 1;
    }
    let parenthesized = at(i) == Some(&Token::LParen);
    i += usize::from(parenthesized);
    let Some(Token::Number(number, _)) = at(i) else {
        return Err(EngineError::Sample(
            "a sample's size is a number of rows or a percentage: USING SAMPLE 50 ROWS, USING SAMPLE 10%, TABLESAMPLE 10 PERCENT (bernoulli)"
                .to_owned(),
        ));
    };
    i += 1;
    let percent = match at(i) {
        Some(Token::Mod) => Some(true),
        Some(Token::Word(w)) if w.keyword == Keyword::PERCENT => Some(true),
        Some(Token::Word(w)) if w.keyword == Keyword::ROWS => Some(false),
        _ => None,
    };
    i += usize::from(percent.is_some());
    if parenthesized {
        if at(i) != Some(&Token::RParen) {
            return Err(EngineError::Sample(format!("a sample's size in parentheses closes after it: ({number} ROWS)")));
        }
        i += 1;
    }
    // DuckDB's method after the size: `10% (bernoulli)`, `10% (system, 377)`.
    if method.is_none()
        && at(i) == Some(&Token::LParen)
        && let Some(named) = word(tokens.get(i + 1)).and_then(Method::named)
    {
        method = Some(named);
        i += 2;
        if at(i) == Some(&Token::Comma) {
            return Err(EngineError::Sample(NO_SEED.to_owned()));
        }
        if at(i) != Some(&Token::RParen) {
            return Err(EngineError::Sample("a sample's method in parentheses closes after it: (bernoulli)".to_owned()));
        }
        i += 1;
    }
    if is_word(tokens.get(i), Keyword::REPEATABLE) || is_word(tokens.get(i), Keyword::SEED) {
        return Err(EngineError::Sample(NO_SEED.to_owned()));
    }
    Ok((size(number, percent, method)?, i))
}

/// Makes every sampled table or subquery a subquery that samples it
/// ([`super::duckdb_forms::visit_statement`]); a sample it cannot take breaks with its error.
pub struct Samples;

impl VisitorMut for Samples {
    type Break = EngineError;

    fn pre_visit_table_factor(&mut self, table: &mut TableFactor) -> ControlFlow<EngineError> {
        let (sample, alias) = match table {
            TableFactor::Table { sample, alias, name, .. } => {
                let Some(sample) = sample.take() else { return ControlFlow::Continue(()) };
                let named = name.0.last().and_then(ObjectNamePart::as_ident).cloned();
                let alias = alias.take().or_else(|| named.map(|name| TableAlias { explicit: false, name, columns: vec![], at: None }));
                (sample, alias)
            }
            TableFactor::Derived { sample, alias, .. } => {
                let Some(sample) = sample.take() else { return ControlFlow::Continue(()) };
                (sample, alias.take())
            }
            _ => return ControlFlow::Continue(()),
        };
        let (TableSampleKind::BeforeTableAlias(sample) | TableSampleKind::AfterTableAlias(sample)) = sample;
        match sampled(std::mem::replace(table, placeholder()), &sample, alias) {
            Ok(sampled) => {
                *table = sampled;
                ControlFlow::Continue(())
            }
            Err(error) => ControlFlow::Break(error),
        }
    }
}

/// A table factor to hold a place while its table moves into a subquery.
fn placeholder() -> TableFactor {
    TableFactor::Derived { lateral: false, subquery: Box::new(parse_query("SELECT 1")), alias: None, sample: None }
}

fn parse_query(sql: &str) -> Query {
    *Parser::new(&GenericDialect {}).try_with_sql(sql).and_then(|mut p| p.parse_query()).expect("a sample's query parses")
}

/// `table` (its sample and alias taken off) sampled as `sample` says, named `alias`.
fn sampled(table: TableFactor, sample: &TableSample, alias: Option<TableAlias>) -> Result<TableFactor, EngineError> {
    if sample.seed.is_some() {
        return Err(EngineError::Sample(NO_SEED.to_owned()));
    }
    if sample.bucket.is_some() || sample.offset.is_some() {
        return Err(EngineError::Sample(
            "a sample by BUCKET or OFFSET is not taken here: USING SAMPLE 10% or USING SAMPLE 50 ROWS".to_owned(),
        ));
    }
    let number = match sample.quantity.as_ref().map(|q| &q.value) {
        Some(Expr::Value(v)) => match &v.value {
            Value::Number(n, _) => n.clone(),
            other => return Err(EngineError::Sample(format!("a sample's size is a number, not {other}"))),
        },
        other => {
            return Err(EngineError::Sample(format!(
                "a sample's size is a number, not {}",
                other.map_or("nothing".to_owned(), Expr::to_string)
            )));
        }
    };
    let percent = match sample.quantity.as_ref().and_then(|q| q.unit.as_ref()) {
        Some(TableSampleUnit::Percent) => Some(true),
        Some(TableSampleUnit::Rows) => Some(false),
        None => None,
    };
    let method = sample.name.as_ref().map(|m| match m {
        TableSampleMethod::Bernoulli | TableSampleMethod::Row => Method::Bernoulli,
        TableSampleMethod::System | TableSampleMethod::Block => Method::System,
    });
    let mut query = parse_query(&size(&number, percent, method)?.query());
    *innermost_table(&mut query) = table;
    Ok(TableFactor::Derived { lateral: false, subquery: Box::new(query), alias, sample: None })
}

/// The table `t` in a sample's query, which its sampled table replaces.
fn innermost_table(query: &mut Query) -> &mut TableFactor {
    let SetExpr::Select(select) = query.body.as_mut() else { unreachable!("a sample's query is a SELECT") };
    match &mut select.from[0].relation {
        TableFactor::Derived { subquery, .. } => innermost_table(subquery),
        table => table,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(sql: &str) -> String {
        duckdb_samples(sql).unwrap().unwrap_or_else(|| sql.to_owned())
    }

    fn refused(sql: &str) -> String {
        duckdb_samples(sql).unwrap_err().to_string()
    }

    #[test]
    fn duckdb_clauses_are_written_as_tablesample() {
        assert_eq!(samples("SELECT * FROM events USING SAMPLE 10%"), "SELECT * FROM events TABLESAMPLE BERNOULLI (10 PERCENT)");
        assert_eq!(samples("FROM events e USING SAMPLE 5"), "FROM events e TABLESAMPLE (5 ROWS)");
        assert_eq!(
            samples("SELECT type FROM events WHERE x > 1 USING SAMPLE 10 PERCENT (bernoulli) ORDER BY 1"),
            "SELECT type FROM events TABLESAMPLE BERNOULLI (10 PERCENT) WHERE x > 1  ORDER BY 1"
        );
        assert_eq!(samples("SELECT * FROM events USING SAMPLE reservoir(50 ROWS);"), "SELECT * FROM events TABLESAMPLE (50 ROWS);");
        assert_eq!(samples("SELECT * FROM t TABLESAMPLE 2.5%"), "SELECT * FROM t TABLESAMPLE BERNOULLI (2.5 PERCENT)");
        assert_eq!(samples("SELECT * FROM t TABLESAMPLE BERNOULLI (10)"), "SELECT * FROM t TABLESAMPLE BERNOULLI (10 PERCENT)");
        assert_eq!(
            samples("SELECT * FROM (SELECT * FROM a USING SAMPLE 3) s JOIN b USING (id)"),
            "SELECT * FROM (SELECT * FROM a TABLESAMPLE (3 ROWS)) s JOIN b USING (id)",
            "a join's USING is no sample, and the subquery's sample stays in it"
        );
        assert_eq!(samples("SELECT 'USING SAMPLE 5' AS text"), "SELECT 'USING SAMPLE 5' AS text", "in a string it is text");
    }

    #[test]
    fn samples_that_cannot_be_taken_are_refused_with_what_to_write() {
        assert!(refused("SELECT * FROM a JOIN b ON a.x = b.x USING SAMPLE 10%").contains("TABLESAMPLE after it"));
        assert!(refused("SELECT * FROM a, b USING SAMPLE 10%").contains("over a join or a list of tables"));
        assert!(refused("SELECT * FROM t USING SAMPLE 10% (system, 377)").starts_with("REPEATABLE: "));
        assert!(refused("SELECT * FROM t USING SAMPLE reservoir(50 ROWS) REPEATABLE (100)").starts_with("REPEATABLE: "));
        assert!(refused("SELECT * FROM t USING SAMPLE 10 PERCENT (reservoir)").contains("a reservoir sample here is a number of rows"));
        assert!(refused("SELECT * FROM t USING SAMPLE 150%").contains("from 0 to 100"));
        assert!(refused("SELECT * FROM t USING SAMPLE 2.5").contains("whole number"));
        assert!(refused("SELECT * FROM t USING SAMPLE ten").contains("a number of rows or a percentage"));
    }

    #[test]
    fn a_sampled_table_becomes_a_subquery_named_as_it_was() {
        use datafusion::sql::parser::DFParser;
        let rewritten = |sql: &str| {
            let mut statements = DFParser::parse_sql(&samples(sql)).unwrap();
            match super::super::duckdb_forms::visit_statement(&mut statements[0], &mut Samples) {
                ControlFlow::Continue(()) => Ok(statements[0].to_string()),
                ControlFlow::Break(error) => Err(error),
            }
        };
        assert_eq!(
            rewritten("SELECT events.type FROM events USING SAMPLE 10%").unwrap(),
            "SELECT events.type FROM (SELECT * FROM events WHERE random() < 0.1) events"
        );
        assert_eq!(
            rewritten("SELECT * FROM lake.events AS e TABLESAMPLE (5 ROWS) JOIN x ON e.a = x.a").unwrap(),
            "SELECT * FROM (SELECT * EXCLUDE (__tracelake_sample_key) FROM (SELECT *, random() AS __tracelake_sample_key FROM lake.events) \
             ORDER BY __tracelake_sample_key LIMIT 5) AS e JOIN x ON e.a = x.a"
        );
        assert_eq!(
            rewritten("SELECT * FROM (SELECT 1 AS a) s TABLESAMPLE BERNOULLI (50)").unwrap(),
            "SELECT * FROM (SELECT * FROM (SELECT 1 AS a) WHERE random() < 0.5) s"
        );
        let bucket = rewritten("SELECT * FROM t AS t SAMPLE (BUCKET 1 OUT OF 4)").unwrap_err().to_string();
        assert!(bucket.contains("BUCKET"), "{bucket}");
        assert!(
            samples("SELECT * FROM t WHERE a IS DISTINCT FROM b USING SAMPLE 5").starts_with("SELECT * FROM t TABLESAMPLE (5 ROWS) WHERE")
        );
    }
}
