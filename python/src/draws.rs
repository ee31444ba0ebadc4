//! The reset's random draws taken from Python's `random` module.

use mbag_sim::env::ResetDraws;
use pyo3::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Draws with a Python callable `randrange(n)` (normally `random.randrange`), as
/// the reference's reset does: a script that seeds `random` gets the reference's
/// start positions and first-episode length.
pub struct PythonDraws<'py> {
    randrange: Bound<'py, PyAny>,
    /// The first exception raised by the callable, which the caller raises once the
    /// reset is over.
    pub error: Option<PyErr>,
    /// Draws after a failure: the placement loop must still end (it redraws until a
    /// player fits), and its result is thrown away.
    fallback: StdRng,
}

impl<'py> PythonDraws<'py> {
    /// Draws with `randrange`.
    pub fn new(randrange: Bound<'py, PyAny>) -> Self {
        Self {
            randrange,
            error: None,
            fallback: StdRng::seed_from_u64(0),
        }
    }

    fn below(&mut self, n: u64) -> u64 {
        if self.error.is_some() {
            return self.fallback.random_range(0..n);
        }
        match self.randrange.call1((n,)).and_then(|v| v.extract::<u64>()) {
            // A callable that returns something out of range would loop the
            // placement forever or index out of bounds; clamp it and report.
            Ok(v) if v < n => v,
            Ok(v) => {
                self.error = Some(pyo3::exceptions::PyValueError::new_err(format!(
                    "randrange({n}) returned {v}, outside 0..{n}"
                )));
                self.fallback.random_range(0..n)
            }
            Err(e) => {
                self.error = Some(e);
                self.fallback.random_range(0..n)
            }
        }
    }
}

impl ResetDraws for PythonDraws<'_> {
    fn coordinate(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    fn first_timestep(&mut self, horizon: u64) -> u64 {
        self.below(horizon)
    }
}
