//! The cortex's patterns (threads, decisions and mood), read from the language packs'
//! `cortex_*` and `mood_*` keys: what a message decides, closes or waits for, which topic it
//! turns to, and its mood. Unlike the signal categories these need where a pattern matched
//! (a decision's context, a topic's title, the last mood), so each is its own regex.

use std::collections::HashMap;

use regex::{Regex, RegexSet, RegexSetBuilder};

/// The moods a message can have besides `neutral`, in the order the cortex tries them.
pub const MOODS: [&str; 5] = ["frustrated", "excited", "tense", "productive", "exploratory"];

/// Characters of a decision's context before and after its match (cortex §4.2).
const BEFORE: usize = 50;
const AFTER: usize = 100;
/// The most memory the lazy DFA of all patterns at once may take.
const SET_DFA_BYTES: usize = 32 << 20;

#[derive(Debug, Clone, Default)]
pub struct Cortex {
    decision: Vec<Regex>,
    closure: Vec<Regex>,
    wait: Vec<Regex>,
    topic: Vec<Regex>,
    /// What a topic phrase may not be followed by ("get back to you" turns to no topic).
    not_topic: Vec<Regex>,
    moods: Vec<(&'static str, Regex)>,
    /// Every pattern above but `not_topic`, to tell in one pass the many texts none matches.
    any: Option<RegexSet>,
}

impl Cortex {
    /// The patterns of `packs` (each a pack's keys and patterns), case-insensitive; `Err`
    /// names the first that does not compile.
    pub fn from_packs<'a>(packs: impl IntoIterator<Item = &'a HashMap<String, Vec<String>>>) -> Result<Self, regex::Error> {
        let mut cortex = Self::default();
        let mut every: Vec<String> = Vec::new();
        for pack in packs {
            let read = pack.iter().filter(|(key, _)| Self::reads(key) && key.as_str() != "cortex_not_topic");
            every.extend(read.flat_map(|(_, patterns)| patterns.iter().map(|p| format!("(?i){p}"))));
            let compiled = |key: &str| -> Result<Vec<Regex>, regex::Error> {
                pack.get(key).into_iter().flatten().map(|p| Regex::new(&format!("(?i){p}"))).collect()
            };
            cortex.decision.extend(compiled("cortex_decision")?);
            cortex.closure.extend(compiled("cortex_closure")?);
            cortex.wait.extend(compiled("cortex_wait")?);
            cortex.topic.extend(compiled("cortex_topic")?);
            cortex.not_topic.extend(compiled("cortex_not_topic")?);
            for mood in MOODS {
                cortex.moods.extend(compiled(&format!("mood_{mood}"))?.into_iter().map(|r| (mood, r)));
            }
        }
        if !every.is_empty() {
            // The set's lazy DFA needs room for the Unicode word classes of all patterns at
            // once; with the default 2 MB it thrashes and runs ten times slower than the
            // patterns one by one.
            cortex.any = Some(RegexSetBuilder::new(every).dfa_size_limit(SET_DFA_BYTES).build()?);
        }
        Ok(cortex)
    }

    /// Whether a pack's `key` holds cortex patterns.
    pub fn reads(key: &str) -> bool {
        key.starts_with("cortex_") || key.starts_with("mood_")
    }

    /// Whether any cortex pattern matches `text`: false means no decision, wait, topic or
    /// closure, and a neutral mood.
    pub fn matches_any(&self, text: &str) -> bool {
        self.any.as_ref().is_some_and(|set| set.is_match(text))
    }

    /// What `text` decides: its first decision match with the 50 characters before and the
    /// 100 after, on one line.
    pub fn decision(&self, text: &str) -> Option<String> {
        let found = first_match(&self.decision, text)?;
        Some(window(text, found.start(), found.end(), BEFORE, AFTER))
    }

    /// Whether `text` closes something ("done", "fixed", "erledigt").
    pub fn closes(&self, text: &str) -> bool {
        self.closure.iter().any(|r| r.is_match(text))
    }

