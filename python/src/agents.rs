//! The reference's distribution agents (Noop, Movement, Random, LowestBlock) from
//! `mbag_sim::distribution`, for Python and for the vectorised env's agent seats.

use mbag_sim::action::Action;
use mbag_sim::config::Config;
use mbag_sim::distribution::{LowestBlockAgent, MovementAgent, NoopAgent, RandomAgent};
use mbag_sim::obs::{NUM_WORLD_CHANNELS, Observation};
use mbag_sim::{NUM_BLOCKS, WorldSize};
use numpy::{PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrays::read;
use crate::env::config_from_json;

/// The agent names the package runs, as the reference's classes are named.
pub const AGENT_NAMES: [&str; 4] = [
    "NoopAgent",
    "MovementAgent",
    "RandomAgent",
    "LowestBlockAgent",
];

/// One of the distribution agents.
#[derive(Debug)]
pub enum SimAgent {
    /// Always NOOP.
    Noop(NoopAgent),
    /// A random move.
    Movement(MovementAgent),
    /// Uniform over action types, then over each type's valid actions.
    Random(RandomAgent),
    /// The lowest mismatched block first.
    LowestBlock(LowestBlockAgent),
}

impl SimAgent {
    /// The agent of a reference class name for a config.
    pub fn new(name: &str, config: &Config) -> PyResult<Self> {
        let unsupported =
            |e: mbag_sim::distribution::Unsupported| PyValueError::new_err(e.to_string());
        Ok(match name {
            "NoopAgent" => Self::Noop(NoopAgent::new(config).map_err(unsupported)?),
            "MovementAgent" => Self::Movement(MovementAgent::new(config).map_err(unsupported)?),
            "RandomAgent" => Self::Random(RandomAgent::new(config).map_err(unsupported)?),
            "LowestBlockAgent" => {
                Self::LowestBlock(LowestBlockAgent::new(config).map_err(unsupported)?)
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown agent {other:?}; mbag_rs runs {}",
                    AGENT_NAMES.join(", ")
                )));
            }
        })
    }

    /// Starts an episode with a seed.
    pub fn reset(&mut self, seed: u64) {
        match self {
            Self::Noop(a) => a.reset(seed),
            Self::Movement(a) => a.reset(seed),
            Self::Random(a) => a.reset(seed),
            Self::LowestBlock(a) => a.reset(seed),
        }
    }

    /// The action for an observation.
    pub fn act(&mut self, obs: &Observation) -> Action {
        match self {
            Self::Noop(a) => a.act(obs),
            Self::Movement(a) => a.act(obs),
            Self::Random(a) => a.act(obs),
            Self::LowestBlock(a) => a.act(obs),
        }
    }
}

/// One agent for Python: `act(world_obs, inventory_obs, timestep)` gives an action
/// tuple, as the reference's `get_action` does.
#[pyclass(module = "mbag_rs._native")]
#[derive(Debug)]
pub struct NativeAgent {
    agent: std::sync::Mutex<SimAgent>,
    size: WorldSize,
    num_players: usize,
}

#[pymethods]
impl NativeAgent {
    /// The agent of a reference class name for an env config (JSON).
    #[new]
    fn new(name: &str, config_json: &str) -> PyResult<Self> {
        let config = config_from_json(config_json)?;
        Ok(Self {
            agent: std::sync::Mutex::new(SimAgent::new(name, &config)?),
            size: config.world_size,
            num_players: config.num_players,
        })
    }

    /// Starts an episode.
    fn reset(&self, seed: u64) {
        self.agent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reset(seed);
    }

    /// The action tuple for one observation.
    fn act(
        &self,
        world_obs: PyReadonlyArrayDyn<'_, u8>,
        inventory_obs: PyReadonlyArrayDyn<'_, i32>,
        timestep: i64,
    ) -> PyResult<(i64, i64, i64)> {
        let WorldSize {
            width,
            height,
            depth,
        } = self.size;
        let world = read(
            &world_obs,
            &[NUM_WORLD_CHANNELS, width, height, depth],
            "world_obs",
        )?;
        let inventory = read(
            &inventory_obs,
            &[
                inventory_obs.shape().first().copied().unwrap_or(0),
                NUM_BLOCKS,
            ],
            "inventory_obs",
        )?;
        if inventory.len() != self.num_players * NUM_BLOCKS {
            return Err(PyValueError::new_err(format!(
                "inventory_obs has {} rows; the env has {} players",
                inventory.len() / NUM_BLOCKS,
                self.num_players
            )));
        }
        let obs = Observation::from_raw(
            self.size,
            self.num_players,
            world,
            inventory,
            timestep as i32,
        );
        let action = self
            .agent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .act(&obs);
        let [t, l, b] = action.to_tuple();
        Ok((t, l, b))
    }
}
