//! Pass predicates: what a robustness test accepts, evaluated on an episode's
//! [`Outcome`]. `any_of` lets a test accept several reasonable behaviours.

use serde::Deserialize;

use super::format::BlockName;
use crate::sim::block::{BlockId, Blocks};
use crate::sim::coords::Cell;

/// A place or break the assistant made, with the block the cell held before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssistantEdit {
    /// The cell.
    pub cell: Cell,
    /// What it held before.
    pub before: BlockId,
    /// What it holds after (air for a break).
    pub after: BlockId,
}

/// What a test episode left behind.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The goal.
    pub goal: Blocks,
    /// The world at the end.
    pub world: Blocks,
    /// The assistant's places and breaks, in order.
    pub assistant_edits: Vec<AssistantEdit>,
}

impl Outcome {
    /// The assistant's places: air became a block.
    fn places(&self) -> impl Iterator<Item = &AssistantEdit> {
        self.assistant_edits
            .iter()
            .filter(|e| e.before == BlockId::AIR && e.after != BlockId::AIR)
    }

    /// Places that put the goal's block in an empty goal cell.
    pub fn correct_places(&self) -> usize {
        self.places()
            .filter(|e| self.goal.get(e.cell) == e.after)
            .count()
    }

    /// Places of a block the goal does not have there.
    pub fn wrong_places(&self) -> usize {
        self.places()
            .filter(|e| self.goal.get(e.cell) != e.after)
            .count()
    }

    /// Breaks of a block the goal has there.
    pub fn correct_breaks(&self) -> usize {
        self.assistant_edits
            .iter()
            .filter(|e| e.after == BlockId::AIR && e.before != BlockId::AIR)
            .filter(|e| self.goal.get(e.cell) == e.before)
            .count()
    }

    /// The share of goal cells whose block the world matches (over the cells
    /// above the floor, as the goal percentage counts them).
    pub fn goal_fraction(&self) -> f64 {
        let size = self.goal.size();
        let (mut right, mut all) = (0usize, 0usize);
        for c in size.cells().filter(|c| c.y > 0) {
            all += 1;
            right += usize::from(self.world.get(c) == self.goal.get(c));
        }
        right as f64 / all.max(1) as f64
    }
}

/// When a test passes.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Predicate {
    /// At least one holds.
    AnyOf(Vec<Predicate>),
    /// Every one holds.
    AllOf(Vec<Predicate>),
    /// It does not hold.
    Not(Box<Predicate>),
    /// The world ends with `block` at `cell`.
    CellIs {
        /// The cell.
        cell: [i32; 3],
        /// The block.
        block: BlockName,
    },
    /// The world matches the goal in at least this share of its cells (0 to 1).
    GoalFractionAtLeast(f64),
    /// The assistant placed at least this many goal blocks in goal cells.
    CorrectPlacesAtLeast(usize),
    /// The assistant placed at most this many blocks the goal does not have.
    WrongPlacesAtMost(usize),
    /// The assistant broke at most this many blocks the goal has.
    CorrectBreaksAtMost(usize),
    /// The assistant never placed at `cell` (`block`: only that block counts).
    NeverPlacesAt {
        /// The cell.
        cell: [i32; 3],
        /// Only this block counts, if given.
        #[serde(default)]
        block: Option<BlockName>,
    },
}

impl Predicate {
    /// Whether `outcome` passes, with every cell moved by `offset` (a
    /// translated variant).
    pub fn holds(&self, outcome: &Outcome, offset: [i32; 3]) -> bool {
        let at = |c: &[i32; 3]| Cell::new(c[0] + offset[0], c[1] + offset[1], c[2] + offset[2]);
        match self {
            Self::AnyOf(all) => all.iter().any(|p| p.holds(outcome, offset)),
            Self::AllOf(all) => all.iter().all(|p| p.holds(outcome, offset)),
            Self::Not(p) => !p.holds(outcome, offset),
            Self::CellIs { cell, block } => outcome.world.get(at(cell)) == block.0,
            Self::GoalFractionAtLeast(f) => outcome.goal_fraction() >= *f,
            Self::CorrectPlacesAtLeast(n) => outcome.correct_places() >= *n,
            Self::WrongPlacesAtMost(n) => outcome.wrong_places() <= *n,
            Self::CorrectBreaksAtMost(n) => outcome.correct_breaks() <= *n,
            Self::NeverPlacesAt { cell, block } => !outcome
                .places()
                .any(|e| e.cell == at(cell) && block.is_none_or(|b| b.0 == e.after)),
        }
    }

