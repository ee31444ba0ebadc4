//! `mbag play`, `mbag record` and `mbag watch`: the daemon's three uses.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use malmo_bridge::agent::{ClientAddr, Timeouts};
use malmo_bridge::mod_patch::ModFlavour;
use tokio::sync::watch;

use crate::agents::defaults;
use crate::agents::spec::{AgentSpec, StandardAgents};
use crate::daemon::chat::ChatSettings;
use crate::daemon::episode::{
    EmulatedPerson, EpisodeHooks, EpisodeSettings, Minecraft, Mode, Seat, run_episode,
};
use crate::daemon::lockstep::LockstepSettings;
use crate::nn::{DeviceChoice, ServiceAgents, ServiceConfig};
use crate::recording::Fsync;
use crate::recording::reader::Recording;
use crate::recording::stats::EpisodeStats;
use crate::sim::config::Config;
use crate::sim::coords::WorldSize;
use crate::sim::presets::{BlockSupply, Game, Malmo, Player};

const AFTER_HELP: &str = "\
Minecraft:
  --client HOST:PORT names a running Minecraft client (the MBAG build of the Malmo
  mod, control port 10000 by default); repeat it for each player (and the
  spectator). Without --client, or with --emulated, the malmo-bridge emulator runs
  in this process and a scripted person (--emulated-human) plays the human seat, so
  everything works without Minecraft.

Recording:
  Every step is written to the recording as it completes (--out; format
  mbag-recording/1, see recordings/README.md), so a crash or Ctrl-C loses at most
  the step in flight. Check it with `mbag recording verify FILE`.

Examples:
  mbag play --emulated --max-steps 60
  mbag play --client 127.0.0.1:10000 --client 127.0.0.1:10001 \\
      --assistant 'az:../shared/models/az_test_assistant.json?sims=20'
  mbag record --session alone --client 127.0.0.1:10000
  mbag watch --human bc:models/human.json --assistant none --emulated";

