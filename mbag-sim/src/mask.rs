//! Valid-action masks computed from an observation, as the reference's C
//! implementation does (ENV_SPEC section 10).
//!
//! Masks are flat (one bool per flat action of the config's [`FlatLayout`]). Two
//! variants exist: without line of sight (used by the heuristic agents) and with it
//! (what the trained networks are masked with).

use super::action::{ActionType, FlatLayout};
use super::block::{BlockId, NUM_BLOCKS};
use super::config::Abilities;
use super::coords::{Cell, CellIndex, FACE_OFFSETS, WorldSize};
use super::obs::{CURRENT_PLAYER, NO_ONE, Observation, WorldChannel};
use super::viewpoint::{self, CellSet, Interaction, REACH, SearchWorld};

/// The observation as the line-of-sight search sees it: cells marked with another
/// player are obstacles.
struct ObservedWorld<'a> {
    size: WorldSize,
    blocks: &'a [u8],
    markers: &'a [u8],
}

impl ObservedWorld<'_> {
    #[inline]
    fn idx(&self, x: i32, y: i32, z: i32) -> usize {
        (x as usize * self.size.height + y as usize) * self.size.depth + z as usize
    }

    #[inline]
    fn marker(&self, x: i32, y: i32, z: i32) -> u8 {
        self.markers[self.idx(x, y, z)]
    }
}

impl SearchWorld for ObservedWorld<'_> {
    fn size(&self) -> WorldSize {
        self.size
    }
    #[inline]
    fn ids(&self) -> &[u8] {
        self.blocks
    }
    #[inline]
    fn is_obstacle_player(&self, x: i32, y: i32, z: i32) -> bool {
        // A voxel walk never enters y >= H (see viewpoint::reachable), and standing
        // positions above the world have no marker.
        if y >= self.size.height as i32 {
            return false;
        }
        let m = self.marker(x, y, z);
        m != NO_ONE && m != CURRENT_PLAYER
    }
}

/// Computes the flat mask of `obs` into `out` (length `layout.len()`).
///
/// With `line_of_sight`, place/break entries also need a viewpoint/click candidate.
/// If a walking player's own marker is missing, everything is invalid (the reference
/// logs a warning and returns an all-false mask).
pub fn compute(
    obs: &Observation,
    abilities: Abilities,
    layout: &FlatLayout,
    line_of_sight: bool,
    out: &mut [bool],
) -> MaskCounts {
    compute_inner(obs, abilities, layout, line_of_sight, out, None, None).0
}

/// What an incremental recomputation starts from: `out` holds the mask of an
/// earlier observation with the same observer position and inventory, whose
/// counts these are, and `changed` lists the cells whose block or player marker
/// differs since.
struct Incremental<'a> {
    changed: &'a [Change],
    counts: MaskCounts,
    place_cells: usize,
    /// Per cell, `NEAR_*` flags of itself and its face neighbours in `changed`;
    /// read only with line of sight.
    near: &'a [u8],
    /// The changed cells where an obstacle to sight appeared or went away.
    sight: CellSet,
}

/// [`Incremental::near`]: the cell itself changed.
const NEAR_SELF: u8 = 1;
/// [`Incremental::near`]: a face neighbour turned from air to a block (a new face
/// to place against).
const NEAR_GAINS_SOLID: u8 = 2;
/// [`Incremental::near`]: a face neighbour became free (air and no other player: a
/// new face to break through).
const NEAR_GAINS_FREE: u8 = 4;

/// A cell whose block or player marker changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Change {
    cell: Cell,
    /// Whether an obstacle to sight appeared or went away there (a block replaced
    /// by another, or a player marker by another player's, changes no ray).
    sight: bool,
}

