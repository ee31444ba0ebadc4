//! `mbag_rs._native`: the simulator's Python bindings.
//!
//! The Python package `mbag_rs` (beside this crate) wraps these classes in the
//! reference's API: `MbagEnv` with its config dicts, info dicts and action objects,
//! `MbagActionDistribution`'s masks, and a vectorised env. This layer moves arrays:
//! observations leave Rust as numpy arrays that own the simulator's buffers (no
//! copy), and every error becomes a Python exception carrying mbag's message.

mod agents;
mod arrays;
mod draws;
mod env;
mod errors;
mod goals;
mod masks;
mod returns;
mod vec_env;

use pyo3::prelude::*;

/// The ten block names by id (`air`, `bedrock`, `dirt`, ...), the simulator's table.
#[pyfunction]
fn block_names() -> Vec<&'static str> {
    (0..mbag_sim::NUM_BLOCKS as u8)
        .filter_map(|id| mbag_sim::BlockId(id).name())
        .collect()
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<env::NativeEnv>()?;
    m.add_class::<vec_env::NativeVecEnv>()?;
    m.add_class::<agents::NativeAgent>()?;
    m.add_function(wrap_pyfunction!(env::full_config, m)?)?;
    m.add_function(wrap_pyfunction!(env::goal_generator_names, m)?)?;
    m.add_function(wrap_pyfunction!(masks::mask_flat, m)?)?;
    m.add_function(wrap_pyfunction!(masks::flat_layout, m)?)?;
    m.add_function(wrap_pyfunction!(block_names, m)?)?;
    m.add_function(wrap_pyfunction!(goals::random_goal, m)?)?;
    errors::register(m)?;
    Ok(())
}
