//! A study's design, `DIR/study.json` (`mbag-study/1`): the conditions (each
//! an assistant spec under a blinded name), each participant's goal and order
//! of conditions (rows of a balanced Latin square), the practice round, the
//! session settings every session shares, and the survey's questions.
//!
//! Blinding: participants and the survey page only ever see the names
//! "Assistant A", "Assistant B", ...; which spec each name stands for is in
//! this file alone. The letters are dealt to the conditions at random (from the
//! study's seed), so "A" is not simply the first condition named.

use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::StudyError;
use crate::agents::spec::AgentSpec;
use crate::sim::coords::WorldSize;

/// The format tag of `study.json`.
pub const FORMAT: &str = "mbag-study/1";
/// The study file's name inside the study folder.
pub const STUDY_FILE: &str = "study.json";

/// One condition: an assistant under a blinded name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// What participants see ("Assistant A").
    pub label: String,
    /// The assistant, an agent spec (`none`, `oracle`, `heuristic:NAME`,
    /// `az:PATH?...`).
    pub assistant: String,
}

impl Condition {
    /// The assistant's spec.
    pub fn spec(&self) -> Result<AgentSpec, StudyError> {
        self.assistant
            .parse()
            .map_err(|e: crate::agents::spec::AgentSpecError| StudyError::Design(e.to_string()))
    }
}

/// Where a session's goal comes from: a generator name as the daemon's
/// `--goals` takes it (`paper`, `random`, `tutorial`, a `.json` goal config)
/// and the seed that picks the goal (and the start) from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalChoice {
    /// The generator.
    pub generator: String,
    /// The episode seed: the same seed gives the same goal in every session.
    pub seed: u64,
}

/// One participant: their goal and their order of conditions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Participant {
    /// The participant's id (`p01`, ...), also their folder's name.
    pub id: String,
    /// The house they build in every condition.
    pub goal: GoalChoice,
    /// Condition indices (into [`Study::conditions`]) in the order played.
    pub order: Vec<usize>,
}

/// The practice round played before the conditions, alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Practice {
    /// Its goal generator (the tutorial house by default).
    pub goals: String,
    /// Its world [default: 6x6x6 for the tutorial, else the sessions' world].
    pub world_size: Option<WorldSize>,
}

/// Settings every session of the study shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    /// The world [default: 11x10x10].
    pub world_size: Option<WorldSize>,
    /// Steps after which the env ends an episode.
    pub horizon: u64,
    /// Stop a session after this many steps (none: when the house is built).
    pub max_steps: Option<u64>,
    /// Longest a step waits for the person, in seconds (the study's
    /// action_delay).
    pub step_period_s: f64,
    /// Players have a palette of finite blocks.
    pub finite_blocks: bool,
    /// The folder of CraftAssist houses for the `paper` goals [default:
    /// ../shared/data/houses/craftassist].
    pub houses: Option<PathBuf>,
}

/// One Likert item of the survey.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurveyItem {
    /// A short key (`helpful`), used in answers and reports.
    pub id: String,
    /// The statement participants rate.
    pub text: String,
}

/// The survey after each session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Survey {
    /// Points of the scale: answers are 1..=scale (1 strongly disagree).
    pub scale: u8,
    /// The statements.
    pub items: Vec<SurveyItem>,
}

impl Default for Survey {
    /// Seven points and the paper's kinds of question (Appendix C, Figure 7):
    /// helpfulness, wanting the assistant again, being understood, and the
    /// assistant's mistakes.
    fn default() -> Self {
        let item = |id: &str, text: &str| SurveyItem {
            id: id.into(),
            text: text.into(),
        };
        Self {
            scale: 7,
            items: vec![
                item("helpful", "The assistant was helpful."),
                item("again", "I would want to build with this assistant again."),
                item(
                    "understood",
                    "The assistant understood what I was building.",
                ),
                item(
                    "no_mistakes",
                    "The assistant did not get in my way or build the wrong things.",
                ),
            ],
        }
    }
}

/// The whole design, as `study.json` holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// [`FORMAT`].
    pub format: String,
    /// When it was created (RFC 3339, UTC).
    pub created: String,
    /// The seed the design was drawn from.
    pub seed: u64,
    /// The conditions, in the order they were given.
    pub conditions: Vec<Condition>,
    /// The practice round, if any.
    pub practice: Option<Practice>,
    /// The participants.
    pub participants: Vec<Participant>,
    /// What every session shares.
    pub session: SessionSettings,
    /// The survey.
    pub survey: Survey,
}

