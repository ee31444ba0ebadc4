//! The AssistanceZero search (appendix A of the paper): PUCT selection in two
//! levels (action type, then action), the other player's action sampled from the
//! network's prediction, rewards marginalised over the predicted goal, min-max
//! normalised Q values, and batched leaf evaluation with virtual loss.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma};

use super::config::MctsConfig;
use super::evaluator::{Evaluator, LeafEvaluation, LeafQuery};
use super::planning::{Planner, expected_goal_reward, goal_probs_at, softmax_in_place};
use super::steering::Steering;
use super::tree::{Expansion, NUM_ACTION_TYPES, Node, NodeId};
use crate::sim::action::{Action, FlatLayout};
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::obs::{Observation, WorldChannel};

/// Why a search could not go on.
#[derive(Debug, thiserror::Error)]
pub enum MctsError {
    /// The evaluator failed.
    #[error("leaf evaluation failed: {0}")]
    Evaluator(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The evaluator answered a different number of leaves.
    #[error("the evaluator answered {got} of {expected} leaves")]
    WrongAnswerCount {
        /// Leaves asked.
        expected: usize,
        /// Answers given.
        got: usize,
    },
    /// An answer's policy does not cover the flat actions.
    #[error("the evaluator's policy has {got} logits, the action space {expected}")]
    WrongPolicySize {
        /// Flat actions of the env.
        expected: usize,
        /// Logits given.
        got: usize,
    },
    /// A decision was asked before any simulation.
    #[error("no search has been run from the current root")]
    NotSearched,
}

/// The move a search chose and what it knew when choosing it.
#[derive(Clone, Debug)]
pub struct Decision<S> {
    /// The flat action to play.
    pub action: usize,
    /// The tree policy over all flat actions (the training target).
    pub policy: Vec<f32>,
    /// The network's value at the root.
    pub root_value: f32,
    /// The root's goal logits, if predicted.
    pub goal_logits: Option<Vec<f32>>,
    /// The recurrent state after the root's observation, to carry to the next
    /// move.
    pub state_out: S,
    /// Visits of the root after the search.
    pub root_visits: u32,
    /// Simulations run for this decision.
    pub simulations: usize,
}

/// A leaf selected and waiting for the network, with the virtual loss applied on
/// its path.
#[derive(Clone, Debug)]
struct Pending {
    leaf: NodeId,
    path: Vec<VirtualVisit>,
}

/// One edge's pending visit, counted at the worst value seen until the real
/// value is backed up.
#[derive(Clone, Copy, Debug)]
struct VirtualVisit {
    parent: NodeId,
    position: usize,
    action_type: usize,
    child: NodeId,
    value: f64,
}

/// One player's search in one environment. Not thread-safe by design: each
/// environment's agent owns its search; many searches share an evaluator.
#[derive(Debug)]
pub struct Search<S> {
    config: MctsConfig,
    planner: Planner,
    nodes: Vec<Node<S>>,
    root: Option<NodeId>,
    rng: StdRng,
    simulations: usize,
    pending: Vec<Pending>,
    mask: Vec<bool>,
    last_action: Option<usize>,
    steering: Steering,
}

impl<S: Clone> Search<S> {
    /// A search for player `me` of an env with `env_config`. `line_of_sight`
    /// selects the action mask the network was trained with; `seed` makes the
    /// search reproducible.
    pub fn new(
        env_config: Config,
        me: usize,
        line_of_sight: bool,
        config: MctsConfig,
        seed: u64,
    ) -> Self {
        let planner = Planner::new(env_config, me, config.use_goal_predictor, line_of_sight);
        Self {
            config,
            planner,
            nodes: Vec::new(),
            root: None,
            rng: StdRng::seed_from_u64(seed),
            simulations: 0,
            pending: Vec::new(),
            mask: Vec::new(),
            last_action: None,
            steering: Steering::default(),
        }
    }

    /// Replaces the steering (banned actions, a pause, goal adjustments) the
    /// search plans under. A change drops the tree, built under the old one.
    pub fn steer(&mut self, steering: Steering) {
        if steering != self.steering {
            self.steering = steering;
            self.last_action = None;
        }
    }

