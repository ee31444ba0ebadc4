//! Many environments stepped in one call, on threads, with the GIL released.

use mbag_sim::action::Action;
use mbag_sim::env::Env;
use mbag_sim::goal::GoalGenerator;
use mbag_sim::obs::NUM_WORLD_CHANNELS;
use mbag_sim::pyhash::PythonHash;
use mbag_sim::vecenv::{EpisodeStarter, MaskMode, Slot, VecEnv, Workers};
use mbag_sim::{NUM_BLOCKS, WorldSize};
use numpy::{PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyReadwriteArrayDyn};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rand::rngs::StdRng;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::agents::SimAgent;
use crate::arrays::{owned, read};
use crate::env::{config_from_json, goal_generator, python_hash_named};
use crate::errors;

/// Starts every episode with a goal from the config's generator, in an env seeding
/// teleport choices with the given `hash(bytes)`.
struct GeneratedGoals(Box<dyn GoalGenerator>, PythonHash);

impl EpisodeStarter for GeneratedGoals {
    fn start(&mut self, env: &mut Env, rng: &mut StdRng) {
        // The VecEnv builds its envs from the config alone; every episode begins
        // here, before any step, so the hash is in place for all of them.
        env.set_python_hash(self.1);
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
    /// The threads besides the caller's that step the envs and copy each one's
    /// results into numpy right after stepping it (`VecEnv::step_with`); none
    /// with one thread.
    pool: Option<rayon::ThreadPool>,
    num_envs: usize,
    num_players: usize,
    flat_len: usize,
    /// The world size, which action tuples' locations are decoded for.
    size: WorldSize,
    /// Per environment, per player, the agent that plays that seat (`None`: the
    /// caller's actions).
    seats: Mutex<Seats>,
    /// The arrays every step fills and returns, allocated once: a step copies the
    /// environments' buffers into memory numpy already owns (fresh arrays each step
    /// would cost page faults of megabytes of masks per call).
    out: Outputs,
}

/// One environment's actions and its seats' agents, while they act.
type EnvSeats<'a> = (&'a mut [Action], &'a mut Vec<Option<SimAgent>>);

/// The agents of the seats the vectorised env plays itself.
#[derive(Debug)]
struct Seats {
    agents: Vec<Vec<Option<SimAgent>>>,
    /// Episodes started per environment, for the agents' seeds.
    episodes: Vec<u64>,
    seed: u64,
}

impl Seats {
    fn any(&self) -> bool {
        self.agents.iter().flatten().any(Option::is_some)
    }

