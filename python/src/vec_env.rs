//! Many environments stepped in one call, on threads, with the GIL released.

use mbag_sim::NUM_BLOCKS;
use mbag_sim::action::Action;
use mbag_sim::env::Env;
use mbag_sim::goal::GoalGenerator;
use mbag_sim::obs::NUM_WORLD_CHANNELS;
use mbag_sim::vecenv::{EpisodeStarter, MaskMode, VecEnv};
use numpy::PyReadonlyArrayDyn;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rand::rngs::StdRng;
use std::sync::Mutex;

use crate::arrays::{owned, read};
use crate::env::{config_from_json, goal_generator};
use crate::errors;

/// Starts every episode with a goal from the config's generator.
struct GeneratedGoals(Box<dyn GoalGenerator>);

impl EpisodeStarter for GeneratedGoals {
    fn start(&mut self, env: &mut Env, rng: &mut StdRng) {
        // The generator was tried once when the VecEnv was built; a generator that
        // gives up later has no caller to report to inside a worker thread.
        env.reset(self.0.as_mut(), rng)
            .expect("the goal generator gave up during an automatic reset");
    }
}

fn mask_mode(name: &str) -> PyResult<MaskMode> {
    match name {
        "none" => Ok(MaskMode::None),
        "no_los" => Ok(MaskMode::NoLineOfSight),
        "los" => Ok(MaskMode::LineOfSight),
        other => Err(PyValueError::new_err(format!(
            "masks must be 'none', 'no_los' or 'los', not {other:?}"
        ))),
    }
}

/// `num_envs` environments of one config, reset automatically when an episode ends.
#[pyclass(module = "mbag_rs._native")]
#[derive(Debug)]
pub struct NativeVecEnv {
    /// Behind a lock: stepping needs `&mut`, and Python may share the object.
    inner: Mutex<VecEnv>,
    num_envs: usize,
    num_players: usize,
    world: [usize; 3],
    flat_len: usize,
    mask_mode: MaskMode,
}

impl NativeVecEnv {
    /// Every environment's current observations, rewards, dones, returns and masks
    /// as numpy arrays in a dict.
    fn collect<'py>(&self, py: Python<'py>, vec: &VecEnv) -> PyResult<Bound<'py, PyDict>> {
        let (e, p) = (self.num_envs, self.num_players);
        let [w, h, d] = self.world;
        let per_world = NUM_WORLD_CHANNELS * w * h * d;
        let mut world = Vec::with_capacity(e * p * per_world);
        let mut inventory = Vec::with_capacity(e * p * p * NUM_BLOCKS);
        let mut timestep = Vec::with_capacity(e * p);
        let mut rewards = Vec::with_capacity(e * p);
        let mut goal_percentage = Vec::with_capacity(e * p);
        let mut dones = Vec::with_capacity(e);
        let mut returns = Vec::with_capacity(e * p);
        let masked = self.mask_mode != MaskMode::None;
        let mut masks = Vec::with_capacity(if masked { e * p * self.flat_len } else { 0 });
        vec.for_each(|_, slot| {
            for obs in &slot.observations {
                world.extend_from_slice(&obs.world);
                inventory.extend_from_slice(&obs.inventory);
                timestep.push(i64::from(obs.timestep));
            }
            rewards.extend_from_slice(&slot.rewards);
            goal_percentage.extend(slot.infos.iter().map(|i| i.goal_percentage));
            dones.push(slot.done);
            returns.extend_from_slice(&slot.finished_returns);
            if masked {
                for m in &slot.masks {
                    masks.extend_from_slice(m);
                }
            }
        });
        let out = PyDict::new(py);
        out.set_item(
            "world_obs",
            owned(py, world, &[e, p, NUM_WORLD_CHANNELS, w, h, d])?,
        )?;
        out.set_item(
            "inventory_obs",
            owned(py, inventory, &[e, p, p, NUM_BLOCKS])?,
        )?;
        out.set_item("timestep", owned(py, timestep, &[e, p])?)?;
        out.set_item("rewards", owned(py, rewards, &[e, p])?)?;
        out.set_item("goal_percentage", owned(py, goal_percentage, &[e, p])?)?;
        out.set_item("dones", owned(py, dones, &[e])?)?;
        out.set_item("episode_returns", owned(py, returns, &[e, p])?)?;
        if masked {
            out.set_item("masks", owned(py, masks, &[e, p, self.flat_len])?)?;
        }
        Ok(out)
    }
}

