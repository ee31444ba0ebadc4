//! Step lines: one per env step, written as the step completes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::codec::{ActionRecord, B64, Float};
use crate::chat::intent::Intent;
use crate::sim::action::Action;
use crate::sim::coords::WorldSize;
use crate::sim::env::StepInfo;

/// One player's info after a step (the reference's info dict, less the actions,
/// which the step holds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerInfo {
    /// Matching cells after the step (no partial credit).
    pub goal_similarity: Float,
    /// This player's goal percentage after the step, 0..1.
    pub goal_percentage: Float,
    /// Reward that depends on the goal.
    pub goal_dependent_reward: Float,
    /// Reward that does not.
    pub goal_independent_reward: Float,
    /// The sum of the two.
    pub own_reward: Float,
    /// The player's `own_reward_prop`.
    pub own_reward_prop: Float,
    /// A successful place or break that moved the world towards the goal.
    pub action_correct: bool,
}

impl From<&StepInfo> for PlayerInfo {
    fn from(i: &StepInfo) -> Self {
        Self {
            goal_similarity: Float(i.goal_similarity),
            goal_percentage: Float(i.goal_percentage),
            goal_dependent_reward: Float(i.goal_dependent_reward),
            goal_independent_reward: Float(i.goal_independent_reward),
            own_reward: Float(i.own_reward),
            own_reward_prop: Float(i.own_reward_prop),
            action_correct: i.action_correct,
        }
    }
}

/// The state after a step, as far as it is recorded. Cells are given as changes
/// since the previous step line that carried a `state` (or the header's initial
/// state), so a step costs bytes in proportion to what it changed.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct StateSnapshot {
    /// Per player, the feet position `[x, y, z]` (floats, as the env keeps it).
    pub pos: Vec<[f64; 3]>,
    /// Changed cells: `[x, y, z, block_id, block_state, last_interacted]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<[i32; 6]>,
    /// Per player, inventory counts indexed by block id (absent when the source
    /// did not track inventories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inv: Option<Vec<[i32; 10]>>,
    /// The env timestep after the step (absent when the source did not keep it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestep: Option<u64>,
    /// Hex SHA-256 of the whole state (see `recording/README.md`), an end-to-end
    /// check independent of the cell changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// State edits made from outside the simulator after a step, before its state is
/// compared: a live Minecraft that diverged and was repaired, as the human data's
/// `sync` (`../shared/data/README.md` section 3.5). Replays apply them as given.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct SyncEdits {
    /// `[x, y, z, block_id]`: set a cell's block id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<[i32; 4]>,
    /// `[x, y, z, block_state]`: set a cell's block state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_states: Vec<[i32; 4]>,
    /// `[player, x, y, z]`: move a player's feet (floats, as the env keeps them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pos: Vec<[f64; 4]>,
    /// `[x, y, z, value]`: set a cell's last-interacted player.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub li: Vec<[i32; 4]>,
    /// `[player, block_id, count]`: set how many of a block a player holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inv: Vec<[i32; 3]>,
    /// `[player, slot, block_id, count]`: set one inventory slot (slot 0..=35),
    /// as mbag's daemon repairs a finite-blocks inventory from Minecraft's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<[i32; 4]>,
}

impl SyncEdits {
    /// Whether there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
            && self.block_states.is_empty()
            && self.pos.is_empty()
            && self.li.is_empty()
            && self.inv.is_empty()
            && self.slots.is_empty()
    }

    /// How many edits there are.
    pub fn len(&self) -> usize {
        self.blocks.len()
            + self.block_states.len()
            + self.pos.len()
            + self.li.len()
            + self.inv.len()
            + self.slots.len()
    }
}

/// A chat message said during a step (after the previous step line), by a
/// player, with the intent flag the parser gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRecord {
    /// Who said it (player index).
    pub speaker: usize,
    /// The words, as said.
    pub text: String,
    /// The flag the intent parser read.
    pub intent: Intent,
    /// When it was said or heard, seconds since the Unix epoch (absent in
    /// simulated episodes, whose clock is the step index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall: Option<f64>,
}

/// An agent's account of its move, for the viewer's overlays
/// (`agents::explain::Explanation` in the file's terms).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplainRecord {
    /// Per cell (C order), the most likely goal block, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<B64>,
    /// Per cell, that block's probability times 255, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_confidence: Option<B64>,
    /// The most weighed actions: `[type, x, y, z, block, visits (-1: none),
    /// probability x 1000]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<[i64; 7]>,
    /// The other player's predicted next action: `[type, x, y, z, block]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_next: Option<[i64; 5]>,
}

impl ExplainRecord {
    /// The record of an explanation in a world of `size`.
    pub fn of(e: &crate::agents::explain::Explanation, size: WorldSize) -> Self {
        let five = |a: Action| {
            let c = a.cell(size);
            [
                i64::from(a.kind.id()),
                i64::from(c.x),
                i64::from(c.y),
                i64::from(c.z),
                i64::from(a.block.0),
            ]
        };
        Self {
            goal: e.goal.clone().map(B64),
            goal_confidence: e.goal_confidence.clone().map(B64),
            top: e
                .top
                .iter()
                .map(|t| {
                    let [k, x, y, z, b] = five(t.action);
                    let visits = t.visits.map_or(-1, i64::from);
                    [
                        k,
                        x,
                        y,
                        z,
                        b,
                        visits,
                        (t.probability * 1000.0).round() as i64,
                    ]
                })
                .collect(),
            other_next: e.other_next.map(five),
        }
    }
}

/// One step line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// 0-based step index; line `t + 2` of the file.
    pub t: u64,
    /// Per player, the action passed to `step`.
    pub a: Vec<ActionRecord>,
    /// Per player, the action that took effect (NOOP where the attempt did nothing).
    pub e: Vec<ActionRecord>,
    /// Per player, the reward returned.
    pub r: Vec<Float>,
    /// Whether the env ended the episode with this step.
    #[serde(default)]
    pub done: bool,
    /// Per player infos (absent when the source had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Vec<PlayerInfo>>,
    /// Wall-clock time of the step, seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall: Option<f64>,
    /// External edits applied after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncEdits>,
    /// The state after the step (and after `sync`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateSnapshot>,
    /// Raw observations (e.g. Minecraft's JSON per player), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obs: Option<Value>,
    /// Source fields with no place above (the human data's `env_t`, `row`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<Value>,
    /// Chat messages said since the previous step line, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<Vec<ChatRecord>>,
    /// Per player, the agent's account of its move (absent for players with
    /// none to give: persons, heuristics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Option<ExplainRecord>>>,
}
