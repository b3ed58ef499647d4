//! Language packs: the regular expressions behind each signal category, per language.
//!
//! Packs are data files (`udfs/lang/<code>.json`), embedded at build time. The `common`
//! pack (question marks, check-mark emoji, and the tool-name categories, which do not
//! depend on a language) is always on; the others are chosen by the config's
//! `patterns.language` (default en + de, as upstream). The config's `toolPatterns` can
//! replace a tool-name category's patterns.
//!
//! With packs of several languages chosen, a pattern of one language does not count in a
//! text told by its function words to be in another ([`TextLanguage`]): the Spanish
//! `^no\b` correction does not read "No, I don't want to be transferred", nor the German
//! `moment` refusal "Yes, at the moment that works".
//!
//! Texts are matched with markers and compound words joined into one word
//! (`###STOP###`, `one-stop`, `/usr/bin/stop` hold no word `stop`), and tool names as
//! lower-case words joined by `_` (`cancelOrder`, `cancel-order` → `cancel_order`).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use regex::{Regex, RegexSet};

use crate::cortex::Cortex;

/// A category of text the detectors look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Correction,
    Question,
    ShortNegative,
    Dissatisfaction,
    Satisfaction,
    Resolution,
    CompletionClaim,
    SystemStateClaim,
    Opinion,
    /// The user corrects their own earlier input ("my mistake, the id is …").
    SelfCorrection,
    /// A message owns up to something that did not work ("however, I could not …").
    FailureAdmission,
    /// The user agrees to what the agent proposed ("yes, go ahead", "that works").
    Confirmation,
    /// A question that asks the agent to go on ("can you go ahead and process it?"): a
    /// confirmation, although a question.
    ProceedRequest,
    /// A reply that turns something down ("no", "don't", "wait").
    Refusal,
    /// The user says goodbye or that nothing more is needed.
    Closing,
    /// The user asks for something ("please", "can you", "I need").
    Request,
    /// The user leaves to come back later ("I'll get back to you once I have the details").
    Deferral,
    /// A tool's answer that it found nothing ("user not found", "no such order").
    NotFound,
    /// A sentence saying a sum was or will be charged to the user ("has been charged to
    /// your card", "will be debited"); a price ("an additional charge of $50") is none.
    Charge,
    /// Tool names: calls that change nothing (a `think` tool, an echo).
    NoopTool,
    /// Tool names: calls that change state (create, update, cancel, book, pay, send …).
    ConsequentialTool,
    /// Tool names: calls that only read (get, list, search …); never consequential.
    ReadTool,
    /// Tool names: handing the conversation to a human or another agent.
    HandoffTool,
}

impl Category {
    pub const ALL: [Category; 23] = [
        Category::Correction,
        Category::Question,
        Category::ShortNegative,
        Category::Dissatisfaction,
        Category::Satisfaction,
        Category::Resolution,
        Category::CompletionClaim,
        Category::SystemStateClaim,
        Category::Opinion,
        Category::SelfCorrection,
        Category::FailureAdmission,
        Category::Confirmation,
        Category::ProceedRequest,
        Category::Refusal,
        Category::Closing,
        Category::Request,
        Category::Deferral,
        Category::NotFound,
        Category::Charge,
        Category::NoopTool,
        Category::ConsequentialTool,
        Category::ReadTool,
        Category::HandoffTool,
    ];

    /// The tool-name categories, with their key in the config's `toolPatterns`.
    pub const TOOLS: [(Category, &'static str); 4] = [
        (Category::NoopTool, "noop"),
        (Category::ConsequentialTool, "consequential"),
        (Category::ReadTool, "readOnly"),
        (Category::HandoffTool, "handoff"),
    ];

    /// Whether this category is about tool names rather than texts.
    pub fn is_tool_name(self) -> bool {
        Self::TOOLS.iter().any(|(c, _)| *c == self)
    }

    /// The key in a pack file.
    pub fn key(self) -> &'static str {
        match self {
            Category::Correction => "correction",
            Category::Question => "question",
            Category::ShortNegative => "short_negative",
            Category::Dissatisfaction => "dissatisfaction",
            Category::Satisfaction => "satisfaction",
            Category::Resolution => "resolution",
            Category::CompletionClaim => "completion_claim",
            Category::SystemStateClaim => "system_state_claim",
            Category::Opinion => "opinion",
            Category::SelfCorrection => "self_correction",
            Category::FailureAdmission => "failure_admission",
            Category::Confirmation => "confirmation",
            Category::ProceedRequest => "proceed_request",
            Category::Refusal => "refusal",
            Category::Closing => "closing",
            Category::Request => "request",
            Category::Deferral => "deferral",
            Category::NotFound => "not_found",
            Category::Charge => "charge",
            Category::NoopTool => "noop_tool",
            Category::ConsequentialTool => "consequential_tool",
            Category::ReadTool => "read_tool",
            Category::HandoffTool => "handoff_tool",
        }
    }
}