    /// The steering the search plans under.
    pub fn steering(&self) -> &Steering {
        &self.steering
    }

    /// The settings.
    pub fn config(&self) -> &MctsConfig {
        &self.config
    }

    /// The flat action layout the search plans over.
    pub fn layout(&self) -> &FlatLayout {
        self.planner.layout()
    }

    /// Reseeds the search's random generator.
    pub fn reseed(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
    }

    /// Forgets the tree (a new episode).
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.root = None;
        self.pending.clear();
        self.last_action = None;
        self.simulations = 0;
    }

    /// Number of nodes in the tree.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// A node of the tree.
    ///
    /// # Panics
    /// If `id` is not in the tree.
    pub fn node(&self, id: NodeId) -> &Node<S> {
        &self.nodes[id.index()]
    }

    /// The root node, once set.
    pub fn root(&self) -> Option<&Node<S>> {
        self.root.map(|r| &self.nodes[r.index()])
    }

    /// Starts a move from the observation `obs`. `state_in` is the recurrent
    /// state before it and `prev_action` the player's previous action. Returns
    /// whether the subtree below the last move was reused (it is when the search
    /// had simulated exactly this observation after that move).
    pub fn set_root(&mut self, obs: &Observation, prev_action: Option<usize>, state_in: S) -> bool {
        self.pending.clear();
        self.simulations = 0;
        if self.config.reuse_tree
            && let (Some(root), Some(action)) = (self.root, self.last_action.take())
        {
            let found = self.nodes[root.index()]
                .children
                .iter()
                .filter(|&&(a, _, _)| a as usize == action)
                .map(|&(_, _, child)| child)
                .find(|&child| same_observation(&self.nodes[child.index()].observation, obs));
            if let Some(child) = found {
                self.keep_subtree(child);
                return true;
            }
        }
        // The last move's goal prediction judges the new root's placements
        // under caution (the root's own comes only with its evaluation).
        let previous_goal = self
            .root
            .and_then(|r| self.nodes.get(r.index()))
            .and_then(|n| n.expansion.as_ref())
            .and_then(|e| e.goal_logits.clone());
        self.nodes.clear();
        let env_state = self.planner.load_root(obs);
        self.planner.valid_actions(obs, &mut self.mask);
        self.steering
            .apply_mask(self.planner.layout(), &mut self.mask);
        if let Some(goal) = &previous_goal {
            self.steering
                .apply_caution(self.planner.layout(), goal, &mut self.mask);
        }
        let root = Node::new(
            None,
            env_state,
            obs.clone(),
            None,
            false,
            0.0,
            state_in,
            prev_action,
            &self.mask,
            self.planner.layout(),
        );
        self.nodes.push(root);
        self.root = Some(NodeId(0));
        false
    }

    /// Makes `new_root` the root, dropping everything outside its subtree and
    /// renumbering the rest.
    fn keep_subtree(&mut self, new_root: NodeId) {
        let old = std::mem::take(&mut self.nodes);
        let mut map = vec![u32::MAX; old.len()];
        let mut order = vec![new_root];
        let mut i = 0;
        while i < order.len() {
            let id = order[i];
            map[id.index()] = i as u32;
            order.extend(old[id.index()].children.iter().map(|&(_, _, c)| c));
            i += 1;
        }
        let mut old: Vec<Option<Node<S>>> = old.into_iter().map(Some).collect();
        for id in order {
            let mut node = old[id.index()].take().expect("each node is kept once");
            node.parent = node.parent.and_then(|(p, a)| {
                let p = map[p.index()];
                (p != u32::MAX).then_some((NodeId(p), a))
            });
            for child in &mut node.children {
                child.2 = NodeId(map[child.2.index()]);
            }
            self.nodes.push(node);
        }
        let root = &mut self.nodes[0];
        root.reward = 0.0;
        root.own_reward = 0.0;
        root.infos = None;
        self.root = Some(NodeId(0));
        if self.config.add_dirichlet_noise
            && let Some(expansion) = self.nodes[0].expansion.take()
        {
            let mut expansion = expansion;
            expansion.priors.clone_from(&expansion.clean_priors);
            let node = &self.nodes[0];
            add_root_noise(&self.config, node, &mut expansion, &mut self.rng);
            self.nodes[0].expansion = Some(expansion);
        }
    }