    /// Reseeds environment `env`'s agents for its next episode: distinct per
    /// environment, player and episode, the same for the same `seed`.
    fn start_episode(&mut self, env: usize) {
        let episode = self.episodes[env];
        self.episodes[env] += 1;
        for (p, agent) in self.agents[env].iter_mut().enumerate() {
            if let Some(agent) = agent {
                let mixed = self.seed
                    ^ (env as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    ^ (p as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
                    ^ episode.wrapping_mul(0x1656_67B1_9E37_79F9);
                agent.reset(mixed);
            }
        }
    }
}

/// The output arrays of [`NativeVecEnv`].
#[derive(Debug)]
struct Outputs {
    world: Py<PyArrayDyn<u8>>,
    inventory: Py<PyArrayDyn<i32>>,
    timestep: Py<PyArrayDyn<i64>>,
    rewards: Py<PyArrayDyn<f64>>,
    goal_percentage: Py<PyArrayDyn<f64>>,
    dones: Py<PyArrayDyn<bool>>,
    returns: Py<PyArrayDyn<f64>>,
    masks: Option<Py<PyArrayDyn<bool>>>,
}

fn zeros<T: numpy::Element>(py: Python<'_>, shape: &[usize]) -> Py<PyArrayDyn<T>> {
    PyArrayDyn::<T>::zeros(py, shape.to_vec(), false).unbind()
}

impl Outputs {
    fn new(py: Python<'_>, e: usize, p: usize, world: [usize; 3], masks: Option<usize>) -> Self {
        let [w, h, d] = world;
        Self {
            world: zeros(py, &[e, p, NUM_WORLD_CHANNELS, w, h, d]),
            inventory: zeros(py, &[e, p, p, NUM_BLOCKS]),
            timestep: zeros(py, &[e, p]),
            rewards: zeros(py, &[e, p]),
            goal_percentage: zeros(py, &[e, p]),
            dones: zeros(py, &[e]),
            returns: zeros(py, &[e, p]),
            masks: masks.map(|n| zeros(py, &[e, p, n])),
        }
    }
}

/// One environment's rows of every output array.
struct EnvRows<'a> {
    world: &'a mut [u8],
    inventory: &'a mut [i32],
    timestep: &'a mut [i64],
    rewards: &'a mut [f64],
    goal_percentage: &'a mut [f64],
    done: &'a mut [bool],
    returns: &'a mut [f64],
    masks: Option<&'a mut [bool]>,
}

impl EnvRows<'_> {
    /// Copies `slot`'s latest results into these rows.
    fn write(&mut self, slot: &Slot) {
        concat(
            self.world,
            slot.observations.iter().map(|o| o.world.as_slice()),
        );
        concat(
            self.inventory,
            slot.observations.iter().map(|o| o.inventory.as_slice()),
        );
        for (dst, obs) in self.timestep.iter_mut().zip(&slot.observations) {
            *dst = i64::from(obs.timestep);
        }
        self.rewards.copy_from_slice(&slot.rewards);
        for (dst, info) in self.goal_percentage.iter_mut().zip(&slot.infos) {
            *dst = info.goal_percentage;
        }
        self.done[0] = slot.done;
        self.returns.copy_from_slice(&slot.finished_returns);
        if let Some(masks) = self.masks.as_deref_mut() {
            concat(masks, (0..slot.observations.len()).map(|p| slot.mask(p)));
        }
    }
}

/// The output arrays borrowed for writing (numpy's borrow flags set) for one call.
struct Borrowed<'py> {
    world: PyReadwriteArrayDyn<'py, u8>,
    inventory: PyReadwriteArrayDyn<'py, i32>,
    timestep: PyReadwriteArrayDyn<'py, i64>,
    rewards: PyReadwriteArrayDyn<'py, f64>,
    goal_percentage: PyReadwriteArrayDyn<'py, f64>,
    dones: PyReadwriteArrayDyn<'py, bool>,
    returns: PyReadwriteArrayDyn<'py, f64>,
    masks: Option<PyReadwriteArrayDyn<'py, bool>>,
}

/// `array`'s memory cut into `envs` equal rows (its first axis).
fn rows<'a, T: numpy::Element>(
    array: &'a mut PyReadwriteArrayDyn<'_, T>,
    envs: usize,
) -> PyResult<std::slice::ChunksExactMut<'a, T>> {
    let slice = array
        .as_slice_mut()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let per_env = slice.len() / envs;
    Ok(slice.chunks_exact_mut(per_env))
}

impl<'py> Borrowed<'py> {
    /// Borrows every output array; fails if Python code holds one borrowed.
    fn new(py: Python<'py>, out: &Outputs) -> PyResult<Self> {
        fn borrow<'py, T: numpy::Element>(
            py: Python<'py>,
            array: &Py<PyArrayDyn<T>>,
        ) -> PyResult<PyReadwriteArrayDyn<'py, T>> {
            array
                .bind(py)
                .clone()
                .try_readwrite()
                .map_err(|e| PyValueError::new_err(format!("an output array is in use: {e}")))
        }
        Ok(Self {
            world: borrow(py, &out.world)?,
            inventory: borrow(py, &out.inventory)?,
            timestep: borrow(py, &out.timestep)?,
            rewards: borrow(py, &out.rewards)?,
            goal_percentage: borrow(py, &out.goal_percentage)?,
            dones: borrow(py, &out.dones)?,
            returns: borrow(py, &out.returns)?,
            masks: out.masks.as_ref().map(|m| borrow(py, m)).transpose()?,
        })
    }

    /// Every environment's rows, each behind its own lock so that the threads
    /// stepping the environments can write them.
    fn rows(&mut self, envs: usize) -> PyResult<Vec<Mutex<EnvRows<'_>>>> {
        let mut world = rows(&mut self.world, envs)?;
        let mut inventory = rows(&mut self.inventory, envs)?;
        let mut timestep = rows(&mut self.timestep, envs)?;
        let mut rewards = rows(&mut self.rewards, envs)?;
        let mut goal_percentage = rows(&mut self.goal_percentage, envs)?;
        let mut dones = rows(&mut self.dones, envs)?;
        let mut returns = rows(&mut self.returns, envs)?;
        let mut masks = self.masks.as_mut().map(|m| rows(m, envs)).transpose()?;
        let all = (0..envs)
            .map(|_| {
                // Each array has exactly `envs` rows.
                Mutex::new(EnvRows {
                    world: world.next().expect("a world row per env"),
                    inventory: inventory.next().expect("an inventory row per env"),
                    timestep: timestep.next().expect("a timestep row per env"),
                    rewards: rewards.next().expect("a reward row per env"),
                    goal_percentage: goal_percentage.next().expect("a goal row per env"),
                    done: dones.next().expect("a done per env"),
                    returns: returns.next().expect("a return row per env"),
                    masks: masks
                        .as_mut()
                        .map(|m| m.next().expect("a mask row per env")),
                })
            })
            .collect();
        Ok(all)
    }
}

