//! Many environments stepped together on worker threads, for self-play and
//! evaluation.
//!
//! The environments are split into one contiguous chunk per thread. Worker threads
//! live as long as the [`VecEnv`] and wait on a barrier; the calling thread works on
//! the first chunk itself, so `num_threads` threads compute in all. Every buffer
//! (observations, masks, rewards, infos) is allocated once up front: a step
//! allocates nothing (resets, which generate goals, may).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::sim::action::Action;
use crate::sim::config::Config;
use crate::sim::env::{Env, StepError, StepInfo};
use crate::sim::mask;
use crate::sim::obs::Observation;

/// Starts episodes: picks a goal and resets the env. One per environment.
pub trait EpisodeStarter: Send {
    /// Resets `env` for a new episode.
    fn start(&mut self, env: &mut Env, rng: &mut StdRng);
}

impl<F: FnMut(&mut Env, &mut StdRng) + Send> EpisodeStarter for F {
    fn start(&mut self, env: &mut Env, rng: &mut StdRng) {
        self(env, rng)
    }
}

/// Which action masks to compute after each step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskMode {
    /// No masks.
    None,
    /// Masks without line of sight (what the heuristic agents use).
    NoLineOfSight,
    /// Masks with line of sight (what AssistanceZero networks use).
    LineOfSight,
}

/// One environment with its buffers.
#[derive(Debug)]
pub struct Slot {
    /// The environment.
    pub env: Env,
    /// Per player, the latest observation.
    pub observations: Vec<Observation>,
    /// Per player, the latest flat mask (empty with [`MaskMode::None`]).
    pub masks: Vec<Vec<bool>>,
    /// Per player, what the next mask can be updated from.
    mask_caches: Vec<mask::MaskCache>,
    /// Per player, the rewards of the last step.
    pub rewards: Vec<f64>,
    /// Per player, the infos of the last step.
    pub infos: Vec<StepInfo>,
    /// Whether the last step ended the episode (the env has been reset since).
    pub done: bool,
    /// Per player, the return of the episode that ended at the last step (valid when
    /// `done`).
    pub finished_returns: Vec<f64>,
    returns: Vec<f64>,
    actions: Vec<Action>,
    rng: StdRng,
    starter: Box<dyn EpisodeStarter>,
    error: Option<StepError>,
}

impl std::fmt::Debug for dyn EpisodeStarter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EpisodeStarter")
    }
}

impl Slot {
    fn start_episode(&mut self, mask_mode: MaskMode) {
        self.starter.start(&mut self.env, &mut self.rng);
        self.returns.fill(0.0);
        self.refresh(mask_mode);
    }

    fn refresh(&mut self, mask_mode: MaskMode) {
        let los = match mask_mode {
            MaskMode::None => None,
            MaskMode::NoLineOfSight => Some(false),
            MaskMode::LineOfSight => Some(true),
        };
        for p in 0..self.observations.len() {
            // Overlapping players cannot happen with checked moves; if a config lets
            // it happen the observation keeps both markers, as with humans.
            let _ = self.env.observe(p, &mut self.observations[p]);
            if let Some(los) = los {
                let env = &self.env;
                self.mask_caches[p].compute(
                    &self.observations[p],
                    env.config().abilities,
                    env.layout(),
                    los,
                    &mut self.masks[p],
                );
            }
        }
    }

    fn step(&mut self, mask_mode: MaskMode) {
        match self.env.step(&self.actions) {
            Ok(outcome) => {
                self.rewards.copy_from_slice(&outcome.rewards);
                self.infos.copy_from_slice(&outcome.infos);
                self.done = outcome.done;
            }
            Err(e) => {
                self.error = Some(e);
                return;
            }
        }
        for (r, &x) in self.returns.iter_mut().zip(&self.rewards) {
            *r += x;
        }
        if self.done {
            self.finished_returns.copy_from_slice(&self.returns);
            self.start_episode(mask_mode);
        } else {
            self.refresh(mask_mode);
        }
    }
}

struct Shared {
    chunks: Vec<Mutex<Vec<Slot>>>,
    go: Barrier,
    finished: Barrier,
    shutdown: AtomicBool,
    worker_panicked: AtomicBool,
    mask_mode: MaskMode,
}

fn lock(m: &Mutex<Vec<Slot>>) -> MutexGuard<'_, Vec<Slot>> {
    // A panic on a worker poisons its chunk; the data is still usable for reading
    // and the panic itself is reported when the VecEnv is dropped.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn step_chunk(shared: &Shared, chunk: usize) {
    for slot in lock(&shared.chunks[chunk]).iter_mut() {
        slot.step(shared.mask_mode);
    }
}

/// A batch of environments stepped in parallel.
pub struct VecEnv {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    num_envs: usize,
    num_players: usize,
    chunk_len: usize,
}

impl std::fmt::Debug for VecEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VecEnv")
            .field("num_envs", &self.num_envs)
            .field("num_threads", &(self.workers.len() + 1))
            .finish()
    }
}

