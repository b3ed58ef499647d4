//! Rewrites of SQL text before it is parsed, for DuckDB's forms sqlparser does not read:
//! the statement's tokens, where a token lies in the text, and the text with some spans
//! replaced.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

/// The tokens of `sql` but whitespace and comments, when it holds `word` (in any case)
/// and tokenizes; the test for the word spares the tokenizer most statements.
pub fn tokens_if_it_holds(sql: &str, word: &str) -> Option<Vec<TokenWithSpan>> {
    sql.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word.as_bytes())).then_some(())?;
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location().ok()?;
    Some(tokens.into_iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect())
}

/// The byte offset of a tokenizer location (a line and a column of characters, from 1).
pub fn byte_offset(sql: &str, at: Location) -> usize {
    let line_start: usize = sql.split_inclusive('\n').take(at.line.saturating_sub(1) as usize).map(str::len).sum();
    let column = sql[line_start..].char_indices().nth(at.column.saturating_sub(1) as usize).map_or(sql.len() - line_start, |(i, _)| i);
    line_start + column
}

/// `sql` with each byte span `start..end` of `edits` (none overlapping) replaced by its
/// text; `None` when there is no edit.
pub fn with_edits(sql: &str, mut edits: Vec<(usize, usize, String)>) -> Option<String> {
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|(start, _, _)| *start);
    let mut rewritten = String::with_capacity(sql.len() + edits.iter().map(|(_, _, text)| text.len()).sum::<usize>());
    let mut from = 0;
    for (start, end, text) in edits {
        rewritten.push_str(&sql[from..start]);
        rewritten.push_str(&text);
        from = end;
    }
    rewritten.push_str(&sql[from..]);
    Some(rewritten)
}
