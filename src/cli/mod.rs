//! The `mbag` command line. The only place (with `main.rs`) that uses `anyhow`.

mod bench;
mod chat;
mod daemon;
mod dataset;
mod demo;
mod evaluate;
mod goal_model;
mod goals;
mod local_server;
mod malmo;
mod nn;
pub mod numeric;
mod plot;
mod probe;
mod rate;
mod recording;
mod robustness;
mod runner_args;
mod study;
mod torch_threads;
mod train;
mod train_assistant;
mod verify;
mod view;
mod watch_help;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// mbag: the Minecraft Building Assistance Game, fast and exact.
///
/// mbag simulates MBAG (the game of the AssistanceZero paper) at parity with the
/// reference Python environment. Start with `mbag demo` to watch a simulated episode,
/// or `mbag verify-golden ../shared/reference/golden/episodes` to check parity.
#[derive(Debug, Parser)]
#[command(name = "mbag", version, propagate_version = true)]
pub struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace). RUST_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay the reference's golden episodes and report the first mismatch of each.
    ///
    /// Every recorded reward, info, state, observation, action mask and viewpoint
    /// search is compared. Prints one line per failing episode and a last line
    /// `N passed, M failed`; the exit status is 1 if any failed.
    ///
    /// Example: mbag verify-golden ../shared/reference/golden/episodes
    VerifyGolden(verify::VerifyArgs),
    /// A person builds in Minecraft with the assistant: the simulator runs in
    /// lockstep with the game and every step is recorded (the default job of
    /// `scripts/run`, in the emulator).
    ///
    /// Example: mbag play --emulated --max-steps 60
    Play(daemon::PlayArgs),
    /// Record human demonstrations in Minecraft: tutorial, alone or with the
    /// assistant, as in the paper's study.
    ///
    /// Example: mbag record --session alone --client 127.0.0.1:10000
    Record(daemon::RecordArgs),
    /// Watch trained policies play every seat in Minecraft.
    ///
    /// Example: mbag watch --human bc:../shared/models/az_test_human.json --emulated
    Watch(daemon::WatchArgs),
    /// Simulate one episode of the paper's setting with heuristic players.
    ///
    /// Example: mbag demo --second noop --seed 3
    Demo(demo::DemoArgs),
    /// Evaluate a human (model) with an assistant over many simulated episodes:
    /// goal %, human actions and the assistant's share of the goal, with 95%
    /// confidence intervals (the paper's Tables 1 and 3).
    ///
    /// Example: mbag evaluate --human heuristic:lowest_block --assistant none --episodes 20
    Evaluate(evaluate::EvaluateArgs),
    /// Goal generators: statistics of their goals side by side (block shares, fill
    /// ratio, height profile), and goals drawn as text.
    ///
    /// Examples: mbag goals stats --goals procedural_house --goals held_out --count 200; mbag goals show --goals procedural_house --count 2
    #[command(subcommand)]
    Goals(goals::GoalsCommand),
    /// The assistant's goal predictor: learn it from the house corpus' training
    /// split, score it on houses it never saw (precision where it is sure,
    /// calibration, baselines).
    ///
    /// Examples: mbag goal-model learn --out /tmp/goal.json.gz; mbag goal-model score --model models/assistant_goal.json.gz --houses ../shared/data/house_corpus/test
    #[command(subcommand)]
    GoalModel(goal_model::GoalModelCommand),
    /// Measure speed against the reference's figures, printing ratios.
    ///
    /// Example: mbag bench env --reps 3
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Project Malmo tools: the documents the reference sends to Minecraft, and
    /// checks of running Minecraft clients.
    ///
    /// Examples: mbag malmo mission-xml --spectator --role 2; mbag malmo probe --clients 2
    #[command(subcommand)]
    Malmo(malmo::MalmoCommand),
    /// The reference networks in tch: golden parity checks and model summaries.
    ///
    /// Examples: mbag nn verify-golden; mbag nn info ../shared/models/paper_assistant_full.json
    #[command(subcommand)]
    Nn(nn::NnCommand),
    /// Episode recordings (`recordings/README.md`): verify them by replay, replay
    /// them, summarise them, convert the shared human data into them.
    ///
    /// Examples: mbag recording verify recordings/samples; mbag recording convert --out /tmp/human; mbag recording stats /tmp/human
    #[command(subcommand)]
    Recording(recording::RecordingCommand),
    /// A folder of recordings as a dataset: its manifest, its checks
    /// (replay, duplicates, orphans, split episodes), a statistics table per
    /// condition or goal, and a datasheet.
    ///
    /// Examples: mbag dataset index /tmp/human; mbag dataset validate /tmp/human; mbag dataset stats /tmp/human; mbag dataset datasheet /tmp/human
    #[command(subcommand)]
    Dataset(dataset::DatasetCommand),
    /// Train networks: behaviour cloning on recordings (`mbag train bc`) and
    /// AssistanceZero assistants by self-play with MCTS against a human model
    /// (`mbag train assistant`). Each run writes a metrics log, resumable
    /// checkpoints and the final model.
    ///
    /// Examples: mbag train bc --data recordings/human --config configs/train/bc_small.json --out runs/bc; mbag train assistant --human heuristic:lowest_block --config configs/train/assistant_small.json --out runs/az
    #[command(subcommand)]
    Train(train::TrainCommand),
    /// Draw a training run's metrics log (metrics.jsonl) as learning curves in a
    /// PNG: one panel per metric family (loss, ce, accuracy, goal %, ...), train
    /// and validation lines together.
    ///
    /// Example: mbag plot runs/bc/metrics.jsonl --out runs/bc/curves.png
    Plot(plot::PlotArgs),
    /// Robustness unit tests of assistants (tests/robustness/): hand-built
    /// situations in three categories (state, agent, agent with memory), each
    /// with a scripted partner and a pass predicate, run beside the `oracle`
    /// and `noop` references.
    ///
    /// Example: mbag robustness run --assistant oracle --rollouts 20 --json r.json
    #[command(subcommand)]
    Robustness(robustness::RobustnessCommand),
    /// Watch-then-help: the assistant watches a demonstration of a goal, then
    /// helps a human model build it from another start; success, speedup,
    /// reward, conflicts and goal-inference precision/recall beside the
    /// alone, random, oracle and random-goal baselines.
    ///
    /// Example: mbag watch-help --assistant oracle --demos /tmp/human --episodes 8
    WatchHelp(watch_help::WatchHelpArgs),
    /// Chat with the assistant: the intent-flag parser and its accuracy on
    /// labelled messages.
    ///
    /// Example: mbag chat eval --messages tests/chat/messages.jsonl
    #[command(subcommand)]
    Chat(chat::ChatCommand),
    /// An episode in the browser: a local web page drawing the world in 3-D
    /// with a timeline, the goal overlay, players and chat, from a recording
    /// or following a running play/record/watch.
    ///
    /// Example: mbag view recordings/samples/simulated_lowest_block_pair_seed3.jsonl
    View(view::ViewArgs),
    /// Human studies of assistants (the paper's Appendix C): a Latin-square
    /// design with blinded assistants, each participant's sessions run
    /// through the daemon, a survey page after each, and the report (means
    /// with 90% intervals, paired t-tests, ANOVA with Tukey's HSD, plots).
    ///
    /// Examples: mbag study init /tmp/s --participants 4 --goals random --conditions none oracle; mbag study next /tmp/s --participant p01 --emulated; mbag study survey /tmp/s --participant p01; mbag study report /tmp/s --plots /tmp/s/plots
    #[command(subcommand)]
    Study(study::StudyCommand),
    /// Pairwise human rating of episodes (as BEDD rated BASALT agents): pick
    /// same-goal pairs of different agents, rate them on a local page, and
    /// rank the agents (humans included) with TrueSkill.
    ///
    /// Examples: mbag rate pairs --recordings /tmp/human --db ratings.sqlite; mbag rate serve --db ratings.sqlite --recordings /tmp/human; mbag rate leaderboard --db ratings.sqlite
    #[command(subcommand)]
    Rate(rate::RateCommand),
}

