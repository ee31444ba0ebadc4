//! Python exceptions for mbag's errors, each carrying mbag's message.

use mbag_sim::config::ConfigError;
use mbag_sim::env::{PlayersOverlapping, StepError};
use mbag_sim::goal::GoalError;
use mbag_sim::pyhash::UnknownPythonHash;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _native,
    PlayersOverlappingError,
    pyo3::exceptions::PyException,
    "Two players' markers fell on one cell of an observation (the reference's \
     PlayersOverlappingError)."
);

create_exception!(
    _native,
    GoalGenerationError,
    PyRuntimeError,
    "A goal generator could not produce a goal (for example a filter that rejected \
     every candidate)."
);

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "PlayersOverlappingError",
        m.py().get_type::<PlayersOverlappingError>(),
    )?;
    m.add(
        "GoalGenerationError",
        m.py().get_type::<GoalGenerationError>(),
    )?;
    Ok(())
}

/// A config the simulator refuses: `ValueError`, as the reference raises for the
/// inconsistencies it checks.
pub fn config(e: ConfigError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A goal generator config the simulator refuses.
pub fn goal_config(e: mbag_sim::goal::ConfigError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A step the simulator refuses (wrong number of actions, indices out of range).
pub fn step(e: StepError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A goal generator that gave up.
pub fn goal(e: GoalError) -> PyErr {
    GoalGenerationError::new_err(e.to_string())
}

/// Players overlapping in an observation.
pub fn overlapping(e: PlayersOverlapping) -> PyErr {
    PlayersOverlappingError::new_err(e.to_string())
}

/// A `python_hash` name that is neither `"sip13"` nor `"sip24"`.
pub fn python_hash(e: UnknownPythonHash) -> PyErr {
    PyValueError::new_err(e.to_string())
}
