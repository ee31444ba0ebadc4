//! Learning the context model: partial builds of training houses, counted.
//!
//! A sample is a goal house placed in the world as the human-study chain
//! places it, built part of the way the way people build (the order of
//! `train::assistant::partial_builds`: layer by layer, each layer grown from
//! where it started, sometimes in no order, now and then a wrong block). Every
//! cell of the sample's world adds one count to the goal block of its context
//! at each level. Contexts seen fewer than `min_count` times are dropped from
//! the finer levels: they would barely move a prediction and make most of the
//! file.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rustc_hash::FxHashMap;
use serde::Deserialize;

use super::build_order::{add_mistakes, build_order};
use super::context::LEVELS;
use super::score::{Observation, Scores, score_with};
use super::{Counts, GoalModel, Smoothing};
use crate::sim::block::{Blocks, NUM_BLOCKS};
use crate::sim::config::Config;
use crate::sim::coords::CellIndex;
use crate::sim::env::Env;
use crate::sim::goal::{GeneratorConfig, GoalConfig, GoalError, GoalGenerator};

/// How often a sample carries a few wrong blocks.
const MISTAKE_PROBABILITY: f64 = 0.3;

/// Why learning failed.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// The corpus index or a house could not be read.
    #[error("house corpus {path}: {reason}")]
    Corpus {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// No goal could be drawn.
    #[error("drawing goals: {0}")]
    Goal(#[from] GoalError),
}

/// One entry of the corpus' `index.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct CorpusEntry {
    /// The house file, relative to the corpus folder.
    pub file: String,
    /// `train` or `test`.
    pub split: String,
    /// The building's style (MineColonies); none for the GDMC settlements.
    pub style: Option<String>,
    /// The collection it came from.
    pub collection: String,
}

/// The house corpus' index (`../shared/data/house_corpus/index.json`).
#[derive(Debug, Clone)]
pub struct CorpusIndex {
    root: PathBuf,
    entries: Vec<CorpusEntry>,
}

impl CorpusEntry {
    /// The style, or the collection where the building has none (GDMC).
    pub fn group(&self) -> &str {
        self.style.as_deref().unwrap_or(&self.collection)
    }
}