/// Computes a mask into `out`, from scratch or (walking, with `incremental`) by
/// recomputing only the targets a change can affect. Returns the counts and the
/// number of placeable cells.
fn compute_inner(
    obs: &Observation,
    abilities: Abilities,
    layout: &FlatLayout,
    line_of_sight: bool,
    out: &mut [bool],
    incremental: Option<Incremental<'_>>,
    mut sight_deps: Option<&mut [CellSet]>,
) -> (MaskCounts, usize) {
    assert_eq!(out.len(), layout.len(), "mask buffer has the wrong length");
    let mut counts = MaskCounts::default();
    let size = obs.size();
    let world = ObservedWorld {
        size,
        blocks: obs.channel(WorldChannel::CurrentBlocks),
        markers: obs.channel(WorldChannel::PlayerLocations),
    };
    let teleportation = abilities.teleportation;

    // The reference keeps the x and z of the last marked cell in C order and the
    // lowest marked y.
    let player = observer_position(size, world.markers, teleportation);
    if player.is_none() && !teleportation {
        out.fill(false);
        return (counts, 0);
    }
    let (px, feet_y, pz) = player.unwrap_or((-1, -1, -1));
    let head_y = feet_y + 1;

    let (mut place_cells, mut breaks, mut gives) = match &incremental {
        Some(inc) => (
            inc.place_cells,
            inc.counts.per_type[ActionType::BreakBlock.id() as usize],
            0,
        ),
        None => (0, 0, 0),
    };
    let standing =
        (!teleportation).then(|| [f64::from(px) + 0.5, f64::from(feet_y), f64::from(pz) + 0.5]);
    let (lo, hi) = reach_box(size, teleportation, px, head_y, pz, REACH);

    let inventory = obs.inventory_row(0);
    let mut have = [0usize; NUM_BLOCKS];
    let mut num_have = 0;
    for (b, &count) in inventory.iter().enumerate().take(NUM_BLOCKS) {
        let held = if abilities.inf_blocks {
            BlockId(b as u8).is_placeable()
        } else {
            count > 0
        };
        if held {
            have[num_have] = b;
            num_have += 1;
        }
    }
    let have = &have[..num_have];
    let n = size.num_cells();
    let (h, d) = (size.height as i32, size.depth as i32);
    let (x_stride, y_stride) = ((h * d) as usize, d as usize);
    let place_offset = layout
        .offset(ActionType::PlaceBlock)
        .filter(|_| !have.is_empty());
    // Clear the buffer, except the spans of the second and later held blocks, which
    // are copied whole from the first one's at the end. Incrementally, only the
    // GIVE entries are redone from scratch.
    match (place_offset, &incremental) {
        (_, Some(_)) => {
            if let Some(offset) = layout.offset(ActionType::GiveBlock) {
                out[offset..offset + layout.block_len(ActionType::GiveBlock)].fill(false);
            }
        }
        (Some(offset), None) => {
            let mut from = 0;
            for &b in &have[1..] {
                out[from..offset + b * n].fill(false);
                from = offset + (b + 1) * n;
            }
            out[from..].fill(false);
        }
        (None, None) => out.fill(false),
    }

    out[0] = true;
    counts.per_type[ActionType::Noop.id() as usize] = 1;
    if !teleportation {
        for kind in ActionType::MOVES {
            let (dx, dy, dz) = kind.move_delta().expect("a move");
            if let Some(offset) = layout.offset(kind) {
                let valid = can_move_to(&world, px + dx, feet_y + dy, pz + dz);
                out[offset] = valid;
                counts.per_type[kind.id() as usize] = usize::from(valid);
            }
        }
    }
    let break_offset = layout.offset(ActionType::BreakBlock);
    let blocks = world.blocks;
    // Below first: most placeable cells rest on something.
    let solid_neighbour = |x: i32, y: i32, z: i32, i: usize| {
        (y > 0 && blocks[i - y_stride] != 0)
            || (x > 0 && blocks[i - x_stride] != 0)
            || (x + 1 < size.width as i32 && blocks[i + x_stride] != 0)
            || (y + 1 < h && blocks[i + y_stride] != 0)
            || (z > 0 && blocks[i - 1] != 0)
            || (z + 1 < d && blocks[i + 1] != 0)
    };
    // Integer squared distances up to 20.25 means up to 20.
    let reach2 = (REACH * REACH).floor() as i32;
    let in_reach = |x: i32, y: i32, z: i32| {
        teleportation
            || (x - px) * (x - px) + (y - head_y) * (y - head_y) + (z - pz) * (z - pz) <= reach2
    };
    // Decides the entries of one target cell (taking its old ones out of the counts
    // first when updating).
    // `deps` is the target's entry of `sight_deps`, when they are kept.
    let mut visit =
        |x: i32, y: i32, z: i32, i: usize, out: &mut [bool], mut deps: Option<&mut CellSet>| {
            let cell = Cell::new(x, y, z);
            if incremental.is_some() {
                // Take the target's old entries out of the counts; they are
                // decided afresh below.
                // Every held block's entry is kept here, so that the spans
                // need not be copied again (the held blocks are unchanged).
                if let Some(offset) = place_offset
                    && std::mem::take(&mut out[offset + have[0] * n + i])
                {
                    place_cells -= 1;
                    for &b in &have[1..] {
                        out[offset + b * n + i] = false;
                    }
                }
                if let Some(offset) = break_offset
                    && std::mem::take(&mut out[offset + i])
                {
                    breaks -= 1;
                }
            }
            if let Some(deps) = deps.as_deref_mut() {
                *deps = CellSet::EMPTY;
            }
            let mut sees = |kind: Interaction| match (standing, deps.as_deref_mut()) {
                (Some(feet), Some(deps)) => {
                    let (sees, on) = viewpoint::sees_from(&world, kind, cell, feet);
                    *deps = on;
                    sees
                }
                _ => viewpoint::any_candidate(&world, kind, cell, standing),
            };
            let block = BlockId(blocks[i]);
            if block.is_air() {
                if let Some(offset) = place_offset
                    && world.markers[i] == NO_ONE
                    && solid_neighbour(x, y, z, i)
                    && (!line_of_sight || sees(Interaction::Place))
                {
                    // Every held block has the same cells; from scratch, the
                    // other blocks' spans are copied from the first one after
                    // the loop.
                    out[offset + have[0] * n + i] = true;
                    place_cells += 1;
                    if incremental.is_some() {
                        for &b in &have[1..] {
                            out[offset + b * n + i] = true;
                        }
                    }
                }
            } else if let Some(offset) = break_offset
                && block.is_breakable()
                && (!line_of_sight || sees(Interaction::Break))
            {
                out[offset + i] = true;
                breaks += 1;
            }
        };
    match &incremental {
        // Without line of sight a target's entries depend only on its own block and
        // marker and on its neighbours' blocks, so only the changed cells and their
        // neighbours are redone.
        Some(inc) if !line_of_sight => {
            for c in inc.changed.iter().map(|change| change.cell) {
                for (dx, dy, dz) in NEIGHBOURHOOD {
                    let (x, y, z) = (c.x + dx, c.y + dy, c.z + dz);
                    if (lo.x..=hi.x).contains(&x)
                        && (lo.y..=hi.y).contains(&y)
                        && (lo.z..=hi.z).contains(&z)
                        && in_reach(x, y, z)
                    {
                        visit(x, y, z, world.idx(x, y, z), out, None);
                    }
                }
            }
        }
        _ => {
            for x in lo.x..=hi.x {
                for y in lo.y..=hi.y {
                    // Walking, only the z run inside the reach sphere of the head cell.
                    let (z0, z1) = if teleportation {
                        (lo.z, hi.z)
                    } else {
                        let rest = reach2 - (x - px) * (x - px) - (y - head_y) * (y - head_y);
                        if rest < 0 {
                            continue;
                        }
                        // The integer square root of at most 20: a few steps beat
                        // the latency of a float one.
                        let mut dz = 0;
                        while (dz + 1) * (dz + 1) <= rest {
                            dz += 1;
                        }
                        ((pz - dz).max(lo.z), (pz + dz).min(hi.z))
                    };
                    let row = (x as usize * size.height + y as usize) * size.depth;
                    for z in z0..=z1 {
                        let i = row + z as usize;
                        // Incrementally with line of sight, a target whose own cell
                        // is unchanged is redone only if sight changed in a cell its
                        // last answer rested on (`viewpoint::sees_from`: for a valid
                        // one also the cell clicked against), or, invalid, if a
                        // neighbour gained the face it would need. Other neighbour
                        // changes only take faces away.
                        if let Some(inc) = &incremental
                            && line_of_sight
                            && inc.near[i] & NEAR_SELF == 0
                        {
                            let deps = sight_deps.as_deref().map_or(CellSet::ALL, |d| d[i]);
                            let valid = place_offset.is_some_and(|o| out[o + have[0] * n + i])
                                || break_offset.is_some_and(|o| out[o + i]);
                            let gains = if blocks[i] == 0 {
                                NEAR_GAINS_SOLID
                            } else {
                                NEAR_GAINS_FREE
                            };
                            if !inc.sight.may_intersect(deps) && (valid || inc.near[i] & gains == 0)
                            {
                                continue;
                            }
                        }
                        visit(
                            x,
                            y,
                            z,
                            i,
                            out,
                            sight_deps.as_deref_mut().map(|d| &mut d[i]),
                        );
                    }
                }
            }
        }
    }

    if let Some(offset) = layout.offset(ActionType::GiveBlock) {
        let (lo, hi) = reach_box(size, teleportation, px, head_y, pz, 1.0);
        for (b, _) in inventory.iter().enumerate().filter(|&(_, &c)| c > 0) {
            for x in lo.x..=hi.x {
                for y in lo.y..=hi.y {
                    for z in lo.z..=hi.z {
                        let m = world.marker(x, y, z);
                        let feet_of_someone = m != NO_ONE
                            && m != CURRENT_PLAYER
                            && (y == 0 || world.marker(x, y - 1, z) != m);
                        if feet_of_someone {
                            out[offset + b * n + world.idx(x, y, z)] = true;
                            gives += 1;
                        }
                    }
                }
            }
        }
    }
    if let Some(offset) = place_offset
        && incremental.is_none()
    {
        let first = offset + have[0] * n;
        for &b in &have[1..] {
            out.copy_within(first..first + n, offset + b * n);
        }
    }
    counts.per_type[ActionType::PlaceBlock.id() as usize] = place_cells * have.len();
    counts.per_type[ActionType::BreakBlock.id() as usize] = breaks;
    counts.per_type[ActionType::GiveBlock.id() as usize] = gives;
    (counts, place_cells)
}

