//! Steering from outside the search: actions a person has ruled out and what
//! they have said about the goal (Gnomes at Night's "remove rejected actions
//! from the planner's choices", issue 22).
//!
//! A [`Steering`] masks actions in every node where the searching player
//! chooses (not only the root: a plan that places a rejected block three moves
//! from now is as unwanted as one that places it now), and adds log-odds to the
//! goal head's prediction wherever the search reads it (equation 4's expected
//! rewards and the goal it reports). The network's inputs are untouched, so
//! the paper's networks and weights serve as they are. A caution level keeps
//! placements to blocks the adjusted goal prediction is sure of: in a child,
//! by its parent's prediction (the one that planned the step into it); at the
//! root, by the last move's.

use std::collections::BTreeMap;

use crate::sim::action::{ActionType, FlatLayout};
use crate::sim::block::BlockId;
use crate::sim::coords::CellIndex;

/// Banned actions, a pause on all edits, and goal log-odds adjustments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Steering {
    /// Banned flat actions, one flag per flat index (empty: none banned).
    banned: Vec<bool>,
    banned_count: usize,
    /// Whether every place and break is held back.
    paused: bool,
    /// Added to the goal head's logit of `block` at `cell`.
    goal_bias: BTreeMap<(CellIndex, BlockId), f32>,
    /// Placements need at least this goal probability (0: any).
    caution: f32,
}

impl Steering {
    /// Nothing banned, nothing adjusted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the steering changes nothing.
    pub fn is_neutral(&self) -> bool {
        self.banned_count == 0 && !self.paused && self.goal_bias.is_empty() && self.caution == 0.0
    }

    /// Bans one flat action of `layout` (NOOP cannot be banned: the player
    /// always has it).
    pub fn ban(&mut self, layout: &FlatLayout, flat: usize) {
        if flat == 0 || flat >= layout.len() {
            return;
        }
        if self.banned.len() != layout.len() {
            self.banned = vec![false; layout.len()];
            self.banned_count = 0;
        }
        if !self.banned[flat] {
            self.banned[flat] = true;
            self.banned_count += 1;
        }
    }

    /// Lifts the ban on one flat action.
    pub fn lift(&mut self, flat: usize) {
        if let Some(b) = self.banned.get_mut(flat)
            && *b
        {
            *b = false;
            self.banned_count -= 1;
        }
    }

    /// Whether a flat action is banned (pauses aside).
    pub fn is_banned(&self, flat: usize) -> bool {
        self.banned.get(flat).copied().unwrap_or(false)
    }

    /// How many flat actions are banned.
    pub fn banned_count(&self) -> usize {
        self.banned_count
    }

    /// Holds back (or lets go) every place and break.
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    /// Whether edits are held back.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Adds `delta` to the goal logit of `block` at `cell` (on top of earlier
    /// adjustments, kept within ±20 so no message makes a block certain).
    pub fn bias_goal(&mut self, cell: CellIndex, block: BlockId, delta: f32) {
        let b = self.goal_bias.entry((cell, block)).or_insert(0.0);
        *b = (*b + delta).clamp(-20.0, 20.0);
    }

    /// The adjustment of `block` at `cell`.
    pub fn goal_bias(&self, cell: CellIndex, block: BlockId) -> f32 {
        self.goal_bias.get(&(cell, block)).copied().unwrap_or(0.0)
    }

    /// Only placements whose block the (adjusted) goal prediction gives at
    /// least `p` at their cell stay choosable: an assistant told it was wrong
    /// keeps to what it is sure of. Clamped to [0, 0.99].
    pub fn set_caution(&mut self, p: f32) {
        self.caution = p.clamp(0.0, 0.99);
    }

    /// The least goal probability a placement needs.
    pub fn caution(&self) -> f32 {
        self.caution
    }