/// What `play`, `record` and `watch` share.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct DaemonArgs {
    /// A Minecraft client's control address, HOST:PORT (repeat per player).
    #[arg(long = "client", value_name = "HOST:PORT", value_parser = parse_client)]
    pub clients: Vec<ClientAddr>,
    /// Play in the in-process Minecraft emulator (the default without --client).
    #[arg(long, conflicts_with = "clients")]
    pub emulated: bool,
    /// The emulator plays mbag's patched mod (exact block-change events).
    #[arg(long, requires = "emulated")]
    pub patched_mod: bool,
    /// Make the emulated Minecraft misbehave (repeatable), for example exit@2s
    /// or delay:observations=200ms@10: the syntax of `mbag malmo emulator
    /// --fault` (see `mbag malmo emulator --help`).
    #[arg(long, value_name = "SPEC", value_parser = super::malmo::parse_fault, conflicts_with = "clients")]
    pub fault: Vec<malmo_bridge::emulator::FaultSpec>,
    /// The address of this machine the Minecraft clients connect to; the
    /// daemon's listeners bind it alone and admit only the clients' addresses
    /// (loopback by default: give an address of this machine that remote
    /// clients can reach).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1", value_parser = parse_agent_address)]
    pub agent_address: IpAddr,
    /// Where goals come from [default: corpus_test, a building of the house
    /// corpus' test split; tutorial for the tutorial session]: corpus_test,
    /// corpus_train, paper (the study's CraftAssist houses), paper_train,
    /// held_out, a generator name (random, basic, tutorial, ...) or a .json
    /// goal config.
    #[arg(long, value_name = "GENERATOR")]
    pub goals: Option<String>,
    /// Folder of CraftAssist houses [default: ../shared/data/houses/craftassist].
    #[arg(long, value_name = "DIR")]
    pub houses: Option<PathBuf>,
    /// World size, WxHxD [default: 11x10x10; 6x6x6 for the tutorial].
    #[arg(long, value_name = "WxHxD", value_parser = super::evaluate::parse_world_size)]
    pub world_size: Option<WorldSize>,
    /// Steps after which the env ends the episode (the study used 10^9: it
    /// ends when the house is built).
    #[arg(long, value_name = "N", default_value_t = 1_000_000_000, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub horizon: u64,
    /// Stop (and finish the recording) after this many steps.
    #[arg(long, value_name = "N", value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub max_steps: Option<u64>,
    /// Seed of the goal, start and agents.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Longest a step waits for a human action, in seconds (the study's
    /// action_delay).
    #[arg(long, value_name = "SECONDS", default_value = "0.8", value_parser = crate::cli::numeric::seconds)]
    pub step_period: crate::cli::numeric::Seconds,
    /// Players have a palette of finite blocks instead of infinite blocks.
    #[arg(long)]
    pub finite_blocks: bool,
    /// Add a spectator camera circling the build (one more Minecraft client).
    #[arg(long)]
    pub spectator: bool,
    /// The recording file (.jsonl) [default: mbag-recordings/<mode>-<time>.jsonl].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Keep every Minecraft observation's JSON in the recording (large).
    #[arg(long)]
    pub keep_observations: bool,
    /// No chat: the AI seats' missions as the reference writes them (no chat
    /// observations), and nothing said is read, passed to the agents, sent or
    /// recorded. By default people's messages reach the agents and the
    /// agents' replies are said in Minecraft's chat.
    #[arg(long)]
    pub no_chat: bool,
    /// When the recording is flushed to disk.
    #[arg(long, value_enum, default_value = "header-and-footer")]
    pub fsync: FsyncArg,
    /// Where network agents run: cpu, cuda or auto.
    #[arg(long, value_name = "DEVICE", default_value = "auto")]
    pub device: DeviceChoice,
    /// libtorch's intra-op threads for network agents [default on the CPU: the
    /// cores]. Every network runs on one inference thread; the daemon's loop,
    /// agent and Minecraft threads mostly wait on sockets (their own work stays
    /// under 2 ms at p99 beside it, `mbag bench daemon`).
    #[arg(long, value_name = "N", value_parser = super::torch_threads::parse)]
    pub torch_threads: Option<usize>,
    /// How long to wait for Minecraft to start the mission, in seconds.
    #[arg(long, value_name = "SECONDS", default_value = "120.0", value_parser = crate::cli::numeric::seconds)]
    pub start_timeout: crate::cli::numeric::Seconds,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--fsync` values.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FsyncArg {
    /// After every step (safest; a few ms per step).
    EveryStep,
    /// After the header and the footer (steps reach the OS at once and survive a
    /// daemon crash, not a power cut).
    HeaderAndFooter,
    /// Never.
    Never,
}

/// `mbag play`.
#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The assistant (player 1).
    #[arg(
        long,
        value_name = "SPEC",
        default_value = defaults::ASSISTANT
    )]
    pub assistant: AgentSpec,
    /// How the emulator plays the person (emulated Minecraft only): the shipped
    /// human model, never idle longer than anyone in the study was.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = defaults::EMULATED_PERSON
    )]
    pub emulated_human: AgentSpec,
    /// After the episode, let the emulated person's model build the same house
    /// alone (in the simulator, from a fresh start, as many steps) and print
    /// what it built beside the team's figure.
    #[arg(long)]
    pub compare_alone: bool,
    #[command(flatten)]
    pub common: DaemonArgs,
}

/// The study's session kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SessionKind {
    /// The 6x6x6 tutorial house, alone, finite blocks.
    Tutorial,
    /// A house, alone.
    Alone,
    /// A house with the assistant (--assistant).
    WithAssistant,
}

/// `mbag record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Which kind of session.
    #[arg(long, value_enum, default_value = "alone")]
    pub session: SessionKind,
    /// The assistant for with-assistant sessions.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = defaults::ASSISTANT
    )]
    pub assistant: AgentSpec,
    /// How the emulator plays the person (emulated Minecraft only) [default: the
    /// BC human model for the session's world: the shared bc_human_tutorial for
    /// the tutorial, the shipped models/human.json (with max_idle=44) otherwise].
    #[arg(long, value_name = "SPEC")]
    pub emulated_human: Option<AgentSpec>,
    #[command(flatten)]
    pub common: DaemonArgs,
}