/// A cell and its six face neighbours, as offsets.
const NEIGHBOURHOOD: [(i32, i32, i32); 7] = {
    let mut offsets = [(0, 0, 0); 7];
    let mut k = 0;
    while k < 6 {
        offsets[k + 1] = FACE_OFFSETS[k];
        k += 1;
    }
    offsets
};

/// Most changed cells an incremental update handles before recomputing everything.
const MAX_CHANGED: usize = 32;

/// A player's masks kept between observations, so that a mask is recomputed only
/// where the world changed (same held block types and, walking, same position);
/// anything else, and every teleporting line-of-sight mask, is recomputed from
/// scratch. The result is always exactly [`compute`]'s.
#[derive(Clone, Debug, Default)]
pub struct MaskCache {
    key: Option<(WorldSize, Abilities, usize, bool)>,
    player: Option<(i32, i32, i32)>,
    blocks: Vec<u8>,
    markers: Vec<u8>,
    inventory: Vec<i32>,
    mask: Vec<bool>,
    counts: MaskCounts,
    place_cells: usize,
    changed: Vec<Change>,
    /// Per cell, the `NEAR_*` flags of `changed` (all zero between calls).
    near: Vec<u8>,
    /// Per cell, the cells its line-of-sight answer rests on
    /// (`viewpoint::sees_from`).
    sight_deps: Vec<CellSet>,
    full: u64,
    incremental: u64,
}

impl MaskCache {
    /// How many masks were computed from scratch and how many incrementally.
    pub fn stats(&self) -> (u64, u64) {
        (self.full, self.incremental)
    }

    /// Computes the mask of `obs` into `out` like [`compute`].
    pub fn compute(
        &mut self,
        obs: &Observation,
        abilities: Abilities,
        layout: &FlatLayout,
        line_of_sight: bool,
        out: &mut [bool],
    ) -> MaskCounts {
        let counts = self.update(obs, abilities, layout, line_of_sight);
        out.copy_from_slice(&self.mask);
        counts
    }

    /// The mask last computed by [`MaskCache::update`] (or
    /// [`MaskCache::compute`]).
    pub fn mask(&self) -> &[bool] {
        &self.mask
    }

