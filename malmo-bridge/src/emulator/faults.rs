//! Fault hooks: ways to make one emulated client misbehave, set before or during a
//! mission, so that the agent side's error handling can be tested against each
//! failure PROTOCOL.md §6 describes.
//!
//! A [`Faults`] value is shared between the test and the client's tasks; setting a
//! fault takes a short lock and never waits. One-shot faults (drop, truncate,
//! corrupt, malformed JSON, exit) are consumed when they fire, at the client's next
//! tick (50 ms) or next write on the channel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// A connection of a running mission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultChannel {
    /// The mod's connection to the agent's mission-control port.
    MissionControl,
    /// The mod's connection to the agent's observations port.
    Observations,
    /// The mod's connection to the agent's rewards port.
    Rewards,
    /// The mod's connection to the agent's video port.
    Video,
    /// The agent's connection to the client's commands port.
    Commands,
}

impl FaultChannel {
    /// Its name in fault specs ([`super::fault_spec`]).
    pub fn name(self) -> &'static str {
        match self {
            Self::MissionControl => "mission-control",
            Self::Observations => "observations",
            Self::Rewards => "rewards",
            Self::Video => "video",
            Self::Commands => "commands",
        }
    }
}

/// How a corrupted frame is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corruption {
    /// A length prefix of 0xFFFFFFF0 followed by a few bytes: a hostile length
    /// that no reader may allocate.
    HostileLength,
    /// Random-looking bytes in place of the frame, whose first four read as a
    /// length of about 1.9 GB.
    Garbage,
}

impl Corruption {
    /// Its name in fault specs ([`super::fault_spec`]).
    pub fn name(self) -> &'static str {
        match self {
            Self::Garbage => "garbage",
            Self::HostileLength => "hostile-length",
        }
    }

    /// The bytes written instead of a frame.
    pub(crate) fn bytes(self) -> &'static [u8] {
        match self {
            Self::HostileLength => &[0xff, 0xff, 0xff, 0xf0, b'{', b'"'],
            Self::Garbage => &[0x73, 0x9a, 0x01, 0xee, 0x42, 0x00, 0x17, 0xc3, 0x99],
        }
    }
}

#[derive(Debug, Default)]
struct FaultState {
    drop: Vec<FaultChannel>,
    delay: HashMap<FaultChannel, Duration>,
    truncate: Vec<FaultChannel>,
    corrupt: Vec<(FaultChannel, Corruption)>,
    malformed_json: bool,
    mod_version: Option<String>,
    stop_pings: bool,
    exit: bool,
    fail_world_creation: Option<String>,
}

/// The fault hooks of one emulated client.
#[derive(Clone, Debug, Default)]
pub struct Faults(Arc<Mutex<FaultState>>);

impl Faults {
    fn state(&self) -> MutexGuard<'_, FaultState> {
        // A panic while holding this lock leaves plain data; keep using it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the mission's connection on `channel` at the next tick.
    pub fn drop_connection(&self, channel: FaultChannel) {
        self.state().drop.push(channel);
    }

    /// Delays every write on `channel` (or, for commands, every read) by `by`;
    /// `None` removes the delay.
    pub fn delay(&self, channel: FaultChannel, by: Option<Duration>) {
        let mut state = self.state();
        match by {
            Some(d) => state.delay.insert(channel, d),
            None => state.delay.remove(&channel),
        };
    }

    /// Writes the next frame on `channel` cut off halfway through its body, then
    /// closes the connection.
    pub fn truncate_next_frame(&self, channel: FaultChannel) {
        self.state().truncate.push(channel);
    }

    /// Writes garbage instead of the next frame on `channel`.
    pub fn corrupt_next_frame(&self, channel: FaultChannel, how: Corruption) {
        self.state().corrupt.push((channel, how));
    }

    /// Sends the next observation as well-framed but malformed JSON (its first
    /// half).
    pub fn malformed_json(&self) {
        self.state().malformed_json = true;
    }

    /// Answers control requests as a mod of another version would (a version
    /// mismatch for 0.38.0 agents); `None` restores 0.38.0.
    pub fn answer_as_version(&self, version: Option<&str>) {
        self.state().mod_version = version.map(str::to_owned);
    }

    /// Stops (or resumes) the pings on mission control.
    pub fn stop_pings(&self, stop: bool) {
        self.state().stop_pings = stop;
    }

    /// Makes the client vanish mid-mission at its next tick: every connection of
    /// the mission closes, with no MissionEnded (Minecraft killed or crashed).
    pub fn exit_mid_mission(&self) {
        self.state().exit = true;
    }

    /// Makes the next world creation fail: role 0 sends MissionEnded
    /// `MOD_FAILED_TO_CREATE_WORLD` with this text before any echo; `None` clears it.
    pub fn fail_world_creation(&self, message: Option<&str>) {
        self.state().fail_world_creation = message.map(str::to_owned);
    }

    /// Removes every fault.
    pub fn clear(&self) {
        *self.state() = FaultState::default();
    }

    pub(crate) fn take_drops(&self) -> Vec<FaultChannel> {
        std::mem::take(&mut self.state().drop)
    }

    pub(crate) fn delay_of(&self, channel: FaultChannel) -> Option<Duration> {
        self.state().delay.get(&channel).copied()
    }

    pub(crate) fn take_truncate(&self, channel: FaultChannel) -> bool {
        let mut state = self.state();
        let before = state.truncate.len();
        state.truncate.retain(|c| *c != channel);
        state.truncate.len() != before
    }

    pub(crate) fn take_corrupt(&self, channel: FaultChannel) -> Option<Corruption> {
        let mut state = self.state();
        let at = state.corrupt.iter().position(|(c, _)| *c == channel)?;
        Some(state.corrupt.remove(at).1)
    }

    pub(crate) fn take_malformed_json(&self) -> bool {
        std::mem::take(&mut self.state().malformed_json)
    }

    pub(crate) fn mod_version(&self) -> Option<String> {
        self.state().mod_version.clone()
    }

    pub(crate) fn pings_stopped(&self) -> bool {
        self.state().stop_pings
    }

    pub(crate) fn take_exit(&self) -> bool {
        std::mem::take(&mut self.state().exit)
    }

    pub(crate) fn take_fail_world_creation(&self) -> Option<String> {
        self.state().fail_world_creation.take()
    }
}
