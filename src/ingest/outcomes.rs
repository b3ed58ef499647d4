//! Known session outcomes (task success, thumbs up or down, an eval score) read from JSON
//! Lines or CSV, so that findings can be scored against what really happened.

use serde_json::Value;

use super::normalize::normalize_session;

/// One session's known outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Normalized as event sessions are (`agent:main:uuid` → `uuid`).
    pub session: String,
    pub failed: bool,
    pub score: Option<f64>,
    pub source: String,
}

impl Outcome {
    pub fn outcome(&self) -> &'static str {
        if self.failed { "failure" } else { "success" }
    }
}

/// A line that is not an outcome: where, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BadOutcome {
    pub line: u64,
    pub reason: String,
}

/// What a file holds: its outcomes and the lines that are not one.
#[derive(Debug, Default)]
pub struct ParsedOutcomes {
    pub outcomes: Vec<Outcome>,
    pub bad: Vec<BadOutcome>,
}

/// Parses `text`: CSV with a header row when `csv` (or when its first character is not
/// `{`), else one JSON object a line. `default_source` fills a missing `source`.
pub fn parse_outcomes(text: &str, csv: Option<bool>, default_source: &str) -> ParsedOutcomes {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let is_csv = csv.unwrap_or_else(|| !text.trim_start().starts_with('{'));
    if is_csv { parse_csv(text, default_source) } else { parse_jsonl(text, default_source) }
}

fn parse_jsonl(text: &str, default_source: &str) -> ParsedOutcomes {
    let mut parsed = ParsedOutcomes::default();
    for (n, line) in text.lines().enumerate() {
        let line_no = n as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                parsed.bad.push(BadOutcome { line: line_no, reason: "not a JSON object".into() });
                continue;
            }
            Err(e) => {
                parsed.bad.push(BadOutcome { line: line_no, reason: format!("not JSON: {e}") });
                continue;
            }
        };
        let field = |names: &[&str]| names.iter().find_map(|n| fields.get(*n).filter(|v| !v.is_null())).map(json_text);
        match outcome_of(field(SESSION_KEYS), field(OUTCOME_KEYS), field(SCORE_KEYS), field(&["source"]), default_source) {
            Ok(outcome) => parsed.outcomes.push(outcome),
            Err(reason) => parsed.bad.push(BadOutcome { line: line_no, reason }),
        }
    }
    parsed
}

fn parse_csv(text: &str, default_source: &str) -> ParsedOutcomes {
    let mut parsed = ParsedOutcomes::default();
    let mut reader = csv::ReaderBuilder::new().flexible(true).trim(csv::Trim::All).from_reader(text.as_bytes());
    let header: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(str::to_ascii_lowercase).collect(),
        Err(e) => {
            parsed.bad.push(BadOutcome { line: 1, reason: format!("no CSV header: {e}") });
            return parsed;
        }
    };
    let column = |names: &[&str]| names.iter().find_map(|n| header.iter().position(|h| h == n));
    let (session, outcome, score, source) = (column(SESSION_KEYS), column(OUTCOME_KEYS), column(SCORE_KEYS), column(&["source"]));
    if session.is_none() || outcome.is_none() {
        let reason = "the CSV header needs the columns `session` and `outcome` (optional: `score`, `source`)".into();
        parsed.bad.push(BadOutcome { line: 1, reason });
        return parsed;
    }
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, csv::Position::line);
                parsed.bad.push(BadOutcome { line, reason: format!("not CSV: {e}") });
                continue;
            }
        };
        let line = record.position().map_or(0, csv::Position::line);
        if record.iter().all(str::is_empty) {
            continue;
        }
        let get = |i: Option<usize>| i.and_then(|i| record.get(i)).filter(|v| !v.is_empty()).map(str::to_owned);
        match outcome_of(get(session), get(outcome), get(score), get(source), default_source) {
            Ok(o) => parsed.outcomes.push(o),
            Err(reason) => parsed.bad.push(BadOutcome { line, reason }),
        }
    }
    parsed
}