    /// Whether [`MaskCache::update`] with these arguments could start from the
    /// mask kept here (same world size, abilities and line of sight; walking, the
    /// same observer position; the same kinds of block held), unless too much of
    /// the world changed. Cheap: nothing is compared cell by cell.
    pub fn may_update(
        &self,
        obs: &Observation,
        abilities: Abilities,
        layout: &FlatLayout,
        line_of_sight: bool,
    ) -> bool {
        let size = obs.size();
        let markers = obs.channel(WorldChannel::PlayerLocations);
        let player = observer_position(size, markers, abilities.teleportation);
        !(abilities.teleportation && line_of_sight)
            && self.key == Some((size, abilities, layout.len(), line_of_sight))
            && (player.is_some() || abilities.teleportation)
            && self.player == player
            && self.holds_same_kinds(obs)
    }

    /// Whether `obs`'s player holds the same kinds of block as when the kept mask
    /// was computed: place entries depend on which blocks are held, not how many
    /// (GIVE entries are always redone).
    fn holds_same_kinds(&self, obs: &Observation) -> bool {
        self.inventory.len() == obs.inventory_row(0).len()
            && self
                .inventory
                .iter()
                .zip(obs.inventory_row(0))
                .all(|(&a, &b)| (a > 0) == (b > 0))
    }

    /// Computes the mask of `obs` like [`compute`], keeping it here (read it with
    /// [`MaskCache::mask`]): a caller that only reads it saves copying a mask of
    /// every flat action.
    pub fn update(
        &mut self,
        obs: &Observation,
        abilities: Abilities,
        layout: &FlatLayout,
        line_of_sight: bool,
    ) -> MaskCounts {
        // Teleporting line-of-sight masks search around every target, so a change
        // can reach far; they cost less to compute than to keep.
        if abilities.teleportation && line_of_sight {
            self.key = None;
            self.full += 1;
            self.mask.resize(layout.len(), false);
            return compute(obs, abilities, layout, line_of_sight, &mut self.mask);
        }
        let size = obs.size();
        let blocks = obs.channel(WorldChannel::CurrentBlocks);
        let markers = obs.channel(WorldChannel::PlayerLocations);
        let key = Some((size, abilities, layout.len(), line_of_sight));
        let player = observer_position(size, markers, abilities.teleportation);
        let reusable = self.key == key
            // Walking masks need the observer's position (and keep it); teleporting
            // ones do not depend on it.
            && (player.is_some() || abilities.teleportation)
            && self.player == player
            && self.holds_same_kinds(obs)
            && self.find_changes(size, blocks, markers);

        let (counts, place_cells) = if reusable {
            self.incremental += 1;
            let mut sight = CellSet::EMPTY;
            if line_of_sight {
                self.near.resize(size.num_cells(), 0);
                let is_obstacle_marker = |m: u8| m != NO_ONE && m != CURRENT_PLAYER;
                let free = |b: u8, m: u8| b == 0 && !is_obstacle_marker(m);
                for change in &self.changed {
                    let c = change.cell;
                    let j = size.index(c).get();
                    if change.sight {
                        sight.insert(j);
                    }
                    // Before the update below, `self` holds the old world.
                    let (old_block, old_marker) = (self.blocks[j], self.markers[j]);
                    let mut gains = 0;
                    if old_block == 0 && blocks[j] != 0 {
                        gains |= NEAR_GAINS_SOLID;
                    }
                    if !free(old_block, old_marker) && free(blocks[j], markers[j]) {
                        gains |= NEAR_GAINS_FREE;
                    }
                    self.near[j] |= NEAR_SELF;
                    for n in c.face_neighbours() {
                        if size.contains(n) {
                            self.near[size.index(n).get()] |= gains;
                        }
                    }
                }
            }
            let incremental = Incremental {
                changed: &self.changed,
                counts: self.counts,
                place_cells: self.place_cells,
                near: &self.near,
                sight,
            };
            let result = compute_inner(
                obs,
                abilities,
                layout,
                line_of_sight,
                &mut self.mask,
                Some(incremental),
                line_of_sight.then_some(&mut self.sight_deps[..]),
            );
            if line_of_sight {
                for change in &self.changed {
                    for (dx, dy, dz) in NEIGHBOURHOOD {
                        let n = change.cell.offset(dx, dy, dz);
                        if size.contains(n) {
                            self.near[size.index(n).get()] = 0;
                        }
                    }
                }
            }
            result
        } else {
            self.full += 1;
            self.mask.resize(layout.len(), false);
            self.sight_deps.clear();
            self.sight_deps.resize(size.num_cells(), CellSet::EMPTY);
            compute_inner(
                obs,
                abilities,
                layout,
                line_of_sight,
                &mut self.mask,
                None,
                line_of_sight.then_some(&mut self.sight_deps[..]),
            )
        };
        self.key = key;
        self.player = player;
        self.counts = counts;
        self.place_cells = place_cells;
        self.blocks.clear();
        self.blocks.extend_from_slice(blocks);
        self.markers.clear();
        self.markers.extend_from_slice(markers);
        self.inventory.clear();
        self.inventory.extend_from_slice(obs.inventory_row(0));
        counts
    }