/// `mbag watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The agent in the human's seat (player 0), for example a BC human model.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = defaults::HUMAN
    )]
    pub human: AgentSpec,
    /// The assistant (player 1), or none.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = defaults::ASSISTANT
    )]
    pub assistant: AgentSpec,
    #[command(flatten)]
    pub common: DaemonArgs,
}

pub(crate) fn parse_client(text: &str) -> Result<ClientAddr, String> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?} is not HOST:PORT, e.g. 127.0.0.1:10000"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{port:?} in {text:?} is not a port number"))?;
    if host.is_empty() {
        return Err(format!("{text:?} has no host"));
    }
    Ok(ClientAddr::new(host, port))
}

/// Parses `--agent-address`: an IP address of this machine. The unspecified
/// address is refused: the clients are told this address, and "every
/// interface" is not one they can connect to.
pub(crate) fn parse_agent_address(text: &str) -> Result<IpAddr, String> {
    let ip: IpAddr = text.trim().parse().map_err(|_| {
        format!("{text:?} is not an IP address of this machine, e.g. 127.0.0.1 or 192.168.1.20")
    })?;
    if ip.is_unspecified() {
        return Err(format!(
            "{text} means every interface; give the one address the Minecraft clients reach this machine at"
        ));
    }
    Ok(ip)
}

/// One seat of the episode to build.
struct SeatPlan {
    name: &'static str,
    seat: Seat,
}

/// Runs `mbag play`.
pub fn play(args: PlayArgs) -> anyhow::Result<u8> {
    let alone = args.emulated_human.clone();
    let device = args.common.device;
    let compare = args.compare_alone;
    let person = person(&args.common, args.emulated_human);
    let seats = vec![
        SeatPlan {
            name: "human",
            seat: person,
        },
        SeatPlan {
            name: "assistant",
            seat: Seat::Agent(args.assistant),
        },
    ];
    let (code, recording) = run_with(Mode::Play, &args.common, seats, None)?;
    if compare {
        match recording {
            Some(path) if !alone.is_none() => compare_alone(&path, &alone, device)?,
            _ => eprintln!("--compare-alone: no recording or no person model to compare with"),
        }
    }
    Ok(code)
}

/// Plays the recorded episode's house from its start with `human` alone, as
/// many steps, and prints the house built % beside the team's.
fn compare_alone(
    path: &std::path::Path,
    human: &AgentSpec,
    device: DeviceChoice,
) -> anyhow::Result<()> {
    use crate::agents::spec::AgentFactory;
    use rand::SeedableRng;
    let rec = Recording::read(path)?;
    let config = crate::sim::config::Config::from_json(&rec.header.config)
        .map_err(|e| anyhow::anyhow!("{}: config: {e}", path.display()))?;
    let alone = crate::eval::run::episode_config(&config, &AgentSpec::None)?;
    let size = alone.world_size;
    let ids = rec.header.goal.blocks.0.clone();
    let states = rec.header.goal.block_states.0.clone();
    anyhow::ensure!(
        ids.len() == size.num_cells() && states.len() == ids.len(),
        "{}: the goal does not fill the {size} world",
        path.display()
    );
    let goal = crate::sim::block::Blocks::from_raw(size, ids, states);
    let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
        device,
        ServiceConfig::default(),
    )));
    let mut agent = factory.build(human, 0, &alone)?;
    let mut env = crate::sim::env::Env::new(alone);
    let seed = 0;
    env.reset_with_goal(goal, &mut rand::rngs::StdRng::seed_from_u64(seed));
    agent.reset(seed);
    let steps = rec.steps.len();
    crate::goal_model::rollouts::play_alone(&mut env, agent.as_mut(), steps, 0, &mut |_, _| {})?;
    let team = EpisodeStats::of(&rec)
        .goal_percentage
        .map_or("-".into(), |p| format!("{:.1}%", 100.0 * p));
    println!(
        "compared: {human} alone built {:.1}% of the same house in {steps} steps (in the simulator); with the assistant {team}",
        100.0 * env.goal_percentage(0)
    );
    Ok(())
}

