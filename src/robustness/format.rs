//! The declarative robustness test: one JSON file per test (the format is
//! documented in `tests/robustness/README.md`).
//!
//! Reading is strict: unknown keys, unknown block names, cells outside the world
//! and impossible ranges are errors that name the file and the field
//! (`start.goal[2].to`), so that a suite of hand-written tests fails loudly
//! rather than testing something other than what its author meant.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use super::predicate::Predicate;
use crate::sim::block::BlockId;
use crate::sim::coords::{Cell, WorldSize};

/// The longest horizon a test may ask for.
pub const MAX_HORIZON: u64 = 100_000;

/// How many variants a test needs at least: a pass must not hang on one start
/// position, translation or seed.
pub const MIN_VARIANTS: usize = 2;

/// The three categories of the paper's Table 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum Category {
    /// State robustness: unusual states.
    #[serde(rename = "SR")]
    State,
    /// Agent robustness: a partner who behaves unusually now.
    #[serde(rename = "AR")]
    Agent,
    /// Agent robustness with memory: a partner whose earlier behaviour matters.
    #[serde(rename = "A+MR")]
    AgentWithMemory,
}

impl Category {
    /// The three, in the paper's order.
    pub const ALL: [Self; 3] = [Self::State, Self::Agent, Self::AgentWithMemory];

    /// The paper's abbreviation.
    pub fn label(self) -> &'static str {
        match self {
            Self::State => "SR",
            Self::Agent => "AR",
            Self::AgentWithMemory => "A+MR",
        }
    }
}

/// A block named as Minecraft and MBAG name it (`planks`, `air`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockName(pub BlockId);

impl<'de> Deserialize<'de> for BlockName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        BlockId::from_name(&name)
            .filter(|&b| b != BlockId::AUTO)
            .map(BlockName)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "{name:?} is not an MBAG block (air, bedrock, dirt, cobblestone, glass, log, planks, stone, stonebrick, wool)"
                ))
            })
    }
}

/// A box of cells set to one block, corners included (`to` defaults to `from`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fill {
    /// One corner.
    pub from: [i32; 3],
    /// The opposite corner.
    #[serde(default)]
    pub to: Option<[i32; 3]>,
    /// The block.
    pub block: BlockName,
}

impl Fill {
    /// Every cell of the box.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        let to = self.to.unwrap_or(self.from);
        let lo = [0, 1, 2].map(|k| self.from[k].min(to[k]));
        let hi = [0, 1, 2].map(|k| self.from[k].max(to[k]));
        (lo[0]..=hi[0]).flat_map(move |x| {
            (lo[1]..=hi[1]).flat_map(move |y| (lo[2]..=hi[2]).map(move |z| Cell::new(x, y, z)))
        })
    }
}

/// An edit the history prefix makes before the test starts.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Edit {
    /// The person placed `block` at `cell`.
    PersonPlaces {
        /// The cell.
        cell: [i32; 3],
        /// The block.
        block: BlockName,
    },
    /// The person broke the block at `cell`.
    PersonBreaks {
        /// The cell.
        cell: [i32; 3],
    },
    /// The assistant placed `block` at `cell`.
    AssistantPlaces {
        /// The cell.
        cell: [i32; 3],
        /// The block.
        block: BlockName,
    },
    /// The assistant broke the block at `cell`.
    AssistantBreaks {
        /// The cell.
        cell: [i32; 3],
    },
}

/// The situation at the start.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// Width, height and depth (the paper's 11 x 10 x 10 by default).
    #[serde(default = "default_size")]
    pub world_size: [i32; 3],
    /// The goal: these fills over the initial world (bedrock floor, dirt above).
    pub goal: Vec<Fill>,
    /// The start's world: these fills over the initial world.
    #[serde(default)]
    pub world: Vec<Fill>,
    /// The person's feet position.
    pub person: [f64; 3],
    /// The assistant's feet position.
    pub assistant: [f64; 3],
    /// Edits that happened before the test starts, in order (the assistant
    /// sees them as the episode's history).
    #[serde(default)]
    pub history: Vec<Edit>,
}

fn default_size() -> [i32; 3] {
    [11, 10, 10]
}

/// Who the person is during the test.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Partner {
    /// Does nothing.
    Stationary,
    /// Uniform over valid actions.
    Random,
    /// Keeps placing its goal block at `cell` whenever it is free (and breaks
    /// whatever else is there).
    Stubborn {
        /// The cell it insists on.
        cell: [i32; 3],
    },
    /// A fixed sequence of edits, then nothing.
    Actions(Vec<Edit>),
    /// Any agent spec (`bc:models/human.json`, `pikl:...`).
    Agent(String),
}

