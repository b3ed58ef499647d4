//! `ungrounded_value(session, type, content, tool_params, tool_result, tool_error,
//! checks_call) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx)` over chain events: on each event that
//! states a value nothing in the session gave, that value; null elsewhere.
//!
//! What grounds a value: the user's messages and the tools' results (and errors) before
//! it. Checked are
//! - the arguments of the calls marked by `checks_call` (SQL marks the consequential
//!   calls that took effect): every number, and every text holding a digit (an id, a date,
//!   a card), must come from the user or a tool;
//! - the figures of the agent's messages (amounts with a currency sign or cents, numbers
//!   of five digits or more, such as ids), which may also come from an earlier call's
//!   arguments.
//!
//! A number is grounded too when it is the sum or difference of two grounded ones (a
//! refund of $184.19 for $54.20 and $129.99), as is a total the message breaks down into
//! grounded figures; a date `2024-05-20` when the text names "May 20"; a figure in a
//! sentence that states a rate ("$50 per bag", "each") comes from the agent's
//! instructions, not the session, and is not checked. Each value is reported once per
//! session.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{HashSet, Result};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};
use regex::Regex;

use crate::json::Json;
use crate::strings::Texts;
use crate::values::{hundredths, push_words, sentences, words};
use crate::window_function::Kind::{Boolean, Integer, Text};
use crate::window_function::{Param, Params, WindowFunction, boolean_argument, session_keys, starts_session};

/// The `ungrounded_value` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "ungrounded_value",
        Params(
            &[
                Param("session_key", Integer),
                Param("type", Text),
                Param("content", Text),
                Param("tool_params", Text),
                Param("tool_result", Text),
                Param("tool_error", Text),
                Param("checks_call", Boolean),
            ],
            None,
        ),
        DataType::Utf8,
        true,
        || Box::new(UngroundedValueEvaluator),
        crate::docs::doc(
            "Over chain events: the first value an event states that no earlier user message or tool result of the session gave (in the arguments of calls marked by `checks_call`, and the figures of agent messages), not a sum or difference of two that did; null elsewhere.",
            "ungrounded_value(key_hash(agent, session), type, content, tool_params, tool_result, tool_error, checks_call) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx)",
            &[],
        ),
    )
}

/// Numbers as written: `1,234.50`, `375`, `0.5`.
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+(?:,\d{3})*(?:\.\d+)?").expect("valid"));

/// Figures an agent states: an amount with a currency sign, a number with cents, or a
/// number of five digits or more standing alone (an id).
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[$€£]\s?(\d+(?:,\d{3})*(?:\.\d+)?)|(?:^|[^\w$.,])(\d+(?:,\d{3})*\.\d{2}|\d{5,})(?:$|[^\w.]|\.(?:\s|$))").expect("valid")
});

/// A sentence that states a rate: its figures are prices the agent was given.
static RATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:per|each|every|times|a (?:day|night|week|month|year|bag|person|passenger|piece))\b").expect("valid")
});

const MONTHS: [&str; 12] =
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/// A number as written (`1,234.50`) in hundredths, so that `$54.20` and `54.2` are one
/// value.
fn cents(text: &str) -> Option<i64> {
    let number = if text.contains(',') { text.replace(',', "").parse() } else { text.parse() };
    hundredths(number.ok()?)
}

/// The numbers [`NUMBER`] finds in `text`, in hundredths. ASCII text, nearly all of it,
/// is scanned by hand: a session's every result and message passes here, and the regex's
/// search costs several times the scan.
fn numbers_in(text: &str, into: &mut impl Extend<i64>) {
    if !text.is_ascii() {
        into.extend(NUMBER.find_iter(text).filter_map(|m| cents(m.as_str())));
        return;
    }
    let bytes = text.as_bytes();
    let digit = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let mut i = 0;
    while i < bytes.len() {
        if !digit(i) {
            i += 1;
            continue;
        }
        let start = i;
        while digit(i) {
            i += 1;
        }
        // `(?:,\d{3})*`: a group needs three digits after its comma, and nothing after them.
        while bytes.get(i) == Some(&b',') && digit(i + 1) && digit(i + 2) && digit(i + 3) {
            i += 4;
        }
        if bytes.get(i) == Some(&b'.') && digit(i + 1) {
            i += 1;
            while digit(i) {
                i += 1;
            }
        }
        into.extend(cents(&text[start..i]));
    }
}

