//! Verification of the golden goal transforms (`goals/goal_transforms.json.gz`, see
//! the golden README's "Goal transforms" section).
//!
//! Every part of the file becomes one [`CaseOutcome`]:
//! * each source: what our generator or house loader yields (CraftAssist and GrabCraft
//!   houses from the shared house directory, `basic`, `simple_overhang`, `tutorial`
//!   generated at 9x8x8);
//! * each source's facts (density, single-component checks for 6/18/26);
//! * each case: the transform (built from its registry name and JSON config) wrapped
//!   around a `set_goal` generator holding the case's input, asked for the case's
//!   size; the output must match cell for cell, or, where the reference raised, we
//!   must fail with an error of the same Python exception class;
//! * each stage of the human-study chains, chained on our own outputs (the
//!   `area_sample` stages all start from the last stage before them).
//!
//! The house directory is the golden file's `../../../data/houses` (the shared
//! layout), falling back to the generators' default directories.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;

use crate::sim::goal::components::Connectivity;
use crate::sim::goal::config::{ConfigError, TransformConfig, structure_from_json};
use crate::sim::goal::dataset::{
    CraftAssist, DEFAULT_CRAFTASSIST_DIR, DEFAULT_GRABCRAFT_DIR, Grabcraft,
};
use crate::sim::goal::grid::density;
use crate::sim::goal::simple::{Basic, SetGoal, SimpleOverhang, Tutorial};
use crate::sim::goal::transform::crop::UNBOUNDED;
use crate::sim::goal::transform::filter::is_single_cc;
use crate::sim::goal::{GoalError, GoalGenerator};
use crate::sim::{Blocks, WorldSize};

/// A golden file that cannot be read or does not have the expected shape.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid gzip JSON (e.g. truncated).
    #[error("{path} is not valid gzip-compressed JSON: {message}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// The decoder's message.
        message: String,
    },
    /// The JSON lacks a field or has one of the wrong type.
    #[error("{path}: {what}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong, with its location.
        what: String,
    },
}

/// How a check failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Mismatch {
    /// The structure has the wrong size.
    Size {
        /// The reference's size.
        expected: WorldSize,
        /// Ours.
        got: WorldSize,
    },
    /// The first differing cell, in C order.
    Cell {
        /// `[x, y, z]`.
        cell: [usize; 3],
        /// "block" or "state".
        field: &'static str,
        /// The reference's value.
        expected: u8,
        /// Ours.
        got: u8,
    },
    /// We failed where the reference produced a structure.
    UnexpectedError(String),
    /// The reference raised but we produced a structure.
    MissingError {
        /// The reference's exception text.
        expected: String,
        /// The size of the structure we produced instead.
        got: WorldSize,
    },
    /// Both failed, but not in the same way.
    WrongError {
        /// The reference's exception text.
        expected: String,
        /// Our error.
        got: String,
    },
    /// A scalar fact differs.
    Fact {
        /// Which fact.
        what: String,
        /// The reference's value.
        expected: String,
        /// Ours.
        got: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Size { expected, got } => write!(f, "size: expected {expected}, got {got}"),
            Self::Cell {
                cell,
                field,
                expected,
                got,
            } => write!(
                f,
                "{field} at ({}, {}, {}): expected {expected}, got {got}",
                cell[0], cell[1], cell[2]
            ),
            Self::UnexpectedError(e) => write!(f, "expected a structure, got error: {e}"),
            Self::MissingError { expected, got } => {
                write!(f, "expected error {expected}, got a {got} structure")
            }
            Self::WrongError { expected, got } => {
                write!(f, "expected error {expected}, got error: {got}")
            }
            Self::Fact {
                what,
                expected,
                got,
            } => write!(f, "{what}: expected {expected}, got {got}"),
        }
    }
}

/// The result of one golden check.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    /// Which check (source, transform, config and size).
    pub description: String,
    /// The first mismatch, `None` when the check passed.
    pub mismatch: Option<Mismatch>,
}

impl CaseOutcome {
    /// Whether the check passed.
    pub fn passed(&self) -> bool {
        self.mismatch.is_none()
    }
}