    /// Whether this move's simulations are all done.
    pub fn is_finished(&self) -> bool {
        self.simulations >= self.config.num_simulations && self.pending.is_empty()
    }

    /// Selects up to `leaves_per_batch` leaves for the network (terminal leaves are
    /// backed up at once and count as simulations) and returns how many wait.
    pub fn gather(&mut self) -> usize {
        let root = self.root.expect("set_root before searching");
        let want = self.config.leaves_per_batch.max(1);
        while self.pending.len() < want
            && self.simulations + self.pending.len() < self.config.num_simulations
        {
            let (leaf, path) = self.select(root);
            let node = &self.nodes[leaf.index()];
            if node.done || (node.is_expanded() && node.actions.is_empty()) {
                // Nothing to ask the network: a terminal is worth 0, a dead end
                // its own estimate again.
                let value = node
                    .expansion
                    .as_ref()
                    .filter(|_| !node.done)
                    .map_or(0.0, |e| f64::from(e.value));
                self.revert_virtual_loss(&path);
                self.backup(leaf, value);
                self.simulations += 1;
                continue;
            }
            if self.pending.iter().any(|p| p.leaf == leaf) {
                // Two selections met at one leaf: evaluate what we have first.
                self.revert_virtual_loss(&path);
                break;
            }
            self.pending.push(Pending { leaf, path });
        }
        self.pending.len()
    }

