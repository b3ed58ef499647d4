//! `unstated_action(session, type, content, tool_params, checks_call) OVER (ORDER BY
//! chain_no, idx)` over chain events: on each call marked by `checks_call` (SQL marks the
//! consequential calls that took effect) that the agent never spelled out, the values it
//! left unsaid; null elsewhere.
//!
//! A call's values are the numbers and digit-holding texts of its arguments (ids, dates,
//! amounts) that the conversation has shown (the user or the agent wrote them), so that
//! internal ids nobody reads are left out. The call was spelled out when the agent's
//! messages since the user spoke after its last such call name at least one of them: "I
//! will cancel reservation H8Q05L for a refund of $120. Shall I?" names the cancellation;
//! "Shall I go ahead?" names nothing, and a "yes" to it agrees to nothing in particular.
//! Actions of one turn share the plan stated before them ("I will cancel H8Q05L and
//! K1NW8N").

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};
use serde_json::Value;

use crate::strings::string_at;
use crate::values::{leaves, words};
use crate::window_function::{WindowFunction, boolean_argument, session_keys, starts_session};

/// The `unstated_action` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "unstated_action",
        Some(5),
        DataType::Utf8,
        true,
        || Box::new(UnstatedActionEvaluator),
        crate::docs::doc(
            "Over chain events: on each call marked by `checks_call` whose values the conversation has shown (ids, dates, amounts in its arguments) but none of which the agent named since its last such call, those values; null elsewhere.",
            "unstated_action(key_hash(agent, session), type, content, tool_params, checks_call) OVER (ORDER BY chain_no, idx)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct UnstatedActionEvaluator;

impl PartitionEvaluator for UnstatedActionEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [sessions, types, contents, params, checks_call] = values else { unreachable!("the signature takes five arguments") };
        let sessions = session_keys(sessions)?;
        let checks_call = boolean_argument(checks_call, "unstated_action", "checks_call")?;
        let mut out = StringBuilder::with_capacity(n, 0);
        // The words of the conversation so far (its messages taken in only when a call is
        // checked: most sessions have none), and where the agent's plan for the next
        // action starts: the user's first message after its last action (the actions of
        // one turn share the plan stated for them).
        let (mut said, mut pending, mut plan_from, mut acted) = (String::new(), Vec::new(), 0, false);
        for i in 0..n {
            if starts_session(&sessions, i) {
                said.clear();
                pending.clear();
                plan_from = i;
                acted = false;
            }
            let mut found = None;
            match string_at(types, i)? {
                Some("msg.in") => {
                    pending.push(i);
                    if acted {
                        plan_from = i;
                        acted = false;
                    }
                }
                Some("msg.out") => pending.push(i),
                Some("tool.call") if checks_call.is_valid(i) && checks_call.value(i) => {
                    for j in pending.drain(..) {
                        said.push_str(&words(string_at(contents, j)?.unwrap_or_default()));
                    }
                    let mut stated = String::new();
                    for j in plan_from..i {
                        if string_at(types, j)? == Some("msg.out") {
                            stated.push_str(&words(string_at(contents, j)?.unwrap_or_default()));
                        }
                    }
                    let arguments: Option<Value> = string_at(params, i)?.and_then(|p| serde_json::from_str(p).ok());
                    let mut shown = Vec::new();
                    if let Some(arguments) = &arguments {
                        leaves(arguments, &mut |leaf| {
                            let text = match leaf {
                                Value::String(s) => s.clone(),
                                Value::Number(n) => n.to_string(),
                                _ => return,
                            };
                            let value = words(&text);
                            if text.bytes().any(|b| b.is_ascii_digit()) && said.contains(&value) {
                                shown.push((text, value));
                            }
                        });
                    }
                    if !shown.is_empty() && !shown.iter().any(|(_, value)| stated.contains(value.as_str())) {
                        found = Some(shown.into_iter().map(|(text, _)| text).collect::<Vec<_>>().join(", "));
                    }
                    acted = true;
                }
                _ => {}
            }
            out.append_option(found);
        }
        Ok(Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;

    use super::*;
    use crate::window_function::session_rows;

    /// `(type, text)`: a message's content or a call's params; calls are checked.
    fn evaluate(events: &[(&str, &str)]) -> Vec<Option<String>> {
        let n = events.len();
        let values = session_rows(events, &[|t| t.starts_with("msg"), |t| t == "tool.call"]);
        let out = UnstatedActionEvaluator.evaluate_all(&values, n).unwrap();
        out.as_string::<i32>().iter().map(|v| v.map(str::to_owned)).collect()
    }

    #[test]
    fn an_action_the_agent_spelled_out_is_stated() {
        let events = [
            ("msg.in", "Cancel my reservation H8Q05L."),
            ("msg.out", "I will cancel reservation H8Q05L; you get $120 back. Shall I go ahead?"),
            ("msg.in", "Yes."),
            ("tool.call", r#"{"reservation_id": "H8Q05L"}"#),
        ];
        assert_eq!(evaluate(&events), [None, None, None, None]);
    }

    #[test]
    fn a_yes_to_nothing_in_particular_is_reported() {
        let events = [
            ("msg.in", "Cancel my reservation H8Q05L."),
            ("msg.out", "Shall I go ahead?"),
            ("msg.in", "Yes."),
            ("tool.call", r#"{"reservation_id": "H8Q05L", "item_ids": ["9647292434"]}"#),
        ];
        assert_eq!(evaluate(&events), [None, None, None, Some("H8Q05L".into())]);
    }

    #[test]
    fn one_plan_covers_its_turn_but_not_the_next() {
        let events = [
            ("msg.in", "Cancel W1 and W2, and swap the lamp."),
            ("msg.out", "I will cancel orders W1 and W2. OK?"),
            ("msg.in", "Yes."),
            ("tool.call", r#"{"order_id": "W1"}"#),
            ("tool.call", r#"{"order_id": "W2"}"#),
            ("tool.call", r#"{"new_item_ids": ["2222222222"]}"#),
            ("msg.in", "And cancel W1 again."),
            ("tool.call", r#"{"order_id": "W1"}"#),
        ];
        assert_eq!(evaluate(&events), [None, None, None, None, None, None, None, Some("W1".into())]);
    }
}