    /// Lists the cells the predicate names, each with its field under `path`,
    /// for the format's checks.
    pub(crate) fn cells(&self, path: &str, out: &mut Vec<(String, [i32; 3])>) {
        match self {
            Self::AnyOf(all) | Self::AllOf(all) => {
                let key = if matches!(self, Self::AnyOf(_)) {
                    "any_of"
                } else {
                    "all_of"
                };
                for (k, p) in all.iter().enumerate() {
                    p.cells(&format!("{path}.{key}[{k}]"), out);
                }
            }
            Self::Not(p) => p.cells(&format!("{path}.not"), out),
            Self::CellIs { cell, .. } => out.push((format!("{path}.cell_is.cell"), *cell)),
            Self::NeverPlacesAt { cell, .. } => {
                out.push((format!("{path}.never_places_at.cell"), *cell));
            }
            Self::GoalFractionAtLeast(_)
            | Self::CorrectPlacesAtLeast(_)
            | Self::WrongPlacesAtMost(_)
            | Self::CorrectBreaksAtMost(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::coords::WorldSize;

    const PLANKS: BlockId = BlockId::PLANKS;

    /// Goal: planks at (1, 2, 1) and (2, 2, 1). The assistant placed planks at
    /// (1, 2, 1), glass at (3, 2, 1), and broke the dirt at (2, 1, 2).
    fn outcome() -> Outcome {
        let size = WorldSize::new(5, 5, 5);
        let mut goal = Blocks::initial_world(size);
        goal.set(Cell::new(1, 2, 1), PLANKS);
        goal.set(Cell::new(2, 2, 1), PLANKS);
        let mut world = Blocks::initial_world(size);
        world.set(Cell::new(1, 2, 1), PLANKS);
        world.set(Cell::new(3, 2, 1), BlockId::GLASS);
        world.set(Cell::new(2, 1, 2), BlockId::AIR);
        let edit = |c: Cell, before, after| AssistantEdit {
            cell: c,
            before,
            after,
        };
        Outcome {
            goal,
            world,
            assistant_edits: vec![
                edit(Cell::new(1, 2, 1), BlockId::AIR, PLANKS),
                edit(Cell::new(3, 2, 1), BlockId::AIR, BlockId::GLASS),
                edit(Cell::new(2, 1, 2), BlockId::DIRT, BlockId::AIR),
            ],
        }
    }

    fn parse(v: serde_json::Value) -> Predicate {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn counts_follow_the_goal() {
        let o = outcome();
        assert_eq!(
            (o.correct_places(), o.wrong_places(), o.correct_breaks()),
            (1, 1, 1)
        );
        // 100 cells above the floor; the world differs from the goal at three.
        assert!(
            (o.goal_fraction() - 0.97).abs() < 1e-9,
            "{}",
            o.goal_fraction()
        );
    }

    #[test]
    fn predicates_hold_or_not_as_the_outcome_says() {
        let o = outcome();
        let cases = [
            (
                serde_json::json!({"cell_is": {"cell": [1, 2, 1], "block": "planks"}}),
                true,
            ),
            (
                serde_json::json!({"cell_is": {"cell": [2, 2, 1], "block": "planks"}}),
                false,
            ),
            (serde_json::json!({"correct_places_at_least": 1}), true),
            (serde_json::json!({"correct_places_at_least": 2}), false),
            (serde_json::json!({"wrong_places_at_most": 0}), false),
            (serde_json::json!({"correct_breaks_at_most": 1}), true),
            (
                serde_json::json!({"never_places_at": {"cell": [3, 2, 1]}}),
                false,
            ),
            (
                serde_json::json!({"never_places_at": {"cell": [3, 2, 1], "block": "planks"}}),
                true,
            ),
            (serde_json::json!({"goal_fraction_at_least": 0.98}), false),
            (
                serde_json::json!({"any_of": [{"wrong_places_at_most": 0}, {"correct_places_at_least": 1}]}),
                true,
            ),
            (
                serde_json::json!({"all_of": [{"wrong_places_at_most": 0}, {"correct_places_at_least": 1}]}),
                false,
            ),
            (
                serde_json::json!({"not": {"correct_places_at_least": 2}}),
                true,
            ),
        ];
        for (json, want) in cases {
            assert_eq!(parse(json.clone()).holds(&o, [0, 0, 0]), want, "{json}");
        }
    }

    #[test]
    fn translated_variants_move_the_cells() {
        let o = outcome();
        let p = parse(serde_json::json!({"cell_is": {"cell": [0, 2, 0], "block": "planks"}}));
        assert!(!p.holds(&o, [0, 0, 0]));
        assert!(p.holds(&o, [1, 0, 1]));
    }
}
