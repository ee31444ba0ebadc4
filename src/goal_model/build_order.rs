//! The order people build a house in, as partial builds imitate it: layer by
//! layer from the ground up, each layer grown outward from where it started,
//! the next layer begun before the last is finished, now and then in no order
//! at all, with the odd wrong block. The goal model learns from such builds and
//! the assistant's goal pretraining (`train::assistant::partial_builds`) trains
//! on them.

use std::collections::VecDeque;

use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};

use crate::sim::block::{BlockId, Blocks};
use crate::sim::coords::{Cell, CellIndex, WorldSize};

/// How often a build ignores the layer order altogether.
const UNORDERED_BUILDS: f64 = 0.25;

/// The player index marked on mistaken blocks (the human's seat).
const HUMAN: i8 = 0;

/// The cells where `world` differs from `goal`, in the order a person might
/// build them (see the module doc).
pub fn build_order(world: &Blocks, goal: &Blocks, rng: &mut impl Rng) -> Vec<usize> {
    let size = world.size();
    let todo: Vec<usize> = (0..size.num_cells())
        .filter(|&i| world.ids()[i] != goal.ids()[i])
        .collect();
    if rng.random_bool(UNORDERED_BUILDS) {
        let mut order = todo;
        order.shuffle(rng);
        return order;
    }
    // Each layer grows outward from a random cell (breadth first over the eight
    // horizontal neighbours), jumping to a new random cell when it runs out;
    // a cell's key is its layer plus its rank in the layer times `spread`, so
    // the next layer starts before this one is done.
    let spread = rng.random_range(0.6..2.0);
    let mut keyed: Vec<(f64, usize)> = Vec::with_capacity(todo.len());
    for y in 0..size.height as i32 {
        let layer: Vec<Cell> = todo
            .iter()
            .map(|&i| size.cell(CellIndex(i as u32)))
            .filter(|c| c.y == y)
            .collect();
        for (rank, cell) in grow(&layer, rng).into_iter().enumerate() {
            let key = f64::from(y) + spread * rank as f64 / layer.len() as f64;
            keyed.push((key, size.index(cell).get()));
        }
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// `layer`'s cells in breadth-first order from random starting cells.
fn grow(layer: &[Cell], rng: &mut impl Rng) -> Vec<Cell> {
    let mut left: Vec<Cell> = layer.to_vec();
    left.shuffle(rng);
    let mut order = Vec::with_capacity(layer.len());
    let mut queue = VecDeque::new();
    while let Some(seed) = left.pop() {
        queue.push_back(seed);
        while let Some(cell) = queue.pop_front() {
            order.push(cell);
            let mut k = 0;
            while k < left.len() {
                let c = left[k];
                if (c.x - cell.x).abs() <= 1 && (c.z - cell.z).abs() <= 1 {
                    queue.push_back(left.swap_remove(k));
                } else {
                    k += 1;
                }
            }
        }
    }
    order
}

/// One to three wrong blocks in air cells next to solid ones.
pub fn add_mistakes(
    world: &mut Blocks,
    goal: &Blocks,
    last_interacted: &mut [i8],
    rng: &mut impl Rng,
) {
    let size: WorldSize = world.size();
    let candidates: Vec<Cell> = size
        .cells()
        .filter(|&c| {
            c.y > 0
                && world.get(c) == BlockId::AIR
                && world
                    .checked_get(Cell::new(c.x, c.y - 1, c.z))
                    .is_some_and(|b| b != BlockId::AIR)
        })
        .collect();
    for _ in 0..rng.random_range(1..=3) {
        let Some(&cell) = candidates.choose(rng) else {
            return;
        };
        let wanted = goal.get(cell);
        let choices: Vec<BlockId> = BlockId::PLACEABLE
            .into_iter()
            .filter(|&b| b != wanted)
            .collect();
        if let Some(&b) = choices.choose(rng) {
            world.set(cell, b);
            last_interacted[size.index(cell).get()] = HUMAN;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn house() -> (Blocks, Blocks) {
        let size = WorldSize::new(6, 5, 6);
        let world = Blocks::initial_world(size);
        let mut goal = world.clone();
        for x in 1..5 {
            for z in 1..5 {
                for y in 2..4 {
                    if x == 1 || x == 4 || z == 1 || z == 4 {
                        goal.set(Cell::new(x, y, z), BlockId::PLACEABLE[0]);
                    }
                }
            }
        }
        (world, goal)
    }

    #[test]
    fn build_order_covers_every_difference_once_lowest_layers_first() {
        let (world, goal) = house();
        for seed in 0..20 {
            let mut rng = StdRng::seed_from_u64(seed);
            let order = build_order(&world, &goal, &mut rng);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), order.len(), "a cell twice");
            let differing = (0..world.size().num_cells())
                .filter(|&i| world.ids()[i] != goal.ids()[i])
                .count();
            assert_eq!(order.len(), differing);
        }
        // Ordered builds put the whole first wall layer's first cell before any
        // of the second layer's last ones: layers overlap, never reverse.
        let mut rng = StdRng::seed_from_u64(3);
        let mut ordered = None;
        for _ in 0..20 {
            let order = build_order(&world, &goal, &mut rng);
            let ys: Vec<i32> = order
                .iter()
                .map(|&i| world.size().cell(CellIndex(i as u32)).y)
                .collect();
            if ys.windows(2).filter(|w| w[1] < w[0]).count() < ys.len() / 4 {
                ordered = Some(ys);
                break;
            }
        }
        let ys = ordered.expect("some build follows the layers");
        assert_eq!(ys[0], 2, "the lowest layer starts");
        assert_eq!(*ys.last().unwrap(), 3, "the top layer ends");
    }

    #[test]
    fn grown_layers_are_contiguous_from_their_start() {
        let (world, goal) = house();
        let size = world.size();
        let layer: Vec<Cell> = size
            .cells()
            .filter(|c| c.y == 2 && goal.get(*c) != world.get(*c))
            .collect();
        let mut rng = StdRng::seed_from_u64(1);
        let order = grow(&layer, &mut rng);
        assert_eq!(order.len(), layer.len());
        // The wall ring is connected: every cell after the first touches one
        // placed before it.
        for (k, c) in order.iter().enumerate().skip(1) {
            assert!(
                order[..k]
                    .iter()
                    .any(|p| (p.x - c.x).abs() <= 1 && (p.z - c.z).abs() <= 1),
                "{c:?} is not next to an earlier cell"
            );
        }
    }
}
