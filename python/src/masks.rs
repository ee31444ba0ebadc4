//! Action masks of a batch of observations, as the reference's
//! `MbagActionDistribution.get_mask_flat`.

use mbag_sim::action::{ActionType, FlatLayout};
use mbag_sim::config::Abilities;
use mbag_sim::obs::{NUM_WORLD_CHANNELS, Observation};
use mbag_sim::{NUM_BLOCKS, WorldSize, mask};
use numpy::{PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrays::{owned, read};

fn abilities(teleportation: bool, inf_blocks: bool) -> Abilities {
    Abilities {
        teleportation,
        flying: true,
        inf_blocks,
    }
}

/// Flat masks `(B, N)` of a batch: world observations `(B, 6, W, H, D)` uint8,
/// inventories `(B, P, 10)` int32, timesteps `(B,)`. A walking player missing from
/// its own observation gets an all-false mask, as in the reference.
#[pyfunction]
#[pyo3(signature = (world_obs, inventory_obs, timesteps, teleportation, inf_blocks, line_of_sight))]
pub fn mask_flat<'py>(
    py: Python<'py>,
    world_obs: PyReadonlyArrayDyn<'py, u8>,
    inventory_obs: PyReadonlyArrayDyn<'py, i32>,
    timesteps: PyReadonlyArrayDyn<'py, i64>,
    teleportation: bool,
    inf_blocks: bool,
    line_of_sight: bool,
) -> PyResult<Bound<'py, PyArrayDyn<bool>>> {
    let shape = world_obs.shape().to_vec();
    if shape.len() != 5 || shape[1] != NUM_WORLD_CHANNELS {
        return Err(PyValueError::new_err(format!(
            "world observations have shape {shape:?}; expected (batch, {NUM_WORLD_CHANNELS}, W, H, D)"
        )));
    }
    let (batch, size) = (shape[0], WorldSize::new(shape[2], shape[3], shape[4]));
    let inv_shape = inventory_obs.shape().to_vec();
    if inv_shape.len() != 3 || inv_shape[0] != batch || inv_shape[2] != NUM_BLOCKS {
        return Err(PyValueError::new_err(format!(
            "inventory observations have shape {inv_shape:?}; expected ({batch}, players, {NUM_BLOCKS})"
        )));
    }
    let num_players = inv_shape[1];
    let world = read(&world_obs, &shape, "world_obs")?;
    let inventory = read(&inventory_obs, &inv_shape, "inventory_obs")?;
    let times = read(&timesteps, &[batch], "timestep")?;
    let abilities = abilities(teleportation, inf_blocks);
    let layout = FlatLayout::new(size, abilities);
    let n = layout.len();
    let per_world = NUM_WORLD_CHANNELS * size.num_cells();
    let per_inventory = num_players * NUM_BLOCKS;
    let out = py.detach(|| {
        let mut out = vec![false; batch * n];
        for (b, row) in out.chunks_exact_mut(n.max(1)).enumerate().take(batch) {
            let obs = Observation::from_raw(
                size,
                num_players,
                world[b * per_world..(b + 1) * per_world].to_vec(),
                inventory[b * per_inventory..(b + 1) * per_inventory].to_vec(),
                times[b] as i32,
            );
            mask::compute(&obs, abilities, &layout, line_of_sight, row);
        }
        out
    });
    owned(py, out, &[batch, n])
}

/// The flat action space's blocks for a world size and abilities: per enabled action
/// type in order, `(action_type, offset, num_block_ids, num_locations)`.
#[pyfunction]
pub fn flat_layout(
    world_size: (usize, usize, usize),
    teleportation: bool,
    inf_blocks: bool,
) -> Vec<(i64, usize, usize, usize)> {
    let size = WorldSize::new(world_size.0, world_size.1, world_size.2);
    let layout = FlatLayout::new(size, abilities(teleportation, inf_blocks));
    ActionType::ALL
        .into_iter()
        .filter_map(|t| {
            let offset = layout.offset(t)?;
            let blocks = if t.uses_block() { NUM_BLOCKS } else { 1 };
            let cells = if t.uses_location() {
                size.num_cells()
            } else {
                1
            };
            Some((i64::from(t.id()), offset, blocks, cells))
        })
        .collect()
}
