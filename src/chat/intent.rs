//! Intent flags of chat messages (Gnomes at Night's accept, reject, inquiry and
//! none), by rules that need no network.
//!
//! The rules read the message as a whole, not word lists matched one by one:
//!
//! 1. Normalise: lower case, letters repeated for emphasis squeezed (`yesss`),
//!    punctuation dropped but a question mark remembered, and each word of four
//!    letters or more (three for a few short cue words) matched to the nearest
//!    cue word within one edit (typos like `stpo`, `perfct`, `waht`).
//! 2. An empty message, or one about the speaker's own doings (`I'll do the
//!    roof`, `my bad`), is `none`.
//! 3. A negative command (`don't`, `stop`, `no`, `undo`, `remove`...) or a
//!    judgement that something is wrong (`wrong`, `not right`, `mistake`) is
//!    `reject`, unless the message is a question whose negative word is what
//!    it asks about (`why did you stop?`).
//! 4. A question (a question mark, or a question word or auxiliary first) is
//!    `inquiry`.
//! 5. Approval (`yes`, `good`, `perfect`, `thanks`, `keep going`...) is `accept`.
//! 6. Anything else is `none`.

use serde::{Deserialize, Serialize};

use super::about::About;

/// What a message asks of the assistant.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// Approval of what the assistant did or does.
    Accept,
    /// Disapproval: stop, undo, not that.
    Reject,
    /// A question the assistant should answer.
    Inquiry,
    /// Nothing for the assistant.
    #[default]
    None,
}

impl Intent {
    /// The four, in the paper's order.
    pub const ALL: [Self; 4] = [Self::Accept, Self::Reject, Self::Inquiry, Self::None];

    /// The flag's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Reject => "reject",
            Self::Inquiry => "inquiry",
            Self::None => "none",
        }
    }
}

/// A message's flag and what it refers to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// The intent flag.
    pub intent: Intent,
    /// The last edit, a block type, a place, or everything.
    pub about: About,
}

/// Turns a message into its intent flag (and, by default, reads what it
/// refers to with [`About::parse`]). Implementations plug in wherever chat is
/// read: `Box<dyn IntentParser + Send + Sync>`.
pub trait IntentParser {
    /// The flag of `text`.
    fn parse(&self, text: &str) -> Intent;

    /// The flag and the referent of `text`.
    fn read(&self, text: &str) -> Flags {
        Flags {
            intent: self.parse(text),
            about: About::parse(text),
        }
    }
}

/// The rule-based parser (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct RuleParser;

/// Words that say no, stop or undo when they command.
const REJECT_WORDS: &[&str] = &[
    "no",
    "nope",
    "nah",
    "stop",
    "dont",
    "undo",
    "remove",
    "cancel",
    "quit",
    "wrong",
    "incorrect",
    "mistake",
    "ugh",
    "messing",
    "rid",
    "halt",
    "revert",
    "bad",
    "never",
];
/// Words that approve.
const ACCEPT_WORDS: &[&str] = &[
    "yes",
    "yep",
    "yeah",
    "yup",
    "ya",
    "good",
    "great",
    "nice",
    "perfect",
    "correct",
    "right",
    "thanks",
    "thank",
    "ty",
    "thx",
    "exactly",
    "awesome",
    "love",
    "gj",
    "sweet",
    "wonderful",
    "absolutely",
    "better",
    "works",
    "fine",
    "cool",
    "excellent",
    "brilliant",
    "amazing",
    "continue",
    "carry",
    "keep",
    "👍",
    "spot",
    "agreed",
    "sure",
    "lovely",
    "fantastic",
];
/// Words that open a question.
const QUESTION_WORDS: &[&str] = &[
    "what", "why", "where", "how", "which", "who", "when", "whats", "wheres", "hows",
];
/// Auxiliaries that open a yes/no question.
const AUXILIARIES: &[&str] = &[
    "is", "are", "do", "does", "did", "can", "could", "will", "would", "should", "am", "have",
    "has", "was", "were",
];
/// Openings of talk about the speaker's own doings.
const SELF_TALK: &[&str] = &[
    "i", "im", "ill", "ive", "id", "my", "me", "lets", "let", "we", "were",
];

