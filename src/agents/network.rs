//! Agents driven by a network, reached through an [`Evaluator`] so that the same
//! agents run on an inference service, a model called directly, or a test oracle.
//!
//! - [`PolicyAgent`] samples the network's masked policy (behaviour-cloned human
//!   models; the paper's pretrained and SFT assistants at temperature 0.3).
//! - [`SearchAgent`] plans with [`Search`] (AssistanceZero assistants with
//!   [`MctsConfig::assistant_evaluation`], piKL humans with
//!   [`MctsConfig::pikl_human`]).
//!
//! Both carry the network's recurrent state and their previous action from one
//! move to the next, and start both afresh on [`Agent::reset`].

use std::fmt;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::explain::{Considered, Explanation, TOP_ACTIONS, goal_with_confidence};
use super::{Agent, AgentError, FlatDist, Internals};
use crate::chat::conversation::{Conversation, ConversationConfig, Heard, Plan};
use crate::mcts::search::sample_weighted;
use crate::mcts::{Decision, Evaluator, LeafQuery, MctsConfig, Search, Steering};
use crate::sim::action::{Action, ActionType, FlatLayout};
use crate::sim::config::{Abilities, Config};
use crate::sim::mask::MaskCache;
use crate::sim::obs::Observation;

/// Time spent choosing moves, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MoveTimes {
    /// Moves made.
    pub moves: u64,
    /// Total time.
    pub total: Duration,
    /// Longest move.
    pub max: Duration,
}

impl MoveTimes {
    fn record(&mut self, took: Duration) {
        self.moves += 1;
        self.total += took;
        self.max = self.max.max(took);
    }

    /// Mean time per move (zero before the first).
    pub fn mean(&self) -> Duration {
        if self.moves == 0 {
            Duration::ZERO
        } else {
            self.total / self.moves as u32
        }
    }
}

/// Samples a network's policy over the valid actions.
pub struct PolicyAgent<E: Evaluator> {
    evaluator: E,
    layout: FlatLayout,
    abilities: Abilities,
    line_of_sight: bool,
    temperature: f32,
    state: E::State,
    prev_action: usize,
    rng: StdRng,
    masks: MaskCache,
    mask: Vec<bool>,
    times: MoveTimes,
    /// Keep the distribution each action was sampled from ([`Agent::internals`]).
    record: bool,
    last_dist: FlatDist,
    /// The distribution the last action was sampled from (unnormalised,
    /// masked, at the temperature), kept for [`Agent::explain`]; `None` when
    /// no action was valid.
    last_weights: Option<Vec<f64>>,
    /// The goal head's logits at the last move, if the network answered with
    /// them.
    goal_logits: Option<Vec<f32>>,
    /// What the other players said, as bans on its choices.
    chat: Conversation,
    /// After this many NOOPs in a row, the next move is sampled among the
    /// other valid actions ([`PolicyAgent::with_max_idle`]).
    max_idle: Option<u32>,
    /// NOOPs in a row so far.
    idle_run: u32,
}

impl<E: Evaluator> PolicyAgent<E> {
    /// An agent for envs of `env_config`, masking with or without line of sight
    /// as its network was trained, sampling at `temperature` (logits divided by
    /// it; 1 samples the policy as it is).
    pub fn new(evaluator: E, env_config: &Config, line_of_sight: bool, temperature: f32) -> Self {
        let state = evaluator.initial_state();
        Self {
            evaluator,
            layout: FlatLayout::new(env_config.world_size, env_config.abilities),
            abilities: env_config.abilities,
            line_of_sight,
            temperature,
            state,
            prev_action: 0,
            rng: StdRng::seed_from_u64(0),
            masks: MaskCache::default(),
            mask: Vec::new(),
            times: MoveTimes::default(),
            record: false,
            last_dist: FlatDist::default(),
            last_weights: None,
            goal_logits: None,
            chat: Conversation::new(
                FlatLayout::new(env_config.world_size, env_config.abilities),
                ConversationConfig::default(),
            ),
            max_idle: None,
            idle_run: 0,
        }
    }

