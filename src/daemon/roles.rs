//! One task per Minecraft role: it owns the role's [`AgentMission`], writes the
//! commands it is handed and forwards decoded observations to the lockstep loop.
//!
//! A role task never waits on the lockstep loop except to hand over an event on a
//! bounded channel, and the loop drains that channel continually, so a slow
//! decision cannot stall the sockets. Commands come from the executor, never
//! from the loop directly (the loop would otherwise wait on a role that waits on
//! the loop).

use std::time::{Instant, SystemTime};

use malmo_bridge::agent::{AgentError, AgentMission, MissionEvent};
use malmo_bridge::command::Command;
use malmo_bridge::decoded::{DecodeError, DecodedObservation};
use malmo_bridge::mission_ended::MissionEndedStatus;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// How many commands may wait for a role's socket.
const COMMAND_CAPACITY: usize = 256;

/// What a role task reports to the lockstep loop.
#[derive(Debug)]
pub enum RoleEvent {
    /// An observation, decoded.
    Observation {
        /// The role (player index; the spectator is `num_players`).
        role: usize,
        /// When the frame arrived on its socket (wall clock).
        received: SystemTime,
        /// When the frame arrived on its socket (monotonic), for latencies.
        arrived: Instant,
        /// The observation.
        observation: Box<DecodedObservation>,
        /// The JSON text, when the loop keeps raw observations.
        raw: Option<String>,
    },
    /// An observation that could not be read (it is skipped).
    Undecodable {
        /// The role.
        role: usize,
        /// Why.
        error: DecodeError,
    },
    /// Minecraft ended the role's mission normally.
    Ended {
        /// The role.
        role: usize,
        /// Its status.
        status: MissionEndedStatus,
    },
    /// The role's connection failed (Minecraft died, hung or sent garbage).
    Lost {
        /// The role.
        role: usize,
        /// What happened.
        error: AgentError,
    },
}

enum Request {
    Send(Command),
    /// Send, then report when the command was written to the socket.
    SendConfirmed(Command, oneshot::Sender<Instant>),
    Quit(oneshot::Sender<Result<MissionEndedStatus, AgentError>>),
}

/// The handle the executor and the loop keep for one role task.
#[derive(Debug)]
pub struct RoleHandle {
    role: usize,
    requests: mpsc::Sender<Request>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Send(c) | Self::SendConfirmed(c, _) => write!(f, "Send({c})"),
            Self::Quit(_) => f.write_str("Quit"),
        }
    }
}

/// Sends commands to one role's task.
#[derive(Clone, Debug)]
pub struct RoleSender {
    role: usize,
    requests: mpsc::Sender<Request>,
}

impl RoleSender {
    /// Queues `command` for the role's commands connection.
    pub async fn send(&self, command: Command) -> Result<(), RoleGone> {
        self.requests
            .send(Request::Send(command))
            .await
            .map_err(|_| RoleGone(self.role))
    }

    /// Sends `command` and waits until it has been written to the socket;
    /// returns when that was.
    pub async fn send_confirmed(&self, command: Command) -> Result<Instant, RoleGone> {
        let (written, when) = oneshot::channel();
        self.requests
            .send(Request::SendConfirmed(command, written))
            .await
            .map_err(|_| RoleGone(self.role))?;
        when.await.map_err(|_| RoleGone(self.role))
    }
}

/// A role's task has stopped (its connection failed or the mission ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("role {0} no longer takes commands (its Minecraft connection has closed)")]
pub struct RoleGone(pub usize);

impl RoleHandle {
    /// Starts the task for `mission`, reporting to `events`. With `keep_raw`,
    /// observations carry their JSON text.
    pub fn spawn(mission: AgentMission, events: mpsc::Sender<RoleEvent>, keep_raw: bool) -> Self {
        let role = mission.role();
        let (requests, inbox) = mpsc::channel(COMMAND_CAPACITY);
        let task = tokio::spawn(serve(mission, inbox, events, keep_raw));
        Self {
            role,
            requests,
            task,
        }
    }

