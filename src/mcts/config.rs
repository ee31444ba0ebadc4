//! The search's settings, with the paper's values as defaults (Table 14 and
//! appendix E.3 of `../shared/papers/assistancezero.txt`).

use serde::{Deserialize, Serialize};

/// Settings of one AssistanceZero (or piKL) search.
///
/// Field names follow the reference's `mcts_config` where it has one, so that a
/// checkpoint's `training_mcts_config` reads straight into this struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MctsConfig {
    /// Simulations per move (100 in training, 20 when evaluating).
    pub num_simulations: usize,
    /// `c_PUCT` of the selection rule (1 for the assistant, 30 for piKL humans).
    pub puct_coefficient: f64,
    /// Discount of rewards along a simulated path (the training's gamma).
    pub gamma: f64,
    /// Inverse temperature of the tree policy: `pi(a) ∝ N(a)^temperature`.
    pub temperature: f64,
    /// Play the most visited action instead of sampling the tree policy.
    pub argmax_tree_policy: bool,
    /// Take the tree policy from the limiting distribution of MCTS (Grill et al.
    /// 2020) over every valid action instead of from visit counts; piKL humans use
    /// it so that every action keeps some probability.
    pub sample_from_full_support_policy: bool,
    /// Mix Dirichlet noise into the root's priors.
    pub add_dirichlet_noise: bool,
    /// Weight of the noise against the priors.
    pub dirichlet_epsilon: f64,
    /// Dirichlet concentration of the action-type stage.
    pub dirichlet_noise: f64,
    /// The second stage's concentration is this over the number of valid actions
    /// of the type.
    pub dirichlet_action_subtype_noise_multiplier: f64,
    /// Priors are raised to this power and renormalised.
    pub prior_temperature: f64,
    /// Select the action type first, then the action within it (the paper's
    /// bi-level selection); otherwise select among all actions at once.
    pub use_bilevel_action_selection: bool,
    /// Let the search visit NOOP; otherwise its prior is zeroed during search and
    /// its probability restored in the tree policy.
    pub explore_noops: bool,
    /// Estimate goal-dependent rewards from the network's goal head (the assistant,
    /// who cannot see the goal); otherwise use the goal in the observation (piKL
    /// humans, who can).
    pub use_goal_predictor: bool,
    /// Sample the other players' actions from the network's prediction of them;
    /// otherwise they NOOP in the search.
    pub use_other_agent_action_predictor: bool,
    /// Bootstrap leaves with the value head; otherwise leaves are worth 0.
    pub use_critic: bool,
    /// Leaves gathered per search before one network call (virtual loss keeps
    /// them apart). 1 reproduces the sequential search.
    pub leaves_per_batch: usize,
    /// Keep the subtree below the move actually played when the next observation
    /// is one the search had already simulated.
    pub reuse_tree: bool,
}

impl Default for MctsConfig {
    fn default() -> Self {
        Self {
            num_simulations: 100,
            puct_coefficient: 1.0,
            gamma: 0.95,
            temperature: 1.5,
            argmax_tree_policy: false,
            sample_from_full_support_policy: false,
            add_dirichlet_noise: true,
            dirichlet_epsilon: 0.25,
            dirichlet_noise: 0.25,
            dirichlet_action_subtype_noise_multiplier: 10.0,
            prior_temperature: 1.0,
            use_bilevel_action_selection: true,
            explore_noops: true,
            use_goal_predictor: true,
            use_other_agent_action_predictor: true,
            use_critic: true,
            leaves_per_batch: 1,
            reuse_tree: true,
        }
    }
}

impl MctsConfig {
    /// The assistant's settings when evaluating (appendix E.4): 20 simulations.
    pub fn assistant_evaluation() -> Self {
        Self {
            num_simulations: 20,
            ..Self::default()
        }
    }

    /// A piKL human model as the reference's `pikl` config: the search regularised
    /// towards its BC policy by a large `c_PUCT` (30), 30 simulations, planning
    /// with the goal it sees, no critic, no noise, NOOP kept out of the search, and
    /// actions sampled from the full-support policy at temperature 1. The BC
    /// network has no head for the other player, who NOOPs in the search.
    pub fn pikl_human() -> Self {
        Self {
            num_simulations: 30,
            puct_coefficient: 30.0,
            temperature: 1.0,
            sample_from_full_support_policy: true,
            add_dirichlet_noise: false,
            explore_noops: false,
            use_goal_predictor: false,
            use_other_agent_action_predictor: false,
            use_critic: false,
            ..Self::default()
        }
    }
}
