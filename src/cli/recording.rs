//! `mbag recording verify|replay|stats|convert|simulate`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::agents::spec::AgentSpec;
use crate::recording::convert::{convert_human_episode, human_episode_files};
use crate::recording::reader::collect_files;
use crate::recording::simulate::record_simulated;
use crate::recording::stats::{ACTION_NAMES, DatasetStats, EpisodeStats};
use crate::recording::verify::verify_into;
use crate::recording::{Recording, SnapshotMode, VerifyReport, verify};
use crate::sim::goal::GoalConfig;
use crate::sim::presets::Game;

/// The recording subcommands.
#[derive(Debug, Subcommand)]
pub enum RecordingCommand {
    /// Check recordings by replaying them through the simulator.
    ///
    /// Every recorded effective action, reward, info and state is compared. Prints one line per file (`ok` or the mismatches, with line numbers) and a
    /// last line `N passed, M failed`; exit status 1 if anything mismatched or a
    /// file could not be read. A file cut mid-line (a crash) is reported as
    /// truncated and its complete steps are still checked.
    ///
    /// Examples:
    ///   mbag recording verify recordings/samples
    ///   mbag recording verify /tmp/human/*.jsonl
    #[command(verbatim_doc_comment)]
    Verify(VerifyArgs),
    /// Replay one recording: in the simulator (the default), printing a progress
    /// line every N steps and the final state; or in Minecraft (--emulated, or
    /// --client HOST:PORT per player), where every player's recorded actions are
    /// carried out as commands, as agents' are in `mbag watch`, with a new
    /// recording of the replay.
    ///
    /// Examples:
    ///   mbag recording replay recordings/samples/tutorial_p01_2023-07-18_15-41-19.jsonl.gz --every 50
    ///   mbag recording replay recordings/samples/simulated_lowest_block_pair_seed3.jsonl --emulated
    #[command(verbatim_doc_comment)]
    Replay(ReplayArgs),
    /// Summarise recordings: episodes, steps, actions, goal %, durations.
    ///
    /// Per episode: steps, actions per type per player, the human's final goal %,
    /// wall-clock duration; then totals over all of them.
    ///
    /// Examples:
    ///   mbag recording stats recordings/samples
    ///   mbag recording stats /tmp/human --json > human_stats.json
    #[command(verbatim_doc_comment)]
    Stats(StatsArgs),
    /// Convert the shared human data (`mbag-human-episode/1`) into recordings,
    /// then verify each one.
    ///
    /// The result is one dataset with new recordings: `mbag recording stats OUT`
    /// summarises both.
    ///
    /// Example: mbag recording convert --out /tmp/human
    Convert(ConvertArgs),
    /// Record a simulated episode of heuristic agents (player 0 the human) through
    /// the same writer the daemon uses.
    ///
    /// Example: mbag recording simulate --out /tmp/sim.jsonl --agents heuristic:lowest_block,heuristic:noop --steps 100
    Simulate(SimulateArgs),
}

/// Arguments of `mbag recording verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Recording files (`.jsonl`, `.jsonl.gz`) or folders holding them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// Arguments of `mbag recording replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording.
    pub path: PathBuf,
    /// Print a progress line every this many steps (0: only the end).
    #[arg(long, default_value_t = 100, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::EVERY))]
    pub every: u64,
    /// Replay in the in-process Minecraft emulator.
    #[arg(long, conflicts_with = "clients")]
    pub emulated: bool,
    /// Replay in running Minecraft: a client's control address per player.
    #[arg(long = "client", value_name = "HOST:PORT", value_parser = super::daemon::parse_client)]
    pub clients: Vec<malmo_bridge::agent::ClientAddr>,
    /// In Minecraft: seconds per step.
    #[arg(long, value_name = "SECONDS", default_value = "0.8", value_parser = crate::cli::numeric::seconds)]
    pub step_period: crate::cli::numeric::Seconds,
    /// In Minecraft: replay at most this many steps.
    #[arg(long, value_name = "N", value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub max_steps: Option<u64>,
    /// In Minecraft: where the replay's own recording goes [default:
    /// mbag-recordings/replay-<episode>.jsonl].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// In Minecraft: the address of this machine the clients connect to; the
    /// daemon listens on it alone (loopback by default: give an address of
    /// this machine that remote clients can reach).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1", value_parser = super::daemon::parse_agent_address)]
    pub agent_address: std::net::IpAddr,
}