pub const LANGUAGES: [&str; 10] = ["en", "de", "fr", "es", "pt", "it", "zh", "ja", "ko", "ru"];

/// The chosen packs' function words ("the", "und", "vous"; a pack's `function_words`),
/// each of one pack only, by which the language of a text is told ([`TextLanguage`]).
#[derive(Debug, Clone, Default)]
struct FunctionWords {
    /// Word → the index of its pack in [`LANGUAGES`].
    pack_of: HashMap<String, usize>,
    /// By index in [`LANGUAGES`]: whether a text can be told to be in that pack's language.
    has_words: [bool; LANGUAGES.len()],
}

impl FunctionWords {
    /// `packs`: each pack's index in [`LANGUAGES`] and its function words. A word of more
    /// than one chosen pack tells nothing, and is left out.
    fn new(packs: &[(usize, Vec<String>)]) -> Self {
        let mut pack_of: HashMap<String, Option<usize>> = HashMap::new();
        for (pack, words) in packs {
            for word in words {
                pack_of.entry(word.to_lowercase()).and_modify(|p| *p = p.filter(|p| p == pack)).or_insert(Some(*pack));
            }
        }
        let pack_of: HashMap<String, usize> = pack_of.into_iter().filter_map(|(word, pack)| Some((word, pack?))).collect();
        let mut has_words = [false; LANGUAGES.len()];
        for pack in pack_of.values() {
            has_words[*pack] = true;
        }
        Self { pack_of, has_words }
    }

    /// Whether packs of more than one language can be told apart.
    fn tells_apart(&self) -> bool {
        self.has_words.iter().filter(|h| **h).count() > 1
    }
}

/// The language of a text among those of the chosen packs that have function words: told
/// once per text, and only when a pattern of one of those packs matched it. A text is in a
/// pack's language when at least [`Self::MIN_WORDS`] of its words are that pack's function
/// words and at least twice as many as any other pack's. Short texts ("No.", "Nein!") and
/// mixed ones are in none, and every pack's patterns count there.
struct TextLanguage<'a> {
    text: &'a str,
    words: Option<&'a FunctionWords>,
    told: OnceCell<Option<usize>>,
}

impl<'a> TextLanguage<'a> {
    const MIN_WORDS: usize = 2;
    /// How many words of a long text are read.
    const READ_WORDS: usize = 200;

    fn new(text: &'a str, words: Option<&'a FunctionWords>) -> Self {
        Self { text, words, told: OnceCell::new() }
    }

    /// The index in [`LANGUAGES`] of the text's language, when told.
    fn get(&self) -> Option<usize> {
        *self.told.get_or_init(|| {
            let function_words = self.words?;
            let mut counts = [0usize; LANGUAGES.len()];
            let words = self.text.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).take(Self::READ_WORDS);
            for word in words {
                if let Some(&pack) = function_words.pack_of.get(word.to_lowercase().as_str()) {
                    counts[pack] += 1;
                }
            }
            let (best, most) = counts.iter().copied().enumerate().max_by_key(|(_, n)| *n)?;
            let others = counts.iter().enumerate().filter(|(i, _)| *i != best).map(|(_, n)| *n).max().unwrap_or(0);
            (most >= Self::MIN_WORDS && most >= 2 * others).then_some(best)
        })
    }
}