    /// The queries of the leaves [`Search::gather`] selected, in order.
    pub fn queries(&self) -> Vec<LeafQuery<'_, S>> {
        self.pending
            .iter()
            .map(|p| {
                let node = &self.nodes[p.leaf.index()];
                LeafQuery {
                    observation: &node.observation,
                    prev_action: node.prev_action,
                    state: &node.state_in,
                    policy_only: false,
                }
            })
            .collect()
    }

    /// Expands and backs up the gathered leaves with the network's answers (in the
    /// order of [`Search::queries`]).
    pub fn apply(&mut self, evaluations: Vec<LeafEvaluation<S>>) -> Result<(), MctsError> {
        if evaluations.len() != self.pending.len() {
            return Err(MctsError::WrongAnswerCount {
                expected: self.pending.len(),
                got: evaluations.len(),
            });
        }
        let n = self.planner.layout().len();
        if let Some(bad) = evaluations.iter().find(|e| e.policy_logits.len() != n) {
            return Err(MctsError::WrongPolicySize {
                expected: n,
                got: bad.policy_logits.len(),
            });
        }
        let pending = std::mem::take(&mut self.pending);
        for (p, evaluation) in pending.into_iter().zip(evaluations) {
            self.revert_virtual_loss(&p.path);
            let value = if self.config.use_critic {
                f64::from(evaluation.value)
            } else {
                0.0
            };
            let is_root = Some(p.leaf) == self.root;
            self.expand(p.leaf, evaluation, is_root);
            self.backup(p.leaf, value);
            self.simulations += 1;
        }
        Ok(())
    }

    /// Runs this move's simulations with `evaluator`, one network call per
    /// gathered batch.
    pub fn run<E: Evaluator<State = S>>(&mut self, evaluator: &mut E) -> Result<(), MctsError> {
        while !self.is_finished() {
            if self.gather() == 0 {
                continue;
            }
            let answers = evaluator
                .evaluate(&self.queries())
                .map_err(|e| MctsError::Evaluator(Box::new(e)))?;
            self.apply(answers)?;
        }
        Ok(())
    }

    /// Walks from `from` to a leaf, applying virtual loss on the way when several
    /// leaves are gathered per batch.
    fn select(&mut self, from: NodeId) -> (NodeId, Vec<VirtualVisit>) {
        let mut path = Vec::new();
        let mut current = from;
        let virtual_loss = self.config.leaves_per_batch > 1;
        loop {
            let node = &self.nodes[current.index()];
            if !node.is_expanded() || node.done || node.actions.is_empty() {
                return (current, path);
            }
            let position = self.best_position(node);
            let t = node.type_of_position(position);
            let action = node.actions[position];
            let child = self.child(current, action);
            if virtual_loss {
                // A pending visit counts as the worst value seen, steering the
                // next selection elsewhere until the real value arrives.
                let parent = &mut self.nodes[current.index()];
                let v = if parent.min_value.is_finite() {
                    parent.min_value
                } else {
                    0.0
                };
                parent.visits[position] += 1;
                parent.values[position] += v;
                parent.type_visits[t] += 1;
                parent.type_values[t] += v;
                let c = &mut self.nodes[child.index()];
                c.node_visits += 1;
                c.node_value += v;
                path.push(VirtualVisit {
                    parent: current,
                    position,
                    action_type: t,
                    child,
                    value: v,
                });
            }
            current = child;
        }
    }

    fn revert_virtual_loss(&mut self, path: &[VirtualVisit]) {
        for visit in path {
            let p = &mut self.nodes[visit.parent.index()];
            p.visits[visit.position] -= 1;
            p.values[visit.position] -= visit.value;
            p.type_visits[visit.action_type] -= 1;
            p.type_values[visit.action_type] -= visit.value;
            let c = &mut self.nodes[visit.child.index()];
            c.node_visits -= 1;
            c.node_value -= visit.value;
        }
    }

    /// The PUCT choice at an expanded node, as a position in its valid actions.
    fn best_position(&self, node: &Node<S>) -> usize {
        let expansion = node
            .expansion
            .as_ref()
            .expect("selection only in expanded nodes");
        let c = self.config.puct_coefficient;
        let v = if node.node_visits > 0 {
            node.node_value / f64::from(node.node_visits)
        } else {
            0.0
        };
        if !self.config.use_bilevel_action_selection {
            let sqrt_n = f64::from(node.node_visits).sqrt();
            return argmax((0..node.actions.len()).map(|i| {
                let q = mean_or(node.values[i], node.visits[i], v);
                node.normalise(q)
                    + c * f64::from(expansion.priors[i]) * sqrt_n
                        / (1.0 + f64::from(node.visits[i]))
            }))
            .expect("an expanded node with actions");
        }
        let sqrt_n = f64::from(node.node_visits).sqrt();
        let valid_types = (0..NUM_ACTION_TYPES).filter(|&t| {
            let (lo, hi) = node.type_ranges[t];
            lo < hi
        });
        let t = argmax_by(valid_types, |t| {
            let q = mean_or(node.type_values[t], node.type_visits[t], v);
            node.normalise(q)
                + c * f64::from(expansion.type_priors[t]) * sqrt_n
                    / (1.0 + f64::from(node.type_visits[t]))
        })
        .expect("an expanded node with actions has a valid type");
        let (lo, hi) = node.type_ranges[t];
        let (lo, hi) = (lo as usize, hi as usize);
        if hi - lo == 1 {
            return lo;
        }
        // Within the type: its own visit count and mean, and priors renormalised
        // over the type (the reference's fixed bi-level selection).
        let n_t = node.type_visits[t].max(1);
        let init = node.type_values[t] / f64::from(n_t);
        let sqrt_n_t = f64::from(n_t).sqrt();
        let type_prior = f64::from(expansion.type_priors[t]);
        let scale = if type_prior > 0.0 {
            1.0 / type_prior
        } else {
            0.0
        };
        lo + argmax((lo..hi).map(|i| {
            let q = mean_or(node.values[i], node.visits[i], init);
            node.normalise(q)
                + c * f64::from(expansion.priors[i]) * scale * sqrt_n_t
                    / (1.0 + f64::from(node.visits[i]))
        }))
        .expect("a valid type has actions")
    }

    /// The child reached by `action` from `parent`, with the other players' action
    /// sampled from the prediction; created by simulating the step if new.
    fn child(&mut self, parent: NodeId, action: u32) -> NodeId {
        let other = {
            let node = &self.nodes[parent.index()];
            let expansion = node.expansion.as_ref().expect("children of expanded nodes");
            match (
                &expansion.other_action_probs,
                self.config.use_other_agent_action_predictor,
            ) {
                (Some(probs), true) => sample_weighted(probs, &mut self.rng) as u32,
                _ => 0,
            }
        };
        if let Some(&(_, _, child)) = self.nodes[parent.index()]
            .children
            .iter()
            .find(|&&(a, o, _)| a == action && o == other)
        {
            return child;
        }
        let layout = *self.planner.layout();
        let mine = layout
            .action(action as usize)
            .expect("valid actions are in the layout");
        let theirs = layout.action(other as usize).unwrap_or(Action::NOOP);
        let node = &self.nodes[parent.index()];
        let transition = self.planner.step(&node.env_state, mine, &[theirs]);
        let me = self.planner.me();
        let expansion = node.expansion.as_ref().expect("children of expanded nodes");
        let reward = match (&expansion.goal_logits, self.config.use_goal_predictor) {
            (Some(goal_logits), true) => {
                let info = &transition.infos[me];
                let before = block_before(&node.observation, info.action);
                let probs = goal_probs_at(goal_logits, info.action.location);
                let rewards = self.planner.reward_values(me);
                let palette = self.planner.is_palette_break(info.action);
                expected_goal_reward(info.action, before, &probs, &rewards, palette)
                    + info.goal_independent_reward
            }
            _ => transition.env_reward,
        };
        let prev_action = Some(action as usize);
        let state_in = expansion.state_out.clone();
        self.planner
            .valid_actions(&transition.observation, &mut self.mask);
        self.steering.apply_mask(&layout, &mut self.mask);
        if let Some(goal) = &expansion.goal_logits {
            self.steering.apply_caution(&layout, goal, &mut self.mask);
        }
        let id = NodeId(self.nodes.len() as u32);
        let child = Node::new(
            Some((parent, action)),
            transition.state,
            transition.observation,
            Some(transition.infos),
            transition.done,
            reward,
            state_in,
            prev_action,
            &self.mask,
            &layout,
        );
        self.nodes.push(child);
        self.nodes[parent.index()]
            .children
            .push((action, other, id));
        id
    }

    /// Fills in a leaf's expansion from the network's answer, and completes the
    /// reward of the step into it with the other players' part, judged by the goal
    /// this node predicts (the paper's equation 4).
    fn expand(&mut self, id: NodeId, evaluation: LeafEvaluation<S>, is_root: bool) {
        let LeafEvaluation {
            mut policy_logits,
            value,
            mut goal_logits,
            other_action_logits,
            state,
        } = evaluation;
        if let Some(logits) = goal_logits.as_mut() {
            let cells = self.planner.layout().size().num_cells();
            self.steering.adjust_goal_logits(logits, cells);
        }
        let node = &self.nodes[id.index()];
        if let (Some(goal_logits), Some((parent, _)), Some(infos), true) = (
            &goal_logits,
            node.parent,
            &node.infos,
            self.config.use_goal_predictor,
        ) {
            let me = self.planner.me();
            let before_obs = &self.nodes[parent.index()].observation;
            let mut others = 0.0;
            for (p, info) in infos.iter().enumerate().filter(|&(p, _)| p != me) {
                let before = block_before(before_obs, info.action);
                let probs = goal_probs_at(goal_logits, info.action.location);
                let rewards = self.planner.reward_values(p);
                let palette = self.planner.is_palette_break(info.action);
                others += expected_goal_reward(info.action, before, &probs, &rewards, palette)
                    + info.goal_independent_reward;
            }
            let own = node.own_reward;
            let prop = infos[me].own_reward_prop;
            let reward = prop * own + (1.0 - prop) * (own + others);
            self.nodes[id.index()].reward = reward;
        }
        let node = &self.nodes[id.index()];
        softmax_in_place(&mut policy_logits);
        let mut priors: Vec<f32> = node
            .actions
            .iter()
            .map(|&a| {
                let p = policy_logits[a as usize];
                if self.config.prior_temperature == 1.0 {
                    p
                } else {
                    p.powf(self.config.prior_temperature as f32)
                }
            })
            .collect();
        normalise(&mut priors);
        let noop_probability = match node.actions.first() {
            Some(0) => priors[0],
            _ => 0.0,
        };
        if !self.config.explore_noops && noop_probability > 0.0 && noop_probability < 1.0 {
            priors[0] = 0.0;
            normalise(&mut priors);
        }
        let other_action_probs = other_action_logits.map(|mut l| {
            softmax_in_place(&mut l);
            l
        });
        let mut expansion = Expansion {
            clean_priors: priors.clone(),
            priors,
            type_priors: [0.0; NUM_ACTION_TYPES],
            noop_probability,
            value,
            goal_logits,
            other_action_probs,
            state_out: state,
        };
        if is_root && self.config.add_dirichlet_noise {
            add_root_noise(&self.config, node, &mut expansion, &mut self.rng);
        } else {
            expansion.type_priors = type_sums(node, &expansion.priors);
        }
        self.nodes[id.index()].expansion = Some(expansion);
    }

    /// Backs `value` up from `leaf` to the root, discounting and adding each
    /// step's reward.
    fn backup(&mut self, leaf: NodeId, value: f64) {
        let gamma = self.config.gamma;
        let mut value = value;
        let mut current = leaf;
        loop {
            let node = &mut self.nodes[current.index()];
            value = gamma * value + node.reward;
            node.node_visits += 1;
            node.node_value += value;
            node.see(value);
            let Some((parent, action)) = node.parent else {
                break;
            };
            if Some(current) == self.root {
                break;
            }
            let p = &mut self.nodes[parent.index()];
            let position = p
                .position(action)
                .expect("children come from valid actions");
            let t = p.type_of_position(position);
            p.visits[position] += 1;
            p.values[position] += value;
            p.type_visits[t] += 1;
            p.type_values[t] += value;
            p.see(value);
            current = parent;
        }
    }

    /// Chooses the move from the searched root (and remembers it, to reuse its
    /// subtree next time).
    pub fn decide(&mut self) -> Result<Decision<S>, MctsError> {
        let root_id = self.root.ok_or(MctsError::NotSearched)?;
        let root = &self.nodes[root_id.index()];
        let expansion = root.expansion.as_ref().ok_or(MctsError::NotSearched)?;
        let n = self.planner.layout().len();
        let mut sparse: Vec<f64> = if self.config.sample_from_full_support_policy {
            full_support_policy(&self.config, root, expansion)
        } else if self.config.num_simulations <= 1 {
            expansion.priors.iter().map(|&p| f64::from(p)).collect()
        } else {
            root.visits.iter().map(|&v| f64::from(v)).collect()
        };
        if !self.config.explore_noops && root.actions.first() == Some(&0) {
            let total: f64 = sparse.iter().sum();
            if total > 0.0 {
                sparse.iter_mut().for_each(|p| *p /= total);
            }
            let noop = f64::from(expansion.noop_probability);
            sparse[1..].iter_mut().for_each(|p| *p *= 1.0 - noop);
            sparse[0] = noop;
        }
        // Scale by the largest first so the power cannot overflow.
        let max = sparse.iter().copied().fold(0.0, f64::max);
        if max > 0.0 {
            for p in &mut sparse {
                *p = (*p / max).powf(self.config.temperature);
            }
        }
        let total: f64 = sparse.iter().sum();
        if total > 0.0 {
            sparse.iter_mut().for_each(|p| *p /= total);
        } else if !sparse.is_empty() {
            let u = 1.0 / sparse.len() as f64;
            sparse.iter_mut().for_each(|p| *p = u);
        }
        let position = if sparse.is_empty() {
            None
        } else if self.config.argmax_tree_policy {
            argmax(sparse.iter().copied())
        } else {
            Some(sample_weighted(&sparse, &mut self.rng))
        };
        let action = position.map_or(0, |i| root.actions[i] as usize);
        let mut policy = vec![0f32; n];
        for (&a, &p) in root.actions.iter().zip(&sparse) {
            policy[a as usize] = p as f32;
        }
        let decision = Decision {
            action,
            policy,
            root_value: expansion.value,
            goal_logits: expansion.goal_logits.clone(),
            state_out: expansion.state_out.clone(),
            root_visits: root.node_visits,
            simulations: self.simulations,
        };
        self.last_action = Some(action);
        Ok(decision)
    }
}

