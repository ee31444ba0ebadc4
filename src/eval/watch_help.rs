//! Watch-then-help (Puig et al., `../shared/papers/watch_and_help.txt`): the
//! assistant first watches one demonstration of a goal, then helps a human model
//! build the same goal from a different start.
//!
//! - **Watching**: the demonstration's states are replayed, step by step, into a
//!   2-player env in which the assistant stands aside; the person's edits are
//!   marked as player 0's. The assistant observes every step and chooses an
//!   action that is thrown away (it is muted), so its memory and goal belief
//!   are conditioned on the demonstration.
//! - **Helping**: a fresh world with the same goal and start positions drawn
//!   from the episode's seed; the human model and the assistant play until the
//!   goal is built or the horizon. The assistant keeps what it learnt watching
//!   (it is not reset in between).
//! - **Alone**: the human model alone from the same start, for the speedup
//!   `L_alone / L_help - 1` (lengths are the steps to build the goal, the
//!   horizon when it was not built).
//!
//! Metrics per helper: success rate, speedup, cumulative reward (player 0's,
//! the shared goal reward), conflicts (places and breaks of a cell the other
//! player touched last), and the precision and recall of the goal the helper
//! believes in after watching ([`super::super::agents::Agent::goal_belief`])
//! against the true one, over the cells the goal changes.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use super::run::{agent_seed, default_lanes, episode_seed};
use super::stats::{MeanCi, RateCi};
use crate::agents::oracle::OracleAgent;
use crate::agents::spec::{AgentFactory, AgentSpec, AgentSpecError};
use crate::agents::{Agent, AgentError};
use crate::recording::RecordingError;
use crate::recording::header::Role;
use crate::recording::reader::{Recording, collect_files};
use crate::recording::verify::{env_for, verify};
use crate::sim::action::ActionType;
use crate::sim::block::Blocks;
use crate::sim::config::Config;
use crate::sim::coords::{Cell, PlayerPos, WorldSize};
use crate::sim::env::{Env, PlayersOverlapping, StepError, player_fits};
use crate::sim::presets::{Game, Movement};
use crate::sim::state::{EnvState, NO_INTERACTION};

/// One demonstration: a recording's goal and the states its person passed
/// through.
#[derive(Clone, Debug)]
pub struct Demo {
    /// The recording's episode id.
    pub name: String,
    /// The goal.
    pub goal: Blocks,
    /// The state before each step, then after the last one watched.
    pub states: Vec<EnvState>,
    /// The person's player index in the recording.
    pub person: usize,
}

/// Reads every recording under `dir` as a demonstration, keeping at most
/// `max_steps` steps of each.
pub fn load_demos(dir: &Path, max_steps: usize) -> Result<Vec<Demo>, RecordingError> {
    let mut demos = Vec::new();
    for path in collect_files(&[dir.to_owned()])? {
        let rec = Recording::read(&path)?;
        let env = env_for(&rec)?;
        let person = rec
            .header
            .players
            .iter()
            .find(|p| p.role == Role::Human)
            .map_or(0, |p| p.index);
        let mut states = vec![env.state().clone()];
        verify(&rec, &mut |env, _| {
            if states.len() <= max_steps {
                states.push(env.state().clone());
            }
        })?;
        demos.push(Demo {
            name: rec.header.episode_id.clone(),
            goal: env.goal().clone(),
            states,
            person,
        });
    }
    Ok(demos)
}

/// Who helps in a column.
#[derive(Clone, Debug, PartialEq)]
pub enum Helper {
    /// Nobody: the human model alone.
    Alone,
    /// An agent spec.
    Agent(AgentSpec),
    /// The oracle's builder given another demonstration's goal: confident and
    /// wrong.
    RandomGoal,
}

impl std::fmt::Display for Helper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Alone => f.write_str("alone"),
            Self::Agent(spec) => write!(f, "{spec}"),
            Self::RandomGoal => f.write_str("random-goal"),
        }
    }
}

