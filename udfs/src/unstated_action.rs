//! `unstated_action(session, type, content, tool_params, tool_result, checks_call, reads)
//! OVER (PARTITION BY chain_shard ORDER BY chain_no, idx)` over chain events: on each call marked by `checks_call`
//! (SQL marks the consequential calls that took effect) that the agent never spelled out,
//! the values it left unsaid; null elsewhere.
//!
//! A call's values are the numbers and digit-holding texts of its arguments (ids, dates,
//! amounts) that the conversation has shown (the user or the agent wrote them), so that
//! internal ids nobody reads are left out. The call was spelled out when the agent's
//! messages since the user spoke after its last such call name at least one of them: "I
//! will cancel reservation H8Q05L for a refund of $120. Shall I?" names the cancellation;
//! "Shall I go ahead?" names nothing, and a "yes" to it agrees to nothing in particular.
//! Actions of one turn share the plan stated before them ("I will cancel H8Q05L and
//! K1NW8N"). The agent's message that reports an action may also lay out the next one
//! ("Both are cancelled. Now, order #W4597054 holds …"): an id or date it names that no
//! earlier action used is stated there too, while one of an action already taken is only
//! reported ("VA5SGQ is changed" states no bag to add to VA5SGQ), as are its short
//! numbers ("1 passenger").
//!
//! A call spelled out may still hold a choice nobody made with the user: an id (a text of
//! five or more characters with a letter and a digit) that the agent picked among others
//! of the same form that tools returned (one of two gift cards, of three flights), which
//! no message named, neither by the id nor by a digit-holding attribute of the object the
//! tools gave it in ("the Visa ending in 7447", "the $100 certificate"). An id the agent
//! looked up itself (a read call, marked by `reads`, with it as an argument) was shown
//! for what it is; an id that the changed object already holds in the same field (the
//! flights a reservation keeps when one of them changes) was not chosen.

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{HashMap, HashSet, Result};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::json::{Json, with_json};
use crate::strings::Texts;
use crate::values::{push_words, words};
use crate::window_function::Kind::{Boolean, Integer, Text};
use crate::window_function::{Param, Params, WindowFunction, boolean_argument, session_keys, starts_session};

