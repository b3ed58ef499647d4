//! `unrecovered_failure(session, type, tool_name, tool_params, next_type, next_failed,
//! lookup_miss) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx)` over chain events: true on the call of every
//! failed tool attempt that the session never recovers from (spec §7.2, judged over the
//! session), false elsewhere.
//!
//! An attempt is a `tool.call` followed by its `tool.result` (`next_type`); it failed if
//! `next_failed`. A failure is recovered, before the session ends, when a later attempt
//! of the same tool succeeds, when any attempt succeeds before the agent's answer (its
//! next `msg.out`), or when the agent's first attempt after that answer succeeds (what it
//! did in answer to the failure, often after asking the user). A failure the agent never
//! answers is not reported here (SIG-ERROR-ENDING's). A lookup that found nothing
//! (`lookup_miss`: a read-only tool answering "not found") is normal service, unless the
//! same lookup with the same parameters missed again. `session` is any key of the session
//! (chains of a session are consecutive in chain order).
//!
//! The scan over each session is sequence logic SQL expresses with several joins; here
//! it is one pass over the sorted partition.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{HashMap, Result};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::strings::Texts;
use crate::window_function::Kind::{Boolean, Integer, Text};
use crate::window_function::{Param, Params, WindowFunction, boolean_argument, session_keys, starts_session};