impl Serialize for Helper {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct WatchHelpSettings {
    /// The demonstrations (episode `i` uses demonstration `i mod n`).
    pub demos: Vec<Demo>,
    /// The helpers, one column each; `Alone` is always run first.
    pub helpers: Vec<Helper>,
    /// The human model.
    pub human: AgentSpec,
    /// Episodes per column.
    pub episodes: usize,
    /// Steps of the helping phase.
    pub horizon: u64,
    /// The run's seed.
    pub seed: u64,
    /// Worker threads.
    pub threads: usize,
}

/// One episode of one column.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HelpEpisode {
    /// The demonstration's name.
    pub demo: String,
    /// Whether the goal was built.
    pub success: bool,
    /// Steps to build it (the horizon if not built).
    pub length: u64,
    /// `L_alone / L_help - 1` (0 for the alone column).
    pub speedup: f64,
    /// Player 0's summed reward.
    pub reward: f64,
    /// Places and breaks of a cell the other player touched last.
    pub conflicts: u64,
    /// Goal-inference precision after watching (`None` without a belief or with
    /// an empty one).
    pub precision: Option<f64>,
    /// Goal-inference recall after watching.
    pub recall: Option<f64>,
}

/// One column's summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HelpSummary {
    /// The helper.
    pub helper: Helper,
    /// Episodes that built the goal.
    pub success: RateCi,
    /// Speedup over the human alone.
    pub speedup: MeanCi,
    /// Steps.
    pub length: MeanCi,
    /// Player 0's reward.
    pub reward: MeanCi,
    /// Conflicts.
    pub conflicts: MeanCi,
    /// Goal-inference precision (`None` when the helper holds no belief).
    pub precision: Option<MeanCi>,
    /// Goal-inference recall.
    pub recall: Option<MeanCi>,
    /// Every episode.
    pub episodes: Vec<HelpEpisode>,
}

/// Why a watch-help run failed.
#[derive(Debug, thiserror::Error)]
pub enum WatchHelpError {
    /// Settings that cannot run.
    #[error("watch-help: {0}")]
    Settings(String),
    /// An agent could not be built.
    #[error(transparent)]
    Agent(#[from] AgentSpecError),
    /// An agent could not act.
    #[error("{demo}: player {player}: {source}")]
    Act {
        /// The demonstration.
        demo: String,
        /// The seat.
        player: usize,
        /// The error.
        #[source]
        source: AgentError,
    },
    /// The env refused a step.
    #[error("{demo}: {source}")]
    Step {
        /// The demonstration.
        demo: String,
        /// The error.
        #[source]
        source: StepError,
    },
    /// Players overlapped.
    #[error("{demo}: {source}")]
    Observe {
        /// The demonstration.
        demo: String,
        /// The error.
        #[source]
        source: PlayersOverlapping,
    },
}

/// The env config of a column's episodes on a demonstration of `size`.
pub fn config_for(size: WorldSize, players: usize, horizon: u64, helper: &Helper) -> Config {
    let mut game = Game::paper()
        .with_world_size(size)
        .with_horizon(horizon)
        .with_movement(Movement::Walking);
    game.players.truncate(players);
    let mut config = game.config().expect("the paper's game in a checked size");
    config.randomize_first_episode_length = false;
    if let (Helper::Agent(spec), true) = (helper, players > 1) {
        config.players[1].goal_visible = spec.sees_goal();
    }
    config
}

/// Runs every column.
pub fn run(
    settings: &WatchHelpSettings,
    factory: &dyn AgentFactory,
    on_episode: &(dyn Fn() + Sync),
) -> Result<Vec<HelpSummary>, WatchHelpError> {
    if settings.demos.is_empty() || settings.episodes == 0 {
        return Err(WatchHelpError::Settings(
            "no demonstrations or no episodes".into(),
        ));
    }
    let mut helpers = vec![Helper::Alone];
    helpers.extend(
        settings
            .helpers
            .iter()
            .filter(|h| **h != Helper::Alone)
            .cloned(),
    );
    let mut columns: Vec<Vec<HelpEpisode>> = Vec::new();
    for helper in &helpers {
        let lanes = match helper {
            Helper::Agent(spec) => default_lanes(&settings.human, spec),
            _ => default_lanes(&settings.human, &AgentSpec::None),
        };
        let slots: Mutex<Vec<Option<HelpEpisode>>> = Mutex::new(vec![None; settings.episodes]);
        let next = AtomicUsize::new(0);
        let worker = || -> Result<(), WatchHelpError> {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= settings.episodes {
                    return Ok(());
                }
                let episode = play(settings, helper, i, factory)?;
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(episode);
                on_episode();
            }
        };
        let workers = (settings.threads.max(1) * lanes).min(settings.episodes);
        let results: Vec<Result<(), WatchHelpError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(worker)).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>, _>>()?;
        let episodes: Vec<HelpEpisode> = slots
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .map(|e| e.expect("every episode played"))
            .collect();
        columns.push(episodes);
    }
    // Speedups against the alone column, episode by episode.
    let alone: Vec<u64> = columns[0].iter().map(|e| e.length).collect();
    Ok(helpers
        .into_iter()
        .zip(columns)
        .map(|(helper, mut episodes)| {
            for (e, &l) in episodes.iter_mut().zip(&alone) {
                e.speedup = l as f64 / e.length.max(1) as f64 - 1.0;
            }
            summarise(helper, episodes)
        })
        .collect())
}

