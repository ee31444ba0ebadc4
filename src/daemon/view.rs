//! What Minecraft shows, as the lockstep loop knows it: the [`Detector`] fed
//! with every observation, the items each player must always have, and the raw
//! observations kept for the recording.
//!
//! The loop owns time (when to step, wait and sync); this owns reading. Every
//! observation passes through [`MinecraftView::read`], whatever the loop is
//! waiting for at the time.
//!
//! With chat on, the players' messages are read from player 0's observations
//! only. Every client receives every message (its sender's too), so each
//! role's chat shows the same messages in the server's order; reading one
//! role's reads each once, in that order, with nothing to match up. Player 0
//! observes chat whoever plays it: a person always, an agent because the
//! daemon's missions give AI seats chat when it is on.

use std::time::{Instant, SystemTime};

use log::{debug, warn};
use serde_json::{Value, json};

use super::detect::{self, Detector, DetectorConfig, MalmoState};
use super::lockstep::{LockstepError, LoopStats};
use super::roles::RoleEvent;
use super::seam;
use super::seam::chat::ChatLine;
use super::seam::commands::{self, Instruction, Item};
use super::seam::upkeep::{self, MissingItems};
use crate::sim::action::Action;
use crate::sim::config::Config;
use crate::sim::coords::PlayerId;
use crate::sim::env::Env;

/// Latency samples kept per measure (a long session's first hours are plenty
/// for percentiles; memory stays bounded).
pub const MAX_LATENCY_SAMPLES: usize = 200_000;

/// The role whose observations give the chat (see the module docs).
const CHAT_ROLE: usize = 0;

/// Minecraft as read from the observations of one episode.
#[derive(Debug)]
pub struct MinecraftView {
    detector: Detector,
    missing: MissingItems,
    always_have: Vec<Vec<Item>>,
    /// Per player, whether a person plays it (an agent otherwise).
    humans: Vec<bool>,
    /// Raw observations since the last recorded step, per player.
    raw: Vec<Vec<Value>>,
    /// Whether human actions are detected (after the set-up settled).
    detecting: bool,
    epoch: Instant,
    /// Whether the players' messages are read.
    chat: bool,
    /// The players' Minecraft names, which chat lines are said under.
    names: Vec<String>,
    /// Messages read and not yet taken, with their arrival.
    said: Vec<(ChatLine, SystemTime)>,
}

impl MinecraftView {
    /// A view of Minecraft showing `env`'s state; `humans[p]` says whether a
    /// person plays player `p`; with `chat`, the players' messages are read.
    pub fn new(env: &Env, humans: Vec<bool>, chat: bool) -> Self {
        let config = env.config();
        let n = env.num_players();
        Self {
            chat,
            names: (0..n).map(|p| commands::player_name(config, p)).collect(),
            said: Vec::new(),
            detector: new_detector(env),
            missing: MissingItems::new(n),
            always_have: (0..n)
                .map(|p| commands::always_have(config, p).unwrap_or_default())
                .collect(),
            humans,
            raw: vec![Vec::new(); n],
            detecting: false,
            epoch: Instant::now(),
        }
    }

    /// Minecraft now shows `env`'s state (the set-up is done): detection starts
    /// from there.
    pub fn start_detecting(&mut self, env: &Env) {
        self.detector = new_detector(env);
        self.detecting = true;
    }

    /// The detector.
    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    /// The detector, to register expectations and re-align positions.
    pub fn detector_mut(&mut self) -> &mut Detector {
        &mut self.detector
    }

    /// What Minecraft shows now.
    pub fn state(&self) -> &MalmoState {
        self.detector.state()
    }

    /// The detector's settings.
    pub fn config(&self) -> &DetectorConfig {
        self.detector.config()
    }

