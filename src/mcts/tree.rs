//! The search tree: nodes in an arena addressed by [`NodeId`], each holding the
//! statistics of its valid actions in sparse arrays (a few hundred of the ~12,000
//! flat actions are valid at a time).

use crate::sim::action::{ActionType, FlatLayout};
use crate::sim::env::StepInfo;
use crate::sim::obs::Observation;
use crate::sim::state::EnvState;

/// A node's index in its tree's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index into the arena.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Number of action types (NOOP, place, break, six moves, give).
pub const NUM_ACTION_TYPES: usize = 10;

/// What the network said about a node, filled in when it is expanded.
#[derive(Clone, Debug)]
pub struct Expansion<S> {
    /// Priors of the valid actions (aligned with [`Node::actions`]), after masking,
    /// prior temperature, NOOP exclusion and root noise.
    pub priors: Vec<f32>,
    /// The priors before root noise, kept so that a reused subtree's new root can
    /// be noised afresh.
    pub clean_priors: Vec<f32>,
    /// Per action type, the sum of its actions' priors.
    pub type_priors: [f32; NUM_ACTION_TYPES],
    /// The NOOP probability before NOOP was excluded from the search.
    pub noop_probability: f32,
    /// The value estimate.
    pub value: f32,
    /// Goal logits `(10, W, H, D)`, if predicted.
    pub goal_logits: Option<Vec<f32>>,
    /// The other player's predicted action distribution (probabilities over all
    /// flat actions), if predicted.
    pub other_action_probs: Option<Vec<f32>>,
    /// The recurrent state after this node's observation.
    pub state_out: S,
}

/// One history of the search.
#[derive(Clone, Debug)]
pub struct Node<S> {
    /// The parent and the searching player's action that led here.
    pub parent: Option<(NodeId, u32)>,
    /// The environment state.
    pub env_state: EnvState,
    /// The searching player's observation.
    pub observation: Observation,
    /// The step's infos (every player's), none at the root.
    pub infos: Option<Vec<StepInfo>>,
    /// Whether the episode ended here.
    pub done: bool,
    /// The estimated reward of the transition into this node: the searching
    /// player's own part at first, the other players' part added at expansion.
    pub reward: f64,
    /// The searching player's own part of [`Node::reward`].
    pub own_reward: f64,
    /// The recurrent state before this node's observation.
    pub state_in: S,
    /// The searching player's previous action, for models that read it.
    pub prev_action: Option<usize>,
    /// Valid flat actions in increasing order (hence grouped by type).
    pub actions: Vec<u32>,
    /// Per action type, the range of [`Node::actions`] with that type.
    pub type_ranges: [(u32, u32); NUM_ACTION_TYPES],
    /// Visits per valid action.
    pub visits: Vec<u32>,
    /// Sum of backed-up values per valid action.
    pub values: Vec<f64>,
    /// Visits per action type.
    pub type_visits: [u32; NUM_ACTION_TYPES],
    /// Sum of backed-up values per action type.
    pub type_values: [f64; NUM_ACTION_TYPES],
    /// Visits of the node itself.
    pub node_visits: u32,
    /// Sum of values backed up through the node.
    pub node_value: f64,
    /// Lowest value seen through the node or its children.
    pub min_value: f64,
    /// Highest value seen.
    pub max_value: f64,
    /// Children by (own action, the other players' sampled action).
    pub children: Vec<(u32, u32, NodeId)>,
    /// Filled when the node is evaluated.
    pub expansion: Option<Expansion<S>>,
}

impl<S> Node<S> {
    /// A node not yet evaluated, with `mask` its valid actions.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        parent: Option<(NodeId, u32)>,
        env_state: EnvState,
        observation: Observation,
        infos: Option<Vec<StepInfo>>,
        done: bool,
        reward: f64,
        state_in: S,
        prev_action: Option<usize>,
        mask: &[bool],
        layout: &FlatLayout,
    ) -> Self {
        let actions: Vec<u32> = mask
            .iter()
            .enumerate()
            .filter(|&(_, &ok)| ok)
            .map(|(a, _)| a as u32)
            .collect();
        let mut type_ranges = [(0u32, 0u32); NUM_ACTION_TYPES];
        for (t, range) in type_ranges.iter_mut().enumerate() {
            let kind = ActionType::from_id(t as i64).expect("ten action types");
            let Some(start) = layout.offset(kind) else {
                let at = actions.len() as u32;
                *range = (at, at);
                continue;
            };
            let end = start + layout.block_len(kind);
            let lo = actions.partition_point(|&a| (a as usize) < start) as u32;
            let hi = actions.partition_point(|&a| (a as usize) < end) as u32;
            *range = (lo, hi);
        }
        let n = actions.len();
        Self {
            parent,
            env_state,
            observation,
            infos,
            done,
            reward,
            own_reward: reward,
            state_in,
            prev_action,
            actions,
            type_ranges,
            visits: vec![0; n],
            values: vec![0.0; n],
            type_visits: [0; NUM_ACTION_TYPES],
            type_values: [0.0; NUM_ACTION_TYPES],
            node_visits: 0,
            node_value: 0.0,
            min_value: f64::INFINITY,
            max_value: f64::NEG_INFINITY,
            children: Vec::new(),
            expansion: None,
        }
    }

    /// Whether the network has evaluated the node.
    pub fn is_expanded(&self) -> bool {
        self.expansion.is_some()
    }

    /// The position of flat action `a` among the valid actions.
    pub fn position(&self, a: u32) -> Option<usize> {
        self.actions.binary_search(&a).ok()
    }

    /// The action type of the valid action at `position`.
    pub fn type_of_position(&self, position: usize) -> usize {
        let p = position as u32;
        self.type_ranges
            .iter()
            .position(|&(lo, hi)| lo <= p && p < hi)
            .expect("every valid action has a type")
    }

    /// Q normalised by the values seen at this node (MuZero's min-max scaling):
    /// the highest seen maps to 1, the lowest to 0.
    pub fn normalise(&self, q: f64) -> f64 {
        (q - self.min_value) / (self.max_value - self.min_value).max(0.01)
    }

    /// Records a value seen through this node.
    pub fn see(&mut self, value: f64) {
        self.min_value = self.min_value.min(value);
        self.max_value = self.max_value.max(value);
    }
}
