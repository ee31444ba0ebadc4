//! Many environments stepped together on worker threads, for self-play and
//! evaluation.
//!
//! The environments are split into one contiguous chunk per thread. Worker threads
//! live as long as the [`VecEnv`]; the calling thread works on the first chunk
//! itself, so `num_threads` threads compute in all. Each thread claims the slots of
//! its own chunk one by one and then helps with the others' left-overs, so a thread
//! that is descheduled (another process on its core) or slowed (an episode
//! restarting) holds nobody up; waits spin briefly before they park, so a step
//! usually costs no wake-up (see `work` and `wait_until`). Every buffer
//! (observations, masks, rewards, infos) is allocated once up front: a step
//! allocates nothing (resets, which generate goals, may).
//!
//! A caller that copies every slot's results out (the Python package, into numpy)
//! builds it with [`Workers::Caller`] instead and steps with
//! [`VecEnv::step_with`] on threads of its own, which copy each slot right after
//! stepping it; pool workers cannot run a closure that borrows the caller's
//! buffers.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::action::Action;
use crate::config::Config;
use crate::env::{Env, StepError, StepInfo};
use crate::mask;
use crate::obs::Observation;

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

/// Where a [`VecEnv`]'s helper threads come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workers {
    /// Threads that live as long as the VecEnv and wait between steps: a step
    /// costs no spawn, which matters when a step is short.
    Pool,
    /// No threads of its own: [`VecEnv::step_with`] steps on the caller's (a
    /// rayon pool, say), which may hand the slots to a borrowing sink.
    Caller,
}

/// One environment with its buffers.
#[derive(Debug)]
pub struct Slot {
    /// The environment.
    pub env: Env,
    /// Per player, the latest observation.
    pub observations: Vec<Observation>,
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

impl Slot {
    /// Player `p`'s latest flat mask (empty with [`MaskMode::None`]).
    pub fn mask(&self, p: usize) -> &[bool] {
        self.mask_caches[p].mask()
    }
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
                // Kept in the cache, not copied out: a reader takes it from there
                // (`Slot::mask`), which saves a copy of every flat action per step.
                self.mask_caches[p].update(
                    &self.observations[p],
                    env.config().abilities,
                    env.layout(),
                    los,
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

/// Keeps a value on cache lines of its own: the counters every thread writes on
/// every step must not share a line with each other or with the slots, or each
/// write would steal the line from the other core (false sharing).
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One thread's home range of slots; the index of the next slot to claim.
#[derive(Debug)]
struct Chunk {
    start: usize,
    end: usize,
    next: Padded<AtomicUsize>,
}

struct Shared {
    slots: Vec<Padded<Mutex<Slot>>>,
    chunks: Vec<Chunk>,
    /// Bumped by the caller to start a step; workers wait for it to change.
    generation: Padded<AtomicU64>,
    /// Slots of the current step not yet stepped; whoever takes it to zero wakes
    /// the caller.
    pending: Padded<AtomicUsize>,
    shutdown: AtomicBool,
    worker_panicked: AtomicBool,
    mask_mode: MaskMode,
    caller: Mutex<Option<Thread>>,
}

fn lock(m: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    // A panic while stepping poisons the slot; the data is still usable for reading
    // and the panic itself is re-raised on the caller.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long a waiting thread polls before it parks. A step's serial part on the
/// caller (reading observations, choosing actions) usually takes tens of
/// microseconds, and waking a parked thread costs about as much again on a
/// virtual machine, twice per step; polling a little longer than that gap keeps
/// wake-ups off the critical path, while a caller busy for longer (inference)
/// finds its workers parked, not burning a core.
const POLL: Duration = Duration::from_micros(500);

/// Pure spins before a waiting thread starts yielding between polls.
const SPINS: u32 = 64;

/// Waits until `ready()`: spins [`SPINS`] times, then polls with a yield in
/// between until [`POLL`] has passed, then parks. The thread that makes `ready()`
/// true must unpark this one afterwards.
///
/// Yielding, not spinning, matters on a loaded machine: a spinning thread holds
/// its core while the thread it waits for (preempted by another process halfway
/// through a slot) may be queued for that very core. Measured on 2 busy cores, a
/// 2 ms pure spin made 2 threads 0.54x of 1, a 2 ms yielding poll 1.03x.
fn wait_until(ready: impl Fn() -> bool) {
    let started = Instant::now();
    let mut polls = 0u32;
    while !ready() {
        polls = polls.saturating_add(1);
        if polls < SPINS {
            std::hint::spin_loop();
        } else if started.elapsed() < POLL {
            std::thread::yield_now();
        } else {
            while !ready() {
                std::thread::park();
            }
            return;
        }
    }
}

/// What a stepping thread does with each slot right after stepping it.
type Sink<'a> = &'a (dyn Fn(usize, &Slot) + Sync);

/// Steps slots of the current step until none is left: first those of chunk
/// `home`, then any other chunk's left-overs, handing each to `sink` as soon as it
/// is stepped. Claiming slot by slot is what keeps
/// two threads from running at the speed of the slower one: when a core is taken
/// by another process, or one chunk's episodes restart (goal generation), the
/// other threads take over the rest instead of waiting at a barrier.
fn work(shared: &Shared, home: usize, sink: Sink<'_>) {
    let n = shared.chunks.len();
    for c in (home..n).chain(0..home) {
        let chunk = &shared.chunks[c];
        loop {
            let k = chunk.next.fetch_add(1, Ordering::Acquire);
            if k >= chunk.end {
                break;
            }
            step_slot(shared, k, sink);
        }
    }
}

/// Steps slot `k`, hands it to `sink` and counts it done.
fn step_slot(shared: &Shared, k: usize, sink: Sink<'_>) {
    // A panic must still count the slot as done, or the caller would wait
    // forever; it is re-raised on the caller.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut slot = lock(&shared.slots[k]);
        slot.step(shared.mask_mode);
        sink(k, &slot);
    }));
    if result.is_err() {
        shared.worker_panicked.store(true, Ordering::Release);
    }
    if shared.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
        let caller = shared.caller.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(caller) = caller.as_ref() {
            caller.unpark();
        }
    }
}