/// The `unstated_action` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "unstated_action",
        Params(
            &[
                Param("session_key", Integer),
                Param("type", Text),
                Param("content", Text),
                Param("tool_params", Text),
                Param("tool_result", Text),
                Param("checks_call", Boolean),
                Param("reads", Boolean),
            ],
            None,
        ),
        DataType::Utf8,
        true,
        || Box::new(UnstatedActionEvaluator),
        crate::docs::doc(
            "Over chain events: on each call marked by `checks_call` whose values the conversation has shown (ids, dates, amounts in its arguments) but none of which the agent named since its last such call, those values; or else an id of the call that the agent picked among others of its form that tools returned and that no message named; null elsewhere.",
            "unstated_action(key_hash(agent, session), type, content, tool_params, tool_result, checks_call, reads) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct UnstatedActionEvaluator;

impl PartitionEvaluator for UnstatedActionEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [sessions, types, contents, params, results, checks_call, reads] = values else {
            unreachable!("the signature takes seven arguments")
        };
        let sessions = session_keys(sessions)?;
        let (types, contents) = (Texts::of(types)?, Texts::of(contents)?);
        let (params, results) = (Texts::of(params)?, Texts::of(results)?);
        let checks_call = boolean_argument(checks_call, "unstated_action", "checks_call")?;
        let reads = boolean_argument(reads, "unstated_action", "reads")?;
        let marked = |flags: &BooleanArray, i: usize| flags.is_valid(i) && flags.value(i);
        let mut out = StringBuilder::with_capacity(n, 0);
        // The words of the conversation so far, and what tools returned (both taken in
        // only when a call is checked: most sessions have none), and where the agent's
        // plan for the next action starts: the user's first message after its last action
        // (the actions of one turn share the plan stated for them).
        let (mut said, mut pending, mut plan_from, mut acted) = (String::new(), Vec::new(), 0, false);
        // The words of the agent's messages since `plan_from`, taken in up to `stated_to`:
        // the calls of one turn extend them rather than read the turn again. `reported`:
        // the words of its messages between the last action and `plan_from`, where the
        // digit-holding values of the actions taken (`done`) are only reported.
        let (mut stated, mut stated_to) = (String::new(), 0);
        let (mut reported, mut done, mut last_action) = (String::new(), HashSet::new(), None);
        // What tools returned, and the results not read into it yet: they are read only
        // for a call with an id that no message named, which few calls have.
        let (mut offered, mut unread) = (Offered::default(), Vec::new());
        for i in 0..n {
            if starts_session(&sessions, i) {
                said.clear();
                pending.clear();
                offered = Offered::default();
                unread.clear();
                plan_from = i;
                acted = false;
                done.clear();
                last_action = None;
            }
            let mut found = None;
            match types.get(i) {
                Some("msg.in") => {
                    pending.push(i);
                    if acted {
                        plan_from = i;
                        acted = false;
                    }
                }
                Some("msg.out" | "tool.result") => pending.push(i),
                Some("tool.call") if marked(checks_call, i) => {
                    for j in pending.drain(..) {
                        match types.get(j) {
                            Some("tool.result") => unread.push(j),
                            _ => push_words(&mut said, contents.get(j).unwrap_or_default()),
                        }
                    }
                    if stated_to < plan_from {
                        stated.clear();
                        reported.clear();
                        for j in last_action.map_or(plan_from, |last| last + 1)..plan_from {
                            if types.get(j) == Some("msg.out") {
                                push_words(&mut reported, contents.get(j).unwrap_or_default());
                            }
                        }
                        stated_to = plan_from;
                    }
                    for j in stated_to..i {
                        if types.get(j) == Some("msg.out") {
                            push_words(&mut stated, contents.get(j).unwrap_or_default());
                        }
                    }
                    stated_to = i;
                    let arguments = params.get(i).and_then(Json::parse);
                    if let Some(arguments) = &arguments {
                        let values = digit_values(arguments);
                        let plan = Plan { stated: &stated, reported: &reported, done: &done };
                        found = unstated(&values, &said, &plan);
                        let chosen = if found.is_none() { ids_of(arguments) } else { Vec::new() };
                        if chosen.iter().any(|(_, id)| !named(&said, id)) {
                            for j in unread.drain(..) {
                                let read = j > 0 && marked(reads, j - 1) && types.get(j - 1) == Some("tool.call");
                                let lookup = if read { params.get(j - 1) } else { None };
                                offered.add(results.get(j).unwrap_or_default(), lookup);
                            }
                            found = offered.unnamed_choice(&chosen, &said);
                        }
                        done.extend(values.into_iter().map(|(_, value)| value));
                    }
                    last_action = Some(i);
                    acted = true;
                }
                _ => {}
            }
            out.append_option(found);
        }
        Ok(Arc::new(out.finish()))
    }
}

/// What the agent said before an action, as words: its plan since the user last spoke
/// after an action, and the report of the last action before that, with the values of the
/// actions taken.
struct Plan<'a> {
    stated: &'a str,
    reported: &'a str,
    done: &'a HashSet<String>,
}

impl Plan<'_> {
    /// Whether the plan names `text` (`value` as [`words`]). The report counts only for a
    /// value of five or more characters (an order or item id, a date) that no action taken
    /// used: the next item it laid out. Its short numbers ("1 passenger", "2 flights") say
    /// nothing of the next action.
    fn names(&self, text: &str, value: &str) -> bool {
        let long = text.chars().count() >= 5;
        self.stated.contains(value) || (long && !self.done.contains(value) && self.reported.contains(value))
    }
}

/// The numbers and digit-holding texts of a call's arguments (ids, dates, amounts), each
/// with its [`words`].
fn digit_values<'a>(arguments: &Json<'a>) -> Vec<(Cow<'a, str>, String)> {
    let mut values = Vec::new();
    arguments.leaves(&mut |leaf| {
        if let Some(text) = leaf.scalar().filter(|text| text.bytes().any(|b| b.is_ascii_digit())) {
            let value = words(&text);
            values.push((text, value));
        }
    });
    values
}

/// The call's values (from [`digit_values`]) the conversation has shown, joined, when the
/// plan named none of them.
fn unstated(values: &[(Cow<str>, String)], said: &str, plan: &Plan) -> Option<String> {
    let shown: Vec<&(Cow<str>, String)> = values.iter().filter(|(_, value)| said.contains(value.as_str())).collect();
    if shown.is_empty() || shown.iter().any(|(text, value)| plan.names(text, value)) {
        return None;
    }
    Some(shown.iter().map(|(text, _)| text.as_ref()).collect::<Vec<_>>().join(", "))
}

/// Whether a message (`said`) named `value`, as whole words.
fn named(said: &str, value: &str) -> bool {
    said.contains(&words(value))
}