fn pack_source(code: &str) -> Option<&'static str> {
    Some(match code {
        "common" => include_str!("../lang/common.json"),
        "en" => include_str!("../lang/en.json"),
        "de" => include_str!("../lang/de.json"),
        "fr" => include_str!("../lang/fr.json"),
        "es" => include_str!("../lang/es.json"),
        "pt" => include_str!("../lang/pt.json"),
        "it" => include_str!("../lang/it.json"),
        "zh" => include_str!("../lang/zh.json"),
        "ja" => include_str!("../lang/ja.json"),
        "ko" => include_str!("../lang/ko.json"),
        "ru" => include_str!("../lang/ru.json"),
        _ => return None,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error("unknown language {0:?}; known: en, de, fr, es, pt, it, zh, ja, ko, ru")]
    UnknownLanguage(String),
    #[error("language pack {code}: {message}")]
    BadPack { code: String, message: String },
    #[error("unknown tool category {0:?} in `toolPatterns`; known: noop, consequential, readOnly, handoff")]
    UnknownToolCategory(String),
}

/// The error of the first of `patterns` that does not compile (compiled one by one only
/// when their set does not).
fn bad_pattern(category: Category, patterns: &[(&str, String)]) -> PatternError {
    patterns
        .iter()
        .find_map(|(code, p)| Regex::new(p).err().map(|e| PatternError::BadPack { code: (*code).to_owned(), message: e.to_string() }))
        .unwrap_or_else(|| {
            let mut codes: Vec<&str> = patterns.iter().map(|(code, _)| *code).collect();
            codes.dedup();
            PatternError::BadPack { code: codes.join("+"), message: format!("the {} patterns are too large together", category.key()) }
        })
}

/// The compiled patterns of the chosen languages, one set per category.
#[derive(Debug, Clone)]
pub struct Patterns {
    languages: Vec<String>,
    /// The config's replacements of tool-name patterns (`toolPatterns`).
    tool_patterns: BTreeMap<String, Vec<String>>,
    /// Indexed by `Category as usize`.
    sets: Vec<CategorySet>,
    /// Tells a text's language among those of the chosen packs, when there are several.
    function_words: Option<FunctionWords>,
    /// The chosen packs' cortex patterns (`cortex_*`, `mood_*`), compiled on first use as
    /// the categories are: most commands read no message through them.
    cortex_packs: Vec<HashMap<String, Vec<String>>>,
    cortex: OnceLock<Cortex>,
}

/// The patterns of one category, compiled on first use (a run needs only the categories of
/// its detectors), and the same without their word boundaries.
///
/// A Unicode `\b` makes the regex crate's lazy DFA give up on a text that is not ASCII,
/// and the set then runs on the far slower PikeVM. Without its `\b`s a pattern matches a
/// superset of the texts, on the DFA: most texts fail that cheap test, and only those
/// that pass it pay for the exact one.
#[derive(Debug, Clone)]
struct CategorySet {
    sources: Vec<String>,
    /// The index in [`LANGUAGES`] of each source's pack; `None` for `common` and the
    /// config's patterns, which hold in every language.
    packs: Vec<Option<usize>>,
    /// Whether the sources come from packs of more than one language.
    multilingual: bool,
    exact: OnceLock<RegexSet>,
    loose: OnceLock<Option<RegexSet>>,
}

impl CategorySet {
    /// `patterns`: each with the code of its pack.
    fn new(patterns: &[(&str, String)]) -> Self {
        let sources = patterns.iter().map(|(_, p)| p.clone()).collect();
        let packs: Vec<Option<usize>> = patterns.iter().map(|(code, _)| LANGUAGES.iter().position(|l| l == code)).collect();
        let first = packs.iter().flatten().next();
        let multilingual = packs.iter().flatten().any(|p| Some(p) != first);
        Self { sources, packs, multilingual, exact: OnceLock::new(), loose: OnceLock::new() }
    }

    /// The compiled set; `Err` names the first pattern that does not compile.
    fn try_exact(&self) -> Result<&RegexSet, regex::Error> {
        if let Some(set) = self.exact.get() {
            return Ok(set);
        }
        let set = RegexSet::new(&self.sources)?;
        Ok(self.exact.get_or_init(|| set))
    }

    fn exact(&self) -> &RegexSet {
        // Built-in packs compile (a test compiles every one), and the config's patterns
        // were compiled when they were read.
        self.try_exact().expect("patterns compiled before")
    }

    fn loose(&self) -> Option<&RegexSet> {
        self.loose
            .get_or_init(|| {
                let loosened: Vec<Cow<str>> = self.sources.iter().map(|p| without_word_boundaries(p)).collect();
                let changed = loosened.iter().any(|p| matches!(p, Cow::Owned(_)));
                changed.then(|| RegexSet::new(&loosened).expect("a compiled pattern compiles without its \\b"))
            })
            .as_ref()
    }