/// A batch of environments stepped in parallel.
pub struct VecEnv {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    num_envs: usize,
    num_players: usize,
}

impl std::fmt::Debug for VecEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VecEnv")
            .field("num_envs", &self.num_envs)
            .field("num_threads", &self.shared.chunks.len())
            .finish()
    }
}

impl VecEnv {
    /// `num_envs` environments of one config on `num_threads` threads (the caller
    /// counts as one) of a [`Workers::Pool`]. `starter(i)` makes environment `i`'s
    /// episode starter; `seed` seeds each environment's RNG (`seed + i`). Every
    /// environment starts an episode right away.
    pub fn new(
        config: &Config,
        num_envs: usize,
        num_threads: usize,
        mask_mode: MaskMode,
        seed: u64,
        starter: impl FnMut(usize) -> Box<dyn EpisodeStarter>,
    ) -> Self {
        Self::with_workers(
            config,
            num_envs,
            (num_threads, Workers::Pool),
            mask_mode,
            seed,
            starter,
        )
    }

    /// [`VecEnv::new`] with the helper threads' kind chosen: `threads` is their
    /// number (the caller included) and kind.
    pub fn with_workers(
        config: &Config,
        num_envs: usize,
        threads: (usize, Workers),
        mask_mode: MaskMode,
        seed: u64,
        mut starter: impl FnMut(usize) -> Box<dyn EpisodeStarter>,
    ) -> Self {
        let (num_threads, kind) = threads;
        assert!(num_envs > 0, "a VecEnv needs at least one environment");
        let num_threads = num_threads.clamp(1, num_envs);
        let chunk_len = num_envs.div_ceil(num_threads);
        let num_players = config.num_players;
        let template = Env::new(config.clone());
        let mut slots = Vec::with_capacity(num_envs);
        for i in 0..num_envs {
            let env = template.clone();
            let mut slot = Slot {
                observations: (0..num_players).map(|_| env.new_observation()).collect(),
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
            slots.push(Padded(Mutex::new(slot)));
        }
        // Every chunk starts exhausted; a step rewinds them.
        let chunks = (0..num_threads)
            .map(|c| {
                let start = (c * chunk_len).min(num_envs);
                let end = ((c + 1) * chunk_len).min(num_envs);
                Chunk {
                    start,
                    end,
                    next: Padded(AtomicUsize::new(end)),
                }
            })
            .collect();
        let shared = Arc::new(Shared {
            slots,
            chunks,
            generation: Padded::default(),
            pending: Padded::default(),
            shutdown: AtomicBool::new(false),
            worker_panicked: AtomicBool::new(false),
            mask_mode,
            caller: Mutex::new(None),
        });
        let pool = match kind {
            Workers::Pool => num_threads,
            Workers::Caller => 1,
        };
        let workers = (1..pool)
            .map(|home| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("vecenv-{home}"))
                    .spawn(move || {
                        let mut seen = 0;
                        loop {
                            wait_until(|| shared.generation.load(Ordering::Acquire) != seen);
                            seen = shared.generation.load(Ordering::Acquire);
                            if shared.shutdown.load(Ordering::Acquire) {
                                break;
                            }
                            work(&shared, home, &|_, _| {});
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
        self.load_actions(actions)?;
        let shared = &*self.shared;
        if !self.workers.is_empty() {
            // Whoever steps is the one to wake: a VecEnv may move between threads
            // between steps, not during one (`step` takes `&mut self`).
            *shared.caller.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
        }
        // Pending is set before the chunks are rewound: a worker late from the
        // previous step may claim a slot as soon as its chunk is rewound.
        shared.pending.store(self.num_envs, Ordering::Release);
        for chunk in &shared.chunks {
            chunk.next.store(chunk.start, Ordering::Release);
        }
        shared.generation.fetch_add(1, Ordering::AcqRel);
        for worker in &self.workers {
            // Cheap unless the worker is parked.
            worker.thread().unpark();
        }
        work(shared, 0, &|_, _| {});
        wait_until(|| shared.pending.load(Ordering::Acquire) == 0);
        self.finish_step()
    }

    /// [`VecEnv::step`] on the caller's threads, handing every slot to `sink`
    /// right after it is stepped, on the thread that stepped it: while its
    /// observations and masks are still in that core's cache, and in parallel.
    /// This is for a caller that copies every slot's outputs out (into numpy
    /// arrays, say): copying them after the step, on one thread and from memory,
    /// cost as much as the step.
    ///
    /// `run(n, job)` calls `job(h)` for `h` in `0..n` (the VecEnv's `num_threads`),
    /// each on its own thread, `job(0)` best on the calling thread (on a rayon
    /// pool, say). `job(h)` steps the slots of chunk `h` and then helps with the
    /// others' left-overs, as a pool worker would, so one call alone would step
    /// them all. `sink` and `run` may borrow, which a [`Workers::Pool`]'s threads
    /// could not allow: with a pool, this steps on the pool and then calls `sink`
    /// slot by slot, without `run`.
    ///
    /// # Panics
    /// If `run` returns without calling `job`, or a slot panicked.
    pub fn step_with(
        &mut self,
        actions: &[Action],
        sink: &(dyn Fn(usize, &Slot) + Sync),
        run: impl FnOnce(usize, &(dyn Fn(usize) + Sync)),
    ) -> Result<(), StepError> {
        if !self.workers.is_empty() {
            // A pool worker late from the previous step may claim a rewound slot,
            // and it cannot run a borrowed sink.
            self.step(actions)?;
            self.for_each(sink);
            return Ok(());
        }
        self.load_actions(actions)?;
        let shared = &*self.shared;
        shared.pending.store(self.num_envs, Ordering::Release);
        for chunk in &shared.chunks {
            chunk.next.store(chunk.start, Ordering::Release);
        }
        run(shared.chunks.len(), &|home| work(shared, home, sink));
        assert_eq!(
            shared.pending.load(Ordering::Acquire),
            0,
            "VecEnv::step_with: `run` returned without calling `job`"
        );
        self.finish_step()
    }

    /// Copies each environment's actions into its slot.
    fn load_actions(&mut self, actions: &[Action]) -> Result<(), StepError> {
        let per_env = self.num_players;
        if actions.len() != self.num_envs * per_env {
            return Err(StepError::WrongActionCount {
                expected: self.num_envs * per_env,
                got: actions.len(),
            });
        }
        for (i, slot) in self.shared.slots.iter().enumerate() {
            lock(slot)
                .actions
                .copy_from_slice(&actions[i * per_env..(i + 1) * per_env]);
        }
        Ok(())
    }

    /// Re-raises a panic from any stepping thread; returns the first slot's error.
    fn finish_step(&self) -> Result<(), StepError> {
        if self.shared.worker_panicked.swap(false, Ordering::AcqRel) {
            panic!("a VecEnv environment panicked while stepping (see its message above)");
        }
        for slot in &self.shared.slots {
            if let Some(e) = lock(slot).error.take() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Calls `f(i, slot)` for every environment in order, to read observations,
    /// masks, rewards and infos.
    pub fn for_each(&self, f: impl FnMut(usize, &Slot)) {
        self.for_each_in(0..self.num_envs, f);
    }

    /// [`VecEnv::for_each`] over the environments of `range` only; several threads
    /// may read disjoint (or the same) ranges at once.
    pub fn for_each_in(&self, range: std::ops::Range<usize>, mut f: impl FnMut(usize, &Slot)) {
        for (i, slot) in self.shared.slots[range.clone()].iter().enumerate() {
            f(range.start + i, &lock(slot));
        }
    }
}

impl Drop for VecEnv {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.generation.fetch_add(1, Ordering::AcqRel);
        for worker in &self.workers {
            worker.thread().unpark();
        }
        for worker in self.workers.drain(..) {
            if worker.join().is_err() {
                log::error!("a VecEnv worker thread panicked");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CellIndex;
    use crate::action::ActionType;
    use crate::block::BlockId;
    use crate::goal::GoalConfig;
    use serde_json::json;

    fn config() -> Config {
        Config::from_json(&json!({
            "num_players": 2,
            "world_size": [5, 5, 5],
            "horizon": 2,
            "players": [{}, {}],
        }))
        .unwrap()
    }

    /// Starts episodes on the basic goal; with `panic_after` = n, panics on every
    /// call after the n-th.
    fn starter(panic_after: Option<usize>) -> Box<dyn EpisodeStarter> {
        let mut goals = GoalConfig::from_env("basic", &json!({}))
            .unwrap()
            .build()
            .unwrap();
        let mut calls = 0;
        Box::new(move |env: &mut Env, rng: &mut StdRng| {
            calls += 1;
            if panic_after.is_some_and(|n| calls > n) {
                panic!("starter panics on call {calls}");
            }
            env.reset(goals.as_mut(), rng).unwrap();
        })
    }

    /// One env's results: both players' observations and masks, rewards and done.
    type Results = (Vec<u8>, Vec<bool>, Vec<f64>, bool);

    /// Every env's results.
    fn trace(v: &VecEnv) -> Vec<Results> {
        let mut out = Vec::new();
        v.for_each(|_, slot| {
            out.push((
                slot.observations
                    .iter()
                    .flat_map(|o| o.world.clone())
                    .collect(),
                (0..2).flat_map(|p| slot.mask(p).to_vec()).collect(),
                slot.rewards.clone(),
                slot.done,
            ));
        });
        out
    }

    #[test]
    fn step_with_on_callers_threads_matches_the_pool_and_sinks_every_slot_once() {
        let envs = 7;
        let actions: Vec<Action> = (0..envs * 2)
            .map(|k| {
                if k % 3 == 0 {
                    Action::NOOP
                } else {
                    Action::new(ActionType::MoveNegX, CellIndex(0), BlockId::AIR)
                }
            })
            .collect();
        for threads in [1, 2, 3] {
            let mut caller = VecEnv::with_workers(
                &config(),
                envs,
                (threads, Workers::Caller),
                MaskMode::LineOfSight,
                5,
                |_| starter(None),
            );
            let mut reference = VecEnv::new(&config(), envs, 2, MaskMode::LineOfSight, 5, |_| {
                starter(None)
            });
            for _ in 0..3 {
                reference.step(&actions).unwrap();
                let seen: Vec<AtomicUsize> = (0..envs).map(|_| AtomicUsize::new(0)).collect();
                let sink = |i: usize, slot: &Slot| {
                    assert_eq!(slot.observations.len(), 2);
                    seen[i].fetch_add(1, Ordering::Relaxed);
                };
                caller
                    .step_with(&actions, &sink, |n, job| {
                        assert_eq!(n, threads);
                        std::thread::scope(|s| {
                            for home in 1..n {
                                s.spawn(move || job(home));
                            }
                            job(0);
                        });
                    })
                    .unwrap();
                assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
                assert_eq!(trace(&caller), trace(&reference), "{threads} threads");
            }
        }
        // With a pool, step_with still sinks every slot once (after the step).
        let mut pool = VecEnv::new(&config(), envs, 2, MaskMode::LineOfSight, 5, |_| {
            starter(None)
        });
        let seen = AtomicUsize::new(0);
        pool.step_with(
            &actions,
            &|_, _| {
                seen.fetch_add(1, Ordering::Relaxed);
            },
            |_, _| unreachable!("a pool steps on its own threads"),
        )
        .unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), envs);
    }

    #[test]
    fn a_panic_while_stepping_reaches_the_caller_and_drop_does_not_hang() {
        // Env 3 of 4 (a worker's chunk) panics when its first episode ends.
        let mut v = VecEnv::new(&config(), 4, 2, MaskMode::None, 0, |i| {
            starter((i == 3).then_some(1))
        });
        let actions = vec![Action::NOOP; 8];
        v.step(&actions).unwrap();
        let second = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| v.step(&actions)));
        assert!(second.is_err());
        drop(v);
    }

    #[test]
    fn episodes_restart_on_every_thread_count() {
        for threads in [1, 2, 3, 8] {
            let mut v = VecEnv::new(&config(), 5, threads, MaskMode::LineOfSight, 0, |_| {
                starter(None)
            });
            let actions = vec![Action::NOOP; 10];
            for step in 1..=4 {
                v.step(&actions).unwrap();
                let mut seen = 0;
                v.for_each(|i, slot| {
                    assert_eq!(i, seen);
                    seen += 1;
                    assert_eq!(slot.done, step % 2 == 0, "env {i} at step {step}");
                    assert!((0..2).all(|p| slot.mask(p).iter().any(|&ok| ok)));
                });
                assert_eq!(seen, 5);
            }
        }
    }
}