/// What a session has given so far.
#[derive(Default)]
struct Grounds {
    /// The user's and the tools' words.
    text: String,
    /// Their numbers, in hundredths.
    numbers: HashSet<i64>,
    /// The numbers of the calls' arguments (ground the agent's messages only).
    argument_numbers: HashSet<i64>,
    reported: HashSet<String>,
}

impl Grounds {
    fn add(&mut self, text: &str) {
        push_words(&mut self.text, text);
        numbers_in(text, &mut self.numbers);
    }

    fn number_is_grounded(&self, value: i64, with_arguments: bool) -> bool {
        let known = |v: i64| self.numbers.contains(&v) || (with_arguments && self.argument_numbers.contains(&v));
        if known(value) {
            return true;
        }
        let sources = self.numbers.iter().chain(with_arguments.then_some(&self.argument_numbers).into_iter().flatten());
        sources.into_iter().any(|&a| known(value - a) || known(a - value))
    }

    fn text_is_grounded(&self, value: &str) -> bool {
        if value.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b',')
            && let Some(number) = cents(value)
        {
            return self.number_is_grounded(number, false);
        }
        let wanted = words(value);
        if wanted.trim().is_empty() || self.text.contains(&wanted) {
            return true;
        }
        self.names_date(value)
    }

    /// Whether an ISO date `value` is named in words ("May 20", "20th of May").
    fn names_date(&self, value: &str) -> bool {
        let parts: Vec<&str> = value.split('-').collect();
        let [_, month, day] = parts[..] else { return false };
        let (Ok(month), Ok(day)) = (month.parse::<usize>(), day.parse::<u32>()) else { return false };
        let Some(name) = month.checked_sub(1).and_then(|m| MONTHS.get(m)) else { return false };
        let suffix = match day {
            1 | 21 | 31 => "st",
            2 | 22 => "nd",
            3 | 23 => "rd",
            _ => "th",
        };
        [
            format!(" {name} {day} "),
            format!(" {name} {day}{suffix} "),
            format!(" {day} {name} "),
            format!(" {day}{suffix} {name} "),
            format!(" {day}{suffix} of {name} "),
        ]
        .iter()
        .any(|form| self.text.contains(form.as_str()))
    }

    /// The first ungrounded argument of a call not reported before.
    fn check_arguments(&mut self, params: &Json) -> Option<String> {
        let mut found = None;
        params.leaves(&mut |leaf| {
            if found.is_some() {
                return;
            }
            let ungrounded = match leaf {
                Json::Number(n) => n.as_f64().and_then(hundredths).is_some_and(|v| !self.number_is_grounded(v, false)),
                Json::Text(s) => s.bytes().any(|b| b.is_ascii_digit()) && !self.text_is_grounded(s),
                _ => false,
            };
            if ungrounded {
                let shown = leaf.scalar().unwrap_or_default().into_owned();
                if !self.reported.contains(&shown) {
                    found = Some(shown);
                }
            }
        });
        found.inspect(|v| {
            self.reported.insert(v.clone());
        })
    }

    /// The first ungrounded figure of an agent's message not reported before. A total the
    /// message itself breaks down (the sum of its other, grounded, figures) is grounded.
    fn check_message(&mut self, text: &str) -> Option<String> {
        let figures: Vec<(i64, &str, bool)> = sentences(text)
            .flat_map(|sentence| {
                let rate = RATE.is_match(sentence);
                FIGURE.captures_iter(sentence).filter_map(move |figure| {
                    let (whole, number) = (figure.get(0)?, figure.get(1).or_else(|| figure.get(2))?);
                    Some((cents(number.as_str())?, whole.as_str(), rate))
                })
            })
            .collect();
        let grounded: Vec<bool> = figures.iter().map(|&(value, _, _)| self.number_is_grounded(value, true)).collect();
        for (i, &(value, whole, rate)) in figures.iter().enumerate() {
            if rate || grounded[i] {
                continue;
            }
            let breakdown: i64 = figures.iter().zip(&grounded).filter(|((v, _, _), g)| **g && *v != value).map(|((v, _, _), _)| v).sum();
            if breakdown == value {
                continue;
            }
            let shown = whole.trim_matches(|c: char| !c.is_alphanumeric() && !"$€£".contains(c)).to_owned();
            if self.reported.insert(shown.clone()) {
                return Some(shown);
            }
        }
        None
    }
}