    /// The same agent, never idle for more than `max_idle` moves in a row: once
    /// it has chosen NOOP that many times running, NOOP is masked out until it
    /// acts (if anything else is valid).
    ///
    /// Why: a recurrent human model can fall into an idle stretch that no
    /// person of its data ever showed (in the study's 18 episodes nobody idled
    /// more than 44 steps running; the BC human of `scripts/run` sometimes
    /// idles 60 and more beside an assistant that does nothing). Cutting such
    /// a stretch keeps an emulated person within its data's support.
    pub fn with_max_idle(mut self, max_idle: Option<u32>) -> Self {
        self.max_idle = max_idle;
        self
    }

    /// Time spent per move so far.
    pub fn move_times(&self) -> MoveTimes {
        self.times
    }
}

impl<E: Evaluator> fmt::Debug for PolicyAgent<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyAgent")
            .field("temperature", &self.temperature)
            .field("prev_action", &self.prev_action)
            .finish_non_exhaustive()
    }
}

impl<E: Evaluator + Send> Agent for PolicyAgent<E>
where
    E::State: Send,
{
    fn name(&self) -> &'static str {
        "PolicyAgent"
    }

    fn reset(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
        self.state = self.evaluator.initial_state();
        self.prev_action = 0;
        self.last_weights = None;
        self.goal_logits = None;
        self.chat.reset();
        self.idle_run = 0;
    }

    fn hear(&mut self, heard: &Heard) {
        self.chat.hear(heard);
    }

    fn speak(&mut self) -> Option<String> {
        let next_edit = self
            .layout
            .action(self.prev_action)
            .ok()
            .filter(|a| matches!(a.kind, ActionType::PlaceBlock | ActionType::BreakBlock));
        self.chat.speak(&Plan { next_edit })
    }

    fn goal_belief(&self) -> Option<Vec<u8>> {
        let logits = self.goal_logits.as_deref()?;
        Some(super::goal_argmax(logits, self.layout.size().num_cells()))
    }

    fn act(&mut self, obs: &Observation) -> Action {
        self.try_act(obs).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_act(&mut self, obs: &Observation) -> Result<Action, AgentError> {
        let started = Instant::now();
        self.mask.resize(self.layout.len(), false);
        // A human model acts on every step of an episode, and between two steps
        // only a few cells change: the cache redoes just those.
        self.masks.compute(
            obs,
            self.abilities,
            &self.layout,
            self.line_of_sight,
            &mut self.mask,
        );
        self.chat
            .steering()
            .apply_mask(&self.layout, &mut self.mask);
        if self
            .max_idle
            .is_some_and(|most| self.idle_run >= most && self.mask[1..].contains(&true))
        {
            // NOOP is flat action 0.
            self.mask[0] = false;
        }
        let query = LeafQuery {
            observation: obs,
            prev_action: Some(self.prev_action),
            state: &self.state,
            // Caution needs the goal head; otherwise the policy is all a
            // sampling agent uses.
            policy_only: self.chat.steering().caution() == 0.0,
        };
        let mut answers = self
            .evaluator
            .evaluate(std::slice::from_ref(&query))
            .map_err(|e| failed("PolicyAgent", &e))?;
        let answer = answers.pop().ok_or_else(|| AgentError::Failed {
            agent: "PolicyAgent",
            message: "the evaluator returned no answer".into(),
        })?;
        if let Some(goal) = &answer.goal_logits {
            let steering = self.chat.steering();
            if steering.caution() > 0.0 {
                let mut adjusted = goal.clone();
                steering.adjust_goal_logits(&mut adjusted, self.layout.size().num_cells());
                steering.apply_caution(&self.layout, &adjusted, &mut self.mask);
            }
        }
        let weights = masked_weights(&answer.policy_logits, &self.mask, self.temperature);
        let flat = match &weights {
            Some(w) => sample_weighted(w, &mut self.rng),
            None => 0,
        };
        if self.record {
            self.last_dist = weights
                .as_deref()
                .map_or_else(FlatDist::default, FlatDist::from_weights);
        }
        // Kept as they are (moved, not copied); the explanation and the goal
        // belief are worked out from them only when asked for.
        self.last_weights = weights;
        self.goal_logits = answer.goal_logits;
        self.state = answer.state;
        self.prev_action = flat;
        self.idle_run = if flat == 0 { self.idle_run + 1 } else { 0 };
        self.times.record(started.elapsed());
        let action = self.layout.action(flat).map_err(|e| AgentError::Failed {
            agent: "PolicyAgent",
            message: e.to_string(),
        })?;
        self.chat.acted(obs, action);
        Ok(action)
    }

    fn record_internals(&mut self, on: bool) {
        self.record = on;
    }

    /// The distribution the last action was sampled from, while recording
    /// (self-play uses it as the other-player head's target).
    fn internals(&self) -> Internals<'_> {
        if self.record {
            Internals::Distribution(&self.last_dist)
        } else {
            Internals::None
        }
    }

    /// The most probable actions of the distribution the last action was
    /// drawn from (the masked policy at the agent's temperature, so what the
    /// agent was likely to do), and the goal head's belief when the network
    /// answered with one. A human model in the person's seat thereby shows
    /// the move it predicts the person makes.
    fn explain(&self) -> Option<Explanation> {
        let weights = self.last_weights.as_deref()?;
        let cells = self.layout.size().num_cells();
        let (goal, goal_confidence) = self
            .goal_logits
            .as_deref()
            .map(|l| goal_with_confidence(l, cells))
            .unzip();
        Some(Explanation {
            goal,
            goal_confidence,
            top: most_probable(weights, TOP_ACTIONS)
                .into_iter()
                .filter_map(|(flat, probability)| {
                    Some(Considered {
                        action: self.layout.action(flat).ok()?,
                        visits: None,
                        probability,
                    })
                })
                .collect(),
            other_next: None,
        })
    }
}

