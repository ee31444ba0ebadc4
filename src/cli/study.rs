//! `mbag study init|next|survey|report`: a human study of assistants.

use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use malmo_bridge::agent::ClientAddr;
use malmo_bridge::mod_patch::ModFlavour;

use super::daemon::FsyncArg;
use super::numeric::{Seconds, count, seconds};
use crate::agents::defaults;
use crate::agents::spec::AgentSpec;
use crate::daemon::episode::Minecraft;
use crate::nn::DeviceChoice;
use crate::recording::Fsync;
use crate::sim::coords::WorldSize;
use crate::study::design::{Practice, SessionSettings, Study, StudyPlan, Survey};
use crate::study::report::report;
use crate::study::server::{self, SurveySite};
use crate::study::session::{self, RunOptions};

/// Participants of one study.
const PARTICIPANTS: RangeInclusive<u64> = 1..=10_000;

/// `mbag study` subcommands.
#[derive(Debug, Subcommand)]
pub enum StudyCommand {
    /// Set up a study in a folder: conditions under blinded names, each
    /// participant's goal and Latin-square order, the practice round, the
    /// session settings and the survey (DIR/study.json).
    Init(InitArgs),
    /// Run a participant's next session (the practice, then their conditions
    /// in order) as a daemon play episode; filed under DIR/participants/P/.
    Next(NextArgs),
    /// Serve the survey page for a participant: Likert questions and a
    /// comment per completed session, by blinded name.
    Survey(SurveyArgs),
    /// The study's results: per-condition means with SE and 90% intervals,
    /// paired one-sided t-tests, repeated-measures ANOVA with Tukey's HSD,
    /// and plots.
    Report(ReportArgs),
}

/// `mbag study init`.
#[derive(Debug, Args)]
#[command(after_help = "\
Each participant builds one house (a goal from --goals, dealt in turn, with a seed of
their own) once per condition, after a practice round alone on the tutorial house.
Orders are rows of a balanced Latin square (Williams' design: each condition equally
often in each position and after each other one; a multiple of the number of
conditions, or twice it for an odd number, balances exactly). Participants only see
\"Assistant A\", \"Assistant B\", ...; which assistant each is stays in study.json.

Examples:
  mbag study init studies/pilot --participants 16 --goals paper \\
      --conditions none 'az:../shared/models/az_test_assistant.json?sims=20' oracle heuristic:lowest_block
  mbag study init /tmp/s --participants 4 --goals random --conditions none oracle \\
      --max-steps 30 --step-period 0.1")]
pub struct InitArgs {
    /// The study folder (created; refused if it already holds a study).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The assistants compared, as agent specs (none, oracle, heuristic:NAME,
    /// az:PATH?sims=N, bc:PATH).
    #[arg(long, value_name = "SPEC", num_args = 1.., required = true)]
    pub conditions: Vec<AgentSpec>,
    /// Goal generators, dealt to participants in turn: paper (the study's
    /// CraftAssist test houses), random, tutorial, a .json goal config, ...
    #[arg(long, value_name = "GENERATOR", num_args = 1.., default_value = "paper")]
    pub goals: Vec<String>,
    /// How many participants.
    #[arg(long, value_name = "N", value_parser = count::<usize>(PARTICIPANTS))]
    pub participants: usize,
    /// Seed of the blinding, the orders and the goals.
    #[arg(long, value_name = "S", default_value_t = 0, value_parser = count::<u64>(0..=u64::MAX))]
    pub seed: u64,
    /// No practice round.
    #[arg(long)]
    pub no_practice: bool,
    /// The practice round's goal generator.
    #[arg(long, value_name = "GENERATOR", default_value = "tutorial")]
    pub practice_goals: String,
    /// World size, WxHxD [default: 11x10x10].
    #[arg(long, value_name = "WxHxD", value_parser = super::numeric::world_size)]
    pub world_size: Option<WorldSize>,
    /// Steps after which the env ends an episode.
    #[arg(long, value_name = "N", default_value_t = 1_000_000_000, value_parser = count::<u64>(super::numeric::STEPS))]
    pub horizon: u64,
    /// Stop each session after this many steps [default: when the house is built].
    #[arg(long, value_name = "N", value_parser = count::<u64>(super::numeric::STEPS))]
    pub max_steps: Option<u64>,
    /// Longest a step waits for the person, in seconds (the study's action_delay).
    #[arg(long, value_name = "SECONDS", default_value = "0.8", value_parser = seconds)]
    pub step_period: Seconds,
    /// Players have a palette of finite blocks instead of infinite blocks.
    #[arg(long)]
    pub finite_blocks: bool,
    /// Folder of CraftAssist houses for --goals paper [default: ../shared/data/houses/craftassist].
    #[arg(long, value_name = "DIR")]
    pub houses: Option<PathBuf>,
}