impl fmt::Display for CaseOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.mismatch {
            None => write!(f, "PASS {}", self.description),
            Some(m) => write!(f, "FAIL {}: {m}", self.description),
        }
    }
}

/// The first difference between two structures, if any.
pub fn compare(expected: &Blocks, got: &Blocks) -> Option<Mismatch> {
    if expected.size() != got.size() {
        return Some(Mismatch::Size {
            expected: expected.size(),
            got: got.size(),
        });
    }
    let size = expected.size();
    let cell_of = |i: usize| {
        let hd = size.height * size.depth;
        [i / hd, (i % hd) / size.depth, i % size.depth]
    };
    for (field, e, g) in [
        ("block", expected.ids(), got.ids()),
        ("state", expected.states(), got.states()),
    ] {
        if let Some(i) = (0..e.len()).find(|&i| e[i] != g[i]) {
            return Some(Mismatch::Cell {
                cell: cell_of(i),
                field,
                expected: e[i],
                got: g[i],
            });
        }
    }
    None
}

/// Why we produced no structure: a config we cannot parse, or a generation error.
#[derive(Debug)]
enum Failure {
    Config(ConfigError),
    Goal(GoalError),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Goal(e) => e.fmt(f),
        }
    }
}

impl Failure {
    fn reference_exception(&self) -> Option<&'static str> {
        match self {
            Self::Config(_) => None,
            Self::Goal(e) => e.reference_exception(),
        }
    }
}

impl From<GoalError> for Failure {
    fn from(e: GoalError) -> Self {
        Self::Goal(e)
    }
}

/// Compares a generation result with the reference's structure or exception text.
fn judge(expected: Result<&Blocks, &str>, got: Result<Blocks, Failure>) -> Option<Mismatch> {
    match (expected, got) {
        (Ok(e), Ok(g)) => compare(e, &g),
        (Ok(_), Err(err)) => Some(Mismatch::UnexpectedError(err.to_string())),
        (Err(e), Ok(g)) => Some(Mismatch::MissingError {
            expected: e.to_owned(),
            got: g.size(),
        }),
        (Err(e), Err(err)) => {
            // The reference's text is `ExceptionClass('message')`.
            let class = e.split('(').next().unwrap_or(e);
            if err.reference_exception() == Some(class) {
                None
            } else {
                Some(Mismatch::WrongError {
                    expected: e.to_owned(),
                    got: err.to_string(),
                })
            }
        }
    }
}

struct Reader<'a> {
    path: &'a Path,
}

impl Reader<'_> {
    fn format(&self, what: String) -> GoldenError {
        GoldenError::Format {
            path: self.path.to_owned(),
            what,
        }
    }

    fn field<'v>(&self, value: &'v Value, key: &str, at: &str) -> Result<&'v Value, GoldenError> {
        value
            .get(key)
            .ok_or_else(|| self.format(format!("{at}: missing field {key:?}")))
    }

    fn str<'v>(&self, value: &'v Value, key: &str, at: &str) -> Result<&'v str, GoldenError> {
        self.field(value, key, at)?
            .as_str()
            .ok_or_else(|| self.format(format!("{at}: field {key:?} is not a string")))
    }

    fn array<'v>(
        &self,
        value: &'v Value,
        key: &str,
        at: &str,
    ) -> Result<&'v Vec<Value>, GoldenError> {
        self.field(value, key, at)?
            .as_array()
            .ok_or_else(|| self.format(format!("{at}: field {key:?} is not an array")))
    }

    fn structure(&self, value: &Value, key: &str, at: &str) -> Result<Blocks, GoldenError> {
        structure_from_json(self.field(value, key, at)?)
            .map_err(|e| self.format(format!("{at}: structure {key:?}: {e}")))
    }

    fn size(&self, value: &Value, key: &str, at: &str) -> Result<WorldSize, GoldenError> {
        let v = self.field(value, key, at)?;
        serde_json::from_value::<[usize; 3]>(v.clone())
            .map(WorldSize::from)
            .map_err(|e| self.format(format!("{at}: size {key:?}: {e}")))
    }
}