impl CorpusIndex {
    /// Reads `root/index.json`.
    pub fn load(root: &Path) -> Result<Self, LearnError> {
        let path = root.join("index.json");
        let text = std::fs::read_to_string(&path).map_err(|e| LearnError::Corpus {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let entries: Vec<CorpusEntry> =
            serde_json::from_str(&text).map_err(|e| LearnError::Corpus {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            root: root.to_owned(),
            entries,
        })
    }

    /// Every entry.
    pub fn entries(&self) -> &[CorpusEntry] {
        &self.entries
    }

    /// The training entries, split into those learned from and those that
    /// choose the smoothing: every `every`th training style (sorted by name)
    /// is held out whole, so that calibration sees styles training did not.
    pub fn training_split(&self, every: usize) -> (Vec<&CorpusEntry>, Vec<&CorpusEntry>) {
        let mut styles: Vec<&str> = self
            .entries
            .iter()
            .filter(|e| e.split == "train")
            .map(CorpusEntry::group)
            .collect();
        styles.sort_unstable();
        styles.dedup();
        let held: Vec<&str> = styles
            .iter()
            .enumerate()
            .filter(|(i, _)| every > 0 && i % every == every - 1)
            .map(|(_, s)| *s)
            .collect();
        self.entries
            .iter()
            .filter(|e| e.split == "train")
            .partition(|e| !held.contains(&e.group()))
    }

    /// The entries of `split`.
    pub fn split(&self, split: &str) -> Vec<&CorpusEntry> {
        self.entries.iter().filter(|e| e.split == split).collect()
    }

    /// The houses of `entries`, read.
    pub fn houses(&self, entries: &[&CorpusEntry]) -> Result<Vec<Blocks>, LearnError> {
        entries
            .iter()
            .map(|e| {
                let path = self.root.join(&e.file);
                crate::sim::goal::dataset::load_house(&path)
                    .map(|h| h.blocks)
                    .map_err(|err| LearnError::Corpus {
                        path,
                        reason: err.to_string(),
                    })
            })
            .collect()
    }
}

/// Goals from `houses` through the held-out evaluation chain (the human-study
/// transforms, scaling down by up to 4).
pub fn goals_of(houses: Vec<Blocks>) -> GoalConfig {
    GoalConfig {
        generator: GeneratorConfig::SetGoal(houses),
        transforms: GoalConfig::held_out(Path::new(".")).transforms,
    }
}

/// Partial builds of goals, as training and scoring read them.
#[derive(Debug)]
pub struct Builds {
    env: Env,
    goals: Box<dyn GoalGenerator>,
    rng: StdRng,
    /// The least and most of a goal a sample has built.
    built: (f64, f64),
}

impl Builds {
    /// Builds of goals from `goals` in worlds of `env`, between `built.0` and
    /// `built.1` of each goal's blocks placed.
    pub fn new(
        env: &Config,
        goals: &GoalConfig,
        seed: u64,
        built: (f64, f64),
    ) -> Result<Self, LearnError> {
        Ok(Self {
            env: Env::new(env.clone()),
            goals: goals.build()?,
            rng: StdRng::seed_from_u64(seed),
            built,
        })
    }

    /// The next goal and `per_goal` partial builds of it.
    pub fn next_goal(&mut self, per_goal: usize) -> Result<Vec<Observation>, LearnError> {
        let goal = self.env.generate_goal(self.goals.as_mut(), &mut self.rng)?;
        let size = goal.size();
        let start = Blocks::initial_world(size);
        let order = build_order(&start, &goal, &mut self.rng);
        let mut out = Vec::with_capacity(per_goal);
        for _ in 0..per_goal {
            let fraction = self.rng.random_range(self.built.0..=self.built.1);
            let placed = (fraction * order.len() as f64).round() as usize;
            let mut world = start.clone();
            for &i in &order[..placed] {
                world.set_at(CellIndex(i as u32), goal.id_at(CellIndex(i as u32)));
            }
            if self.rng.random_bool(MISTAKE_PROBABILITY) {
                let mut last = vec![0i8; size.num_cells()];
                add_mistakes(&mut world, &goal, &mut last, &mut self.rng);
            }
            out.push(Observation::new(world, goal.clone()));
        }
        Ok(out)
    }

    /// `goals` goals' worth of builds, `per_goal` each.
    pub fn take(&mut self, goals: usize, per_goal: usize) -> Result<Vec<Observation>, LearnError> {
        let mut out = Vec::with_capacity(goals * per_goal);
        for _ in 0..goals {
            out.extend(self.next_goal(per_goal)?);
        }
        Ok(out)
    }
}

/// Counts goal blocks per context.
#[derive(Debug, Default)]
pub struct Counter {
    tables: [FxHashMap<u128, Counts>; LEVELS],
    samples: usize,
}

impl Counter {
    /// Counts every cell of `observation`'s world against its goal.
    pub fn add(&mut self, observation: &Observation) {
        let view = observation.view();
        let size = view.size();
        for i in 0..size.num_cells() {
            let keys = view.keys(size.cell(CellIndex(i as u32)));
            let goal = usize::from(observation.goal.ids()[i]);
            for (table, key) in self.tables.iter_mut().zip(keys) {
                table.entry(key).or_insert([0; NUM_BLOCKS])[goal] += 1;
            }
        }
        self.samples += 1;
    }

    /// Adds another counter's counts.
    pub fn merge(&mut self, other: Self) {
        for (mine, theirs) in self.tables.iter_mut().zip(other.tables) {
            for (key, counts) in theirs {
                let entry = mine.entry(key).or_insert([0; NUM_BLOCKS]);
                for (a, b) in entry.iter_mut().zip(counts) {
                    *a += b;
                }
            }
        }
        self.samples += other.samples;
    }

    /// Samples counted.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The model, dropping contexts seen fewer than `min_count` times below the
    /// coarsest level.
    pub fn finish(
        self,
        min_count: u32,
        smoothing: Smoothing,
        provenance: serde_json::Value,
    ) -> GoalModel {
        let mut tables = self.tables;
        for table in tables.iter_mut().skip(1) {
            table.retain(|_, c| c.iter().sum::<u32>() >= min_count);
            table.shrink_to_fit();
        }
        GoalModel::new(tables, smoothing, provenance)
    }
}

/// Counts builds of `goals` goals from `goals_config` on `threads` threads,
/// `per_goal` builds each, with a progress callback after every goal.
pub fn count(
    env: &Config,
    goals_config: &GoalConfig,
    goals: usize,
    per_goal: usize,
    seed: u64,
    threads: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<Counter, LearnError> {
    let counters = super::on_threads(threads, goals, &|t, mine| {
        let mut builds = Builds::new(
            env,
            goals_config,
            seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t as u64 + 1)),
            (0.0, 0.9),
        )?;
        let mut counter = Counter::default();
        for _ in 0..mine {
            for observation in builds.next_goal(per_goal)? {
                counter.add(&observation);
            }
            progress();
        }
        Ok::<_, LearnError>(counter)
    });
    let mut total = Counter::default();
    for counter in counters {
        total.merge(counter?);
    }
    Ok(total)
}

/// The smoothing with the lowest cross-entropy on `validation` (cells that are
/// air now: where the model's confidence decides a place), over a grid of
/// `alpha` and temperature, with the scores of each tried.
pub fn fit(model: &GoalModel, validation: &[Observation]) -> (Smoothing, Vec<(Smoothing, Scores)>) {
    let mut tried = Vec::new();
    for alpha in [2.0, 8.0, 32.0, 64.0, 128.0, 256.0] {
        for temperature in [0.8, 0.9, 1.0, 1.2, 1.5] {
            let smoothing = Smoothing { alpha, temperature };
            let scores = score_with(validation, |view, out| {
                let size = view.size();
                for (i, p) in out.iter_mut().enumerate() {
                    let keys = view.keys(size.cell(CellIndex(i as u32)));
                    *p = model.probabilities_with(&keys, smoothing);
                }
            });
            tried.push((smoothing, scores));
        }
    }
    let best = tried
        .iter()
        .min_by(|a, b| a.1.air_cross_entropy.total_cmp(&b.1.air_cross_entropy))
        .map(|(s, _)| *s)
        .unwrap_or_default();
    (best, tried)
}

/// Seconds since `started`, for provenance.
pub fn elapsed(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 10.0).round() / 10.0
}
