//! The evaluation runner: many episodes of a human and an assistant, in parallel,
//! summarised as the paper's Tables 1 and 3 report them.
//!
//! Player 0 is the human, player 1 the assistant. An assistant spec of `none` runs
//! the human alone in a 1-player version of the env config (the paper's "human
//! alone" rows), see [`episode_config`].
//!
//! Episode `i` depends only on the run's seed and `i` ([`episode_seed`]): its env
//! and goal generator draw from an RNG seeded with it and each agent is reset with
//! a seed derived from it, so results do not depend on the number of threads. Every
//! episode gets a fresh [`Env`], so none of them is a "first episode" with a random
//! length; [`episode_config`] also turns `randomize_first_episode_length` off.
//!
//! # Metrics of an episode ([`EpisodeOutcome`])
//!
//! - `goal_percentage`: player 0's final goal percentage (ENV_SPEC 7.1/14), a
//!   fraction (the paper's tables print it times 100).
//! - `goal_completed`: the world equals the goal at the end.
//! - `human_place_break`: the human's effective place and break actions (the
//!   paper's "human actions"); `human_actions`: all its effective non-NOOP actions.
//! - `assistant_goal_percentage`: the assistant's goal-dependent reward summed over
//!   the episode, divided by `W·H·D − S0`, the denominator of player 0's goal
//!   percentage. The reference's metrics have no such entry; a place or break
//!   changes one cell's similarity by exactly its goal-dependent reward, so with the
//!   paper's rewards (the same `place_wrong` for both players, `incorrect_action`
//!   0) this is precisely the part of the goal percentage the assistant's own
//!   actions made, and `human_goal_percentage + assistant_goal_percentage =
//!   goal_percentage`. It can be negative (an assistant that builds wrongly).
//! - `length`: steps taken; `reward`: player 0's summed reward.
//!
//! Wall time per assistant move ([`MoveTiming`]) is kept apart from the outcome, as
//! it is the one thing that differs between identical runs.

use std::panic;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use super::metrics;
use super::record::{EpisodeWriter, RecordEpisodes};
use super::stats::{MeanCi, RateCi};
use crate::agents::spec::{AgentFactory, AgentSpec, AgentSpecError};
use crate::agents::{Agent, AgentError};
use crate::chat::conversation::Heard;
use crate::chat::intent::{IntentParser, RuleParser};
use crate::chat::person::{ChatPersonConfig, HumanChat, RejectingPerson};
use crate::recording::RecordingError;
use crate::recording::starts::{Starts, reset_episode};
use crate::sim::action::ActionType;
use crate::sim::config::Config;
use crate::sim::env::{Env, PlayersOverlapping, StepError};
use crate::sim::goal::{GoalConfig, GoalError, GoalGenerator};

/// The human's seat.
pub const HUMAN: usize = 0;
/// The assistant's seat.
pub const ASSISTANT: usize = 1;

/// What to evaluate.
#[derive(Clone, Debug)]
pub struct EvalSettings {
    /// The 2-player env config (human, assistant); see [`episode_config`].
    pub config: Config,
    /// Where goals come from.
    pub goals: GoalConfig,
    /// A name for `goals`, recorded in reports.
    pub goals_label: String,
    /// Player 0.
    pub human: AgentSpec,
    /// Player 1, or `none`.
    pub assistant: AgentSpec,
    /// Number of episodes.
    pub episodes: usize,
    /// The run's seed.
    pub seed: u64,
    /// Worker threads (at most one per episode is used).
    pub threads: usize,
    /// Episodes each worker keeps in flight ([`default_lanes`]); results do not
    /// depend on it.
    pub lanes: usize,
    /// Recorded moments to start episodes from instead of a fresh world; the
    /// goal is then the start's recording's, and `goals` is not used.
    pub starts: Option<Arc<Starts>>,
    /// A voice for the human seat: it then speaks in chat as this model says
    /// (`--human-chat`), and the assistant hears it.
    pub human_chat: Option<HumanChatSettings>,
    /// Write every episode as a recording here (`--record`).
    pub record: Option<RecordEpisodes>,
}

/// Where [`run_episode`] writes its episode, and who played it.
#[derive(Clone, Copy, Debug)]
pub struct RecordTo<'a> {
    /// The run's folder.
    pub target: &'a RecordEpisodes,
    /// The seats' specs, human first.
    pub specs: &'a [&'a AgentSpec],
}