fn summarise(helper: Helper, episodes: Vec<HelpEpisode>) -> HelpSummary {
    let mean = |f: &dyn Fn(&HelpEpisode) -> f64| MeanCi::of(episodes.iter().map(f));
    let optional = |f: &dyn Fn(&HelpEpisode) -> Option<f64>| {
        let values: Vec<f64> = episodes.iter().filter_map(f).collect();
        (!values.is_empty()).then(|| MeanCi::of(values))
    };
    let built = episodes.iter().filter(|e| e.success).count() as u64;
    HelpSummary {
        helper,
        success: RateCi::wilson(built, episodes.len() as u64),
        speedup: mean(&|e| e.speedup),
        length: mean(&|e| e.length as f64),
        reward: mean(&|e| e.reward),
        conflicts: mean(&|e| e.conflicts as f64),
        precision: optional(&|e| e.precision),
        recall: optional(&|e| e.recall),
        episodes,
    }
}

/// Precision and recall of `belief` against `goal` over the cells the goal
/// changes from the initial world (a cell counts when the block matches).
pub fn goal_inference(goal: &Blocks, belief: &[u8]) -> (Option<f64>, Option<f64>) {
    let initial = Blocks::initial_world(goal.size());
    let (mut predicted, mut truth, mut hits) = (0usize, 0usize, 0usize);
    for (i, (&g, &b)) in goal.ids().iter().zip(belief).enumerate() {
        let base = initial.ids()[i];
        let in_truth = g != base;
        let in_belief = b != base;
        truth += usize::from(in_truth);
        predicted += usize::from(in_belief);
        hits += usize::from(in_truth && in_belief && g == b);
    }
    let ratio = |n: usize, d: usize| (d > 0).then(|| n as f64 / d as f64);
    (ratio(hits, predicted), ratio(hits, truth))
}

