//! What the search asks of a network, without depending on one: a batch of leaf
//! observations in, priors, values and predictions out. The network-backed
//! implementation lives with the agents; tests use hand-written oracles.

use crate::sim::obs::Observation;

/// One leaf to evaluate.
#[derive(Debug)]
pub struct LeafQuery<'a, S> {
    /// The searching player's observation at the leaf.
    pub observation: &'a Observation,
    /// The searching player's previous flat action (for models that read it).
    pub prev_action: Option<usize>,
    /// The recurrent state before this observation (the parent's output state).
    pub state: &'a S,
    /// Only the policy logits and the state will be read (an agent playing its
    /// policy head): an evaluator may leave the other outputs empty.
    pub policy_only: bool,
}

/// The network's answer for one leaf.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafEvaluation<S> {
    /// Unmasked policy logits over the flat actions.
    pub policy_logits: Vec<f32>,
    /// The value estimate.
    pub value: f32,
    /// Goal block logits, `(10, W, H, D)` in C order, if the model predicts the
    /// goal.
    pub goal_logits: Option<Vec<f32>>,
    /// Logits of the other player's next flat action, if the model predicts it.
    pub other_action_logits: Option<Vec<f32>>,
    /// The recurrent state after this observation.
    pub state: S,
}

/// Evaluates batches of leaves. Searches call it from their own thread; an
/// implementation may block (for instance on an inference service).
pub trait Evaluator {
    /// The recurrent state carried from a node to its children (`()` for
    /// stateless models).
    type State: Clone;
    /// Why an evaluation failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The state before an episode's first observation.
    fn initial_state(&self) -> Self::State;

    /// Evaluates every query, answering in order.
    fn evaluate(
        &mut self,
        queries: &[LeafQuery<'_, Self::State>],
    ) -> Result<Vec<LeafEvaluation<Self::State>>, Self::Error>;
}