/// A chatting human: which model, and how often and soon it speaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HumanChatSettings {
    /// The model.
    pub kind: HumanChat,
    /// Its probability and delay.
    pub config: ChatPersonConfig,
}

/// Episodes in flight per worker thread when the settings do not choose:
/// [`NETWORK_LANES`] when a seat is a network agent, else 1.
///
/// A network agent's move waits for its model's inference thread, which batches
/// the moves waiting at that moment; with one episode per worker a batch holds
/// at most one move per worker (2 on 2 cores), and the forward pass's fixed cost
/// dominates. Each lane is an episode on a thread of its own that sleeps while
/// its agents wait, so the workers' cores stay busy with the other lanes' env
/// steps and masks, and each batch gathers the moves of up to `threads × lanes`
/// episodes. Heuristic agents never wait, so for them more lanes would only add
/// threads fighting for the same cores.
pub fn default_lanes(human: &AgentSpec, assistant: &AgentSpec) -> usize {
    let network = |s: &AgentSpec| matches!(s, AgentSpec::Network { .. });
    if network(human) || network(assistant) {
        NETWORK_LANES
    } else {
        1
    }
}

/// Lanes per worker with network agents (see [`default_lanes`]): enough for
/// batches of 32 on 2 workers. Measured on 2 busy CPU cores with a BC human and
/// a policy-head assistant (both shared axial transformers, about 0.5 GFLOP per
/// sample), 16 lanes gave about 1.15x the env steps/s of 1: there the forward
/// passes are compute-bound (batch 8 runs about 1.4x the samples/s of batch 1),
/// and batching pays most where a call's fixed cost dominates (GPU, small nets).
pub const NETWORK_LANES: usize = 16;

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The human seat cannot be empty.
    #[error("the human cannot be `none`; use a heuristic or network spec")]
    NoHuman,
    /// The settings are unusable.
    #[error("invalid evaluation settings: {0}")]
    Settings(String),
    /// An agent could not be built.
    #[error(transparent)]
    Agent(#[from] AgentSpecError),
    /// The goal generator could not be built (before any episode).
    #[error("building the goal generator failed: {0}")]
    GoalGenerator(#[source] GoalError),
    /// The goal generator gave up on an episode's goal.
    #[error("episode {episode}: goal generation failed: {source}")]
    Goal {
        /// The episode index.
        episode: usize,
        /// The generator's error.
        #[source]
        source: GoalError,
    },
    /// The env refused a step.
    #[error("episode {episode}: {source}")]
    Step {
        /// The episode index.
        episode: usize,
        /// The env's error.
        #[source]
        source: StepError,
    },
    /// An agent could not choose its action (a network agent whose inference
    /// failed).
    #[error("episode {episode}: player {player}: {source}")]
    Act {
        /// The episode index.
        episode: usize,
        /// The player.
        player: usize,
        /// The agent's error.
        #[source]
        source: AgentError,
    },
    /// The episode's recording could not be written.
    #[error("episode {episode}: recording it: {source}")]
    Record {
        /// The episode index.
        episode: usize,
        /// The writer's error.
        #[source]
        source: RecordingError,
    },
    /// Two players overlapped in an observation.
    #[error("episode {episode}: {source}")]
    Observe {
        /// The episode index.
        episode: usize,
        /// The env's error.
        #[source]
        source: PlayersOverlapping,
    },
}

/// The deterministic results of one episode (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpisodeOutcome {
    /// The episode's index in the run.
    pub episode: usize,
    /// The seed it was played with ([`episode_seed`]).
    pub seed: u64,
    /// Steps taken.
    pub length: u64,
    /// Player 0's final goal percentage, a fraction.
    pub goal_percentage: f64,
    /// Whether the world equals the goal at the end.
    pub goal_completed: bool,
    /// Cells that differ from the goal at reset.
    pub goal_size: u64,
    /// Sum of player 0's rewards.
    pub reward: f64,
    /// The human's effective place and break actions.
    pub human_place_break: u64,
    /// All the human's effective non-NOOP actions.
    pub human_actions: u64,
    /// The human's goal-dependent reward over `W·H·D − S0`.
    pub human_goal_percentage: f64,
    /// The assistant's effective place and break actions (none without one).
    pub assistant_place_break: Option<u64>,
    /// All the assistant's effective non-NOOP actions.
    pub assistant_actions: Option<u64>,
    /// The assistant's goal-dependent reward over `W·H·D − S0`.
    pub assistant_goal_percentage: Option<f64>,
    /// The assistant's effective placements that did not move the world
    /// towards the goal (a block the goal does not have there).
    pub assistant_wrong_places: Option<u64>,
    /// Chat messages the human said.
    pub human_messages: u64,
    /// Chat messages the assistant said.
    pub assistant_messages: Option<u64>,
    /// Player 0's goal percentage at the first step of each minute (index =
    /// minute; 75 steps a minute at the study's 0.8 s per action), the
    /// reference's `goal_percentage_<m>_min`.
    pub goal_percentage_by_minute: Vec<f64>,
}