    /// Lists the cells whose block or marker changed; false if there are too many
    /// for an incremental update to pay.
    fn find_changes(&mut self, size: WorldSize, blocks: &[u8], markers: &[u8]) -> bool {
        const CHUNK: usize = 64;
        self.changed.clear();
        // Full size up front, so that steady-state updates never allocate.
        self.changed.reserve(MAX_CHANGED);
        // Players other than the observer are obstacles to sight.
        let is_obstacle_marker = |m: u8| m != NO_ONE && m != CURRENT_PLAYER;
        for (is_marker, old, new) in [
            (false, &self.blocks, blocks),
            (true, &self.markers, markers),
        ] {
            // One comparison for a channel that did not change at all (the
            // markers, most steps), before looking for where one did.
            if old[..] == new[..] {
                continue;
            }
            for (k, (a, b)) in old.chunks(CHUNK).zip(new.chunks(CHUNK)).enumerate() {
                if a == b {
                    continue;
                }
                for (j, (&x, &y)) in a.iter().zip(b).enumerate() {
                    if x != y {
                        if self.changed.len() == MAX_CHANGED {
                            return false;
                        }
                        let sight = if is_marker {
                            is_obstacle_marker(x) != is_obstacle_marker(y)
                        } else {
                            (x != 0) != (y != 0)
                        };
                        self.changed.push(Change {
                            cell: size.cell(CellIndex((k * CHUNK + j) as u32)),
                            sight,
                        });
                    }
                }
            }
        }
        true
    }
}

/// How many entries of each action type a computed mask holds, so that callers can
/// sample without scanning the whole mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskCounts {
    /// Valid flat entries per action type id.
    pub per_type: [usize; 10],
}

/// The index of the `k`-th (0-based) `true` of a mask, counting 64 entries at a time
/// (a vectorised count) before scanning the chunk that holds it.
pub fn nth_valid(mask: &[bool], mut k: usize) -> Option<usize> {
    const CHUNK: usize = 64;
    for (c, chunk) in mask.chunks(CHUNK).enumerate() {
        let here = chunk.iter().filter(|&&m| m).count();
        if k < here {
            let j = chunk.iter().enumerate().filter(|&(_, &m)| m).nth(k)?.0;
            return Some(c * CHUNK + j);
        }
        k -= here;
    }
    None
}

/// The observer's position where an entry can depend on it: none when
/// teleporting (every use of it is guarded by walking), else [`find_player`].
fn observer_position(
    size: WorldSize,
    markers: &[u8],
    teleportation: bool,
) -> Option<(i32, i32, i32)> {
    if teleportation {
        None
    } else {
        find_player(size, markers)
    }
}

/// The observer's position as the reference finds it: x and z of the last cell
/// marked 1 in C order, and the lowest marked y.
fn find_player(size: WorldSize, markers: &[u8]) -> Option<(i32, i32, i32)> {
    // `contains` on bytes is a vectorised memchr; scan 64-byte chunks with it.
    const CHUNK: usize = 64;
    let is_me = |&m: &u8| m == CURRENT_PLAYER;
    let first = markers
        .chunks(CHUNK)
        .enumerate()
        .find(|(_, c)| c.contains(&CURRENT_PLAYER))
        .and_then(|(k, c)| c.iter().position(is_me).map(|j| k * CHUNK + j))?;
    let last = markers
        .chunks(CHUNK)
        .enumerate()
        .rev()
        .find(|(_, c)| c.contains(&CURRENT_PLAYER))
        .and_then(|(k, c)| c.iter().rposition(is_me).map(|j| k * CHUNK + j))?;
    let cell = |i: usize| size.cell(CellIndex(i as u32));
    let (a, b) = (cell(first), cell(last));
    // An observation from the env marks one column (feet and head); then the first
    // and last marks tell everything. Anything else takes the full scan.
    if first == last || !markers[first + 1..last].contains(&CURRENT_PLAYER) {
        return Some((b.x, a.y.min(b.y), b.z));
    }
    let feet = markers
        .iter()
        .enumerate()
        .filter(|&(_, &m)| m == CURRENT_PLAYER)
        .map(|(i, _)| cell(i).y)
        .min()?;
    Some((b.x, feet, b.z))
}

/// The box of cells the reference loops over: everything when teleporting, else
/// `floor(c - r) ..= ceil(c + r)` around the player's column and head, clamped.
fn reach_box(
    size: WorldSize,
    teleportation: bool,
    px: i32,
    head_y: i32,
    pz: i32,
    r: f64,
) -> (Cell, Cell) {
    let max = Cell::new(
        size.width as i32 - 1,
        size.height as i32 - 1,
        size.depth as i32 - 1,
    );
    if teleportation {
        return (Cell::new(0, 0, 0), max);
    }
    let lo = |c: i32| ((f64::from(c) - r).floor() as i32).max(0);
    let hi = |c: i32, m: i32| ((f64::from(c) + r).ceil() as i32).min(m);
    (
        Cell::new(lo(px), lo(head_y), lo(pz)),
        Cell::new(hi(px, max.x), hi(head_y, max.y), hi(pz, max.z)),
    )
}

