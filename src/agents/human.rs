//! HumanAgent: replays actions a person took, as reported from outside (the Malmo
//! bridge detects them and pushes them here).

use std::collections::VecDeque;

use super::{Agent, Internals};
use crate::sim::action::Action;
use crate::sim::obs::Observation;

/// Replays pushed actions in order; NOOP whenever none is waiting (in particular on
/// the first step, before anything was detected).
#[derive(Clone, Debug, Default)]
pub struct HumanAgent {
    queue: VecDeque<Action>,
}

impl HumanAgent {
    /// An agent with an empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues an action detected outside the env.
    pub fn push(&mut self, action: Action) {
        self.queue.push_back(action);
    }

    /// How many actions are waiting.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }
}

impl Agent for HumanAgent {
    fn name(&self) -> &'static str {
        "HumanAgent"
    }

    /// Drops whatever was queued for the previous episode.
    fn reset(&mut self, _seed: u64) {
        self.queue.clear();
    }

    fn act(&mut self, _obs: &Observation) -> Action {
        self.queue.pop_front().unwrap_or(Action::NOOP)
    }

    fn internals(&self) -> Internals<'_> {
        Internals::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::action::ActionType;
    use crate::sim::block::BlockId;
    use crate::sim::coords::{CellIndex, WorldSize};

    #[test]
    fn replays_in_order_then_noops() {
        let obs = Observation::new(WorldSize::new(3, 3, 3), 1);
        let mut agent = HumanAgent::new();
        agent.reset(0);
        assert_eq!(agent.act(&obs), Action::NOOP);
        let place = Action::new(ActionType::PlaceBlock, CellIndex(4), BlockId::DIRT);
        let up = Action::new(ActionType::MovePosY, CellIndex(0), BlockId::AIR);
        agent.push(place);
        agent.push(up);
        assert_eq!(agent.pending(), 2);
        assert_eq!(agent.act(&obs), place);
        assert_eq!(agent.act(&obs), up);
        assert_eq!(agent.act(&obs), Action::NOOP);
        agent.push(place);
        agent.reset(1);
        assert_eq!(agent.act(&obs), Action::NOOP);
    }
}
