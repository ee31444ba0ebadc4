//! Goals whose randomness Python draws, so that seeding Python's generators gives
//! the reference's goals.

use mbag_sim::goal::simple::random_goal_from_draws;
use mbag_sim::{NUM_BLOCKS, WorldSize};
use numpy::{PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrays::{owned, read};

/// The `random` generator's goal from numpy's draws: `filled` (W, H, D) bool, the
/// cells filled before the pruning (`np.random.rand(W, H, D) < filled_prop`), and
/// `ids` (W, H, D) uint8, every cell's block id (`np.random.randint(8, size=...) +
/// 2`). Returns the goal's block ids (W, H, D): the filled cells 6-connected to the
/// bottom layer keep their ids, the rest is air.
#[pyfunction]
pub fn random_goal<'py>(
    py: Python<'py>,
    filled: PyReadonlyArrayDyn<'py, bool>,
    ids: PyReadonlyArrayDyn<'py, u8>,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let shape = filled.shape().to_vec();
    let [w, h, d] = shape[..] else {
        return Err(PyValueError::new_err(format!(
            "filled has shape {shape:?}; expected (width, height, depth)"
        )));
    };
    let filled = read(&filled, &shape, "filled")?;
    let ids = read(&ids, &shape, "ids")?;
    if let Some(bad) = ids.iter().find(|&&id| usize::from(id) >= NUM_BLOCKS) {
        return Err(PyValueError::new_err(format!(
            "ids holds {bad}, not a block id (0..{NUM_BLOCKS})"
        )));
    }
    let goal = random_goal_from_draws(WorldSize::new(w, h, d), &filled, &ids);
    owned(py, goal.ids().to_vec(), &shape)
}
