//! The context model as the search's goal head: any [`Evaluator`] whose goal
//! logits are replaced by the model's, and whose policy prior is tilted towards
//! what the model expects to pay.
//!
//! The tilt exists because a network trained here puts almost no prior mass on
//! places (`models/README.md`: the second assistant learned to leave the house
//! alone), and a search of a few dozen simulations never visits an action its
//! prior ignores, however good the goal model says it is. Each place of block
//! `b` gains `tilt * ln(p_b / (1 - p_b))` of logit where the model gives `b`
//! more than 1/2 (so a sure place rises and an unsure one is left as the
//! network had it), and each break of a block the model believes in loses the
//! same amount; moves and no-ops are untouched. With `tilt` 0 the prior is the
//! network's.
//!
//! Two rules keep the assistant from feeding on its own guesses. The model reads
//! the world with the assistant's own blocks taken out (their cells read as
//! air): a guessed block is no evidence, and counting it would let one wrong
//! guess extend itself along a wall. And a cell the person last touched that is
//! air now is one they cleared, most often the assistant's wrong block; nothing
//! is proposed or raised there, so a correction is not undone.
//!
//! A tilt cannot make the search walk: a place out of reach is not a valid
//! action, and a network that never learned to approach the house gives the
//! steps towards it no mass either. So a [`Guide`] may add one more proposal:
//! the oracle's legs ([`crate::agents::walker`]) heading for the cells where
//! the model is surer than its threshold, lowest layer first. Its next action
//! gets `weight` of the prior's mass. The search still judges every proposal by
//! the goal model's expected reward and the network's value, so a guided place
//! that does not pay is not chosen.

use std::collections::VecDeque;
use std::sync::Arc;

use super::GoalModel;
use super::context::WorldView;
use crate::agents::oracle::edits_towards_goal;
use crate::agents::walker::{Walker, WantedEdit};
use crate::mcts::{Evaluator, LeafEvaluation, LeafQuery};
use crate::sim::action::{Action, ActionType, FlatLayout};
use crate::sim::block::{BlockId, NUM_BLOCKS};
use crate::sim::config::Config;
use crate::sim::obs::{CURRENT_PLAYER, NO_ONE, Observation, WorldChannel};

/// An evaluator whose goal predictions come from a [`GoalModel`].
#[derive(Debug)]
pub struct GoalModelEvaluator<E> {
    inner: E,
    model: Arc<GoalModel>,
    layout: FlatLayout,
    tilt: f32,
    guide: Option<Guide>,
    /// The world the model reads (see the module doc), reused between leaves.
    evidence: Vec<u8>,
    /// The last worlds predicted and their goal logits.
    recent: VecDeque<(Vec<u8>, Vec<f32>)>,
}

/// Worlds whose predictions are kept: a search's leaves differ from the root
/// by a few edits at most, and most leaves are reached by moves.
const RECENT_WORLDS: usize = 8;

impl<E> GoalModelEvaluator<E> {
    /// `inner`'s answers with `model`'s goal, for flat actions of `layout`, the
    /// prior tilted by `tilt` (see the module doc).
    pub fn new(inner: E, model: Arc<GoalModel>, layout: FlatLayout, tilt: f32) -> Self {
        Self {
            inner,
            model,
            layout,
            tilt,
            guide: None,
            evidence: Vec::new(),
            recent: VecDeque::new(),
        }
    }

    /// The same with `guide`'s proposal mixed into the prior.
    pub fn with_guide(mut self, guide: Guide) -> Self {
        self.guide = Some(guide);
        self
    }
}

/// Proposes the next step towards the cells the goal model is sure of (see
/// the module doc).
#[derive(Debug)]
pub struct Guide {
    walker: Walker,
    /// The best block's probability above which a cell is built.
    threshold: f64,
    /// The share of the prior the proposal gets.
    weight: f32,
    wanted: Vec<WantedEdit>,
    belief: Vec<u8>,
    /// Whether cells the person cleared may be built again.
    refill: bool,
}

impl Guide {
    /// A guide for envs with `config`, building cells above `threshold`, with
    /// `weight` of the prior (in `[0, 1]`).
    pub fn new(config: &Config, threshold: f64, weight: f32) -> Self {
        Self {
            walker: Walker::new(config),
            threshold,
            weight: weight.clamp(0.0, 1.0),
            wanted: Vec::new(),
            belief: Vec::new(),
            refill: false,
        }
    }

    /// The same, building again in cells the person cleared when the model is
    /// sure of them (the human model breaks goal blocks about as often as
    /// wrong ones).
    pub fn refilling(mut self, refill: bool) -> Self {
        self.refill = refill;
        self
    }

