//! Steady-state stepping allocates nothing: `Env::step` + observations + masks, and
//! `VecEnv::step` across its worker threads. A counting global allocator makes this
//! a measurement, not a promise.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use mbag::sim::block::{BlockId, Blocks};
use mbag::sim::coords::{Cell, WorldSize};
use mbag::sim::env::{Env, place_goal};
use mbag::sim::{Action, Config, mask};
use mbag::vecenv::{EpisodeStarter, MaskMode, VecEnv};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// The one unsafe block of the project: a global allocator must implement an unsafe
// trait. It only forwards to the system allocator and counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn config(teleportation: bool) -> Config {
    Config::from_json(&serde_json::json!({
        "num_players": 2,
        "world_size": [11, 10, 10],
        "horizon": 1_000_000,
        "random_start_locations": true,
        "rewards": {"place_wrong": -1},
        "players": [{}, {}],
        "abilities": {"teleportation": teleportation, "flying": true, "inf_blocks": true},
    }))
    .unwrap()
}

/// A small house-like goal: a 5x3x5 cobblestone shell.
fn goal(size: WorldSize) -> Blocks {
    let mut s = Blocks::air(WorldSize::new(5, 4, 5));
    for c in s.size().cells() {
        let wall = c.x == 0 || c.x == 4 || c.z == 0 || c.z == 4;
        if c.y == 0 || (wall && c.y < 3) {
            s.set(
                c,
                if c.y == 0 {
                    BlockId::DIRT
                } else {
                    BlockId::COBBLESTONE
                },
            );
        }
    }
    s.set(Cell::new(2, 1, 0), BlockId::AIR);
    place_goal(size, &s, true)
}

fn valid(mask: &[bool], rng: &mut StdRng) -> usize {
    let n = mask.iter().filter(|&&m| m).count();
    let k = rng.random_range(0..n);
    mask.iter()
        .enumerate()
        .filter(|(_, m)| **m)
        .nth(k)
        .unwrap()
        .0
}

#[test]
fn stepping_allocates_nothing_in_steady_state() {
    for teleportation in [false, true] {
        let config = config(teleportation);
        let mut env = Env::new(config.clone());
        let mut rng = StdRng::seed_from_u64(7);
        env.reset_with_goal(goal(config.world_size), &mut rng);
        let mut obs = [env.new_observation(), env.new_observation()];
        let mut masks = [
            vec![false; env.layout().len()],
            vec![false; env.layout().len()],
        ];
        let mut actions = [Action::NOOP; 2];
        let mut run = |env: &mut Env, steps: usize, rng: &mut StdRng| {
            for _ in 0..steps {
                for p in 0..2 {
                    env.observe(p, &mut obs[p]).unwrap();
                    // Teleporting line-of-sight masks are slow in test builds; walking
                    // ones exercise the same search code.
                    mask::compute(
                        &obs[p],
                        config.abilities,
                        env.layout(),
                        !teleportation,
                        &mut masks[p],
                    );
                    actions[p] = env.layout().action(valid(&masks[p], rng)).unwrap();
                }
                env.step(&actions).unwrap();
            }
        };
        // Warm up: buffers grow to their steady size.
        run(&mut env, 300, &mut rng);
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        run(&mut env, 2_000, &mut rng);
        let allocated = ALLOCATIONS.load(Ordering::Relaxed) - before;
        assert_eq!(
            allocated, 0,
            "teleportation={teleportation}: {allocated} allocations in 2000 steps"
        );
    }

    let config = config(false);
    let mut vec_env = VecEnv::new(&config, 8, 2, MaskMode::LineOfSight, 3, |_| {
        let starter = |env: &mut Env, rng: &mut StdRng| {
            let g = goal(env.size());
            env.reset_with_goal(g, rng);
        };
        Box::new(starter) as Box<dyn EpisodeStarter>
    });
    let mut rng = StdRng::seed_from_u64(11);
    let mut actions = vec![Action::NOOP; 16];
    let step = |vec_env: &mut VecEnv, rng: &mut StdRng, actions: &mut Vec<Action>| {
        vec_env.for_each(|i, slot| {
            for p in 0..2 {
                actions[i * 2 + p] = slot.env.layout().action(valid(slot.mask(p), rng)).unwrap();
            }
        });
        vec_env.step(actions).unwrap();
    };
    for _ in 0..200 {
        step(&mut vec_env, &mut rng, &mut actions);
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..1_000 {
        step(&mut vec_env, &mut rng, &mut actions);
    }
    let allocated = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(
        allocated, 0,
        "VecEnv: {allocated} allocations in 1000 steps of 8 envs"
    );
}