/// A message as words, with whether it ended in a question mark.
struct Words {
    words: Vec<String>,
    question_mark: bool,
}

fn normalise(text: &str) -> Words {
    let lower = text.to_lowercase();
    let question_mark = lower.contains('?');
    let mut words = Vec::new();
    for raw in
        lower.split(|c: char| c.is_whitespace() || c == ',' || c == '.' || c == '!' || c == '?')
    {
        // Apostrophes join (`don't` is `dont`); other punctuation goes.
        let kept: String = raw
            .chars()
            .filter(|c| c.is_alphanumeric() || !c.is_ascii())
            .collect();
        if kept.is_empty() {
            continue;
        }
        words.push(fix_typo(&squeeze(&kept)));
    }
    Words {
        words,
        question_mark,
    }
}

/// Letters repeated for emphasis undone: runs of three or more become two
/// (`goood` -> `good`), and a word that is no cue word but becomes one with its
/// doubled letters single takes that form (`yess` -> `yes`, `noo` -> `no`).
fn squeeze(word: &str) -> String {
    let mut two = String::with_capacity(word.len());
    let mut one = String::with_capacity(word.len());
    let mut last: Option<char> = None;
    let mut run = 0;
    for c in word.chars() {
        run = if last == Some(c) { run + 1 } else { 1 };
        if run <= 2 {
            two.push(c);
        }
        if run == 1 {
            one.push(c);
        }
        last = Some(c);
    }
    if !is_cue(&two) && is_cue(&one) {
        one
    } else {
        two
    }
}

/// Every word the rules read as a cue (reject, accept, question words).
fn cue_words() -> impl Iterator<Item = &'static str> {
    REJECT_WORDS
        .iter()
        .chain(ACCEPT_WORDS)
        .chain(QUESTION_WORDS)
        .copied()
}

fn is_cue(word: &str) -> bool {
    cue_words().any(|w| w == word)
}

/// Everyday English words (the most frequent ones, and the builder's words),
/// never taken for typos of a cue word: `the` is not `thx`, `were` is not
/// `where`, `than` is not `thank`.
const COMMON: &[&str] = &[
    "the", "that", "thats", "than", "then", "them", "they", "this", "these", "those", "there",
    "their", "theres", "here", "where", "were", "wear", "what", "whats", "when", "want", "went",
    "wait", "with", "will", "well", "wall", "walls", "tall", "take", "make", "made", "same",
    "some", "sure", "done", "gone", "none", "one", "once", "now", "how", "wow", "row", "low",
    "new", "know", "knew", "good", "food", "wood", "woods", "door", "doors", "floor", "roof",
    "room", "nice", "rice", "fine", "mine", "line", "time", "like", "live", "love", "move", "more",
    "most", "must", "just", "much", "very", "into", "onto", "from", "have", "has", "had", "been",
    "being", "keep", "kept", "need", "needs", "right", "light", "night", "might", "sight",
    "bright", "great", "treat", "break", "brick", "block", "blocks", "stone", "store", "glass",
    "class", "grass", "place", "plank", "planks", "cool", "coal", "tool", "told", "gold", "hold",
    "bold", "bad", "bed", "bet", "but", "not", "nor", "no", "so", "go", "do", "to", "too", "two",
    "top", "stop", "shop", "step", "stair", "stairs", "win", "window", "windows", "side", "wide",
    "ride", "hide", "rid", "red", "read", "ready", "real", "really", "fun", "run", "sun", "son",
];

