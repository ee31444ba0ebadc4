//! One daemon episode from start to end: the simulator reset, the mission
//! started on Minecraft clients (or on the in-process emulator), the agents on
//! their threads, the lockstep loop, the recording, and the shutdown of it all.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use log::{info, warn};
use malmo_bridge::agent::{ClientAddr, Timeouts};
use malmo_bridge::emulator::{Emulator, EmulatorConfig, FaultSpec, WorldHandle};
use malmo_bridge::mod_patch::ModFlavour;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::{mpsc, watch};

use super::agent_thread::AgentThread;
use super::executor::Executor;
use super::lockstep::{
    Controller, Lockstep, LockstepParts, LockstepSettings, LoopEnd, LoopStats, StepView,
};
use super::recorder::RecorderThread;
use super::roles::RoleHandle;
use super::seam::emulated::{self, DriverReport, HumanScript};
use super::seam::mission::mission_with_chat;
use super::session::{Session, SessionError};
use crate::agents::spec::{AgentFactory, AgentSpec, AgentSpecError};
use crate::recording::header::{
    Controller as SeatController, ModelRef, PlayerEntry, Role, Source, SourceKind,
};
use crate::recording::{EpisodeRecorder, Fsync, RecordingError, RecordingWriter, SnapshotMode};
use crate::sim::action::Action;
use crate::sim::block::Blocks;
use crate::sim::config::Config;
use crate::sim::env::Env;
use crate::sim::goal::GoalGenerator;
use crate::sim::state::EnvState;

/// Which of the daemon's uses an episode serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A person builds with an assistant.
    Play,
    /// Human demonstrations are recorded (alone or with an assistant).
    Record,
    /// Agents play every seat while people watch.
    Watch,
}

impl Mode {
    fn source_kind(self) -> SourceKind {
        match self {
            Self::Play => SourceKind::Play,
            Self::Record => SourceKind::Record,
            Self::Watch => SourceKind::Watch,
        }
    }
}

/// Which Minecraft to play in.
#[derive(Clone, Debug)]
pub enum Minecraft {
    /// Running Minecraft clients (the MBAG build of the Malmo mod), by control
    /// address.
    Clients(Vec<ClientAddr>),
    /// The malmo-bridge emulator, in this process.
    Emulated {
        /// The mod the emulator plays.
        mod_flavour: ModFlavour,
        /// Faults the emulator injects
        /// ([`EmulatorConfig::faults`](malmo_bridge::emulator::EmulatorConfig::faults)).
        faults: Vec<FaultSpec>,
    },
}

/// Who plays a seat.
#[derive(Clone, Debug)]
pub enum Seat {
    /// A person in Minecraft. In emulated Minecraft, `emulated_by` says how the
    /// emulator plays them.
    Person {
        /// The emulated person's policy or script (emulated Minecraft only).
        emulated_by: Option<EmulatedPerson>,
    },
    /// An agent whose actions the daemon carries out in Minecraft.
    Agent(AgentSpec),
    /// A fixed list of actions carried out in Minecraft, one per step (a
    /// recording replayed), NOOP once it runs out.
    Scripted(Vec<Action>),
}

/// How an emulated person acts.
#[derive(Clone, Debug)]
pub enum EmulatedPerson {
    /// An agent spec (a heuristic or a human model).
    Agent(AgentSpec),
    /// A fixed list of actions (one per step; NOOPs skip a step).
    Replay(Vec<Action>),
}

/// Everything one episode needs.
#[derive(Clone, Debug)]
pub struct EpisodeSettings {
    /// What the episode is for.
    pub mode: Mode,
    /// The environment config (players' `is_human` and names as the seats say).
    pub config: Config,
    /// One seat per player.
    pub seats: Vec<Seat>,
    /// Seeds the goal, the start and the agents.
    pub seed: u64,
    /// Where Minecraft is.
    pub minecraft: Minecraft,
    /// The recording file to write (`.jsonl`).
    pub recording: PathBuf,
    /// When recordings are flushed to disk.
    pub fsync: Fsync,
    /// The loop's settings.
    pub lockstep: LockstepSettings,
    /// Where Minecraft clients reach this machine: the agent's listeners bind
    /// it (loopback for clients on this machine) and the MissionInit names it.
    pub agent_address: std::net::IpAddr,
    /// Protocol time limits.
    pub timeouts: Timeouts,
    /// A name for the episode (the mission's experiment id and the recording's
    /// episode id).
    pub episode_id: String,
    /// Start from this goal and state (a recording's start) instead of a
    /// generated goal.
    pub start_from: Option<(Blocks, EnvState)>,
    /// What the caller knows of where the episode belongs (a study session:
    /// the study, participant, session and condition), written into the
    /// recording header's `source.origin` beside the daemon's `seed`, so that
    /// a file says what it was recorded for wherever it is moved. Empty: the
    /// seed alone.
    pub origin: serde_json::Map<String, serde_json::Value>,
}

