//! Role 0's integrated server: one task owns a mission's [`World`] and serves
//! every client of the mission through one bounded request channel, so the world
//! is changed in one place and no lock is ever held across an await.
//!
//! The server also holds a bound TCP listener as its "LAN" port, so the number in
//! `MALMOS<address>:<port>` is a real, unique port; nothing connects to it, since
//! the clients of one emulator share the world in memory.

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};

use crate::mission::Mission;
use crate::mod_patch::ModFlavour;

use super::Tasks;
use super::blocks::McBlock;
use super::commands::Outcome;
use super::human::{HumanAction, HumanError, ScriptedHuman};
use super::world::{PlayerSnapshot, World};

/// Requests that may wait for the server; the clients tick at 20 Hz each, so this
/// holds several ticks of every client of a large mission.
const REQUEST_CAPACITY: usize = 256;

/// What a client asks of the server.
#[derive(Debug)]
pub(crate) enum WorldRequest {
    /// The client of `role` has joined.
    Join { role: usize },
    /// One client tick: run these commands, then build the observation.
    Tick {
        role: usize,
        commands: Vec<String>,
        reply: oneshot::Sender<TickOutcome>,
    },
    /// The agent of `role` is done (quit, or its client or agent went away).
    Finish { role: usize },
    /// A scripted human's action.
    Human {
        name: String,
        action: HumanAction,
        reply: oneshot::Sender<Result<(), HumanError>>,
    },
    /// Answer once the named player's client has ticked `ticks` more times.
    AwaitTicks {
        name: String,
        ticks: u32,
        reply: oneshot::Sender<Result<(), HumanError>>,
    },
    /// The block at a cell.
    Block {
        pos: [i32; 3],
        reply: oneshot::Sender<McBlock>,
    },
    /// A player's state.
    Player {
        name: String,
        reply: oneshot::Sender<Option<PlayerSnapshot>>,
    },
}

/// What one tick produced for a client.
#[derive(Debug)]
pub(crate) struct TickOutcome {
    /// The observation to send, if the agent still observes.
    pub observation: Option<String>,
    /// This tick ran the agent's `quit`.
    pub quit: bool,
}

/// The world's channel closed: the server has stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the mission's server has stopped")]
pub struct ServerGone;

/// A handle on a running mission's server.
#[derive(Clone, Debug)]
pub struct WorldHandle {
    tx: mpsc::Sender<WorldRequest>,
    started: watch::Receiver<bool>,
    ended: watch::Receiver<bool>,
    experiment_id: String,
    port: u16,
}

impl WorldHandle {
    /// The mission's experiment id.
    pub fn experiment_id(&self) -> &str {
        &self.experiment_id
    }

    /// The server's LAN port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether every role has joined and the mission runs.
    pub fn has_started(&self) -> bool {
        *self.started.borrow()
    }

    /// Whether every agent has finished.
    pub fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    pub(crate) async fn request(&self, request: WorldRequest) -> Result<(), ServerGone> {
        self.tx.send(request).await.map_err(|_| ServerGone)
    }

    /// The Minecraft name of the block at a cell (`air`, `grass`, `planks`, …).
    pub async fn block(&self, pos: [i32; 3]) -> Result<&'static str, ServerGone> {
        let (reply, rx) = oneshot::channel();
        self.request(WorldRequest::Block { pos, reply }).await?;
        Ok(rx.await.map_err(|_| ServerGone)?.name())
    }

    /// A copy of the named player's state.
    pub async fn player(&self, name: &str) -> Result<Option<PlayerSnapshot>, ServerGone> {
        let (reply, rx) = oneshot::channel();
        let name = name.to_owned();
        self.request(WorldRequest::Player { name, reply }).await?;
        rx.await.map_err(|_| ServerGone)
    }

    /// A scripted human acting as the named player.
    pub fn human(&self, name: &str) -> ScriptedHuman {
        ScriptedHuman::new(name, self.clone())
    }

    /// Waits until every role has joined.
    pub(crate) async fn wait_started(&mut self) -> Result<(), ServerGone> {
        self.started
            .wait_for(|s| *s)
            .await
            .map(|_| ())
            .map_err(|_| ServerGone)
    }

    /// Runs one tick for `role`.
    pub(crate) async fn tick(
        &self,
        role: usize,
        commands: Vec<String>,
    ) -> Result<TickOutcome, ServerGone> {
        let (reply, rx) = oneshot::channel();
        self.request(WorldRequest::Tick {
            role,
            commands,
            reply,
        })
        .await?;
        rx.await.map_err(|_| ServerGone)
    }

    /// A receiver that turns true once every agent has finished.
    pub(crate) fn ended(&self) -> watch::Receiver<bool> {
        self.ended.clone()
    }
}

