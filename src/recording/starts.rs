//! Diverse episode starts: any step of any recording as the state an episode
//! begins in (goal, world, who last touched each cell, where the players stand),
//! for `mbag evaluate --starts DIR` and `mbag train assistant --starts DIR`.
//!
//! A start is adapted to the env it is used in: the players' positions are kept
//! where they are valid (centred in their cell, as the env keeps players) and
//! drawn at random among free cells where not (a teleporting player above the
//! world, a 1-player recording's missing assistant); inventories are the env's
//! fresh ones; the clock starts at 0, so the episode has its whole horizon.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::Rng;

use super::RecordingError;
use super::reader::{Recording, collect_files};
use super::verify::{env_for, verify};
use crate::sim::block::Blocks;
use crate::sim::coords::{Cell, PlayerPos, WorldSize};
use crate::sim::env::{Env, player_fits};
use crate::sim::goal::{GoalError, GoalGenerator};
use crate::sim::state::NO_INTERACTION;

/// One start: a moment of a recording.
#[derive(Clone, Debug)]
pub struct Start {
    /// `EPISODE_ID@STEP`.
    pub source: String,
    /// The recording's goal.
    pub goal: Arc<Blocks>,
    /// The world then.
    pub blocks: Blocks,
    /// Who last placed or broke each cell then (player index, -1 nobody).
    pub last_interacted: Vec<i8>,
    /// Where the recording's players stood.
    pub positions: Vec<PlayerPos>,
}

/// The starts of a folder of recordings.
#[derive(Clone, Debug)]
pub struct Starts {
    starts: Vec<Start>,
    /// The recordings they came from.
    pub files: Vec<PathBuf>,
    /// Which steps of each were taken: every `every`-th (and the first).
    pub every: usize,
}

/// Why starts cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum StartsError {
    /// A recording could not be read or replayed.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// Nothing usable was found.
    #[error(
        "{dir}: no recording of a {size} world to start episodes from ({skipped} of another size skipped)"
    )]
    Empty {
        /// The folder.
        dir: String,
        /// The env's world size.
        size: WorldSize,
        /// Recordings of other sizes.
        skipped: usize,
    },
}

impl Starts {
    /// Every `every`-th step (and the first) of every recording under `dir` whose
    /// world is `size`, but for moments whose house is already built; recordings
    /// of other sizes are skipped with a warning.
    pub fn load(dir: &Path, size: WorldSize, every: usize) -> Result<Self, StartsError> {
        let every = every.max(1);
        let mut starts = Vec::new();
        let mut files = Vec::new();
        let mut skipped = 0;
        for path in collect_files(&[dir.to_owned()])? {
            let rec = Recording::read(&path)?;
            let env = env_for(&rec)?;
            if env.size() != size {
                log::warn!(
                    "{}: a {} world, not {size}: not used as starts",
                    path.display(),
                    env.size()
                );
                skipped += 1;
                continue;
            }
            let goal = Arc::new(env.goal().clone());
            let id = rec.header.episode_id.clone();
            let mut push = |step: usize, env: &Env| {
                // A moment with the house already built leaves nothing to do, and
                // its goal percentage (over no cells left to build) no meaning.
                if env.goal_completed() {
                    return;
                }
                let state = env.state();
                starts.push(Start {
                    source: format!("{id}@{step}"),
                    goal: Arc::clone(&goal),
                    blocks: state.blocks.clone(),
                    last_interacted: state.last_interacted.clone(),
                    positions: state.player_positions.clone(),
                });
            };
            push(0, &env);
            let mut step = 0;
            verify(&rec, &mut |env, _| {
                step += 1;
                if step % every == 0 {
                    push(step, env);
                }
            })?;
            files.push(path);
        }
        if starts.is_empty() {
            return Err(StartsError::Empty {
                dir: dir.display().to_string(),
                size,
                skipped,
            });
        }
        Ok(Self {
            starts,
            files,
            every,
        })
    }

