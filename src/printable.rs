//! Text that others wrote (survey comments, chat, agent names and episode
//! ids read from recordings), made safe to print on a terminal: control
//! characters, which could move the cursor, clear the screen or rewrite a
//! line already printed, and the invisible characters that reorder or hide
//! text, are shown as escapes instead of acting.

use std::borrow::Cow;

/// `text` with every control character (line breaks included: stored text
/// prints on its own line) and every bidirectional or zero-width format
/// character written as a Rust-style escape (`\u{1b}`, `\n`).
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_kept_and_control_characters_are_escaped() {
        assert!(matches!(
            printable("great help, ünïcode ok"),
            Cow::Borrowed(_)
        ));
        assert_eq!(printable("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("line\nforged line"), "line\\nforged line");
        assert_eq!(printable("nul\0"), "nul\\u{0}");
        assert_eq!(printable("abc\u{202e}fed"), "abc\\u{202e}fed");
    }
}