    /// With caution, clears the placements in `mask` whose block has less
    /// than the caution's probability at its cell under `goal_logits` (laid out
    /// `[block][cell]`, adjustments already added).
    pub fn apply_caution(&self, layout: &FlatLayout, goal_logits: &[f32], mask: &mut [bool]) {
        let Some(offset) = layout.offset(ActionType::PlaceBlock) else {
            return;
        };
        let cells = layout.size().num_cells();
        if self.caution <= 0.0 || cells == 0 || !goal_logits.len().is_multiple_of(cells) {
            return;
        }
        let blocks = goal_logits.len() / cells;
        for cell in 0..cells {
            let logit = |b: usize| goal_logits[b * cells + cell];
            let max = (0..blocks).map(logit).fold(f32::NEG_INFINITY, f32::max);
            let total: f32 = (0..blocks).map(|b| (logit(b) - max).exp()).sum();
            for b in 0..blocks {
                let p = (logit(b) - max).exp() / total;
                if p < self.caution
                    && let Some(m) = mask.get_mut(offset + b * cells + cell)
                {
                    *m = false;
                }
            }
        }
    }

    /// Clears `mask`'s banned actions, and with a pause every place and break.
    pub fn apply_mask(&self, layout: &FlatLayout, mask: &mut [bool]) {
        if self.banned_count > 0 && self.banned.len() == mask.len() {
            for (m, &b) in mask.iter_mut().zip(&self.banned) {
                *m &= !b;
            }
        }
        if self.paused {
            for kind in [ActionType::PlaceBlock, ActionType::BreakBlock] {
                if let Some(offset) = layout.offset(kind) {
                    let end = (offset + layout.block_len(kind)).min(mask.len());
                    mask[offset.min(end)..end].fill(false);
                }
            }
        }
    }

    /// Adds the goal adjustments to goal logits laid out `[block][cell]`.
    pub fn adjust_goal_logits(&self, logits: &mut [f32], num_cells: usize) {
        for (&(cell, block), &delta) in &self.goal_bias {
            if let Some(l) = logits.get_mut(usize::from(block.0) * num_cells + cell.get()) {
                *l += delta;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::action::Action;
    use crate::sim::config::Abilities;
    use crate::sim::coords::WorldSize;

    #[test]
    fn bans_pauses_and_goal_adjustments() {
        let layout = FlatLayout::new(
            WorldSize::new(3, 3, 3),
            Abilities {
                teleportation: false,
                flying: true,
                inf_blocks: true,
            },
        );
        let mut s = Steering::new();
        assert!(s.is_neutral());
        let place = layout
            .flat(Action::new(
                ActionType::PlaceBlock,
                CellIndex(4),
                BlockId::GLASS,
            ))
            .unwrap();
        s.ban(&layout, place);
        s.ban(&layout, 0);
        let mut mask = vec![true; layout.len()];
        s.apply_mask(&layout, &mut mask);
        assert!(!mask[place] && mask[0]);
        assert_eq!(mask.iter().filter(|m| !**m).count(), 1);
        s.lift(place);
        assert!(s.is_neutral());
        s.set_paused(true);
        let mut mask = vec![true; layout.len()];
        s.apply_mask(&layout, &mut mask);
        let brk = layout
            .flat(Action::new(
                ActionType::BreakBlock,
                CellIndex(2),
                BlockId::AIR,
            ))
            .unwrap();
        assert!(!mask[place] && !mask[brk] && mask[0]);
        // Caution: only the likely block at a cell stays placeable.
        let s2 = {
            let mut c = Steering::new();
            c.set_caution(0.5);
            c
        };
        let mut goal = vec![0.0; 10 * 27];
        goal[BlockId::GLASS.0 as usize * 27 + 4] = 5.0;
        let mut mask = vec![true; layout.len()];
        s2.apply_caution(&layout, &goal, &mut mask);
        assert!(mask[place]);
        let planks = layout
            .flat(Action::new(
                ActionType::PlaceBlock,
                CellIndex(4),
                BlockId::PLANKS,
            ))
            .unwrap();
        assert!(!mask[planks] && mask[brk] && mask[0]);
        s.bias_goal(CellIndex(1), BlockId::GLASS, -30.0);
        let mut logits = vec![0.0; 10 * 27];
        s.adjust_goal_logits(&mut logits, 27);
        assert_eq!(logits[4 * 27 + 1], -20.0);
    }
}