/// The `n` most probable entries of unnormalised `weights` with their
/// probabilities, most first (ties by index); zero weights never.
fn most_probable(weights: &[f64], n: usize) -> Vec<(usize, f32)> {
    let total: f64 = weights.iter().sum();
    let mut best: Vec<(usize, f64)> = Vec::with_capacity(n + 1);
    for (i, &w) in weights.iter().enumerate() {
        if w <= 0.0 || (best.len() == n && best.last().is_some_and(|b| b.1 >= w)) {
            continue;
        }
        // Kept sorted; a strictly heavier weight goes before equal ones, so
        // ties keep the lower index first.
        let at = best.partition_point(|b| b.1 >= w);
        best.insert(at, (i, w));
        best.truncate(n);
    }
    best.into_iter()
        .map(|(i, w)| (i, (w / total) as f32))
        .collect()
}

/// Plans each move with [`Search`].
pub struct SearchAgent<E: Evaluator> {
    evaluator: E,
    search: Search<E::State>,
    state: E::State,
    prev_action: usize,
    last: Option<Decision<E::State>>,
    times: MoveTimes,
    record: bool,
    last_dist: FlatDist,
    /// What the other players said, steering the search.
    chat: Conversation,
}

impl<E: Evaluator> SearchAgent<E> {
    /// An agent playing player `me` of envs of `env_config`; `line_of_sight` as
    /// its network was trained.
    pub fn new(
        evaluator: E,
        env_config: &Config,
        me: usize,
        line_of_sight: bool,
        config: MctsConfig,
    ) -> Self {
        let state = evaluator.initial_state();
        Self {
            search: Search::new(env_config.clone(), me, line_of_sight, config, 0),
            evaluator,
            state,
            prev_action: 0,
            last: None,
            times: MoveTimes::default(),
            record: false,
            last_dist: FlatDist::default(),
            chat: Conversation::new(
                FlatLayout::new(env_config.world_size, env_config.abilities),
                ConversationConfig::default(),
            ),
        }
    }

    /// The place or break the search means to make next: the decided action
    /// when it is one, else the root's most visited (then most likely) edit.
    fn planned_edit(&self) -> Option<Action> {
        let layout = self.search.layout();
        let is_edit =
            |a: &Action| matches!(a.kind, ActionType::PlaceBlock | ActionType::BreakBlock);
        if let Some(a) = layout.action(self.prev_action).ok().filter(is_edit) {
            return Some(a);
        }
        let root = self.search.root()?;
        let priors = root.expansion.as_ref().map(|e| &e.priors);
        root.actions
            .iter()
            .enumerate()
            .filter_map(|(i, &flat)| {
                let a = layout.action(flat as usize).ok().filter(is_edit)?;
                let prior = priors.and_then(|p| p.get(i)).copied().unwrap_or(0.0);
                Some((root.visits[i], prior, a))
            })
            .max_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)))
            .map(|(_, _, a)| a)
    }

    /// What the search decided last (tree policy, value, goal prediction).
    pub fn last_decision(&self) -> Option<&Decision<E::State>> {
        self.last.as_ref()
    }

    /// Time spent per move so far.
    pub fn move_times(&self) -> MoveTimes {
        self.times
    }

    /// The search, for inspection.
    pub fn search(&self) -> &Search<E::State> {
        &self.search
    }
}