/// Runs one move's search in each of `searches` together: every round gathers
/// leaves from all unfinished searches and evaluates them in one call.
pub fn run_together<S: Clone, E: Evaluator<State = S>>(
    searches: &mut [&mut Search<S>],
    evaluator: &mut E,
) -> Result<(), MctsError> {
    loop {
        let mut counts = Vec::with_capacity(searches.len());
        for search in searches.iter_mut() {
            counts.push(if search.is_finished() {
                0
            } else {
                search.gather()
            });
        }
        if searches.iter().all(|s| s.is_finished()) {
            return Ok(());
        }
        if counts.iter().all(|&c| c == 0) {
            continue;
        }
        let answers = {
            let queries: Vec<LeafQuery<'_, S>> = searches
                .iter()
                .zip(&counts)
                .filter(|&(_, &c)| c > 0)
                .flat_map(|(s, _)| s.queries())
                .collect();
            evaluator
                .evaluate(&queries)
                .map_err(|e| MctsError::Evaluator(Box::new(e)))?
        };
        let expected: usize = counts.iter().sum();
        if answers.len() != expected {
            return Err(MctsError::WrongAnswerCount {
                expected,
                got: answers.len(),
            });
        }
        let mut answers = answers.into_iter();
        for (search, &c) in searches.iter_mut().zip(&counts) {
            if c > 0 {
                search.apply(answers.by_ref().take(c).collect())?;
            }
        }
    }
}