    fn is_match(&self, text: &str, language: &TextLanguage) -> bool {
        if !text.is_ascii()
            && let Some(loose) = self.loose()
            && !loose.is_match(text)
        {
            return false;
        }
        let exact = self.exact();
        if !exact.is_match(text) {
            return false;
        }
        if !self.multilingual {
            return true;
        }
        let Some(told) = language.get() else { return true };
        let told_apart = |pack: usize| language.words.is_some_and(|w| w.has_words[pack]);
        exact.matches(text).iter().any(|i| self.packs[i].is_none_or(|pack| pack == told || !told_apart(pack)))
    }
}

/// `pattern` without its `\b` assertions (an escaped backslash before a `b` is kept).
fn without_word_boundaries(pattern: &str) -> Cow<'_, str> {
    if !pattern.contains("\\b") {
        return Cow::Borrowed(pattern);
    }
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => {}
            Some(next) => {
                out.push(c);
                out.push(next);
            }
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

impl Patterns {
    pub fn new(languages: &[String]) -> Result<Self, PatternError> {
        Self::with_tool_patterns(languages, &BTreeMap::new())
    }

    /// The packs of `languages`, with the tool-name categories in `tool_patterns` (keys as
    /// in [`Category::TOOLS`]) replaced by the patterns given.
    pub fn with_tool_patterns(languages: &[String], tool_patterns: &BTreeMap<String, Vec<String>>) -> Result<Self, PatternError> {
        // (language, pattern) per category.
        let mut sources: HashMap<Category, Vec<(&str, String)>> = HashMap::new();
        let codes = std::iter::once("common").chain(languages.iter().map(String::as_str));
        let mut cortex_packs = Vec::new();
        let mut function_words = Vec::new();
        for code in codes {
            let text = pack_source(code).ok_or_else(|| PatternError::UnknownLanguage(code.to_owned()))?;
            let pack: HashMap<String, Vec<String>> =
                serde_json::from_str(text).map_err(|e| PatternError::BadPack { code: code.to_owned(), message: e.to_string() })?;
            cortex_packs.push(pack.iter().filter(|(key, _)| Cortex::reads(key)).map(|(k, v)| (k.clone(), v.clone())).collect());
            if let (Some(index), Some(words)) = (LANGUAGES.iter().position(|l| *l == code), pack.get("function_words")) {
                function_words.push((index, words.clone()));
            }
            for category in Category::ALL {
                for pattern in pack.get(category.key()).into_iter().flatten() {
                    // Texts are matched with compound words joined (`dois-je` → `dois_je`).
                    let pattern = if category.is_tool_name() { Cow::Borrowed(pattern.as_str()) } else { joined_hyphens(pattern) };
                    sources.entry(category).or_default().push((code, format!("(?i){pattern}")));
                }
            }
        }
        for (key, patterns) in tool_patterns {
            let (category, _) =
                Category::TOOLS.iter().find(|(_, k)| k == key).ok_or_else(|| PatternError::UnknownToolCategory(key.clone()))?;
            sources.insert(*category, patterns.iter().map(|p| ("toolPatterns", format!("(?i){p}"))).collect());
        }
        let mut sets = Vec::with_capacity(Category::ALL.len());
        for category in Category::ALL {
            let patterns = sources.remove(&category).unwrap_or_default();
            let set = CategorySet::new(&patterns);
            let from_config = patterns.iter().any(|(code, _)| *code == "toolPatterns");
            if from_config {
                set.try_exact().map_err(|_| bad_pattern(category, &patterns))?;
            }
            sets.push(set);
        }
        let function_words = Some(FunctionWords::new(&function_words)).filter(FunctionWords::tells_apart);
        Ok(Self {
            languages: languages.to_vec(),
            tool_patterns: tool_patterns.clone(),
            sets,
            function_words,
            cortex_packs,
            cortex: OnceLock::new(),
        })
    }

    /// The default: English and German.
    pub fn default_languages() -> Self {
        Self::new(&["en".into(), "de".into()]).expect("built-in packs compile")
    }

    pub fn languages(&self) -> &[String] {
        &self.languages
    }

