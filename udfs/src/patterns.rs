//! Language packs: the regular expressions behind each signal category, per language.
//!
//! Packs are data files (`udfs/lang/<code>.json`), embedded at build time. The `common`
//! pack (question marks, check-mark emoji) is always on; the others are chosen by the
//! config's `patterns.language` (default en + de, as upstream).

use std::collections::HashMap;

use regex::{Regex, RegexSet};

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
}

impl Category {
    pub const ALL: [Category; 9] = [
        Category::Correction,
        Category::Question,
        Category::ShortNegative,
        Category::Dissatisfaction,
        Category::Satisfaction,
        Category::Resolution,
        Category::CompletionClaim,
        Category::SystemStateClaim,
        Category::Opinion,
    ];

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
        }
    }
}

pub const LANGUAGES: [&str; 10] = ["en", "de", "fr", "es", "pt", "it", "zh", "ja", "ko", "ru"];

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
    sets: HashMap<Category, RegexSet>,
}

impl Patterns {
    pub fn new(languages: &[String]) -> Result<Self, PatternError> {
        // (language, pattern) per category.
        let mut sources: HashMap<Category, Vec<(&str, String)>> = HashMap::new();
        let codes = std::iter::once("common").chain(languages.iter().map(String::as_str));
        for code in codes {
            let text = pack_source(code).ok_or_else(|| PatternError::UnknownLanguage(code.to_owned()))?;
            let pack: HashMap<String, Vec<String>> = serde_json::from_str(text)
                .map_err(|e| PatternError::BadPack { code: code.to_owned(), message: e.to_string() })?;
            for category in Category::ALL {
                for pattern in pack.get(category.key()).into_iter().flatten() {
                    sources.entry(category).or_default().push((code, format!("(?i){pattern}")));
                }
            }
        }
        let mut sets = HashMap::new();
        for category in Category::ALL {
            let patterns = sources.remove(&category).unwrap_or_default();
            let set = RegexSet::new(patterns.iter().map(|(_, p)| p)).map_err(|_| bad_pattern(category, &patterns))?;
            sets.insert(category, set);
        }
        Ok(Self { languages: languages.to_vec(), sets })
    }

    /// The default: English and German.
    pub fn default_languages() -> Self {
        Self::new(&["en".into(), "de".into()]).expect("built-in packs compile")
    }

    pub fn languages(&self) -> &[String] {
        &self.languages
    }

    /// Whether `text` matches any pattern of `category`.
    pub fn matches(&self, category: Category, text: &str) -> bool {
        self.sets[&category].is_match(text)
    }

    /// The detectors' view of a text, with the spec's exclusions applied.
    pub fn is(&self, category: Category, text: &str) -> bool {
        match category {
            Category::ShortNegative => {
                let trimmed = text.trim();
                trimmed.chars().count() <= 10 && self.matches(category, trimmed)
            }
            // A claim only counts in a sentence that is not a question ("Is it done?").
            Category::CompletionClaim => sentences(text)
                .any(|s| self.matches(category, s) && !self.matches(Category::Question, s)),
            // System-state claims outside code blocks, in sentences that are not opinions.
            Category::SystemStateClaim => sentences(&strip_code(text))
                .any(|s| self.matches(category, s) && !self.matches(Category::Opinion, s)),
            _ => self.matches(category, text),
        }
    }
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
    fn every_pack_compiles() {
        let all: Vec<String> = LANGUAGES.iter().map(|s| (*s).to_owned()).collect();
        assert!(Patterns::new(&all).is_ok());
        assert!(matches!(Patterns::new(&["xx".into()]), Err(PatternError::UnknownLanguage(_))));
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
    fn code_is_not_a_claim() {
        let p = Patterns::default_languages();
        assert!(p.is(Category::SystemStateClaim, "The disk usage is 45% now."));
        assert!(!p.is(Category::SystemStateClaim, "Run this:\n```\necho 'disk usage is 45'\n```"));
        assert!(!p.is(Category::SystemStateClaim, "I think the disk usage is 45%."));
    }
}