/// Builds the mission's world and starts its server task.
pub(crate) fn spawn(
    mission: &Mission,
    experiment_id: &str,
    lan: TcpListener,
    port: u16,
    tasks: &Tasks,
    flavour: ModFlavour,
) -> WorldHandle {
    let (tx, rx) = mpsc::channel(REQUEST_CAPACITY);
    let (started_tx, started) = watch::channel(false);
    let (ended_tx, ended) = watch::channel(false);
    let world = World::from_mission(mission).with_mod_flavour(flavour);
    tasks.spawn(serve(world, rx, started_tx, ended_tx, lan));
    WorldHandle {
        tx,
        started,
        ended,
        experiment_id: experiment_id.to_owned(),
        port,
    }
}

/// Serves requests until every handle is gone.
async fn serve(
    mut world: World,
    mut rx: mpsc::Receiver<WorldRequest>,
    started: watch::Sender<bool>,
    ended: watch::Sender<bool>,
    lan: TcpListener,
) {
    let mut waiters: Vec<TickWaiter> = Vec::new();
    while let Some(request) = rx.recv().await {
        match request {
            WorldRequest::Join { role } => {
                world.players[role].joined = true;
                if world.players.iter().all(|p| p.joined) {
                    log::info!(
                        "all {} roles joined; the mission starts",
                        world.players.len()
                    );
                    started.send_replace(true);
                }
            }
            WorldRequest::Tick {
                role,
                commands,
                reply,
            } => {
                let mut quit = false;
                let observation = if world.players[role].finished {
                    None
                } else {
                    for line in &commands {
                        if world.execute(role, line) == Outcome::Quit {
                            quit = true;
                            // Commands after `quit` in the same tick are not run.
                            break;
                        }
                    }
                    world.observe(role)
                };
                if quit {
                    finish(&mut world, role, &ended);
                }
                let _ = reply.send(TickOutcome { observation, quit });
                wake(&world, role, &mut waiters);
            }
            WorldRequest::Finish { role } => {
                finish(&mut world, role, &ended);
                wake(&world, role, &mut waiters);
            }
            WorldRequest::AwaitTicks { name, ticks, reply } => match world.role_of(&name) {
                None => {
                    let _ = reply.send(Err(HumanError::NoSuchPlayer(name)));
                }
                Some(role) if world.players[role].finished => {
                    let _ = reply.send(Err(HumanError::WorldGone));
                }
                Some(role) => {
                    waiters.push((role, world.players[role].ticks + i64::from(ticks), reply));
                    wake(&world, role, &mut waiters);
                }
            },
            WorldRequest::Human {
                name,
                action,
                reply,
            } => {
                let _ = reply.send(world.human_act(&name, action));
            }
            WorldRequest::Block { pos, reply } => {
                let _ = reply.send(world.block(pos));
            }
            WorldRequest::Player { name, reply } => {
                let _ = reply.send(world.role_of(&name).and_then(|r| world.snapshot(r)));
            }
        }
    }
    drop(lan);
}

/// A scripted human waiting for its client's ticks: the role, the tick to
/// wait for, and where to answer.
type TickWaiter = (usize, i64, oneshot::Sender<Result<(), HumanError>>);

/// Answers the waiters of `role` whose tick has come, and every one of them if
/// the role has finished (its client ticks no more).
fn wake(world: &World, role: usize, waiters: &mut Vec<TickWaiter>) {
    let player = &world.players[role];
    let mut k = 0;
    while k < waiters.len() {
        let (r, tick, _) = &waiters[k];
        if *r == role && (player.finished || player.ticks >= *tick) {
            let (_, _, reply) = waiters.swap_remove(k);
            let answer = if player.finished {
                Err(HumanError::WorldGone)
            } else {
                Ok(())
            };
            let _ = reply.send(answer);
        } else {
            k += 1;
        }
    }
}

fn finish(world: &mut World, role: usize, ended: &watch::Sender<bool>) {
    if std::mem::replace(&mut world.players[role].finished, true) {
        return;
    }
    log::info!("{} (role {role}) has finished", world.players[role].name);
    if world.players.iter().all(|p| p.finished) {
        log::info!("all agents finished; the mission ends");
        ended.send_replace(true);
    }
}