    /// How many starts there are.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there are none (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Resets `env` to a start drawn with `rng` (see the module docs) and
    /// returns it.
    pub fn reset(&self, env: &mut Env, rng: &mut impl Rng) -> &Start {
        let start = &self.starts[rng.random_range(0..self.starts.len())];
        env.reset_with_goal((*start.goal).clone(), rng);
        let mut state = env.state().clone();
        let n = env.num_players();
        state.blocks = start.blocks.clone();
        state.last_interacted = start
            .last_interacted
            .iter()
            .map(|&p| {
                if p >= 0 && (p as usize) < n {
                    p
                } else {
                    NO_INTERACTION
                }
            })
            .collect();
        let mut placed: Vec<Cell> = Vec::with_capacity(n);
        for p in 0..n {
            let recorded = start
                .positions
                .get(p)
                .map(|pos| pos.feet_cell())
                .filter(|&c| free_for(&state.blocks, c, &placed));
            let cell = recorded.unwrap_or_else(|| random_free(&state.blocks, &placed, rng));
            placed.push(cell);
        }
        state.player_positions = placed.into_iter().map(PlayerPos::centred_in).collect();
        state.timestep = 0;
        state.timesteps_with_no_progress = 0;
        env.restore((*start.goal).clone(), state);
        start
    }
}

/// Resets `env` for a new episode: to a start drawn from `starts` when given,
/// else as [`Env::reset`] does, on a goal from `goals`. Evaluation and self-play
/// start their episodes through this one function.
pub fn reset_episode(
    env: &mut Env,
    goals: &mut dyn GoalGenerator,
    starts: Option<&Starts>,
    rng: &mut impl Rng,
) -> Result<(), GoalError> {
    match starts {
        Some(starts) => {
            starts.reset(env, rng);
            Ok(())
        }
        None => env.reset(goals, rng),
    }
}

/// Whether a player may stand with its feet in `c`: above the floor, and as the
/// env allows ([`player_fits`]).
fn free_for(blocks: &Blocks, c: Cell, taken: &[Cell]) -> bool {
    c.y >= 1 && player_fits(blocks, c, taken)
}

/// A free feet cell drawn uniformly (a world with no free cell is impossible
/// for a recorded episode, whose players stood somewhere).
fn random_free(blocks: &Blocks, taken: &[Cell], rng: &mut impl Rng) -> Cell {
    let free: Vec<Cell> = blocks
        .size()
        .cells()
        .filter(|&c| free_for(blocks, c, taken))
        .collect();
    assert!(!free.is_empty(), "a recorded world with no free cell");
    free[rng.random_range(0..free.len())]
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::sim::presets::Game;

    #[test]
    fn starts_restore_recorded_moments_into_another_env() {
        let starts =
            Starts::load(Path::new("recordings/samples"), WorldSize::new(6, 6, 6), 10).unwrap();
        assert!(starts.len() > 3, "{}", starts.len());
        // A 2-player walking env of the same size, as evaluate would use.
        let mut config = Game::paper()
            .with_world_size(WorldSize::new(6, 6, 6))
            .config()
            .unwrap();
        config.randomize_first_episode_length = false;
        let mut env = Env::new(config);
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..20 {
            let start = starts.reset(&mut env, &mut rng).clone();
            assert_eq!(env.state().blocks.ids(), start.blocks.ids());
            assert_eq!(env.goal().ids(), start.goal.ids());
            assert_eq!(env.state().timestep, 0);
            // Every player stands in a valid cell of the start's world.
            let cells: Vec<Cell> = env
                .state()
                .player_positions
                .iter()
                .map(|p| p.feet_cell())
                .collect();
            for (k, c) in cells.iter().enumerate() {
                assert!(
                    free_for(&start.blocks, *c, &cells[..k]),
                    "{c} in {}",
                    start.source
                );
            }
            // The env plays from there.
            let mut obs = env.new_observation();
            env.observe(1, &mut obs).unwrap();
            env.step(&[crate::sim::action::Action::NOOP; 2]).unwrap();
        }
    }

    #[test]
    fn a_folder_without_a_usable_recording_is_an_error() {
        let err = Starts::load(
            Path::new("recordings/samples"),
            WorldSize::new(11, 10, 10),
            10,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("no recording of a 11x10x10 world"),
            "{err}"
        );
    }
}