/// Copies equal-length pieces one after the other into `row`.
fn concat<'a, T: Copy + 'a>(row: &mut [T], pieces: impl IntoIterator<Item = &'a [T]>) {
    let mut at = 0;
    for piece in pieces {
        row[at..at + piece.len()].copy_from_slice(piece);
        at += piece.len();
    }
}

fn lock_rows<'a, 'b>(rows: &'a Mutex<EnvRows<'b>>) -> std::sync::MutexGuard<'a, EnvRows<'b>> {
    rows.lock().unwrap_or_else(|e| e.into_inner())
}

impl NativeVecEnv {
    /// The output arrays in a dict.
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = &self.out;
        let dict = PyDict::new(py);
        dict.set_item("world_obs", out.world.bind(py))?;
        dict.set_item("inventory_obs", out.inventory.bind(py))?;
        dict.set_item("timestep", out.timestep.bind(py))?;
        dict.set_item("rewards", out.rewards.bind(py))?;
        dict.set_item("goal_percentage", out.goal_percentage.bind(py))?;
        dict.set_item("dones", out.dones.bind(py))?;
        dict.set_item("episode_returns", out.returns.bind(py))?;
        if let Some(masks) = &out.masks {
            dict.set_item("masks", masks.bind(py))?;
        }
        Ok(dict)
    }
}