/// Arguments of `mbag recording stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Recording files or folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print JSON (per episode and totals) instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mbag recording convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The human data folder [default: ../shared/data/human].
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Where to write the recordings (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Write `.jsonl.gz` (archived) instead of `.jsonl`.
    #[arg(long)]
    pub gzip: bool,
}

/// Arguments of `mbag recording simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The file to write (`.jsonl`).
    #[arg(long)]
    pub out: PathBuf,
    /// Comma-separated agent specs, one per player (heuristics only for now).
    #[arg(long, default_value = "heuristic:lowest_block,heuristic:lowest_block")]
    pub agents: String,
    /// Episode seed (goal, start positions, agents).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most steps to record.
    #[arg(long, default_value_t = 200, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub steps: u64,
    /// Also write a SHA-256 of the state on every step.
    #[arg(long)]
    pub hash: bool,
}

/// Runs a recording subcommand; returns the exit code.
pub fn run(command: RecordingCommand) -> anyhow::Result<u8> {
    match command {
        RecordingCommand::Verify(args) => run_verify(args),
        RecordingCommand::Replay(args) => run_replay(args),
        RecordingCommand::Stats(args) => run_stats(args),
        RecordingCommand::Convert(args) => run_convert(args),
        RecordingCommand::Simulate(args) => run_simulate(args),
    }
}

fn bar(len: usize, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    ProgressBar::new(len as u64).with_style(
        ProgressStyle::with_template(&format!("[{{bar:30}}] {{pos}}/{{len}} {what}, {{elapsed}}"))
            .expect("a valid template"),
    )
}

/// Prints one report's line(s); returns whether it passed.
fn print_report(r: &VerifyReport) -> bool {
    let mut notes = Vec::new();
    if let Some(tail) = &r.tail {
        notes.push(format!(
            "truncated at line {} ({} bytes of a partial line: {})",
            tail.line, tail.bytes, tail.reason
        ));
    } else if !r.finished {
        notes.push("no footer (the writer did not finish)".into());
    }
    if r.chat_messages > 0 {
        notes.push(format!("{} chat messages", r.chat_messages));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("; {}", notes.join("; "))
    };
    if r.passed() {
        println!(
            "ok   {}: {} steps replayed, {} states checked, {} with sync edits ({} edits, {} changed the state){notes}",
            r.path.display(),
            r.steps_replayed,
            r.states_checked,
            r.sync_steps,
            r.repairs.edits,
            r.repairs.changed
        );
    } else {
        println!(
            "FAIL {}: {} mismatches in {} steps replayed{notes}",
            r.path.display(),
            r.mismatches.len(),
            r.steps_replayed
        );
        for m in r.mismatches.iter().take(10) {
            println!("     {m}");
        }
    }
    r.passed()
}

fn verify_file(path: &Path) -> Result<VerifyReport, crate::recording::RecordingError> {
    let rec = Recording::read(path)?;
    verify(&rec, &mut |_, _| {})
}