    /// What `text` waits for: from its first wait match, 100 characters on one line.
    pub fn wait(&self, text: &str) -> Option<String> {
        let found = first_match(&self.wait, text)?;
        Some(window(text, found.start(), found.end(), 0, AFTER))
    }

    /// The topic `text` turns to ("back to the deployment"): the words after the phrase,
    /// whole (a word the pattern's length limit cut is left out), unless they are a person
    /// ("get back to you").
    pub fn topic(&self, text: &str) -> Option<String> {
        let found = self.topic.iter().filter_map(|r| r.captures(text)?.get(1)).min_by_key(regex::Match::start)?;
        let cut_in_a_word = text[found.end()..].chars().next().is_some_and(char::is_alphanumeric);
        let mut words: Vec<&str> = found.as_str().split_whitespace().collect();
        if cut_in_a_word && words.len() > 1 {
            words.pop();
        }
        let title = words.join(" ");
        let is_person = self.not_topic.iter().any(|r| r.is_match(&title));
        (!title.is_empty() && !is_person).then_some(title)
    }

    /// The mood of `text`: the mood whose match starts last wins, `neutral` when none does.
    pub fn mood(&self, text: &str) -> &'static str {
        let mut last: Option<(usize, &'static str)> = None;
        // Most texts have no mood: a match is looked for before every match is.
        for (mood, regex) in self.moods.iter().filter(|(_, r)| r.is_match(text)) {
            for found in regex.find_iter(text) {
                if last.is_none_or(|(at, _)| found.start() > at) {
                    last = Some((found.start(), mood));
                }
            }
        }
        last.map_or("neutral", |(_, mood)| mood)
    }
}

fn first_match<'t>(patterns: &[Regex], text: &'t str) -> Option<regex::Match<'t>> {
    patterns.iter().filter_map(|r| r.find(text)).min_by_key(regex::Match::start)
}

/// `text` from `before` characters before `start` to `after` characters after `end`, on one
/// line.
fn window(text: &str, start: usize, end: usize, before: usize, after: usize) -> String {
    let from = if before == 0 { start } else { text[..start].char_indices().rev().nth(before - 1).map_or(0, |(i, _)| i) };
    let to = text[end..].char_indices().nth(after).map_or(text.len(), |(i, _)| end + i);
    // A word the limits cut is left out whole, and `…` says the message goes on: the spec's
    // window cut "the delivered orders" to "e delivered orders".
    let in_word = |at: usize| {
        text[..at].chars().next_back().is_some_and(|c| !c.is_whitespace()) && text[at..].chars().next().is_some_and(|c| !c.is_whitespace())
    };
    let from = if in_word(from) { text[from..start].find(char::is_whitespace).map_or(start, |i| from + i) } else { from };
    let to = if in_word(to) { text[end..to].rfind(char::is_whitespace).map_or(end, |i| end + i) } else { to };
    let words = text[from..to].split_whitespace().collect::<Vec<_>>().join(" ");
    let goes_on = |rest: &str| !rest.trim().is_empty();
    let (open, close) = (if from < start && goes_on(&text[..from]) { "…" } else { "" }, if goes_on(&text[to..]) { "…" } else { "" });
    format!("{open}{words}{close}")
}