/// One episode of `helper` on demonstration `i mod n`.
fn play(
    settings: &WatchHelpSettings,
    helper: &Helper,
    i: usize,
    factory: &dyn AgentFactory,
) -> Result<HelpEpisode, WatchHelpError> {
    let demo = &settings.demos[i % settings.demos.len()];
    let name = demo.name.clone();
    let act_err = |player: usize| {
        let demo = name.clone();
        move |source| WatchHelpError::Act {
            demo,
            player,
            source,
        }
    };
    let observe_err = |source| WatchHelpError::Observe {
        demo: name.clone(),
        source,
    };
    let size = demo.goal.size();
    let players = if *helper == Helper::Alone { 1 } else { 2 };
    let config = config_for(size, players, settings.horizon, helper);
    let seed = episode_seed(settings.seed, i);
    let mut human = factory.build(&settings.human, 0, &config)?;
    human.reset(agent_seed(seed, 0));
    let mut assistant: Option<Box<dyn Agent>> = match helper {
        Helper::Alone => None,
        Helper::Agent(spec) => Some(factory.build(spec, 1, &config)?),
        Helper::RandomGoal => {
            // Another demonstration's goal of the same size, or the empty one.
            let other = (1..settings.demos.len())
                .map(|k| &settings.demos[(i + k) % settings.demos.len()])
                .find(|d| d.goal.size() == size && d.goal.ids() != demo.goal.ids());
            let goal = other.map_or_else(
                || Blocks::initial_world(size).ids().to_vec(),
                |d| d.goal.ids().to_vec(),
            );
            Some(Box::new(OracleAgent::with_goal(&config, goal)))
        }
    };
    let mut env = Env::new(config.clone());
    let mut obs = env.new_observation();
    let (mut precision, mut recall) = (None, None);
    if let Some(assistant) = assistant.as_mut() {
        assistant.reset(agent_seed(seed, 1));
        watch(demo, &mut env, assistant.as_mut(), &mut obs).map_err(|e| e.into_error(&name))?;
        if let Some(belief) = assistant.goal_belief() {
            (precision, recall) = goal_inference(&demo.goal, &belief);
        }
    }

    // Helping, from a fresh world and start positions drawn from the seed.
    let mut rng = StdRng::seed_from_u64(seed);
    env.reset_with_goal(demo.goal.clone(), &mut rng);
    let mut observations = vec![env.new_observation(); players];
    let (mut length, mut reward, mut conflicts) = (0u64, 0.0, 0u64);
    let mut actions = Vec::with_capacity(players);
    loop {
        actions.clear();
        env.observe(0, &mut observations[0]).map_err(observe_err)?;
        actions.push(human.try_act(&observations[0]).map_err(act_err(0))?);
        if let Some(assistant) = assistant.as_mut() {
            env.observe(1, &mut observations[1]).map_err(observe_err)?;
            actions.push(assistant.try_act(&observations[1]).map_err(act_err(1))?);
        }
        let before = env.state().last_interacted.clone();
        let outcome = env.step(&actions).map_err(|source| WatchHelpError::Step {
            demo: name.clone(),
            source,
        })?;
        length += 1;
        reward += outcome.rewards[0];
        for (p, info) in outcome.infos.iter().enumerate() {
            if matches!(
                info.action.kind,
                ActionType::PlaceBlock | ActionType::BreakBlock
            ) {
                let last = before[info.action.location.get()];
                if last >= 0 && last as usize != p {
                    conflicts += 1;
                }
            }
        }
        if outcome.done {
            break;
        }
    }
    let success = env.goal_completed();
    Ok(HelpEpisode {
        demo: demo.name.clone(),
        success,
        length: if success { length } else { settings.horizon },
        speedup: 0.0,
        reward,
        conflicts,
        precision,
        recall,
    })
}

/// What went wrong while watching, named by [`WatchError::into_error`].
enum WatchError {
    Act(AgentError),
    Observe(PlayersOverlapping),
}

impl WatchError {
    fn into_error(self, demo: &str) -> WatchHelpError {
        match self {
            Self::Act(source) => WatchHelpError::Act {
                demo: demo.to_owned(),
                player: 1,
                source,
            },
            Self::Observe(source) => WatchHelpError::Observe {
                demo: demo.to_owned(),
                source,
            },
        }
    }
}

/// Replays `demo` into `env` (2 players) with the assistant standing aside,
/// muted, observing every step.
fn watch(
    demo: &Demo,
    env: &mut Env,
    assistant: &mut dyn Agent,
    obs: &mut crate::sim::obs::Observation,
) -> Result<(), WatchError> {
    let first = &demo.states[0];
    let mut rng = StdRng::seed_from_u64(0);
    env.reset_with_goal(demo.goal.clone(), &mut rng);
    let mut state = env.state().clone();
    let person_at =
        |s: &EnvState| PlayerPos::centred_in(s.player_positions[demo.person].feet_cell());
    let mut person = person_at(first);
    // The assistant stands on free ground away from the person.
    let aside = free_cell(&first.blocks, person.feet_cell());
    for (k, s) in demo.states.iter().enumerate() {
        state.blocks = s.blocks.clone();
        state.last_interacted = s
            .last_interacted
            .iter()
            .map(|&p| {
                if p >= 0 && p as usize == demo.person {
                    0
                } else {
                    NO_INTERACTION
                }
            })
            .collect();
        let candidate = person_at(s);
        let feet = candidate.feet_cell();
        // Where the recorded person cannot stand in this env (outside, or on
        // the assistant), it stays where it was.
        if s.blocks.size().contains(feet)
            && !(feet.x == aside.x && feet.z == aside.z && (feet.y - aside.y).abs() <= 1)
        {
            person = candidate;
        }
        let aside_now = if player_fits(&s.blocks, aside, &[]) {
            aside
        } else {
            free_cell(&s.blocks, person.feet_cell())
        };
        state.player_positions = vec![person, PlayerPos::centred_in(aside_now)];
        state.timestep = k as u64;
        env.set_state(state.clone());
        env.observe(1, obs).map_err(WatchError::Observe)?;
        assistant.try_act(obs).map_err(WatchError::Act)?;
    }
    Ok(())
}

