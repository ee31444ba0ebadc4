//! A Minecraft stand-in: N emulated clients running the MBAG fork of the Malmo
//! mod, as seen from the wire, so that any Malmo agent (ours, or MalmoPython) can
//! run missions without Minecraft.
//!
//! # Layout
//!
//! * [`client`]: one client's mission-control port and its replies (PROTOCOL.md
//!   §3.3: reservations, `MALMO_FIND_SERVER`, `MALMO_KILL_CLIENT`, MissionInit
//!   validation), written one byte per write if asked, as the mod writes them.
//! * `session`: one client's part of a mission: the connection to the agent's
//!   mission-control port and its pings, world creation (role 0) or joining
//!   (roles > 0), the MissionInit echo, the observation and reward connections,
//!   the commands port, and the end (MissionEnded).
//! * [`server`]: role 0's integrated server, one task owning the mission's
//!   [`world::World`]; [`commands`] and `server_commands` execute what agents
//!   send, `observe` writes observations in the mod's JSON (via [`json`]), and
//!   [`ray`] casts the line of sight.
//! * [`human`]: a [`ScriptedHuman`] for tests that play a human player.
//! * [`faults`]: per-client [`Faults`] hooks that make a client misbehave;
//!   [`fault_spec`]: a hook, when it fires and on which client as a
//!   [`FaultSpec`] (`drop:observations@2s`), which [`EmulatorConfig::faults`]
//!   schedules; `fault_schedule` runs one task per scheduled fault.
//! * [`transcript`]: an optional [`Transcript`] of every control exchange and
//!   command line the clients handled, for differential tests of agents.
//!
//! # Which mod
//!
//! [`EmulatorConfig::mod_flavour`] picks the stock MBAG fork (the default) or
//! the fork with mbag's `mod-patch/` series: then clients answer
//! `MALMO_MBAG_VERSION`, and every player's observation carries
//! `mbag_mod_version` and the `block_changes` that players made (scripted
//! humans' places and breaks, agents' `use` and `attack`), as
//! [`crate::mod_patch`] describes. Chat commands (`/fill`, `/clone`) are no
//! player's place or break, so they report none, as in the patched mod.
//!
//! # What is simplified
//!
//! The protocol side follows the mod; the game side is a small block world. See
//! [`world`] for physics, breaking and blueprints, `server_commands` for chat
//! commands, and `observe` for observation timing. In short: no gravity or
//! collisions, instant breaking with silk-touch drops straight into the
//! inventory, no item entities, no video frames (the spectator's video
//! connection opens and stays silent), no rewards (MBAG has no reward handlers),
//! and blueprint and error blocks are not materialised, which the fork's
//! observations cannot tell apart.
//!
//! # Tasks and shutdown
//!
//! Every task (listeners, control exchanges, missions, servers) is spawned into
//! one [`tokio::task::JoinSet`] owned by the [`Emulator`]. Dropping the emulator
//! aborts them all, which closes every socket; [`Emulator::shutdown`] first asks
//! them to stop and waits briefly. All channels are bounded.

pub mod blocks;
pub mod client;
pub mod commands;
mod fault_schedule;
pub mod fault_spec;
pub mod faults;
pub mod human;
pub mod json;
mod observe;
pub mod ray;
pub mod server;
mod server_commands;
mod session;
pub mod transcript;
pub mod world;

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::MALMO_VERSION;
use crate::agent::{COMMANDS_PORT_OFFSET, ClientAddr, DEFAULT_CONTROL_PORT};
use crate::mod_patch::ModFlavour;

pub use client::{ClientHandle, ClientStatus};
pub use fault_spec::{FaultKind, FaultSpec, FaultSpecError, FaultWhen};
pub use faults::{Corruption, FaultChannel, Faults};
pub use human::{AIM_TICKS, Button, HumanAction, HumanError, ScriptedHuman};
pub use server::{ServerGone, WorldHandle};
pub use transcript::{Transcript, TranscriptChannel, TranscriptEntry};

/// Which ports the clients listen on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ports {
    /// Client i's control port is `base + i` and its commands port that plus
    /// 1000, as MBAG's launcher and the fork set them.
    Fixed {
        /// Client 0's control port.
        base: u16,
    },
    /// Free ports chosen by the system (for tests running in parallel); read them
    /// from [`Emulator::clients`].
    Ephemeral,
}