impl<E: Evaluator> fmt::Debug for SearchAgent<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchAgent")
            .field("config", self.search.config())
            .field("prev_action", &self.prev_action)
            .finish_non_exhaustive()
    }
}

impl<E: Evaluator + Send> Agent for SearchAgent<E>
where
    E::State: Send,
{
    fn name(&self) -> &'static str {
        "SearchAgent"
    }

    fn reset(&mut self, seed: u64) {
        self.search.clear();
        self.search.reseed(seed);
        self.state = self.evaluator.initial_state();
        self.prev_action = 0;
        self.last = None;
        self.chat.reset();
        self.search.steer(Steering::new());
    }

    fn hear(&mut self, heard: &Heard) {
        self.chat.hear(heard);
    }

    fn speak(&mut self) -> Option<String> {
        let next_edit = self.planned_edit();
        self.chat.speak(&Plan { next_edit })
    }

    fn act(&mut self, obs: &Observation) -> Action {
        self.try_act(obs).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_act(&mut self, obs: &Observation) -> Result<Action, AgentError> {
        let started = Instant::now();
        if let Some(steering) = self.chat.take_change() {
            self.search.steer(steering.clone());
        }
        self.search
            .set_root(obs, Some(self.prev_action), self.state.clone());
        self.search
            .run(&mut self.evaluator)
            .map_err(|e| failed("SearchAgent", &e))?;
        let decision = self
            .search
            .decide()
            .map_err(|e| failed("SearchAgent", &e))?;
        let flat = decision.action;
        self.state = decision.state_out.clone();
        self.prev_action = flat;
        if self.record {
            let weights: Vec<f64> = decision.policy.iter().map(|&p| f64::from(p)).collect();
            self.last_dist = FlatDist::from_weights(&weights);
        }
        self.last = Some(decision);
        self.times.record(started.elapsed());
        let action = self
            .search
            .layout()
            .action(flat)
            .map_err(|e| AgentError::Failed {
                agent: "SearchAgent",
                message: e.to_string(),
            })?;
        self.chat.acted(obs, action);
        Ok(action)
    }

    fn record_internals(&mut self, on: bool) {
        self.record = on;
    }

    fn explain(&self) -> Option<Explanation> {
        let decision = self.last.as_ref()?;
        let layout = self.search.layout();
        let cells = layout.size().num_cells();
        let (goal, goal_confidence) = decision
            .goal_logits
            .as_deref()
            .map(|l| goal_with_confidence(l, cells))
            .unzip();
        let root = self.search.root()?;
        let mut weighed: Vec<(u32, usize)> = root
            .actions
            .iter()
            .zip(&root.visits)
            .map(|(&a, &v)| (v, a as usize))
            .collect();
        weighed.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        let top = weighed
            .into_iter()
            .take(TOP_ACTIONS)
            .filter_map(|(visits, flat)| {
                Some(Considered {
                    action: layout.action(flat).ok()?,
                    visits: Some(visits),
                    probability: decision.policy.get(flat).copied().unwrap_or(0.0),
                })
            })
            .collect();
        let other_next = root
            .expansion
            .as_ref()
            .and_then(|e| e.other_action_probs.as_ref())
            .and_then(|p| {
                let best = (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b]))?;
                layout.action(best).ok()
            });
        Some(Explanation {
            goal,
            goal_confidence,
            top,
            other_next,
        })
    }

    fn goal_belief(&self) -> Option<Vec<u8>> {
        let logits = self.last.as_ref()?.goal_logits.as_deref()?;
        Some(super::goal_argmax(
            logits,
            self.search.layout().size().num_cells(),
        ))
    }

    /// The tree policy of the last move, while recording (the reference's piKL
    /// humans report it as their action distribution).
    fn internals(&self) -> Internals<'_> {
        if self.record {
            Internals::Distribution(&self.last_dist)
        } else {
            Internals::None
        }
    }
}

fn failed(agent: &'static str, error: &dyn std::error::Error) -> AgentError {
    AgentError::Failed {
        agent,
        message: error.to_string(),
    }
}