/// The (field, id) pairs of a call's `arguments`, sorted.
fn ids_of(arguments: &Json) -> Vec<(String, String)> {
    let mut fields = HashSet::new();
    fields_of(arguments, None, &mut fields);
    let mut ids: Vec<(String, String)> = fields.into_iter().filter(|(_, v)| is_id(v)).collect();
    ids.sort();
    ids
}

/// Whether `text` is an id: five or more characters, a letter and a digit among them.
fn is_id(text: &str) -> bool {
    text.chars().count() >= 5 && text.bytes().any(|b| b.is_ascii_digit()) && text.bytes().any(|b| b.is_ascii_alphabetic())
}

/// The form of an id: `gift_card_7480005` → `aaaa_aaaa_9999999`, `HAT136` → `AAA999`.
fn form(id: &str) -> String {
    id.chars()
        .map(|c| match c {
            '0'..='9' => '9',
            c if c.is_lowercase() => 'a',
            c if c.is_uppercase() => 'A',
            c => c,
        })
        .collect()
}

/// What the tools of a session returned, as the options a call may choose among.
#[derive(Default)]
struct Offered {
    /// The ids returned, by form.
    ids: HashMap<String, HashSet<String>>,
    /// Of each id, the digit-holding values of the objects that hold it (a card's last
    /// four digits, a certificate's amount): naming one names the id.
    attributes: HashMap<String, HashSet<String>>,
    /// What each read call looked up (its arguments, raw) and the (field, value) pairs it
    /// returned.
    lookups: Vec<(String, HashSet<(String, String)>)>,
}

impl Offered {
    /// A tool's `result`, and the arguments of the read call that returned it.
    fn add(&mut self, result: &str, lookup: Option<&str>) {
        with_json(result, |value| {
            match value {
                Some(value) => self.take(value),
                None => {
                    let token = |c: char| !(c.is_alphanumeric() || "_-#".contains(c));
                    result.split(token).filter(|t| is_id(t)).for_each(|id| self.offer(id, &[]));
                }
            }
            // Only a read call's result can hold the changed object's fields.
            if let Some(arguments) = lookup {
                let mut fields = HashSet::new();
                if let Some(value) = value {
                    fields_of(value, None, &mut fields);
                }
                self.lookups.push((arguments.to_owned(), fields));
            }
        });
    }

    /// The ids in `value`, with the attributes of the objects that hold them.
    fn take(&mut self, value: &Json) {
        match value {
            Json::Object(members) => {
                let scalars: Vec<Cow<str>> = members.iter().filter_map(|(_, v)| v.scalar()).collect();
                for id in scalars.iter().filter(|s| is_id(s)) {
                    self.offer(id, &scalars);
                }
                for (key, member) in members {
                    // An object under an id is that id's: `{"certificate_4856383": {"amount": 100}}`.
                    if is_id(key) {
                        let inner: Vec<Cow<str>> = match member {
                            Json::Object(inner) => inner.iter().filter_map(|(_, v)| v.scalar()).collect(),
                            other => other.scalar().into_iter().collect(),
                        };
                        self.offer(key, &inner);
                    }
                    // Its scalars were offered above, with their object's attributes.
                    if matches!(member, Json::Object(_) | Json::Array(_)) {
                        self.take(member);
                    }
                }
            }
            Json::Array(items) => items.iter().for_each(|item| self.take(item)),
            Json::Text(s) if is_id(s) => self.offer(s, &[]),
            _ => {}
        }
    }

    fn offer(&mut self, id: &str, attributes: &[Cow<str>]) {
        let same_form = self.ids.entry(form(id)).or_default();
        if !same_form.contains(id) {
            same_form.insert(id.to_owned());
        }
        let mut digits = attributes.iter().filter(|a| *a != id && a.bytes().any(|b| b.is_ascii_digit())).peekable();
        if digits.peek().is_none() && self.attributes.contains_key(id) {
            return;
        }
        self.attributes.entry(id.to_owned()).or_default().extend(digits.map(|a| a.as_ref().to_owned()));
    }

