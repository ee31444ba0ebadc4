//! Between the simulator's `EnvState` and the recorded forms: the header's initial
//! state, per-step snapshots (cell changes, positions, inventories, hash) and the
//! external sync edits.

use sha2::{Digest, Sha256};

use super::codec::B64;
use super::header::{GridRecord, InitialRecord, hex};
use super::step::{StateSnapshot, SyncEdits};
use crate::sim::block::{BlockId, Blocks, NUM_BLOCKS};
use crate::sim::coords::{Cell, PlayerPos, WorldSize};
use crate::sim::inventory::{Inventory, NUM_SLOTS, STACK_SIZE, Slot};
use crate::sim::state::EnvState;

/// A grid record of a world-sized block grid.
pub fn grid_record(blocks: &Blocks) -> GridRecord {
    GridRecord {
        blocks: B64(blocks.ids().to_vec()),
        block_states: B64(blocks.states().to_vec()),
    }
}

/// The block grid of a record, checked against the world size.
pub fn grid_from_record(g: &GridRecord, size: WorldSize) -> Result<Blocks, String> {
    check_len("blocks", g.blocks.0.len(), size)?;
    check_len("block_states", g.block_states.0.len(), size)?;
    Ok(Blocks::from_raw(
        size,
        g.blocks.0.clone(),
        g.block_states.0.clone(),
    ))
}

fn check_len(name: &str, len: usize, size: WorldSize) -> Result<(), String> {
    if len == size.num_cells() {
        Ok(())
    } else {
        Err(format!(
            "{name}: {len} bytes, expected {} for a {size} world",
            size.num_cells()
        ))
    }
}

/// The header's record of a state.
pub fn initial_record(state: &EnvState) -> InitialRecord {
    InitialRecord {
        blocks: B64(state.blocks.ids().to_vec()),
        block_states: B64(state.blocks.states().to_vec()),
        li: B64(state.last_interacted.iter().map(|&v| v as u8).collect()),
        pos: state
            .player_positions
            .iter()
            .map(|p| [p.x, p.y, p.z])
            .collect(),
        inventories: state
            .inventories
            .iter()
            .map(|inv| {
                inv.slots()
                    .iter()
                    .map(|s| [i32::from(s.block.0), s.count])
                    .collect()
            })
            .collect(),
        timestep: state.timestep,
    }
}