/// How the emulator behaves.
#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// How many clients.
    pub clients: usize,
    /// Their ports.
    pub ports: Ports,
    /// The address the clients listen on (and report as their own).
    pub host: IpAddr,
    /// How long role 0 takes to create its world, while `MALMO_FIND_SERVER`
    /// answers `MALMONOSERVERYET`.
    pub world_delay: Duration,
    /// Write control replies one byte per write, as the real mod does.
    pub one_byte_replies: bool,
    /// How long a client waits for every role to join before giving up with
    /// `MOD_CONNECTION_FAILED` (the mod: 2000 ticks, about 100 s).
    pub join_timeout: Duration,
    /// Whether idle clients accept `MALMO_KILL_CLIENT` (the launcher's
    /// "replaceable" flag); a killed client stops listening.
    pub replaceable: bool,
    /// Time between observations (the mod: one per client tick, 50 ms).
    pub tick: Duration,
    /// Where to record what agents send (control exchanges and command lines);
    /// `None` records nothing.
    pub transcript: Option<Transcript>,
    /// Which mod the clients run: the stock MBAG fork, or the fork with mbag's
    /// `mod-patch/` series, which answers `MALMO_MBAG_VERSION` and adds the
    /// version string and the players' block changes to observations.
    pub mod_flavour: ModFlavour,
    /// Faults to inject, each set on its client's [`Faults`] as the emulator
    /// starts or, with a [`FaultWhen`], when that time of a mission arrives.
    pub faults: Vec<FaultSpec>,
}

impl EmulatorConfig {
    /// `clients` clients on MBAG's default ports (10000 + i, commands 11000 + i).
    pub fn local(clients: usize) -> Self {
        Self {
            clients,
            ports: Ports::Fixed {
                base: DEFAULT_CONTROL_PORT,
            },
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            world_delay: Duration::from_millis(500),
            one_byte_replies: true,
            join_timeout: Duration::from_secs(100),
            replaceable: false,
            tick: Duration::from_millis(50),
            transcript: None,
            mod_flavour: ModFlavour::Stock,
            faults: Vec::new(),
        }
    }

    /// `clients` clients on free ports.
    pub fn ephemeral(clients: usize) -> Self {
        Self {
            ports: Ports::Ephemeral,
            ..Self::local(clients)
        }
    }
}

/// Why the emulator cannot start.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// A port could not be bound.
    #[error("client {client}: cannot listen on {host}:{port}: {source}")]
    Bind {
        /// The client.
        client: usize,
        /// The address.
        host: IpAddr,
        /// The port (0 for a free one).
        port: u16,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A fault names a client the emulator does not have.
    #[error("fault {fault}: there is no client #{client} ({clients} emulated)")]
    FaultClient {
        /// The fault, as its spec reads.
        fault: String,
        /// The client it names.
        client: usize,
        /// How many clients there are.
        clients: usize,
    },
    /// The fixed ports run past 65535.
    #[error("{clients} clients from port {base} run past port 65535")]
    PortRange {
        /// The first control port.
        base: u16,
        /// The number of clients.
        clients: usize,
    },
}

/// Every task of the emulator; closed (and so refusing new tasks) at shutdown.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tasks(Arc<Mutex<Option<JoinSet<()>>>>);

impl Tasks {
    fn new() -> Self {
        Self(Arc::new(Mutex::new(Some(JoinSet::new()))))
    }

    fn lock(&self) -> MutexGuard<'_, Option<JoinSet<()>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Spawns a task, unless the emulator is shutting down.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        if let Some(set) = self.lock().as_mut() {
            // Reap finished tasks so the set does not grow with every exchange.
            while set.try_join_next().is_some() {}
            set.spawn(task);
        }
    }

    fn close(&self) -> Option<JoinSet<()>> {
        self.lock().take()
    }
}

/// What every task of the emulator shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: EmulatorConfig,
    /// Running missions' servers by LAN port: how roles > 0 "connect" to the
    /// server their MissionInit names.
    worlds: Mutex<HashMap<u16, WorldHandle>>,
    pub tasks: Tasks,
    pub shutdown: watch::Receiver<bool>,
}

