//! Goal transforms (ENV_SPEC 12.2): each wraps an inner [`GoalGenerator`], asks it for
//! structures and changes or rejects them.
//!
//! Each transform's deterministic part is also a plain function on [`Blocks`], so it
//! can be tested (and checked against the goldens) on its own.
//!
//! [`Blocks`]: crate::Blocks

pub mod crop;
pub mod filter;
pub mod largest_cc;
pub mod place;
pub mod recolor;

pub use crop::{Crop, CropAir, CropConfig, CropLowDensityBottomLayers, DensityThreshold};
pub use filter::{
    DensityFilter, DensityFilterConfig, MinSizeFilter, MinSizeFilterConfig, SingleCcFilter,
};
pub use largest_cc::{ConnectivityConfig, LargestCc};
pub use place::{AddGrass, AddGrassConfig, AddGrassMode, RandomlyPlace, RemoveInvisibleNonDirt};
pub use recolor::{Mirror, UniformBlockType, UniformBlockTypeConfig};