/// A change to an irrelevant factor; the test must pass under each.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Variant {
    /// Every cell of the test (goal, world, history, partner, predicate) moved
    /// by this offset, the players too.
    Translate([i32; 3]),
    /// Another seed for the agents and the partner.
    Seed(u64),
    /// Other feet positions for the person and the assistant.
    Positions {
        /// The person's.
        person: [f64; 3],
        /// The assistant's.
        assistant: [f64; 3],
    },
}

/// One robustness test.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobustnessTest {
    /// A short unique name (`sr_wall_gaps`).
    pub id: String,
    /// SR, AR or A+MR.
    pub category: Category,
    /// The situation in words.
    pub situation: String,
    /// The start.
    pub start: Start,
    /// The person's behaviour.
    pub partner: Partner,
    /// Steps the test runs.
    pub horizon: u64,
    /// When it passes.
    pub pass: Predicate,
    /// Irrelevant changes it must pass under too.
    pub variants: Vec<Variant>,
}

/// A test file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {field}: {message}", file.display())]
pub struct FormatError {
    /// The file.
    pub file: PathBuf,
    /// The field, as a path (`start.goal[2].to`), or `(file)`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl RobustnessTest {
    /// Reads and checks the test in `path`.
    pub fn read(path: &Path) -> Result<Self, FormatError> {
        let err = |field: &str, message: String| FormatError {
            file: path.to_owned(),
            field: field.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err("(file)", e.to_string()))?;
        Self::parse(&text).map_err(|(field, message)| err(&field, message))
    }

    /// Parses and checks a test's JSON text; the error is (field, message).
    pub fn parse(text: &str) -> Result<Self, (String, String)> {
        let mut de = serde_json::Deserializer::from_str(text);
        let test: Self = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = e.path().to_string();
            let field = if field == "." { "(file)".into() } else { field };
            (field, e.into_inner().to_string())
        })?;
        test.check()?;
        Ok(test)
    }

    /// The world size.
    pub fn world_size(&self) -> WorldSize {
        let [w, h, d] = self.start.world_size.map(|v| v as usize);
        WorldSize::new(w, h, d)
    }

    /// Every rule serde cannot express.
    fn check(&self) -> Result<(), (String, String)> {
        let bad = |field: String, message: String| Err((field, message));
        if self.id.is_empty()
            || !self
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return bad(
                "id".into(),
                format!("{:?} is not a name of letters, digits and _", self.id),
            );
        }
        let [w, h, d] = self.start.world_size;
        if !(w >= 3 && h >= 3 && d >= 3 && w <= 64 && h <= 64 && d <= 64) {
            return bad(
                "start.world_size".into(),
                format!("{:?}: each side must be 3 to 64", self.start.world_size),
            );
        }
        if !(1..=MAX_HORIZON).contains(&self.horizon) {
            return bad(
                "horizon".into(),
                format!("{} is not 1 to {MAX_HORIZON}", self.horizon),
            );
        }
        if self.variants.len() < MIN_VARIANTS {
            return bad(
                "variants".into(),
                format!(
                    "{} given; a test needs at least {MIN_VARIANTS} over irrelevant factors",
                    self.variants.len()
                ),
            );
        }
        let size = self.world_size();
        // Every cell the test names, with its field, checked under every
        // translation.
        let mut cells: Vec<(String, [i32; 3])> = Vec::new();
        for (name, fills) in [("goal", &self.start.goal), ("world", &self.start.world)] {
            for (k, f) in fills.iter().enumerate() {
                cells.push((format!("start.{name}[{k}].from"), f.from));
                if let Some(to) = f.to {
                    cells.push((format!("start.{name}[{k}].to"), to));
                }
            }
        }
        for (k, e) in self.start.history.iter().enumerate() {
            cells.push((format!("start.history[{k}]"), edit_cell(e)));
        }
        match &self.partner {
            Partner::Stubborn { cell } => cells.push(("partner.stubborn.cell".into(), *cell)),
            Partner::Actions(edits) => {
                for (k, e) in edits.iter().enumerate() {
                    if e.by_assistant() {
                        return bad(
                            format!("partner.actions[{k}]"),
                            "the partner is the person: its script takes person_places and \
                             person_breaks only"
                                .into(),
                        );
                    }
                    cells.push((format!("partner.actions[{k}]"), edit_cell(e)));
                }
            }
            Partner::Agent(spec) if spec.trim().is_empty() => {
                return bad("partner.agent".into(), "an empty agent spec".into());
            }
            _ => {}
        }
        self.pass.cells("pass", &mut cells);
        let offsets =
            std::iter::once([0, 0, 0]).chain(self.variants.iter().filter_map(|v| match v {
                Variant::Translate(o) => Some(*o),
                _ => None,
            }));
        for offset in offsets {
            for (field, c) in &cells {
                let moved = Cell::new(c[0] + offset[0], c[1] + offset[1], c[2] + offset[2]);
                if !size.contains(moved) {
                    let how = if offset == [0, 0, 0] {
                        String::new()
                    } else {
                        format!(" translated by {offset:?}")
                    };
                    return bad(
                        field.clone(),
                        format!("{c:?}{how} is outside the {w}x{h}x{d} world"),
                    );
                }
            }
        }
        let positions =
            std::iter::once(("start".to_owned(), self.start.person, self.start.assistant)).chain(
                self.variants
                    .iter()
                    .enumerate()
                    .filter_map(|(k, v)| match v {
                        Variant::Positions { person, assistant } => {
                            Some((format!("variants[{k}].positions"), *person, *assistant))
                        }
                        _ => None,
                    }),
            );
        let translations: Vec<[i32; 3]> = std::iter::once([0, 0, 0])
            .chain(self.variants.iter().filter_map(|v| match v {
                Variant::Translate(o) => Some(*o),
                _ => None,
            }))
            .collect();
        for (field, person, assistant) in positions {
            // The test's own positions move with its translations; a variant's
            // positions are used as written.
            let offsets = if field == "start" {
                &translations[..]
            } else {
                &[[0, 0, 0]][..]
            };
            for (who, p) in [("person", person), ("assistant", assistant)] {
                for o in offsets {
                    let q = [0, 1, 2].map(|k| p[k] + f64::from(o[k]));
                    let inside = q.iter().all(|v| v.is_finite())
                        && (0.0..w as f64).contains(&q[0])
                        && (1.0..h as f64 - 1.0).contains(&q[1])
                        && (0.0..d as f64).contains(&q[2]);
                    if !inside {
                        let how = if *o == [0, 0, 0] {
                            String::new()
                        } else {
                            format!(" translated by {o:?}")
                        };
                        return bad(
                            format!("{field}.{who}"),
                            format!(
                                "{p:?}{how} is not a feet position inside the world, above the floor and below the top"
                            ),
                        );
                    }
                }
            }
        }
        if self.start.goal.is_empty() {
            return bad(
                "start.goal".into(),
                "no fills: the goal would be the empty world".into(),
            );
        }
        Ok(())
    }
}