/// The words of a text as thread matching counts them (cortex Appendix B): lower case,
/// longer than two characters. Words are runs of letters and digits, so punctuation
/// does not hide one ("deployment," is "deployment").
pub fn match_words(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 2).map(str::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cortex(codes: &[&str]) -> Cortex {
        let packs: Vec<HashMap<String, Vec<String>>> = codes
            .iter()
            .map(|code| {
                let text = match *code {
                    "en" => include_str!("../lang/en.json"),
                    "de" => include_str!("../lang/de.json"),
                    _ => unreachable!(),
                };
                serde_json::from_str(text).unwrap()
            })
            .collect();
        Cortex::from_packs(&packs).unwrap()
    }

    #[test]
    fn decisions_keep_their_context() {
        let c = cortex(&["en", "de"]);
        let before = "Thanks for the long list of ideas about the delivered orders, I read them all. ";
        let after = "Ask finance whether the invoices of the spring quarter can move with it and tell the whole team by Friday please.";
        let text = format!("{before}We decided to move the billing service to Postgres next week. {after}");
        let what = c.decision(&text).unwrap();
        // 50 characters before "decided" start inside "ideas" and 100 after end inside
        // "quarter": both words are left out whole.
        assert_eq!(
            what,
            "…about the delivered orders, I read them all. We decided to move the billing service to Postgres next week. Ask finance whether the invoices of the spring…"
        );
        let first_word = "x".repeat(80);
        let what = c.decision(&format!("{first_word} decided to go")).unwrap();
        assert_eq!(what, "…decided to go", "a word longer than the window is left out");
        let ends_in_spaces = format!("We decided to go with {}.{}", "z".repeat(80), " ".repeat(20));
        assert!(!c.decision(&ends_in_spaces).unwrap().ends_with('…'), "nothing but spaces after the window");
        assert_eq!(
            c.decision("Wir haben beschlossen, das Release zu verschieben.").as_deref(),
            Some("Wir haben beschlossen, das Release zu verschieben.")
        );
        assert_eq!(c.decision("nothing to see"), None);
    }

    #[test]
    fn the_last_mood_wins() {
        let c = cortex(&["en", "de"]);
        assert_eq!(c.mood("this sucks, but now it works"), "productive");
        assert_eq!(c.mood("it works, but this sucks"), "frustrated");
        assert_eq!(c.mood("Vorsicht, das ist heikel"), "tense");
        assert_eq!(c.mood("hello"), "neutral");
    }

    #[test]
    fn topics_waits_and_closures() {
        let c = cortex(&["en", "de"]);
        assert_eq!(c.topic("ok, back to the database migration plan").as_deref(), Some("the database migration plan"));
        assert_eq!(c.topic("Jetzt zu der Rechnung für März").as_deref(), Some("der Rechnung für März"));
        assert_eq!(c.wait("I'm waiting for the security review.").as_deref(), Some("waiting for the security review."));
        assert_eq!(c.wait("I need the logs first.").as_deref(), Some("need the logs first."));
        assert_eq!(c.wait("I need the first name and date of birth."), None, "a first name is no wait");
        assert_eq!(
            c.topic("Let's get back to booking that flight from San Francisco to New York.").as_deref(),
            Some("booking that flight from San")
        );
        assert_eq!(c.topic("I'll get back to you with the reservation ID."), None, "a person is no topic");
        assert_eq!(c.topic("I can answer any questions regarding that."), None, "nor is a pronoun alone");
        assert_eq!(c.topic("Back to that flight booking.").as_deref(), Some("that flight booking"));
        assert_eq!(c.topic("Gibt es Neues bzgl. dies?"), None, "nor a German pronoun alone");
        assert!(c.closes("The login bug is fixed") && c.closes("ist erledigt") && !c.closes("the networks are slow"));
    }

    #[test]
    fn a_text_no_pattern_matches_is_told_apart_in_one_pass() {
        let c = cortex(&["en", "de"]);
        for text in ["We decided to ship", "waiting for the review", "back to the billing export", "it works", "Nice!", "Vorsicht"] {
            assert!(c.matches_any(text), "{text}");
        }
        for text in ["Here is the summary of the report.", "The folder holds 4 KB.", ""] {
            assert!(!c.matches_any(text), "{text}");
            assert!(c.decision(text).is_none() && c.wait(text).is_none() && c.topic(text).is_none() && !c.closes(text));
            assert_eq!(c.mood(text), "neutral");
        }
        assert!(!Cortex::default().matches_any("We decided to ship"), "no packs, no match");
    }

    #[test]
    fn words_are_matched_without_punctuation_and_short_words() {
        let words = match_words("Deploy the API, then: deployment!");
        assert!(words.contains("deployment") && words.contains("api") && words.contains("the") && !words.contains("then:"));
    }
}