/// A free feet cell on the ground, as far as possible from `from` in x and z.
fn free_cell(blocks: &Blocks, from: Cell) -> Cell {
    let size = blocks.size();
    size.cells()
        .filter(|&c| c.y >= 1 && player_fits(blocks, c, &[]) && !(c.x == from.x && c.z == from.z))
        .max_by_key(|c| (-c.y, (c.x - from.x).pow(2) + (c.z - from.z).pow(2)))
        .unwrap_or(Cell::new(0, size.height as i32 - 2, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_inference_counts_the_cells_the_goal_changes() {
        let size = WorldSize::new(5, 5, 5);
        let mut goal = Blocks::initial_world(size);
        goal.set(Cell::new(1, 2, 1), crate::sim::block::BlockId::PLANKS);
        goal.set(Cell::new(2, 2, 1), crate::sim::block::BlockId::GLASS);
        // The truth itself: 1 and 1.
        assert_eq!(goal_inference(&goal, goal.ids()), (Some(1.0), Some(1.0)));
        // One right, one wrong block, one extra cell: precision 1/3, recall 1/2.
        let mut belief = goal.clone();
        belief.set(Cell::new(2, 2, 1), crate::sim::block::BlockId::WOOL);
        belief.set(Cell::new(3, 2, 1), crate::sim::block::BlockId::STONE);
        let (p, r) = goal_inference(&goal, belief.ids());
        assert!((p.unwrap() - 1.0 / 3.0).abs() < 1e-12 && (r.unwrap() - 0.5).abs() < 1e-12);
        // Believing in the initial world predicts nothing.
        let (p, r) = goal_inference(&goal, Blocks::initial_world(size).ids());
        assert_eq!((p, r), (None, Some(0.0)));
    }

    #[test]
    fn the_oracle_watches_then_builds_faster_than_the_person_alone() {
        let demos = load_demos(
            Path::new("recordings/samples/simulated_lowest_block_pair_seed3.jsonl"),
            40,
        )
        .unwrap();
        assert_eq!(demos[0].states.len(), 41);
        let settings = WatchHelpSettings {
            demos,
            helpers: vec![Helper::Agent(AgentSpec::Oracle), Helper::RandomGoal],
            human: "heuristic:noop".parse().unwrap(),
            episodes: 2,
            horizon: 300,
            seed: 1,
            threads: 2,
        };
        let factory = crate::agents::spec::StandardAgents::heuristics_only();
        let columns = run(&settings, &factory, &|| {}).unwrap();
        let names: Vec<String> = columns.iter().map(|c| c.helper.to_string()).collect();
        assert_eq!(names, ["alone", "oracle", "random-goal"]);
        let (alone, oracle) = (&columns[0], &columns[1]);
        assert_eq!(alone.success.successes, 0);
        // (An idle person may stand in a goal cell for good, so not always 2.)
        assert!(oracle.success.successes >= 1, "{:?}", oracle.success);
        assert!(oracle.speedup.mean > 0.0, "{:?}", oracle.speedup);
        assert_eq!(oracle.precision.as_ref().unwrap().mean, 1.0);
        assert_eq!(oracle.recall.as_ref().unwrap().mean, 1.0);
        assert!(alone.precision.is_none());
        // With only one demonstration the random goal is the empty one.
        assert_eq!(columns[2].success.successes, 0);
    }
}