impl Shared {
    fn worlds(&self) -> MutexGuard<'_, HashMap<u16, WorldHandle>> {
        self.worlds.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn register(&self, world: WorldHandle) {
        self.worlds().insert(world.port(), world);
    }

    pub(crate) fn unregister(&self, port: u16) {
        self.worlds().remove(&port);
    }

    pub(crate) fn world_at(&self, port: u16) -> Option<WorldHandle> {
        self.worlds().get(&port).cloned()
    }
}

/// The running emulator. Dropping it stops every client and closes every socket.
#[derive(Debug)]
pub struct Emulator {
    clients: Vec<ClientHandle>,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
}

impl Emulator {
    /// Binds every client's ports and starts serving.
    pub async fn start(config: EmulatorConfig) -> Result<Self, EmulatorError> {
        if let Some(fault) = config.faults.iter().find(|f| f.client >= config.clients) {
            return Err(EmulatorError::FaultClient {
                fault: fault.to_string(),
                client: fault.client,
                clients: config.clients,
            });
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            config: config.clone(),
            worlds: Mutex::new(HashMap::new()),
            tasks: Tasks::new(),
            shutdown: shutdown_rx,
        });
        let mut clients = Vec::with_capacity(config.clients);
        for index in 0..config.clients {
            let (control, commands) = match config.ports {
                Ports::Fixed { base } => u16::try_from(usize::from(base) + index)
                    .ok()
                    .and_then(|c| c.checked_add(COMMANDS_PORT_OFFSET).map(|m| (c, m)))
                    .ok_or(EmulatorError::PortRange {
                        base,
                        clients: config.clients,
                    })?,
                Ports::Ephemeral => (0, 0),
            };
            let bind = |port: u16| async move {
                TcpListener::bind((config.host, port))
                    .await
                    .map_err(|source| EmulatorError::Bind {
                        client: index,
                        host: config.host,
                        port,
                        source,
                    })
            };
            let control = bind(control).await?;
            let commands = bind(commands).await?;
            clients.push(client::start(index, control, commands, &shared)?);
        }
        for fault in &config.faults {
            let client = Arc::clone(clients[fault.client].shared_client());
            fault_schedule::arm(fault.clone(), client, &shared);
        }
        log::info!(
            "emulating {} Minecraft clients: {}",
            clients.len(),
            clients
                .iter()
                .map(|c| format!(
                    "control {} / commands {}",
                    c.control_port(),
                    c.commands_port()
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(Self {
            clients,
            shared,
            shutdown,
        })
    }

    /// The clients, in pool order.
    pub fn clients(&self) -> &[ClientHandle] {
        &self.clients
    }

    /// The pool an agent passes to `reserve_clients` and `start_role`.
    pub fn pool(&self) -> Vec<ClientAddr> {
        self.clients.iter().map(ClientHandle::addr).collect()
    }

    /// The server of a running mission, by experiment id.
    pub fn world(&self, experiment_id: &str) -> Option<WorldHandle> {
        self.shared
            .worlds()
            .values()
            .find(|w| w.experiment_id() == experiment_id)
            .cloned()
    }

    /// The servers of every running mission.
    pub fn running_worlds(&self) -> Vec<WorldHandle> {
        self.shared.worlds().values().cloned().collect()
    }

    /// A scripted human acting as the named player of whichever running mission
    /// has it (the first mission found, if several do).
    pub fn human(&self, experiment_id: &str, name: &str) -> Option<ScriptedHuman> {
        Some(self.world(experiment_id)?.human(name))
    }

    /// Stops every client: missions end without MissionEnded (as when Minecraft
    /// is closed), and every socket closes. Waits up to a second for tasks to
    /// notice, then aborts the rest.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        if let Some(mut set) = self.shared.tasks.close() {
            let all = async { while set.join_next().await.is_some() {} };
            if tokio::time::timeout(Duration::from_secs(1), all)
                .await
                .is_err()
            {
                set.abort_all();
            }
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        // Dropping the set aborts every task still running.
        drop(self.shared.tasks.close());
    }
}

/// The Malmo version the emulated mod speaks unless a fault says otherwise.
pub(crate) fn mod_version(faults: &Faults) -> String {
    faults
        .mod_version()
        .unwrap_or_else(|| MALMO_VERSION.to_owned())
}