/// The minutes the paper's Table 2 reports goal % at (225, 375, 750 and 1,500
/// steps at 0.8 s per action).
pub const REPORTED_MINUTES: [u64; 4] = [3, 5, 10, 20];

/// Goal % at one minute over the episodes that reached it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MinuteGoal {
    /// The minute.
    pub minute: u64,
    /// Player 0's goal percentage then (fraction).
    pub goal_percentage: MeanCi,
}

/// Wall time of the assistant's moves in one episode, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MoveTiming {
    /// Mean over the episode's moves.
    pub mean_ms: f64,
    /// The slowest move.
    pub max_ms: f64,
}

/// One evaluated episode.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpisodeRecord {
    /// The results.
    #[serde(flatten)]
    pub outcome: EpisodeOutcome,
    /// Assistant move times (none without an assistant).
    pub assistant_move_ms: Option<MoveTiming>,
}

/// Means with 95% intervals over a run's episodes (see [`super::stats`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Episodes summarised.
    pub episodes: usize,
    /// Player 0's goal percentage (fraction).
    pub goal_percentage: MeanCi,
    /// Episodes ending with the goal built.
    pub completion: RateCi,
    /// Human place + break actions.
    pub human_place_break: MeanCi,
    /// All human actions.
    pub human_actions: MeanCi,
    /// The human's share of the goal (fraction).
    pub human_goal_percentage: MeanCi,
    /// The assistant's share of the goal (fraction).
    pub assistant_goal_percentage: Option<MeanCi>,
    /// Assistant place + break actions.
    pub assistant_place_break: Option<MeanCi>,
    /// Assistant placements of a block the goal does not have there.
    pub assistant_wrong_places: Option<MeanCi>,
    /// Chat messages the human said.
    pub human_messages: MeanCi,
    /// Chat messages the assistant said.
    pub assistant_messages: Option<MeanCi>,
    /// Episode length.
    pub length: MeanCi,
    /// Player 0's reward.
    pub reward: MeanCi,
    /// Per-episode mean assistant move time (ms).
    pub assistant_move_ms: Option<MeanCi>,
    /// The slowest assistant move of the run (ms).
    pub assistant_move_max_ms: Option<f64>,
    /// Goal % at each of [`REPORTED_MINUTES`] that every episode reached (an
    /// episode ending earlier would bias the mean).
    pub goal_percentage_at_minutes: Vec<MinuteGoal>,
}