/// The `unrecovered_failure` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "unrecovered_failure",
        Params(
            &[
                Param("session_key", Integer),
                Param("type", Text),
                Param("tool", Text),
                Param("params", Text),
                Param("next_type", Text),
                Param("next_failed", Boolean),
                Param("lookup_miss", Boolean),
            ],
            None,
        ),
        DataType::Boolean,
        false,
        || Box::new(UnrecoveredFailureEvaluator),
        crate::docs::doc(
            "Over chain events: true on the call of each failed tool attempt the agent answered but the session never recovered from (no later success of the same tool, none before the agent's answer, and the agent's first attempt after it failed too); a lookup that found nothing counts only when it missed twice with the same parameters.",
            "unrecovered_failure(key_hash(agent, session), type, tool, params, next_type, next_failed, lookup_miss) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct UnrecoveredFailureEvaluator;

impl PartitionEvaluator for UnrecoveredFailureEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [sessions, types, tools, params, next_types, next_failed, lookup_miss] = values else {
            unreachable!("the signature takes seven arguments")
        };
        let sessions = session_keys(sessions)?;
        let (types, tools, params, next_types) = (Texts::of(types)?, Texts::of(tools)?, Texts::of(params)?, Texts::of(next_types)?);
        let next_failed = boolean_argument(next_failed, "unrecovered_failure", "next_failed")?;
        let lookup_miss = boolean_argument(lookup_miss, "unrecovered_failure", "lookup_miss")?;
        let flag = |a: &BooleanArray, i: usize| a.is_valid(i) && a.value(i);

        let mut out = vec![false; n];
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && !starts_session(&sessions, end) {
                end += 1;
            }
            // The session's attempts, its answers, and each tool's last success.
            let mut attempts = Vec::new();
            let mut answers = Vec::new();
            let mut last_success: HashMap<Option<&str>, usize> = HashMap::new();
            for i in start..end {
                match types.get(i) {
                    Some("msg.out") => answers.push(i),
                    Some("tool.call") if next_types.get(i) == Some("tool.result") => {
                        attempts.push(i);
                        if !flag(next_failed, i) {
                            last_success.insert(tools.get(i), i);
                        }
                    }
                    _ => {}
                }
            }
            for (k, &i) in attempts.iter().enumerate() {
                if !flag(next_failed, i) {
                    continue;
                }
                let Some(&answer) = answers.get(answers.partition_point(|&a| a <= i + 1)) else { continue };
                let tool = tools.get(i);
                if flag(lookup_miss, i) {
                    let missed_again =
                        attempts.iter().any(|&j| j != i && flag(lookup_miss, j) && tools.get(j) == tool && params.get(j) == params.get(i));
                    if !missed_again {
                        continue;
                    }
                }
                let same_tool_later = last_success.get(&tool).is_some_and(|&j| j > i);
                let later = &attempts[k + 1..];
                let before_answer = later.iter().take_while(|&&j| j < answer).any(|&j| !flag(next_failed, j));
                let after_answer = later.iter().find(|&&j| j > answer).is_some_and(|&j| !flag(next_failed, j));
                out[i] = !(same_tool_later || before_answer || after_answer);
            }
            start = end;
        }
        Ok(Arc::new(BooleanArray::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{AsArray, StringArray, UInt64Array};

    use super::*;

    /// `(session, type, tool, params, failed, lookup_miss)`; `failed` and `lookup_miss`
    /// mark a result.
    type Event = (u64, &'static str, Option<&'static str>, Option<&'static str>, bool, bool);

    fn evaluate(events: &[Event]) -> Vec<bool> {
        let n = events.len();
        let next = |i: usize| events.get(i + 1);
        let values: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(events.iter().map(|e| e.0).collect::<Vec<_>>())),
            Arc::new(StringArray::from_iter_values(events.iter().map(|e| e.1))),
            Arc::new(StringArray::from(events.iter().map(|e| e.2).collect::<Vec<_>>())),
            Arc::new(StringArray::from(events.iter().map(|e| e.3).collect::<Vec<_>>())),
            Arc::new(StringArray::from((0..n).map(|i| next(i).map(|e| e.1)).collect::<Vec<_>>())),
            Arc::new(BooleanArray::from((0..n).map(|i| next(i).map(|e| e.4)).collect::<Vec<_>>())),
            Arc::new(BooleanArray::from((0..n).map(|i| next(i).map(|e| e.5)).collect::<Vec<_>>())),
        ];
        let out = UnrecoveredFailureEvaluator.evaluate_all(&values, n).unwrap();
        out.as_boolean().iter().map(|v| v.unwrap()).collect()
    }

    const CALL: &str = "tool.call";
    const RESULT: &str = "tool.result";
    const EXEC: Option<&str> = Some("exec");
    const LOOKUP: Option<&str> = Some("find_user_id_by_email");

    fn call(tool: Option<&'static str>, params: Option<&'static str>) -> Event {
        (1, CALL, tool, params, false, false)
    }
    fn result(tool: Option<&'static str>, failed: bool) -> Event {
        (1, RESULT, tool, None, failed, false)
    }
    fn miss(tool: Option<&'static str>) -> Event {
        (1, RESULT, tool, None, true, true)
    }
    fn says(kind: &'static str) -> Event {
        (1, kind, None, None, false, false)
    }

    #[test]
    fn a_failure_answered_and_never_recovered_is_reported() {
        let events = [call(EXEC, Some(r#"{"command":"ls /a"}"#)), result(EXEC, true), says("msg.out")];
        assert_eq!(evaluate(&events), [true, false, false]);
    }

    #[test]
    fn a_failure_never_answered_is_not_reported() {
        let events = [call(EXEC, None), result(EXEC, true), says("msg.in")];
        assert_eq!(evaluate(&events), [false, false, false]);
    }

    #[test]
    fn a_retry_after_asking_the_user_recovers() {
        // "payment method should be the original one": the agent asks, the user answers,
        // the same tool with other arguments succeeds.
        let refund = Some("return_delivered_order_items");
        let events = [
            call(refund, Some(r#"{"payment":"paypal"}"#)),
            result(refund, true),
            says("msg.out"),
            says("msg.in"),
            call(refund, Some(r#"{"payment":"visa"}"#)),
            result(refund, false),
            says("msg.out"),
        ];
        assert_eq!(evaluate(&events), [false; 7]);
    }

    #[test]
    fn another_tool_the_agent_turned_to_recovers() {
        // A lookup by name and zip after the lookup by e-mail failed (not as a miss).
        let events = [
            call(LOOKUP, None),
            result(LOOKUP, true),
            says("msg.out"),
            says("msg.in"),
            call(Some("find_user_id_by_name_zip"), None),
            result(Some("find_user_id_by_name_zip"), false),
            says("msg.out"),
        ];
        assert_eq!(evaluate(&events), [false; 7]);
    }

    #[test]
    fn a_success_before_the_answer_recovers_every_failure_before_it() {
        // A doom loop the agent got out of with another tool.
        let events = [
            call(EXEC, Some("a")),
            result(EXEC, true),
            call(EXEC, Some("a")),
            result(EXEC, true),
            call(Some("read"), None),
            result(Some("read"), false),
            says("msg.out"),
        ];
        assert_eq!(evaluate(&events), [false; 7]);
    }

    #[test]
    fn a_later_success_of_something_else_after_a_failed_answer_does_not_recover() {
        let events = [
            call(EXEC, Some("a")),
            result(EXEC, true),
            says("msg.out"),
            says("msg.in"),
            call(Some("deploy"), None),
            result(Some("deploy"), true),
            says("msg.out"),
            call(Some("read"), None),
            result(Some("read"), false),
        ];
        assert_eq!(evaluate(&events), [true, false, false, false, false, false, false, false, false]);
    }

    #[test]
    fn recovery_is_judged_within_the_session() {
        let mut other = call(EXEC, None);
        other.0 = 2;
        let mut other_result = result(EXEC, false);
        other_result.0 = 2;
        let events = [call(EXEC, None), result(EXEC, true), says("msg.out"), other, other_result];
        assert_eq!(evaluate(&events), [true, false, false, false, false]);
    }

    #[test]
    fn a_lookup_that_found_nothing_counts_only_when_it_missed_twice_the_same_way() {
        let once = [call(LOOKUP, Some(r#"{"email":"a@b"}"#)), miss(LOOKUP), says("msg.out"), says("msg.in")];
        assert_eq!(evaluate(&once), [false; 4]);
        let twice = [
            call(LOOKUP, Some(r#"{"email":"a@b"}"#)),
            miss(LOOKUP),
            says("msg.out"),
            call(LOOKUP, Some(r#"{"email":"a@b"}"#)),
            miss(LOOKUP),
            says("msg.out"),
        ];
        assert_eq!(evaluate(&twice), [true, false, false, true, false, false]);
        let other_details = [
            call(LOOKUP, Some(r#"{"email":"a@b"}"#)),
            miss(LOOKUP),
            says("msg.out"),
            call(LOOKUP, Some(r#"{"email":"c@d"}"#)),
            miss(LOOKUP),
            says("msg.out"),
        ];
        assert_eq!(evaluate(&other_details), [false; 6]);
    }
}
