//! One rater's judgement of one pair: the form's questions as types, and the
//! checks every answer passes before it is stored, whoever sent it.
//!
//! The questions follow BEDD's form (appendix D of the paper): which side is
//! better overall (left, right or draw), comparative questions about concrete
//! factors and human-likeness (left, draw, right or not applicable), and a
//! written justification of at least [`MIN_JUSTIFICATION`] characters.

use serde::{Deserialize, Serialize};

/// The fewest characters a justification may have (BEDD's form asks for 100).
pub const MIN_JUSTIFICATION: usize = 100;
/// The most characters a justification may have: a page, not a file.
pub const MAX_JUSTIFICATION: usize = 10_000;
/// The longest rater id.
pub const MAX_RATER: usize = 64;

/// Why an answer (or a rater id) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The justification is shorter than [`MIN_JUSTIFICATION`] characters.
    #[error(
        "the justification has {chars} characters; write at least {MIN_JUSTIFICATION} \
         saying why"
    )]
    ShortJustification {
        /// Its length in characters, surrounding whitespace left out.
        chars: usize,
    },
    /// The justification is longer than [`MAX_JUSTIFICATION`] characters.
    #[error("the justification has {chars} characters; at most {MAX_JUSTIFICATION} are kept")]
    LongJustification {
        /// Its length in characters.
        chars: usize,
    },
    /// The rater id is empty, too long or has characters other than letters,
    /// digits and `._@-`.
    #[error("rater id {0:?} is not 1 to {MAX_RATER} letters, digits or ._@- characters")]
    BadRater(String),
    /// The justification holds a control character (other than a line
    /// break or tab), which would not print as the rater typed it.
    #[error(
        "the justification holds a control character (U+{code:04X}) at character {at}; \
         write plain text"
    )]
    ControlCharacter {
        /// The character's code point.
        code: u32,
        /// Its place in the text, from 0.
        at: usize,
    },
}

/// Which side the rater preferred overall. There is no "not applicable":
/// every pair gets a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The left episode's agent did better.
    Left,
    /// The right episode's agent did better.
    Right,
    /// Neither did better.
    Draw,
}

impl Verdict {
    /// The name stored in the database and sent by the page.
    pub fn name(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Draw => "draw",
        }
    }

    /// The verdict of a stored name.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Left, Self::Right, Self::Draw]
            .into_iter()
            .find(|v| v.name() == name)
    }
}

/// An answer to one comparative question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// The left side showed more of the factor.
    Left,
    /// The right side showed more of it.
    Right,
    /// Both alike.
    Draw,
    /// The question does not apply to this pair (e.g. no assistant acted).
    #[serde(rename = "na")]
    NotApplicable,
}

impl Choice {
    /// Every choice, in the form's order.
    pub const ALL: [Self; 4] = [Self::Left, Self::Draw, Self::Right, Self::NotApplicable];

    /// The name stored in the database and sent by the page.
    pub fn name(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Draw => "draw",
            Self::NotApplicable => "na",
        }
    }

    /// The choice of a stored name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The comparative questions beside the overall verdict: the MBAG versions of
/// BEDD's task-specific questions, and its human-likeness question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Factor {
    /// More of the goal house was built.
    BuiltMore,
    /// Fewer blocks that were already right were broken.
    BrokeFewer,
    /// The assistant helped the person more.
    HelpedMore,
    /// The assistant seemed more human-like.
    HumanLike,
}

impl Factor {
    /// Every factor, in the form's order.
    pub const ALL: [Self; 4] = [
        Self::BuiltMore,
        Self::BrokeFewer,
        Self::HelpedMore,
        Self::HumanLike,
    ];

    /// The key in the database, the page's field names and the reports.
    pub fn key(self) -> &'static str {
        match self {
            Self::BuiltMore => "built_more",
            Self::BrokeFewer => "broke_fewer",
            Self::HelpedMore => "helped_more",
            Self::HumanLike => "human_like",
        }
    }

    /// The question as the page asks it.
    pub fn question(self) -> &'static str {
        match self {
            Self::BuiltMore => "Which side built more of the goal house?",
            Self::BrokeFewer => "Which side broke fewer blocks that were already correct?",
            Self::HelpedMore => "Which assistant helped the person more?",
            Self::HumanLike => {
                "Which assistant seemed more human-like (rather than a bot or computer player)?"
            }
        }
    }
}

/// A rater's id: who answered, as they typed it on the page.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Rater(String);