impl Summary {
    /// Summarises `records`.
    pub fn of(records: &[EpisodeRecord]) -> Self {
        let mean =
            |f: &dyn Fn(&EpisodeOutcome) -> f64| MeanCi::of(records.iter().map(|r| f(&r.outcome)));
        let optional = |f: &dyn Fn(&EpisodeRecord) -> Option<f64>| {
            let values: Option<Vec<f64>> = records.iter().map(f).collect();
            values.filter(|v| !v.is_empty()).map(MeanCi::of)
        };
        let completed = records.iter().filter(|r| r.outcome.goal_completed).count();
        Self {
            episodes: records.len(),
            goal_percentage: mean(&|o| o.goal_percentage),
            completion: RateCi::wilson(completed as u64, records.len() as u64),
            human_place_break: mean(&|o| o.human_place_break as f64),
            human_actions: mean(&|o| o.human_actions as f64),
            human_goal_percentage: mean(&|o| o.human_goal_percentage),
            assistant_goal_percentage: optional(&|r| r.outcome.assistant_goal_percentage),
            assistant_place_break: optional(&|r| r.outcome.assistant_place_break.map(|n| n as f64)),
            assistant_wrong_places: optional(&|r| {
                r.outcome.assistant_wrong_places.map(|n| n as f64)
            }),
            human_messages: mean(&|o| o.human_messages as f64),
            assistant_messages: optional(&|r| r.outcome.assistant_messages.map(|n| n as f64)),
            length: mean(&|o| o.length as f64),
            reward: mean(&|o| o.reward),
            assistant_move_ms: optional(&|r| r.assistant_move_ms.map(|t| t.mean_ms)),
            assistant_move_max_ms: records
                .iter()
                .filter_map(|r| r.assistant_move_ms.map(|t| t.max_ms))
                .reduce(f64::max),
            goal_percentage_at_minutes: REPORTED_MINUTES
                .iter()
                .filter_map(|&minute| {
                    let at = |r: &EpisodeRecord| {
                        r.outcome
                            .goal_percentage_by_minute
                            .get(minute as usize)
                            .copied()
                    };
                    let values: Option<Vec<f64>> = records.iter().map(at).collect();
                    values.filter(|v| !v.is_empty()).map(|v| MinuteGoal {
                        minute,
                        goal_percentage: MeanCi::of(v),
                    })
                })
                .collect(),
        }
    }
}

/// A finished evaluation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evaluation {
    /// Per episode, in index order.
    pub episodes: Vec<EpisodeRecord>,
    /// Over all episodes.
    pub summary: Summary,
}

/// The config episodes are played in: `base` with `randomize_first_episode_length`
/// off, with only player 0 when the assistant is `none`, and with the goal shown to
/// an assistant that plans with it ([`AgentSpec::sees_goal`]).
pub fn episode_config(base: &Config, assistant: &AgentSpec) -> Result<Config, EvalError> {
    let mut config = base.clone();
    config.randomize_first_episode_length = false;
    if config.num_players != 2 || config.players.len() != 2 {
        return Err(EvalError::Settings(format!(
            "the env config must have 2 players (human, assistant), not {}",
            config.num_players
        )));
    }
    if assistant.is_none() {
        config.num_players = 1;
        config.players.truncate(1);
    } else if assistant.sees_goal() {
        config.players[ASSISTANT].goal_visible = true;
    }
    Ok(config)
}

/// SplitMix64's finaliser: a bijective mix, so distinct inputs give distinct seeds.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of episode `index` in a run seeded with `seed`.
pub fn episode_seed(seed: u64, index: usize) -> u64 {
    mix(mix(seed).wrapping_add(index as u64))
}

/// The reset seed of `player`'s agent in an episode seeded with `episode_seed`.
pub fn agent_seed(episode_seed: u64, player: usize) -> u64 {
    mix(episode_seed ^ mix(0x5eed_0000 + player as u64))
}

/// Effective place+break actions and all effective non-NOOP actions of a player.
fn action_counts(totals: &metrics::PlayerCounters) -> (u64, u64) {
    let n = &totals.num_actions;
    let place_break =
        n[ActionType::PlaceBlock.id() as usize] + n[ActionType::BreakBlock.id() as usize];
    let all = n.iter().sum::<u64>() - n[ActionType::Noop.id() as usize] + totals.num_break_palette;
    (place_break, all)
}

