//! `mbag_rs._native`: the simulator's Python bindings.
//!
//! The Python package `mbag_rs` (beside this crate) wraps these classes in the
//! reference's API: `MbagEnv` with its config dicts, info dicts and action objects,
//! `MbagActionDistribution`'s masks, and a vectorised env. This layer moves arrays:
//! observations leave Rust as numpy arrays that own the simulator's buffers (no
//! copy), and every error becomes a Python exception carrying mbag's message.

mod arrays;
mod draws;
mod env;
mod errors;
mod masks;
mod vec_env;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<env::NativeEnv>()?;
    m.add_class::<vec_env::NativeVecEnv>()?;
    m.add_function(wrap_pyfunction!(env::full_config, m)?)?;
    m.add_function(wrap_pyfunction!(env::goal_generator_names, m)?)?;
    m.add_function(wrap_pyfunction!(masks::mask_flat, m)?)?;
    m.add_function(wrap_pyfunction!(masks::flat_layout, m)?)?;
    errors::register(m)?;
    Ok(())
}