/// `mbag study next`.
#[derive(Debug, Args)]
#[command(after_help = "\
The session is the participant's first one not complete: the practice, then their
conditions in their order. Its recording goes to DIR/participants/P/session-NN-LABEL.jsonl
with a sidecar session-NN.json (index, blinded name, condition, status). A session whose
run died (no footer) or stopped early is run again from its start; the unfinished
recording is kept as session-NN-LABEL.attemptK.jsonl and listed in the sidecar. After
the last session the command refuses to run.

Examples:
  mbag study next studies/pilot --participant p01 --client 127.0.0.1:10000 --client 127.0.0.1:10001
  mbag study next /tmp/s --participant p01 --emulated      (the shipped human model plays)")]
pub struct NextArgs {
    /// The study folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The participant's id (p01, ...).
    #[arg(long, value_name = "ID")]
    pub participant: String,
    /// A Minecraft client's control address, HOST:PORT (one per player: the
    /// person's, then the assistant's).
    #[arg(long = "client", value_name = "HOST:PORT", value_parser = super::daemon::parse_client)]
    pub clients: Vec<ClientAddr>,
    /// Play in the in-process emulator, a human model as the person (the
    /// default without --client).
    #[arg(long, conflicts_with = "clients")]
    pub emulated: bool,
    /// The emulated person in the study's houses.
    #[arg(long, value_name = "SPEC", default_value = defaults::HUMAN)]
    pub emulated_human: AgentSpec,
    /// The emulated person in the practice round.
    #[arg(long, value_name = "SPEC", default_value = defaults::TUTORIAL_HUMAN)]
    pub practice_human: AgentSpec,
    /// The address of this machine the Minecraft clients connect to.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1", value_parser = super::daemon::parse_agent_address)]
    pub agent_address: IpAddr,
    /// Where network agents run: cpu, cuda or auto.
    #[arg(long, value_name = "DEVICE", default_value = "auto")]
    pub device: DeviceChoice,
    /// libtorch's intra-op threads for network agents [default on the CPU: the
    /// cores].
    #[arg(long, value_name = "N", value_parser = super::torch_threads::parse)]
    pub torch_threads: Option<usize>,
    /// How long to wait for Minecraft to start the mission, in seconds.
    #[arg(long, value_name = "SECONDS", default_value = "120.0", value_parser = seconds)]
    pub start_timeout: Seconds,
    /// When the recording is flushed to disk.
    #[arg(long, value_enum, default_value = "header-and-footer")]
    pub fsync: FsyncArg,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `mbag study survey`.
#[derive(Debug, Args)]
#[command(after_help = "\
The page lists the participant's completed sessions by blinded name, each with the
study's statements on a Likert scale and a comment box. Answers are saved to
DIR/participants/P/survey.jsonl (the whole file rewritten atomically; the last answer
of a session counts). Programs may POST /answer with JSON {session, scores, comment}.

Examples:
  mbag study survey studies/pilot --participant p01        (then open http://127.0.0.1:8766/)
  mbag study survey /tmp/s --participant p02 --listen 127.0.0.1:0")]
pub struct SurveyArgs {
    /// The study folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The participant's id.
    #[arg(long, value_name = "ID")]
    pub participant: String,
    /// Where to listen; loopback unless you name another interface.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8766")]
    pub listen: SocketAddr,
}

/// `mbag study report`.
#[derive(Debug, Args)]
#[command(after_help = "\
Measures per completed session (practice left out): goal % built, the person's place
and break actions, the assistant's share of the goal (%), and each survey statement.
Per condition: n, mean, standard error and 90% t interval; per pair of conditions a
paired t-test over the participants with both, one-sided each way; with three or
more conditions a repeated-measures ANOVA over the participants with all and Tukey's
HSD on its error term.

Examples:
  mbag study report studies/pilot
  mbag study report /tmp/s --json /tmp/s/report.json --plots /tmp/s/plots")]
pub struct ReportArgs {
    /// The study folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Also write the whole report as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw a PNG per measure into this folder.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
}

/// Runs a `mbag study` subcommand.
pub fn run(command: StudyCommand) -> anyhow::Result<u8> {
    match command {
        StudyCommand::Init(args) => init(args),
        StudyCommand::Next(args) => next(args),
        StudyCommand::Survey(args) => survey(args),
        StudyCommand::Report(args) => report_cmd(args),
    }
}

fn init(args: InitArgs) -> anyhow::Result<u8> {
    let plan = StudyPlan {
        conditions: args.conditions,
        goals: args.goals,
        participants: args.participants,
        seed: args.seed,
        practice: (!args.no_practice).then_some(Practice {
            goals: args.practice_goals,
            world_size: None,
        }),
        session: SessionSettings {
            world_size: args.world_size,
            horizon: args.horizon,
            max_steps: args.max_steps,
            step_period_s: args.step_period.as_secs_f64(),
            finite_blocks: args.finite_blocks,
            houses: args.houses,
        },
        survey: Survey::default(),
    };
    let created = crate::recording::codec::rfc3339_utc(crate::recording::codec::now_unix_s());
    let study = Study::design(plan, created)?;
    let path = study.create(&args.dir)?;
    println!("study written to {}", path.display());
    println!("conditions (participants see only the names):");
    for c in &study.conditions {
        println!("  {:<14} {}", c.label, c.assistant);
    }
    println!("orders:");
    for p in &study.participants {
        let order: Vec<&str> = p
            .order
            .iter()
            .map(|&c| study.conditions[c].label.trim_start_matches("Assistant "))
            .collect();
        println!(
            "  {}  {}{}  (goal {} #{})",
            p.id,
            if study.practice.is_some() {
                "practice, "
            } else {
                ""
            },
            order.join(", "),
            p.goal.generator,
            p.goal.seed
        );
    }
    Ok(0)
}

fn next(args: NextArgs) -> anyhow::Result<u8> {
    let study = Study::load(&args.dir)?;
    let next = session::next(&args.dir, &study, &args.participant)?;
    let spec = next.spec.clone();
    println!(
        "participant {}: session {} of {} ({}){}",
        args.participant,
        spec.index + 1,
        next.of,
        spec.label,
        next.rerun
            .as_ref()
            .map(|a| format!(", run again: {}", a.reason))
            .unwrap_or_default()
    );
    let emulated = args.emulated || args.clients.is_empty();
    let minecraft = if emulated {
        Minecraft::Emulated {
            mod_flavour: ModFlavour::Stock,
            faults: Vec::new(),
        }
    } else {
        let needed = if spec.assistant == "none" { 1 } else { 2 };
        anyhow::ensure!(
            args.clients.len() >= needed,
            "{needed} Minecraft clients are needed for this session (one per player), {} given with --client",
            args.clients.len()
        );
        Minecraft::Clients(args.clients.clone())
    };
    let options = RunOptions {
        minecraft,
        emulated_human: args.emulated_human,
        practice_human: args.practice_human,
        agent_address: args.agent_address,
        start_timeout: args.start_timeout.duration(),
        fsync: match args.fsync {
            FsyncArg::EveryStep => Fsync::EveryLine,
            FsyncArg::HeaderAndFooter => Fsync::HeaderAndFooter,
            FsyncArg::Never => Fsync::Never,
        },
    };
    let settings = session::episode_settings(&study, &next, &options)?;
    let mut goals =
        super::evaluate::goal_config_named(&spec.goals, study.session.houses.as_deref())?
            .build()
            .with_context(|| format!("building the {} goal generator", spec.goals))?;
    let next_of = next.of;
    next.begin()?;
    super::torch_threads::apply(args.torch_threads, args.device);
    let status = super::daemon::execute(settings, Some(goals.as_mut()), args.device, args.quiet);
    // The sidecar is judged from the recording whatever happened, so that an
    // error leaves it failed rather than running.
    let record = next.finish()?;
    let status = status?;
    match record.status {
        session::SessionStatus::Complete => {
            println!(
                "session {} of {} ({}) complete; the survey: mbag study survey {} --participant {}",
                record.index + 1,
                next_of,
                record.label,
                args.dir.display(),
                args.participant
            );
            Ok(status)
        }
        _ => {
            eprintln!(
                "session {} of {} ({}) did not complete ({}); `mbag study next` runs it again",
                record.index + 1,
                next_of,
                record.label,
                record.message.as_deref().unwrap_or("stopped")
            );
            Ok(1)
        }
    }
}

fn survey(args: SurveyArgs) -> anyhow::Result<u8> {
    let study = Study::load(&args.dir)?;
    let site = SurveySite::new(args.dir.clone(), study, &args.participant)?;
    let participant = args.participant.clone();
    super::local_server::serve_until_ctrl_c(
        args.listen,
        "other machines can reach this survey",
        server::bind(args.listen),
        move |addr| format!("survey for {participant} at http://{addr}/  (Ctrl-C to stop)"),
        move |listener, stop| server::serve(listener, site, stop),
    )
}

fn report_cmd(args: ReportArgs) -> anyhow::Result<u8> {
    let study = Study::load(&args.dir)?;
    let report = report(&args.dir, &study)?;
    print!("{}", report.tables());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("\nreport written to {}", path.display());
    }
    if let Some(dir) = &args.plots {
        let written = crate::study::plot::plot_report(&report, dir)?;
        println!("{} plots in {}", written.len(), dir.display());
    }
    Ok(0)
}