/// Plays one episode with `agents` (one per player of `config`, already built) on a
/// goal from `goals`, or from a start drawn from `starts`; with `record`, writes it
/// as a recording while it plays.
pub fn run_episode(
    config: &Config,
    goals: &mut dyn GoalGenerator,
    starts: Option<&Starts>,
    agents: &mut [Box<dyn Agent>],
    index: usize,
    seed: u64,
    record: Option<RecordTo<'_>>,
) -> Result<EpisodeRecord, EvalError> {
    assert_eq!(agents.len(), config.num_players, "one agent per player");
    let mut env = Env::new(config.clone());
    let mut rng = StdRng::seed_from_u64(seed);
    reset_episode(&mut env, goals, starts, &mut rng).map_err(|source| EvalError::Goal {
        episode: index,
        source,
    })?;
    for (p, agent) in agents.iter_mut().enumerate() {
        agent.reset(agent_seed(seed, p));
    }
    let recording_failed = |source| EvalError::Record {
        episode: index,
        source,
    };
    let mut writer = record
        .map(|r| EpisodeWriter::start(r.target, &env, index, seed, r.specs))
        .transpose()
        .map_err(recording_failed)?;
    let cells = env.size().num_cells() as f64;
    let goal_size = (cells - env.goal_similarity()) as u64;
    let denominator = cells - env.initial_goal_similarities()[HUMAN];
    let mut obs: Vec<_> = (0..agents.len()).map(|_| env.new_observation()).collect();
    let mut actions = Vec::with_capacity(agents.len());
    let mut infos = Vec::new();
    let mut rewards = Vec::new();
    let mut move_ms: Vec<f64> = Vec::new();
    let mut said = vec![0u64; agents.len()];
    loop {
        actions.clear();
        for p in 0..agents.len() {
            let o = &mut obs[p];
            env.observe(p, o).map_err(|source| EvalError::Observe {
                episode: index,
                source,
            })?;
            let start = Instant::now();
            let action = agents[p].try_act(o).map_err(|source| EvalError::Act {
                episode: index,
                player: p,
                source,
            })?;
            actions.push(action);
            if p == ASSISTANT {
                move_ms.push(start.elapsed().as_secs_f64() * 1e3);
            }
            // What a player says after its move, the others hear at once (the
            // assistant, moving second, hears the human's words this step).
            if let Some(text) = agents[p].speak() {
                said[p] += 1;
                let heard = Heard {
                    speaker: p,
                    flags: RuleParser.read(&text),
                    text,
                };
                for (q, other) in agents.iter_mut().enumerate() {
                    if q != p {
                        other.hear(&heard);
                    }
                }
            }
        }
        let outcome = env.step(&actions).map_err(|source| EvalError::Step {
            episode: index,
            source,
        })?;
        infos.push(outcome.infos.clone());
        rewards.push(outcome.rewards.clone());
        let done = outcome.done;
        // The outcome borrows the env, which the recorder reads too.
        let recorded = writer.is_some().then(|| outcome.clone());
        if let (Some(w), Some(outcome)) = (writer.as_mut(), recorded) {
            w.step(&env, &actions, &outcome).map_err(recording_failed)?;
        }
        if done {
            break;
        }
    }
    if let Some(w) = writer {
        w.finish(&env).map_err(recording_failed)?;
    }
    let m = metrics::calculate(config, &infos, &rewards);
    let share = |p: usize| m.player_metrics[p].totals.goal_dependent_reward / denominator;
    let (human_place_break, human_actions) = action_counts(&m.player_metrics[HUMAN].totals);
    let assistant = (agents.len() > ASSISTANT).then(|| {
        let (place_break, all) = action_counts(&m.player_metrics[ASSISTANT].totals);
        let wrong = infos
            .iter()
            .filter(|i| {
                let a = &i[ASSISTANT];
                a.action.kind == ActionType::PlaceBlock && !a.action_correct
            })
            .count() as u64;
        (place_break, all, share(ASSISTANT), wrong)
    });
    Ok(EpisodeRecord {
        outcome: EpisodeOutcome {
            episode: index,
            seed,
            length: infos.len() as u64,
            goal_percentage: m.goal_percentage,
            goal_completed: env.goal_completed(),
            goal_size,
            reward: m.reward,
            human_place_break,
            human_actions,
            human_goal_percentage: share(HUMAN),
            assistant_place_break: assistant.map(|a| a.0),
            assistant_actions: assistant.map(|a| a.1),
            assistant_goal_percentage: assistant.map(|a| a.2),
            assistant_wrong_places: assistant.map(|a| a.3),
            human_messages: said[HUMAN],
            assistant_messages: said.get(ASSISTANT).copied(),
            goal_percentage_by_minute: m.per_minute.iter().map(|s| s.goal_percentage).collect(),
        },
        assistant_move_ms: (!move_ms.is_empty()).then(|| MoveTiming {
            mean_ms: move_ms.iter().sum::<f64>() / move_ms.len() as f64,
            max_ms: move_ms.iter().copied().fold(0.0, f64::max),
        }),
    })
}