impl VecEnv {
    /// `num_envs` environments of one config on `num_threads` threads (the caller
    /// counts as one). `starter(i)` makes environment `i`'s episode starter; `seed`
    /// seeds each environment's RNG (`seed + i`). Every environment starts an
    /// episode right away.
    pub fn new(
        config: &Config,
        num_envs: usize,
        num_threads: usize,
        mask_mode: MaskMode,
        seed: u64,
        mut starter: impl FnMut(usize) -> Box<dyn EpisodeStarter>,
    ) -> Self {
        assert!(num_envs > 0, "a VecEnv needs at least one environment");
        let num_threads = num_threads.clamp(1, num_envs);
        let chunk_len = num_envs.div_ceil(num_threads);
        let num_players = config.num_players;
        let template = Env::new(config.clone());
        let mut chunks: Vec<Vec<Slot>> = (0..num_threads).map(|_| Vec::new()).collect();
        for i in 0..num_envs {
            let env = template.clone();
            let mask_len = if mask_mode == MaskMode::None {
                0
            } else {
                env.layout().len()
            };
            let mut slot = Slot {
                observations: (0..num_players).map(|_| env.new_observation()).collect(),
                masks: vec![vec![false; mask_len]; num_players],
                mask_caches: vec![mask::MaskCache::default(); num_players],
                rewards: vec![0.0; num_players],
                infos: env.reset_infos(),
                done: false,
                finished_returns: vec![0.0; num_players],
                returns: vec![0.0; num_players],
                actions: vec![Action::NOOP; num_players],
                rng: StdRng::seed_from_u64(seed.wrapping_add(i as u64)),
                starter: starter(i),
                error: None,
                env,
            };
            slot.start_episode(mask_mode);
            chunks[i / chunk_len].push(slot);
        }
        let shared = Arc::new(Shared {
            chunks: chunks.into_iter().map(Mutex::new).collect(),
            go: Barrier::new(num_threads),
            finished: Barrier::new(num_threads),
            shutdown: AtomicBool::new(false),
            worker_panicked: AtomicBool::new(false),
            mask_mode,
        });
        let workers = (1..num_threads)
            .map(|chunk| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("vecenv-{chunk}"))
                    .spawn(move || {
                        loop {
                            shared.go.wait();
                            if shared.shutdown.load(Ordering::Acquire) {
                                break;
                            }
                            // A panic must still reach the barrier, or the caller
                            // would wait forever; it is re-raised on the caller.
                            let result =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    step_chunk(&shared, chunk)
                                }));
                            if result.is_err() {
                                shared.worker_panicked.store(true, Ordering::Release);
                            }
                            shared.finished.wait();
                        }
                    })
                    .expect("spawning a VecEnv worker thread")
            })
            .collect();
        Self {
            shared,
            workers,
            num_envs,
            num_players,
            chunk_len,
        }
    }

    /// The number of environments.
    pub fn num_envs(&self) -> usize {
        self.num_envs
    }

    /// The number of players per environment.
    pub fn num_players(&self) -> usize {
        self.num_players
    }

    /// Steps every environment; `actions[i * P + p]` is player `p`'s action in
    /// environment `i`. Finished episodes are restarted at once (their slot's `done`
    /// and `finished_returns` tell about the ended one).
    pub fn step(&mut self, actions: &[Action]) -> Result<(), StepError> {
        let per_env = self.num_players;
        if actions.len() != self.num_envs * per_env {
            return Err(StepError::WrongActionCount {
                expected: self.num_envs * per_env,
                got: actions.len(),
            });
        }
        for (c, chunk) in self.shared.chunks.iter().enumerate() {
            for (k, slot) in lock(chunk).iter_mut().enumerate() {
                let i = c * self.chunk_len + k;
                slot.actions
                    .copy_from_slice(&actions[i * per_env..(i + 1) * per_env]);
            }
        }
        self.shared.go.wait();
        let mine =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step_chunk(&self.shared, 0)));
        self.shared.finished.wait();
        if let Err(panic) = mine {
            std::panic::resume_unwind(panic);
        }
        assert!(
            !self.shared.worker_panicked.load(Ordering::Acquire),
            "a VecEnv worker thread panicked while stepping (see its message above)"
        );
        for chunk in &self.shared.chunks {
            for slot in lock(chunk).iter_mut() {
                if let Some(e) = slot.error.take() {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Calls `f(i, slot)` for every environment in order, to read observations,
    /// masks, rewards and infos.
    pub fn for_each(&self, mut f: impl FnMut(usize, &Slot)) {
        for (c, chunk) in self.shared.chunks.iter().enumerate() {
            for (k, slot) in lock(chunk).iter().enumerate() {
                f(c * self.chunk_len + k, slot);
            }
        }
    }
}

impl Drop for VecEnv {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        if !self.workers.is_empty() {
            self.shared.go.wait();
        }
        for worker in self.workers.drain(..) {
            if worker.join().is_err() {
                log::error!("a VecEnv worker thread panicked");
            }
        }
    }
}