const SESSION_KEYS: &[&str] = &["session", "session_id", "sessionId"];
const OUTCOME_KEYS: &[&str] = &["outcome", "success"];
const SCORE_KEYS: &[&str] = &["score", "reward"];

fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn outcome_of(
    session: Option<String>,
    outcome: Option<String>,
    score: Option<String>,
    source: Option<String>,
    default_source: &str,
) -> Result<Outcome, String> {
    let session = session.filter(|s| !s.trim().is_empty()).ok_or("no `session`")?;
    let outcome = outcome.ok_or("no `outcome` (success or failure)")?;
    let failed = match outcome.trim().to_ascii_lowercase().as_str() {
        "success" | "succeeded" | "pass" | "passed" | "true" | "good" | "1" => false,
        "failure" | "failed" | "fail" | "false" | "bad" | "0" => true,
        other => return Err(format!("outcome {other:?} is neither success nor failure")),
    };
    let score = match score {
        None => None,
        Some(s) => Some(s.trim().parse::<f64>().ok().filter(|f| f.is_finite()).ok_or_else(|| format!("score {s:?} is not a number"))?),
    };
    Ok(Outcome {
        session: normalize_session(session.trim()).to_owned(),
        failed,
        score,
        source: source.unwrap_or_else(|| default_source.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_take_outcome_reward_and_a_default_source() {
        let text = "{\"session\": \"agent:main:s1\", \"outcome\": \"failure\", \"reward\": 0.0}\n\n{\"session\": \"s2\", \"outcome\": \"success\", \"source\": \"eval\"}\n";
        let parsed = parse_outcomes(text, None, "file.jsonl");
        assert!(parsed.bad.is_empty(), "{:?}", parsed.bad);
        assert_eq!(
            parsed.outcomes,
            vec![
                Outcome { session: "s1".into(), failed: true, score: Some(0.0), source: "file.jsonl".into() },
                Outcome { session: "s2".into(), failed: false, score: None, source: "eval".into() },
            ]
        );
    }

    #[test]
    fn csv_with_a_header_in_any_column_order() {
        let text = "score,Outcome,session\n1,pass,a\n,FAILED,b\n";
        let parsed = parse_outcomes(text, None, "f.csv");
        assert!(parsed.bad.is_empty(), "{:?}", parsed.bad);
        assert_eq!(
            parsed.outcomes.iter().map(|o| (o.session.as_str(), o.failed, o.score)).collect::<Vec<_>>(),
            vec![("a", false, Some(1.0)), ("b", true, None)]
        );
    }

    #[test]
    fn bad_lines_are_counted_with_their_number_and_lose_nothing_else() {
        let text = "{\"session\": \"a\", \"outcome\": \"success\"}\nnot json\n{\"session\": \"b\", \"outcome\": \"maybe\"}\n[1]\n{\"outcome\": \"failure\"}\n{\"session\": \"c\", \"outcome\": false, \"score\": \"x\"}\n{\"session\": \"d\", \"outcome\": false}\n";
        let parsed = parse_outcomes(text, Some(false), "f");
        assert_eq!(parsed.outcomes.iter().map(|o| o.session.as_str()).collect::<Vec<_>>(), vec!["a", "d"]);
        assert_eq!(parsed.bad.iter().map(|b| b.line).collect::<Vec<_>>(), vec![2, 3, 4, 5, 6]);
        assert!(parsed.bad[1].reason.contains("maybe"), "{:?}", parsed.bad[1]);
    }

    #[test]
    fn a_csv_without_the_needed_columns_says_which() {
        let parsed = parse_outcomes("id,result\n1,ok\n", Some(true), "f");
        assert!(parsed.outcomes.is_empty());
        assert!(parsed.bad[0].reason.contains("`session` and `outcome`"), "{:?}", parsed.bad);
    }
}
