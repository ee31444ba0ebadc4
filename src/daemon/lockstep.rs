//! The lockstep loop: the simulator stepped in time with a running Minecraft
//! mission (MBAG_INTEGRATION.md §6).
//!
//! One task runs the loop. Each step:
//!
//! 1. takes each human player's next detected action (NOOP if none) and asks
//!    each agent's thread for its action on the simulator's observation;
//! 2. steps the simulator; each AI action that took effect becomes a command
//!    sequence for the [`Executor`], and the Minecraft changes it will cause are
//!    registered with the [`Detector`] so they are not taken for human actions;
//! 3. waits until a human acts or the step period has passed since the previous
//!    step ended, reading every observation as it arrives;
//! 4. compares the simulator with Minecraft and repairs what differs
//!    ([`divergence`]; leaving out what AI actions in flight still change), and
//!    records the step, its repairs included.
//!
//! Observations are read during every phase, including while agents think, so
//! inference never holds up the sockets; agents run on their own threads
//! ([`AgentThread`]), file writes on the [`RecorderThread`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{debug, info, warn};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::agent_thread::{AgentThread, AgentThreadError, PendingAct};
use super::aim;
use super::commands::{self, Instruction, Item, PlaceBreak, PlaceSource};
use super::detect::{AiEffect, Detector, DetectorConfig, expected_diffs};
use super::divergence::{self, Divergence, MissingItems, Repair, SyncScope};
use super::executor::{Executor, ExecutorReport, Job, JobKind};
use super::recorder::{RecorderError, RecorderThread};
use super::roles::RoleEvent;
use crate::recording::{EndReason, EndRecord, EpisodeRecorder, SyncEdits};
use crate::sim::action::{Action, ActionType};
use crate::sim::block::BlockId;
use crate::sim::coords::{PlayerId, PlayerPos};
use crate::sim::env::{Env, StepOutcome};
use crate::sim::viewpoint::Interaction;

/// Latency samples kept per measure (a long session's first hours are plenty
/// for percentiles; memory stays bounded).
const MAX_LATENCY_SAMPLES: usize = 200_000;

/// The longest the end of an episode waits for AI actions in flight.
const END_SETTLE_LIMIT: Duration = Duration::from_secs(60);

/// How the loop runs.
#[derive(Clone, Debug)]
pub struct LockstepSettings {
    /// The longest a step waits for a human action (the reference's
    /// `action_delay`, 0.8 s in the human study).
    pub step_period: Duration,
    /// Stop (truncated) after this many steps.
    pub max_steps: Option<u64>,
    /// Keep every observation's JSON in the recording.
    pub keep_observations: bool,
    /// How long observations are only watched after the set-up commands, before
    /// the detector starts: teleports and gifts of the set-up are not human
    /// actions.
    pub settle: Duration,
}

impl Default for LockstepSettings {
    fn default() -> Self {
        Self {
            step_period: Duration::from_millis(800),
            max_steps: None,
            keep_observations: false,
            settle: Duration::from_millis(300),
        }
    }
}

/// Who chooses a player's actions.
#[derive(Debug)]
pub enum Controller {
    /// A person in Minecraft: actions come from the detector.
    Minecraft,
    /// An agent on its own thread: its actions become Malmo commands.
    Agent(AgentThread),
}

/// What the loop publishes after every step, for progress displays and for an
/// emulated human who needs to see the world.
#[derive(Clone, Debug)]
pub struct StepView {
    /// Steps taken.
    pub steps: u64,
    /// The simulator after the step.
    pub env: Arc<Env>,
    /// Per player, the detected actions that no step has taken yet: a person
    /// who reacts to the step's result waits for their own.
    pub queued: Vec<usize>,
    /// The episode is ending: an emulated person stops acting, so that the final
    /// sync sees Minecraft at rest.
    pub closing: bool,
}