    /// Reads one role event. Returns the commands now due for items a player
    /// must always have; a mission that ended or a lost connection is an error.
    pub fn read(
        &mut self,
        config: &Config,
        event: Option<RoleEvent>,
        stats: &mut LoopStats,
    ) -> Result<Vec<Instruction>, LockstepError> {
        let (role, received, arrived, observation, raw) = match event {
            None => return Err(LockstepError::AllRolesGone),
            Some(RoleEvent::Ended { role, status }) => {
                return Err(LockstepError::MinecraftEnded { role, status });
            }
            Some(RoleEvent::Lost { role, error }) => {
                return Err(LockstepError::MinecraftLost { role, error });
            }
            Some(RoleEvent::Undecodable { role, error }) => {
                warn!("player {role}: an observation could not be read and is skipped: {error}");
                stats.undecodable += 1;
                return Ok(Vec::new());
            }
            Some(RoleEvent::Observation {
                role,
                received,
                arrived,
                observation,
                raw,
            }) => (role, received, arrived, observation, raw),
        };
        stats.observations += 1;
        if role >= self.humans.len() {
            // The spectator's observations show nothing the episode needs.
            return Ok(Vec::new());
        }
        if let Some(raw) = raw {
            self.raw[role].push(json!([unix_seconds(received), raw]));
        }
        if self.chat && role == CHAT_ROLE {
            let lines = seam::chat::read(&observation, &self.names);
            self.said.extend(lines.into_iter().map(|l| (l, received)));
        }
        let world = detect::reads_world(PlayerId(role));
        let observation = seam::observation::read(&observation, config.world_size, world);
        match self.detector.observe(PlayerId(role), &observation) {
            // The set-up's teleports and gifts are not human actions.
            Ok(_) if !self.detecting => {}
            Ok(found) => {
                for a in &found {
                    debug!("player {}: detected {:?}", a.player.0, a.action);
                }
                stats.human_actions +=
                    found.iter().filter(|a| self.humans[a.player.0]).count() as u64;
            }
            Err(e) => {
                warn!("player {role}: observation skipped: {e}");
                stats.undecodable += 1;
            }
        }
        if stats.observation_to_update.len() < MAX_LATENCY_SAMPLES {
            stats.observation_to_update.push(arrived.elapsed());
        }
        Ok(self.missing.check(
            config,
            role,
            &self.detector.state().players[role],
            &self.always_have[role],
            self.epoch.elapsed(),
        ))
    }

    /// A person's next detected action, if any.
    pub fn next_action(&mut self, player: usize) -> Option<Action> {
        self.detector.next_action(PlayerId(player))
    }

    /// Per player, the detected actions no step has taken yet.
    pub fn queued(&self) -> Vec<usize> {
        (0..self.humans.len())
            .map(|p| self.detector.queued(PlayerId(p)).count())
            .collect()
    }

    /// Whether a person has an action queued.
    pub fn any_human_queued(&self) -> bool {
        (0..self.humans.len())
            .any(|p| self.humans[p] && self.detector.queued(PlayerId(p)).next().is_some())
    }

    /// Whether a person holds a mouse button (mid-dig, or a tick after a place).
    pub fn any_human_button_held(&self) -> bool {
        let players = &self.detector.state().players;
        (0..self.humans.len())
            .any(|p| self.humans[p] && (players[p].is_breaking || players[p].is_placing))
    }

    /// With infinite blocks, the commands that put the agents' block slots in
    /// order (block k in slot k), from their latest observations.
    pub fn agent_slot_repairs(&self, config: &Config) -> Vec<Instruction> {
        (0..self.humans.len())
            .filter(|&p| !self.humans[p])
            .flat_map(|p| {
                upkeep::ai_inventory_repairs(config, p, &self.detector.state().players[p])
            })
            .collect()
    }

    /// The players' messages read since the last call, with when their
    /// observation arrived. The loop takes them after every event, so at most
    /// one observation's wait here.
    pub fn take_chat(&mut self) -> Vec<(ChatLine, SystemTime)> {
        std::mem::take(&mut self.said)
    }

    /// The raw observations since the last call, per player.
    pub fn take_raw(&mut self) -> Vec<Vec<Value>> {
        let n = self.raw.len();
        std::mem::replace(&mut self.raw, vec![Vec::new(); n])
    }
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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
