//! Personal data found in text (`privacy.pii`): email addresses, phone numbers, IBANs,
//! payment card numbers and IP addresses, each removed (`[EMAIL]`) or replaced by a stable
//! pseudonym (`[EMAIL:1f0c9a2b7d3e]`, a keyed hash of the value), so that the same person
//! stays joinable across sessions without being readable.
//!
//! Matches are checked beyond their shape where a check exists: card numbers by Luhn,
//! IBANs by their mod-97 check digits, IP addresses by parsing. Phone numbers are found
//! in international form (`+49 30 1234567`) and in the common national shapes
//! `(555) 123-4567` and `555-123-4567`; a bare run of digits is not taken for one, as it
//! is more often an id, an amount or a time.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, Mac};
use regex::Regex;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The kinds of personal data, in the order they are looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PiiKind {
    Email,
    Iban,
    Card,
    Ip,
    Phone,
}

impl PiiKind {
    pub const ALL: [PiiKind; 5] = [Self::Email, Self::Iban, Self::Card, Self::Ip, Self::Phone];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Iban => "iban",
            Self::Card => "card",
            Self::Ip => "ip",
            Self::Phone => "phone",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Email => "EMAIL",
            Self::Iban => "IBAN",
            Self::Card => "CARD",
            Self::Ip => "IP",
            Self::Phone => "PHONE",
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            Self::Email => r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
            Self::Iban => r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
            // Card networks' numbers begin with 2 to 6; ids and times in milliseconds mostly with 1.
            Self::Card => r"\b[2-6](?:[ -]?[0-9]){12,18}\b",
            Self::Ip => r"\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b|(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}",
            Self::Phone => {
                r"\+[0-9]{1,3}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{1,4}(?:[ .-]?[0-9]{2,4}){1,5}\b|\([0-9]{3}\) ?[0-9]{3}[-. ][0-9]{4}\b|\b[0-9]{3}[-.][0-9]{3}[-.][0-9]{4}\b"
            }
        }
    }

    /// Whether a match of the pattern is one: the checks beyond the shape.
    fn confirms(self, found: &str) -> bool {
        let digits: Vec<u32> = found.chars().filter_map(|c| c.to_digit(10)).collect();
        match self {
            Self::Email => true,
            Self::Iban => iban_valid(found),
            Self::Card => (13..=19).contains(&digits.len()) && luhn_valid(&digits),
            Self::Ip => found.parse::<std::net::IpAddr>().is_ok() && found.chars().filter(char::is_ascii_hexdigit).count() >= 4,
            Self::Phone => (7..=15).contains(&digits.len()),
        }
    }
}

/// What is put in place of personal data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PiiAction {
    /// `[EMAIL]`.
    Remove,
    /// `[EMAIL:1f0c9a2b7d3e]`: the same value gets the same pseudonym in one lake.
    #[default]
    Pseudonymize,
}

/// Finds and replaces personal data, counting what it replaced per kind.
#[derive(Debug)]
pub struct Pii {
    finders: Vec<(PiiKind, Regex)>,
    action: PiiAction,
    key: Vec<u8>,
    counts: [AtomicU64; 5],
}

impl Pii {
    /// A finder of `kinds`, pseudonymizing with `key` (the lake's secret).
    pub fn new(kinds: &[PiiKind], action: PiiAction, key: Vec<u8>) -> Self {
        let mut kinds = kinds.to_vec();
        kinds.sort();
        kinds.dedup();
        let finders = kinds.into_iter().map(|k| (k, Regex::new(k.pattern()).expect("the PII patterns are valid"))).collect();
        Self { finders, action, key, counts: Default::default() }
    }