/// Runs the evaluation on `settings.threads` worker threads. `on_episode` is called
/// (from the worker that played it) after each episode, in completion order; the
/// returned episodes are in index order. The first error stops the run.
pub fn evaluate(
    settings: &EvalSettings,
    factory: &dyn AgentFactory,
    on_episode: &(dyn Fn(&EpisodeRecord) + Sync),
) -> Result<Evaluation, EvalError> {
    if settings.human.is_none() {
        return Err(EvalError::NoHuman);
    }
    if settings.episodes == 0 {
        return Err(EvalError::Settings("no episodes to run".into()));
    }
    if settings.threads == 0 || settings.lanes == 0 {
        return Err(EvalError::Settings(
            "threads and lanes must be at least 1".into(),
        ));
    }
    let config = episode_config(&settings.config, &settings.assistant)?;
    if let Some(target) = &settings.record {
        target
            .prepare()
            .map_err(|source| EvalError::Record { episode: 0, source })?;
    }
    // Every lane is a thread of its own (see `default_lanes`): they all pull from
    // one counter, and each episode's result depends on its index alone.
    let threads = settings
        .threads
        .saturating_mul(settings.lanes)
        .min(settings.episodes);
    log::info!(
        "evaluating {} vs {} on {} episodes ({}), {} threads x {} lanes",
        settings.human,
        settings.assistant,
        settings.episodes,
        settings.goals_label,
        settings.threads,
        settings.lanes
    );
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<EpisodeRecord>>> = Mutex::new(vec![None; settings.episodes]);
    let worker = || -> Result<(), EvalError> {
        let result = (|| {
            // Building agents and goal generators can be costly (networks, house
            // files), so each worker builds them once and resets them per episode.
            let mut human = factory.build(&settings.human, HUMAN, &config)?;
            if let Some(chat) = settings.human_chat {
                human = match chat.kind {
                    HumanChat::Rejecting => Box::new(RejectingPerson::new(human, chat.config)),
                };
            }
            let mut agents = vec![human];
            if !settings.assistant.is_none() {
                agents.push(factory.build(&settings.assistant, ASSISTANT, &config)?);
            }
            let mut goals = settings.goals.build().map_err(EvalError::GoalGenerator)?;
            let specs = [&settings.human, &settings.assistant];
            // The seats played: the human alone when the assistant is `none`.
            let seats = agents.len();
            while !stop.load(Ordering::Relaxed) {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= settings.episodes {
                    break;
                }
                let seed = episode_seed(settings.seed, index);
                let record = run_episode(
                    &config,
                    goals.as_mut(),
                    settings.starts.as_deref(),
                    &mut agents,
                    index,
                    seed,
                    settings.record.as_ref().map(|target| RecordTo {
                        target,
                        specs: &specs[..seats],
                    }),
                )?;
                on_episode(&record);
                slots.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(record);
            }
            Ok(())
        })();
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result
    };
    let results: Vec<Result<(), EvalError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|n| {
                std::thread::Builder::new()
                    .name(format!("mbag-eval-{n}"))
                    .spawn_scoped(s, worker)
                    .expect("spawning an evaluation thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let episodes: Vec<EpisodeRecord> = slots
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every episode ran"))
        .collect();
    let summary = Summary::of(&episodes);
    Ok(Evaluation { episodes, summary })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec::StandardAgents;
    use serde_json::json;

    fn settings(assistant: &str, episodes: usize, threads: usize) -> EvalSettings {
        EvalSettings {
            config: Config::from_json(&json!({
                "num_players": 2,
                "horizon": 200,
                "world_size": [6, 6, 6],
                "random_start_locations": true,
                "randomize_first_episode_length": true,
                "rewards": {"place_wrong": -1},
                "players": [{"player_name": "human"}, {"player_name": "assistant"}],
                "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
            }))
            .unwrap(),
            goals: GoalConfig::from_env("basic", &json!({})).unwrap(),
            goals_label: "basic".into(),
            human: "heuristic:lowest_block".parse().unwrap(),
            assistant: assistant.parse().unwrap(),
            episodes,
            seed: 7,
            threads,
            lanes: 1,
            starts: None,
            human_chat: None,
            record: None,
        }
    }

    fn outcomes(e: &Evaluation) -> Vec<EpisodeOutcome> {
        e.episodes.iter().map(|r| r.outcome.clone()).collect()
    }

    #[test]
    fn same_seed_same_episodes_whatever_the_threads() {
        let factory = StandardAgents::heuristics_only();
        let one = evaluate(&settings("heuristic:random", 4, 1), &factory, &|_| {}).unwrap();
        let two = evaluate(&settings("heuristic:random", 4, 2), &factory, &|_| {}).unwrap();
        assert_eq!(outcomes(&one), outcomes(&two));
        let mut lanes = settings("heuristic:random", 4, 2);
        lanes.lanes = 3;
        let six = evaluate(&lanes, &factory, &|_| {}).unwrap();
        assert_eq!(outcomes(&one), outcomes(&six));
        let seeds: Vec<u64> = one.episodes.iter().map(|r| r.outcome.seed).collect();
        assert!(seeds.windows(2).all(|w| w[0] != w[1]), "{seeds:?}");
        let mut other = settings("heuristic:random", 4, 2);
        other.seed = 8;
        let three = evaluate(&other, &factory, &|_| {}).unwrap();
        assert_ne!(outcomes(&one), outcomes(&three));
        assert!(one.episodes.iter().all(|r| r.assistant_move_ms.is_some()));
    }

    /// `--record`: each episode becomes a recording that replays to the same
    /// outcome, names its seats, and is there however many threads played.
    #[test]
    fn recorded_episodes_replay_to_their_outcomes() {
        use crate::recording::{Recording, verify};
        let dir = tempfile::tempdir().unwrap();
        let factory = StandardAgents::heuristics_only();
        for (assistant, seats) in [("heuristic:random", 2), ("none", 1)] {
            let mut s = settings(assistant, 3, 2);
            let target = RecordEpisodes {
                dir: dir.path().join(assistant.replace(':', "_")),
                description: "a test".into(),
            };
            s.record = Some(target.clone());
            let e = evaluate(&s, &factory, &|_| {}).unwrap();
            for r in &e.episodes {
                let path = target.path_of(r.outcome.episode);
                let rec = Recording::read(&path).unwrap();
                assert_eq!(rec.header.players.len(), seats);
                assert_eq!(
                    rec.header.players[0].agent.as_deref(),
                    Some("heuristic:lowest_block")
                );
                let report = verify(&rec, &mut |_, _| {}).unwrap();
                assert!(report.passed(), "{report:?}");
                assert_eq!(report.steps_replayed as u64, r.outcome.length);
                let footer = rec.footer.as_ref().expect("a finished recording");
                assert_eq!(footer.steps, r.outcome.length);
            }
        }
        let mut unwritable = settings("none", 1, 1);
        let file = dir.path().join("a file");
        std::fs::write(&file, "").unwrap();
        unwritable.record = Some(RecordEpisodes {
            dir: file,
            description: "a test".into(),
        });
        let err = evaluate(&unwritable, &factory, &|_| {}).unwrap_err();
        assert!(matches!(err, EvalError::Record { .. }), "{err}");
    }

    #[test]
    fn a_heuristic_human_alone_builds_the_basic_goal() {
        let factory = StandardAgents::heuristics_only();
        let seen = AtomicUsize::new(0);
        let e = evaluate(&settings("none", 3, 2), &factory, &|_| {
            seen.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(seen.into_inner(), 3);
        for r in &e.episodes {
            let o = &r.outcome;
            assert!(o.goal_completed, "{o:?}");
            assert_eq!(o.goal_percentage, 1.0);
            assert!(o.length < 200, "terminates on completion: {o:?}");
            assert!(o.human_place_break >= o.goal_size);
            assert_eq!(o.human_goal_percentage, 1.0);
            assert_eq!(o.assistant_goal_percentage, None);
            assert_eq!(r.assistant_move_ms, None);
        }
        let s = &e.summary;
        assert_eq!((s.completion.successes, s.completion.n), (3, 3));
        assert_eq!(s.goal_percentage.mean, 1.0);
        assert_eq!(s.assistant_goal_percentage, None);
    }

    /// Goal % by minute starts below the end's and ends at it; the summary
    /// reports only the Table 2 minutes every episode reached.
    #[test]
    fn goal_percentage_is_reported_by_minute() {
        let factory = StandardAgents::heuristics_only();
        let mut three = settings("none", 2, 1);
        three.config.horizon = 300;
        let e = evaluate(&three, &factory, &|_| {}).unwrap();
        for r in &e.episodes {
            let by_minute = &r.outcome.goal_percentage_by_minute;
            assert_eq!(by_minute.len(), 5, "minutes 0..=4 of 300 steps");
            assert!(by_minute[0] < r.outcome.goal_percentage, "{by_minute:?}");
            assert_eq!(by_minute.last(), Some(&r.outcome.goal_percentage));
        }
        let minutes: Vec<u64> = e
            .summary
            .goal_percentage_at_minutes
            .iter()
            .map(|m| m.minute)
            .collect();
        assert_eq!(minutes, [3]);
        let short = evaluate(&settings("none", 1, 1), &factory, &|_| {}).unwrap();
        assert!(short.summary.goal_percentage_at_minutes.is_empty());
    }

    #[test]
    fn shares_add_up_to_the_goal_percentage() {
        let factory = StandardAgents::heuristics_only();
        let e = evaluate(&settings("heuristic:lowest_block", 3, 2), &factory, &|_| {}).unwrap();
        for r in &e.episodes {
            let o = &r.outcome;
            let assistant = o.assistant_goal_percentage.unwrap();
            assert!(assistant > 0.0, "a goal-seeing builder helps: {o:?}");
            assert!(
                (o.human_goal_percentage + assistant - o.goal_percentage).abs() < 1e-9,
                "{o:?}"
            );
        }
    }

    #[test]
    fn settings_errors() {
        let factory = StandardAgents::heuristics_only();
        let mut s = settings("none", 1, 1);
        s.human = AgentSpec::None;
        assert!(matches!(
            evaluate(&s, &factory, &|_| {}),
            Err(EvalError::NoHuman)
        ));
        let s = settings("az:missing.json", 1, 1);
        let err = evaluate(&s, &factory, &|_| {}).unwrap_err();
        assert!(
            matches!(err, EvalError::Agent(AgentSpecError::Unsupported { .. })),
            "{err}"
        );
        assert!(matches!(
            evaluate(&settings("none", 0, 1), &factory, &|_| {}),
            Err(EvalError::Settings(_))
        ));
    }

    /// The goal of `mcts::testing`, every episode.
    #[derive(Debug)]
    struct FixedGoal;

    impl GoalGenerator for FixedGoal {
        fn generate(
            &mut self,
            size: crate::sim::coords::WorldSize,
            _rng: &mut dyn rand::RngCore,
        ) -> Result<crate::sim::block::Blocks, GoalError> {
            // The env puts a structure's (0, 0, 0) at the world's (1, 1, 1).
            let world = crate::mcts::testing::goal();
            let mut structure = crate::sim::block::Blocks::air(size);
            for cell in size.cells() {
                structure.set(cell, world.get(cell.offset(1, 1, 1)));
            }
            Ok(structure)
        }
    }

    #[test]
    fn a_rejecting_human_cuts_a_listening_assistants_wrong_placements() {
        use crate::agents::network::PolicyAgent;
        use crate::mcts::testing::{Oracle, config};
        // The oracle's policy places any block on an empty goal cell, right or
        // wrong type, while its goal head knows the goal: only words can tell
        // the policy agent its guesses are wrong.
        let config = config();
        let factory = StandardAgents::heuristics_only();
        let mut wrong = [0u64; 2];
        let mut said = [0u64; 2];
        for (slot, chat) in [(0, false), (1, true)] {
            for episode in 0..6 {
                let mut human = factory
                    .build(&"heuristic:noop".parse().unwrap(), HUMAN, &config)
                    .unwrap();
                if chat {
                    human = Box::new(RejectingPerson::new(
                        human,
                        ChatPersonConfig {
                            probability: 1.0,
                            delay_steps: 0,
                        },
                    ));
                }
                let assistant = PolicyAgent::new(Oracle::new(), &config, false, 1.0);
                let mut agents: Vec<Box<dyn Agent>> = vec![human, Box::new(assistant)];
                let record = run_episode(
                    &config,
                    &mut FixedGoal,
                    None,
                    &mut agents,
                    episode,
                    episode_seed(3, episode),
                    None,
                )
                .unwrap();
                wrong[slot] += record.outcome.assistant_wrong_places.unwrap();
                said[slot] +=
                    record.outcome.human_messages + record.outcome.assistant_messages.unwrap();
            }
        }
        assert_eq!(said[0], 0);
        assert!(said[1] >= 12, "both sides talk: {said:?}");
        assert!(
            wrong[1] * 3 <= wrong[0],
            "wrong placements without and with chat: {wrong:?}"
        );
    }
}