    /// The role index.
    pub fn role(&self) -> usize {
        self.role
    }

    /// A sender of commands to this role, for the executor.
    pub fn sender(&self) -> RoleSender {
        RoleSender {
            role: self.role,
            requests: self.requests.clone(),
        }
    }

    /// Quits the mission (after the commands queued before) and waits for its
    /// MissionEnded. The task ends afterwards.
    pub async fn quit(self) -> Result<MissionEndedStatus, AgentError> {
        let (reply, answer) = oneshot::channel();
        let gone = || AgentError::ClientLost {
            role: self.role,
            reason: "the role's connection had already closed".into(),
        };
        if self.requests.send(Request::Quit(reply)).await.is_err() {
            return Err(gone());
        }
        let status = answer.await.unwrap_or_else(|_| Err(gone()));
        let _ = self.task.await;
        status
    }

    /// Stops the task without quitting (the connection is dropped).
    pub fn abort(self) {
        self.task.abort();
    }
}

async fn serve(
    mut mission: AgentMission,
    mut inbox: mpsc::Receiver<Request>,
    events: mpsc::Sender<RoleEvent>,
    keep_raw: bool,
) {
    let role = mission.role();
    // Whether the episode loop still takes events. It stops before the roles
    // quit, and Minecraft keeps sending observations until then: those are
    // dropped, and the task stays to answer the quit.
    let mut listening = true;
    loop {
        // `next_event` is cancel-safe: it only awaits the listeners' channel.
        let event = tokio::select! {
            request = inbox.recv() => {
                match request {
                    Some(Request::Send(command)) => {
                        if let Err(error) = mission.send(&command).await {
                            let reason = error.to_string();
                            let _ = events.send(RoleEvent::Lost { role, error }).await;
                            drain_quit(inbox, Err(reason), role).await;
                            return;
                        }
                    }
                    Some(Request::SendConfirmed(command, written)) => {
                        if let Err(error) = mission.send(&command).await {
                            let reason = error.to_string();
                            let _ = events.send(RoleEvent::Lost { role, error }).await;
                            drain_quit(inbox, Err(reason), role).await;
                            return;
                        }
                        let _ = written.send(Instant::now());
                    }
                    Some(Request::Quit(reply)) => {
                        let _ = reply.send(mission.quit().await);
                        return;
                    }
                    None => return,
                }
                continue;
            }
            event = mission.next_event() => event,
        };
        let report = match event {
            Ok(MissionEvent::Observation {
                received,
                arrived,
                json,
            }) => match DecodedObservation::decode(json.as_bytes()) {
                Ok(observation) => RoleEvent::Observation {
                    role,
                    received,
                    arrived,
                    observation: Box::new(observation),
                    raw: keep_raw.then_some(json),
                },
                Err(error) => RoleEvent::Undecodable { role, error },
            },
            Ok(MissionEvent::Ended(ended)) => {
                let status = ended.status;
                let _ = events.send(RoleEvent::Ended { role, status }).await;
                drain_quit(inbox, Ok(status), role).await;
                return;
            }
            Ok(MissionEvent::Ping | MissionEvent::Reward(_) | MissionEvent::VideoFrame(_)) => {
                continue;
            }
            Err(error) => {
                let reason = error.to_string();
                let _ = events.send(RoleEvent::Lost { role, error }).await;
                drain_quit(inbox, Err(reason), role).await;
                return;
            }
        };
        if listening && events.send(report).await.is_err() {
            listening = false;
        }
    }
}

/// After the mission ended on its own, answers a later quit with how it ended
/// instead of leaving the quitter waiting; commands sent meanwhile are dropped.
async fn drain_quit(
    mut inbox: mpsc::Receiver<Request>,
    ended: Result<MissionEndedStatus, String>,
    role: usize,
) {
    while let Some(request) = inbox.recv().await {
        if let Request::Quit(reply) = request {
            let _ = reply.send(ended.map_err(|reason| AgentError::ClientLost { role, reason }));
            return;
        }
    }
}
