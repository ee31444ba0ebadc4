//! Goal generators and goal transforms (ENV_SPEC section 12).
//!
//! A [`GoalGenerator`] produces a goal structure no larger than a requested size.
//! Transforms ([`transform`]) wrap an inner generator: they ask it for structures and
//! change, rescale or reject them. [`config::GoalConfig`] parses the reference's
//! JSON configuration into typed generators.
//!
//! Randomness does not follow the reference's RNG streams (recorded goals are used for
//! replay), but every deterministic rule is exact, checked against the reference's
//! golden goal transforms (`crate::golden::goal_transforms`).
//!
//! The reference's rejection loops can run forever; here they give up after
//! [`MAX_ATTEMPTS`] tries with [`GoalError::Exhausted`].

pub mod area_sample;
pub mod components;
pub mod config;
pub mod dataset;
pub mod fill;
pub mod grid;
pub mod house;
pub mod seam_carve;
pub mod simple;
pub mod stats;
pub mod transform;

use std::fmt;

use rand::RngCore;

use crate::{Blocks, WorldSize};

pub use config::{ConfigError, GeneratorConfig, GoalConfig, Subset, TransformConfig};
pub use dataset::DatasetError;
pub use house::{ProceduralHouse, ProceduralHouseConfig};

/// How many candidates a rejection loop draws before giving up.
pub const MAX_ATTEMPTS: usize = 10_000;

/// Produces goal structures. `Send` so that environments owning one can move
/// between threads.
pub trait GoalGenerator: fmt::Debug + Send {
    /// A structure no larger than `size` on every axis (some generators return
    /// exactly `size`).
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError>;
}

/// Why a goal could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GoalError {
    /// A rejection loop found nothing acceptable (the reference would loop forever).
    #[error("{what} rejected {attempts} candidate goals for size {size}; giving up")]
    Exhausted {
        /// The generator or filter that kept rejecting.
        what: &'static str,
        /// How many candidates were drawn.
        attempts: usize,
        /// The requested size.
        size: WorldSize,
    },
    /// None of a generator's fixed structures fits the requested size.
    #[error("{what}: none of its {count} structures fits in {size}")]
    NothingFits {
        /// The generator.
        what: &'static str,
        /// How many structures it has.
        count: usize,
        /// The requested size.
        size: WorldSize,
    },
    /// A structure is larger than the size it must be placed in.
    #[error("{what}: structure of size {structure} does not fit in {size}")]
    DoesNotFit {
        /// The transform.
        what: &'static str,
        /// The structure's size.
        structure: WorldSize,
        /// The size it had to fit.
        size: WorldSize,
    },
    /// The requested size is too small for a generator's fixed layout (the reference
    /// raises `IndexError`).
    #[error("{what} cannot build a goal of size {size}: {reason}")]
    SizeTooSmall {
        /// The generator.
        what: &'static str,
        /// The requested size.
        size: WorldSize,
        /// Which extent is too small.
        reason: &'static str,
    },
    /// `area_sample` tried to lift a path cell out of a structure only one cell high
    /// (the reference raises `IndexError` in `_recreate_paths`).
    #[error("area_sample: path cell ({x}, 0, {z}) cannot move up in a structure of size {size}")]
    PathOutOfBounds {
        /// The path cell's x.
        x: usize,
        /// The path cell's z.
        z: usize,
        /// The scaled-down structure's size.
        size: WorldSize,
    },
    /// `area_sample`'s path search needs a structure at least 2 high (the reference
    /// raises `ValueError` on a broadcast).
    #[error("area_sample: cannot search paths in a structure of height {height} (needs 2)")]
    PathSearchTooFlat {
        /// The structure's height.
        height: usize,
    },
    /// `area_sample` interpolation needs air (or state 0) somewhere in the structure
    /// (the reference fails an `assert`).
    #[error("area_sample: the structure has no {what} 0 to interpolate against")]
    NoAirToInterpolate {
        /// "block id" or "block state".
        what: &'static str,
    },
    /// A transform cannot shrink a structure to a size with an empty extent (the
    /// reference divides by zero, loops forever or raises `IndexError`).
    #[error("{what} cannot scale a structure down to {size}, which has an empty extent")]
    EmptyTarget {
        /// The transform.
        what: &'static str,
        /// The requested size.
        size: WorldSize,
    },
    /// An option value this implementation does not support.
    #[error("{what}: {detail}")]
    Unsupported {
        /// The generator or transform.
        what: &'static str,
        /// Which option value.
        detail: String,
    },
    /// A goal dataset could not be read.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

impl GoalError {
    /// The Python exception the reference raises in the same situation, where it
    /// raises one instead of looping (`None` for our bounded rejection loops and I/O).
    pub fn reference_exception(&self) -> Option<&'static str> {
        match self {
            Self::SizeTooSmall { .. } | Self::PathOutOfBounds { .. } => Some("IndexError"),
            Self::DoesNotFit { .. } | Self::PathSearchTooFlat { .. } => Some("ValueError"),
            Self::NoAirToInterpolate { .. } => Some("AssertionError"),
            // area_sample divides by the target extent; seam_carve ends up deleting a
            // slice of an empty axis.
            Self::EmptyTarget { what, .. } => Some(if *what == "area_sample" {
                "ZeroDivisionError"
            } else {
                "IndexError"
            }),
            Self::Exhausted { .. }
            | Self::NothingFits { .. }
            | Self::Unsupported { .. }
            | Self::Dataset(_) => None,
        }
    }
}
