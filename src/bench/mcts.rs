//! `mbag bench mcts`: how fast the AssistanceZero assistant moves, through the
//! code that plays: an `az:` spec built by [`ServiceAgents`] (a
//! [`crate::agents::network::SearchAgent`] on a [`crate::nn::NetEvaluator`],
//! leaves batched by the model's inference service), or with `sims=0` the policy
//! head alone ([`crate::agents::network::PolicyAgent`]); and self-play
//! ([`SelfPlay::collect`]) on the same model.

use std::path::Path;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use crate::agents::spec::{AgentFactory, AgentSpec, AgentSpecError};
use crate::agents::{Agent, AgentError};
use crate::mcts::MctsConfig;
use crate::nn::{InferenceService, Model, ModelConfig, NnError, ServiceConfig};
use crate::sim::config::Config;
use crate::sim::env::{Env, PlayersOverlapping, StepError};
use crate::sim::goal::{GoalConfig, GoalError};
use crate::train::assistant::AssistantError;
use crate::train::assistant::selfplay::{AssistantPlays, SelfPlay, SelfPlaySettings};

/// Why a measurement could not run.
#[derive(Debug, thiserror::Error)]
pub enum MctsBenchError {
    /// An agent could not be built.
    #[error(transparent)]
    Spec(#[from] AgentSpecError),
    /// An agent could not move.
    #[error(transparent)]
    Act(#[from] AgentError),
    /// Goal generation failed.
    #[error(transparent)]
    Goal(#[from] GoalError),
    /// The env refused a step.
    #[error(transparent)]
    Step(#[from] StepError),
    /// Two players overlapped.
    #[error(transparent)]
    Observe(#[from] PlayersOverlapping),
    /// The network or its service failed.
    #[error(transparent)]
    Nn(#[from] NnError),
    /// Self-play failed.
    #[error(transparent)]
    SelfPlay(#[from] AssistantError),
}

/// The env of the bench for `model`: 2 players (human, assistant) in its world
/// size with its abilities, random starts, horizon 1500, `place_wrong` -1.
pub fn bench_config(model: &ModelConfig) -> Config {
    let s = model.world_size;
    let a = model.abilities;
    Config::from_json(&json!({
        "num_players": 2,
        "horizon": 1500,
        "world_size": [s.width, s.height, s.depth],
        "random_start_locations": true,
        "rewards": {"place_wrong": -1},
        "players": [{"player_name": "human"}, {"player_name": "assistant"}],
        "abilities": {
            "teleportation": a.teleportation,
            "flying": a.flying,
            "inf_blocks": a.inf_blocks,
        },
    }))
    .expect("the bench config is valid")
}

/// The mask a model was trained with (its `line_of_sight_masking`).
pub fn line_of_sight(model: &ModelConfig) -> bool {
    model.line_of_sight_masking()
}

/// Timed assistant moves.
#[derive(Clone, Copy, Debug)]
pub struct MoveTiming {
    /// Moves timed.
    pub moves: u64,
    /// Time in the assistant's moves.
    pub seconds: f64,
    /// The cores' use over the whole row, both players' moves and the env's
    /// steps included ([`crate::bench::cpu::Utilisation`]).
    pub cpu: Option<f64>,
}

impl MoveTiming {
    /// Assistant moves per second.
    pub fn moves_per_s(&self) -> f64 {
        self.moves as f64 / self.seconds
    }
}

/// How [`time_moves`] plays.
#[derive(Clone, Debug)]
pub struct MoveBench {
    /// Player 0 (its moves are not timed).
    pub human: AgentSpec,
    /// Goals.
    pub goals: GoalConfig,
    /// Seeds the env and the agents.
    pub seed: u64,
    /// Time of assistant moves to measure.
    pub budget: Duration,
    /// Fewest moves to time.
    pub min_moves: u64,
    /// Make one untimed assistant move first: the first calls of a model's service
    /// (libtorch's first operators, allocations) are slow.
    pub warm_up: bool,
}

/// Plays the assistant `assistant` (player 1) with `bench.human` (player 0) in
/// `config`, timing the assistant's moves only, until the budget is spent and at
/// least `bench.min_moves` moves are timed.
pub fn time_moves(
    factory: &dyn AgentFactory,
    assistant: &AgentSpec,
    config: &Config,
    bench: &MoveBench,
) -> Result<MoveTiming, MctsBenchError> {
    let mut agents: Vec<Box<dyn Agent>> = vec![
        factory.build(&bench.human, 0, config)?,
        factory.build(assistant, 1, config)?,
    ];
    let mut goals = bench.goals.build()?;
    let mut env = Env::new(config.clone());
    let mut rng = StdRng::seed_from_u64(bench.seed);
    let mut obs = [env.new_observation(), env.new_observation()];
    let seed = bench.seed;
    let mut start_episode = |env: &mut Env, agents: &mut [Box<dyn Agent>], episode: u64| {
        for (p, agent) in agents.iter_mut().enumerate() {
            agent.reset(seed ^ (episode << 8) ^ p as u64);
        }
        env.reset(goals.as_mut(), &mut rng)
    };
    start_episode(&mut env, &mut agents, 0)?;
    let mut episode = 0;
    let mut timing = MoveTiming {
        moves: 0,
        seconds: 0.0,
        cpu: None,
    };
    let mut utilisation = None;
    let mut warmed_up = !bench.warm_up;
    while timing.moves < bench.min_moves || timing.seconds < bench.budget.as_secs_f64() {
        for (p, o) in obs.iter_mut().enumerate() {
            env.observe(p, o)?;
        }
        let human = agents[0].try_act(&obs[0])?;
        let started = Instant::now();
        let assistant = agents[1].try_act(&obs[1])?;
        if warmed_up {
            timing.seconds += started.elapsed().as_secs_f64();
            timing.moves += 1;
        }
        warmed_up = true;
        utilisation.get_or_insert_with(crate::bench::cpu::Utilisation::start);
        if env.step(&[human, assistant])?.done {
            episode += 1;
            start_episode(&mut env, &mut agents, episode)?;
        }
    }
    timing.cpu = utilisation.and_then(|u| u.share());
    Ok(timing)
}

/// Self-play throughput.
#[derive(Clone, Copy, Debug)]
pub struct SelfPlayTiming {
    /// Environment steps.
    pub env_steps: u64,
    /// MCTS simulations.
    pub simulations: u64,
    /// Wall time.
    pub seconds: f64,
    /// The inference service's mean batch.
    pub mean_batch: f64,
    /// The cores' use while it played.
    pub cpu: Option<f64>,
    /// The format the assistant's network computed in.
    pub precision: crate::nn::Precision,
}

/// What [`time_selfplay`] plays.
#[derive(Clone, Debug)]
pub struct SelfPlayBench {
    /// The human model.
    pub human: AgentSpec,
    /// Goals.
    pub goals: GoalConfig,
    /// Simulations per assistant move.
    pub sims: usize,
    /// Leaves each search gathers per network call.
    pub leaves: usize,
    /// How the assistant's number format is chosen.
    pub formats: crate::nn::reduced::FormatChoice,
    /// Environments.
    pub envs: usize,
    /// Self-play threads.
    pub threads: usize,
    /// Steps timed per environment (after one untimed step).
    pub steps: usize,
    /// Seed.
    pub seed: u64,
}

/// Self-play on `model` (moved into an inference service) as training plays it:
/// the paper's search settings with `bench.sims` simulations and
/// `bench.leaves` leaves per call. `path` is the model's config (for its golden
/// file in the format check).
pub fn time_selfplay(
    mut model: Model,
    path: &Path,
    factory: &dyn AgentFactory,
    bench: &SelfPlayBench,
) -> Result<SelfPlayTiming, MctsBenchError> {
    let config = bench_config(model.config());
    let settings = SelfPlaySettings {
        env: config,
        goals: bench.goals.clone(),
        human: bench.human.clone(),
        mcts: MctsConfig {
            num_simulations: bench.sims,
            leaves_per_batch: bench.leaves,
            ..MctsConfig::default()
        },
        num_envs: bench.envs,
        threads: bench.threads,
        seed: bench.seed,
        line_of_sight: line_of_sight(model.config()),
        gamma: 0.95,
        assistant: AssistantPlays::Search,
        starts: None,
    };
    let mut selfplay = SelfPlay::new(&settings, factory, false)?;
    if bench.formats == crate::nn::reduced::FormatChoice::Checked {
        crate::nn::reduced::choose_on_cpu(&mut model, path)?;
    }
    let precision = model.precision();
    let service = InferenceService::spawn(
        model,
        ServiceConfig {
            // Every search's leaves in one batch, as training sizes it.
            max_batch: (bench.envs * bench.leaves).max(1),
            ..ServiceConfig::default()
        },
    )?;
    selfplay.collect(service.handle(), 1)?;
    let utilisation = crate::bench::cpu::Utilisation::start();
    let collection = selfplay.collect(service.handle(), bench.steps)?;
    let cpu = utilisation.share();
    let stats = service.shutdown()?;
    Ok(SelfPlayTiming {
        env_steps: collection.env_steps,
        simulations: collection.simulations,
        seconds: collection.seconds,
        mean_batch: stats.mean_batch_size(),
        cpu,
        precision,
    })
}

/// The `az:` spec of the model at `path` with `sims` simulations, gathering
/// `leaves` leaves per network call.
pub fn assistant_spec(path: &Path, sims: u32, leaves: u32) -> Result<AgentSpec, AgentSpecError> {
    format!("az:{}?sims={sims}&leaves={leaves}", path.display()).parse()
}