/// Reads every `*.json` test in `dir`, in file-name order; two tests with one
/// id are an error naming the second file.
pub fn read_suite(dir: &Path) -> Result<Vec<RobustnessTest>, FormatError> {
    let err = |file: &Path, field: &str, message: String| FormatError {
        file: file.to_owned(),
        field: field.to_owned(),
        message,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| err(dir, "(folder)", e.to_string()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut tests: Vec<(PathBuf, RobustnessTest)> = Vec::with_capacity(files.len());
    for file in files {
        let test = RobustnessTest::read(&file)?;
        if let Some((first, _)) = tests.iter().find(|(_, t)| t.id == test.id) {
            return Err(err(
                &file,
                "id",
                format!("{:?} is also the id of {}", test.id, first.display()),
            ));
        }
        tests.push((file, test));
    }
    Ok(tests.into_iter().map(|(_, t)| t).collect())
}

fn edit_cell(edit: &Edit) -> [i32; 3] {
    edit.cell_and_block().0
}

impl Edit {
    /// The cell and what it holds after: a block, or `None` for a break.
    pub fn cell_and_block(&self) -> ([i32; 3], Option<BlockId>) {
        match self {
            Self::PersonPlaces { cell, block } | Self::AssistantPlaces { cell, block } => {
                (*cell, Some(block.0))
            }
            Self::PersonBreaks { cell } | Self::AssistantBreaks { cell } => (*cell, None),
        }
    }

    /// Whether the assistant makes it (else the person).
    pub fn by_assistant(&self) -> bool {
        matches!(
            self,
            Self::AssistantPlaces { .. } | Self::AssistantBreaks { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small valid test: a wall of planks with one gap, the person idle.
    fn valid() -> serde_json::Value {
        serde_json::json!({
            "id": "sr_wall_gap",
            "category": "SR",
            "situation": "A wall of planks is finished but for one cell.",
            "start": {
                "goal": [{"from": [2, 2, 2], "to": [6, 4, 2], "block": "planks"}],
                "world": [{"from": [2, 2, 2], "to": [6, 4, 2], "block": "planks"},
                          {"from": [4, 3, 2], "block": "air"}],
                "person": [0.5, 2.0, 0.5],
                "assistant": [8.5, 2.0, 5.5]
            },
            "partner": "stationary",
            "horizon": 100,
            "pass": {"cell_is": {"cell": [4, 3, 2], "block": "planks"}},
            "variants": [{"translate": [1, 0, 3]}, {"seed": 7}]
        })
    }

    fn parse(v: &serde_json::Value) -> Result<RobustnessTest, (String, String)> {
        RobustnessTest::parse(&v.to_string())
    }

    #[test]
    fn a_valid_test_reads_with_its_fills_and_variants() {
        let t = parse(&valid()).unwrap();
        assert_eq!(t.category, Category::State);
        assert_eq!(t.start.world_size, [11, 10, 10]);
        assert_eq!(t.start.goal[0].cells().count(), 15);
        assert_eq!(
            t.start.world[1].cells().collect::<Vec<_>>(),
            [Cell::new(4, 3, 2)]
        );
        assert_eq!(t.variants.len(), 2);
        assert_eq!(t.partner, Partner::Stationary);
    }

    /// An edit that breaks a valid test.
    type Change = Box<dyn Fn(&mut serde_json::Value)>;

    /// Each malformed file names the field that is wrong.
    #[test]
    fn errors_name_the_field() {
        let cases: Vec<(&str, Change, &str)> = vec![
            (
                "start.goal[0].block",
                Box::new(|v| v["start"]["goal"][0]["block"] = "gold".into()),
                "not an MBAG block",
            ),
            (
                "category",
                Box::new(|v| v["category"] = "XR".into()),
                "unknown variant",
            ),
            (
                "start.goal[0].to",
                Box::new(|v| v["start"]["goal"][0]["to"] = serde_json::json!([6, 4, 12])),
                "outside",
            ),
            (
                "start.goal[0].to",
                Box::new(|v| v["variants"][0]["translate"] = serde_json::json!([7, 0, 0])),
                "translated by [7, 0, 0]",
            ),
            (
                "pass.any_of[1].cell_is.cell",
                Box::new(|v| {
                    v["pass"] = serde_json::json!({"any_of": [
                        {"wrong_places_at_most": 0},
                        {"cell_is": {"cell": [4, 12, 2], "block": "planks"}}
                    ]})
                }),
                "outside",
            ),
            ("horizon", Box::new(|v| v["horizon"] = 0.into()), "not 1 to"),
            (
                "variants",
                Box::new(|v| v["variants"] = serde_json::json!([{"seed": 1}])),
                "at least 2",
            ),
            (
                "start.person",
                Box::new(|v| v["start"]["person"] = serde_json::json!([0.5, 0.5, 0.5])),
                "feet position",
            ),
            (
                "start",
                Box::new(|v| v["start"]["colour"] = "red".into()),
                "unknown field",
            ),
            (
                "partner",
                Box::new(|v| v["partner"] = "dancing".into()),
                "unknown variant",
            ),
            (
                "id",
                Box::new(|v| v["id"] = "wall gap!".into()),
                "not a name",
            ),
        ];
        for (field, change, words) in cases {
            let mut v = valid();
            change(&mut v);
            let (got, message) = parse(&v).expect_err(field);
            assert!(got.starts_with(field), "{field}: reported {got}: {message}");
            assert!(message.contains(words), "{field}: {message}");
        }
    }

    #[test]
    fn a_file_error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.json");
        let mut v = valid();
        v["start"]["goal"][0]["block"] = "gold".into();
        std::fs::write(&path, v.to_string()).unwrap();
        let err = RobustnessTest::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("broken.json") && err.contains("start.goal[0].block"),
            "{err}"
        );
        let missing = RobustnessTest::read(&dir.path().join("none.json")).unwrap_err();
        assert_eq!(missing.field, "(file)");
    }

    #[test]
    fn a_suite_reads_in_order_and_refuses_a_repeated_id() {
        let dir = tempfile::tempdir().unwrap();
        let mut second = valid();
        second["id"] = "ar_blocked_route".into();
        std::fs::write(dir.path().join("b.json"), second.to_string()).unwrap();
        std::fs::write(dir.path().join("a.json"), valid().to_string()).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a test").unwrap();
        let ids: Vec<String> = read_suite(dir.path())
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(ids, ["sr_wall_gap", "ar_blocked_route"]);
        std::fs::write(dir.path().join("c.json"), valid().to_string()).unwrap();
        let err = read_suite(dir.path()).unwrap_err();
        assert!(
            err.file.ends_with("c.json") && err.message.contains("a.json"),
            "{err}"
        );
    }
}