/// Runs `mbag record`.
pub fn record(args: RecordArgs) -> anyhow::Result<u8> {
    let emulated_human = match args.emulated_human {
        Some(spec) => spec,
        None if args.session == SessionKind::Tutorial => defaults::TUTORIAL_HUMAN.parse()?,
        None => defaults::EMULATED_PERSON.parse()?,
    };
    let mut seats = vec![SeatPlan {
        name: "human",
        seat: person(&args.common, emulated_human),
    }];
    if args.session == SessionKind::WithAssistant {
        anyhow::ensure!(
            !args.assistant.is_none(),
            "--session with-assistant needs an --assistant"
        );
        seats.push(SeatPlan {
            name: "assistant",
            seat: Seat::Agent(args.assistant),
        });
    }
    run(Mode::Record, &args.common, seats, Some(args.session))
}

/// Runs `mbag watch`.
pub fn watch(args: WatchArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(
        !args.human.is_none(),
        "--human must be an agent: watch mode has no person"
    );
    let mut seats = vec![SeatPlan {
        name: "human",
        seat: Seat::Agent(args.human),
    }];
    if !args.assistant.is_none() {
        seats.push(SeatPlan {
            name: "assistant",
            seat: Seat::Agent(args.assistant),
        });
    }
    run(Mode::Watch, &args.common, seats, None)
}

/// The person's seat; in emulated Minecraft `none` leaves the person idle.
fn person(common: &DaemonArgs, emulated_human: AgentSpec) -> Seat {
    Seat::Person {
        emulated_by: (is_emulated(common) && !emulated_human.is_none())
            .then_some(EmulatedPerson::Agent(emulated_human)),
    }
}

fn is_emulated(common: &DaemonArgs) -> bool {
    common.emulated || common.clients.is_empty()
}

/// The study's environment for the seats (walking, flying, the given block
/// supply), as the reference's human-study configs set it.
fn env_config(
    common: &DaemonArgs,
    seats: &[SeatPlan],
    session: Option<SessionKind>,
) -> anyhow::Result<Config> {
    let tutorial = session == Some(SessionKind::Tutorial);
    let size = common.world_size.unwrap_or(if tutorial {
        WorldSize::new(6, 6, 6)
    } else {
        WorldSize::new(11, 10, 10)
    });
    let players = seats
        .iter()
        .enumerate()
        .map(|(p, s)| Player {
            name: Some(s.name.to_owned()),
            is_human: matches!(s.seat, Seat::Person { .. }),
            // The person sees the goal (the building book); an agent only when
            // its spec plans with it (the oracle).
            goal_visible: p == 0 || matches!(&s.seat, Seat::Agent(spec) if spec.sees_goal()),
        })
        .collect();
    let mut game = Game::live(players, size).with_horizon(common.horizon);
    game.randomize_first_episode_length = Some(false);
    game.place_wrong = Some(-1.0);
    if common.finite_blocks || tutorial {
        game.blocks = BlockSupply::Palette;
    }
    game.malmo = Some(Malmo {
        action_delay: Some(common.step_period.as_secs_f64()),
        restrict_players: true,
        use_spectator: common.spectator,
    });
    Ok(game.config()?)
}