    pub fn tool_patterns(&self) -> &BTreeMap<String, Vec<String>> {
        &self.tool_patterns
    }

    /// The cortex's patterns of the chosen languages.
    pub fn cortex(&self) -> &Cortex {
        // Built-in packs compile (a test compiles every one); the config adds none.
        self.cortex.get_or_init(|| Cortex::from_packs(&self.cortex_packs).expect("built-in cortex patterns compile"))
    }

    /// Whether `text` matches any pattern of `category`.
    pub fn matches(&self, category: Category, text: &str) -> bool {
        self.sets[category as usize].is_match(text, &TextLanguage::new(text, self.function_words.as_ref()))
    }

    /// The detectors' view of a text (or of a tool name, for the tool categories), with the
    /// spec's exclusions and the precision rules applied.
    pub fn is(&self, category: Category, text: &str) -> bool {
        if category.is_tool_name() {
            let name = tool_words(text);
            let no_language = TextLanguage::new(&name, None);
            let matches = |category: Category| self.sets[category as usize].is_match(&name, &no_language);
            return match category {
                Category::ConsequentialTool => matches(category) && !matches(Category::ReadTool) && !matches(Category::HandoffTool),
                _ => matches(category),
            };
        }
        let text = joined_words(text);
        let text = text.as_ref();
        // Sentences are matched in the language of their whole text.
        let language = TextLanguage::new(text, self.function_words.as_ref());
        let matches = |category: Category, s: &str| self.sets[category as usize].is_match(s, &language);
        match category {
            // "Nein." and "no!" are as short an answer as "nein".
            Category::ShortNegative => {
                let trimmed = text.trim().trim_end_matches(|c: char| c.is_ascii_punctuation() || matches!(c, '。' | '！' | '？' | '…'));
                trimmed.chars().count() <= 10 && matches(category, trimmed)
            }
            // A claim only counts in a sentence that is not a question ("Is it done?"), and
            // not in a message that owns up to a failure ("X worked. However, Y failed").
            Category::CompletionClaim => {
                sentences(text).any(|s| matches(category, s) && !matches(Category::Question, s))
                    && !matches(Category::FailureAdmission, text)
            }
            // System-state claims outside code blocks, in sentences that are not opinions.
            Category::SystemStateClaim => sentences(&strip_code(text)).any(|s| matches(category, s) && !matches(Category::Opinion, s)),
            // "No, don't go ahead" and "yes, but let me think" agree to nothing, nor does a
            // question ("is that ok?"), unless it asks the agent to go on.
            Category::Confirmation => {
                !matches(Category::Refusal, text)
                    && (sentences(text).any(|s| matches(category, s) && !matches(Category::Question, s))
                        || matches(Category::ProceedRequest, text))
            }
            _ => matches(category, text),
        }
    }
}

/// `text` with markers and compound words made single words for `\b`: a `#`, and a `-`,
/// `/`, `.` or `@` between two letters or digits, become `_` (a word character), so
/// `###STOP###`, `non-stop` and `run/stop.sh` contain no word `stop`. Borrowed when
/// nothing changes, as for most texts.
fn joined_words(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let joins = |i: usize| match bytes[i] {
        b'#' => true,
        b'-' | b'/' | b'.' | b'@' => {
            let before = text[..i].chars().next_back().is_some_and(char::is_alphanumeric);
            before && text[i + 1..].chars().next().is_some_and(char::is_alphanumeric)
        }
        _ => false,
    };
    let marks = |b: &u8| matches!(b, b'#' | b'-' | b'/' | b'.' | b'@');
    let Some(first) = bytes.iter().enumerate().filter(|(_, b)| marks(b)).map(|(i, _)| i).find(|&i| joins(i)) else {
        return Cow::Borrowed(text);
    };
    let mut joined = bytes.to_vec();
    for (i, byte) in joined.iter_mut().enumerate().skip(first) {
        // Only ASCII bytes are replaced, so the text stays valid UTF-8.
        if marks(byte) && joins(i) {
            *byte = b'_';
        }
    }
    Cow::Owned(String::from_utf8(joined).expect("ASCII bytes replaced by ASCII"))
}

