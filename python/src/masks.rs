//! Action masks of a batch of observations, as the reference's
//! `MbagActionDistribution.get_mask_flat`.

use mbag_sim::action::{ActionType, FlatLayout};
use mbag_sim::config::Abilities;
use mbag_sim::obs::{NUM_WORLD_CHANNELS, Observation};
use mbag_sim::{NUM_BLOCKS, WorldSize, mask};
use numpy::{PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Mutex, TryLockError};

use crate::arrays::{owned, read};

/// How many recent masks are kept: a few players' worth, so that each player's
/// next observation finds its own.
const KEPT: usize = 8;

/// Masks of observations seen lately, so that the mask of an observation one step
/// on from one already masked is updated where the world changed rather than
/// recomputed: the drop-in's users ask for every player's mask every step, one
/// observation at a time, as the reference's do. Exact either way
/// (`mask::MaskCache`).
static RECENT: Mutex<Recent> = Mutex::new(Recent {
    caches: Vec::new(),
    clock: 0,
});

/// The kept masks, each with when it was last used.
struct Recent {
    caches: Vec<(u64, mask::MaskCache)>,
    clock: u64,
}

impl Recent {
    /// Writes `obs`'s mask into `out`, from the most recently used kept mask that
    /// can be updated to it, or else in place of the least recently used one.
    fn mask_into(
        &mut self,
        obs: &Observation,
        abilities: Abilities,
        layout: &FlatLayout,
        line_of_sight: bool,
        out: &mut [bool],
    ) {
        self.clock += 1;
        let fitting = self
            .caches
            .iter()
            .enumerate()
            .filter(|(_, (_, c))| c.may_update(obs, abilities, layout, line_of_sight))
            .max_by_key(|(_, (used, _))| *used)
            .map(|(i, _)| i);
        let i = match fitting {
            Some(i) => i,
            None if self.caches.len() < KEPT => {
                self.caches.push((0, mask::MaskCache::default()));
                self.caches.len() - 1
            }
            None => self
                .caches
                .iter()
                .enumerate()
                .min_by_key(|(_, (used, _))| *used)
                .map_or(0, |(i, _)| i),
        };
        let (used, cache) = &mut self.caches[i];
        *used = self.clock;
        cache.compute(obs, abilities, layout, line_of_sight, out);
    }
}

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
        // Another thread masking at the same time computes from scratch rather than
        // wait.
        let mut recent = match RECENT.try_lock() {
            Ok(r) => Some(r),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        for (b, row) in out.chunks_exact_mut(n.max(1)).enumerate().take(batch) {
            let obs = Observation::from_raw(
                size,
                num_players,
                world[b * per_world..(b + 1) * per_world].to_vec(),
                inventory[b * per_inventory..(b + 1) * per_inventory].to_vec(),
                times[b] as i32,
            );
            match recent.as_deref_mut() {
                Some(recent) => recent.mask_into(&obs, abilities, &layout, line_of_sight, row),
                None => {
                    mask::compute(&obs, abilities, &layout, line_of_sight, row);
                }
            }
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