impl Cli {
    /// Runs the parsed command; returns the process exit code.
    pub fn run(self) -> anyhow::Result<u8> {
        init_logging(self.verbose);
        match self.command {
            Command::VerifyGolden(args) => verify::run(args),
            Command::Demo(args) => demo::run(args),
            Command::Play(args) => daemon::play(args),
            Command::Record(args) => daemon::record(args),
            Command::Watch(args) => daemon::watch(args),
            Command::Evaluate(args) => evaluate::run(args),
            Command::Goals(command) => goals::run(command),
            Command::GoalModel(command) => goal_model::run(command),
            Command::Bench(command) => bench::run(command),
            Command::Malmo(command) => malmo::run(command),
            Command::Nn(command) => nn::run(command),
            Command::Recording(command) => recording::run(command),
            Command::Dataset(command) => dataset::run(command),
            Command::Train(command) => train::run(command),
            Command::Robustness(command) => robustness::run(command),
            Command::WatchHelp(args) => watch_help::run(args),
            Command::Chat(command) => chat::run(command),
            Command::View(args) => view::run(args),
            Command::Study(command) => study::run(command),
            Command::Rate(command) => rate::run(command),
            Command::Plot(args) => plot::run(args),
        }
    }
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp_millis()
        .init();
}

/// The shared reference data: `$MBAG_SHARED` if set, else `../shared` if it exists
/// (run from the project root), else `shared` beside the checkout the running
/// binary sits in (`<checkout>/target/<profile>/mbag`), else `../shared`.
///
/// Never the folder the binary was built in: a binary carried to another
/// machine (the GPU check) would look for a path that exists only here.
pub fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MBAG_SHARED") {
        return PathBuf::from(dir);
    }
    let relative = PathBuf::from("../shared");
    if relative.is_dir() {
        return relative;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .filter(|dir| dir.join("Cargo.toml").is_file())
                .map(|checkout| checkout.join("../shared"))
                .find(|shared| shared.is_dir())
        })
        .unwrap_or(relative)
}
