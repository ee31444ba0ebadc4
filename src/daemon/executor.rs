//! The executor: one task that carries out command sequences
//! ([`Instruction`]s) one after another, as the reference's AI-action thread runs
//! its queue serially (MBAG_INTEGRATION.md §5).
//!
//! AI actions are reported back when done, 0.2 s after their last command (the
//! reference's grace before it warns about expected diffs never seen), so the
//! loop knows when an AI action is no longer running and may sync.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::roles::{RoleGone, RoleSender};
use super::seam::commands::Instruction;

/// How many jobs may wait; the loop queues a few per step.
const JOB_CAPACITY: usize = 256;

/// The reference sleeps this long after every command it sends.
const AFTER_COMMAND: Duration = Duration::from_millis(10);

/// How long after an AI action's commands its effects are still expected.
pub const AI_ACTION_GRACE: Duration = Duration::from_millis(200);

/// What a job is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// An AI player's action; reported back when done.
    AiAction {
        /// The acting player.
        player: usize,
        /// When the action was decided (for latency figures).
        decided: Instant,
    },
    /// The mission's set-up; reported back when done.
    Setup,
    /// Repairs, titles, gifts: nobody waits for them.
    Upkeep,
}

/// A sequence of instructions to carry out.
#[derive(Clone, Debug)]
pub struct Job {
    /// What it is for.
    pub kind: JobKind,
    /// The instructions, in order.
    pub instructions: Vec<Instruction>,
}

/// What the executor reports.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecutorReport {
    /// An AI action's commands have all been sent and its grace has passed.
    AiActionDone {
        /// The player.
        player: usize,
        /// From the decision (or, if the action queued behind earlier ones, from
        /// the start of its turn) to its first command written to the socket
        /// (`None` for an action without commands).
        to_first_command: Option<Duration>,
    },
    /// The set-up commands have all been sent.
    SetupDone,
    /// A command could not be sent: the role's connection has closed.
    Failed(RoleGone),
}

/// The executor could not take another job (its queue is full or it has stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the command executor is {0}")]
pub struct ExecutorUnavailable(&'static str);

/// The handle of the executor task.
#[derive(Debug)]
pub struct Executor {
    jobs: mpsc::Sender<Job>,
    task: JoinHandle<()>,
}

impl Executor {
    /// Starts the executor over the roles' senders (indexed by agent), reporting
    /// to `reports`.
    pub fn spawn(roles: Vec<RoleSender>, reports: mpsc::Sender<ExecutorReport>) -> Self {
        let (jobs, inbox) = mpsc::channel(JOB_CAPACITY);
        let task = tokio::spawn(run(roles, inbox, reports));
        Self { jobs, task }
    }

    /// Queues a job without waiting. A full queue means Minecraft has stopped
    /// taking commands for a long time, which the caller treats as a failure.
    pub fn submit(&self, job: Job) -> Result<(), ExecutorUnavailable> {
        if job.instructions.is_empty() && job.kind == JobKind::Upkeep {
            return Ok(());
        }
        self.jobs.try_send(job).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => ExecutorUnavailable("backed up"),
            mpsc::error::TrySendError::Closed(_) => ExecutorUnavailable("stopped"),
        })
    }

    /// Finishes the queued jobs, then stops.
    pub async fn finish(self) {
        drop(self.jobs);
        let _ = self.task.await;
    }

    /// Stops at once, dropping queued jobs.
    pub fn abort(self) {
        self.task.abort();
    }
}

async fn run(
    roles: Vec<RoleSender>,
    mut inbox: mpsc::Receiver<Job>,
    reports: mpsc::Sender<ExecutorReport>,
) {
    while let Some(job) = inbox.recv().await {
        // An AI action waits here behind the sleeps of earlier ones (the
        // reference's serial queue); that wait is Malmo's pacing, not the
        // daemon's latency, so the clock starts when the job does.
        let started = Instant::now();
        let mut first: Option<Duration> = None;
        let mut failed = None;
        for instruction in job.instructions {
            match instruction {
                Instruction::Sleep(d) => tokio::time::sleep(d).await,
                Instruction::Send { agent, command } => {
                    let Some(role) = roles.get(agent) else {
                        log::error!("a command for agent {agent}, which has no role: {command}");
                        continue;
                    };
                    let sent = match (job.kind, first) {
                        // The first command of an AI action is timed to the wire.
                        (JobKind::AiAction { decided, .. }, None) => {
                            role.send_confirmed(command).await.map(|written| {
                                first =
                                    Some(written.saturating_duration_since(decided.max(started)));
                            })
                        }
                        _ => role.send(command).await,
                    };
                    if let Err(gone) = sent {
                        failed = Some(gone);
                        break;
                    }
                    tokio::time::sleep(AFTER_COMMAND).await;
                }
            }
        }
        if let Some(gone) = failed {
            let _ = reports.send(ExecutorReport::Failed(gone)).await;
        }
        if job.kind == JobKind::Setup && reports.send(ExecutorReport::SetupDone).await.is_err() {
            return;
        }
        if let JobKind::AiAction { player, .. } = job.kind {
            tokio::time::sleep(AI_ACTION_GRACE).await;
            let report = ExecutorReport::AiActionDone {
                player,
                to_first_command: first,
            };
            if reports.send(report).await.is_err() {
                return;
            }
        }
    }
}