/// A word of four letters or more within one edit (a transposition counts as
/// one) of exactly one cue word becomes that word; a shorter one only when it
/// is a cue word's letters swapped (`yse`). Everyday words stay as they are.
fn fix_typo(word: &str) -> String {
    if is_cue(word) || COMMON.contains(&word) {
        return word.to_owned();
    }
    let len = word.chars().count();
    let near: Vec<&str> = cue_words()
        .filter(|w| w.chars().count() >= 3)
        .filter(|w| strsim::damerau_levenshtein(w, word) == 1)
        .filter(|w| {
            len >= 4 || {
                let (mut a, mut b): (Vec<char>, Vec<char>) =
                    (w.chars().collect(), word.chars().collect());
                a.sort_unstable();
                b.sort_unstable();
                a == b
            }
        })
        .collect();
    match near.as_slice() {
        [only] => (*only).to_owned(),
        _ => word.to_owned(),
    }
}

impl IntentParser for RuleParser {
    fn parse(&self, text: &str) -> Intent {
        let Words {
            words,
            question_mark,
        } = normalise(text);
        let Some(first) = words.first().map(String::as_str) else {
            return Intent::None;
        };
        let has = |set: &[&str]| words.iter().any(|w| set.contains(&w.as_str()));
        let pair = |a: &str, b: &[&str]| {
            words
                .windows(2)
                .any(|w| w[0] == a && b.contains(&w[1].as_str()))
        };
        if SELF_TALK.contains(&first) && !pair("i", &["like", "love"]) {
            return Intent::None;
        }
        if ["oops", "my", "sorry"].contains(&first) {
            return Intent::None;
        }
        // A question word or auxiliary first, or a request to explain.
        let opens_question = QUESTION_WORDS.contains(&first)
            || (AUXILIARIES.contains(&first) && words.len() > 1)
            || ["explain", "tell"].contains(&first);
        let question = question_mark || opens_question;
        // A judgement that something is wrong, or a command not to.
        let negated_approval = pair("not", ACCEPT_WORDS)
            || pair(
                "not",
                &[
                    "that", "there", "like", "this", "in", "what", "it", "at", "here", "on", "the",
                ],
            )
            || words
                .windows(2)
                .any(|w| w[0] == "not" && super::about::is_block_word(&w[1]))
            || pair("isnt", ACCEPT_WORDS)
            || pair("doesnt", &["go", "belong", "fit"])
            || pair("take", &["that", "it", "out"])
            || pair("break", &["it", "that"])
            || pair("get", &["rid"]);
        let commands_no = words.iter().any(|w| w == "dont") || first == "no" || first == "stop";
        let reject_cue = has(REJECT_WORDS) || negated_approval;
        if reject_cue && (!question || commands_no) {
            return Intent::Reject;
        }
        if question {
            return Intent::Inquiry;
        }
        // "ok" and "k" alone acknowledge; with praise they approve.
        // Approval, or one of its idioms ("well done", "that's it", "thumbs
        // up", "that's what I meant").
        if has(ACCEPT_WORDS)
            || pair("go", &["ahead"])
            || pair("got", &["it"])
            || pair("all", &["good"])
            || pair("well", &["done"])
            || pair("thumbs", &["up"])
            || pair("i", &["meant"])
            || (words.len() == 2 && pair("thats", &["it"]))
        {
            return Intent::Accept;
        }
        Intent::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_read_whole_messages() {
        let p = RuleParser;
        for (text, want) in [
            ("", Intent::None),
            ("   ", Intent::None),
            ("yes, keep going", Intent::Accept),
            ("YESSS", Intent::Accept),
            ("no not there", Intent::Reject),
            ("that's not right", Intent::Reject),
            ("why did you stop?", Intent::Inquiry),
            ("why did you break that, don't", Intent::Reject),
            ("what are you doing", Intent::Inquiry),
            ("I'll do the roof", Intent::None),
            ("ok", Intent::None),
            ("stpo", Intent::Reject),
        ] {
            assert_eq!(p.parse(text), want, "{text:?}");
        }
    }
}
