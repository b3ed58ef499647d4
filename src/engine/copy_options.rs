//! DuckDB's options of `COPY … TO`, in parentheses after the path (`COPY (SELECT …) TO
//! 'x.csv' (HEADER, DELIMITER ';')`, `(FORMAT parquet, COMPRESSION zstd, PARTITION_BY
//! (date))`), which DataFusion's parser does not read, written in DataFusion's form
//! (`STORED AS PARQUET PARTITIONED BY (date) OPTIONS ('format.compression' 'zstd(3)')`).

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use super::EngineError;
use super::read_functions::{Format, unescaped_character};
use super::sql_text::{byte_offset, tokens_if_it_holds, with_edits};

/// The options taken, as DuckDB names them.
const OPTIONS: &str = "FORMAT (csv, parquet, json), HEADER, DELIMITER (or DELIM, SEP), QUOTE, ESCAPE, NULL, DATEFORMAT, TIMESTAMPFORMAT, COMPRESSION, ROW_GROUP_SIZE, PARTITION_BY";

/// `sql` with each `COPY … TO 'path' (options)` written in DataFusion's form; `None` when
/// it has none.
pub fn duckdb_copy(sql: &str) -> Result<Option<String>, EngineError> {
    let Some(tokens) = tokens_if_it_holds(sql, &["copy"]) else { return Ok(None) };
    let mut edits = Vec::new();
    let (mut depth, mut copying, mut statement_start) = (0usize, false, true);
    for (i, token) in tokens.iter().enumerate() {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::SemiColon if depth == 0 => {
                (copying, statement_start) = (false, true);
                continue;
            }
            Token::Word(w) if depth == 0 && statement_start && w.keyword == Keyword::COPY => copying = true,
            Token::Word(w) if depth == 0 && copying && w.keyword == Keyword::TO => {
                copying = false;
                if let (Some(Token::SingleQuotedString(path)), Some(Token::LParen)) =
                    (tokens.get(i + 1).map(|t| &t.token), tokens.get(i + 2).map(|t| &t.token))
                {
                    let close = closing_paren(&tokens, i + 2).ok_or_else(|| copy_error("the options' parenthesis is not closed"))?;
                    let clause = datafusion_clause(path, &tokens[i + 3..close])?;
                    edits.push((byte_offset(sql, tokens[i + 2].span.start), byte_offset(sql, tokens[close].span.end), clause));
                }
            }
            _ => {}
        }
        statement_start = false;
    }
    Ok(with_edits(sql, edits))
}

fn copy_error(what: impl std::fmt::Display) -> EngineError {
    EngineError::Copy(what.to_string())
}

/// The index of the parenthesis that closes the one at `open`.
fn closing_paren(tokens: &[TokenWithSpan], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// DataFusion's `STORED AS … PARTITIONED BY … OPTIONS (…)` for DuckDB's options `tokens`
/// (between the parentheses) of a copy to `path`.
fn datafusion_clause(path: &str, tokens: &[TokenWithSpan]) -> Result<String, EngineError> {
    let items = split_items(tokens);
    let mut format = None;
    for item in &items {
        if let [Token::Word(name), value @ ..] = item.as_slice()
            && name.value.eq_ignore_ascii_case("format")
        {
            let value = value.first().map(text_of).unwrap_or_default();
            format = Some(Format::of_extension(&value).ok_or_else(|| copy_error(format!("FORMAT is csv, parquet or json, not {value}")))?);
        }
    }
    let extension = path.rsplit_once('.').map(|(_, e)| e).unwrap_or_default();
    let written = format.or_else(|| Format::of_extension(extension));
    let mut options: Vec<(&str, String)> = Vec::new();
    let mut partitioned = None;
    for item in &items {
        let [Token::Word(name), value @ ..] = item.as_slice() else {
            return Err(copy_error(format!("the options of COPY … TO are names and values (HEADER, DELIMITER ';'); options: {OPTIONS}")));
        };
        let name = name.value.to_ascii_lowercase();
        let value = value.first().map(text_of);
        let given = value.clone().unwrap_or_default();
        let csv = |key: &'static str, value: String| match written {
            Some(Format::Csv) => Ok((key, value)),
            other => Err(copy_error(format!(
                "{} is an option of CSV files, and this COPY writes {}",
                name.to_uppercase(),
                other.map_or("a file of its extension", Format::name)
            ))),
        };
        match name.as_str() {
            "format" => {}
            "header" => {
                let on = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    None | Some("true" | "1" | "on") => "true",
                    Some("false" | "0" | "off") => "false",
                    Some(other) => return Err(copy_error(format!("HEADER is true or false, not {other}"))),
                };
                options.push(csv("format.has_header", on.to_owned())?);
            }
            // `'\t'` is a tab, as DuckDB reads it.
            "delimiter" | "delim" | "sep" => options.push(csv("format.delimiter", unescaped_character(&given).to_owned())?),
            "quote" => options.push(csv("format.quote", given)?),
            "escape" => options.push(csv("format.escape", given)?),
            "null" | "nullstr" => options.push(csv("format.null_value", given)?),
            "dateformat" | "date_format" => options.push(csv("format.date_format", given)?),
            "timestampformat" | "timestamp_format" => options.push(csv("format.timestamp_format", given)?),
            "compression" | "codec" => {
                let codec = given.to_ascii_lowercase();
                match (written, codec.as_str()) {
                    (_, "none" | "uncompressed") if written != Some(Format::Parquet) => {}
                    (Some(Format::Parquet), _) => options.push(("format.compression", parquet_codec(&codec))),
                    _ => {
                        return Err(copy_error(format!(
                            "{codec}: CSV and JSON are written uncompressed here; compress the file afterwards (gzip, zstd)"
                        )));
                    }
                }
            }
            "row_group_size" => options.push(("format.max_row_group_size", given)),
            "partition_by" => partitioned = Some(partition_columns(item)),
            _ => {
                let nearest = crate::config::nearest_within(&name, &OPTION_NAMES, 2);
                return Err(copy_error(format!(
                    "COPY … TO takes no option {}{}; options: {OPTIONS}",
                    name.to_uppercase(),
                    super::did_you_mean(nearest.map(str::to_uppercase).as_deref())
                )));
            }
        }
    }
    let mut clause = String::new();
    if let Some(format) = format {
        clause.push_str(&format!("STORED AS {}", format.name().to_uppercase()));
    }
    if let Some(columns) = partitioned {
        clause.push_str(&format!(" PARTITIONED BY ({columns})"));
    }
    if !options.is_empty() {
        let listed: Vec<String> = options.iter().map(|(k, v)| format!("'{k}' '{}'", v.replace('\'', "''"))).collect();
        clause.push_str(&format!(" OPTIONS ({})", listed.join(", ")));
    }
    Ok(clause.trim_start().to_owned())
}

