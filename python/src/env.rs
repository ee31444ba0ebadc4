//! One environment for Python: the simulator with its goal generator, and the
//! conversions of its results to the tuples `mbag_rs.MbagEnv` turns into the
//! reference's return values.

use mbag_sim::NUM_BLOCKS;
use mbag_sim::action::ActionTuple;
use mbag_sim::block::{BlockId, Blocks};
use mbag_sim::config::Config;
use mbag_sim::coords::PlayerPos;
use mbag_sim::env::{Env, place_goal};
use mbag_sim::goal::GoalGenerator;
use mbag_sim::goal::config::{GENERATOR_NAMES, GoalConfig, MBAG_GENERATOR_NAMES, TRANSFORMED_NAME};
use mbag_sim::inventory::{Inventory, NUM_SLOTS, Slot};
use mbag_sim::pyhash::PythonHash;
use mbag_sim::state::EnvState;
use numpy::{PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::sync::Mutex;

use crate::arrays::{owned, read, world_shape};
use crate::draws::PythonDraws;
use crate::errors;
use crate::returns;

/// `(blocks, block_states)` of a world-sized volume.
pub type BlockArrays<'py> = (Bound<'py, PyArrayDyn<u8>>, Bound<'py, PyArrayDyn<u8>>);

/// A volume of `shape` from its block ids and states, every id checked; `what` names
/// it in the errors.
fn read_volume(
    ids: &PyReadonlyArrayDyn<'_, u8>,
    states: &PyReadonlyArrayDyn<'_, u8>,
    shape: &[usize],
    what: &str,
) -> PyResult<Blocks> {
    let ids = read(ids, shape, &format!("{what}.blocks"))?;
    let states = read(states, shape, &format!("{what}.block_states"))?;
    if let Some(bad) = ids.iter().find(|&&b| usize::from(b) >= NUM_BLOCKS) {
        return Err(PyValueError::new_err(format!(
            "{what}.blocks holds block id {bad}, outside 0..{NUM_BLOCKS}"
        )));
    }
    let size = mbag_sim::WorldSize::new(shape[0], shape[1], shape[2]);
    Ok(Blocks::from_raw(size, ids, states))
}

fn parse_config(config_json: &str) -> PyResult<Config> {
    let config = Config::from_json_str(config_json).map_err(errors::config)?;
    if config.malmo.use_malmo {
        return Err(PyNotImplementedError::new_err(
            "mbag_rs does not drive Minecraft: malmo.use_malmo must be false (use the \
             `mbag daemon` command to play in Minecraft)",
        ));
    }
    Ok(config)
}

/// The reference's `MbagEnv.get_config`: the full config for a partial one, as JSON.
#[pyfunction]
pub fn full_config(partial_json: &str) -> PyResult<String> {
    let config = Config::from_json_str(partial_json).map_err(errors::config)?;
    Ok(config.to_json().to_string())
}

/// Every goal generator name the simulator knows, transformed included.
#[pyfunction]
pub fn goal_generator_names() -> Vec<&'static str> {
    GENERATOR_NAMES
        .iter()
        .chain(MBAG_GENERATOR_NAMES.iter())
        .copied()
        .chain([TRANSFORMED_NAME, "transformed"])
        .collect()
}

/// The `hash(bytes)` named `name`, or without a name the running interpreter's:
/// the reference seeds teleport choices with the `hash` of the Python it runs in.
pub fn python_hash_named(py: Python<'_>, name: Option<&str>) -> PyResult<PythonHash> {
    match name {
        Some(name) => name.parse().map_err(errors::python_hash),
        None => {
            let version = py.version_info();
            Ok(PythonHash::for_version(
                version.major.into(),
                version.minor.into(),
            ))
        }
    }
}

/// The simulator of one environment.
#[pyclass(module = "mbag_rs._native")]
#[derive(Debug)]
pub struct NativeEnv {
    env: Env,
    /// `None` when Python supplies the goals (a goal generator class of its own).
    /// Behind a lock because Python objects may be shared between threads.
    goals: Option<Mutex<Box<dyn GoalGenerator>>>,
}

impl NativeEnv {
    fn size(&self) -> [usize; 3] {
        world_shape(self.env.size())
    }