#[pymethods]
impl NativeVecEnv {
    /// `num_envs` environments of a config (JSON) on `num_threads` threads; env `i`
    /// draws with seed `seed + i`. `masks` is `"none"`, `"no_los"` or `"los"`.
    #[new]
    #[pyo3(signature = (config_json, num_envs, num_threads, seed, masks = "none"))]
    fn new(
        py: Python<'_>,
        config_json: &str,
        num_envs: usize,
        num_threads: usize,
        seed: u64,
        masks: &str,
    ) -> PyResult<Self> {
        if num_envs == 0 || num_envs > 1 << 16 {
            return Err(PyValueError::new_err(format!(
                "num_envs must be 1..=65536, not {num_envs}"
            )));
        }
        if num_threads == 0 || num_threads > 1024 {
            return Err(PyValueError::new_err(format!(
                "num_threads must be 1..=1024, not {num_threads}"
            )));
        }
        let config = config_from_json(config_json)?;
        let mask_mode = mask_mode(masks)?;
        // One goal up front, so that a generator that cannot make one for this world
        // is reported here rather than inside a worker.
        let mut probe = goal_generator(&config)?;
        Env::new(config.clone())
            .generate_goal(
                probe.as_mut(),
                &mut <StdRng as rand::SeedableRng>::seed_from_u64(seed),
            )
            .map_err(errors::goal)?;
        let generators = (0..num_envs)
            .map(|_| goal_generator(&config))
            .collect::<PyResult<Vec<_>>>()?;
        let mut generators = generators.into_iter();
        let world = [
            config.world_size.width,
            config.world_size.height,
            config.world_size.depth,
        ];
        let flat_len = Env::new(config.clone()).layout().len();
        let num_players = config.num_players;
        let vec = py.detach(|| {
            VecEnv::new(&config, num_envs, num_threads, mask_mode, seed, |_| {
                Box::new(GeneratedGoals(
                    generators.next().expect("one generator per environment"),
                ))
            })
        });
        Ok(Self {
            inner: Mutex::new(vec),
            num_envs,
            num_players,
            world,
            flat_len,
            mask_mode,
        })
    }

    /// The number of environments.
    #[getter]
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    /// The number of players per environment.
    #[getter]
    fn num_players(&self) -> usize {
        self.num_players
    }

    /// The size of the flat action space.
    #[getter]
    fn num_flat_actions(&self) -> usize {
        self.flat_len
    }

    /// The current observations (and masks) without stepping.
    fn observe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let vec = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        self.collect(py, &vec)
    }

    /// Steps every environment with `actions` `(num_envs, num_players, 3)` int64
    /// action tuples; ended episodes restart at once (`dones` and
    /// `episode_returns` tell about the ended ones).
    fn step<'py>(
        &self,
        py: Python<'py>,
        actions: PyReadonlyArrayDyn<'py, i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let shape = [self.num_envs, self.num_players, 3];
        let raw = read(&actions, &shape, "actions")?;
        let mut parsed = Vec::with_capacity(self.num_envs * self.num_players);
        let size = {
            let vec = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let mut first = None;
            vec.for_each(|i, slot| {
                if i == 0 {
                    first = Some(slot.env.size());
                }
            });
            first.expect("at least one environment")
        };
        for (k, t) in raw.chunks_exact(3).enumerate() {
            let action = Action::from_tuple([t[0], t[1], t[2]], size).map_err(|e| {
                PyValueError::new_err(format!(
                    "environment {}, player {}: {e}",
                    k / self.num_players,
                    k % self.num_players
                ))
            })?;
            parsed.push(action);
        }
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let vec: &mut VecEnv = &mut guard;
        py.detach(|| vec.step(&parsed)).map_err(errors::step)?;
        self.collect(py, vec)
    }
}
