//! The reference's return values (observation tuples, info dicts) built in Rust for
//! the drop-in `MbagEnv.step`: building them in Python cost more than the step.

use mbag_sim::action::ActionTuple;
use mbag_sim::env::{Env, StepInfo};
use mbag_sim::obs::NUM_WORLD_CHANNELS;
use mbag_sim::{NUM_BLOCKS, WorldSize};
use numpy::PyArray0;
use numpy::ndarray::arr0;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::arrays::{owned, world_shape};
use crate::errors;

/// Player `player`'s `(world_obs, inventory_obs, timestep)`, the timestep a 0-d
/// int32 array as the reference's.
pub fn observation<'py>(
    py: Python<'py>,
    env: &Env,
    player: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut obs = env.new_observation();
    env.observe(player, &mut obs).map_err(errors::overlapping)?;
    let [w, h, d] = world_shape(env.size());
    let timestep = PyArray0::from_array(py, &arr0(obs.timestep));
    PyTuple::new(
        py,
        [
            owned(py, obs.world, &[NUM_WORLD_CHANNELS, w, h, d])?.into_any(),
            owned(py, obs.inventory, &[env.num_players(), NUM_BLOCKS])?.into_any(),
            timestep.into_any(),
        ],
    )
}

/// Every player's info dict, with the reference's keys: their actions made by
/// `action_class` (`mbag_rs.actions.MbagAction`) for a world of `size`, their time
/// `timestamp`.
pub fn infos<'py>(
    py: Python<'py>,
    infos: &[StepInfo],
    size: WorldSize,
    action_class: &Bound<'py, PyAny>,
    timestamp: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let world_size = PyTuple::new(py, world_shape(size))?;
    let action =
        |a: ActionTuple| action_class.call1(((a.type_id, a.location, a.block), &world_size));
    infos
        .iter()
        .map(|info| {
            let dict = PyDict::new(py);
            dict.set_item(intern!(py, "goal_similarity"), info.goal_similarity)?;
            dict.set_item(intern!(py, "goal_percentage"), info.goal_percentage)?;
            dict.set_item(
                intern!(py, "goal_dependent_reward"),
                info.goal_dependent_reward,
            )?;
            dict.set_item(
                intern!(py, "goal_independent_reward"),
                info.goal_independent_reward,
            )?;
            dict.set_item(intern!(py, "own_reward"), info.own_reward)?;
            dict.set_item(intern!(py, "own_reward_prop"), info.own_reward_prop)?;
            dict.set_item(
                intern!(py, "attempted_action"),
                action(info.attempted_action)?,
            )?;
            dict.set_item(intern!(py, "action"), action(info.action_tuple())?)?;
            dict.set_item(intern!(py, "action_correct"), info.action_correct)?;
            dict.set_item(intern!(py, "malmo_observations"), PyList::empty(py))?;
            dict.set_item(intern!(py, "human_action"), (0, 0, 0))?;
            dict.set_item(intern!(py, "timestamp"), timestamp)?;
            Ok(dict)
        })
        .collect()
}