/// The state a header records, checked against the world size and player count.
/// The derived fields (no-progress counter, best percentages) are left for
/// `Env::restore` to compute.
pub fn state_from_initial(
    r: &InitialRecord,
    size: WorldSize,
    num_players: usize,
) -> Result<EnvState, String> {
    check_len("blocks", r.blocks.0.len(), size)?;
    check_len("block_states", r.block_states.0.len(), size)?;
    check_len("li", r.li.0.len(), size)?;
    if r.pos.len() != num_players || r.inventories.len() != num_players {
        return Err(format!(
            "pos and inventories need one entry per player ({num_players}), got {} and {}",
            r.pos.len(),
            r.inventories.len()
        ));
    }
    let inventories = r
        .inventories
        .iter()
        .enumerate()
        .map(|(p, slots)| {
            if slots.len() != NUM_SLOTS {
                return Err(format!(
                    "inventories[{p}]: {} slots, expected {NUM_SLOTS}",
                    slots.len()
                ));
            }
            let mut out = [Slot::default(); NUM_SLOTS];
            for (o, &[block, count]) in out.iter_mut().zip(slots) {
                if !(0..NUM_BLOCKS as i32).contains(&block) || count < 0 {
                    return Err(format!("inventories[{p}]: bad slot [{block}, {count}]"));
                }
                *o = Slot {
                    block: BlockId(block as u8),
                    count,
                };
            }
            Ok(Inventory::from_slots(out))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EnvState {
        blocks: Blocks::from_raw(size, r.blocks.0.clone(), r.block_states.0.clone()),
        last_interacted: r.li.0.iter().map(|&v| v as i8).collect(),
        player_positions: r.pos.iter().map(|&p| PlayerPos::from(p)).collect(),
        inventories,
        timestep: r.timestep,
        timesteps_with_no_progress: 0,
        maximum_goal_percentages: vec![0.0; num_players],
    })
}

/// Per player inventory counts indexed by block id.
pub fn inventory_counts(state: &EnvState) -> Vec<[i32; 10]> {
    state.inventories.iter().map(Inventory::counts).collect()
}

/// SHA-256 over the state's observable content, in this order: block ids, block
/// states, last-interacted (as bytes), every player's position as three
/// little-endian f64, every player's ten inventory counts as little-endian i32.
/// The timestep is left out (sources that skip idle steps cannot keep it).
pub fn state_hash(state: &EnvState) -> String {
    let mut h = Sha256::new();
    h.update(state.blocks.ids());
    h.update(state.blocks.states());
    let li: Vec<u8> = state.last_interacted.iter().map(|&v| v as u8).collect();
    h.update(&li);
    for p in &state.player_positions {
        for v in [p.x, p.y, p.z] {
            h.update(v.to_le_bytes());
        }
    }
    for counts in inventory_counts(state) {
        for c in counts {
            h.update(c.to_le_bytes());
        }
    }
    hex(&h.finalize())
}

/// What a recording can say about a state: the grids, positions and, when the
/// source tracked them, inventory counts and the timestep. Both sides of a
/// comparison are brought to this form.
#[derive(Clone, Debug, PartialEq)]
pub struct StateView {
    /// World size.
    pub size: WorldSize,
    /// Block ids, C order.
    pub ids: Vec<u8>,
    /// Block states, C order.
    pub states: Vec<u8>,
    /// Last-interacted, C order.
    pub li: Vec<i8>,
    /// Feet positions.
    pub pos: Vec<[f64; 3]>,
    /// Inventory counts, when tracked.
    pub inv: Option<Vec<[i32; 10]>>,
    /// The timestep, when tracked.
    pub timestep: Option<u64>,
}

impl StateView {
    /// The full view of a simulator state.
    pub fn of(state: &EnvState) -> Self {
        Self {
            size: state.blocks.size(),
            ids: state.blocks.ids().to_vec(),
            states: state.blocks.states().to_vec(),
            li: state.last_interacted.clone(),
            pos: state
                .player_positions
                .iter()
                .map(|p| [p.x, p.y, p.z])
                .collect(),
            inv: Some(inventory_counts(state)),
            timestep: Some(state.timestep),
        }
    }

    /// The snapshot that turns `self` (the previous recorded state) into `now`:
    /// changed cells, all positions, and inventories and timestep where `now` has
    /// them. `self` becomes `now`.
    pub fn advance_to(&mut self, now: StateView) -> StateSnapshot {
        let mut cells = Vec::new();
        for i in 0..now.ids.len() {
            if self.ids[i] != now.ids[i]
                || self.states[i] != now.states[i]
                || self.li[i] != now.li[i]
            {
                let c = now
                    .size
                    .cell(crate::sim::coords::CellIndex(i as u32))
                    .to_array();
                cells.push([
                    c[0],
                    c[1],
                    c[2],
                    i32::from(now.ids[i]),
                    i32::from(now.states[i]),
                    i32::from(now.li[i]),
                ]);
            }
        }
        let snap = StateSnapshot {
            pos: now.pos.clone(),
            cells,
            inv: now.inv.clone(),
            timestep: now.timestep,
            sha256: None,
        };
        *self = now;
        snap
    }

    /// Applies a recorded snapshot to the previous recorded state. Inventories and
    /// timestep become unknown when the snapshot lacks them.
    pub fn apply(&mut self, snap: &StateSnapshot) -> Result<(), String> {
        if snap.pos.len() != self.pos.len() {
            return Err(format!(
                "pos: {} entries, expected one per player ({})",
                snap.pos.len(),
                self.pos.len()
            ));
        }
        for (k, &[x, y, z, id, st, li]) in snap.cells.iter().enumerate() {
            let i = self.index(x, y, z).ok_or_else(|| {
                format!(
                    "cells[{k}]: [{x}, {y}, {z}] is outside the {} world",
                    self.size
                )
            })?;
            let ok = (0..NUM_BLOCKS as i32).contains(&id)
                && (0..=255).contains(&st)
                && (-1..=127).contains(&li);
            if !ok {
                return Err(format!("cells[{k}]: bad values [{id}, {st}, {li}]"));
            }
            self.ids[i] = id as u8;
            self.states[i] = st as u8;
            self.li[i] = li as i8;
        }
        self.pos.clone_from(&snap.pos);
        self.inv.clone_from(&snap.inv);
        self.timestep = snap.timestep;
        Ok(())
    }

    fn index(&self, x: i32, y: i32, z: i32) -> Option<usize> {
        let cell = Cell::new(x, y, z);
        self.size
            .contains(cell)
            .then(|| self.size.index(cell).get())
    }

    /// The first difference from `got` in what `self` records, as
    /// `(field, expected, got)`.
    pub fn first_difference(&self, got: &StateView) -> Option<(String, String, String)> {
        for (name, e, g) in [
            ("blocks", &self.ids, &got.ids),
            ("block_states", &self.states, &got.states),
        ] {
            if let Some(i) = (0..e.len()).find(|&i| e[i] != g[i]) {
                let c = self.size.cell(crate::sim::coords::CellIndex(i as u32));
                return Some((
                    format!("state.{name} at {c}"),
                    e[i].to_string(),
                    g[i].to_string(),
                ));
            }
        }
        if let Some(i) = (0..self.li.len()).find(|&i| self.li[i] != got.li[i]) {
            let c = self.size.cell(crate::sim::coords::CellIndex(i as u32));
            return Some((
                format!("state.li at {c}"),
                self.li[i].to_string(),
                got.li[i].to_string(),
            ));
        }
        for (p, (e, g)) in self.pos.iter().zip(&got.pos).enumerate() {
            if e != g {
                return Some((
                    format!("state.pos[{p}]"),
                    format!("{e:?}"),
                    format!("{g:?}"),
                ));
            }
        }
        if let (Some(e), Some(g)) = (&self.inv, &got.inv) {
            for (p, (e, g)) in e.iter().zip(g).enumerate() {
                if e != g {
                    return Some((
                        format!("state.inv[{p}]"),
                        format!("{e:?}"),
                        format!("{g:?}"),
                    ));
                }
            }
        }
        if let (Some(e), Some(g)) = (self.timestep, got.timestep)
            && e != g
        {
            return Some(("state.timestep".into(), e.to_string(), g.to_string()));
        }
        None
    }
}

/// Applies external edits to a state (checked against the world size and player
/// count). Inventory counts are set by giving or taking the difference, as a
/// Minecraft inventory change would; slots are set as given.
///
/// This is the one way repairs reach a simulator: the daemon applies the edits
/// it records with it, and every replay applies the recorded edits with it, so a
/// live episode and its replay cannot disagree about what a repair did.
pub fn apply_sync(state: &mut EnvState, sync: &SyncEdits) -> Result<(), String> {
    let size = state.blocks.size();
    let n = state.player_positions.len();
    let cell = |name: &str, k: usize, x: i32, y: i32, z: i32| {
        let c = Cell::new(x, y, z);
        if size.contains(c) {
            Ok(c)
        } else {
            Err(format!(
                "sync.{name}[{k}]: [{x}, {y}, {z}] is outside the {size} world"
            ))
        }
    };
    for (k, &[x, y, z, id]) in sync.blocks.iter().enumerate() {
        let c = cell("blocks", k, x, y, z)?;
        if !(0..NUM_BLOCKS as i32).contains(&id) {
            return Err(format!(
                "sync.blocks[{k}]: block id {id} is not one of 0..=9"
            ));
        }
        state.blocks.set(c, BlockId(id as u8));
    }
    for (k, &[x, y, z, st]) in sync.block_states.iter().enumerate() {
        let c = cell("block_states", k, x, y, z)?;
        let st = u8::try_from(st).map_err(|_| format!("sync.block_states[{k}]: state {st}"))?;
        let id = state.blocks.get(c);
        state.blocks.set_with_state(c, id, st);
    }
    for (k, &[p, x, y, z]) in sync.pos.iter().enumerate() {
        if p < 0.0 || p.fract() != 0.0 || p as usize >= n {
            return Err(format!("sync.pos[{k}]: player {p} of {n}"));
        }
        state.player_positions[p as usize] = PlayerPos::new(x, y, z);
    }
    for (k, &[x, y, z, v]) in sync.li.iter().enumerate() {
        let c = cell("li", k, x, y, z)?;
        let v = i8::try_from(v).map_err(|_| format!("sync.li[{k}]: value {v}"))?;
        state.last_interacted[size.index(c).get()] = v;
    }
    for (k, &[p, block, count]) in sync.inv.iter().enumerate() {
        if p < 0 || p as usize >= n || !(0..NUM_BLOCKS as i32).contains(&block) || count < 0 {
            return Err(format!("sync.inv[{k}]: bad entry [{p}, {block}, {count}]"));
        }
        let inv = &mut state.inventories[p as usize];
        let b = BlockId(block as u8);
        let have = inv.count(b);
        let ok = if count >= have {
            inv.try_give(b, count - have)
        } else {
            inv.try_take(b, have - count)
        };
        if !ok {
            return Err(format!(
                "sync.inv[{k}]: {count} of block {block} do not fit"
            ));
        }
    }
    for (k, &[p, slot, block, count]) in sync.slots.iter().enumerate() {
        if p < 0
            || p as usize >= n
            || !(0..NUM_SLOTS as i32).contains(&slot)
            || !(0..NUM_BLOCKS as i32).contains(&block)
            || !(0..=STACK_SIZE).contains(&count)
        {
            return Err(format!(
                "sync.slots[{k}]: bad entry [{p}, {slot}, {block}, {count}]"
            ));
        }
        state.inventories[p as usize].set_slot(
            slot as usize,
            Slot {
                block: BlockId(block as u8),
                count,
            },
        );
    }
    Ok(())
}