#[pymethods]
impl NativeVecEnv {
    /// `num_envs` environments of a config (JSON) on `num_threads` threads; env `i`
    /// draws with seed `seed + i`. `masks` is `"none"`, `"no_los"` or `"los"`;
    /// `python_hash` (`"sip13"` or `"sip24"`) is the `hash(bytes)` that seeds
    /// teleport choices, by default the running interpreter's. `agents`, one entry
    /// per player, names the agent (`"LowestBlockAgent"`, ...) that plays that seat
    /// in every environment, or `None` where the caller's actions play.
    #[new]
    #[pyo3(signature = (config_json, num_envs, num_threads, seed, masks = "none", python_hash = None, agents = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        config_json: &str,
        num_envs: usize,
        num_threads: usize,
        seed: u64,
        masks: &str,
        python_hash: Option<&str>,
        agents: Option<Vec<Option<String>>>,
    ) -> PyResult<Self> {
        let hash = python_hash_named(py, python_hash)?;
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
            VecEnv::with_workers(
                &config,
                num_envs,
                (num_threads, Workers::Caller),
                mask_mode,
                seed,
                |_| {
                    Box::new(GeneratedGoals(
                        generators.next().expect("one generator per environment"),
                        hash,
                    ))
                },
            )
        });
        let names = agents.unwrap_or_else(|| vec![None; num_players]);
        if names.len() != num_players {
            return Err(PyValueError::new_err(format!(
                "agents names {} seats; the env has {num_players} players",
                names.len()
            )));
        }
        let mut seats = Seats {
            agents: (0..num_envs)
                .map(|_| {
                    names
                        .iter()
                        .map(|n| n.as_deref().map(|n| SimAgent::new(n, &config)).transpose())
                        .collect::<PyResult<Vec<_>>>()
                })
                .collect::<PyResult<Vec<_>>>()?,
            episodes: vec![0; num_envs],
            seed,
        };
        for env in 0..num_envs {
            seats.start_episode(env);
        }
        let masks = (mask_mode != MaskMode::None).then_some(flat_len);
        let helpers = num_threads.clamp(1, num_envs) - 1;
        let pool = (helpers > 0)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(helpers)
                    .thread_name(|i| format!("mbag-vecenv-{}", i + 1))
                    .build()
            })
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("cannot start the env threads: {e}")))?;
        Ok(Self {
            inner: Mutex::new(vec),
            pool,
            num_envs,
            num_players,
            flat_len,
            size: config.world_size,
            seats: Mutex::new(seats),
            out: Outputs::new(py, num_envs, num_players, world, masks),
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
        let mut borrowed = Borrowed::new(py, &self.out)?;
        let rows = borrowed.rows(self.num_envs)?;
        vec.for_each(|i, slot| lock_rows(&rows[i]).write(slot));
        drop(rows);
        drop(borrowed);
        self.outputs(py)
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
        for (k, t) in raw.chunks_exact(3).enumerate() {
            let action = Action::from_tuple([t[0], t[1], t[2]], self.size).map_err(|e| {
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
        let mut seats_guard = self.seats.lock().unwrap_or_else(|e| e.into_inner());
        let seats: &mut Seats = &mut seats_guard;
        let players = self.num_players;
        let seated = seats.any();
        let mut borrowed = Borrowed::new(py, &self.out)?;
        let rows = borrowed.rows(self.num_envs)?;
        // The GIL is released while the arrays are written: numpy's borrow flags
        // keep Rust code off them, and the arrays are documented as rewritten by
        // every step, so Python code reading them meanwhile is the caller's race.
        let played = py.detach(|| {
            // The calling thread takes chunk 0 (it would only wait otherwise); the
            // pool, one thread fewer, the rest.
            let threads = self
                .pool
                .as_ref()
                .map_or(1, |p| p.current_num_threads() + 1);
            let run = |n: usize, job: &(dyn Fn(usize) + Sync)| match &self.pool {
                Some(pool) => pool.in_place_scope(|scope| {
                    for home in 1..n {
                        scope.spawn(move |_| job(home));
                    }
                    job(0);
                }),
                None => job(0),
            };
            if seated {
                // The seated agents act on the observations the envs returned last,
                // on the same threads (an agent's move costs as much as a step).
                let envs: Vec<Mutex<EnvSeats<'_>>> = parsed
                    .chunks_mut(players)
                    .zip(seats.agents.iter_mut())
                    .map(Mutex::new)
                    .collect();
                let next = AtomicUsize::new(0);
                let stepped: &VecEnv = vec;
                run(threads, &|_| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(env) = envs.get(i) else { break };
                        let mut env = env.lock().unwrap_or_else(|e| e.into_inner());
                        let (actions, agents) = &mut *env;
                        stepped.for_each_in(i..i + 1, |_, slot| {
                            for (p, agent) in agents.iter_mut().enumerate() {
                                if let Some(agent) = agent {
                                    actions[p] = agent.act(&slot.observations[p]);
                                }
                            }
                        });
                    }
                });
            }
            vec.step_with(&parsed, &|i, slot| lock_rows(&rows[i]).write(slot), run)
                .map(|()| parsed)
        });
        drop(rows);
        drop(borrowed);
        let played = played.map_err(errors::step)?;
        if seated {
            let mut ended = Vec::new();
            vec.for_each(|i, slot| {
                if slot.done {
                    ended.push(i);
                }
            });
            for i in ended {
                seats.start_episode(i);
            }
        }
        let dict = self.outputs(py)?;
        if seated {
            let tuples: Vec<i64> = played.iter().flat_map(|a| a.to_tuple()).collect();
            dict.set_item("actions", owned(py, tuples, &[self.num_envs, players, 3])?)?;
        }
        Ok(dict)
    }
}
