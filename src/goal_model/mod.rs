//! A goal predictor learned by counting: each cell's goal block given what is
//! built around it, estimated from partial builds of real houses.
//!
//! The network's goal head, trained on procedural houses and then on the house
//! corpus, was right only 20-40% of the time where it was more than 2/3 sure
//! (`models/README.md`), and an assistant's place pays only above 2/3. This
//! model is built to be right where it is sure:
//!
//! - **Local and turn-free.** It reads only the blocks near a cell, in all eight
//!   orientations of the square ([`context`]), so what it learns about walls,
//!   corners and columns carries over to house styles it never saw.
//! - **Counted, then smoothed.** Every level of detail keeps the goal blocks seen
//!   in training for each context ([`learn`]); a prediction starts from the
//!   coarsest level and moves towards each finer one in proportion to how much
//!   evidence it holds (a Dirichlet prior of weight `alpha` from the level
//!   above). A context seen a few times cannot be sure.
//! - **Calibrated on styles it never trained on.** `alpha` and a temperature are
//!   chosen on held-out training styles ([`learn::fit`]), so a probability of 0.8
//!   means right four times in five on a new style ([`score`] checks that on the
//!   test split).
//!
//! The search reads it through [`evaluator::GoalModelEvaluator`], in place of the
//! network's goal head.

pub mod build_order;
pub mod context;
pub mod evaluator;
pub mod learn;
pub mod plot;
pub mod rollouts;
pub mod score;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use self::context::{Keys, LEVELS, WorldView};
use crate::sim::block::NUM_BLOCKS;
use crate::sim::coords::CellIndex;

/// The file format's name.
pub const FORMAT: &str = "mbag-goal-model/1";

/// Goal blocks counted for one context.
pub type Counts = [u32; NUM_BLOCKS];

/// Why a goal model could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum GoalModelError {
    /// The file could not be read or written.
    #[error("goal model {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a goal model this version reads.
    #[error("goal model {path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// How counts turn into probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Smoothing {
    /// The weight of the coarser level's prediction, in counts, at each finer level.
    pub alpha: f64,
    /// Probabilities are raised to `1 / temperature` and renormalised (above 1
    /// less sure).
    pub temperature: f64,
}

impl Default for Smoothing {
    fn default() -> Self {
        Self {
            alpha: 8.0,
            temperature: 1.0,
        }
    }
}

/// The counted model.
#[derive(Debug, Clone)]
pub struct GoalModel {
    tables: [FxHashMap<u128, Counts>; LEVELS],
    smoothing: Smoothing,
    /// What training read, for the record (houses, samples, seconds).
    provenance: serde_json::Value,
}

impl GoalModel {
    /// A model from its count tables.
    pub fn new(
        tables: [FxHashMap<u128, Counts>; LEVELS],
        smoothing: Smoothing,
        provenance: serde_json::Value,
    ) -> Self {
        Self {
            tables,
            smoothing,
            provenance,
        }
    }

    /// How counts are smoothed.
    pub fn smoothing(&self) -> Smoothing {
        self.smoothing
    }

    /// The same counts smoothed otherwise.
    pub fn with_smoothing(mut self, smoothing: Smoothing) -> Self {
        self.smoothing = smoothing;
        self
    }

    /// The same model with `provenance` recorded.
    pub fn with_provenance(mut self, provenance: serde_json::Value) -> Self {
        self.provenance = provenance;
        self
    }

    /// What training read.
    pub fn provenance(&self) -> &serde_json::Value {
        &self.provenance
    }

    /// Drops the contexts seen fewer than `min_count` times below the coarsest
    /// level. With a smoothing weight of `alpha` such a context moves a
    /// prediction by at most `min_count / (min_count + alpha)` of the way, so
    /// pruning well below `alpha` shrinks the file and changes little.
    pub fn prune(mut self, min_count: u32) -> Self {
        for table in self.tables.iter_mut().skip(1) {
            table.retain(|_, c| c.iter().sum::<u32>() >= min_count);
            table.shrink_to_fit();
        }
        self
    }

    /// Contexts kept per level.
    pub fn contexts(&self) -> [usize; LEVELS] {
        std::array::from_fn(|l| self.tables[l].len())
    }

    /// The goal distribution of a cell with `keys`.
    pub fn probabilities(&self, keys: &Keys) -> [f64; NUM_BLOCKS] {
        self.probabilities_with(keys, self.smoothing)
    }