    /// The action towards the sure cells of `goal_logits` from `obs`, if any.
    fn propose(&mut self, obs: &Observation, goal_logits: &[f32]) -> Option<Action> {
        let cells = obs.size().num_cells();
        let world = &obs.world[..cells];
        let last = obs.channel(WorldChannel::LastInteracted);
        self.belief.clear();
        self.belief.extend_from_slice(world);
        let threshold = self.threshold.ln() as f32;
        for (cell, belief) in self.belief.iter_mut().enumerate() {
            if world[cell] != 0 || (cleared(last[cell]) && !self.refill) {
                continue;
            }
            // The surest placeable block, if sure enough: air cells only, so
            // the guide never breaks.
            let best = (1..NUM_BLOCKS)
                .map(|b| (b, goal_logits[b * cells + cell]))
                .filter(|&(b, _)| BlockId(b as u8).is_placeable())
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((b, logit)) = best
                && logit > threshold
            {
                *belief = b as u8;
            }
        }
        edits_towards_goal(obs, &self.belief, &mut self.wanted);
        log::debug!(
            "guide: {} sure cells, first {:?}",
            self.wanted.len(),
            self.wanted.first()
        );
        let lowest = self.wanted.first()?.cell.y;
        let band = self.wanted.partition_point(|e| e.cell.y <= lowest);
        self.walker
            .try_act(obs, &self.wanted[..band])
            .or_else(|| self.walker.try_act(obs, &self.wanted[band..]))
    }
}

impl<E: Evaluator> Evaluator for GoalModelEvaluator<E> {
    type State = E::State;
    type Error = E::Error;

    fn initial_state(&self) -> Self::State {
        self.inner.initial_state()
    }

