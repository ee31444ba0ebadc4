//! A chatting person model for evaluation: any agent that sees the goal, with
//! a voice that rejects the other players' wrong placements in words.
//!
//! [`RejectingPerson`] wraps a person agent (a behaviour-cloned human model, a
//! heuristic). From its own observations, step after step, it notices cells
//! another player has just filled with a block the goal does not have there
//! (the observation's last-interacted channel says who), and with probability
//! [`ChatPersonConfig::probability`] says so after
//! [`ChatPersonConfig::delay_steps`] steps, through [`Agent::speak`]. The
//! words vary: when the wrong block is still the other player's latest edit,
//! a refusal of "that" taken from the labelled set (`tests/chat/messages.jsonl`,
//! the messages the rule parser reads as a bare reject); otherwise, so that
//! a late message cannot hit a later, correct edit, one naming the block and
//! its coordinates.

use std::collections::VecDeque;
use std::sync::OnceLock;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::about::Scope;
use super::conversation::Heard;
use super::eval::Labelled;
use super::intent::{Intent, IntentParser, RuleParser};
use crate::agents::{Agent, AgentError, Internals};
use crate::sim::action::Action;
use crate::sim::block::BlockId;
use crate::sim::coords::{Cell, CellIndex};
use crate::sim::obs::{CURRENT_PLAYER, NO_ONE, Observation, WorldChannel};

/// The labelled messages the phrasing is drawn from.
const LABELLED: &str = include_str!("../../tests/chat/messages.jsonl");

/// Which chatting person `--human-chat` plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HumanChat {
    /// Rejects wrong placements of the other players in words.
    Rejecting,
}

impl HumanChat {
    /// The model's name, as `--human-chat` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rejecting => "rejecting",
        }
    }
}

/// How often and how soon the person speaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChatPersonConfig {
    /// Chance that a wrong placement is remarked on.
    pub probability: f64,
    /// Steps between seeing a wrong placement and saying so.
    pub delay_steps: u32,
}

impl Default for ChatPersonConfig {
    fn default() -> Self {
        Self {
            probability: 0.8,
            delay_steps: 1,
        }
    }
}

/// A wrong placement waiting to be remarked on.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Remark {
    due: u64,
    cell: Cell,
    block: BlockId,
}

/// A person agent with a voice (see the module docs).
#[derive(Debug)]
pub struct RejectingPerson {
    inner: Box<dyn Agent>,
    config: ChatPersonConfig,
    rng: StdRng,
    steps: u64,
    previous: Option<Vec<u8>>,
    /// The latest cell another player edited.
    latest_other_edit: Option<Cell>,
    remarks: VecDeque<Remark>,
    said: u64,
}

/// The labelled refusals the rule parser reads as a bare reject of the last
/// edit (no block, no place, not everything).
pub fn refusals() -> &'static [String] {
    static REFUSALS: OnceLock<Vec<String>> = OnceLock::new();
    REFUSALS.get_or_init(|| {
        LABELLED
            .lines()
            .filter_map(|l| serde_json::from_str::<Labelled>(l).ok())
            .filter(|m| m.flag == Intent::Reject)
            .map(|m| m.text)
            .filter(|t| {
                let flags = RuleParser.read(t);
                flags.intent == Intent::Reject
                    && flags.about.is_bare()
                    && flags.about.scope == Scope::LastAction
            })
            .collect()
    })
}

/// Refusals naming a block and a cell (`{b}`, `{x}`, `{y}`, `{z}`).
const NAMED_REFUSALS: &[&str] = &[
    "no {b} at {x} {y} {z}",
    "please don't put {b} at ({x}, {y}, {z})",
    "wrong, there's no {b} at x={x} y={y} z={z}",
    "not {b} at {x},{y},{z}",
    "stop, {b} doesn't go at {x} {y} {z}",
];

impl RejectingPerson {
    /// `inner` with a rejecting voice.
    pub fn new(inner: Box<dyn Agent>, config: ChatPersonConfig) -> Self {
        Self {
            inner,
            config,
            rng: StdRng::seed_from_u64(0),
            steps: 0,
            previous: None,
            latest_other_edit: None,
            remarks: VecDeque::new(),
            said: 0,
        }
    }