impl Rater {
    /// Checks an id: 1 to [`MAX_RATER`] ASCII letters, digits or `._@-`, so
    /// that ids print in tables and cannot be mistaken for one another by
    /// invisible characters.
    pub fn new(id: &str) -> Result<Self, AnswerError> {
        let ok = !id.is_empty()
            && id.len() <= MAX_RATER
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._@-".contains(&b));
        if ok {
            Ok(Self(id.to_owned()))
        } else {
            Err(AnswerError::BadRater(id.chars().take(80).collect()))
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A justification long enough to say why: at least [`MIN_JUSTIFICATION`]
/// characters once surrounding whitespace is left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Justification(pub(super) String);

impl Justification {
    /// Checks the length (in characters, not bytes) and keeps the trimmed text.
    pub fn new(text: &str) -> Result<Self, AnswerError> {
        let text = text.trim();
        let chars = text.chars().count();
        if chars < MIN_JUSTIFICATION {
            return Err(AnswerError::ShortJustification { chars });
        }
        if chars > MAX_JUSTIFICATION {
            return Err(AnswerError::LongJustification { chars });
        }
        if let Some((at, c)) = text
            .chars()
            .enumerate()
            .find(|(_, c)| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        {
            return Err(AnswerError::ControlCharacter {
                code: u32::from(c),
                at,
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Per factor, the rater's choice (in [`Factor::ALL`]'s order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FactorChoices(pub [Choice; Factor::ALL.len()]);

impl FactorChoices {
    /// The choice for `factor`.
    pub fn get(&self, factor: Factor) -> Choice {
        self.0[factor as usize]
    }

    /// `(factor, choice)` pairs in the form's order.
    pub fn iter(&self) -> impl Iterator<Item = (Factor, Choice)> + '_ {
        Factor::ALL.into_iter().zip(self.0)
    }
}

/// One rater's judgement of one comparison, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The comparison judged (its id in the database).
    pub comparison: i64,
    /// Who judged it.
    pub rater: Rater,
    /// Which side was better overall.
    pub overall: Verdict,
    /// The comparative questions.
    pub factors: FactorChoices,
    /// Why.
    pub justification: Justification,
}

/// An answer as the page sends it (JSON), before its checks.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerForm {
    /// The comparison's id.
    pub comparison: i64,
    /// The rater id.
    pub rater: String,
    /// `left`, `right` or `draw`.
    pub overall: Verdict,
    /// One choice per factor.
    pub built_more: Choice,
    /// See [`Factor::BrokeFewer`].
    pub broke_fewer: Choice,
    /// See [`Factor::HelpedMore`].
    pub helped_more: Choice,
    /// See [`Factor::HumanLike`].
    pub human_like: Choice,
    /// At least [`MIN_JUSTIFICATION`] characters.
    pub justification: String,
}

impl TryFrom<AnswerForm> for Answer {
    type Error = AnswerError;

    fn try_from(form: AnswerForm) -> Result<Self, AnswerError> {
        Ok(Self {
            comparison: form.comparison,
            rater: Rater::new(&form.rater)?,
            overall: form.overall,
            factors: FactorChoices([
                form.built_more,
                form.broke_fewer,
                form.helped_more,
                form.human_like,
            ]),
            justification: Justification::new(&form.justification)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn justifications_count_characters_not_bytes_and_ignore_padding() {
        let short = format!("  {}  ", "é".repeat(99));
        assert_eq!(
            Justification::new(&short),
            Err(AnswerError::ShortJustification { chars: 99 })
        );
        assert!(Justification::new(&"é".repeat(100)).is_ok());
        assert!(Justification::new(&"x".repeat(MAX_JUSTIFICATION + 1)).is_err());
        let reason = "a fine reason".repeat(8);
        assert_eq!(
            Justification::new(&format!("{reason}\0 and more")),
            Err(AnswerError::ControlCharacter { code: 0, at: 104 })
        );
        assert!(Justification::new(&format!("{reason}\x1b[2J clears a terminal")).is_err());
        assert!(Justification::new(&format!("two lines\nand a\ttab: {reason}")).is_ok());
    }

    #[test]
    fn rater_ids_are_plain() {
        assert!(Rater::new("alice.b-2@lab").is_ok());
        for bad in ["", "a b", "ali\u{200b}ce", &"x".repeat(65), "<script>"] {
            assert!(Rater::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_page_form_reads_into_a_checked_answer() {
        let json = serde_json::json!({
            "comparison": 3, "rater": "r1", "overall": "draw",
            "built_more": "left", "broke_fewer": "na", "helped_more": "right",
            "human_like": "draw", "justification": "y".repeat(120),
        });
        let form: AnswerForm = serde_json::from_value(json).unwrap();
        let answer = Answer::try_from(form).unwrap();
        assert_eq!(answer.overall, Verdict::Draw);
        assert_eq!(
            answer.factors.get(Factor::BrokeFewer),
            Choice::NotApplicable
        );
        assert_eq!(answer.factors.get(Factor::HelpedMore), Choice::Right);
        let extra = serde_json::json!({"comparison": 3, "rater": "r1", "overall": "up"});
        assert!(serde_json::from_value::<AnswerForm>(extra).is_err());
    }
}
