//! The reference's heuristic and hardcoded agents (ENV_SPEC section 13).
//!
//! Every agent sees only its own [`Observation`] and answers with one [`Action`].
//! Agents keep the internals the reference exposes (the flat distribution an action
//! was sampled from, the current layer, the priority queue, the command counter) so
//! that tests and the golden replay can compare them with the reference's records.
//!
//! - [`distribution`]: agents that build a distribution over the 28 action channels,
//!   flatten it and sample from it (Noop, Movement, Random, LowestBlock).
//! - [`heuristic`]: deterministic builders (LayerBuilder, PriorityQueue,
//!   MirrorBuilding).
//! - [`hardcoded`]: the five fixed command sequences.
//! - [`human`]: replays actions pushed from outside.
//! - [`network`]: agents driven by a network through an [`crate::mcts::Evaluator`]:
//!   sampling its policy (BC humans) or searching with it (AssistanceZero
//!   assistants, piKL humans).
//! - [`oracle`]: the goal-aware scripted assistant (`oracle`), on the legs of
//!   [`walker`], which walks to where a wanted edit is possible and makes it.
//! - [`registry`]: building an agent from its reference class name and config.
//! - [`spec`]: agent specs (`heuristic:lowest_block`, `az:PATH?sims=20`, `none`) and
//!   the [`AgentFactory`] that builds them, with the hook for network agents.

use std::fmt;

use crate::chat::conversation::Heard;

use crate::sim::action::Action;
use crate::sim::obs::Observation;

pub mod defaults;
pub mod distribution;
pub mod explain;
pub mod hardcoded;
pub mod heuristic;
pub mod human;
pub mod network;
pub mod oracle;
pub mod registry;
pub mod spec;
pub mod walker;

pub use distribution::{
    ChannelDist, DistributionAgent, FlatDist, LowestBlockAgent, MovementAgent, NoopAgent,
    RandomAgent,
};
pub use hardcoded::{
    HardcodedBuilderAgent, HardcodedHumanAgent, HardcodedInventoryDonator,
    HardcodedInventoryReceiver, HardcodedResourceAgent, SequenceAgent,
};
pub use heuristic::{
    Choice, Chooser, LayerBuilderAgent, MirrorBuildingAgent, PriorityQueueAgent, PyRandomChooser,
    QueueEntry, RngChooser, ScriptedChooser,
};
pub use human::HumanAgent;
pub use oracle::OracleAgent;
pub use registry::{AGENT_NAMES, AgentError, build_agent, is_known_agent};
pub use spec::{
    AgentFactory, AgentSpec, AgentSpecError, NetworkAgents, NetworkKind, StandardAgents,
};

/// An agent playing one player of an episode.
pub trait Agent: fmt::Debug + Send {
    /// The reference class name, e.g. `"LowestBlockAgent"`.
    fn name(&self) -> &'static str;

    /// Starts a new episode: clears per-episode state and reseeds the agent's own
    /// random generator (agents without randomness ignore the seed).
    fn reset(&mut self, seed: u64);

    /// Chooses the action for `obs`, the observation the env returned last (or at
    /// reset).
    fn act(&mut self, obs: &Observation) -> Action;

    /// [`Agent::act`] for agents that can fail, such as network agents whose
    /// inference service stopped. Agents that cannot fail keep this default.
    fn try_act(&mut self, obs: &Observation) -> Result<Action, AgentError> {
        Ok(self.act(obs))
    }

    /// Asks the agent to keep its full internals on every action (the golden checks
    /// do). Distribution agents otherwise sample without building their whole
    /// distribution, and report [`Internals::None`].
    fn record_internals(&mut self, _on: bool) {}

    /// What the agent knows after its last [`Agent::act`], for inspection.
    fn internals(&self) -> Internals<'_>;

    /// The goal the agent believes in after its last [`Agent::act`]: a block id
    /// per cell (C order), for goal-inference metrics. `None` for agents that
    /// hold no belief about the goal.
    fn goal_belief(&self) -> Option<Vec<u8>> {
        None
    }

    /// Hears another player's chat message. Agents that do not listen (the
    /// default) ignore it; assistants that do let it steer their next moves.
    fn hear(&mut self, _heard: &Heard) {}

    /// What the agent wants to say in chat now, if anything; asked after each
    /// [`Agent::act`]. The default says nothing.
    fn speak(&mut self) -> Option<String> {
        None
    }

    /// Its account of the last move (goal belief, weighed actions, the other
    /// player's predicted move), for the viewer's overlays. `None` for agents
    /// with nothing to show (the default).
    fn explain(&self) -> Option<explain::Explanation> {
        None
    }
}

/// The most likely block of every cell in goal logits laid out `[block][cell]`
/// (as the networks' goal heads give them).
pub fn goal_argmax(logits: &[f32], cells: usize) -> Vec<u8> {
    let blocks = logits.len() / cells.max(1);
    (0..cells)
        .map(|c| {
            (0..blocks)
                .max_by(|&a, &b| logits[a * cells + c].total_cmp(&logits[b * cells + c]))
                .unwrap_or(0) as u8
        })
        .collect()
}

/// An agent's inspectable internals, as of its last action.
#[derive(Clone, Debug, PartialEq)]
pub enum Internals<'a> {
    /// Nothing worth exposing (MirrorBuildingAgent, HumanAgent).
    None,
    /// The flat distribution the last action was sampled from (empty before the
    /// first action).
    Distribution(&'a FlatDist),
    /// LayerBuilderAgent: its last uniform choice (none when it did a NOOP) and the
    /// layer it is working on.
    LayerBuilder {
        /// The last choice, if the last action made one.
        choice: Option<Choice>,
        /// The current layer (y); equals the height once everything is built.
        current_layer: usize,
    },
    /// PriorityQueueAgent: whether it has seeded its queue, and the queue contents in
    /// ascending order.
    PriorityQueue {
        /// Whether the queue has been seeded (after the first action).
        seeding: bool,
        /// The queued cells, smallest first.
        frontier: Vec<QueueEntry>,
    },
    /// A hardcoded sequence agent: the index of the next command.
    Sequence {
        /// Commands issued so far (capped at the sequence length).
        next_command: usize,
    },
}
