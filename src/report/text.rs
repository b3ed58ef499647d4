//! Text as the reports print it: cut to a width at a word ([`clip`], as the detectors'
//! summaries are), and paths as shell words.

pub use tracelake_udfs::clip::clip;

/// `word` as one word of a shell command: as it is when it holds only characters no shell
/// reads specially, else in single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@%".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', "'\\''")) }
}

/// Commands that need a lake.
const LAKE_COMMANDS: [&str; 6] = ["repair", "analyze", "report", "outcomes import", "score", "sql"];

/// `text` with `--lake LAKE` added to each `` `tracelake COMMAND `` it quotes that needs a
/// lake and names none, so that a hint works when pasted.
pub fn with_lake(text: &str, lake: &str) -> String {
    let mut out = text.to_owned();
    for command in LAKE_COMMANDS {
        let quoted = format!("`tracelake {command}");
        let mut from = 0;
        while let Some(at) = out[from..].find(&quoted).map(|i| from + i + quoted.len()) {
            let rest = &out[at..];
            if rest.starts_with(" --lake") || rest.starts_with(|c: char| c.is_alphanumeric() || c == '-') {
                from = at;
                continue;
            }
            let option = format!(" --lake {}", shell_word(lake));
            out.insert_str(at, &option);
            from = at + option.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_what_a_shell_would_read() {
        assert_eq!(shell_word("/tmp/demo-lake"), "/tmp/demo-lake");
        assert_eq!(shell_word("s3://bucket/lake"), "s3://bucket/lake");
        assert_eq!(shell_word("/tmp/my lake"), "'/tmp/my lake'");
        assert_eq!(shell_word("/tmp/it's"), "'/tmp/it'\\''s'");
    }

    #[test]
    fn hints_get_the_lake() {
        assert_eq!(
            with_lake("run `tracelake repair` or `tracelake repair --yes`", "/l"),
            "run `tracelake repair --lake /l` or `tracelake repair --lake /l --yes`"
        );
        assert_eq!(with_lake("`tracelake sql --lake /x \"…\"`", "/l"), "`tracelake sql --lake /x \"…\"`", "a lake named stays");
        assert_eq!(with_lake("`tracelake outcomes import FILE`", "/my lake"), "`tracelake outcomes import --lake '/my lake' FILE`");
        assert_eq!(with_lake("`tracelake scores`", "/l"), "`tracelake scores`", "another word");
    }
}