    fn evaluate(
        &mut self,
        queries: &[LeafQuery<'_, Self::State>],
    ) -> Result<Vec<LeafEvaluation<Self::State>>, Self::Error> {
        let mut answers = self.inner.evaluate(queries)?;
        for (query, answer) in queries.iter().zip(&mut answers) {
            // A policy-only answer reads the goal model only through the prior.
            if query.policy_only && self.tilt == 0.0 && self.guide.is_none() {
                continue;
            }
            let obs = query.observation;
            let size = obs.size();
            let cells = size.num_cells();
            let world = &obs.world[..cells];
            let last = obs.channel(WorldChannel::LastInteracted);
            self.evidence.clear();
            self.evidence
                .extend(world.iter().zip(last).map(|(&b, &who)| {
                    if who == CURRENT_PLAYER && b != 0 {
                        0
                    } else {
                        b
                    }
                }));
            // Leaves reached by moves see the world of their parent: keep the
            // last few predictions by the world they were made for.
            let logits = match self.recent.iter().position(|(w, _)| *w == self.evidence) {
                Some(i) => self.recent[i].1.clone(),
                None => {
                    let logits = self
                        .model
                        .goal_logits(&WorldView::new(size, &self.evidence));
                    if self.recent.len() == RECENT_WORLDS {
                        self.recent.pop_front();
                    }
                    self.recent
                        .push_back((self.evidence.clone(), logits.clone()));
                    logits
                }
            };
            if self.tilt != 0.0 {
                tilt_prior(
                    &mut answer.policy_logits,
                    &logits,
                    world,
                    last,
                    &self.layout,
                    self.tilt,
                );
            }
            if let Some(guide) = &mut self.guide
                && let Some(action) = guide.propose(obs, &logits)
                && let Some(flat) = self.layout.flat(action)
            {
                mix_in(&mut answer.policy_logits, flat, guide.weight);
            }
            if !query.policy_only {
                answer.goal_logits = Some(logits);
            }
        }
        Ok(answers)
    }
}

/// Whether an air cell last touched by `who` was cleared by another player.
fn cleared(who: u8) -> bool {
    who != NO_ONE && who != CURRENT_PLAYER
}

/// Gives `flat` `weight` of the mass of the softmax of `logits`, the rest
/// shared as before, and writes the mixture back as logits.
fn mix_in(logits: &mut [f32], flat: usize, weight: f32) {
    if flat >= logits.len() || weight <= 0.0 {
        return;
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|l| (l - max).exp()).sum();
    for (i, l) in logits.iter_mut().enumerate() {
        let p = (1.0 - weight) * (*l - max).exp() / sum + if i == flat { weight } else { 0.0 };
        *l = p.max(1e-30).ln();
    }
}

/// Adds the goal model's log-odds to the places and breaks of `policy` (see the
/// module doc).
fn tilt_prior(
    policy: &mut [f32],
    goal_logits: &[f32],
    world: &[u8],
    last: &[u8],
    layout: &FlatLayout,
    tilt: f32,
) {
    let cells = world.len();
    let log_odds = |p: f32| {
        let p = p.clamp(1e-6, 1.0 - 1e-6);
        (p / (1.0 - p)).ln()
    };
    for (flat, logit) in policy.iter_mut().enumerate() {
        let Ok(action) = layout.action(flat) else {
            continue;
        };
        let cell = action.location.0 as usize;
        if cell >= cells {
            continue;
        }
        let p = |b: usize| goal_logits[b * cells + cell].exp();
        match action.kind {
            ActionType::PlaceBlock => {
                let b = usize::from(action.block.0);
                if b < NUM_BLOCKS && world[cell] == 0 && !cleared(last[cell]) {
                    let odds = log_odds(p(b));
                    if odds > 0.0 {
                        *logit += tilt * odds;
                    }
                }
            }
            ActionType::BreakBlock => {
                let here = usize::from(world[cell]);
                if here < NUM_BLOCKS {
                    let odds = log_odds(p(here));
                    if odds > 0.0 {
                        *logit -= tilt * odds;
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::block::BlockId;
    use crate::sim::config::Abilities;
    use crate::sim::coords::{Cell, WorldSize};

    fn layout() -> FlatLayout {
        FlatLayout::new(
            WorldSize::new(3, 3, 3),
            Abilities {
                teleportation: false,
                flying: true,
                inf_blocks: true,
            },
        )
    }

    /// Goal logits giving `block` probability `p` at `cell` and the rest to air.
    fn sure_of(size: WorldSize, cell: Cell, block: BlockId, p: f32) -> Vec<f32> {
        let cells = size.num_cells();
        let mut logits = vec![0f32.ln(); NUM_BLOCKS * cells];
        logits[..cells].fill(0.0);
        let i = size.index(cell).0 as usize;
        logits[i] = (1.0 - p).ln();
        logits[usize::from(block.0) * cells + i] = p.ln();
        logits
    }

    #[test]
    fn the_tilt_raises_sure_places_and_lowers_breaks_of_believed_blocks() {
        let layout = layout();
        let size = layout.size();
        let cell = Cell::new(1, 1, 1);
        let world = vec![0u8; size.num_cells()];
        let last = vec![NO_ONE; size.num_cells()];
        let place = |b: BlockId| {
            layout
                .flat(Action {
                    kind: ActionType::PlaceBlock,
                    location: size.index(cell),
                    block: b,
                })
                .unwrap()
        };
        let logits = sure_of(size, cell, BlockId::PLANKS, 0.9);
        let mut policy = vec![0f32; layout.len()];
        tilt_prior(&mut policy, &logits, &world, &last, &layout, 1.0);
        assert!((policy[place(BlockId::PLANKS)] - 9f32.ln()).abs() < 1e-4);
        assert_eq!(policy[place(BlockId::GLASS)], 0.0, "an unsure block stays");
        // The person cleared the cell: nothing is raised there.
        let mut cleared_last = last.clone();
        cleared_last[size.index(cell).0 as usize] = 2;
        let mut policy = vec![0f32; layout.len()];
        tilt_prior(&mut policy, &logits, &world, &cleared_last, &layout, 1.0);
        assert_eq!(policy[place(BlockId::PLANKS)], 0.0);
        // A block the model believes in is not to be broken.
        let mut built = world.clone();
        built[size.index(cell).0 as usize] = BlockId::PLANKS.0;
        let break_it = layout
            .flat(Action {
                kind: ActionType::BreakBlock,
                location: size.index(cell),
                block: BlockId::AIR,
            })
            .unwrap();
        let mut policy = vec![0f32; layout.len()];
        tilt_prior(&mut policy, &logits, &built, &last, &layout, 1.0);
        assert!(policy[break_it] < -2.0);
    }

    #[test]
    fn mixing_in_gives_the_proposal_its_share_and_keeps_the_rest_in_proportion() {
        let mut logits = vec![0f32, 1f32.ln(), 3f32.ln(), 0f32];
        // Softmax before: 1/6, 1/6, 1/2, 1/6.
        mix_in(&mut logits, 3, 0.5);
        let p: Vec<f32> = logits.iter().map(|l| l.exp()).collect();
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!((p[3] - (0.5 + 0.5 / 6.0)).abs() < 1e-5);
        assert!((p[2] / p[0] - 3.0).abs() < 1e-4);
        // Out of range or no weight: unchanged.
        let before = logits.clone();
        mix_in(&mut logits, 9, 0.5);
        mix_in(&mut logits, 0, 0.0);
        assert_eq!(logits, before);
    }
}
