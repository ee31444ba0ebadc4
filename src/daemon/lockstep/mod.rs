//! The lockstep loop: the simulator stepped in time with a running Minecraft
//! mission (MBAG_INTEGRATION.md §6).
//!
//! One task runs the loop. Each step:
//!
//! 1. takes each human player's next detected action (NOOP if none) and asks
//!    each agent's thread for its action on the simulator's observation
//!    ([`agents`]);
//! 2. steps the simulator; each AI action that took effect becomes commands
//!    for the [`Executor`](crate::daemon::executor::Executor) and expected
//!    changes for the detector, both from the pure
//!    [`translate`](crate::daemon::translate::translate);
//! 3. waits until a human acts or the step period has passed since the previous
//!    step ended;
//! 4. compares the simulator with Minecraft and applies the one
//!    [`Repair`] of what differs ([`divergence`]; leaving out what AI actions in
//!    flight still change) with [`apply_sync`], the function every replay
//!    uses, and records the step with the edits it applied.
//!
//! With chat on ([`chat`]), people's messages read from Minecraft meanwhile are
//! passed to the agents with their next request, and what an agent says after
//! its move is sent as its chat command; both are recorded in the step line.
//!
//! Every wait goes through one [`pump`](Lockstep::pump), which hands each
//! observation to the [`MinecraftView`] whatever the loop is waiting for, so
//! inference never holds up the sockets; agents run on their own threads
//! ([`AgentThread`](crate::daemon::agent_thread::AgentThread)), file writes on
//! the [`RecorderThread`].

use std::future::pending;
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{debug, info, warn};
use serde_json::json;
use tokio::sync::{mpsc, watch};

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::chat::{ChatLog, ChatRelay};
use super::divergence::{self, Divergence, Repair, SyncScope};
use super::executor::{Executor, ExecutorReport, Job, JobKind};
use super::recorder::RecorderThread;
use super::roles::RoleEvent;
use super::seam::commands::{self, Instruction};
use super::view::MinecraftView;
use crate::agents::explain::Explanation;
use crate::recording::ExplainRecord;
use crate::recording::{EndReason, EndRecord, EpisodeRecorder, SyncEdits, apply_sync};
use crate::sim::action::Action;
use crate::sim::env::{Env, StepOutcome};

mod agents;
mod chat;
mod interface;
mod pump;

pub use interface::{
    Controller, LockstepError, LockstepParts, LockstepSettings, LoopEnd, LoopStats, StepView,
};
use pump::Until;

/// The longest the end of an episode waits for AI actions in flight.
const END_SETTLE_LIMIT: Duration = Duration::from_secs(60);

/// The lockstep loop of one episode.
#[derive(Debug)]
pub struct Lockstep {
    env: Env,
    view: MinecraftView,
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
    last_title: Option<i64>,
    steps: u64,
    /// Whether the executor reported the last set-up job done.
    setup_done: bool,
    /// Chooses the hotbar slot of a finite-blocks place, as the reference does.
    rng: SmallRng,
    /// The seats' messages, with chat on.
    chat: Option<ChatRelay>,
    /// Per player, the agent's account of its last move, for the step line.
    explained: Vec<Option<Explanation>>,
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
        let n = env.num_players();
        let humans: Vec<bool> = controllers
            .iter()
            .map(|c| matches!(c, Controller::Minecraft))
            .collect();
        let agents: Vec<bool> = humans.iter().map(|&h| !h).collect();
        let chat = settings
            .chat
            .enabled
            .then(|| ChatRelay::new(settings.chat.parser.clone(), &agents));
        let view = MinecraftView::new(&env, humans, settings.chat.enabled);
        let (progress, steps) = watch::channel(StepView {
            steps: 0,
            env: Arc::new(env.clone()),
            queued: vec![0; n],
            closing: false,
            chat: ChatLog::default(),
        });
        (
            Self {
                env,
                view,
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
                last_title: None,
                steps: 0,
                setup_done: false,
                rng: SmallRng::from_os_rng(),
                chat,
                explained: vec![None; n],
            },
            steps,
        )
    }

    /// The measurements so far.
    pub fn stats(&self) -> LoopStats {
        LoopStats {
            attributed_by_mod: self.view.detector().attributed_by_mod(),
            human_actions_dropped: self.view.detector().dropped_actions(),
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
                let scope = SyncScope::new(self.view.detector());
                self.sync(scope)?
            };
            self.record(&actions, &outcome, sync, !last).await?;
            if outcome.done {
                return Ok(EndReason::Done);
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
        self.settle(Until::AiIdle, "AI actions are still running")
            .await
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
        self.settle(
            Until::ButtonsReleased,
            "a person still holds a button at the end of the episode",
        )
        .await?;
        self.read_for(self.settings.settle).await
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
                let repairs = self.view.agent_slot_repairs(&config);
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
        self.view.start_detecting(&self.env);
        info!("set-up done; the episode starts");
        Ok(())
    }

    /// Runs set-up instructions to their end, then lets observations settle.
    async fn run_setup_job(&mut self, instructions: Vec<Instruction>) -> Result<(), LockstepError> {
        self.setup_done = false;
        self.executor.submit(Job {
            kind: JobKind::Setup,
            instructions,
        })?;
        self.pump(Until::SetupDone, None, pending::<()>()).await?;
        self.read_for(self.settings.settle).await
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
        self.pump(Until::HumanQueued, Some(until), pending::<()>())
            .await
            .map(drop)
    }

    /// Compares and repairs what `scope` allows (§6, §8); returns the simulator
    /// edits made, which are what the step records.
    fn sync(&mut self, scope: SyncScope) -> Result<SyncEdits, LockstepError> {
        if self.running_ai > 0 && scope.narrowed() {
            self.stats.syncs_scoped += 1;
        }
        let report = divergence::compare(
            self.env.config(),
            self.env.goal(),
            self.env.state(),
            self.view.state(),
            &scope,
        );
        self.stats.divergences += report.divergences.len() as u64;
        for d in &report.divergences {
            match d {
                Divergence::HumanPosition { .. } => debug!("divergence: {d:?}"),
                _ => warn!("divergence: {d:?}"),
            }
        }
        let Repair {
            simulator,
            minecraft,
        } = report.repair;
        if !minecraft.is_empty() {
            self.executor.submit(Job {
                kind: JobKind::Upkeep,
                instructions: minecraft,
            })?;
        }
        if !simulator.is_empty() {
            let mut state = self.env.state().clone();
            apply_sync(&mut state, &simulator).map_err(LockstepError::Repair)?;
            self.env.set_state(state);
        }
        self.view
            .detector_mut()
            .sync_positions(&self.env.state().player_positions);
        Ok(simulator)
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
        record.chat = self.chat.as_mut().and_then(ChatRelay::take_records);
        let size = self.env.size();
        let explained: Vec<Option<ExplainRecord>> = self
            .explained
            .iter_mut()
            .map(|e| e.take().map(|e| ExplainRecord::of(&e, size)))
            .collect();
        record.explain = explained.iter().any(Option::is_some).then_some(explained);
        if self.settings.keep_observations {
            record.obs = Some(json!(self.view.take_raw()));
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
            queued: self.view.queued(),
            closing: false,
            chat: self.chat.as_ref().map(ChatRelay::log).unwrap_or_default(),
        });
        Ok(())
    }

    /// Ends the loop's helpers: waits for queued commands, then hands back the
    /// controllers (their agent threads are joined by the caller off the async
    /// runtime).
    pub async fn close(self) -> Vec<Controller> {
        self.executor.finish().await;
        self.controllers
    }
}