    fn blocks_pair<'py>(&self, py: Python<'py>, blocks: &Blocks) -> PyResult<BlockArrays<'py>> {
        let shape = self.size();
        Ok((
            owned(py, blocks.ids().to_vec(), &shape)?,
            owned(py, blocks.states().to_vec(), &shape)?,
        ))
    }

    fn read_blocks(
        &self,
        ids: &PyReadonlyArrayDyn<'_, u8>,
        states: &PyReadonlyArrayDyn<'_, u8>,
        what: &str,
    ) -> PyResult<Blocks> {
        read_volume(ids, states, &self.size(), what)
    }

    fn finish_reset(&mut self, goal: Blocks, randrange: Bound<'_, PyAny>) -> PyResult<()> {
        let mut draws = PythonDraws::new(randrange);
        self.env.reset_with_goal(goal, &mut draws);
        match draws.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl NativeEnv {
    /// An environment for a config (JSON, partial or full). With `python_goals`, goals
    /// come from Python through `reset_with_structure` instead of the config's
    /// generator. `python_hash` (`"sip13"` or `"sip24"`) is the `hash(bytes)` that
    /// seeds teleport choices; by default the running interpreter's.
    #[new]
    #[pyo3(signature = (config_json, python_goals = false, python_hash = None))]
    fn new(
        py: Python<'_>,
        config_json: &str,
        python_goals: bool,
        python_hash: Option<&str>,
    ) -> PyResult<Self> {
        let hash = python_hash_named(py, python_hash)?;
        let config = parse_config(config_json)?;
        let goals = if python_goals {
            None
        } else {
            Some(Mutex::new(goal_generator(&config)?))
        };
        let mut env = Env::new(config);
        env.set_python_hash(hash);
        Ok(Self { env, goals })
    }

    /// The `hash(bytes)` seeding teleport choices: `"sip13"` or `"sip24"`.
    #[getter]
    fn python_hash(&self) -> &'static str {
        self.env.python_hash().name()
    }

    /// Seeds teleport choices with another interpreter's `hash(bytes)` from now
    /// on: replaying episodes recorded on another CPython (the goldens: 3.11).
    #[setter]
    fn set_python_hash(&mut self, name: &str) -> PyResult<()> {
        self.env
            .set_python_hash(name.parse().map_err(errors::python_hash)?);
        Ok(())
    }

    /// The full config as JSON.
    fn config_json(&self) -> String {
        self.env.config().to_json().to_string()
    }

    /// Whether the next reset makes a new goal (a step was taken since the last).
    fn needs_new_goal(&self) -> bool {
        self.env.needs_new_goal()
    }

    /// The `(W, H, D)` a goal structure may have (the world less its border).
    fn goal_structure_size(&self) -> (usize, usize, usize) {
        let s = self.env.goal_structure_size();
        (s.width, s.height, s.depth)
    }

    /// Resets with the config's goal generator: a new goal drawn with `goal_seed`
    /// when one is due (`force_new_goal`, or a step since the last reset), start
    /// positions and first-episode length drawn with `randrange`.
    fn reset(
        &mut self,
        py: Python<'_>,
        goal_seed: u64,
        force_new_goal: bool,
        randrange: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let goal = if force_new_goal || self.env.needs_new_goal() {
            let generator = self.goals.as_mut().ok_or_else(|| {
                PyValueError::new_err(
                    "this env takes its goals from Python: call reset_with_structure",
                )
            })?;
            let generator = generator.get_mut().unwrap_or_else(|e| e.into_inner());
            let env = &self.env;
            py.detach(|| {
                env.generate_goal(generator.as_mut(), &mut StdRng::seed_from_u64(goal_seed))
            })
            .map_err(errors::goal)?
        } else {
            self.env.goal().clone()
        };
        self.finish_reset(goal, randrange)
    }

    /// Resets around a goal structure made in Python (at most `goal_structure_size`
    /// on every axis), placed in the world as the reference places a generated one.
    fn reset_with_structure(
        &mut self,
        blocks: PyReadonlyArrayDyn<'_, u8>,
        block_states: PyReadonlyArrayDyn<'_, u8>,
        randrange: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let shape = blocks.shape().to_vec();
        let max = self.env.goal_structure_size();
        if shape.len() != 3 || shape[0] > max.width || shape[1] > max.height || shape[2] > max.depth
        {
            return Err(PyValueError::new_err(format!(
                "the goal generator returned a structure of shape {shape:?}; at most \
                 ({}, {}, {}) fits in this world",
                max.width, max.height, max.depth
            )));
        }
        let structure = read_volume(&blocks, &block_states, &shape, "goal")?;
        let goal = place_goal(
            self.env.size(),
            &structure,
            self.env.config().abilities.inf_blocks,
        );
        self.finish_reset(goal, randrange)
    }

    /// Steps every player; returns what the reference's `step` does: per player,
    /// observations, rewards, dones and info dicts (their actions made by
    /// `action_class`, their time `timestamp`).
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: Vec<(i64, i64, i64)>,
        action_class: &Bound<'py, PyAny>,
        timestamp: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let tuples: Vec<ActionTuple> = actions
            .into_iter()
            .map(|(type_id, location, block)| ActionTuple {
                type_id,
                location,
                block,
            })
            .collect();
        let env = &mut self.env;
        let outcome = py
            .detach(|| env.step_tuples(&tuples).cloned())
            .map_err(errors::step)?;
        let env = &self.env;
        let players = env.num_players();
        let observations = (0..players)
            .map(|p| returns::observation(py, env, p))
            .collect::<PyResult<Vec<_>>>()?;
        let infos = returns::infos(py, &outcome.infos, env.size(), action_class, timestamp)?;
        PyTuple::new(
            py,
            [
                PyList::new(py, observations)?.into_any(),
                PyList::new(py, &outcome.rewards)?.into_any(),
                PyList::new(py, vec![outcome.done; players])?.into_any(),
                PyList::new(py, infos)?.into_any(),
            ],
        )
    }

    /// The info dicts a reset returns (see [`NativeEnv::step`]).
    fn reset_infos<'py>(
        &self,
        py: Python<'py>,
        action_class: &Bound<'py, PyAny>,
        timestamp: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        returns::infos(
            py,
            &self.env.reset_infos(),
            self.env.size(),
            action_class,
            timestamp,
        )
    }

    /// Player `player`'s `(world_obs, inventory_obs, timestep)`; the arrays own
    /// their memory.
    fn observe<'py>(&self, py: Python<'py>, player: usize) -> PyResult<Bound<'py, PyTuple>> {
        let num_players = self.env.num_players();
        if player >= num_players {
            return Err(PyValueError::new_err(format!(
                "player {player} does not exist: the env has {num_players} players"
            )));
        }
        returns::observation(py, &self.env, player)
    }

    /// The current world's `(blocks, block_states)`.
    fn current_blocks<'py>(&self, py: Python<'py>) -> PyResult<BlockArrays<'py>> {
        self.blocks_pair(py, &self.env.state().blocks)
    }

    /// The goal's `(blocks, block_states)`.
    fn goal_blocks<'py>(&self, py: Python<'py>) -> PyResult<BlockArrays<'py>> {
        self.blocks_pair(py, self.env.goal())
    }

    /// The players' feet positions.
    fn player_locations(&self) -> Vec<(f64, f64, f64)> {
        self.env
            .state()
            .player_positions
            .iter()
            .map(|p| (p.x, p.y, p.z))
            .collect()
    }

    /// Every inventory as the reference's `(36, 2)` int32 `[block_id, count]` arrays.
    fn player_inventories<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<Bound<'py, PyArrayDyn<i32>>>> {
        self.env
            .state()
            .inventories
            .iter()
            .map(|inv| {
                let flat = inv
                    .slots()
                    .iter()
                    .flat_map(|s| [i32::from(s.block.0), s.count])
                    .collect();
                owned(py, flat, &[NUM_SLOTS, 2])
            })
            .collect()
    }

    /// Who last placed or broke each cell (-1: nobody), int8 `(W, H, D)`.
    fn last_interacted<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<i8>>> {
        owned(py, self.env.state().last_interacted.clone(), &self.size())
    }

    /// The env timestep.
    #[getter]
    fn timestep(&self) -> u64 {
        self.env.state().timestep
    }

    /// The palette's x coordinate (W - 1).
    #[getter]
    fn palette_x(&self) -> i32 {
        self.env.palette_x()
    }

    /// The global timestep reward schedules are evaluated at.
    #[getter]
    fn global_timestep(&self) -> u64 {
        self.env.global_timestep()
    }

    #[setter]
    fn set_global_timestep(&mut self, t: u64) {
        self.env.set_global_timestep(t);
    }

    /// The reference's `set_state_no_obs`: goal, world, positions, inventories, who
    /// last interacted and the timestep. The initial similarities of the last reset
    /// stay, as in the reference; with `restart` the state starts an episode
    /// instead (initial similarities, maximum percentages and the no-progress
    /// counter computed from it), as when replaying a recorded episode.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (blocks, block_states, goal_blocks, goal_block_states, player_locations, player_inventories, last_interacted, timestep, restart = false))]
    fn set_state(
        &mut self,
        blocks: PyReadonlyArrayDyn<'_, u8>,
        block_states: PyReadonlyArrayDyn<'_, u8>,
        goal_blocks: PyReadonlyArrayDyn<'_, u8>,
        goal_block_states: PyReadonlyArrayDyn<'_, u8>,
        player_locations: Vec<(f64, f64, f64)>,
        player_inventories: Vec<PyReadonlyArrayDyn<'_, i32>>,
        last_interacted: PyReadonlyArrayDyn<'_, i8>,
        timestep: u64,
        restart: bool,
    ) -> PyResult<()> {
        let num_players = self.env.num_players();
        if player_locations.len() != num_players {
            return Err(PyValueError::new_err(format!(
                "player_locations has length {} but expected {num_players}",
                player_locations.len()
            )));
        }
        if player_inventories.len() != num_players {
            return Err(PyValueError::new_err(format!(
                "player_inventories has length {} but expected {num_players}",
                player_inventories.len()
            )));
        }
        let last_interacted = read(&last_interacted, &self.size(), "last_interacted")?;
        if let Some(bad) = last_interacted
            .iter()
            .find(|&&v| v < -1 || v as isize >= num_players as isize)
        {
            return Err(PyValueError::new_err(format!(
                "last_interacted has value {bad} but expected -1..={}",
                num_players - 1
            )));
        }
        let inventories = player_inventories
            .iter()
            .enumerate()
            .map(|(p, inv)| {
                let flat = read(inv, &[NUM_SLOTS, 2], &format!("player_inventories[{p}]"))?;
                let mut slots = [Slot::default(); NUM_SLOTS];
                for (slot, pair) in slots.iter_mut().zip(flat.chunks_exact(2)) {
                    let block = u8::try_from(pair[0])
                        .ok()
                        .filter(|&b| usize::from(b) < NUM_BLOCKS)
                        .ok_or_else(|| {
                            PyValueError::new_err(format!(
                                "player_inventories[{p}] holds block id {}, outside 0..{NUM_BLOCKS}",
                                pair[0]
                            ))
                        })?;
                    *slot = Slot {
                        block: BlockId(block),
                        count: pair[1],
                    };
                }
                Ok(Inventory::from_slots(slots))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let goal = self.read_blocks(&goal_blocks, &goal_block_states, "goal_blocks")?;
        let current = self.env.state();
        let state = EnvState {
            blocks: self.read_blocks(&blocks, &block_states, "current_blocks")?,
            last_interacted,
            player_positions: player_locations
                .into_iter()
                .map(|(x, y, z)| PlayerPos::new(x, y, z))
                .collect(),
            inventories,
            timestep,
            timesteps_with_no_progress: current.timesteps_with_no_progress,
            maximum_goal_percentages: current.maximum_goal_percentages.clone(),
        };
        if restart {
            self.env.restore(goal, state);
        } else {
            self.env.set_goal_and_state(goal, state);
        }
        Ok(())
    }
}

/// A parsed JSON config, for the vectorised env.
pub fn config_from_json(config_json: &str) -> PyResult<Config> {
    parse_config(config_json)
}

/// Goals from the config's generator. Keys the generator does not read are
/// ignored, as the reference's generator classes ignore them.
pub fn goal_generator(config: &Config) -> PyResult<Box<dyn GoalGenerator>> {
    let (goal_config, _ignored) =
        GoalConfig::from_env_lenient(&config.goal_generator, &config.goal_generator_config)
            .map_err(errors::goal_config)?;
    goal_config.build().map_err(errors::goal)
}