/// Why an episode could not run.
#[derive(Debug, thiserror::Error)]
pub enum EpisodeError {
    /// The settings do not fit together.
    #[error("{0}")]
    Settings(String),
    /// The goal generator failed.
    #[error("generating the goal: {0}")]
    Goal(#[from] crate::sim::goal::GoalError),
    /// An agent could not be built.
    #[error("player {player}: {source}")]
    Agent {
        /// The player.
        player: usize,
        /// Why.
        source: AgentSpecError,
    },
    /// The emulator could not start.
    #[error("starting the Minecraft emulator: {0}")]
    Emulator(#[from] malmo_bridge::emulator::EmulatorError),
    /// The mission could not start.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The recording could not be created.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// A thread could not be started.
    #[error("starting a thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// How an episode went.
#[derive(Debug)]
pub struct EpisodeReport {
    /// How the loop ended (its error, if any, included).
    pub end: LoopEnd,
    /// The recording (complete up to the last finished step even after errors).
    pub recording: Option<PathBuf>,
    /// Steps taken.
    pub steps: u64,
    /// The simulator at the end.
    pub env: Env,
    /// The loop's measurements.
    pub stats: LoopStats,
    /// Per emulated person, what their driver did.
    pub drivers: Vec<DriverReport>,
    /// In emulated Minecraft, the world as the emulator had it at the end:
    /// `blocks[x][y][z]` as Minecraft block names.
    pub minecraft_blocks: Option<Vec<&'static str>>,
}

/// Called with the emulator and the episode id once the mission runs.
pub type EmulatorHook = Box<dyn FnOnce(&Emulator, &str) + Send>;

/// Called with the step-view receiver once the loop exists.
pub type StartHook = Box<dyn FnOnce(watch::Receiver<StepView>) + Send>;

/// Hooks for watching a running episode.
#[derive(Default)]
pub struct EpisodeHooks {
    /// Called with the step-view receiver once the loop exists.
    pub on_start: Option<StartHook>,
    /// Called with the emulator once the mission runs (emulated Minecraft only),
    /// for fault injection in tests.
    pub on_emulator: Option<EmulatorHook>,
}

impl std::fmt::Debug for EpisodeHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpisodeHooks").finish_non_exhaustive()
    }
}

/// Runs one episode, on a goal from `goals` unless the settings give the start
/// (`start_from`). Setting `stop` to true ends it early (recorded as aborted).
/// Errors before the first step (settings, agents, the mission) are returned;
/// errors during the episode end it and are in the report.
pub async fn run_episode(
    settings: EpisodeSettings,
    goals: Option<&mut dyn GoalGenerator>,
    factory: Arc<dyn AgentFactory>,
    stop: watch::Receiver<bool>,
    hooks: EpisodeHooks,
) -> Result<EpisodeReport, EpisodeError> {
    let config = settings.config.clone();
    let n = config.num_players;
    if settings.seats.len() != n {
        return Err(EpisodeError::Settings(format!(
            "{} seats given for {n} players",
            settings.seats.len()
        )));
    }
    for (p, seat) in settings.seats.iter().enumerate() {
        let person = matches!(seat, Seat::Person { .. });
        if person != config.players[p].is_human {
            return Err(EpisodeError::Settings(format!(
                "player {p}: the config says is_human = {}, the seat is {}",
                config.players[p].is_human,
                if person { "a person" } else { "an agent" }
            )));
        }
    }

    let mut env = Env::new(config.clone());
    match &settings.start_from {
        Some((goal, state)) => {
            if goal.size() != config.world_size {
                return Err(EpisodeError::Settings(format!(
                    "the start's world is {}, the config's {}",
                    goal.size(),
                    config.world_size
                )));
            }
            env.restore(goal.clone(), state.clone());
        }
        None => {
            let goals = goals.ok_or_else(|| {
                EpisodeError::Settings("neither a goal generator nor a start given".into())
            })?;
            let mut rng = StdRng::seed_from_u64(settings.seed);
            env.reset(goals, &mut rng)?;
        }
    }
    // With chat on, the AI seats observe chat as well: the daemon reads chat
    // from player 0's connection, whoever plays it (see `view`).
    let mission = mission_with_chat(
        &config,
        env.goal(),
        &env.state().blocks,
        settings.lockstep.chat.enabled,
    )
    .map_err(SessionError::from)?;

    // Agents are built before Minecraft is touched: a bad model path should not
    // cost a mission start.
    let mut controllers = Vec::with_capacity(n);
    let mut entries = Vec::with_capacity(n);
    for (p, seat) in settings.seats.iter().enumerate() {
        let role = if p == 0 { Role::Human } else { Role::Assistant };
        match seat {
            Seat::Person { .. } => {
                controllers.push(Controller::Minecraft);
                entries.push(PlayerEntry {
                    index: p,
                    role,
                    controller: SeatController::Person,
                    agent: None,
                    models: Vec::new(),
                    note: None,
                });
            }
            Seat::Scripted(_) | Seat::Agent(_) => {
                let (agent, entry) = match seat {
                    Seat::Scripted(actions) => (
                        Box::new(ScriptedAgent(actions.iter().copied().collect()))
                            as Box<dyn crate::agents::Agent>,
                        PlayerEntry {
                            index: p,
                            role,
                            controller: SeatController::Agent,
                            agent: None,
                            models: Vec::new(),
                            note: Some(format!("{} scripted actions (a replay)", actions.len())),
                        },
                    ),
                    Seat::Agent(spec) => {
                        let mut agent = factory
                            .build(spec, p, &config)
                            .map_err(|source| EpisodeError::Agent { player: p, source })?;
                        agent.reset(crate::eval::run::agent_seed(settings.seed, p));
                        let entry = PlayerEntry {
                            index: p,
                            role,
                            controller: SeatController::Agent,
                            agent: Some(spec.to_string()),
                            models: model_refs(spec),
                            note: None,
                        };
                        (agent, entry)
                    }
                    Seat::Person { .. } => unreachable!("matched above"),
                };
                let thread = AgentThread::spawn(format!("player{p}"), agent)?;
                controllers.push(Controller::Agent(thread));
                entries.push(entry);
            }
        }
    }

    let (recorder, header) = EpisodeRecorder::start(
        &env,
        settings.episode_id.clone(),
        Source {
            kind: settings.mode.source_kind(),
            description: Some(describe(&settings)),
            origin: Some(serde_json::Value::Object(origin(&settings))),
        },
        entries,
        SnapshotMode::Changes,
    );
    let writer = RecordingWriter::create(&settings.recording, &header, settings.fsync)?;
    let writer = RecorderThread::spawn(writer)?;
    info!("recording to {}", settings.recording.display());

    let emulator = match &settings.minecraft {
        Minecraft::Emulated {
            mod_flavour,
            faults,
        } => Some(
            Emulator::start(EmulatorConfig {
                world_delay: Duration::from_millis(20),
                mod_flavour: *mod_flavour,
                faults: faults.clone(),
                ..EmulatorConfig::ephemeral(mission.num_agents())
            })
            .await?,
        ),
        Minecraft::Clients(_) => None,
    };
    let clients = match (&settings.minecraft, &emulator) {
        (Minecraft::Clients(c), _) => c.clone(),
        (_, Some(e)) => e.pool(),
        _ => unreachable!("an emulator exists in emulated mode"),
    };
    match malmo_bridge::agent::query_mod_version(&clients[0], Duration::from_secs(2)).await {
        Ok(Some(v)) => {
            info!("Minecraft runs mbag's patched mod {v}: block changes are attributed exactly")
        }
        Ok(None) => {
            info!("Minecraft runs the stock MBAG mod: block changes are attributed by inference")
        }
        Err(e) => warn!("could not ask Minecraft for its mod version: {e}"),
    }
    let session = Session::start(
        mission,
        &clients,
        &settings.episode_id,
        settings.agent_address,
        settings.timeouts,
    )
    .await?;
    if let (Some(e), Some(hook)) = (&emulator, hooks.on_emulator) {
        hook(e, &settings.episode_id);
    }

    let (event_tx, events) = mpsc::channel(1024);
    let roles: Vec<RoleHandle> = session
        .roles
        .into_iter()
        .map(|m| RoleHandle::spawn(m, event_tx.clone(), settings.lockstep.keep_observations))
        .collect();
    drop(event_tx);
    let (camera_stop, camera_stopped) = watch::channel(false);
    let camera = config.malmo.use_spectator.then(|| {
        super::spectator::spawn(
            roles[n].sender(),
            super::spectator::Extent([
                config.world_size.width as f64,
                config.world_size.height as f64,
                config.world_size.depth as f64,
            ]),
            config.malmo.rotate_spectator,
            camera_stopped,
        )
    });
    let (report_tx, reports) = mpsc::channel(256);
    let executor = Executor::spawn(roles.iter().map(RoleHandle::sender).collect(), report_tx);

    let (mut lockstep, view) = Lockstep::new(LockstepParts {
        env,
        controllers,
        events,
        executor,
        reports,
        recorder,
        writer,
        settings: settings.lockstep.clone(),
        stop,
    });
    if let Some(hook) = hooks.on_start {
        hook(view.clone());
    }

    let world = emulator
        .as_ref()
        .and_then(|e| e.world(&settings.episode_id));
    let mut drivers = Vec::new();
    for (p, seat) in settings.seats.iter().enumerate() {
        let Seat::Person {
            emulated_by: Some(person),
        } = seat
        else {
            continue;
        };
        let Some(world) = &world else {
            warn!("player {p}: an emulated person, but Minecraft is not emulated");
            continue;
        };
        let script = match person {
            EmulatedPerson::Agent(spec) => {
                let mut agent = factory
                    .build(spec, p, &config)
                    .map_err(|source| EpisodeError::Agent { player: p, source })?;
                agent.reset(crate::eval::run::agent_seed(settings.seed ^ 0x9e37, p));
                HumanScript::Agent(AgentThread::spawn(format!("emulated{p}"), agent)?)
            }
            EmulatedPerson::Replay(actions) => {
                HumanScript::Replay(actions.iter().copied().collect::<VecDeque<_>>())
            }
        };
        let name = super::seam::commands::player_name(&config, p);
        drivers.push(emulated::spawn(
            world.clone(),
            &name,
            p,
            script,
            view.clone(),
        ));
    }
    drop(view);

    let (end, recording) = lockstep.run().await;
    let _ = camera_stop.send(true);
    if let Some(camera) = camera {
        let _ = camera.await;
    }
    match &end.error {
        None => info!("episode over: {:?}", end.end.reason),
        Some(e) => warn!("episode stopped: {e}"),
    }
    let stats = lockstep.stats();
    let final_env = lockstep.env().clone();
    let steps = lockstep.steps();
    let controllers = lockstep.close().await;
    // Quitting only makes sense while Minecraft is still there.
    let mut quits = tokio::task::JoinSet::new();
    for r in roles {
        quits.spawn(async move { (r.role(), r.quit().await) });
    }
    while let Some(joined) = quits.join_next().await {
        if let Ok((role, Err(e))) = joined
            && end.error.is_none()
        {
            warn!("role {role} did not end cleanly: {e}");
        }
    }
    let mut reports = Vec::new();
    for driver in drivers {
        reports.push(
            match tokio::time::timeout(Duration::from_secs(5), driver).await {
                Ok(Ok(r)) => r,
                _ => DriverReport::default(),
            },
        );
    }
    let minecraft_blocks = match &world {
        Some(w) => Some(read_world(w, &final_env).await),
        None => None,
    };
    if let Some(e) = emulator {
        e.shutdown().await;
    }
    // Agent threads are joined off the runtime's workers.
    let _ = tokio::task::spawn_blocking(move || drop(controllers)).await;
    Ok(EpisodeReport {
        end,
        recording,
        steps,
        env: final_env,
        stats,
        drivers: reports,
        minecraft_blocks,
    })
}

/// The emulated world's blocks over the simulator's world, `[x][y][z]` order;
/// cells whose read failed are `"?"`.
async fn read_world(world: &WorldHandle, env: &Env) -> Vec<&'static str> {
    let mut out = Vec::with_capacity(env.size().num_cells());
    for cell in env.size().cells() {
        out.push(world.block([cell.x, cell.y, cell.z]).await.unwrap_or("?"));
    }
    out
}

