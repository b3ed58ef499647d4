//! `thread_of(kind, text, event_id) OVER (PARTITION BY agent ORDER BY <time>)`: the threads
//! each cortex signal belongs to (cortex §4.1 and Appendix B), as a list of thread ids,
//! a thread's id being the id of the event whose topic started it.
//!
//! Over an agent's signals in time order: a `topic` starts a thread titled `text` (or
//! reopens the thread of that title); a `decision` or `wait` belongs to every open thread
//! whose title shares at least two words with `text`; a `closure` closes every open
//! thread whose title shares two words with it. Other kinds belong to none.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, ListBuilder, StringBuilder};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::cortex::match_words;
use crate::strings::{Texts, text_list_type};
use crate::window_function::Kind::Text;
use crate::window_function::{Param, Params, WindowFunction};

/// Title words a signal must share with a thread to belong to it.
const MIN_OVERLAP: usize = 2;

pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "thread_of",
        Params(&[Param("kind", Text), Param("text", Text), Param("event_id", Text)], None),
        text_list_type(),
        false,
        || Box::new(ThreadOfEvaluator),
        crate::docs::doc(
            "The threads a cortex signal belongs to: a topic starts (or reopens) the thread of its title; a decision, wait or closure belongs to the open threads whose title shares two words with its text, and a closure closes them.",
            "thread_of(kind, text, event_id) OVER (PARTITION BY agent ORDER BY <time>)",
            &[
                ("kind", "topic, decision, wait or closure"),
                ("text", "the topic's title, or the signal's text"),
                ("event_id", "the id of the signal's event"),
            ],
        ),
    )
}

struct Thread {
    id: String,
    title: String,
    words: HashSet<String>,
    open: bool,
}

#[derive(Debug)]
struct ThreadOfEvaluator;

impl PartitionEvaluator for ThreadOfEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [kinds, texts, ids] = values else {
            return exec_err!("thread_of(kind, text, event_id) takes three arguments");
        };
        let (kinds, texts, ids) = (Texts::of(kinds)?, Texts::of(texts)?, Texts::of(ids)?);
        let mut threads: Vec<Thread> = Vec::new();
        let mut out = ListBuilder::new(StringBuilder::new());
        for i in 0..n {
            let (kind, text) = (kinds.get(i).unwrap_or_default(), texts.get(i).unwrap_or_default());
            match kind {
                "topic" if !text.is_empty() => {
                    let title = text.to_lowercase();
                    let at = match threads.iter().position(|t| t.title == title) {
                        Some(at) => at,
                        None => {
                            let id = ids.get(i).unwrap_or_default().to_owned();
                            threads.push(Thread { id, words: match_words(&title), title, open: true });
                            threads.len() - 1
                        }
                    };
                    threads[at].open = true;
                    out.values().append_value(&threads[at].id);
                }
                "decision" | "wait" | "closure" => {
                    let words = match_words(text);
                    for thread in threads.iter_mut().filter(|t| t.open && t.words.intersection(&words).count() >= MIN_OVERLAP) {
                        out.values().append_value(&thread.id);
                        thread.open &= kind != "closure";
                    }
                }
                _ => {}
            }
            out.append(true);
        }
        Ok(Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray, StringArray};

    fn threads(rows: &[(&str, &str)]) -> Vec<Vec<String>> {
        let kinds: ArrayRef = Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0)));
        let texts: ArrayRef = Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1)));
        let ids: ArrayRef = Arc::new(StringArray::from_iter_values((0..rows.len()).map(|i| format!("e{i}"))));
        let out = ThreadOfEvaluator.evaluate_all(&[kinds, texts, ids], rows.len()).unwrap();
        let lists = out.as_list::<i32>();
        (0..lists.len()).map(|i| lists.value(i).as_string::<i32>().iter().map(|s| s.unwrap().to_owned()).collect()).collect()
    }

    #[test]
    fn signals_join_the_open_threads_they_share_two_words_with() {
        let got = threads(&[
            ("topic", "the database migration"),
            ("topic", "billing export"),
            ("decision", "we decided the migration runs on the new database"),
            ("wait", "waiting for billing approval"),
            ("closure", "database migration done"),
            ("decision", "migration of the database again"),
            ("topic", "The database migration"),
            ("decision", "database migration in June"),
        ]);
        let e = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(got[0], e(&["e0"]));
        assert_eq!(got[1], e(&["e1"]));
        assert_eq!(got[2], e(&["e0"]), "two words shared");
        assert_eq!(got[3], e(&[]), "one word shared is not enough");
        assert_eq!(got[4], e(&["e0"]), "the closure closes it");
        assert_eq!(got[5], e(&[]), "a closed thread takes nothing");
        assert_eq!(got[6], e(&["e0"]), "the same title reopens it");
        assert_eq!(got[7], e(&["e0"]));
    }
}