#[derive(Debug)]
struct UngroundedValueEvaluator;

impl PartitionEvaluator for UngroundedValueEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [sessions, types, contents, params, results, errors, checks_call] = values else {
            unreachable!("the signature takes seven arguments")
        };
        let sessions = session_keys(sessions)?;
        let (types, contents, params) = (Texts::of(types)?, Texts::of(contents)?, Texts::of(params)?);
        let (results, errors) = (Texts::of(results)?, Texts::of(errors)?);
        let checks_call = boolean_argument(checks_call, "ungrounded_value", "checks_call")?;
        let mut out = StringBuilder::with_capacity(n, 0);
        let mut grounds = Grounds::default();
        // Events whose text (or arguments) ground later values, taken in only when a value
        // is checked: most sessions state nothing to check.
        let mut pending: Vec<usize> = Vec::new();
        for i in 0..n {
            if starts_session(&sessions, i) {
                grounds = Grounds::default();
                pending.clear();
            }
            let columns = Columns { types, contents, params, results, errors };
            let found = match types.get(i) {
                Some("msg.in" | "tool.result") => {
                    pending.push(i);
                    None
                }
                Some("tool.call") => {
                    let found = if checks_call.is_valid(i) && checks_call.value(i) {
                        match params.get(i).and_then(Json::parse) {
                            Some(arguments) => {
                                take_in(&mut grounds, &mut pending, &columns);
                                grounds.check_arguments(&arguments)
                            }
                            None => None,
                        }
                    } else {
                        None
                    };
                    // A call's arguments ground the messages after it, not the call.
                    pending.push(i);
                    found
                }
                Some("msg.out") => match contents.get(i) {
                    Some(text) if text.bytes().any(|b| b.is_ascii_digit()) && FIGURE.is_match(text) => {
                        take_in(&mut grounds, &mut pending, &columns);
                        grounds.check_message(text)
                    }
                    _ => None,
                },
                _ => None,
            };
            out.append_option(found);
        }
        Ok(Arc::new(out.finish()))
    }
}

/// The argument columns the grounds are read from.
struct Columns<'a> {
    types: Texts<'a>,
    contents: Texts<'a>,
    params: Texts<'a>,
    results: Texts<'a>,
    errors: Texts<'a>,
}

