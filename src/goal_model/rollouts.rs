//! Observations from a person's (or a human model's) own builds: the worlds an
//! assistant would see while the human builds alone, kept every few steps with
//! the goal they were heading for. Partial builds imitate people's order; these
//! are the real thing for a given human model, mistakes and breaks included.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::score::Observation;
use crate::agents::Agent;
use crate::agents::registry::AgentError;
use crate::sim::config::Config;
use crate::sim::env::{Env, PlayersOverlapping, StepError};
use crate::sim::goal::{GoalConfig, GoalError, GoalGenerator};

/// Why a rollout failed.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    /// No goal could be drawn.
    #[error("drawing a goal: {0}")]
    Goal(#[from] GoalError),
    /// The env refused a step.
    #[error("episode {episode}: {source}")]
    Step {
        /// The episode.
        episode: usize,
        /// The env's error.
        source: StepError,
    },
    /// Players overlapped, so no observation could be made.
    #[error("episode {episode}: {source}")]
    Observe {
        /// The episode.
        episode: usize,
        /// The env's error.
        source: PlayersOverlapping,
    },
    /// The human agent failed.
    #[error("episode {episode}: the human agent failed: {source}")]
    Agent {
        /// The episode.
        episode: usize,
        /// The agent's error.
        source: AgentError,
    },
}

/// [`collect`] on `threads` threads, each with its own agent from `make` and its
/// own goal generator built once from `goals` (network agents from one factory
/// share its inference service, so the threads' steps meet in its batches),
/// episodes split among them; `progress` is called after each episode.
#[allow(clippy::too_many_arguments)]
pub fn collect_parallel(
    config: &Config,
    goals: &GoalConfig,
    make: &(dyn Fn() -> Result<Box<dyn Agent>, AgentError> + Sync),
    episodes: usize,
    steps: usize,
    every: usize,
    seed: u64,
    threads: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Observation>, RolloutError> {
    let threads = threads.clamp(1, episodes.max(1));
    let parts = super::on_threads(threads, episodes, &|t, mine| {
        let mut human = make().map_err(|source| RolloutError::Agent { episode: 0, source })?;
        let mut generator = goals.build()?;
        let mut out = Vec::new();
        for e in 0..mine {
            let seed = seed ^ ((t as u64) << 32 | e as u64).wrapping_mul(0x9e37_79b9);
            out.extend(collect(
                config,
                generator.as_mut(),
                human.as_mut(),
                1,
                steps,
                every,
                seed,
            )?);
            progress();
        }
        Ok::<_, RolloutError>(out)
    });
    let mut out = Vec::new();
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// Plays `episodes` episodes of `steps` steps with `human` alone in `config`
/// (one player) on goals from `goals`, keeping the world every `every` steps.
pub fn collect(
    config: &Config,
    goals: &mut dyn GoalGenerator,
    human: &mut dyn Agent,
    episodes: usize,
    steps: usize,
    every: usize,
    seed: u64,
) -> Result<Vec<Observation>, RolloutError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for episode in 0..episodes {
        let mut env = Env::new(config.clone());
        let goal = env.generate_goal(goals, &mut rng)?;
        env.reset_with_goal(goal, &mut rng);
        human.reset(seed.wrapping_add(episode as u64));
        play_alone(&mut env, human, steps, episode, &mut |step, env| {
            if step % every.max(1) == 0 {
                let touched = env
                    .state()
                    .last_interacted
                    .iter()
                    .map(|&w| w >= 0)
                    .collect();
                out.push(
                    Observation::new(env.state().blocks.clone(), env.goal().clone())
                        .with_touched(touched),
                );
            }
        })?;
    }
    Ok(out)
}

/// Steps `env` (one player, already reset) with `human` until it is done or
/// `steps` steps have passed, calling `after_step(step, env)` after each
/// (steps count from 1); `episode` names the episode in errors.
pub fn play_alone(
    env: &mut Env,
    human: &mut dyn Agent,
    steps: usize,
    episode: usize,
    after_step: &mut dyn FnMut(usize, &Env),
) -> Result<(), RolloutError> {
    let mut obs = env.new_observation();
    for step in 1..=steps {
        env.observe(0, &mut obs)
            .map_err(|source| RolloutError::Observe { episode, source })?;
        let action = human
            .try_act(&obs)
            .map_err(|source| RolloutError::Agent { episode, source })?;
        let done = env
            .step(&[action])
            .map_err(|source| RolloutError::Step { episode, source })?
            .done;
        after_step(step, env);
        if done {
            break;
        }
    }
    Ok(())
}