/// What `study init` is given.
#[derive(Clone, Debug)]
pub struct StudyPlan {
    /// The assistants compared.
    pub conditions: Vec<AgentSpec>,
    /// Goal generators, dealt to participants in turn.
    pub goals: Vec<String>,
    /// How many participants.
    pub participants: usize,
    /// The seed of the blinding, the orders and the goals.
    pub seed: u64,
    /// The practice round, if any.
    pub practice: Option<Practice>,
    /// The session settings.
    pub session: SessionSettings,
    /// The survey.
    pub survey: Survey,
}

/// The blinded name of the `i`-th letter: "Assistant A", ..., "Assistant Z",
/// "Assistant AA", ...
pub fn blinded_label(i: usize) -> String {
    let mut letters = Vec::new();
    let mut n = i + 1;
    while n > 0 {
        n -= 1;
        letters.push(b'A' + (n % 26) as u8);
        n /= 26;
    }
    letters.reverse();
    format!("Assistant {}", String::from_utf8_lossy(&letters))
}

/// A balanced Latin square of `n` conditions (Williams' design): every
/// condition appears once in each position of each row, equally often in each
/// position over the rows, and every condition immediately follows every other
/// one equally often (first-order carry-over balanced). `n` rows for even `n`;
/// for odd `n` a square alone cannot be balanced, so its mirror image follows
/// (`2n` rows).
pub fn balanced_latin_square(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return Vec::new();
    }
    // First row 0, 1, n-1, 2, n-2, ...: its consecutive differences are all
    // distinct mod n, which is what balances carry-over.
    let first: Vec<usize> = (0..n)
        .map(|j| {
            if j % 2 == 1 {
                j.div_ceil(2)
            } else {
                (n - j / 2) % n
            }
        })
        .collect();
    let mut rows: Vec<Vec<usize>> = (0..n)
        .map(|r| first.iter().map(|c| (c + r) % n).collect())
        .collect();
    if n % 2 == 1 {
        let mirrored: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| r.iter().rev().copied().collect())
            .collect();
        rows.extend(mirrored);
    }
    rows
}

impl Study {
    /// Draws a design (and checks that every scripted assistant can play its
    /// sessions): blinded labels dealt at random, the square's symbols
    /// mapped to conditions at random, its rows dealt to participants in a
    /// shuffled order (a fresh shuffle for each full set of rows, so any
    /// multiple of the square's rows is exactly balanced), goals dealt in turn
    /// with a seed per participant.
    pub fn design(plan: StudyPlan, created: String) -> Result<Self, StudyError> {
        let k = plan.conditions.len();
        if k == 0 {
            return Err(StudyError::Design("no conditions given".into()));
        }
        if plan.goals.is_empty() {
            return Err(StudyError::Design("no goals given".into()));
        }
        if plan.participants == 0 {
            return Err(StudyError::Design("no participants".into()));
        }
        let names: Vec<String> = plan.conditions.iter().map(|c| c.to_string()).collect();
        for (i, a) in names.iter().enumerate() {
            if names[..i].contains(a) {
                return Err(StudyError::Design(format!("condition {a} is given twice")));
            }
        }
        let mut rng = StdRng::seed_from_u64(plan.seed);
        let mut letters: Vec<usize> = (0..k).collect();
        letters.shuffle(&mut rng);
        let conditions = names
            .into_iter()
            .zip(&letters)
            .map(|(assistant, &l)| Condition {
                label: blinded_label(l),
                assistant,
            })
            .collect();
        let mut symbols: Vec<usize> = (0..k).collect();
        symbols.shuffle(&mut rng);
        let square = balanced_latin_square(k);
        let mut rows = Vec::with_capacity(plan.participants);
        while rows.len() < plan.participants {
            let mut block: Vec<usize> = (0..square.len()).collect();
            block.shuffle(&mut rng);
            rows.extend(block);
        }
        let width = plan.participants.to_string().len().max(2);
        let participants = (0..plan.participants)
            .map(|i| Participant {
                id: format!("p{:0width$}", i + 1),
                goal: GoalChoice {
                    generator: plan.goals[i % plan.goals.len()].clone(),
                    seed: plan.seed.wrapping_mul(1_000_003).wrapping_add(i as u64),
                },
                order: square[rows[i]].iter().map(|&s| symbols[s]).collect(),
            })
            .collect();
        let study = Self {
            format: FORMAT.into(),
            created,
            seed: plan.seed,
            conditions,
            practice: plan.practice,
            participants,
            session: plan.session,
            survey: plan.survey,
        };
        study.check()?;
        super::session::check_assistants(&study)?;
        Ok(study)
    }