/// Why the loop stopped.
#[derive(Debug, thiserror::Error)]
pub enum LockstepError {
    /// A role's Minecraft connection failed.
    #[error("Minecraft connection of player {role} lost: {error}")]
    MinecraftLost {
        /// The role.
        role: usize,
        /// What happened.
        error: malmo_bridge::agent::AgentError,
    },
    /// Minecraft ended the mission before the episode was over.
    #[error(
        "Minecraft ended the mission of player {role} ({status:?}) before the episode was over"
    )]
    MinecraftEnded {
        /// The role.
        role: usize,
        /// The status Minecraft gave.
        status: malmo_bridge::mission_ended::MissionEndedStatus,
    },
    /// Every role task has stopped.
    #[error("every Minecraft connection has closed")]
    AllRolesGone,
    /// An agent failed.
    #[error("player {player}'s agent: {error}")]
    Agent {
        /// The player.
        player: usize,
        /// What happened.
        error: AgentThreadError,
    },
    /// Commands could not be queued.
    #[error(transparent)]
    Executor(#[from] super::executor::ExecutorUnavailable),
    /// A command could not be sent.
    #[error(transparent)]
    Command(#[from] super::roles::RoleGone),
    /// The recording could not be written.
    #[error(transparent)]
    Recording(#[from] RecorderError),
    /// The simulator refused a step.
    #[error("the simulator refused a step: {0}")]
    Step(#[from] crate::sim::env::StepError),
    /// The set-up commands could not be built.
    #[error("set-up: {0}")]
    Setup(#[from] commands::ItemError),
    /// Stopped from outside (Ctrl-C).
    #[error("stopped by the operator")]
    Interrupted,
}

/// Latencies the loop measured, for `mbag bench daemon`.
#[derive(Clone, Debug, Default)]
pub struct LoopStats {
    /// From an observation's arrival on its socket to the detector's update.
    pub observation_to_update: Vec<Duration>,
    /// From an AI decision to its first command written to the socket.
    pub decision_to_command: Vec<Duration>,
    /// Time agents took to decide.
    pub inference: Vec<Duration>,
    /// Observations read.
    pub observations: u64,
    /// Observations that could not be decoded (skipped).
    pub undecodable: u64,
    /// Divergences found and repaired.
    pub divergences: u64,
    /// Human actions detected.
    pub human_actions: u64,
    /// Places and breaks attributed by the patched mod's block-change events.
    pub attributed_by_mod: u64,
    /// Human actions dropped because the player's queue was full
    /// ([`MAX_QUEUED_ACTIONS`](super::detect::MAX_QUEUED_ACTIONS)).
    pub human_actions_dropped: u64,
    /// Expected effects of AI actions that Minecraft never showed.
    pub unseen_expected: u64,
    /// Steps whose sync left out cells or players that AI actions in flight
    /// were still changing.
    pub syncs_scoped: u64,
}

/// A detector at the env's state that reads the patched mod's events by the
/// players' Minecraft names.
fn new_detector(env: &Env) -> Detector {
    let config = env.config();
    Detector::new(
        DetectorConfig::from_config(config),
        env.state().blocks.clone(),
        &env.state().player_positions,
    )
    .with_player_names(
        (0..env.num_players())
            .map(|p| commands::player_name(config, p))
            .collect(),
    )
}

/// How the episode ended, for the footer and the caller.
#[derive(Debug)]
pub struct LoopEnd {
    /// The footer's end record.
    pub end: EndRecord,
    /// The error that stopped the loop, if any.
    pub error: Option<LockstepError>,
}

/// The lockstep loop of one episode.
#[derive(Debug)]
pub struct Lockstep {
    env: Env,
    detector: Detector,
    missing: MissingItems,
    always_have: Vec<Vec<Item>>,
    controllers: Vec<Controller>,
    events: mpsc::Receiver<RoleEvent>,
    executor: Executor,
    reports: mpsc::Receiver<ExecutorReport>,
    /// AI actions whose commands have not finished.
    running_ai: usize,
    recorder: EpisodeRecorder,
    writer: Option<RecorderThread>,
    settings: LockstepSettings,
    stats: LoopStats,
    progress: watch::Sender<StepView>,
    stop: watch::Receiver<bool>,
    epoch: Instant,
    last_title: Option<i64>,
    /// Raw observations since the last recorded step, per player.
    raw: Vec<Vec<Value>>,
    steps: u64,
    /// Whether the detector is live (after the set-up settled).
    detecting: bool,
}

/// The parts a [`Lockstep`] is built from.
#[derive(Debug)]
pub struct LockstepParts {
    /// The simulator, reset to the episode's start (tracing is switched on).
    pub env: Env,
    /// Per player, who controls it.
    pub controllers: Vec<Controller>,
    /// The role tasks' events.
    pub events: mpsc::Receiver<RoleEvent>,
    /// The executor over the role tasks.
    pub executor: Executor,
    /// The executor's reports.
    pub reports: mpsc::Receiver<ExecutorReport>,
    /// The recorder started at the env's state.
    pub recorder: EpisodeRecorder,
    /// The writer thread, header written.
    pub writer: RecorderThread,
    /// Settings.
    pub settings: LockstepSettings,
    /// Set to true to stop the loop (the episode is recorded as aborted).
    pub stop: watch::Receiver<bool>,
}

impl Lockstep {
    /// Builds the loop; `progress` receives a [`StepView`] after every step.
    pub fn new(parts: LockstepParts) -> (Self, watch::Receiver<StepView>) {
        let LockstepParts {
            mut env,
            controllers,
            events,
            executor,
            reports,
            recorder,
            writer,
            settings,
            stop,
        } = parts;
        // The chosen viewpoint and click of every AI place and break give the
        // commands' teleport and look angles.
        env.set_tracing(true);
        let config = env.config().clone();
        let n = env.num_players();
        let detector = new_detector(&env);
        let always_have = (0..n)
            .map(|p| commands::always_have(&config, p).unwrap_or_default())
            .collect();
        let (progress, view) = watch::channel(StepView {
            steps: 0,
            env: Arc::new(env.clone()),
            queued: vec![0; n],
            closing: false,
        });
        (
            Self {
                env,
                detector,
                missing: MissingItems::new(n),
                always_have,
                controllers,
                events,
                executor,
                reports,
                running_ai: 0,
                recorder,
                writer: Some(writer),
                settings,
                stats: LoopStats::default(),
                progress,
                stop,
                epoch: Instant::now(),
                last_title: None,
                raw: vec![Vec::new(); n],
                steps: 0,
                detecting: false,
            },
            view,
        )
    }

    /// The measurements so far.
    pub fn stats(&self) -> LoopStats {
        LoopStats {
            attributed_by_mod: self.detector.attributed_by_mod(),
            human_actions_dropped: self.detector.dropped_actions(),
            ..self.stats.clone()
        }
    }

    /// Steps taken (and recorded).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The simulator.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Runs the episode: set-up commands, then steps until the env is done, the
    /// step limit, a failure or a stop. Every completed step is recorded; the
    /// footer says how the episode ended. Returns the recording's path.
    pub async fn run(&mut self) -> (LoopEnd, Option<std::path::PathBuf>) {
        let outcome = self.run_steps().await;
        let end = match outcome {
            Ok(EndReason::Done) => LoopEnd {
                end: EndRecord {
                    reason: EndReason::Done,
                    message: None,
                },
                error: None,
            },
            Ok(reason) => LoopEnd {
                end: EndRecord {
                    reason,
                    message: Some(format!("stopped after {} steps", self.steps)),
                },
                error: None,
            },
            Err(error) => LoopEnd {
                end: EndRecord {
                    reason: EndReason::Aborted,
                    message: Some(error.to_string()),
                },
                error: Some(error),
            },
        };
        let path = self.finish_recording(&end.end).await;
        (end, path)
    }

    async fn finish_recording(&mut self, end: &EndRecord) -> Option<std::path::PathBuf> {
        let writer = self.writer.take()?;
        let path = writer.path().to_owned();
        let footer = self.recorder.footer(&self.env, end.clone());
        match writer.finish(footer).await {
            Ok(path) => Some(path),
            Err(e) => {
                log::error!(
                    "the recording {} has every completed step but no footer: {e}",
                    path.display()
                );
                Some(path)
            }
        }
    }

    async fn run_steps(&mut self) -> Result<EndReason, LockstepError> {
        self.set_up().await?;
        loop {
            if *self.stop.borrow() {
                return Err(LockstepError::Interrupted);
            }
            if self.settings.max_steps.is_some_and(|max| self.steps >= max) {
                return Ok(EndReason::Truncated);
            }
            let step_end = Instant::now() + self.settings.step_period;
            self.wait_for_ai_actions().await?;
            if self.settings.max_steps == Some(self.steps + 1) {
                // The last step: a person's edit after its decision would have
                // no step to become an action in, so people stop first and
                // what they did is read before it.
                self.let_persons_finish().await?;
            }
            let actions = self.decide().await?;
            let decided = Instant::now();
            let before = self.env.state().inventories.clone();
            let outcome = self.env.step(&actions)?.clone();
            self.dispatch_ai_actions(&actions, &outcome, &before, decided)?;
            self.update_title()?;
            let last = outcome.done
                || self
                    .settings
                    .max_steps
                    .is_some_and(|max| self.steps + 1 >= max);
            let sync = if last {
                self.settle_at_end().await?;
                self.sync(SyncScope::everything())?
            } else {
                self.wait(step_end).await?;
                let scope = SyncScope::new(&self.detector);
                self.sync(scope)?
            };
            self.record(&actions, &outcome, sync, !last).await?;
            if outcome.done {
                return Ok(EndReason::Done);
            }
        }
    }

    /// Reads observations and reports for `duration`.
    async fn read_for(&mut self, duration: Duration) -> Result<(), LockstepError> {
        let until = tokio::time::sleep(duration);
        tokio::pin!(until);
        loop {
            tokio::select! {
                event = self.events.recv() => self.handle_event(event)?,
                report = self.reports.recv() => self.handle_report(report)?,
                _ = &mut until => return Ok(()),
                _ = self.stop.changed() => return Err(LockstepError::Interrupted),
            }
        }
    }

    /// Waits until the AI actions of earlier steps have run and their grace has
    /// passed. An agent decides on the simulator, and its click is aimed and
    /// its effects predicted from Minecraft as the queued commands will leave
    /// it; a person can change that world until the click, so the queue must
    /// not grow: with steps shorter than an AI action's commands (a person
    /// acting every tick ends each step early) it did, by seconds, and people's
    /// edits in between sent clicks to other cells.
    async fn wait_for_ai_actions(&mut self) -> Result<(), LockstepError> {
        self.read_while(|l| l.running_ai > 0, "AI actions are still running")
            .await
    }

    /// Reads observations and reports while `busy` holds, at most
    /// [`END_SETTLE_LIMIT`] (then warns with `what` and goes on).
    async fn read_while(
        &mut self,
        busy: fn(&Self) -> bool,
        what: &str,
    ) -> Result<(), LockstepError> {
        let limit = tokio::time::sleep(END_SETTLE_LIMIT);
        tokio::pin!(limit);
        while busy(self) {
            tokio::select! {
                event = self.events.recv() => self.handle_event(event)?,
                report = self.reports.recv() => self.handle_report(report)?,
                _ = &mut limit => {
                    warn!("{what} after {END_SETTLE_LIMIT:?}; going on");
                    break;
                }
                _ = self.stop.changed() => return Err(LockstepError::Interrupted),
            }
        }
        Ok(())
    }

    /// Before the last step is recorded: lets the AI actions in flight finish
    /// and Minecraft's observations catch up (bounded), so the final sync leaves
    /// the simulator, the recording and Minecraft showing the same world.
    async fn settle_at_end(&mut self) -> Result<(), LockstepError> {
        self.wait_for_ai_actions().await?;
        self.let_persons_finish().await
    }

    /// Tells emulated persons the episode is closing (they start nothing new),
    /// then waits until every person has let go of their buttons and
    /// Minecraft's observations have settled. A person holding a button may be
    /// mid-dig (or a tick after a place); their change must reach the detector
    /// as an action, not the final sync as a repair.
    async fn let_persons_finish(&mut self) -> Result<(), LockstepError> {
        self.progress.send_modify(|v| v.closing = true);
        self.read_while(
            Self::any_human_button_held,
            "a person still holds a button at the end of the episode",
        )
        .await?;
        self.read_for(self.settings.settle).await
    }

    fn any_human_button_held(&self) -> bool {
        let players = &self.detector.state().players;
        self.controllers.iter().zip(players).any(|(c, view)| {
            matches!(c, Controller::Minecraft) && (view.is_breaking || view.is_placing)
        })
    }

    /// The set-up commands (§5.1), then a settling pause before detection. With
    /// infinite blocks, the AI players' block slots are then put in order (block
    /// k in slot k), re-checked on fresh observations until right, because a
    /// `/give` only shows where the block landed in a later observation.
    async fn set_up(&mut self) -> Result<(), LockstepError> {
        let config = self.env.config().clone();
        let instructions = commands::setup(&config, &self.env.state().player_positions)?;
        self.run_setup_job(instructions).await?;
        if config.abilities.inf_blocks {
            for round in 0.. {
                let repairs: Vec<_> = (0..self.env.num_players())
                    .filter(|&p| matches!(self.controllers[p], Controller::Agent(_)))
                    .flat_map(|p| {
                        divergence::ai_inventory_repairs(
                            &config,
                            p,
                            &self.detector.state().players[p],
                        )
                    })
                    .collect();
                if repairs.is_empty() {
                    break;
                }
                if round == 5 {
                    warn!("the AI inventories are still out of order after 5 rounds of repairs");
                    break;
                }
                self.run_setup_job(repairs).await?;
            }
        }
        // Minecraft now shows the simulator's start: detect from here.
        self.detector = new_detector(&self.env);
        self.detecting = true;
        info!("set-up done; the episode starts");
        Ok(())
    }

    /// Runs set-up instructions to their end, then lets observations settle.
    async fn run_setup_job(&mut self, instructions: Vec<Instruction>) -> Result<(), LockstepError> {
        self.executor.submit(Job {
            kind: JobKind::Setup,
            instructions,
        })?;
        loop {
            tokio::select! {
                event = self.events.recv() => self.handle_event(event)?,
                report = self.reports.recv() => {
                    if let Some(ExecutorReport::SetupDone) = report {
                        break;
                    }
                    self.handle_report(report)?;
                }
                _ = self.stop.changed() => return Err(LockstepError::Interrupted),
            }
        }
        self.read_for(self.settings.settle).await
    }

    /// Each player's action for this step: humans' detected actions, agents'
    /// decisions (asked of their threads at once, observations read meanwhile).
    async fn decide(&mut self) -> Result<Vec<Action>, LockstepError> {
        let n = self.env.num_players();
        let mut actions = vec![Action::NOOP; n];
        let mut pending: Vec<(usize, PendingAct)> = Vec::new();
        for (p, controller) in self.controllers.iter().enumerate() {
            match controller {
                Controller::Minecraft => {
                    if let Some(a) = self.detector.next_action(PlayerId(p)) {
                        actions[p] = a;
                    }
                }
                Controller::Agent(agent) => {
                    let mut obs = self.env.new_observation();
                    if let Err(e) = self.env.observe(p, &mut obs) {
                        warn!("player {p}: {e}; it does nothing this step");
                        continue;
                    }
                    let ask = agent
                        .ask(obs)
                        .map_err(|error| LockstepError::Agent { player: p, error })?;
                    pending.push((p, ask));
                }
            }
        }
        for (p, ask) in pending {
            let answer = ask.wait();
            tokio::pin!(answer);
            let timed = loop {
                tokio::select! {
                    timed = &mut answer => break timed,
                    event = self.events.recv() => self.handle_event(event)?,
                    report = self.reports.recv() => self.handle_report(report)?,
                    _ = self.stop.changed() => return Err(LockstepError::Interrupted),
                }
            };
            let timed = timed.map_err(|error| LockstepError::Agent { player: p, error })?;
            self.stats.inference.push(timed.took);
            actions[p] = timed.action;
        }
        Ok(actions)
    }

    /// Turns each AI action that took effect into commands (§5).
    fn dispatch_ai_actions(
        &mut self,
        actions: &[Action],
        outcome: &StepOutcome,
        inventories_before: &[crate::sim::inventory::Inventory],
        decided: Instant,
    ) -> Result<(), LockstepError> {
        let config = self.env.config().clone();
        for (p, controller) in self.controllers.iter().enumerate() {
            if !matches!(controller, Controller::Agent(_)) {
                continue;
            }
            let done = outcome.infos[p].action;
            debug!("player {p}: chose {:?}, took {:?}", actions[p], done);
            // Minecraft as it will be when this action's commands run.
            let predicted = self.detector.predicted_state();
            let mut instructions = Vec::new();
            let effect = match done.kind {
                ActionType::PlaceBlock | ActionType::BreakBlock => {
                    let Some(attempt) = self
                        .env
                        .place_break_attempts()
                        .iter()
                        .find(|a| a.player == PlayerId(p) && a.chosen.is_some())
                    else {
                        warn!("player {p}: no viewpoint recorded for its {:?}", done.kind);
                        continue;
                    };
                    let (_, _, candidate) = attempt.chosen.expect("found with a choice");
                    let cell = self.env.size().cell(done.location);
                    // The simulator decided on its own view, which can lag a
                    // person's change Minecraft already shows (their break is
                    // detected at the next observation). Clicking then would
                    // hit whatever lies behind: leave the cell as Minecraft has
                    // it, and the divergence checks reconcile the simulator.
                    let there = predicted.blocks.get(cell);
                    let overtaken = match attempt.kind {
                        Interaction::Break => there == BlockId::AIR,
                        Interaction::Place => there != BlockId::AIR,
                    };
                    if overtaken {
                        info!(
                            "player {p}: Minecraft already shows {there} at {cell:?}; not clicking its {:?}",
                            attempt.kind
                        );
                        continue;
                    }
                    // Cast through the world as Minecraft will have it when the
                    // click comes.
                    let aimed = aim::aim(
                        &predicted.blocks,
                        candidate.viewpoint,
                        candidate.click,
                        attempt.kind,
                        cell,
                        aim::CREATIVE_REACH,
                    );
                    if !aimed.checked {
                        // A click Minecraft would send elsewhere changes a second
                        // cell; not clicking leaves one difference, which the
                        // divergence checks repair.
                        info!(
                            "player {p}: no aim from {:?} reaches {cell:?} in Minecraft (the simulator clicks {:?}); not clicking its {:?}",
                            candidate.viewpoint, candidate.click, attempt.kind
                        );
                        continue;
                    }
                    debug!(
                        "player {p}: {:?} {cell:?} from eye {:?} at {:?}: yaw {:.3} pitch {:.3}",
                        attempt.kind, candidate.viewpoint, candidate.click, aimed.yaw, aimed.pitch,
                    );
                    let (yaw, pitch) = (aimed.yaw, aimed.pitch);
                    let place = PlaceBreak {
                        kind: done.kind,
                        block: done.block,
                        yaw,
                        pitch,
                        teleport_to: config.abilities.teleportation.then(|| candidate.feet()),
                    };
                    let source = if config.abilities.inf_blocks {
                        // Only on a view no running action is changing (the
                        // reference checks when the action starts, after the
                        // previous one has finished).
                        if self.running_ai == 0 {
                            let repairs = divergence::ai_inventory_repairs(
                                &config,
                                p,
                                &self.detector.state().players[p],
                            );
                            if !repairs.is_empty() {
                                warn!("player {p}'s block slots are out of order; repairing them");
                            }
                            instructions.extend(repairs);
                        }
                        PlaceSource::Infinite
                    } else {
                        let view = &self.detector.state().players[p];
                        let slots: Vec<(BlockId, i32)> =
                            view.inventory.iter().map(|s| (s.block, s.count)).collect();
                        let hotbar = rand::random::<u8>() % 9;
                        match commands::place_source(&slots, done.block, hotbar) {
                            Some(source) => source,
                            None if done.kind == ActionType::BreakBlock => PlaceSource::Hotbar(0),
                            None => {
                                warn!(
                                    "player {p}: Minecraft shows no {} in its inventory to place",
                                    done.block
                                );
                                continue;
                            }
                        }
                    };
                    instructions.extend(commands::place_break(&config, p, &place, source));
                    match attempt.kind {
                        Interaction::Place => AiEffect::Place {
                            cell,
                            block: done.block,
                        },
                        Interaction::Break => AiEffect::Break { cell },
                    }
                }
                ActionType::GiveBlock => {
                    let after = &self.env.state().inventories;
                    let recipient = (0..after.len()).find(|&r| {
                        r != p
                            && after[r].count(done.block) > inventories_before[r].count(done.block)
                    });
                    let Some(recipient) = recipient else {
                        warn!("player {p}: a give that changed no inventory");
                        continue;
                    };
                    let count = after[recipient].count(done.block)
                        - inventories_before[recipient].count(done.block);
                    instructions.extend(commands::give(&config, p, recipient, done.block, count));
                    AiEffect::Give {
                        recipient: PlayerId(recipient),
                        block: done.block,
                        count,
                    }
                }
                ActionType::Noop => continue,
                _ => {
                    let to = self.env.state().player_positions[p];
                    instructions.extend(commands::move_to(p, to));
                    AiEffect::Move { to }
                }
            };
            let diffs = expected_diffs(self.detector.config(), &predicted, PlayerId(p), effect);
            self.detector.expect(diffs);
            self.executor.submit(Job {
                kind: JobKind::AiAction { player: p, decided },
                instructions,
            })?;
            self.running_ai += 1;
        }
        Ok(())
    }

    /// The goal-completion title (§5.2), sent when the shown percentage changes
    /// (the reference sends it every step; at short step periods that would flood
    /// the chat channel with identical titles).
    fn update_title(&mut self) -> Result<(), LockstepError> {
        let pct = self.env.goal_percentage(0);
        let shown = (pct * 100.0) as i64;
        if self.last_title == Some(shown) {
            return Ok(());
        }
        self.last_title = Some(shown);
        let spectator = self
            .env
            .config()
            .malmo
            .use_spectator
            .then_some(self.env.num_players());
        let instructions = commands::goal_percentage(self.env.config(), pct, spectator);
        self.executor.submit(Job {
            kind: JobKind::Upkeep,
            instructions,
        })?;
        Ok(())
    }

    /// Waits until a human has a queued action or `until`, reading observations.
    async fn wait(&mut self, until: Instant) -> Result<(), LockstepError> {
        let deadline = tokio::time::sleep_until(until.into());
        tokio::pin!(deadline);
        while !self.any_human_queued() {
            tokio::select! {
                event = self.events.recv() => self.handle_event(event)?,
                report = self.reports.recv() => self.handle_report(report)?,
                _ = &mut deadline => break,
                _ = self.stop.changed() => return Err(LockstepError::Interrupted),
            }
        }
        Ok(())
    }

    fn any_human_queued(&self) -> bool {
        self.controllers.iter().enumerate().any(|(p, c)| {
            matches!(c, Controller::Minecraft) && self.detector.queued(PlayerId(p)).next().is_some()
        })
    }

    /// Compares and repairs what `scope` allows (§6, §8); returns the simulator
    /// edits made.
    fn sync(&mut self, scope: SyncScope) -> Result<SyncEdits, LockstepError> {
        let mut edits = SyncEdits::default();
        if self.running_ai > 0 && scope.narrowed() {
            self.stats.syncs_scoped += 1;
        }
        let report = divergence::compare(
            self.env.config(),
            self.env.goal(),
            self.env.state(),
            self.detector.state(),
            &scope,
        );
        if !report.is_empty() {
            self.stats.divergences += report.divergences.len() as u64;
            for d in &report.divergences {
                match d {
                    Divergence::HumanPosition { .. } => debug!("divergence: {d:?}"),
                    _ => warn!("divergence: {d:?}"),
                }
            }
            let mut state = self.env.state().clone();
            divergence::apply(&mut state, &report.repairs);
            let mut inventory_players: Vec<usize> = Vec::new();
            for repair in &report.repairs {
                match repair {
                    Repair::SetBlock { cell, block } => {
                        edits
                            .blocks
                            .push([cell.x, cell.y, cell.z, i32::from(block.0)]);
                        edits.block_states.push([cell.x, cell.y, cell.z, 0]);
                    }
                    Repair::SetSlot { player, .. } => {
                        if !inventory_players.contains(&player.0) {
                            inventory_players.push(player.0);
                        }
                    }
                    Repair::SetPosition { player, position } => {
                        edits
                            .pos
                            .push([player.0 as f64, position.x, position.y, position.z]);
                    }
                    Repair::Minecraft(instructions) => {
                        self.executor.submit(Job {
                            kind: JobKind::Upkeep,
                            instructions: instructions.clone(),
                        })?;
                    }
                }
            }
            // A player's repaired inventory is recorded once, as block counts.
            for &p in &inventory_players {
                let inv = &state.inventories[p];
                for b in 0..crate::sim::block::NUM_BLOCKS {
                    edits
                        .inv
                        .push([p as i32, b as i32, inv.count(BlockId(b as u8))]);
                }
            }
            self.env.set_state(state);
        }
        let positions: Vec<PlayerPos> = self.env.state().player_positions.clone();
        self.detector.sync_positions(&positions);
        Ok(edits)
    }

    async fn record(
        &mut self,
        actions: &[Action],
        outcome: &StepOutcome,
        sync: SyncEdits,
        publish: bool,
    ) -> Result<(), LockstepError> {
        let mut record = self.recorder.step(&self.env, actions, outcome);
        record.sync = (!sync.is_empty()).then_some(sync);
        if self.settings.keep_observations {
            let raw = std::mem::replace(&mut self.raw, vec![Vec::new(); self.env.num_players()]);
            record.obs = Some(json!(raw));
        }
        self.steps += 1;
        if let Some(writer) = &mut self.writer {
            writer.append(record).await?;
        }
        if !publish {
            // The last step: an emulated person must not act after the final sync.
            return Ok(());
        }
        let _ = self.progress.send(StepView {
            steps: self.steps,
            env: Arc::new(self.env.clone()),
            queued: (0..self.env.num_players())
                .map(|p| self.detector.queued(PlayerId(p)).count())
                .collect(),
            closing: false,
        });
        Ok(())
    }

    fn handle_event(&mut self, event: Option<RoleEvent>) -> Result<(), LockstepError> {
        let Some(event) = event else {
            return Err(LockstepError::AllRolesGone);
        };
        match event {
            RoleEvent::Observation {
                role,
                received,
                arrived,
                observation,
                raw,
            } => {
                self.stats.observations += 1;
                if role >= self.env.num_players() {
                    return Ok(());
                }
                if let Some(raw) = raw {
                    let t = received
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_secs_f64());
                    self.raw[role].push(json!([t, raw]));
                }
                match self.detector.observe(PlayerId(role), &observation) {
                    // The set-up's teleports and gifts are not human actions.
                    Ok(_) if !self.detecting => {}
                    Ok(found) => {
                        for a in &found {
                            debug!("player {}: detected {:?}", a.player.0, a.action);
                        }
                        self.stats.human_actions += found
                            .iter()
                            .filter(|a| {
                                matches!(self.controllers[a.player.0], Controller::Minecraft)
                            })
                            .count() as u64;
                    }
                    Err(e) => {
                        warn!("player {role}: observation skipped: {e}");
                        self.stats.undecodable += 1;
                    }
                }
                if self.stats.observation_to_update.len() < MAX_LATENCY_SAMPLES {
                    self.stats.observation_to_update.push(arrived.elapsed());
                }
                let view = &self.detector.state().players[role];
                let due = self.missing.check(
                    self.env.config(),
                    role,
                    view,
                    &self.always_have[role],
                    self.epoch.elapsed(),
                );
                self.executor.submit(Job {
                    kind: JobKind::Upkeep,
                    instructions: due,
                })?;
                Ok(())
            }
            RoleEvent::Undecodable { role, error } => {
                warn!("player {role}: an observation could not be read and is skipped: {error}");
                self.stats.undecodable += 1;
                Ok(())
            }
            RoleEvent::Ended { role, status } => {
                Err(LockstepError::MinecraftEnded { role, status })
            }
            RoleEvent::Lost { role, error } => Err(LockstepError::MinecraftLost { role, error }),
        }
    }

    fn handle_report(&mut self, report: Option<ExecutorReport>) -> Result<(), LockstepError> {
        match report {
            Some(ExecutorReport::AiActionDone {
                player,
                to_first_command,
            }) => {
                self.running_ai = self.running_ai.saturating_sub(1);
                if let Some(d) = to_first_command {
                    self.stats.decision_to_command.push(d);
                }
                if self.running_ai == 0 {
                    for diff in self.detector.take_unseen_expected() {
                        self.stats.unseen_expected += 1;
                        warn!("player {player}'s action: expected {diff:?} in Minecraft, not seen");
                    }
                }
                Ok(())
            }
            Some(ExecutorReport::SetupDone) => Ok(()),
            Some(ExecutorReport::Failed(gone)) => Err(gone.into()),
            None => Err(LockstepError::AllRolesGone),
        }
    }

    /// Ends the loop's helpers: waits for queued commands, then hands back the
    /// controllers (their agent threads are joined by the caller off the async
    /// runtime).
    pub async fn close(self) -> Vec<Controller> {
        self.executor.finish().await;
        self.controllers
    }
}
