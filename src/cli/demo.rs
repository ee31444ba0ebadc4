//! `mbag demo`: a simulated episode of the paper's setting, no Minecraft needed.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use crate::agents::{Agent, build_agent};
use crate::eval::metrics;
use crate::sim::action::ActionType;
use crate::sim::env::Env;
use crate::sim::goal::{GoalConfig, GoalGenerator, Subset};
use crate::sim::presets::{Game, Movement};

/// Who plays the second player.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SecondPlayer {
    /// A LowestBlockAgent that sees the goal: an oracle assistant, an upper bound.
    Oracle,
    /// Does nothing: the human builds alone.
    Noop,
    /// Uniformly random valid actions: a harmful assistant.
    Random,
    /// Mirrors what is built across x (MirrorBuildingAgent).
    Mirror,
}

impl SecondPlayer {
    fn agent_name(self) -> &'static str {
        match self {
            Self::Oracle => "LowestBlockAgent",
            Self::Noop => "NoopAgent",
            Self::Random => "RandomAgent",
            Self::Mirror => "MirrorBuildingAgent",
        }
    }
}

/// Arguments of `mbag demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The second player (the assistant's seat).
    #[arg(long, value_enum, default_value_t = SecondPlayer::Oracle)]
    pub second: SecondPlayer,
    /// Episode seed (goal, start positions, agents).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Maximum number of steps.
    #[arg(long, default_value_t = 1500, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub horizon: u64,
    /// Folder of CraftAssist houses [default: ../shared/data/houses/craftassist];
    /// without one, the tutorial house is built.
    #[arg(long, value_name = "DIR")]
    pub houses: Option<PathBuf>,
    /// Print progress every this many steps (0: only the summary).
    #[arg(long, default_value_t = 100, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::EVERY))]
    pub every: u64,
}

/// Runs the demo episode.
pub fn run(args: DemoArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(args.horizon > 0, "--horizon must be positive");
    let houses = args
        .houses
        .clone()
        .unwrap_or_else(|| super::shared_dir().join("data/houses/craftassist"));
    let (mut goals, goal_name): (Box<dyn GoalGenerator>, String) = if houses.is_dir() {
        (
            GoalConfig::human_study_in(Subset::Test, &houses)
                .build()
                .context("building the human-study goal pipeline")?,
            format!(
                "a CraftAssist test house from {} through the human-study pipeline",
                houses.display()
            ),
        )
    } else {
        log::warn!(
            "no house folder at {}; building the tutorial house",
            houses.display()
        );
        (
            GoalConfig::from_env("tutorial", &json!({}))
                .context("the tutorial generator")?
                .build()?,
            "the tutorial house".to_owned(),
        )
    };
    // The paper's setting, except that the heuristic builder needs teleportation (the
    // reference's LowestBlockAgent refuses to walk).
    let config = Game::paper()
        .with_movement(Movement::Teleporting)
        .with_horizon(args.horizon)
        .config()?;
    let mut env = Env::new(config.clone());
    let mut rng = StdRng::seed_from_u64(args.seed);
    env.reset(goals.as_mut(), &mut rng)
        .context("generating the goal")?;
    let mut agents: Vec<Box<dyn Agent>> = vec![
        build_agent("LowestBlockAgent", &json!({}), &config)?,
        build_agent(args.second.agent_name(), &json!({}), &config)?,
    ];
    for (p, agent) in agents.iter_mut().enumerate() {
        agent.reset(args.seed * 100 + p as u64);
    }
    println!(
        "mbag demo: 11x10x10 world, 2 players, horizon {}, goal = {goal_name}",
        args.horizon
    );
    println!(
        "player 0 (human stand-in): LowestBlockAgent; player 1: {} ({:?}); teleportation on, infinite blocks, place_wrong = -1",
        args.second.agent_name(),
        args.second
    );
    println!(
        "goal: {} cells differ from the start world\n",
        env.size().num_cells() - env.goal_similarity() as usize
    );
    let mut obs = [env.new_observation(), env.new_observation()];
    let mut infos = Vec::new();
    let mut rewards = Vec::new();
    let start = Instant::now();
    loop {
        for (p, o) in obs.iter_mut().enumerate() {
            env.observe(p, o).context("observing")?;
        }
        let actions = [agents[0].act(&obs[0]), agents[1].act(&obs[1])];
        let outcome = env.step(&actions)?.clone();
        infos.push(outcome.infos.clone());
        rewards.push(outcome.rewards.clone());
        let t = env.state().timestep;
        if args.every > 0 && (t.is_multiple_of(args.every) || outcome.done) {
            println!(
                "step {t:>5}: goal {:>6.1}%, reward so far {:>6.1}",
                100.0 * outcome.infos[0].goal_percentage,
                rewards.iter().map(|r| r[0]).sum::<f64>()
            );
        }
        if outcome.done {
            break;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let m = metrics::calculate(&config, &infos, &rewards);
    println!();
    println!(
        "episode over after {} steps: goal {:.1}% complete{}, team reward {:.1}",
        infos.len(),
        100.0 * m.goal_percentage,
        if env.goal_completed() {
            " (finished)"
        } else {
            ""
        },
        m.reward
    );
    for (p, pm) in m.player_metrics.iter().enumerate() {
        let t = &pm.totals;
        println!(
            "player {p}: {} places ({} correct), {} breaks ({} correct), {} no-ops ({} failed attempts), own reward {:.1}",
            t.num_actions[ActionType::PlaceBlock.id() as usize],
            t.num_correct_place_block,
            t.num_actions[ActionType::BreakBlock.id() as usize],
            t.num_correct_break_block,
            t.num_actions[ActionType::Noop.id() as usize],
            t.num_unintentional_noop,
            t.own_reward
        );
    }
    println!(
        "{:.0} steps/s including both agents ({:.1} ms for the episode)",
        infos.len() as f64 / elapsed,
        elapsed * 1e3
    );
    Ok(0)
}