fn run(
    mode: Mode,
    common: &DaemonArgs,
    seats: Vec<SeatPlan>,
    session: Option<SessionKind>,
) -> anyhow::Result<u8> {
    run_with(mode, common, seats, session).map(|(code, _)| code)
}

/// [`run`], also returning the recording's path.
fn run_with(
    mode: Mode,
    common: &DaemonArgs,
    seats: Vec<SeatPlan>,
    session: Option<SessionKind>,
) -> anyhow::Result<(u8, Option<PathBuf>)> {
    let config = env_config(common, &seats, session)?;
    let goals_name = common.goals.clone().unwrap_or_else(|| {
        if session == Some(SessionKind::Tutorial) {
            "tutorial".into()
        } else {
            // A real house no training saw (the corpus' test split).
            "corpus_test".into()
        }
    });
    let mut goals = super::evaluate::goal_config_named(&goals_name, common.houses.as_deref())?
        .build()
        .with_context(|| format!("building the {goals_name} goal generator"))?;
    let minecraft = if is_emulated(common) {
        Minecraft::Emulated {
            mod_flavour: if common.patched_mod {
                ModFlavour::Patched
            } else {
                ModFlavour::Stock
            },
            faults: common.fault.clone(),
        }
    } else {
        let needed = seats.len() + usize::from(config.malmo.use_spectator);
        anyhow::ensure!(
            common.clients.len() >= needed,
            "{needed} Minecraft clients are needed (one per player), {} given with --client",
            common.clients.len()
        );
        Minecraft::Clients(common.clients.clone())
    };
    let stamp = chrono_like_stamp();
    let mode_name = format!("{mode:?}").to_lowercase();
    let episode_id = format!("{mode_name}-{stamp}");
    let recording = match &common.out {
        Some(p) => p.clone(),
        None => PathBuf::from("mbag-recordings").join(format!("{episode_id}.jsonl")),
    };
    if let Some(dir) = recording.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let settings = EpisodeSettings {
        mode,
        config,
        seats: seats.into_iter().map(|s| s.seat).collect(),
        seed: common.seed,
        minecraft,
        recording: recording.clone(),
        fsync: match common.fsync {
            FsyncArg::EveryStep => Fsync::EveryLine,
            FsyncArg::HeaderAndFooter => Fsync::HeaderAndFooter,
            FsyncArg::Never => Fsync::Never,
        },
        lockstep: LockstepSettings {
            step_period: common.step_period.duration(),
            max_steps: common.max_steps,
            keep_observations: common.keep_observations,
            chat: ChatSettings {
                enabled: !common.no_chat,
                ..ChatSettings::default()
            },
            ..LockstepSettings::default()
        },
        agent_address: common.agent_address,
        // Starting covers both waits: role 0's server appearing, and every
        // role's echo once the MissionInit is accepted.
        timeouts: Timeouts {
            find_server: common.start_timeout.duration(),
            begin: common.start_timeout.duration(),
            ..Timeouts::default()
        },
        episode_id,
        start_from: None,
        origin: serde_json::Map::new(),
    };
    super::torch_threads::apply(common.torch_threads, common.device);
    execute_with(settings, Some(goals.as_mut()), common.device, common.quiet)
}

/// Runs an episode on a fresh runtime with Ctrl-C handling and a progress bar,
/// and prints where its recording went. Exit status 1 if it stopped early.
pub(crate) fn execute(
    settings: EpisodeSettings,
    goals: Option<&mut dyn crate::sim::goal::GoalGenerator>,
    device: DeviceChoice,
    quiet: bool,
) -> anyhow::Result<u8> {
    execute_with(settings, goals, device, quiet).map(|(code, _)| code)
}

