//! The one place the lockstep loop waits ([`Lockstep::pump`]): every phase of a
//! step reads observations and executor reports through it, so no phase can
//! leave the sockets unread or miss the operator's stop.

use std::future::{Future, pending};
use std::time::{Duration, Instant};

use log::warn;

use super::{END_SETTLE_LIMIT, Lockstep, LockstepError};
use crate::daemon::executor::{ExecutorReport, Job, JobKind};
use crate::daemon::roles::RoleEvent;

/// What a [`Lockstep::pump`] waits for, besides its deadline and answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Until {
    /// Only the deadline or the answer.
    Deadline,
    /// No AI action is running.
    AiIdle,
    /// No person holds a mouse button.
    ButtonsReleased,
    /// A person has an action queued.
    HumanQueued,
    /// The executor finished the set-up job.
    SetupDone,
}

/// How a pump ended.
pub(super) enum Pumped<T> {
    /// Its condition holds.
    Reached,
    /// Its deadline passed.
    Deadline,
    /// Its answer came.
    Answered(T),
}

impl Lockstep {
    /// The one place the loop waits: reads observations, executor reports and,
    /// when given, `answer`, until `until` holds, `deadline` passes or `answer`
    /// resolves. Everything the loop waits for goes through here, so no phase
    /// can leave the sockets unread or miss the operator's stop.
    pub(super) async fn pump<F: Future>(
        &mut self,
        until: Until,
        deadline: Option<Instant>,
        answer: F,
    ) -> Result<Pumped<F::Output>, LockstepError> {
        let timed = deadline.is_some();
        let deadline = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now).into());
        tokio::pin!(deadline, answer);
        loop {
            if self.holds(until) {
                return Ok(Pumped::Reached);
            }
            tokio::select! {
                out = &mut answer => return Ok(Pumped::Answered(out)),
                event = self.events.recv() => self.handle_event(event)?,
                report = self.reports.recv() => self.handle_report(report)?,
                _ = &mut deadline, if timed => return Ok(Pumped::Deadline),
                _ = self.stop.changed() => return Err(LockstepError::Interrupted),
            }
        }
    }

    fn holds(&self, until: Until) -> bool {
        match until {
            Until::Deadline => false,
            Until::AiIdle => self.running_ai == 0,
            Until::ButtonsReleased => !self.view.any_human_button_held(),
            Until::HumanQueued => self.view.any_human_queued(),
            Until::SetupDone => self.setup_done,
        }
    }

    /// Reads observations and reports for `duration`.
    pub(super) async fn read_for(&mut self, duration: Duration) -> Result<(), LockstepError> {
        let until = Instant::now() + duration;
        self.pump(Until::Deadline, Some(until), pending::<()>())
            .await
            .map(drop)
    }

    /// Pumps until `until`, at most [`END_SETTLE_LIMIT`] (then warns with `what`
    /// and goes on).
    pub(super) async fn settle(&mut self, until: Until, what: &str) -> Result<(), LockstepError> {
        let limit = Instant::now() + END_SETTLE_LIMIT;
        if let Pumped::Deadline = self.pump(until, Some(limit), pending::<()>()).await? {
            warn!("{what} after {END_SETTLE_LIMIT:?}; going on");
        }
        Ok(())
    }

    fn handle_event(&mut self, event: Option<RoleEvent>) -> Result<(), LockstepError> {
        let due = self.view.read(self.env.config(), event, &mut self.stats)?;
        if !due.is_empty() {
            self.executor.submit(Job {
                kind: JobKind::Upkeep,
                instructions: due,
            })?;
        }
        self.relay_minecraft_chat();
        Ok(())
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
                    for diff in self.view.detector_mut().take_unseen_expected() {
                        self.stats.unseen_expected += 1;
                        warn!("player {player}'s action: expected {diff:?} in Minecraft, not seen");
                    }
                }
                Ok(())
            }
            Some(ExecutorReport::SetupDone) => {
                self.setup_done = true;
                Ok(())
            }
            Some(ExecutorReport::Failed(gone)) => Err(gone.into()),
            None => Err(LockstepError::AllRolesGone),
        }
    }
}
