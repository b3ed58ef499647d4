//! Values in texts, as the detectors compare them.

/// Lower-case words separated by single spaces, with a space at each end, so that a value
/// is found as whole words: ` credit card 7447 `.
pub(crate) fn words(text: &str) -> String {
    let mut out = String::new();
    push_words(&mut out, text);
    out
}

/// Appends [`words`]`(text)` to `out`, without a string of its own: sessions gather the
/// words of every message and result they read.
pub(crate) fn push_words(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push(' ');
    let mut spaced = true;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            } else {
                out.extend(c.to_lowercase());
            }
            spaced = false;
        } else if !spaced {
            out.push(' ');
            spaced = true;
        }
    }
    if !spaced {
        out.push(' ');
    }
}

/// Sentences: a text cut after `.`, `!` or `?` before a space (not inside `$269.54`) and
/// at line ends.
pub(crate) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut cuts = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        let ends = b == b'\n' || (matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace));
        if ends {
            cuts.push(&text[start..=i]);
            start = i + 1;
        }
    }
    cuts.push(&text[start..]);
    cuts.into_iter().filter(|s| !s.trim().is_empty())
}

/// A number in hundredths (`54.2` is 5420), so that amounts compare exactly; `None` for a
/// number too large to hold.
pub(crate) fn hundredths(value: f64) -> Option<i64> {
    (value.is_finite() && value.abs() < 1e15).then(|| (value * 100.0).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::{push_words, words};

    #[test]
    fn words_are_lower_case_and_single_spaced_in_any_script() {
        assert_eq!(words("Card 7447, exp. 05/26!"), " card 7447 exp 05 26 ");
        assert_eq!(words("  Café AU-LAIT  "), " café au lait ");
        assert_eq!(words("ÉTÉ İstanbul — Σοφία"), " été i\u{307}stanbul σοφία ");
        assert_eq!(words("東京 2024"), " 東京 2024 ");
        assert_eq!(words(""), " ");
        assert_eq!(words("..."), " ");
    }

    #[test]
    fn words_appended_equal_words_joined() {
        let texts = ["Card 7447, exp. 05/26!", "", "...", "ÉTÉ İstanbul — Σοφία", "a", "東京 2024"];
        let mut joined = String::from("x");
        for text in texts {
            push_words(&mut joined, text);
        }
        assert_eq!(joined, format!("x{}", texts.iter().map(|t| words(t)).collect::<String>()));
    }
}
