//! The five hardcoded command sequences of the reference (ENV_SPEC section 13).
//! Each issues its commands one per step, ignoring observations, then NOOPs forever.
//! They were written for the small `simple` goal in worlds of a fixed size.

use super::registry::AgentError;
use super::{Agent, Internals};
use crate::sim::action::{Action, ActionType};
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::coords::{Cell, WorldSize};
use crate::sim::obs::Observation;

/// One command of a sequence, with cells as `(x, y, z)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Do nothing this step.
    Noop,
    /// One of the six moves.
    Move(ActionType),
    /// Place a block.
    Place([i32; 3], BlockId),
    /// Break the block at a cell.
    Break([i32; 3]),
    /// Give a block to the player standing at a cell.
    Give([i32; 3], BlockId),
}

use ActionType::{MoveNegX, MoveNegY, MoveNegZ, MovePosX, MovePosY, MovePosZ};
use Command::{Break, Give, Move, Noop, Place};

const COBBLE: BlockId = BlockId::COBBLESTONE;
const GLASS: BlockId = BlockId::GLASS;

/// The building part the builder, resource and receiver scripts end with, after the
/// two diverge at their third placement.
const BUILD_TAIL: [Command; 10] = [
    Move(MovePosY),
    Move(MovePosZ),
    Move(MovePosZ),
    Place([2, 2, 2], COBBLE),
    Place([2, 2, 3], COBBLE),
    Place([1, 2, 2], COBBLE),
    Move(MovePosZ),
    Place([3, 2, 3], COBBLE),
    Place([2, 2, 3], COBBLE),
    Place([1, 2, 3], COBBLE),
];

/// The build of HardcodedResourceAgent after collecting (also the receiver's).
const RESOURCE_BUILD: [Command; 9] = [
    Move(MoveNegY),
    Move(MovePosY),
    Move(MoveNegX),
    Move(MoveNegZ),
    Place([1, 2, 1], COBBLE),
    Move(MovePosX),
    Move(MovePosX),
    Place([2, 2, 1], COBBLE),
    Place([1, 2, 3], COBBLE),
];

fn builder_commands() -> Vec<Command> {
    // The builder's first eight commands are the resource agent's build opening.
    let mut c = RESOURCE_BUILD[..8].to_vec();
    c.extend([
        Place([3, 2, 1], COBBLE),
        Move(MovePosY),
        Move(MovePosZ),
        Move(MovePosZ),
        Place([3, 2, 2], COBBLE),
        Place([2, 2, 2], COBBLE),
        Place([1, 2, 2], COBBLE),
        Move(MovePosZ),
        Place([3, 2, 3], COBBLE),
        Place([2, 2, 3], COBBLE),
        Place([1, 2, 3], COBBLE),
    ]);
    c
}

fn resource_commands() -> Vec<Command> {
    let mut c = vec![
        Move(MovePosX),
        Move(MovePosZ),
        Break([4, 2, 1]),
        Break([4, 2, 1]),
        Break([4, 2, 1]),
    ];
    c.extend(RESOURCE_BUILD);
    c.extend(BUILD_TAIL);
    c
}

fn donator_commands() -> Vec<Command> {
    vec![
        Move(MovePosZ),
        Move(MovePosX),
        Break([4, 2, 1]),
        Break([4, 2, 1]),
        Break([4, 2, 1]),
        Give([1, 2, 0], COBBLE),
        Break([4, 2, 1]),
        Break([4, 2, 1]),
        Give([1, 2, 0], COBBLE),
    ]
}

fn receiver_commands() -> Vec<Command> {
    let mut c = vec![Noop; 8];
    c.extend([Move(MovePosX), Move(MoveNegX)]);
    c.extend([Noop; 4]);
    c.extend(RESOURCE_BUILD);
    c.extend(BUILD_TAIL);
    c
}

fn human_commands() -> Vec<Command> {
    let mut c = vec![Move(MovePosX); 6];
    c.extend([Move(MovePosZ), Move(MovePosZ)]);
    c.extend([Break([9, 2, 2]); 3]);
    c.extend([Move(MovePosZ); 4]);
    c.extend([Break([9, 2, 5]); 3]);
    c.extend([
        Move(MoveNegY),
        Move(MovePosY),
        Move(MoveNegX),
        Move(MoveNegZ),
        Place([1, 2, 1], GLASS),
        Move(MovePosX),
        Move(MovePosX),
        Place([2, 2, 1], GLASS),
        Place([1, 2, 3], GLASS),
    ]);
    c.extend(BUILD_TAIL);
    c
}

/// An agent issuing a fixed list of actions, then NOOP.
#[derive(Clone, Debug)]
pub struct SequenceAgent {
    name: &'static str,
    actions: Vec<Action>,
    next: usize,
}

impl SequenceAgent {
    /// An agent for `commands` in a world of `size`.
    ///
    /// The reference computes cell indices with `ravel_multi_index` on every call and
    /// fails on its first action if a cell is outside the world; this fails at
    /// construction instead.
    pub fn new(
        name: &'static str,
        commands: &[Command],
        size: WorldSize,
    ) -> Result<Self, AgentError> {
        let index = |c: [i32; 3]| {
            size.checked_index(Cell::new(c[0], c[1], c[2]))
                .ok_or(AgentError::CellOutsideWorld {
                    agent: name,
                    cell: c,
                    size,
                })
        };
        let actions = commands
            .iter()
            .map(|&c| {
                Ok(match c {
                    Noop => Action::NOOP,
                    Move(kind) => Action::new(kind, Action::NOOP.location, BlockId::AIR),
                    Place(cell, block) => Action::new(ActionType::PlaceBlock, index(cell)?, block),
                    Break(cell) => Action::new(ActionType::BreakBlock, index(cell)?, BlockId::AIR),
                    Give(cell, block) => Action::new(ActionType::GiveBlock, index(cell)?, block),
                })
            })
            .collect::<Result<_, AgentError>>()?;
        Ok(Self {
            name,
            actions,
            next: 0,
        })
    }