/// Adds the pending events to `grounds`: the texts of user messages and tool results, the
/// numbers of calls' arguments.
fn take_in(grounds: &mut Grounds, pending: &mut Vec<usize>, columns: &Columns) {
    for i in pending.drain(..) {
        if columns.types.get(i) == Some("tool.call") {
            if let Some(text) = columns.params.get(i) {
                numbers_in(text, &mut grounds.argument_numbers);
            }
            continue;
        }
        for column in [columns.contents, columns.results, columns.errors] {
            if let Some(text) = column.get(i) {
                grounds.add(text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{AsArray, BooleanArray, StringArray, UInt64Array};

    use super::*;
    use crate::window_function::session_rows;

    /// `(type, text)`: a message's content, a call's params or a result; calls are checked.
    fn evaluate(events: &[(&str, &str)]) -> Vec<Option<String>> {
        let n = events.len();
        let values = session_rows(events, &[|t| t.starts_with("msg"), |t| t == "tool.call", |t| t == "tool.result", |_| false]);
        let out = UngroundedValueEvaluator.evaluate_all(&values, n).unwrap();
        out.as_string::<i32>().iter().map(|v| v.map(str::to_owned)).collect()
    }

    #[test]
    fn the_scan_of_ascii_text_finds_the_numbers_the_regex_finds() {
        let by_regex = |text: &str| NUMBER.find_iter(text).filter_map(|m| cents(m.as_str())).collect::<Vec<_>>();
        let by_scan = |text: &str| {
            let mut found = Vec::new();
            numbers_in(text, &mut found);
            found
        };
        let fixed = ["1,234.50", "1,2345", "12,345.67.89", "a1,23b", "3.", ".5", "1,234,567", "x 007,000.1", "9,99,999", "１２3 ٣4"];
        // Texts made of the characters numbers are made of, from a fixed seed.
        let alphabet: Vec<char> = "0123456789,.,. a$-".chars().collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let random = (0..5000).map(|_| {
            let mut text = String::new();
            for _ in 0..(seed % 24) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            text
        });
        for text in fixed.iter().map(|t| (*t).to_owned()).chain(random) {
            assert_eq!(by_scan(&text), by_regex(&text), "{text:?}");
        }
    }

    #[test]
    fn arguments_the_user_or_a_tool_gave_are_grounded() {
        let events = [
            ("msg.in", "Book flight HAT097 on May 17th, pay with card 7447."),
            ("tool.result", r#"{"price": 129.99, "tax": 54.20, "card": "credit_card_4421486"}"#),
            (
                "tool.call",
                r#"{"flight": "HAT097", "date": "2024-05-17", "payment_id": "credit_card_4421486", "amount": 184.19, "insurance": "no"}"#,
            ),
        ];
        assert_eq!(evaluate(&events), [None, None, None]);
    }

    #[test]
    fn an_argument_from_nowhere_is_reported_once() {
        let events = [
            ("msg.in", "Move me to the 19th."),
            ("tool.result", r#"{"flights": [{"date": "2024-05-20", "price": 100}]}"#),
            ("tool.call", r#"{"date": "2024-05-23", "amount": 100}"#),
            ("tool.call", r#"{"date": "2024-05-23", "amount": 230}"#),
        ];
        assert_eq!(evaluate(&events), [None, None, Some("2024-05-23".into()), Some("230".into())]);
    }

    #[test]
    fn figures_of_messages_need_a_source_but_rates_and_sums_do_not() {
        let events = [
            ("tool.result", r#"{"gift_card": 128, "total": 375, "keyboard": 235.13, "chair": 511.24, "headphones": 346.97}"#),
            ("msg.out", "The total is $375: $128 from the gift card and $247 on your card. Each extra bag costs $50."),
            ("msg.out", "Your refund of $6,594 has been processed."),
            ("msg.out", "Your refund of $6,594 is on its way."),
            ("msg.out", "The refund is $1,093.34 (keyboard: $235.13, chair: $511.24, headphones: $346.97)."),
            ("msg.out", "Prices: $54.20 and $129.99."),
        ];
        assert_eq!(evaluate(&events), [None, None, Some("$6,594".into()), None, None, Some("$54.20".into())]);
    }

    #[test]
    fn each_session_starts_with_nothing() {
        let values: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["msg.in", "msg.out"])),
            Arc::new(StringArray::from(vec![Some("The order is #W12345."), Some("Order 12345 is on its way.")])),
            Arc::new(StringArray::from(vec![None::<&str>, None])),
            Arc::new(StringArray::from(vec![None::<&str>, None])),
            Arc::new(StringArray::from(vec![None::<&str>, None])),
            Arc::new(BooleanArray::from(vec![false, false])),
        ];
        let out = UngroundedValueEvaluator.evaluate_all(&values, 2).unwrap();
        assert_eq!(out.as_string::<i32>().value(1), "12345");
    }
}
