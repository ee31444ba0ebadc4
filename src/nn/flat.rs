//! The flat action space on tensors: the 28-channel action grid to flat logits
//! (logsumexp over the voxels for channels without a location), and a previous flat
//! action to its input grid. The layout is [`FlatLayout`]'s, the channels
//! [`channels_of`]'s, so the network and the simulator cannot disagree.

use tch::{Kind, Tensor};

use crate::agents::distribution::{NUM_CHANNELS, channels_of};
use crate::sim::action::{ActionType, FlatLayout};
use crate::sim::coords::WorldSize;

/// `(B, 28, X, Y, Z)` action-grid logits to `(B, N)` flat logits, in the order of
/// `layout`: location channels are flattened block-major then by cell; NOOP and each
/// MOVE become the logsumexp of their channel over all voxels.
pub fn grid_to_flat(grid: &Tensor, layout: &FlatLayout) -> Tensor {
    let b = grid.size()[0];
    let cells = grid.size()[2..].iter().product::<i64>();
    let grid = grid.reshape([b, NUM_CHANNELS as i64, cells]);
    let mut pieces = Vec::with_capacity(ActionType::ALL.len());
    for t in ActionType::ALL {
        if layout.offset(t).is_none() {
            continue;
        }
        let ch = channels_of(t);
        let piece = grid.narrow(1, ch.start as i64, ch.len() as i64);
        pieces.push(if t.uses_location() {
            piece.reshape([b, -1])
        } else {
            piece.logsumexp([2], false)
        });
    }
    let flat = Tensor::cat(&pieces, 1);
    debug_assert_eq!(flat.size()[1], layout.len() as i64);
    flat
}

/// The previous-action input (ARCHITECTURE.md §7): for each flat action a
/// `(28, X, Y, Z)` grid with a single 1 at the action's channel and cell for
/// location actions, and its whole channel set to 1 for NOOP and the moves.
/// Returns `(B, 28, X, Y, Z)` float32 on the CPU; out-of-range actions give an
/// all-zero grid.
pub fn prev_action_grid(actions: &[i64], layout: &FlatLayout, size: WorldSize) -> Tensor {
    let cells = size.num_cells();
    let mut grid = vec![0f32; actions.len() * NUM_CHANNELS * cells];
    for (row, &flat) in grid.chunks_exact_mut(NUM_CHANNELS * cells).zip(actions) {
        let Ok(action) = usize::try_from(flat).map(|f| layout.action(f)) else {
            continue;
        };
        let Ok(action) = action else { continue };
        let channel = channels_of(action.kind).start;
        if action.kind.uses_location() {
            let channel =
                channel + usize::from(action.block.0) * usize::from(action.kind.uses_block());
            row[channel * cells + action.location.get()] = 1.0;
        } else {
            row[channel * cells..(channel + 1) * cells].fill(1.0);
        }
    }
    let [x, y, z] = size.axes().map(|a| a as i64);
    Tensor::from_slice(&grid)
        .reshape([actions.len() as i64, NUM_CHANNELS as i64, x, y, z])
        .to_kind(Kind::Float)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::action::Action;
    use crate::sim::block::BlockId;
    use crate::sim::config::Abilities;
    use crate::sim::coords::CellIndex;

    fn layout(size: WorldSize, inf_blocks: bool) -> FlatLayout {
        FlatLayout::new(
            size,
            Abilities {
                teleportation: false,
                flying: true,
                inf_blocks,
            },
        )
    }

    #[test]
    fn flat_logits_follow_the_layout() {
        let size = WorldSize::new(3, 2, 2);
        let layout = layout(size, false);
        let grid = Tensor::randn([2, 28, 3, 2, 2], (Kind::Float, tch::Device::Cpu));
        let flat = grid_to_flat(&grid, &layout);
        assert_eq!(flat.size(), [2, layout.len() as i64]);
        let place = Action::new(ActionType::PlaceBlock, CellIndex(5), BlockId(3));
        let i = layout.flat(place).unwrap() as i64;
        let want = grid.double_value(&[1, 4, 1, 0, 1]);
        assert_eq!(flat.double_value(&[1, i]), want);
        let give = Action::new(ActionType::GiveBlock, CellIndex(11), BlockId(9));
        let i = layout.flat(give).unwrap() as i64;
        assert_eq!(
            flat.double_value(&[0, i]),
            grid.double_value(&[0, 27, 2, 1, 1])
        );
        let up = layout.offset(ActionType::MovePosY).unwrap() as i64;
        let want = grid
            .get(0)
            .get(14)
            .logsumexp([0, 1, 2], false)
            .double_value(&[]);
        assert!((flat.double_value(&[0, up]) - want).abs() < 1e-6);
    }

    #[test]
    fn prev_action_grids_are_one_hot_or_whole_channels() {
        let size = WorldSize::new(3, 2, 2);
        let layout = layout(size, true);
        let noop = 0;
        let brk = layout
            .flat(Action::new(
                ActionType::BreakBlock,
                CellIndex(7),
                BlockId(0),
            ))
            .unwrap() as i64;
        let grid = prev_action_grid(&[noop, brk, -1], &layout, size);
        assert_eq!(grid.get(0).sum(Kind::Float).double_value(&[]), 12.0);
        assert_eq!(grid.get(0).get(0).min().double_value(&[]), 1.0);
        assert_eq!(grid.get(1).sum(Kind::Float).double_value(&[]), 1.0);
        assert_eq!(grid.double_value(&[1, 11, 1, 1, 1]), 1.0);
        assert_eq!(grid.get(2).sum(Kind::Float).double_value(&[]), 0.0);
    }
}