    /// The first id of a call ([`ids_of`] its arguments) that the agent chose among
    /// others of its form without any message (`said`) naming it, with how many there were.
    fn unnamed_choice(&self, chosen: &[(String, String)], said: &str) -> Option<String> {
        chosen.iter().find_map(|(field, id)| {
            let options = self.ids.get(&form(id)).map_or(0, |same| same.iter().filter(|other| *other != id).count() + 1);
            if options < 2 || named(said, id) || self.attributes.get(id).is_some_and(|values| values.iter().any(|v| named(said, v))) {
                return None;
            }
            let looked_up = self.lookups.iter().any(|(looked, _)| looked.contains(id.as_str()));
            // The changed object (looked up by another id of the call) holds it in that field.
            let held = self.lookups.iter().any(|(looked, returned)| {
                returned.contains(&(field.clone(), id.clone()))
                    && chosen.iter().any(|(_, other)| other != id && looked.contains(other.as_str()))
            });
            (!looked_up && !held).then(|| format!("{id} (one of {options} that no message named)"))
        })
    }
}

/// The (field, value) pairs of a JSON value: each scalar with the key it is under (the
/// nearest one, through arrays).
fn fields_of(value: &Json, key: Option<&str>, out: &mut HashSet<(String, String)>) {
    match value {
        Json::Object(members) => members.iter().for_each(|(k, v)| fields_of(v, Some(k), out)),
        Json::Array(items) => items.iter().for_each(|v| fields_of(v, key, out)),
        other => {
            if let Some(text) = other.scalar() {
                out.insert((key.unwrap_or_default().to_owned(), text.into_owned()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{AsArray, StringArray, UInt64Array};

    use super::*;

    /// `(type, text)`: a message's content, a call's params or a tool's result. Calls are
    /// checked; `tool.read` is a read call (not checked), whose result may follow.
    fn evaluate(events: &[(&str, &str)]) -> Vec<Option<String>> {
        let n = events.len();
        let text = |keep: fn(&str) -> bool| -> ArrayRef {
            Arc::new(StringArray::from(events.iter().map(|(t, text)| keep(t).then_some(*text)).collect::<Vec<_>>()))
        };
        let flags = |t: &str| -> ArrayRef { Arc::new(BooleanArray::from(events.iter().map(|e| e.0 == t).collect::<Vec<_>>())) };
        let types = events.iter().map(|(t, _)| if *t == "tool.read" { "tool.call" } else { t });
        let values = [
            Arc::new(UInt64Array::from(vec![1; n])) as ArrayRef,
            Arc::new(StringArray::from_iter_values(types)),
            text(|t| t.starts_with("msg")),
            text(|t| t == "tool.call" || t == "tool.read"),
            text(|t| t == "tool.result"),
            flags("tool.call"),
            flags("tool.read"),
        ];
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

    #[test]
    fn the_next_action_laid_out_in_the_report_of_the_last_is_stated() {
        let events = [
            ("msg.in", "Cancel #W4836353, and tell me what #W4597054 holds."),
            ("msg.out", "I will cancel #W4836353. Shall I?"),
            ("msg.in", "Yes."),
            ("tool.call", r##"{"order_id": "#W4836353"}"##),
            ("msg.out", "#W4836353 is cancelled. Now, #W4597054 holds an air purifier (item 5996159312)."),
            ("msg.in", "Return the air purifier."),
            ("tool.call", r#"{"item_ids": ["5996159312"]}"#),
        ];
        assert_eq!(evaluate(&events), vec![None; 7]);
    }

    #[test]
    fn the_report_of_an_action_states_no_next_action_on_the_same_values() {
        let events = [
            ("msg.in", "Move VA5SGQ to HAT169."),
            ("msg.out", "I will move VA5SGQ to HAT169 for $325. Shall I?"),
            ("msg.in", "Yes."),
            ("tool.call", r#"{"reservation_id": "VA5SGQ", "flight": "HAT169"}"#),
            ("msg.out", "VA5SGQ is now on HAT169: 1 passenger, 2 flights."),
            ("msg.in", "Could you also add 1 checked bag?"),
            ("tool.call", r#"{"reservation_id": "VA5SGQ", "bags": 1}"#),
        ];
        assert_eq!(evaluate(&events).last().unwrap().as_deref(), Some("1, VA5SGQ"));
    }

    const USER: &str = r#"{"payment_methods": {"gift_card_7480005": {"source": "gift_card", "amount": 128, "id": "gift_card_7480005"}, "gift_card_6276644": {"source": "gift_card", "amount": 44, "id": "gift_card_6276644"}, "credit_card_4421486": {"source": "credit_card", "last_four": "7447", "id": "credit_card_4421486"}}, "reservations": ["OBUT9V"]}"#;
    const RESERVATION: &str = r#"{"reservation_id": "OBUT9V", "flights": [{"flight_number": "HAT078", "date": "2024-05-27"}, {"flight_number": "HAT118", "date": "2024-05-28"}]}"#;

    /// A change of the return flight (HAT118 → HAT229) paid with `payment`, after `plan`.
    fn change_paid_with(plan: &str, payment: &str) -> Vec<Option<String>> {
        change_paid_with_results(plan, payment, USER, RESERVATION)
    }

    fn change_paid_with_results(plan: &str, payment: &str, user: &str, reservation: &str) -> Vec<Option<String>> {
        let call = format!(
            r#"{{"reservation_id": "OBUT9V", "flights": [{{"flight_number": "HAT078", "date": "2024-05-27"}}, {{"flight_number": "HAT229", "date": "2024-05-28"}}], "payment_id": "{payment}"}}"#
        );
        let events = [
            ("msg.in", "Please move my return flight of OBUT9V to HAT229 and pay with my gift card."),
            ("tool.read", r#"{"user_id": "sofia_kim_7287"}"#),
            ("tool.result", user),
            ("tool.read", r#"{"reservation_id": "OBUT9V"}"#),
            ("tool.result", reservation),
            ("msg.out", plan),
            ("msg.in", "Yes."),
            ("tool.call", &call),
        ];
        evaluate(&events)
    }

    #[test]
    fn a_choice_among_options_nobody_named_is_reported() {
        let out = change_paid_with("I will move OBUT9V to HAT229, paid with your gift card. Shall I?", "gift_card_6276644");
        assert_eq!(out.last().unwrap().as_deref(), Some("gift_card_6276644 (one of 2 that no message named)"));
    }

    #[test]
    fn results_recorded_as_json_texts_are_read_as_json() {
        let quote = |json: &str| serde_json::to_string(json).unwrap();
        let plan = "I will move OBUT9V to HAT229, paid with your gift card. Shall I?";
        let out = change_paid_with_results(plan, "gift_card_6276644", &quote(USER), &quote(RESERVATION));
        assert_eq!(out.last().unwrap().as_deref(), Some("gift_card_6276644 (one of 2 that no message named)"));
    }

    #[test]
    fn results_before_an_earlier_call_still_offer_choices() {
        let events = [
            ("msg.in", "Please move my return flight of OBUT9V to HAT229 and pay with my gift card."),
            ("tool.read", r#"{"user_id": "sofia_kim_7287"}"#),
            ("tool.result", USER),
            ("msg.out", "I will note reservation OBUT9V first. Shall I?"),
            ("msg.in", "Yes."),
            ("tool.call", r#"{"reservation_id": "OBUT9V"}"#),
            ("msg.in", "Now the flight."),
            ("msg.out", "I will move OBUT9V to HAT229, paid with your gift card. Shall I?"),
            ("msg.in", "Yes."),
            ("tool.call", r#"{"reservation_id": "OBUT9V", "payment_id": "gift_card_6276644"}"#),
        ];
        let out = evaluate(&events);
        assert_eq!(out[5], None);
        assert_eq!(out[9].as_deref(), Some("gift_card_6276644 (one of 2 that no message named)"));
    }

    #[test]
    fn a_choice_named_by_its_id_or_an_attribute_is_stated() {
        for plan in [
            "I will move OBUT9V to HAT229, paid with gift card 6276644. Shall I?",
            "I will move OBUT9V to HAT229, paid with the gift card holding $44. Shall I?",
        ] {
            assert_eq!(change_paid_with(plan, "gift_card_6276644").last().unwrap(), &None, "{plan}");
        }
    }

    #[test]
    fn the_only_option_of_its_form_is_no_choice() {
        // One credit card: the flights the reservation keeps are held, not chosen.
        let out = change_paid_with("I will move OBUT9V to HAT229 with your credit card. Shall I?", "credit_card_4421486");
        assert_eq!(out.last().unwrap(), &None);
    }

    #[test]
    fn an_id_the_agent_looked_up_was_shown() {
        let events = [
            ("msg.in", "Cancel my pending order with the boots."),
            ("tool.read", r#"{"user_id": "fatima_7581"}"#),
            ("tool.result", r##"{"orders": ["#W5199551", "#W2222222"]}"##),
            ("tool.read", r##"{"order_id": "#W5199551"}"##),
            ("tool.result", r##"{"order_id": "#W5199551", "status": "pending", "items": [{"name": "Hiking Boots"}]}"##),
            ("msg.out", "Your pending order has the hiking boots. Shall I cancel it?"),
            ("msg.in", "Yes."),
            ("tool.call", r##"{"order_id": "#W5199551"}"##),
        ];
        assert_eq!(evaluate(&events).last().unwrap(), &None);
    }
}