fn run_verify(args: VerifyArgs) -> anyhow::Result<u8> {
    let files = collect_files(&args.paths)?;
    anyhow::ensure!(
        !files.is_empty(),
        "no recordings (*.jsonl, *.jsonl.gz) in the given paths"
    );
    let (mut passed, mut failed, mut steps) = (0usize, 0usize, 0usize);
    let start = Instant::now();
    for file in &files {
        match verify_file(file) {
            Ok(r) => {
                steps += r.steps_replayed;
                if print_report(&r) {
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
            Err(e) => {
                println!("FAIL {e}");
                failed += 1;
            }
        }
    }
    println!(
        "{passed} passed, {failed} failed ({steps} steps in {:.2} s)",
        start.elapsed().as_secs_f64()
    );
    Ok(u8::from(failed > 0))
}

fn run_replay(args: ReplayArgs) -> anyhow::Result<u8> {
    let rec = Recording::read(&args.path)?;
    if args.emulated || !args.clients.is_empty() {
        return replay_in_minecraft(&rec, &args);
    }
    println!(
        "replaying {} ({}, {} player(s), {} steps) in the simulator",
        rec.header.episode_id,
        args.path.display(),
        rec.header.players.len(),
        rec.steps.len()
    );
    let every = args.every;
    let (report, env) = verify_into(&rec, &mut |env, step| {
        if every > 0 && (step.t + 1).is_multiple_of(every) {
            let pcts: Vec<String> = (0..env.num_players())
                .map(|p| format!("{:.1}%", 100.0 * env.goal_percentage(p)))
                .collect();
            println!(
                "step {:>6}: goal {} , {} of {} cells match the goal",
                step.t + 1,
                pcts.join(" / "),
                env.goal_similarity(),
                env.size().num_cells()
            );
        }
    })?;
    println!("\nfinal state after {} steps:", report.steps_replayed);
    for p in 0..env.num_players() {
        let pos = env.state().player_positions[p];
        println!(
            "  player {p}: at ({:.1}, {:.1}, {:.1}), goal {:.1}%",
            pos.x,
            pos.y,
            pos.z,
            100.0 * env.goal_percentage(p)
        );
    }
    println!(
        "  {} of {} cells match the goal{}",
        env.goal_similarity(),
        env.size().num_cells(),
        if env.goal_completed() {
            " (complete)"
        } else {
            ""
        }
    );
    print_top_view(&env);
    println!();
    Ok(u8::from(!print_report(&report)))
}

/// The highest non-air block of each column, as one letter per block id.
fn print_top_view(env: &crate::sim::env::Env) {
    const LETTERS: &[u8; 10] = b".BdcgLpsSw";
    let size = env.size();
    println!(
        "  top view (x across, z down; . air B bedrock d dirt c cobblestone g glass L log p planks s stone S stonebrick w wool):"
    );
    for z in 0..size.depth as i32 {
        let row: String = (0..size.width as i32)
            .map(|x| {
                let top = (0..size.height as i32)
                    .rev()
                    .map(|y| {
                        env.state()
                            .blocks
                            .get(crate::sim::coords::Cell::new(x, y, z))
                    })
                    .find(|b| !b.is_air())
                    .map_or(0, |b| b.0);
                char::from(LETTERS.get(usize::from(top)).copied().unwrap_or(b'?'))
            })
            .collect();
        println!("    {row}");
    }
}

fn run_stats(args: StatsArgs) -> anyhow::Result<u8> {
    let files = collect_files(&args.paths)?;
    anyhow::ensure!(
        !files.is_empty(),
        "no recordings (*.jsonl, *.jsonl.gz) in the given paths"
    );
    let mut episodes = Vec::with_capacity(files.len());
    let bar = bar(files.len(), "files");
    for f in &files {
        let rec = Recording::read(f)?;
        episodes.push(EpisodeStats::of(&rec));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let totals = DatasetStats::of(&episodes);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"episodes": episodes, "totals": totals}))?
        );
        return Ok(0);
    }
    println!(
        "{:<48} {:>9} {:>2} {:>6} {:>7} {:>9}  actions per player (place/break/move/give/noop)",
        "episode", "source", "P", "steps", "goal%", "duration"
    );
    for e in &episodes {
        let acts: Vec<String> = (0..e.players).map(|p| e.action_counts(p)).collect();
        println!(
            "{:<48} {:>9} {:>2} {:>6} {:>7} {:>9}  {}{}",
            e.episode_id,
            format!("{:?}", e.source).to_lowercase(),
            e.players,
            e.steps,
            e.goal_percentage
                .map_or("-".into(), |p| format!("{:.1}", 100.0 * p)),
            e.duration_s.map_or("-".into(), format_duration),
            acts.join("  "),
            if e.truncated {
                "  (truncated)"
            } else if e.finished {
                ""
            } else {
                "  (no footer)"
            }
        );
    }
    println!();
    println!(
        "{} episodes, {} steps, wall-clock {}, mean goal {}{}",
        totals.episodes,
        totals.steps,
        format_duration(totals.duration_s),
        totals
            .mean_goal_percentage
            .map_or("-".into(), |p| format!("{:.1}%", 100.0 * p)),
        if totals.unfinished > 0 {
            format!(", {} without footer", totals.unfinished)
        } else {
            String::new()
        }
    );
    let per_type: Vec<String> = ACTION_NAMES
        .iter()
        .zip(totals.actions)
        .filter(|(_, c)| *c > 0)
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    println!("actions (all players): {}", per_type.join(", "));
    if totals.chat.iter().sum::<u64>() > 0 {
        let [accept, reject, inquiry, none] = totals.chat;
        println!(
            "chat (all players): {} messages: accept {accept}, reject {reject}, inquiry {inquiry}, none {none}",
            totals.chat.iter().sum::<u64>()
        );
    }
    Ok(0)
}