/// [`execute`], also returning the recording's path.
fn execute_with(
    settings: EpisodeSettings,
    goals: Option<&mut dyn crate::sim::goal::GoalGenerator>,
    device: DeviceChoice,
    quiet: bool,
) -> anyhow::Result<(u8, Option<PathBuf>)> {
    let recording = settings.recording.clone();
    let max_steps = settings.lockstep.max_steps;
    let factory = Arc::new(StandardAgents::with_network(Arc::new(ServiceAgents::new(
        device,
        ServiceConfig::default(),
    ))));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let report = runtime.block_on(async move {
        let (stop_tx, stop) = watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("stopping: finishing the recording (Ctrl-C again to abort)");
                let _ = stop_tx.send(true);
                let _ = tokio::signal::ctrl_c().await;
                std::process::exit(130);
            }
        });
        let hooks = EpisodeHooks {
            on_start: (!quiet).then(|| {
                Box::new(move |view| show_progress(view, max_steps))
                    as Box<dyn FnOnce(watch::Receiver<_>) + Send>
            }),
            on_emulator: None,
        };
        run_episode(settings, goals, factory, stop, hooks).await
    })?;
    runtime.shutdown_timeout(Duration::from_secs(2));

    let path = report.recording.as_ref().map_or_else(
        || recording.display().to_string(),
        |p| p.display().to_string(),
    );
    // The figures come from the recording itself, so that they are the ones
    // `mbag recording stats` reports for it.
    let recorded = report
        .recording
        .as_deref()
        .map(|p| Recording::read(p).map(|r| EpisodeStats::of(&r)));
    match recorded {
        Some(Ok(stats)) => {
            println!("{}", stats.summary());
            let names: Vec<&str> = (0..stats.players)
                .map(|p| {
                    if p == stats.human {
                        "the person"
                    } else {
                        "the assistant"
                    }
                })
                .collect();
            println!("{}", stats.team_summary(&names));
        }
        Some(Err(e)) => eprintln!("warning: cannot summarise the recording: {e}"),
        None => println!(
            "{} steps, goal {:.1}% built (not recorded)",
            report.steps,
            report.env.goal_percentage(0) * 100.0
        ),
    }
    println!(
        "{} human actions detected, {} divergences repaired, {} expected AI effects not seen, \
         {} syncs scoped around AI actions in flight",
        report.stats.human_actions,
        report.stats.divergences,
        report.stats.unseen_expected,
        report.stats.syncs_scoped
    );
    for d in &report.drivers {
        // What the emulated person chose against what Minecraft saw: acting
        // takes a person's aim and dig, so steps pass while it carries out.
        println!(
            "the emulated person decided {} times ({} NOOPs) and carried out {} actions \
             ({} places, {} breaks), {} refused by Minecraft",
            d.decided, d.idle, d.acted, d.placed, d.broke, d.refused
        );
    }
    println!("recording: {path}  (check it with: mbag recording verify {path})");
    let recorded = report.recording.clone();
    match report.end.error {
        None => Ok((0, recorded)),
        Some(e) => {
            eprintln!("error: the episode stopped early: {e}");
            Ok((1, recorded))
        }
    }
}

/// Shows the episode's progress until the loop ends.
fn show_progress(mut view: watch::Receiver<crate::daemon::lockstep::StepView>, max: Option<u64>) {
    let bar = match max {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} step {pos}{msg} [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    tokio::spawn(async move {
        while view.changed().await.is_ok() {
            let v = view.borrow_and_update().clone();
            bar.set_position(v.steps);
            bar.set_message(format!(", goal {:.1}%", v.env.goal_percentage(0) * 100.0));
        }
        bar.finish_and_clear();
    });
}

/// A file-name-safe UTC time stamp, `YYYYMMDD-HHMMSS`.
fn chrono_like_stamp() -> String {
    let rfc = crate::recording::codec::rfc3339_utc(crate::recording::codec::now_unix_s());
    // 2026-11-23T19:16:58Z -> 20261123-191658
    let digits: String = rfc.chars().filter(char::is_ascii_digit).take(14).collect();
    format!(
        "{}-{}",
        &digits[..8.min(digits.len())],
        &digits[8.min(digits.len())..]
    )
}