    /// `text` with every piece of personal data replaced; borrowed when there was none.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for (kind, finder) in &self.finders {
            let mut replaced = 0u64;
            let out = finder.replace_all(&text, |found: &regex::Captures| {
                let found = &found[0];
                if !kind.confirms(found) {
                    return found.to_owned();
                }
                replaced += 1;
                self.placeholder(*kind, found)
            });
            if replaced > 0 {
                self.counts[*kind as usize].fetch_add(replaced, Ordering::Relaxed);
                text = Cow::Owned(out.into_owned());
            }
        }
        text
    }

    /// Whether `text` may hold anything to replace: a cheap test before a JSON text is
    /// taken apart string by string.
    pub fn may_match(&self, text: &str) -> bool {
        text.bytes().any(|b| b.is_ascii_digit() || b == b'@' || b == b':')
    }

    fn placeholder(&self, kind: PiiKind, found: &str) -> String {
        match self.action {
            PiiAction::Remove => format!("[{}]", kind.label()),
            PiiAction::Pseudonymize => {
                let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
                mac.update(kind.as_str().as_bytes());
                mac.update(b":");
                mac.update(normalized(kind, found).as_bytes());
                format!("[{}:{}]", kind.label(), &hex::encode(mac.finalize().into_bytes())[..12])
            }
        }
    }

    /// How many of each kind were replaced so far.
    pub fn counts(&self) -> Vec<(PiiKind, u64)> {
        PiiKind::ALL.iter().map(|k| (*k, self.counts[*k as usize].load(Ordering::Relaxed))).filter(|(_, n)| *n > 0).collect()
    }
}

/// One spelling per value: emails in lower case, numbers as their digits.
fn normalized(kind: PiiKind, found: &str) -> String {
    match kind {
        PiiKind::Email => found.to_lowercase(),
        PiiKind::Ip => found.to_lowercase(),
        PiiKind::Iban => found.chars().filter(|c| !c.is_whitespace()).collect(),
        PiiKind::Card | PiiKind::Phone => found.chars().filter(|c| c.is_ascii_digit() || *c == '+').collect(),
    }
}

fn luhn_valid(digits: &[u32]) -> bool {
    let sum: u32 =
        digits.iter().rev().enumerate().map(|(i, d)| if i % 2 == 1 { if d * 2 > 9 { d * 2 - 9 } else { d * 2 } } else { *d }).sum();
    sum.is_multiple_of(10)
}

/// The ISO 13616 check: the country and check digits moved to the end, letters as
/// numbers (A = 10), the whole mod 97 is 1.
fn iban_valid(iban: &str) -> bool {
    let compact: Vec<char> = iban.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let mut remainder = 0u32;
    for c in compact[4..].iter().chain(&compact[..4]) {
        let Some(value) = c.to_digit(36) else {
            return false;
        };
        remainder = if value >= 10 { (remainder * 100 + value) % 97 } else { (remainder * 10 + value) % 97 };
    }
    remainder == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pii(action: PiiAction) -> Pii {
        Pii::new(&PiiKind::ALL, action, b"lake key".to_vec())
    }

    #[test]
    fn each_kind_is_found_and_checked() {
        let p = pii(PiiAction::Remove);
        let text = "mail Jane.Doe@Example.com, call +49 30 1234567 or (555) 123-4567, IBAN DE89 3704 0044 0532 0130 00, \
                    card 4111 1111 1111 1111 from 192.168.10.20 and 2001:db8::8a2e:370:7334";
        assert_eq!(p.scrub(text), "mail [EMAIL], call [PHONE] or [PHONE], IBAN [IBAN], card [CARD] from [IP] and [IP]");
        let counts: Vec<_> = p.counts().into_iter().map(|(k, n)| (k.as_str(), n)).collect();
        assert_eq!(counts, [("email", 1), ("iban", 1), ("card", 1), ("ip", 2), ("phone", 2)]);
    }

    #[test]
    fn look_alikes_are_kept() {
        let p = pii(PiiAction::Remove);
        let text = "order 4111 1111 1111 1112 on 2024-05-20 at 12:30:45, version 1.2.3, amount 1234567, id 1767225603963, DE00 1234 5678 9012 3456 78";
        assert_eq!(p.scrub(text), text);
    }

    #[test]
    fn the_same_value_gets_the_same_pseudonym_and_another_key_another() {
        let p = pii(PiiAction::Pseudonymize);
        let a = p.scrub("a@x.org").into_owned();
        assert_eq!(p.scrub("A@X.org"), a);
        assert!(a.starts_with("[EMAIL:") && a.len() == "[EMAIL:".len() + 13, "{a}");
        assert_ne!(p.scrub("b@x.org"), a);
        assert_ne!(Pii::new(&PiiKind::ALL, PiiAction::Pseudonymize, b"other".to_vec()).scrub("a@x.org"), a);
    }
}