fn format_duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn run_convert(args: ConvertArgs) -> anyhow::Result<u8> {
    let from = args
        .from
        .unwrap_or_else(|| super::shared_dir().join("data/human"));
    let files = human_episode_files(&from)?;
    anyhow::ensure!(
        !files.is_empty(),
        "no *.jsonl.gz episodes in {}",
        from.display()
    );
    println!(
        "converting {} human episodes from {} into {}",
        files.len(),
        from.display(),
        args.out.display()
    );
    let bar = bar(files.len(), "episodes");
    let start = Instant::now();
    let (mut passed, mut failed, mut steps) = (0usize, 0usize, 0usize);
    for f in &files {
        let converted = convert_human_episode(f, &args.out, args.gzip)
            .with_context(|| format!("converting {}", f.display()))?;
        let report = verify_file(&converted.path)?;
        steps += report.steps_replayed;
        bar.suspend(|| {
            if print_report(&report) {
                passed += 1;
            } else {
                failed += 1;
            }
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{passed} converted and verified, {failed} with mismatches ({steps} steps in {:.2} s)",
        start.elapsed().as_secs_f64()
    );
    Ok(u8::from(failed > 0))
}

fn run_simulate(args: SimulateArgs) -> anyhow::Result<u8> {
    let specs = args
        .agents
        .split(',')
        .map(|s| s.trim().parse::<AgentSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    anyhow::ensure!(!specs.is_empty(), "--agents needs at least one spec");
    // The demo's setting: the heuristic builder needs teleportation.
    let config = Game::tutorial(specs.len())
        .with_horizon(args.steps.max(1))
        .config()?;
    let mut goals = GoalConfig::from_env("tutorial", &json!({}))?.build()?;
    let mode = if args.hash {
        SnapshotMode::ChangesAndHash
    } else {
        SnapshotMode::Changes
    };
    let steps = record_simulated(
        &args.out,
        &config,
        goals.as_mut(),
        &specs,
        args.seed,
        args.steps,
        mode,
    )?;
    println!("wrote {} ({steps} steps)", args.out.display());
    Ok(0)
}

/// `mbag recording replay --emulated | --client ...`.
fn replay_in_minecraft(rec: &Recording, args: &ReplayArgs) -> anyhow::Result<u8> {
    use crate::daemon::episode::{EpisodeSettings, Minecraft, Mode, replay_settings};
    use crate::daemon::lockstep::LockstepSettings;

    let episode_id = format!("replay-{}", rec.header.episode_id);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("mbag-recordings").join(format!("{episode_id}.jsonl")));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let minecraft = if args.clients.is_empty() {
        Minecraft::Emulated {
            mod_flavour: malmo_bridge::mod_patch::ModFlavour::Stock,
            faults: Vec::new(),
        }
    } else {
        Minecraft::Clients(args.clients.clone())
    };
    let base = EpisodeSettings {
        mode: Mode::Watch,
        config: crate::sim::config::Config::from_json(&rec.header.config)?,
        seats: Vec::new(),
        seed: 0,
        minecraft,
        recording: out,
        fsync: crate::recording::Fsync::HeaderAndFooter,
        lockstep: LockstepSettings {
            step_period: args.step_period.duration(),
            max_steps: args.max_steps,
            ..LockstepSettings::default()
        },
        agent_address: args.agent_address,
        timeouts: malmo_bridge::agent::Timeouts::default(),
        episode_id,
        start_from: None,
        origin: serde_json::Map::new(),
    };
    let settings = replay_settings(rec, base)?;
    println!(
        "replaying {} ({} steps, {} player(s)) in {}",
        rec.header.episode_id,
        settings.lockstep.max_steps.unwrap_or(0),
        settings.config.num_players,
        if args.clients.is_empty() {
            "emulated Minecraft"
        } else {
            "Minecraft"
        }
    );
    // The start comes from the recording; no goal is generated.
    super::daemon::execute(settings, None, crate::nn::DeviceChoice::Cpu, false)
}
