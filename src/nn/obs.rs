//! Model inputs: a batch of observations as tensors (ARCHITECTURE.md §2 of the
//! shared models), built from the simulator's [`Observation`]s or given directly
//! (the goldens store the tensors).

use tch::{Device, Kind, Tensor};

use super::error::NnError;
use crate::sim::block::NUM_BLOCKS;
use crate::sim::obs::{NUM_WORLD_CHANNELS, Observation};

/// A batch of `B` observations, one row per sample.
#[derive(Debug)]
pub struct ObsBatch {
    /// `(B, 6, X, Y, Z)` uint8: the world observation channels.
    pub world: Tensor,
    /// `(B, P, 10)` int32: inventory counts, row 0 the observer.
    pub inventory: Tensor,
    /// `(B,)` float32: the raw env timestep (the model scales it).
    pub timestep: Tensor,
    /// `(B,)` int64: each player's previous flat action (NOOP = 0 at an episode's
    /// first step). Read only by models with `use_prev_action`.
    pub prev_action: Option<Tensor>,
}

impl ObsBatch {
    /// A batch from tensors, checked for rank and dtype (sizes are checked against
    /// the model by [`super::Model::forward`]).
    pub fn new(
        world: Tensor,
        inventory: Tensor,
        timestep: Tensor,
        prev_action: Option<Tensor>,
    ) -> Result<Self, NnError> {
        let bad = |input: &'static str, message: String| NnError::BadBatch { input, message };
        let check = |input, t: &Tensor, dims: usize, kind: Kind| {
            if t.dim() != dims || t.kind() != kind {
                return Err(bad(
                    input,
                    format!(
                        "expected a rank-{dims} {kind:?} tensor, got shape {:?} of {:?}",
                        t.size(),
                        t.kind()
                    ),
                ));
            }
            Ok(())
        };
        check("world", &world, 5, Kind::Uint8)?;
        check("inventory", &inventory, 3, Kind::Int)?;
        check("timestep", &timestep, 1, Kind::Float)?;
        if let Some(prev) = &prev_action {
            check("prev_action", prev, 1, Kind::Int64)?;
        }
        let b = world.size()[0];
        for (input, t) in [
            ("inventory", Some(&inventory)),
            ("timestep", Some(&timestep)),
            ("prev_action", prev_action.as_ref()),
        ] {
            if let Some(t) = t
                && t.size()[0] != b
            {
                return Err(bad(
                    input,
                    format!("batch size {} differs from world's {b}", t.size()[0]),
                ));
            }
        }
        Ok(Self {
            world,
            inventory,
            timestep,
            prev_action,
        })
    }

    /// A batch from simulator observations (all of one world size and player
    /// count), with each player's previous flat action if the model reads it.
    ///
    /// # Panics
    /// If the observations differ in size or player count, or `prev_actions` has
    /// another length.
    pub fn from_observations(
        observations: &[&Observation],
        prev_actions: Option<&[usize]>,
        device: Device,
    ) -> Result<Self, NnError> {
        let first = observations.first().ok_or_else(|| NnError::BadBatch {
            input: "world",
            message: "an empty batch".into(),
        })?;
        let size = first.size();
        let players = first.num_players();
        let b = observations.len();
        let mut world = Vec::with_capacity(b * NUM_WORLD_CHANNELS * size.num_cells());
        let mut inventory = Vec::with_capacity(b * players * NUM_BLOCKS);
        let mut timestep = Vec::with_capacity(b);
        for obs in observations {
            assert_eq!(obs.size(), size, "observations of one batch share a size");
            assert_eq!(obs.num_players(), players, "and a player count");
            world.extend_from_slice(&obs.world);
            inventory.extend_from_slice(&obs.inventory);
            timestep.push(obs.timestep as f32);
        }
        let [x, y, z] = size.axes().map(|a| a as i64);
        let b = b as i64;
        let world = Tensor::from_slice(&world)
            .reshape([b, NUM_WORLD_CHANNELS as i64, x, y, z])
            .to_device(device);
        let inventory = Tensor::from_slice(&inventory)
            .reshape([b, players as i64, NUM_BLOCKS as i64])
            .to_device(device);
        let timestep = Tensor::from_slice(&timestep).to_device(device);
        let prev_action = prev_actions.map(|actions| {
            assert_eq!(
                actions.len() as i64,
                b,
                "one previous action per observation"
            );
            let actions: Vec<i64> = actions.iter().map(|&a| a as i64).collect();
            Tensor::from_slice(&actions).to_device(device)
        });
        Self::new(world, inventory, timestep, prev_action)
    }

    /// The batch size.
    pub fn len(&self) -> usize {
        self.world.size()[0] as usize
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The batch on another device.
    pub fn to_device(&self, device: Device) -> Self {
        Self {
            world: self.world.to_device(device),
            inventory: self.inventory.to_device(device),
            timestep: self.timestep.to_device(device),
            prev_action: self.prev_action.as_ref().map(|t| t.to_device(device)),
        }
    }

    /// Rows `start..start + len` of the batch (views, no copy).
    pub fn narrow(&self, start: i64, len: i64) -> Self {
        Self {
            world: self.world.narrow(0, start, len),
            inventory: self.inventory.narrow(0, start, len),
            timestep: self.timestep.narrow(0, start, len),
            prev_action: self.prev_action.as_ref().map(|t| t.narrow(0, start, len)),
        }
    }
}
