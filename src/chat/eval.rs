//! Scoring an intent parser on labelled messages: JSON Lines of
//! `{"text": ..., "flag": ...}` (more keys allowed), accuracy per flag.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::intent::{Intent, IntentParser};

/// One labelled message.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Labelled {
    /// The message.
    pub text: String,
    /// Its flag.
    pub flag: Intent,
}

/// A labelled file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}: line {line}: {message}")]
pub struct LabelsError {
    /// The file.
    pub file: String,
    /// The 1-based line (0: the file itself).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Reads a labelled JSON Lines file (blank lines skipped).
pub fn read_labelled(path: &Path) -> Result<Vec<Labelled>, LabelsError> {
    let err = |line: usize, message: String| LabelsError {
        file: path.display().to_string(),
        line,
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(0, e.to_string()))?;
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let labelled: Labelled =
            serde_json::from_str(line).map_err(|e| err(k + 1, e.to_string()))?;
        out.push(labelled);
    }
    Ok(out)
}

/// Accuracy on one flag: the share of its messages given that flag.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FlagScore {
    /// Messages labelled with the flag.
    pub count: usize,
    /// Of those, given the flag by the parser.
    pub correct: usize,
    /// `correct / count` (1 for a flag no message has).
    pub accuracy: f64,
}

/// Per flag, and the confusions (label -> parsed -> count).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scores {
    /// Per flag, by name.
    pub flags: BTreeMap<&'static str, FlagScore>,
    /// Every message.
    pub overall: FlagScore,
    /// Messages given the wrong flag: (text, label, parsed).
    pub mistakes: Vec<(String, Intent, Intent)>,
}

/// Scores `parser` on `messages`.
pub fn score(parser: &dyn IntentParser, messages: &[Labelled]) -> Scores {
    let mut flags = BTreeMap::new();
    let mut mistakes = Vec::new();
    for flag in Intent::ALL {
        let of: Vec<&Labelled> = messages.iter().filter(|m| m.flag == flag).collect();
        let correct = of.iter().filter(|m| parser.parse(&m.text) == flag).count();
        flags.insert(flag.name(), ratio(correct, of.len()));
    }
    for m in messages {
        let got = parser.parse(&m.text);
        if got != m.flag {
            mistakes.push((m.text.clone(), m.flag, got));
        }
    }
    let correct = messages.len() - mistakes.len();
    Scores {
        flags,
        overall: ratio(correct, messages.len()),
        mistakes,
    }
}

fn ratio(correct: usize, count: usize) -> FlagScore {
    FlagScore {
        count,
        correct,
        accuracy: if count == 0 {
            1.0
        } else {
            correct as f64 / count as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::intent::RuleParser;

    #[test]
    fn the_rules_reach_ninety_percent_on_every_flag_of_both_sets() {
        for file in ["tests/chat/messages.jsonl", "tests/chat/heldout.jsonl"] {
            let messages = read_labelled(Path::new(file)).unwrap();
            let scores = score(&RuleParser, &messages);
            for (flag, s) in &scores.flags {
                assert!(s.count > 0 && s.accuracy >= 0.9, "{file}: {flag}: {s:?}");
            }
        }
        assert!(
            read_labelled(Path::new("tests/chat/messages.jsonl"))
                .unwrap()
                .len()
                >= 200
        );
    }

    #[test]
    fn a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        std::fs::write(
            &path,
            "{\"text\": \"yes\", \"flag\": \"accept\"}\n{\"text\": \"x\", \"flag\": \"maybe\"}\n",
        )
        .unwrap();
        let err = read_labelled(&path).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().contains("maybe"), "{err}");
    }
}
