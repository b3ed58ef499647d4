//! Rewrites of SQL text before it is parsed, for DuckDB's forms sqlparser does not read:
//! the statement's tokens, where a token lies in the text, and the text with some spans
//! replaced.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

/// The tokens of `sql` but whitespace and comments, when it holds one of `words` as a word
/// (in any case) and tokenizes; the test for the words spares the tokenizer most statements.
pub fn tokens_if_it_holds(sql: &str, words: &[&str]) -> Option<Vec<TokenWithSpan>> {
    words.iter().any(|word| holds_word(sql, word)).then_some(())?;
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location().ok()?;
    Some(tokens.into_iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect())
}

/// The tokens of each statement, between the semicolons (which a statement holds only
/// inside strings, so never as a token of its own).
pub fn statements(tokens: &[TokenWithSpan]) -> impl Iterator<Item = &[TokenWithSpan]> {
    tokens.split(|t| t.token == Token::SemiColon)
}

fn holds_word(sql: &str, word: &str) -> bool {
    let bytes = sql.as_bytes();
    let part_of_a_word = |at: Option<&u8>| at.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    bytes.windows(word.len()).enumerate().any(|(i, w)| {
        w.eq_ignore_ascii_case(word.as_bytes())
            && !part_of_a_word(i.checked_sub(1).and_then(|j| bytes.get(j)))
            && !part_of_a_word(bytes.get(i + word.len()))
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_text_that_holds_the_word_is_tokenized() {
        let samples = ["sample", "tablesample"];
        assert!(tokens_if_it_holds("SELECT * FROM t USING SAMPLE 5", &samples).is_some());
        assert!(tokens_if_it_holds("SELECT * FROM t TABLESAMPLE 5", &samples).is_some());
        assert!(tokens_if_it_holds("SELECT sample_size, copies FROM t", &samples).is_none());
        assert!(tokens_if_it_holds("SELECT copies FROM t", &["copy"]).is_none());
        assert_eq!(
            with_edits("abcdef", vec![(4, 5, "E".to_owned()), (0, 1, "A".to_owned()), (2, 2, "-".to_owned())]).as_deref(),
            Some("Ab-cdEf")
        );
        assert_eq!(with_edits("abc", Vec::new()), None);
    }
}