    /// Checks what a hand-edited file could break: the format, the specs,
    /// unique labels and ids, orders that are permutations, a usable survey.
    pub fn check(&self) -> Result<(), StudyError> {
        let bad = |m: String| Err(StudyError::Design(m));
        if self.format != FORMAT {
            return bad(format!("format {:?}, expected {FORMAT:?}", self.format));
        }
        let k = self.conditions.len();
        for (i, c) in self.conditions.iter().enumerate() {
            c.spec()?;
            if self.conditions[..i].iter().any(|o| o.label == c.label) {
                return bad(format!("two conditions are labelled {:?}", c.label));
            }
        }
        for (i, p) in self.participants.iter().enumerate() {
            if p.id.is_empty()
                || !p
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return bad(format!(
                    "participant id {:?}: use letters, digits, - and _",
                    p.id
                ));
            }
            if self.participants[..i].iter().any(|o| o.id == p.id) {
                return bad(format!("participant {} is listed twice", p.id));
            }
            let mut sorted = p.order.clone();
            sorted.sort_unstable();
            if sorted != (0..k).collect::<Vec<_>>() {
                return bad(format!(
                    "participant {}: order {:?} is not a permutation of the {k} conditions",
                    p.id, p.order
                ));
            }
        }
        if !(2..=11).contains(&self.survey.scale) {
            return bad(format!(
                "survey scale {}: use 2 to 11 points",
                self.survey.scale
            ));
        }
        if !(self.session.step_period_s > 0.0 && self.session.step_period_s <= 3600.0) {
            return bad(format!(
                "step period {} s: use more than 0 and at most an hour",
                self.session.step_period_s
            ));
        }
        Ok(())
    }

    /// The study file of `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(STUDY_FILE)
    }

    /// Reads and checks `DIR/study.json`.
    pub fn load(dir: &Path) -> Result<Self, StudyError> {
        let path = Self::path(dir);
        let text = std::fs::read_to_string(&path).map_err(|source| StudyError::Io {
            path: path.clone(),
            source,
        })?;
        let study: Self = serde_json::from_str(&text).map_err(|e| StudyError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        study.check()?;
        Ok(study)
    }

    /// Writes `DIR/study.json`, refusing to replace an existing study (its
    /// blinding and orders may already be in use).
    pub fn create(&self, dir: &Path) -> Result<PathBuf, StudyError> {
        let path = Self::path(dir);
        if path.exists() {
            return Err(StudyError::Exists(path));
        }
        std::fs::create_dir_all(dir.join(super::session::PARTICIPANTS_DIR)).map_err(|source| {
            StudyError::Io {
                path: dir.to_owned(),
                source,
            }
        })?;
        let text = serde_json::to_string_pretty(self).map_err(|e| StudyError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        super::write_atomically(&path, format!("{text}\n").as_bytes())?;
        Ok(path)
    }

    /// The participant with this id.
    pub fn participant(&self, id: &str) -> Result<&Participant, StudyError> {
        self.participants
            .iter()
            .find(|p| p.id == id)
            .ok_or_else(|| StudyError::UnknownParticipant {
                id: id.to_owned(),
                known: self
                    .participants
                    .iter()
                    .map(|p| p.id.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The conditions' indices ordered by blinded label (A, B, ...), the
    /// order reports use.
    pub fn by_label(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.conditions.len()).collect();
        order.sort_by_key(|&i| {
            let l = &self.conditions[i].label;
            (l.len(), l.clone())
        });
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(conditions: &[&str], participants: usize) -> StudyPlan {
        StudyPlan {
            conditions: conditions.iter().map(|c| c.parse().unwrap()).collect(),
            goals: vec!["random".into()],
            participants,
            seed: 5,
            practice: Some(Practice {
                goals: "tutorial".into(),
                world_size: None,
            }),
            session: SessionSettings {
                world_size: None,
                horizon: 1000,
                max_steps: Some(10),
                step_period_s: 0.1,
                finite_blocks: false,
                houses: None,
            },
            survey: Survey::default(),
        }
    }

    /// Every condition in every position equally often, and every ordered
    /// pair of distinct conditions adjacent equally often.
    fn assert_balanced(rows: &[Vec<usize>], n: usize) {
        let mut position = vec![vec![0; n]; n];
        let mut follows = vec![vec![0; n]; n];
        for r in rows {
            let mut sorted = r.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{r:?}");
            for (pos, &c) in r.iter().enumerate() {
                position[c][pos] += 1;
            }
            for w in r.windows(2) {
                follows[w[0]][w[1]] += 1;
            }
        }
        let per_position = rows.len() / n;
        assert!(position.iter().flatten().all(|&c| c == per_position));
        let per_pair = rows.len() / n;
        for (a, row) in follows.iter().enumerate() {
            for (b, &count) in row.iter().enumerate() {
                assert_eq!(count, if a == b { 0 } else { per_pair }, "{a} -> {b}");
            }
        }
    }

    #[test]
    fn williams_squares_are_balanced() {
        for n in 1..=8 {
            let rows = balanced_latin_square(n);
            assert_eq!(rows.len(), if n % 2 == 0 { n } else { 2 * n });
            assert_balanced(&rows, n);
        }
        assert_eq!(
            balanced_latin_square(4),
            [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
        );
    }

    #[test]
    fn labels_count_in_letters() {
        assert_eq!(blinded_label(0), "Assistant A");
        assert_eq!(blinded_label(3), "Assistant D");
        assert_eq!(blinded_label(25), "Assistant Z");
        assert_eq!(blinded_label(26), "Assistant AA");
    }

    #[test]
    fn a_design_balances_whole_blocks_and_blinds_the_conditions() {
        let study = Study::design(
            plan(
                &["none", "oracle", "heuristic:noop", "heuristic:random"],
                16,
            ),
            "now".into(),
        )
        .unwrap();
        assert_eq!(study.participants.len(), 16);
        assert_eq!(study.participants[0].id, "p01");
        let rows: Vec<Vec<usize>> = study.participants.iter().map(|p| p.order.clone()).collect();
        // 16 participants are four whole squares.
        assert_balanced(&rows, 4);
        let mut labels: Vec<&str> = study.conditions.iter().map(|c| c.label.as_str()).collect();
        labels.sort_unstable();
        assert_eq!(
            labels,
            ["Assistant A", "Assistant B", "Assistant C", "Assistant D"]
        );
        // Every participant's goal seed differs; the same seed gives the same design.
        let seeds: std::collections::HashSet<u64> =
            study.participants.iter().map(|p| p.goal.seed).collect();
        assert_eq!(seeds.len(), 16);
        let again = Study::design(
            plan(
                &["none", "oracle", "heuristic:noop", "heuristic:random"],
                16,
            ),
            "now".into(),
        )
        .unwrap();
        assert_eq!(study, again);
        // Three conditions: 6 rows per balanced block.
        let three = Study::design(
            plan(&["none", "oracle", "heuristic:random"], 6),
            "now".into(),
        )
        .unwrap();
        let rows: Vec<Vec<usize>> = three.participants.iter().map(|p| p.order.clone()).collect();
        assert_balanced(&rows, 3);
    }

    #[test]
    fn bad_designs_are_refused() {
        assert!(Study::design(plan(&["none", "none"], 2), "now".into()).is_err());
        assert!(Study::design(plan(&[], 2), "now".into()).is_err());
        let mut study = Study::design(plan(&["none", "oracle"], 2), "now".into()).unwrap();
        study.participants[1].order = vec![0, 0];
        assert!(
            study
                .check()
                .unwrap_err()
                .to_string()
                .contains("permutation")
        );
        let mut study = Study::design(plan(&["none", "oracle"], 2), "now".into()).unwrap();
        study.conditions[1].assistant = "bogus:thing".into();
        assert!(study.check().is_err());
        let dir = tempfile::tempdir().unwrap();
        let good = Study::design(plan(&["none", "oracle"], 2), "now".into()).unwrap();
        good.create(dir.path()).unwrap();
        assert_eq!(Study::load(dir.path()).unwrap(), good);
        assert!(matches!(
            good.create(dir.path()),
            Err(StudyError::Exists(_))
        ));
    }
}