/// The unnormalised probabilities of `softmax(logits / temperature)` restricted
/// to `mask`; `None` if nothing is valid.
fn masked_weights(logits: &[f32], mask: &[bool], temperature: f32) -> Option<Vec<f64>> {
    let t = temperature.max(1e-6);
    let max = logits
        .iter()
        .zip(mask)
        .filter(|&(_, &ok)| ok)
        .map(|(&l, _)| l / t)
        .fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return None;
    }
    let weights: Vec<f64> = logits
        .iter()
        .zip(mask)
        .map(|(&l, &ok)| {
            if ok {
                f64::from((l / t - max).exp())
            } else {
                0.0
            }
        })
        .collect();
    Some(weights)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcts::testing::{Oracle, config, env, observe};
    use crate::sim::action::ActionType;

    #[test]
    fn search_agent_builds_the_goal_with_the_oracle() {
        let mut env = env();
        let search = MctsConfig {
            num_simulations: 40,
            argmax_tree_policy: true,
            ..MctsConfig::default()
        };
        let mut agent = SearchAgent::new(Oracle::new(), &config(), 1, false, search);
        agent.reset(3);
        for _ in 0..10 {
            let action = agent.try_act(&observe(&env, 1)).unwrap();
            if action.kind == ActionType::PlaceBlock {
                assert_eq!(action.block, env.goal().id_at(action.location));
            }
            if env.step(&[Action::NOOP, action]).unwrap().done {
                break;
            }
        }
        assert!(env.goal_completed());
        assert!(agent.move_times().moves >= 6);
        assert!(agent.last_decision().is_some());
    }

    /// An evaluator whose policy is NOOP almost surely.
    struct Idler;

    impl Evaluator for Idler {
        type State = ();
        type Error = std::convert::Infallible;

        fn initial_state(&self) {}

        fn evaluate(
            &mut self,
            queries: &[LeafQuery<'_, ()>],
        ) -> Result<Vec<crate::mcts::LeafEvaluation<()>>, Self::Error> {
            let layout = FlatLayout::new(config().world_size, config().abilities);
            Ok(queries
                .iter()
                .map(|_| crate::mcts::LeafEvaluation {
                    policy_logits: (0..layout.len())
                        .map(|a| if a == 0 { 20.0 } else { 0.0 })
                        .collect(),
                    value: 0.0,
                    goal_logits: None,
                    other_action_logits: None,
                    state: (),
                })
                .collect())
        }
    }

    #[test]
    fn max_idle_bounds_the_noops_in_a_row() {
        let env = env();
        let obs = observe(&env, 0);
        let kinds = |max_idle: Option<u32>| {
            let mut agent = PolicyAgent::new(Idler, &config(), false, 1.0).with_max_idle(max_idle);
            agent.reset(1);
            (0..40)
                .map(|_| agent.try_act(&obs).unwrap().kind)
                .collect::<Vec<_>>()
        };
        assert!(kinds(None).iter().all(|&k| k == ActionType::Noop));
        let bounded = kinds(Some(4));
        for (i, &k) in bounded.iter().enumerate() {
            // Four NOOPs, then an action, again and again.
            assert_eq!(k == ActionType::Noop, i % 5 != 4, "move {i}: {bounded:?}");
        }
    }

    #[test]
    fn policy_agent_follows_the_oracle_policy() {
        // The oracle's policy puts all its mass on placements at empty goal cells
        // (of any type), so every action is such a placement.
        let mut env = env();
        let mut agent = PolicyAgent::new(Oracle::new(), &config(), false, 1.0);
        agent.reset(0);
        for _ in 0..5 {
            let obs = observe(&env, 1);
            let action = agent.try_act(&obs).unwrap();
            assert_eq!(action.kind, ActionType::PlaceBlock);
            assert!(!env.goal().id_at(action.location).is_air());
            env.step(&[Action::NOOP, action]).unwrap();
        }
    }

    #[test]
    fn policy_agent_explains_its_most_probable_actions() {
        let env = env();
        let mut agent = PolicyAgent::new(Oracle::new(), &config(), false, 1.0);
        agent.reset(0);
        assert!(agent.explain().is_none(), "nothing before its first move");
        agent.record_internals(true);
        let obs = observe(&env, 1);
        let acted = agent.try_act(&obs).unwrap();
        let e = agent.explain().expect("an explanation after a move");
        assert_eq!(e.top.len(), TOP_ACTIONS);
        // The policy-only query gets no goal head, and a sampler has no
        // model of the other player.
        assert!(e.goal.is_none() && e.goal_confidence.is_none() && e.other_next.is_none());
        let Internals::Distribution(dist) = agent.internals() else {
            panic!("recording")
        };
        let layout = FlatLayout::new(config().world_size, config().abilities);
        let best = (0..dist.space_len())
            .map(|i| dist.prob(i))
            .fold(0.0, f64::max);
        assert!((f64::from(e.top[0].probability) - best).abs() < 1e-6);
        for (i, c) in e.top.iter().enumerate() {
            // Each is an action the oracle's policy wants, at the probability
            // the agent sampled it with, most probable first.
            assert_eq!(c.visits, None);
            assert_eq!(c.action.kind, ActionType::PlaceBlock);
            assert!(!env.goal().id_at(c.action.location).is_air());
            let flat = layout.flat(c.action).unwrap();
            assert!((f64::from(c.probability) - dist.prob(flat)).abs() < 1e-6);
            if i > 0 {
                assert!(c.probability <= e.top[i - 1].probability);
            }
        }
        assert!(dist.prob(layout.flat(acted).unwrap()) > 0.0);
        // Recorded as the view reads it: no visits (-1), probability × 1000.
        let record = crate::recording::ExplainRecord::of(&e, config().world_size);
        assert_eq!(record.top.len(), TOP_ACTIONS);
        assert_eq!(record.top[0][5], -1);
        assert_eq!(
            record.top[0][6],
            (e.top[0].probability * 1000.0).round() as i64
        );
        agent.reset(1);
        assert!(agent.explain().is_none(), "forgotten on reset");
    }

    #[test]
    fn most_probable_keeps_the_heaviest_in_order() {
        // Total 9: 3/9, 3/9 (the lower index first), then 2/9; the zero
        // weight and the lightest are dropped.
        let top = most_probable(&[1.0, 3.0, 0.0, 3.0, 2.0], 3);
        let indices: Vec<usize> = top.iter().map(|t| t.0).collect();
        assert_eq!(indices, [1, 3, 4]);
        assert!((top[0].1 - 1.0 / 3.0).abs() < 1e-7);
        assert!((top[2].1 - 2.0 / 9.0).abs() < 1e-7);
        assert_eq!(most_probable(&[0.0, 5.0], 3), [(1, 1.0)]);
        assert!(most_probable(&[0.0; 4], 2).is_empty());
    }

    fn sample_masked(logits: &[f32], mask: &[bool], t: f32, rng: &mut StdRng) -> usize {
        masked_weights(logits, mask, t).map_or(0, |w| sample_weighted(&w, rng))
    }

    #[test]
    fn masked_sampling_never_picks_an_invalid_action() {
        let logits = [5.0, 0.0, 9.0, 1.0];
        let mask = [true, true, false, true];
        let mut rng = StdRng::seed_from_u64(1);
        let mut counts = [0usize; 4];
        for _ in 0..4000 {
            counts[sample_masked(&logits, &mask, 1.0, &mut rng)] += 1;
        }
        assert_eq!(counts[2], 0);
        // exp(5) : exp(0) : exp(1) = 148.4 : 1 : 2.72.
        let p0 = counts[0] as f64 / 4000.0;
        assert!((p0 - 148.4 / 152.1).abs() < 0.02, "{p0}");
        // A low temperature sharpens towards the best valid action.
        let mut rng = StdRng::seed_from_u64(2);
        assert!((0..200).all(|_| sample_masked(&logits, &mask, 0.05, &mut rng) == 0));
        assert_eq!(sample_masked(&logits, &[false; 4], 1.0, &mut rng), 0);
        // The recorded distribution is the one sampled from, normalised.
        let dist = FlatDist::from_weights(&masked_weights(&logits, &mask, 1.0).unwrap());
        let total = 1.0 + 1f64.exp() + 5f64.exp();
        assert_eq!(dist.space_len(), 4);
        assert_eq!(dist.prob(2), 0.0);
        assert!((dist.prob(0) - 5f64.exp() / total).abs() < 1e-6);
        assert!((dist.prob(3) - 1f64.exp() / total).abs() < 1e-6);
    }
}