    /// Messages said this episode.
    pub fn messages_said(&self) -> u64 {
        self.said
    }

    fn notice(&mut self, obs: &Observation) {
        let size = obs.size();
        let blocks = obs.channel(WorldChannel::CurrentBlocks);
        let goal = obs.channel(WorldChannel::GoalBlocks);
        let who = obs.channel(WorldChannel::LastInteracted);
        // A person not shown the goal (an all-air goal channel: even the
        // ground would be in a shown one) cannot tell right from wrong.
        let sees_goal = goal.iter().any(|&g| g != 0);
        if let Some(before) = self.previous.as_ref().filter(|_| sees_goal) {
            for (i, (&now, &was)) in blocks.iter().zip(before).enumerate() {
                if now == was || who[i] == CURRENT_PLAYER || who[i] == NO_ONE {
                    continue;
                }
                let cell = size.cell(CellIndex(i as u32));
                self.latest_other_edit = Some(cell);
                let wrong = now != BlockId::AIR.0 && goal[i] != now;
                if wrong
                    && self
                        .rng
                        .random_bool(self.config.probability.clamp(0.0, 1.0))
                {
                    self.remarks.push_back(Remark {
                        due: self.steps + u64::from(self.config.delay_steps),
                        cell,
                        block: BlockId(now),
                    });
                }
            }
        }
        self.previous = Some(blocks.to_vec());
    }

    fn phrase(&mut self, remark: Remark) -> String {
        let refusals = refusals();
        if self.latest_other_edit == Some(remark.cell) && !refusals.is_empty() {
            return refusals[self.rng.random_range(0..refusals.len())].clone();
        }
        let template = NAMED_REFUSALS[self.rng.random_range(0..NAMED_REFUSALS.len())];
        template
            .replace("{b}", remark.block.name().unwrap_or("block"))
            .replace("{x}", &remark.cell.x.to_string())
            .replace("{y}", &remark.cell.y.to_string())
            .replace("{z}", &remark.cell.z.to_string())
    }
}

impl Agent for RejectingPerson {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn reset(&mut self, seed: u64) {
        self.inner.reset(seed);
        // A stream of its own, so the inner agent acts as it would alone.
        self.rng = StdRng::seed_from_u64(seed ^ 0x6368_6174);
        self.steps = 0;
        self.previous = None;
        self.latest_other_edit = None;
        self.remarks.clear();
        self.said = 0;
    }

    fn act(&mut self, obs: &Observation) -> Action {
        self.notice(obs);
        self.steps += 1;
        self.inner.act(obs)
    }

    fn try_act(&mut self, obs: &Observation) -> Result<Action, AgentError> {
        self.notice(obs);
        self.steps += 1;
        self.inner.try_act(obs)
    }

    fn record_internals(&mut self, on: bool) {
        self.inner.record_internals(on);
    }

    fn internals(&self) -> Internals<'_> {
        self.inner.internals()
    }

    fn goal_belief(&self) -> Option<Vec<u8>> {
        self.inner.goal_belief()
    }

    fn hear(&mut self, heard: &Heard) {
        self.inner.hear(heard);
    }

    /// One due remark at a time; the rest wait their turn.
    fn speak(&mut self) -> Option<String> {
        if let Some(said) = self.inner.speak() {
            return Some(said);
        }
        let remark = *self.remarks.front()?;
        if remark.due > self.steps {
            return None;
        }
        self.remarks.pop_front();
        self.said += 1;
        Some(self.phrase(remark))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::about::Place;

    #[test]
    fn refusals_come_from_the_labelled_set_and_named_ones_parse() {
        let r = refusals();
        assert!(r.len() >= 15, "{} refusals", r.len());
        for text in NAMED_REFUSALS {
            let text = text
                .replace("{b}", "glass")
                .replace("{x}", "3")
                .replace("{y}", "2")
                .replace("{z}", "5");
            let flags = RuleParser.read(&text);
            assert_eq!(flags.intent, Intent::Reject, "{text}");
            assert_eq!(flags.about.block, Some(BlockId::GLASS), "{text}");
            assert_eq!(
                flags.about.place,
                Some(Place::Cell(Cell { x: 3, y: 2, z: 5 })),
                "{text}"
            );
        }
    }
}