fn same_observation(a: &Observation, b: &Observation) -> bool {
    // The goal channels differ by design (the model never holds the goal).
    let n = a.size().num_cells();
    a.size() == b.size()
        && a.timestep == b.timestep
        && a.inventory == b.inventory
        && a.world[..2 * n] == b.world[..2 * n]
        && a.world[4 * n..] == b.world[4 * n..]
}

fn block_before(obs: &Observation, action: Action) -> BlockId {
    BlockId(obs.channel(WorldChannel::CurrentBlocks)[action.location.get()])
}

fn mean_or(total: f64, visits: u32, otherwise: f64) -> f64 {
    if visits == 0 {
        otherwise
    } else {
        total / f64::from(visits)
    }
}

/// The first index of the largest value (NaN never wins).
fn argmax(values: impl Iterator<Item = f64>) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in values.enumerate() {
        if best.is_none_or(|(_, b)| v > b) && !v.is_nan() {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

fn argmax_by(items: impl Iterator<Item = usize>, score: impl Fn(usize) -> f64) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for i in items {
        let v = score(i);
        if best.is_none_or(|(_, b)| v > b) && !v.is_nan() {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

fn normalise(p: &mut [f32]) {
    let total: f32 = p.iter().sum();
    if total > 0.0 {
        p.iter_mut().for_each(|x| *x /= total);
    } else if !p.is_empty() {
        let u = 1.0 / p.len() as f32;
        p.iter_mut().for_each(|x| *x = u);
    }
}

fn type_sums<S>(node: &Node<S>, priors: &[f32]) -> [f32; NUM_ACTION_TYPES] {
    let mut sums = [0f32; NUM_ACTION_TYPES];
    for (t, &(lo, hi)) in node.type_ranges.iter().enumerate() {
        sums[t] = priors[lo as usize..hi as usize].iter().sum();
    }
    sums
}

/// Draws an index with probability proportional to its weight (weights need not
/// sum to 1); the last positive weight if rounding runs past the end.
pub(crate) fn sample_weighted<T: Copy + Into<f64>>(weights: &[T], rng: &mut impl Rng) -> usize {
    let total: f64 = weights.iter().map(|&w| w.into()).sum();
    let mut u = rng.random::<f64>() * total;
    for (i, &w) in weights.iter().enumerate() {
        let w = w.into();
        if u < w {
            return i;
        }
        u -= w;
    }
    weights.iter().rposition(|&w| w.into() > 0.0).unwrap_or(0)
}

/// A Dirichlet sample of `n` components with concentration `alpha`. Tiny
/// concentrations can underflow every gamma draw to zero; the limit of the
/// distribution then puts all mass on one component, drawn uniformly.
fn dirichlet(n: usize, alpha: f64, rng: &mut impl Rng) -> Vec<f64> {
    let gamma = Gamma::new(alpha, 1.0).expect("a positive concentration");
    let mut x: Vec<f64> = (0..n).map(|_| gamma.sample(rng)).collect();
    let total: f64 = x.iter().sum();
    if total > 0.0 && total.is_finite() {
        x.iter_mut().for_each(|v| *v /= total);
    } else {
        x.iter_mut().for_each(|v| *v = 0.0);
        x[rng.random_range(0..n)] = 1.0;
    }
    x
}

/// Root noise in two stages as the paper's appendix E.3: over action types with
/// `dirichlet_noise`, then within each type with `multiplier / valid actions`.
fn add_root_noise<S>(
    config: &MctsConfig,
    node: &Node<S>,
    expansion: &mut Expansion<S>,
    rng: &mut impl Rng,
) {
    let eps = config.dirichlet_epsilon as f32;
    let valid: Vec<usize> = (0..NUM_ACTION_TYPES)
        .filter(|&t| node.type_ranges[t].0 < node.type_ranges[t].1)
        .collect();
    if valid.is_empty() {
        return;
    }
    let type_noise = dirichlet(valid.len(), config.dirichlet_noise, rng);
    let priors = &mut expansion.priors;
    for (&t, &noise) in valid.iter().zip(&type_noise) {
        let (lo, hi) = node.type_ranges[t];
        let slice = &mut priors[lo as usize..hi as usize];
        let sum: f32 = slice.iter().sum();
        let target = (1.0 - eps) * sum + eps * noise as f32;
        if sum > 0.0 {
            slice.iter_mut().for_each(|p| *p *= target / sum);
        } else {
            let u = target / slice.len() as f32;
            slice.iter_mut().for_each(|p| *p = u);
        }
        let alpha = config.dirichlet_action_subtype_noise_multiplier / slice.len() as f64;
        let within = dirichlet(slice.len(), alpha, rng);
        let sum: f32 = slice.iter().sum();
        for (p, w) in slice.iter_mut().zip(within) {
            *p = (1.0 - eps) * *p + eps * sum * w as f32;
        }
    }
    expansion.type_priors = type_sums(node, priors);
}

/// The limiting distribution of MCTS (Grill et al. 2020, "Monte-Carlo tree search
/// as regularized policy optimization") over the root's valid actions, found by
/// bisection on its normaliser.
fn full_support_policy<S>(
    config: &MctsConfig,
    root: &Node<S>,
    expansion: &Expansion<S>,
) -> Vec<f64> {
    let n = root.actions.len();
    let total_visits: u32 = root.visits.iter().sum();
    let init = if total_visits > 0 {
        root.values.iter().sum::<f64>() / f64::from(total_visits)
    } else {
        root.min_value
    };
    let q: Vec<f64> = (0..n)
        .map(|i| root.normalise(mean_or(root.values[i], root.visits[i], init)))
        .collect();
    let priors: Vec<f64> = expansion.priors.iter().map(|&p| f64::from(p)).collect();
    let sims = config.num_simulations as f64;
    let multiplier = config.puct_coefficient * sims.sqrt() / (n as f64 + sims);
    let policy_at = |alpha: f64| -> Vec<f64> {
        q.iter()
            .zip(&priors)
            .map(|(&q, &p)| multiplier * p / (alpha - q))
            .collect()
    };
    let mut lo = q
        .iter()
        .zip(&priors)
        .map(|(&q, &p)| q + multiplier * p)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut hi = q
        .iter()
        .map(|&q| q + multiplier)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut rounds = 0;
    while hi - lo > 1e-8 && rounds < 200 {
        let mid = (lo + hi) / 2.0;
        if policy_at(mid).iter().sum::<f64>() >= 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
        rounds += 1;
    }
    let mut policy = policy_at((lo + hi) / 2.0);
    let total: f64 = policy.iter().sum();
    if total > 0.0 && total.is_finite() {
        policy.iter_mut().for_each(|p| *p /= total);
    }
    policy
}