    /// The full list of actions.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// The index of the next command (the reference's `current_command`).
    pub fn next_command(&self) -> usize {
        self.next
    }
}

impl Agent for SequenceAgent {
    fn name(&self) -> &'static str {
        self.name
    }

    fn reset(&mut self, _seed: u64) {
        self.next = 0;
    }

    fn act(&mut self, _obs: &Observation) -> Action {
        match self.actions.get(self.next) {
            Some(&a) => {
                self.next += 1;
                a
            }
            None => Action::NOOP,
        }
    }

    fn internals(&self) -> Internals<'_> {
        Internals::Sequence {
            next_command: self.next,
        }
    }
}

macro_rules! sequence_agent {
    ($(#[$doc:meta])* $ty:ident, $commands:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $ty;

        impl $ty {
            /// The agent for an env config.
            #[allow(clippy::new_ret_no_self)]
            pub fn new(config: &Config) -> Result<SequenceAgent, AgentError> {
                SequenceAgent::new(stringify!($ty), &$commands(), config.world_size)
            }

            /// The command list.
            pub fn commands() -> Vec<Command> {
                $commands()
            }
        }
    };
}

sequence_agent!(
    /// Builds the `simple` goal: 19 commands.
    HardcodedBuilderAgent,
    builder_commands
);
sequence_agent!(
    /// Breaks cobblestone from the palette, then builds (palette mode).
    HardcodedResourceAgent,
    resource_commands
);
sequence_agent!(
    /// Collects cobblestone and gives it to the player at (1, 2, 0).
    HardcodedInventoryDonator,
    donator_commands
);
sequence_agent!(
    /// Waits, steps aside for the donator, then builds like the resource agent.
    HardcodedInventoryReceiver,
    receiver_commands
);
sequence_agent!(
    /// Walks to the palette at x = 9, collects, then builds partly in glass.
    HardcodedHumanAgent,
    human_commands
);

#[cfg(test)]
mod tests {
    use super::*;

    fn config(size: [usize; 3]) -> Config {
        Config::from_json(&serde_json::json!({
            "world_size": size,
            "abilities": {"teleportation": false, "flying": true, "inf_blocks": false},
        }))
        .unwrap()
    }

    #[test]
    fn sequence_lengths_match_the_reference() {
        assert_eq!(HardcodedBuilderAgent::commands().len(), 19);
        assert_eq!(HardcodedResourceAgent::commands().len(), 24);
        assert_eq!(HardcodedInventoryDonator::commands().len(), 9);
        assert_eq!(HardcodedInventoryReceiver::commands().len(), 33);
        assert_eq!(HardcodedHumanAgent::commands().len(), 37);
    }

    #[test]
    fn builder_issues_its_commands_then_noops() {
        let cfg = config([5, 6, 5]);
        let size = cfg.world_size;
        let mut agent = HardcodedBuilderAgent::new(&cfg).unwrap();
        agent.reset(0);
        let obs = Observation::new(size, 1);
        let first: Vec<[i64; 3]> = (0..5).map(|_| agent.act(&obs).to_tuple()).collect();
        // (1, 2, 1) in a 5x6x5 world is 1*30 + 2*5 + 1 = 41.
        assert_eq!(
            first,
            [[6, 0, 0], [5, 0, 0], [4, 0, 0], [8, 0, 0], [1, 41, 3]]
        );
        for _ in 5..19 {
            agent.act(&obs);
        }
        assert_eq!(agent.internals(), Internals::Sequence { next_command: 19 });
        assert_eq!(agent.act(&obs), Action::NOOP);
        assert_eq!(agent.next_command(), 19);
        agent.reset(1);
        assert_eq!(agent.act(&obs).to_tuple(), [6, 0, 0]);
    }

    #[test]
    fn donator_gives_cobblestone_and_human_places_glass() {
        let cfg = config([5, 6, 5]);
        let agent = HardcodedInventoryDonator::new(&cfg).unwrap();
        assert_eq!(agent.actions()[5].to_tuple(), [9, 30 + 10, 3]);
        let cfg = config([11, 10, 10]);
        let agent = HardcodedHumanAgent::new(&cfg).unwrap();
        let glass = agent
            .actions()
            .iter()
            .filter(|a| a.kind == ActionType::PlaceBlock && a.block == GLASS)
            .count();
        assert_eq!(glass, 3);
        // The receiver ends with the resource agent's build.
        let recv = HardcodedInventoryReceiver::commands();
        let res = HardcodedResourceAgent::commands();
        assert_eq!(recv[14..], res[5..]);
    }

    #[test]
    fn cells_outside_the_world_are_an_error() {
        let err = HardcodedHumanAgent::new(&config([5, 6, 5])).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("HardcodedHumanAgent") && text.contains("5x6x5"),
            "{text}"
        );
    }
}