    /// The goal distribution of a cell with `keys`, smoothed as `smoothing` says.
    pub fn probabilities_with(&self, keys: &Keys, smoothing: Smoothing) -> [f64; NUM_BLOCKS] {
        let mut p = [1.0 / NUM_BLOCKS as f64; NUM_BLOCKS];
        let alpha = smoothing.alpha;
        for (table, key) in self.tables.iter().zip(keys) {
            // A context never seen at a level has never been seen finer either.
            let Some(counts) = table.get(key) else { break };
            let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
            for (p, &c) in p.iter_mut().zip(counts) {
                *p = (f64::from(c) + alpha * *p) / (total + alpha);
            }
        }
        let t = smoothing.temperature;
        if t != 1.0 {
            let mut sum = 0.0;
            for p in &mut p {
                *p = p.powf(1.0 / t);
                sum += *p;
            }
            for p in &mut p {
                *p /= sum;
            }
        }
        p
    }

    /// Goal logits for every cell of `view`, laid out as the network's goal head
    /// lays them out: block-major, `logits[block * cells + cell]`.
    pub fn goal_logits(&self, view: &WorldView<'_>) -> Vec<f32> {
        let size = view.size();
        let cells = size.num_cells();
        let mut logits = vec![0f32; NUM_BLOCKS * cells];
        for i in 0..cells {
            let cell = size.cell(CellIndex(i as u32));
            let p = self.probabilities(&view.keys(cell));
            for (b, p) in p.iter().enumerate() {
                // Clamped so that a block never seen stays finite for softmax.
                logits[b * cells + i] = p.max(1e-12).ln() as f32;
            }
        }
        logits
    }

    /// Reads a model written by [`GoalModel::save`].
    pub fn load(path: &Path) -> Result<Self, GoalModelError> {
        let io = |source| GoalModelError::Io {
            path: path.to_owned(),
            source,
        };
        let invalid = |reason: String| GoalModelError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .map_err(|e| invalid(format!("not a gzipped goal model ({e})")))?;
        let stored: Stored =
            serde_json::from_str(&text).map_err(|e| invalid(format!("not a goal model: {e}")))?;
        if stored.format != FORMAT {
            return Err(invalid(format!(
                "format {:?}, expected {FORMAT:?}",
                stored.format
            )));
        }
        if stored.levels.len() != LEVELS {
            return Err(invalid(format!(
                "{} levels, this version reads {LEVELS}",
                stored.levels.len()
            )));
        }
        let s = stored.smoothing;
        if !(s.alpha.is_finite()
            && s.alpha > 0.0
            && s.temperature.is_finite()
            && s.temperature > 0.0)
        {
            return Err(invalid(format!(
                "smoothing alpha {} and temperature {} must be positive",
                s.alpha, s.temperature
            )));
        }
        let mut tables: [FxHashMap<u128, Counts>; LEVELS] = Default::default();
        for (level, (table, entries)) in tables.iter_mut().zip(stored.levels).enumerate() {
            table.reserve(entries.len());
            for (key, counts) in entries {
                let key = u128::from_str_radix(&key, 16)
                    .map_err(|_| invalid(format!("level {level}: key {key:?} is not hex")))?;
                table.insert(key, counts);
            }
        }
        Ok(Self {
            tables,
            smoothing: stored.smoothing,
            provenance: stored.provenance,
        })
    }

    /// Writes the model as gzipped JSON, keys sorted so that equal models give
    /// equal files.
    pub fn save(&self, path: &Path) -> Result<(), GoalModelError> {
        let io = |source| GoalModelError::Io {
            path: path.to_owned(),
            source,
        };
        let levels = self
            .tables
            .iter()
            .map(|table| {
                let mut entries: Vec<(u128, Counts)> =
                    table.iter().map(|(&k, &c)| (k, c)).collect();
                entries.sort_unstable_by_key(|&(k, _)| k);
                entries
                    .into_iter()
                    .map(|(k, c)| (format!("{k:x}"), c))
                    .collect()
            })
            .collect();
        let stored = Stored {
            format: FORMAT.to_owned(),
            smoothing: self.smoothing,
            provenance: self.provenance.clone(),
            levels,
        };
        let text = serde_json::to_string(&stored).map_err(|e| io(std::io::Error::other(e)))?;
        let file = std::fs::File::create(path).map_err(io)?;
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
        gz.write_all(text.as_bytes()).map_err(io)?;
        gz.finish().map_err(io)?;
        Ok(())
    }
}

/// Runs `work(thread, share)` on `threads` scoped threads, `items` split among
/// them as evenly as they go, and returns each thread's result in thread order.
/// A panic in a thread is re-raised here.
pub(crate) fn on_threads<T: Send>(
    threads: usize,
    items: usize,
    work: &(dyn Fn(usize, usize) -> T + Sync),
) -> Vec<T> {
    let threads = threads.max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let share = items / threads + usize::from(t < items % threads);
                scope.spawn(move || work(t, share))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// The file's JSON.
#[derive(Serialize, Deserialize)]
struct Stored {
    format: String,
    smoothing: Smoothing,
    provenance: serde_json::Value,
    /// Per level, `(key in hex, counts)` sorted by key.
    levels: Vec<Vec<(String, Counts)>>,
}