/// Reads and decompresses a gzip JSON golden file.
pub fn read_gzip_json(path: &Path) -> Result<Value, GoldenError> {
    let file = std::fs::File::open(path).map_err(|source| GoldenError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .map_err(|e| GoldenError::Decode {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
    serde_json::from_str(&text).map_err(|e| GoldenError::Decode {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// Runs a transform (registry name and JSON config) around a generator that returns
/// `input`, asking for `size`.
fn run_transform(
    name: &str,
    config: &Value,
    input: &Blocks,
    size: WorldSize,
) -> Result<Blocks, Failure> {
    let transform = TransformConfig::from_json(name, config).map_err(Failure::Config)?;
    let mut generator = transform.wrap(Box::new(SetGoal {
        goals: vec![input.clone()],
    }));
    // The goldens' transforms are deterministic; the seed only feeds unused draws.
    let mut rng = StdRng::seed_from_u64(0);
    Ok(generator.generate(size, &mut rng)?)
}

/// Our version of a golden source, by its name.
fn our_source(name: &str, houses: &Path) -> Result<Blocks, GoalError> {
    let mut rng = StdRng::seed_from_u64(0);
    let size = WorldSize::new(9, 8, 8);
    let dataset_house = |collection: &str, default: &str| -> PathBuf {
        let dir = houses.join(collection);
        if dir.is_dir() {
            dir
        } else {
            PathBuf::from(default)
        }
    };
    if let Some(rest) = name.strip_prefix("craftassist_") {
        let (subset, id) = rest.split_once('_').unwrap_or((rest, ""));
        let dir = dataset_house("craftassist", DEFAULT_CRAFTASSIST_DIR);
        let loaded = CraftAssist::load(&dir, subset, Some(id))?;
        return Ok(loaded.houses()[0].blocks.clone());
    }
    if let Some(id) = name.strip_prefix("grabcraft_") {
        let dir = dataset_house("grabcraft", DEFAULT_GRABCRAFT_DIR);
        let loaded = Grabcraft::load(&dir, "train")?;
        return match loaded.houses().iter().find(|h| h.id == id) {
            Some(h) => Ok(h.blocks.clone()),
            None => Err(GoalError::NothingFits {
                what: "grabcraft",
                count: loaded.houses().len(),
                size: UNBOUNDED,
            }),
        };
    }
    match name {
        "basic_9x8x8" => Basic.generate(size, &mut rng),
        "simple_overhang_9x8x8" => SimpleOverhang.generate(size, &mut rng),
        "tutorial_9x8x8" => Tutorial.generate(size, &mut rng),
        _ => Err(GoalError::NothingFits {
            what: "unknown golden source",
            count: 0,
            size,
        }),
    }
}

fn short_config(config: &Value) -> String {
    match config.as_object() {
        Some(m) if m.is_empty() => String::new(),
        _ => format!(" {config}"),
    }
}

/// Checks every source, fact, case and human-study-chain stage of the golden goal
/// transforms file at `path` against this implementation.
pub fn verify_goal_transforms(path: &Path) -> Result<Vec<CaseOutcome>, GoldenError> {
    let r = Reader { path };
    let root = read_gzip_json(path)?;
    let houses = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .and_then(Path::parent)
        .map(|shared| shared.join("data").join("houses"))
        .unwrap_or_default();
    let mut outcomes = Vec::new();

    // Sources.
    let sources = r
        .field(&root, "sources", "top level")?
        .as_object()
        .ok_or_else(|| r.format("top level: \"sources\" is not an object".into()))?;
    let mut source_blocks = std::collections::BTreeMap::new();
    for (name, value) in sources {
        let expected =
            structure_from_json(value).map_err(|e| r.format(format!("source {name}: {e}")))?;
        outcomes.push(CaseOutcome {
            description: format!("source {name}"),
            mismatch: judge(
                Ok(&expected),
                our_source(name, &houses).map_err(Failure::from),
            ),
        });
        source_blocks.insert(name.clone(), expected);
    }

    // Facts.
    for (i, fact) in r.array(&root, "facts", "top level")?.iter().enumerate() {
        let at = format!("facts[{i}]");
        let name = r.str(fact, "source", &at)?;
        let blocks = source_blocks
            .get(name)
            .ok_or_else(|| r.format(format!("{at}: unknown source {name:?}")))?;
        let expected_density = r
            .field(fact, "density", &at)?
            .as_f64()
            .ok_or_else(|| r.format(format!("{at}: density is not a number")))?;
        let got = density(blocks);
        outcomes.push(CaseOutcome {
            description: format!("fact {name} density"),
            mismatch: (got != expected_density).then(|| Mismatch::Fact {
                what: "density".into(),
                expected: expected_density.to_string(),
                got: got.to_string(),
            }),
        });
        let single = r
            .field(fact, "is_single_cc", &at)?
            .as_object()
            .ok_or_else(|| r.format(format!("{at}: is_single_cc is not an object")))?;
        for (conn, value) in single {
            let connectivity = conn
                .parse::<u32>()
                .ok()
                .and_then(|c| Connectivity::try_from(c).ok())
                .ok_or_else(|| r.format(format!("{at}: bad connectivity {conn:?}")))?;
            let expected = value
                .as_bool()
                .ok_or_else(|| r.format(format!("{at}: is_single_cc[{conn}] is not a bool")))?;
            let got = is_single_cc(blocks, connectivity);
            outcomes.push(CaseOutcome {
                description: format!("fact {name} is_single_cc({conn})"),
                mismatch: (got != expected).then(|| Mismatch::Fact {
                    what: format!("is_single_cc({conn})"),
                    expected: expected.to_string(),
                    got: got.to_string(),
                }),
            });
        }
    }

    // Cases.
    for (i, case) in r.array(&root, "cases", "top level")?.iter().enumerate() {
        let at = format!("cases[{i}]");
        let source = r.str(case, "source", &at)?;
        let name = r.str(case, "transform", &at)?;
        let config = r.field(case, "config", &at)?;
        let size = r.size(case, "size", &at)?;
        let input = r.structure(case, "input", &at)?;
        let got = run_transform(name, config, &input, size);
        let mismatch = match case.get("error") {
            Some(error) => {
                let text = error
                    .as_str()
                    .ok_or_else(|| r.format(format!("{at}: error is not a string")))?;
                judge(Err(text), got)
            }
            None => judge(Ok(&r.structure(case, "output", &at)?), got),
        };
        outcomes.push(CaseOutcome {
            description: format!(
                "case {i}: {name}{} at {size} on {source}",
                short_config(config)
            ),
            mismatch,
        });
    }

    // Human-study chains.
    for (i, chain) in r
        .array(&root, "human_study_chains", "top level")?
        .iter()
        .enumerate()
    {
        let at = format!("human_study_chains[{i}]");
        let source = r.str(chain, "source", &at)?;
        let mut previous: Option<Blocks> = None;
        let mut last_unsized: Option<Blocks> = None;
        for (j, stage) in r.array(chain, "stages", &at)?.iter().enumerate() {
            let at = format!("{at}.stages[{j}]");
            let name = r.str(stage, "stage", &at)?;
            let expected = r.structure(stage, "structure", &at)?;
            let sized = stage.get("size").is_some();
            let size = if sized {
                r.size(stage, "size", &at)?
            } else {
                UNBOUNDED
            };
            let got = if name == "raw" {
                our_source(source, &houses).map_err(Failure::from)
            } else {
                let input = if sized {
                    last_unsized.clone()
                } else {
                    previous.clone()
                };
                match input {
                    Some(input) => {
                        let config = stage.get("config").cloned().unwrap_or(Value::Null);
                        run_transform(name, &config, &input, size)
                    }
                    None => {
                        return Err(r.format(format!("{at}: stage {name:?} has no input stage")));
                    }
                }
            };
            // Continue the chain from our own result; stop it at our first failure.
            let (mismatch, next) = match got {
                Ok(blocks) => (compare(&expected, &blocks), Some(blocks)),
                Err(e) => (Some(Mismatch::UnexpectedError(e.to_string())), None),
            };
            outcomes.push(CaseOutcome {
                description: format!("chain {source} stage {j} {name} at {size}"),
                mismatch,
            });
            let Some(blocks) = next else { break };
            if !sized {
                last_unsized = Some(blocks.clone());
            }
            previous = Some(blocks);
        }
    }
    Ok(outcomes)
}
