//! What an agent can show a person about its last move: the goal it believes
//! in, the actions it weighed, and what it expects the other player to do next
//! (the viewer's overlays, recorded by the daemon).

use crate::sim::action::Action;

/// An action an agent weighed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Considered {
    /// The action.
    pub action: Action,
    /// Its search visits, for planning agents.
    pub visits: Option<u32>,
    /// Its probability under the agent's policy (the tree policy for planners).
    pub probability: f32,
}

/// An agent's account of its last move.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explanation {
    /// Per cell (C order), the most likely goal block.
    pub goal: Option<Vec<u8>>,
    /// Per cell, that block's probability scaled to 0..=255.
    pub goal_confidence: Option<Vec<u8>>,
    /// The most weighed actions, most first.
    pub top: Vec<Considered>,
    /// The other player's most likely next action, as the agent predicts it.
    pub other_next: Option<Action>,
}

/// How many weighed actions an explanation keeps.
pub const TOP_ACTIONS: usize = 5;

/// The most likely block per cell and its probability (0..=255), from goal
/// logits laid out `[block][cell]`.
pub fn goal_with_confidence(logits: &[f32], cells: usize) -> (Vec<u8>, Vec<u8>) {
    let blocks = logits.len() / cells.max(1);
    let mut goal = Vec::with_capacity(cells);
    let mut confidence = Vec::with_capacity(cells);
    for c in 0..cells {
        let at = |b: usize| logits[b * cells + c];
        let (best, max) = (0..blocks)
            .map(|b| (b, at(b)))
            .fold((0, f32::NEG_INFINITY), |m, x| if x.1 > m.1 { x } else { m });
        let total: f32 = (0..blocks).map(|b| (at(b) - max).exp()).sum();
        goal.push(best as u8);
        confidence.push((255.0 / total).round().clamp(0.0, 255.0) as u8);
    }
    (goal, confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_is_the_argmax_probability() {
        // Two cells, three blocks: cell 0 sure of block 2, cell 1 even.
        let logits = [0.0, 0.0, 0.0, 0.0, 10.0, 0.0];
        let (goal, conf) = goal_with_confidence(&logits, 2);
        assert_eq!(goal, vec![2, 0]);
        assert_eq!(conf[0], 255);
        assert_eq!(conf[1], 85);
    }
}