const OPTION_NAMES: [&str; 17] = [
    "format",
    "header",
    "delimiter",
    "delim",
    "sep",
    "quote",
    "escape",
    "null",
    "nullstr",
    "dateformat",
    "date_format",
    "timestampformat",
    "timestamp_format",
    "compression",
    "codec",
    "row_group_size",
    "partition_by",
];

/// DuckDB's Parquet codecs by DataFusion's names, which give the level where one is set.
fn parquet_codec(codec: &str) -> String {
    match codec {
        "zstd" => "zstd(3)".to_owned(),
        "gzip" => "gzip(6)".to_owned(),
        "brotli" => "brotli(1)".to_owned(),
        "lz4" => "lz4_raw".to_owned(),
        "none" => "uncompressed".to_owned(),
        other => other.to_owned(),
    }
}

/// The items of an option list, split at its own commas.
fn split_items(tokens: &[TokenWithSpan]) -> Vec<Vec<Token>> {
    let mut items = vec![Vec::new()];
    let mut depth = 0;
    for token in tokens {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => {
                items.push(Vec::new());
                continue;
            }
            _ => {}
        }
        items.last_mut().expect("one item at least").push(token.token.clone());
    }
    items.retain(|item| !item.is_empty());
    items
}

/// A value as written: a string's text, a word or a number.
fn text_of(token: &Token) -> String {
    match token {
        Token::SingleQuotedString(text) | Token::DoubleQuotedString(text) => text.clone(),
        Token::Word(w) => w.value.clone(),
        other => other.to_string(),
    }
}

/// `PARTITION_BY date` or `PARTITION_BY (agent, date)` as `agent, date`.
fn partition_columns(item: &[Token]) -> String {
    item[1..]
        .iter()
        .filter(|t| !matches!(t, Token::LParen | Token::RParen))
        .map(Token::to_string)
        .collect::<Vec<_>>()
        .join("")
        .replace(',', ", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(sql: &str) -> String {
        duckdb_copy(sql).unwrap().unwrap_or_else(|| sql.to_owned())
    }

    fn refused(sql: &str) -> String {
        duckdb_copy(sql).unwrap_err().to_string()
    }

    #[test]
    fn duckdb_options_are_written_as_datafusion_reads_them() {
        assert_eq!(
            copy("COPY (SELECT 1) TO 'x.csv' (HEADER, DELIMITER ';')"),
            "COPY (SELECT 1) TO 'x.csv' OPTIONS ('format.has_header' 'true', 'format.delimiter' ';')"
        );
        assert_eq!(
            copy("copy events to 'out' (format parquet, compression zstd, partition_by (agent, date), row_group_size 100000);"),
            "copy events to 'out' STORED AS PARQUET PARTITIONED BY (agent, date) OPTIONS ('format.compression' 'zstd(3)', \
             'format.max_row_group_size' '100000');"
        );
        assert_eq!(copy("COPY t TO 'x.json' (FORMAT 'json')"), "COPY t TO 'x.json' STORED AS JSON");
        assert_eq!(copy("COPY t TO 'x.tsv' (FORMAT csv, SEP '\\t')"), "COPY t TO 'x.tsv' STORED AS CSV OPTIONS ('format.delimiter' '\t')");
        assert_eq!(
            copy("COPY t TO 'x.csv' (HEADER false, NULL 'it''s')"),
            "COPY t TO 'x.csv' OPTIONS ('format.has_header' 'false', 'format.null_value' 'it''s')"
        );
        assert_eq!(copy("COPY t TO 'x.csv' STORED AS CSV"), "COPY t TO 'x.csv' STORED AS CSV", "DataFusion's form stays");
        assert_eq!(copy("SELECT '(copy) to' AS x"), "SELECT '(copy) to' AS x");
        assert_eq!(
            copy("SELECT 1; COPY t TO 'x.parquet' (COMPRESSION snappy)"),
            "SELECT 1; COPY t TO 'x.parquet' OPTIONS ('format.compression' 'snappy')"
        );
    }

    #[test]
    fn options_that_cannot_be_taken_say_what_can() {
        assert!(refused("COPY t TO 'x.csv' (HEADR)").contains("COPY … TO takes no option HEADR (did you mean HEADER?); options: FORMAT"));
        assert!(refused("COPY t TO 'x.parquet' (HEADER)").contains("HEADER is an option of CSV files, and this COPY writes parquet"));
        assert!(refused("COPY t TO 'x' (FORMAT xlsx)").contains("FORMAT is csv, parquet or json, not xlsx"));
        assert!(refused("COPY t TO 'x.csv' (COMPRESSION gzip)").contains("written uncompressed here"));
    }
}
