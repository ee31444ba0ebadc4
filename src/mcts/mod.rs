//! AssistanceZero's Monte Carlo tree search (appendix A of
//! `../shared/papers/assistancezero.txt`), pure: no threads, no tch. A network is
//! reached only through the [`Evaluator`] trait.
//!
//! # Brief overview
//! - [`MctsConfig`]: the reference's `mcts_config` keys with the paper's values.
//! - [`Search`]: one player's search in one environment. [`Search::set_root`]
//!   takes the player's observation (reusing the subtree below the last move when
//!   the search had simulated exactly this observation), [`Search::run`] runs the
//!   simulations through an evaluator, [`Search::decide`] returns the move and the
//!   tree policy. [`run_together`] runs many searches' simulations in lockstep so
//!   that each network call holds leaves from all of them.
//! - [`planning`]: the model the search steps: the simulator rebuilt from the
//!   observation, with goal-dependent rewards estimated from the goal head.
//! - [`tree`]: the arena of nodes.
//! - [`steering`]: actions masked and goal log-odds adjusted from outside (a
//!   person's chat), in every node where the searching player chooses.
//!
//! # Semantics (the reference's `MbagMCTS` with `use_bilevel_action_selection`
//! and `fix_bilevel_action_selection`)
//! - Selection picks an action type by PUCT over type-summed priors, visits and
//!   values, then an action within it with priors renormalised over the type.
//!   Q values are min-max normalised per node; unvisited actions take the node's
//!   (or the type's) mean value.
//! - The other player's action is sampled from the network's prediction at each
//!   pass, so a node's children are keyed by both actions.
//! - The step's reward is the searching player's own expected reward under the
//!   current node's goal prediction plus the other player's under the next
//!   node's (equation 4). The model never holds the hidden goal, so simulated
//!   episodes end only at the horizon.
//! - Values are backed up discounted by `gamma`; the root's priors get two-level
//!   Dirichlet noise; the tree policy is `N(a)^temperature`, normalised.

pub mod config;
pub mod evaluator;
pub mod planning;
pub mod search;
pub mod steering;
pub mod tree;

pub use config::MctsConfig;
pub use evaluator::{Evaluator, LeafEvaluation, LeafQuery};
pub use search::{Decision, MctsError, Search, run_together};
pub use steering::Steering;
pub use tree::{Node, NodeId};

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