/// A pattern's hyphens between two letters made `_`, as [`joined_words`] makes them in texts.
fn joined_hyphens(pattern: &str) -> Cow<'_, str> {
    let chars: Vec<char> = pattern.chars().collect();
    if !chars.windows(3).any(|w| w[1] == '-' && w[0].is_alphabetic() && w[2].is_alphabetic()) {
        return Cow::Borrowed(pattern);
    }
    let joined =
        chars
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if c == '-' && i > 0 && i + 1 < chars.len() && chars[i - 1].is_alphabetic() && chars[i + 1].is_alphabetic() {
                    '_'
                } else {
                    c
                }
            })
            .collect();
    Cow::Owned(joined)
}

/// A tool name as lower-case words joined by `_`: `cancelOrder`, `Cancel-Order` and
/// `cancel order` all become `cancel_order`. Borrowed when it is one already.
fn tool_words(name: &str) -> Cow<'_, str> {
    let name = name.trim();
    if name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 4);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            out.push('_');
        }
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
        previous = Some(c);
    }
    Cow::Owned(out)
}

/// Sentences with their final punctuation.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(['.', '!', '?', '\n', '。', '！', '？']).filter(|s| !s.trim().is_empty())
}

/// `text` without fenced (```) or inline (`) code.
fn strip_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split("```").enumerate() {
        if i % 2 == 0 {
            for (j, piece) in part.split('`').enumerate() {
                if j % 2 == 0 {
                    out.push_str(piece);
                }
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_listed_in_their_order() {
        assert!(Category::ALL.iter().enumerate().all(|(i, c)| *c as usize == i));
    }

    #[test]
    fn every_pack_compiles() {
        let all: Vec<String> = LANGUAGES.iter().map(|s| (*s).to_owned()).collect();
        let patterns = Patterns::new(&all).unwrap();
        for category in Category::ALL {
            let set = &patterns.sets[category as usize];
            assert!(set.try_exact().is_ok(), "{category:?}");
            set.loose();
        }
        Cortex::from_packs(&patterns.cortex_packs).expect("every cortex pattern compiles");
        assert!(matches!(Patterns::new(&["xx".into()]), Err(PatternError::UnknownLanguage(_))));
    }

    #[test]
    fn a_text_is_told_by_the_function_words_of_one_pack() {
        let words = |list: &str| list.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let function_words = FunctionWords::new(&[(0, words("the you die")), (1, words("und ich die"))]);
        assert!(function_words.tells_apart());
        let told = |text| TextLanguage::new(text, Some(&function_words)).get();
        assert_eq!(told("The book you ordered"), Some(0));
        assert_eq!(told("Ich und du"), Some(1));
        assert_eq!(told("die die die"), None, "a word of both packs tells nothing");
        assert_eq!(told("The one"), None, "one word is too few");
        assert_eq!(told("the you und ich"), None, "mixed");
        assert_eq!(told("the you you und"), Some(0), "three against one");
        assert!(!FunctionWords::new(&[(0, words("the you"))]).tells_apart());
    }

    #[test]
    fn word_boundaries_are_loosened_and_other_escapes_kept() {
        assert_eq!(without_word_boundaries(r"\b(?:nein|\\b|\B\d)\b"), r"(?:nein|\\b|\B\d)");
        assert!(matches!(without_word_boundaries(r"^(?:no|stop)$"), Cow::Borrowed(_)));
    }

    #[test]
    fn texts_that_are_not_ascii_match_as_the_exact_patterns_do() {
        let all: Vec<String> = LANGUAGES.iter().map(|s| (*s).to_owned()).collect();
        let patterns = Patterns::new(&all).unwrap();
        let texts = [
            "Das ist falsch, Jürgen",
            "Überfalsch wäre übertrieben",
            "Нет, это неправильно",
            "これは違います",
            "Ça marche, merci",
            "wrongé",
        ];
        for category in Category::ALL {
            let set = &patterns.sets[category as usize];
            for text in texts {
                let language = TextLanguage::new(text, None);
                assert_eq!(set.is_match(text, &language), set.exact().is_match(text), "{category:?} on {text:?}");
            }
        }
        assert!(patterns.matches(Category::Correction, "Das ist falsch, Jürgen"));
        assert!(!patterns.matches(Category::Correction, "Überfalsch wäre übertrieben"));
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_named_by_its_pack() {
        let patterns = [("en", "(?i)fine".to_owned()), ("de", "(?i)(offen".to_owned())];
        assert!(RegexSet::new(patterns.iter().map(|(_, p)| p)).is_err());
        match bad_pattern(Category::Question, &patterns) {
            PatternError::BadPack { code, message } => {
                assert_eq!(code, "de");
                assert!(message.contains("unclosed group"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn markers_and_compound_words_hold_no_pattern_word() {
        let p = Patterns::default_languages();
        assert!(p.is(Category::Correction, "stop, that is wrong"));
        for text in ["Thanks! ###STOP###", "a non-stop flight", "a one-stop shop", "run /usr/bin/stop", "see stop.sh"] {
            assert!(!p.is(Category::Correction, text), "{text}");
        }
        // A hyphenated pattern still finds its hyphenated text.
        let fr = Patterns::new(&["fr".into()]).unwrap();
        assert!(fr.is(Category::Question, "dois-je le supprimer"));
    }

    #[test]
    fn a_question_mark_that_ends_a_sentence_asks_wherever_the_sentence_stands() {
        let p = Patterns::default_languages();
        for text in [
            "Would you like the refund on PayPal or a gift card? Let me know your preference!",
            "Could you please provide your email address? If you don't remember it, your zip code works too.",
            "Is this the order you mean?** It was delivered on May 2.",
            "Refund to the card on file (ending in 7447)? It takes 5 days.",
            "Is that the one?\nThanks",
            "You paid twice?! I will look into it.",
        ] {
            assert!(p.is(Category::Question, text), "{text}");
        }
        let zh = Patterns::new(&["zh".into()]).unwrap();
        assert!(zh.is(Category::Question, "取消这个订单？我马上处理。"));
        for text in ["See https://shop.example/orders?id=5 for the details.", "The order is cancelled."] {
            assert!(!p.is(Category::Question, text), "{text}");
        }
    }

    #[test]
    fn a_short_negative_may_end_in_punctuation() {
        let p = Patterns::default_languages();
        for text in ["no", "Nein.", "no!", " Nope… ", "Stopp!!"] {
            assert!(p.is(Category::ShortNegative, text), "{text}");
        }
        for text in ["No, the other one.", "Nein, Freitag.", "...", "know."] {
            assert!(!p.is(Category::ShortNegative, text), "{text}");
        }
        let ja = Patterns::new(&["ja".into()]).unwrap();
        assert!(ja.is(Category::ShortNegative, "いいえ。"));
    }

    #[test]
    fn tool_names_are_read_as_words() {
        let p = Patterns::default_languages();
        for name in ["cancel_reservation", "cancelOrder", "Update-Address", "send email", "book_reservation"] {
            assert!(p.is(Category::ConsequentialTool, name), "{name}");
        }
        for name in ["get_booking_details", "search_flights", "transfer_to_human_agents", "think", "bookmark", "list_orders_to_cancel"] {
            assert!(!p.is(Category::ConsequentialTool, name), "{name}");
        }
        assert!(p.is(Category::NoopTool, "think") && p.is(Category::NoopTool, "Sequential-Thinking"));
        assert!(p.is(Category::HandoffTool, "transfer_to_human_agents") && p.is(Category::HandoffTool, "escalateToHuman"));
    }

    #[test]
    fn tool_patterns_replace_a_category_and_unknown_ones_are_named() {
        let custom = BTreeMap::from([("consequential".to_owned(), vec!["^ship_".to_owned()])]);
        let p = Patterns::with_tool_patterns(&["en".into()], &custom).unwrap();
        assert!(p.is(Category::ConsequentialTool, "ship_order"));
        assert!(!p.is(Category::ConsequentialTool, "cancel_order"));
        let unknown = BTreeMap::from([("writes".to_owned(), vec!["x".to_owned()])]);
        assert!(
            matches!(Patterns::with_tool_patterns(&["en".into()], &unknown), Err(PatternError::UnknownToolCategory(k)) if k == "writes")
        );
    }

    #[test]
    fn a_refusal_confirms_nothing_and_an_admission_is_no_claim() {
        let p = Patterns::default_languages();
        assert!(p.is(Category::Confirmation, "Yes, please go ahead."));
        assert!(p.is(Category::Confirmation, "Ja, bitte."));
        assert!(!p.is(Category::Confirmation, "No, don't proceed yet."));
        assert!(!p.is(Category::Confirmation, "I'm not sure, what are my options?"));
        assert!(p.is(Category::CompletionClaim, "Successfully deployed."));
        assert!(!p.is(Category::CompletionClaim, "I changed X successfully. However, I could not update Y."));
    }

    #[test]
    fn confirmations_in_ordinary_words_and_what_is_none() {
        let all: Vec<String> = LANGUAGES.iter().map(|s| (*s).to_owned()).collect();
        let p = Patterns::new(&all).unwrap();
        let confirmations = [
            "You can process the refund to my card. Please proceed.",
            "that works",
            "That works for me, thanks.",
            "sounds good, do it",
            "Sounds great!",
            "correct, go ahead",
            "ok",
            "Okay.",
            "Alright, let’s do it.",
            "That’s right.",
            "Yes, that’s correct. Please proceed with the cancellations.",
            "Got it. $107.09 sounds reasonable. Can you go ahead and process it?",
            "Sure, go for it.",
            "Yes, please cancel both orders. Also, do I have any other flights?",
            "I confirm.",
            "Of course, please continue.",
            "Klingt gut, machen Sie weiter.",
            "Ça marche, allez-y.",
            "Me parece bien.",
            "Pode continuar.",
            "Va bene, prosegui.",
            "好的，请继续。",
            "はい、お願いします。",
            "네, 진행해 주세요.",
            "Да, давайте.",
            // Approving the details the agent laid out.
            "Everything looks good! I'd like to use the travel certificate for this booking.",
            "That seems right to me.",
            "All is correct.",
            "Sieht alles gut aus.",
            "Ça me semble correct.",
            "Todo se ve bien.",
            "Mi sembra tutto a posto.",
            "Está tudo ótimo.",
            "看起来没问题。",
            "よさそう！",
            "문제없어요.",
            // Agreeing reluctantly.
            "Ugh, fine, just put it on the gift card then. Let’s get this done.",
            "Fine.",
            "Fine by me.",
            "Let's just get it over with.",
            "Von mir aus.",
            "Meinetwegen, machen Sie das.",
            // Telling the agent to go on with what it proposed.
            "Continue with the upgrades for the other orders for now.",
            "Please carry on.",
            "Continúe con las otras.",
            "Continue com os outros pedidos.",
            "他の注文を続けてください。",
        ];
        for text in confirmations {
            assert!(p.is(Category::Confirmation, text), "should confirm: {text}");
        }
        let not_confirmations = [
            "Is that ok?",
            "How long does the refund take?",
            "Would that be okay with the airline?",
            "wait",
            "Wait, what would the total be?",
            "no",
            "No, don’t go ahead.",
            "Let me think about it.",
            "Okay, let me think about it first.",
            "Yes, but hold on, I changed my mind.",
            "Not yet.",
            "I want to cancel my booking.",
            "That's not right.",
            "Moment, lass mich überlegen.",
            "Attendez, je vais réfléchir.",
            "Déjame pensar.",
            "让我想想。",
            "ちょっと待って。",
            "잠깐만요.",
            "Нет, подождите.",
            "That doesn't look right.",
            "Does everything look correct to you?",
            "Everything looks good, but hold on, I changed my mind.",
            "I'm fine, thanks.",
            "Is that fine?",
            "Fine, but wait, what would it cost?",
            "I want to continue shopping later.",
            "Should I continue?",
        ];
        for text in not_confirmations {
            assert!(!p.is(Category::Confirmation, text), "should not confirm: {text}");
        }
    }

    #[test]
    fn lookups_that_find_nothing() {
        let p = Patterns::default_languages();
        for text in
            ["Error: user not found", "No such order #W123", "customer does not exist", "Error: 0 results", "Benutzer nicht gefunden"]
        {
            assert!(p.is(Category::NotFound, text), "{text}");
        }
        for text in ["Error: payment method should be the original one", "not enough seats", "Error: gift card balance is not enough"] {
            assert!(!p.is(Category::NotFound, text), "{text}");
        }
    }

    #[test]
    fn code_is_not_a_claim() {
        let p = Patterns::default_languages();
        assert!(p.is(Category::SystemStateClaim, "The disk usage is 45% now."));
        assert!(!p.is(Category::SystemStateClaim, "Run this:\n```\necho 'disk usage is 45'\n```"));
        assert!(!p.is(Category::SystemStateClaim, "I think the disk usage is 45%."));
    }
}
