//! Moving the simulator's buffers into numpy arrays and reading numpy arrays back.

use mbag_sim::WorldSize;
use numpy::{
    Element, PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A numpy array of `shape` that takes ownership of `data` (no copy).
pub fn owned<'py, T: Element>(
    py: Python<'py>,
    data: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    debug_assert_eq!(data.len(), shape.iter().product::<usize>());
    PyArray1::from_vec(py, data).reshape(shape.to_vec())
}

/// The world's `(W, H, D)` as a shape.
pub fn world_shape(size: WorldSize) -> [usize; 3] {
    [size.width, size.height, size.depth]
}

/// The contents of `array` in C order, checked against `shape`; `what` names the
/// argument in the error.
pub fn read<T: Element + Copy>(
    array: &PyReadonlyArrayDyn<'_, T>,
    shape: &[usize],
    what: &str,
) -> PyResult<Vec<T>> {
    if array.shape() != shape {
        return Err(PyValueError::new_err(format!(
            "{what} has shape {:?}, expected {:?}",
            array.shape(),
            shape
        )));
    }
    // A contiguous array (the usual case) is one copy; walking a dynamic-rank view
    // element by element costs several nanoseconds an element.
    match array.as_slice() {
        Ok(slice) => Ok(slice.to_vec()),
        Err(_) => Ok(array.as_array().iter().copied().collect()),
    }
}