/// Whether a walking player could move its feet to `(x, y, z)`: in the world, feet
/// and head (clamped to the top layer) air, and no other player's marker there.
fn can_move_to(world: &ObservedWorld<'_>, x: i32, y: i32, z: i32) -> bool {
    let size = world.size;
    if !size.contains(Cell::new(x, y, z)) {
        return false;
    }
    let head = (y + 1).min(size.height as i32 - 1);
    let free = |m: u8| m == NO_ONE || m == CURRENT_PLAYER;
    world.is_air(x, y, z)
        && world.is_air(x, head, z)
        && free(world.marker(x, y, z))
        && free(world.marker(x, head, z))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::Blocks;
    use crate::config::Config;
    use crate::env::{Env, place_goal};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// A reset env whose goal is `layers` layers of `block` over the whole floor.
    fn env_with_floor_goal(
        config: serde_json::Value,
        block: BlockId,
        layers: i32,
        rng: &mut StdRng,
    ) -> Env {
        let config = Config::from_json(&config).unwrap();
        let mut env = Env::new(config.clone());
        let mut structure = Blocks::air(env.goal_structure_size());
        for c in structure.size().cells().filter(|c| c.y < layers) {
            structure.set(c, block);
        }
        let goal = place_goal(config.world_size, &structure, config.abilities.inf_blocks);
        env.reset_with_goal(goal, rng);
        env
    }

    /// The counts returned with a mask equal the mask's own per-type counts, and
    /// `nth_valid` walks the valid entries in order, in every mode.
    #[test]
    fn counts_and_nth_valid_agree_with_the_mask() {
        for (teleportation, inf_blocks) in
            [(false, true), (true, true), (false, false), (true, false)]
        {
            let mut rng = StdRng::seed_from_u64(1);
            let config = serde_json::json!({
                "num_players": 2,
                "world_size": [7, 6, 7],
                "horizon": 1000,
                "random_start_locations": true,
                "players": [{}, {}],
                "abilities": {"teleportation": teleportation, "flying": true, "inf_blocks": inf_blocks},
            });
            let mut env = env_with_floor_goal(config, BlockId::COBBLESTONE, 2, &mut rng);
            let abilities = env.config().abilities;
            let layout = *env.layout();
            let mut obs = env.new_observation();
            let mut mask = vec![false; layout.len()];
            for step in 0..150 {
                let mut actions = Vec::new();
                for p in 0..2 {
                    env.observe(p, &mut obs).unwrap();
                    let counts = compute(&obs, abilities, &layout, step % 2 == 0, &mut mask);
                    for kind in ActionType::ALL {
                        let expected = layout.offset(kind).map_or(0, |o| {
                            mask[o..o + layout.block_len(kind)]
                                .iter()
                                .filter(|&&m| m)
                                .count()
                        });
                        assert_eq!(counts.per_type[kind.id() as usize], expected, "{kind}");
                    }
                    let valid: Vec<usize> = (0..mask.len()).filter(|&i| mask[i]).collect();
                    for (k, &i) in valid.iter().enumerate().step_by(7) {
                        assert_eq!(nth_valid(&mask, k), Some(i));
                    }
                    assert_eq!(nth_valid(&mask, valid.len()), None);
                    actions.push(
                        layout
                            .action(valid[rng.random_range(0..valid.len())])
                            .unwrap(),
                    );
                }
                env.step(&actions).unwrap();
            }
        }
    }

    /// The walking line-of-sight mask read straight from ENV_SPEC sections 6 and 10:
    /// every target of every type, every click point of every face, every ray
    /// walked voxel by voxel, nothing pruned or cached. Shares no code with the
    /// module (the oracle for the randomized test below).
    fn spec_walking_los_mask(obs: &Observation, abilities: Abilities) -> Vec<bool> {
        let size = obs.size();
        let layout = FlatLayout::new(size, abilities);
        let mut out = vec![false; layout.len()];
        let (w, h, d) = (size.width as i32, size.height as i32, size.depth as i32);
        let idx = |x: i32, y: i32, z: i32| ((x * h + y) * d + z) as usize;
        let inside = |x: i32, y: i32, z: i32| {
            (0..w).contains(&x) && (0..h).contains(&y) && (0..d).contains(&z)
        };
        let blocks = obs.channel(WorldChannel::CurrentBlocks);
        let markers = obs.channel(WorldChannel::PlayerLocations);
        let mut player = None;
        let mut feet_y = i32::MAX;
        for x in 0..w {
            for y in 0..h {
                for z in 0..d {
                    if markers[idx(x, y, z)] == 1 {
                        player = Some((x, z));
                        feet_y = feet_y.min(y);
                    }
                }
            }
        }
        let Some((px, pz)) = player else {
            return out;
        };
        let head_y = feet_y + 1;
        out[0] = true;
        for kind in ActionType::MOVES {
            let (dx, dy, dz) = kind.move_delta().unwrap();
            let (x, y, z) = (px + dx, feet_y + dy, pz + dz);
            let top = (y + 1).min(h - 1);
            out[layout.offset(kind).unwrap()] = inside(x, y, z)
                && blocks[idx(x, y, z)] == 0
                && blocks[idx(x, top, z)] == 0
                && markers[idx(x, y, z)] <= 1
                && markers[idx(x, top, z)] <= 1;
        }
        let obstructs = |x: i32, y: i32, z: i32| {
            y < h && (blocks[idx(x, y, z)] != 0 || markers[idx(x, y, z)] > 1)
        };
        let eye = [
            f64::from(px) + 0.5,
            f64::from(feet_y) + 1.6,
            f64::from(pz) + 0.5,
        ];
        let clear = |click: [f64; 3]| {
            let dv = [click[0] - eye[0], click[1] - eye[1], click[2] - eye[2]];
            if dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2] > 4.5 * 4.5 {
                return false;
            }
            let mut voxel = [0i32; 3];
            let (mut step, mut t_max, mut t_delta) = ([0i32; 3], [0f64; 3], [0f64; 3]);
            for a in 0..3 {
                let s = 1f64.copysign(dv[a]);
                let start = -s * eye[a];
                step[a] = s as i32;
                voxel[a] = eye[a].floor() as i32;
                t_max[a] = if dv[a] == 0.0 {
                    1.0
                } else {
                    ((start - start.floor()) / dv[a]).abs()
                };
                t_delta[a] = if dv[a] == 0.0 {
                    1.0
                } else {
                    (1.0 / dv[a]).abs()
                };
            }
            while t_max.iter().any(|&t| t < 1.0) {
                let a = if t_max[0] <= t_max[1] {
                    if t_max[0] <= t_max[2] { 0 } else { 2 }
                } else if t_max[1] <= t_max[2] {
                    1
                } else {
                    2
                };
                voxel[a] += step[a];
                t_max[a] += t_delta[a];
                if obstructs(voxel[0], voxel[1], voxel[2]) {
                    return false;
                }
            }
            true
        };
        let sees = |kind: Interaction, t: [i32; 3]| {
            let shift = if kind == Interaction::Break {
                1e-4
            } else {
                -1e-4
            };
            let f0 = 0.0 - shift;
            let uv = [0.1, 0.1 + 0.4, 0.1 + 0.4 + 0.4];
            for face_dim in 0..3 {
                for (side, face) in [f0, f0 + (1.0 + 2.0 * shift)].into_iter().enumerate() {
                    if kind == Interaction::Place {
                        let mut n = t;
                        n[face_dim] += if side == 0 { -1 } else { 1 };
                        if !inside(n[0], n[1], n[2]) || blocks[idx(n[0], n[1], n[2])] == 0 {
                            continue;
                        }
                    }
                    for u in uv {
                        for v in uv {
                            let mut p = [f64::from(t[0]), f64::from(t[1]), f64::from(t[2])];
                            p[face_dim] += face;
                            p[(face_dim + 1) % 3] += u;
                            p[(face_dim + 2) % 3] += v;
                            let dims = [f64::from(w), f64::from(h), f64::from(d)];
                            if (0..3).all(|a| p[a] >= 0.0 && p[a] < dims[a]) && clear(p) {
                                return true;
                            }
                        }
                    }
                }
            }
            false
        };
        let n = size.num_cells();
        let inventory = obs.inventory_row(0);
        for x in 0..w {
            for y in 0..h {
                for z in 0..d {
                    let i = idx(x, y, z);
                    let reach = (x - px).pow(2) + (y - head_y).pow(2) + (z - pz).pow(2);
                    if f64::from(reach) > 20.25 {
                        continue;
                    }
                    let block = blocks[i];
                    let solid_neighbour = FACE_OFFSETS.into_iter().any(|(dx, dy, dz)| {
                        inside(x + dx, y + dy, z + dz) && blocks[idx(x + dx, y + dy, z + dz)] != 0
                    });
                    if block == 0
                        && markers[i] == 0
                        && solid_neighbour
                        && sees(Interaction::Place, [x, y, z])
                    {
                        for b in 0..NUM_BLOCKS {
                            let have = if abilities.inf_blocks {
                                (2..=9).contains(&b)
                            } else {
                                inventory[b] > 0
                            };
                            if have {
                                out[layout.offset(ActionType::PlaceBlock).unwrap() + b * n + i] =
                                    true;
                            }
                        }
                    }
                    if block > 1 && sees(Interaction::Break, [x, y, z]) {
                        out[layout.offset(ActionType::BreakBlock).unwrap() + i] = true;
                    }
                }
            }
        }
        if let Some(offset) = layout.offset(ActionType::GiveBlock) {
            for x in 0..w {
                for y in 0..h {
                    for z in 0..d {
                        let m = markers[idx(x, y, z)];
                        let feet_of_other = m > 1 && (y == 0 || markers[idx(x, y - 1, z)] != m);
                        let near =
                            (x - px).abs() <= 1 && (y - head_y).abs() <= 1 && (z - pz).abs() <= 1;
                        if feet_of_other && near {
                            for (b, &count) in inventory.iter().enumerate() {
                                if count > 0 {
                                    out[offset + b * n + idx(x, y, z)] = true;
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Line-of-sight masks, fresh and cached, equal the spec's plain reading on
    /// random worlds edited step after step: observers inside blocks, at the
    /// borders, with their head above the top, other players in the way, blocks and
    /// players appearing and disappearing near and far, observers moving.
    #[test]
    fn los_masks_equal_the_spec_on_random_worlds() {
        let mut rng = StdRng::seed_from_u64(17);
        let mut compared = 0;
        let mut incremental = 0;
        for world in 0..120 {
            let size = WorldSize::new(
                rng.random_range(3..10),
                rng.random_range(3..9),
                rng.random_range(3..10),
            );
            let (w, h, d) = (size.width as i32, size.height as i32, size.depth as i32);
            let abilities = Abilities {
                teleportation: false,
                flying: true,
                inf_blocks: world % 3 != 0,
            };
            let layout = FlatLayout::new(size, abilities);
            let others = rng.random_range(0..3usize);
            let mut obs = Observation::new(size, 1 + others);
            let density = rng.random_range(0.05..0.7);
            for b in obs.channel_mut(WorldChannel::CurrentBlocks) {
                if rng.random_bool(density) {
                    *b = rng.random_range(1..10);
                }
            }
            for count in &mut obs.inventory {
                *count = if rng.random_bool(0.5) {
                    rng.random_range(1..5)
                } else {
                    0
                };
            }
            // Feet anywhere, corners and the top layer (head above the world)
            // included; blocks are not cleared around anyone.
            let place = |rng: &mut StdRng| {
                let pick = |rng: &mut StdRng, n: i32| match rng.random_range(0..4) {
                    0 => 0,
                    1 => n - 1,
                    _ => rng.random_range(0..n),
                };
                Cell::new(pick(rng, w), pick(rng, h), pick(rng, d))
            };
            let mut feet: Vec<Cell> = (0..=others).map(|_| place(&mut rng)).collect();
            let mark = |obs: &mut Observation, feet: &[Cell]| {
                let markers = obs.channel_mut(WorldChannel::PlayerLocations);
                markers.fill(NO_ONE);
                // Players may share cells; the observer's marks are written last,
                // so it is always found.
                for (p, f) in feet.iter().enumerate().rev() {
                    for y in [f.y, f.y + 1] {
                        if y < h {
                            markers[size.index(Cell::new(f.x, y, f.z)).get()] = p as u8 + 1;
                        }
                    }
                }
            };
            mark(&mut obs, &feet);
            let mut cache = MaskCache::default();
            let mut fresh = vec![false; layout.len()];
            let mut cached = vec![false; layout.len()];
            for step in 0..25 {
                let expected = spec_walking_los_mask(&obs, abilities);
                compute(&obs, abilities, &layout, true, &mut fresh);
                cache.compute(&obs, abilities, &layout, true, &mut cached);
                for (name, got) in [("fresh", &fresh), ("cached", &cached)] {
                    if let Some(i) = (0..expected.len()).find(|&i| got[i] != expected[i]) {
                        panic!(
                            "world {world} {size:?}, step {step}, {name}: entry {i} ({:?}) is {}, \
                             the spec says {}; players at {feet:?}",
                            layout.action(i),
                            got[i],
                            expected[i]
                        );
                    }
                }
                compared += 1;
                // A few edits: blocks placed, broken or swapped anywhere, other
                // players moving, sometimes the observer, sometimes a lot at once.
                let edits = if rng.random_bool(0.05) {
                    40
                } else {
                    rng.random_range(1..4)
                };
                for _ in 0..edits {
                    match rng.random_range(0..10) {
                        0 if others > 0 => {
                            let p = rng.random_range(1..=others);
                            feet[p] = place(&mut rng);
                        }
                        1 if rng.random_bool(0.3) => feet[0] = place(&mut rng),
                        _ => {
                            let c =
                                size.cell(CellIndex(rng.random_range(0..size.num_cells()) as u32));
                            let b = &mut obs.channel_mut(WorldChannel::CurrentBlocks)
                                [size.index(c).get()];
                            *b = if *b == 0 {
                                rng.random_range(1..10)
                            } else {
                                rng.random_range(0..3) * 4
                            };
                        }
                    }
                }
                mark(&mut obs, &feet);
            }
            incremental += cache.stats().1;
        }
        assert_eq!(compared, 120 * 25);
        assert!(incremental > 1000, "{incremental} incremental masks");
    }

    /// The cache returns exactly what a fresh computation returns, step after step
    /// of random play (moves, places, breaks, gives, other players moving).
    #[test]
    fn cached_masks_equal_fresh_ones() {
        for (players, inf_blocks, los, teleportation) in [
            (2, true, true, false),
            (3, true, true, false),
            (2, false, true, false),
            (3, false, true, false),
            (2, true, false, false),
            (3, false, false, false),
            (2, true, false, true),
            (2, false, false, true),
            (2, true, true, true),
        ] {
            let mut rng = StdRng::seed_from_u64(players as u64 + u64::from(inf_blocks));
            let config = serde_json::json!({
                "num_players": players,
                "world_size": [8, 7, 8],
                "horizon": 100_000,
                "players": vec![serde_json::json!({}); players],
                "abilities": {"teleportation": teleportation, "flying": true, "inf_blocks": inf_blocks},
            });
            let mut env = env_with_floor_goal(config, BlockId::PLANKS, 3, &mut rng);
            let abilities = env.config().abilities;
            let layout = *env.layout();
            let mut caches = vec![MaskCache::default(); players];
            let mut obs = env.new_observation();
            let (mut fresh, mut cached) = (vec![false; layout.len()], vec![false; layout.len()]);
            for step in 0..1000 {
                let mut actions = Vec::new();
                for (p, cache) in caches.iter_mut().enumerate() {
                    env.observe(p, &mut obs).unwrap();
                    let expected = compute(&obs, abilities, &layout, los, &mut fresh);
                    let got = cache.compute(&obs, abilities, &layout, los, &mut cached);
                    assert_eq!(
                        got, expected,
                        "counts, step {step}, player {p}, teleportation {teleportation}, los {los}"
                    );
                    if let Some(i) = (0..fresh.len()).find(|&i| fresh[i] != cached[i]) {
                        panic!(
                            "step {step}, player {p}: entry {i} ({:?}) differs",
                            layout.action(i)
                        );
                    }
                    // Mostly builds, sometimes moves, as players do.
                    let valid: Vec<usize> = (0..fresh.len()).filter(|&i| fresh[i]).collect();
                    let moves: Vec<usize> = valid
                        .iter()
                        .copied()
                        .filter(|&i| layout.action(i).unwrap().kind.is_move())
                        .collect();
                    let builds: Vec<usize> = valid
                        .iter()
                        .copied()
                        .filter(|&i| !layout.action(i).unwrap().kind.is_move())
                        .collect();
                    let pick = if !moves.is_empty() && (builds.len() <= 1 || rng.random_bool(0.15))
                    {
                        moves[rng.random_range(0..moves.len())]
                    } else {
                        builds[rng.random_range(0..builds.len())]
                    };
                    actions.push(layout.action(pick).unwrap());
                }
                env.step(&actions).unwrap();
            }
            // The test means something only if many masks took the incremental path
            // (in palette mode the held block types change often, forcing full ones).
            for cache in &caches {
                let (full, incremental) = cache.stats();
                let needed = match (teleportation, los, inf_blocks) {
                    // Teleporting line-of-sight masks are never kept.
                    (true, true, _) => {
                        assert_eq!(incremental, 0);
                        continue;
                    }
                    (_, _, true) => 2 * full,
                    (_, _, false) => full / 8,
                };
                assert!(
                    incremental > needed,
                    "{players} players, inf_blocks {inf_blocks}, los {los}, teleportation {teleportation}: \
                     {full} full, {incremental} incremental"
                );
            }
        }
    }
}