/// Plays a fixed list of actions, one per step, then NOOPs.
#[derive(Debug)]
struct ScriptedAgent(VecDeque<Action>);

impl crate::agents::Agent for ScriptedAgent {
    fn name(&self) -> &'static str {
        "ScriptedAgent"
    }

    fn reset(&mut self, _seed: u64) {}

    fn act(&mut self, _obs: &crate::sim::obs::Observation) -> Action {
        self.0.pop_front().unwrap_or(Action::NOOP)
    }

    fn internals(&self) -> crate::agents::Internals<'_> {
        crate::agents::Internals::None
    }
}

/// The model files a spec loads, hashed for the header.
fn model_refs(spec: &AgentSpec) -> Vec<ModelRef> {
    let AgentSpec::Network { path, .. } = spec else {
        return Vec::new();
    };
    let mut files = vec![path.clone()];
    if let Ok(text) = std::fs::read_to_string(path)
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(w) = v["weights"].as_str()
    {
        files.push(path.with_file_name(w));
    }
    files
        .iter()
        .filter_map(|f| match ModelRef::hash_file(f) {
            Ok(r) => Some(r),
            Err(e) => {
                warn!("cannot hash {}: {e}", f.display());
                None
            }
        })
        .collect()
}

fn describe(settings: &EpisodeSettings) -> String {
    let seats: Vec<String> = settings
        .seats
        .iter()
        .map(|s| match s {
            Seat::Person { emulated_by: None } => "a person".to_owned(),
            Seat::Person {
                emulated_by: Some(EmulatedPerson::Agent(spec)),
            } => format!("an emulated person ({spec})"),
            Seat::Person {
                emulated_by: Some(EmulatedPerson::Replay(a)),
            } => format!("an emulated person replaying {} actions", a.len()),
            Seat::Agent(spec) => spec.to_string(),
            Seat::Scripted(a) => format!("a replay of {} actions", a.len()),
        })
        .collect();
    let minecraft = match &settings.minecraft {
        Minecraft::Clients(c) => format!(
            "Minecraft at {}",
            c.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Minecraft::Emulated { .. } => "emulated Minecraft".to_owned(),
    };
    // Fault specs are kept as given (a message may have capitals).
    let faults = match &settings.minecraft {
        Minecraft::Emulated { faults, .. } if !faults.is_empty() => format!(
            " with faults {}",
            faults
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => String::new(),
    };
    format!(
        "mbag {:?}: {} in {minecraft}",
        settings.mode,
        seats.join(" + ")
    )
    .to_lowercase()
        + &faults
}

/// Why a recording cannot be replayed in Minecraft.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The recording cannot be read into a simulator.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// Its config cannot be turned into a replay's.
    #[error("{path}: the recorded config cannot be replayed: {message}")]
    Config {
        /// The recording.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The header's `source.origin`: the caller's entries and the seed. The seed
/// is the one the daemon used, so it is written last, over any caller's.
fn origin(settings: &EpisodeSettings) -> serde_json::Map<String, serde_json::Value> {
    let mut origin = settings.origin.clone();
    origin.insert("seed".into(), settings.seed.into());
    origin
}

/// The episode that replays `recording` in Minecraft: the recorded goal and
/// start, every player's effective actions carried out as an agent's (AI
/// players in creative mode, through the same commands as `watch`), one step
/// per step. `settings` gives everything else (Minecraft, output, pacing); its
/// mode, config, seats and start are replaced.
pub fn replay_settings(
    recording: &crate::recording::Recording,
    mut settings: EpisodeSettings,
) -> Result<EpisodeSettings, ReplayError> {
    let env = crate::recording::verify::env_for(recording)?;
    let mut config_json = recording.header.config.clone();
    let bad = |message: String| ReplayError::Config {
        path: recording.path.clone(),
        message,
    };
    let players = config_json["players"]
        .as_array_mut()
        .ok_or_else(|| bad("no players list".into()))?;
    for p in players.iter_mut() {
        p["is_human"] = serde_json::Value::Bool(false);
    }
    config_json["malmo"]["use_malmo"] = serde_json::Value::Bool(true);
    config_json["horizon"] = serde_json::json!(recording.steps.len().max(1) as u64 + 1);
    let config = Config::from_json(&config_json).map_err(|e| bad(e.to_string()))?;
    let size = config.world_size;
    let mut seats = Vec::with_capacity(config.num_players);
    for p in 0..config.num_players {
        let actions = recording
            .steps
            .iter()
            .enumerate()
            .map(|(t, s)| {
                s.e.get(p)
                    .ok_or_else(|| bad(format!("step {t} has no action for player {p}")))?
                    .to_action(size)
                    .map_err(|m| bad(format!("step {t}, player {p}: {m}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        seats.push(Seat::Scripted(actions));
    }
    settings.mode = Mode::Watch;
    settings.config = config;
    settings.seats = seats;
    settings.start_from = Some((env.goal().clone(), env.state().clone()));
    let max = recording.steps.len() as u64;
    settings.lockstep.max_steps = Some(settings.lockstep.max_steps.map_or(max, |m| m.min(max)));
    Ok(settings)
}
