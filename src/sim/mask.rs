//! Valid-action masks computed from an observation, as the reference's C
//! implementation does (ENV_SPEC section 10).
//!
//! Masks are flat (one bool per flat action of the config's [`FlatLayout`]). Two
//! variants exist: without line of sight (used by the heuristic agents) and with it
//! (what the trained networks are masked with).

use super::action::{ActionType, FlatLayout};
use super::block::{BlockId, NUM_BLOCKS};
use super::config::Abilities;
use super::coords::{Cell, CellIndex, WorldSize};
use super::obs::{CURRENT_PLAYER, NO_ONE, Observation, WorldChannel};
use super::viewpoint::{self, Interaction, REACH, SearchWorld};

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
}

/// A cell whose block or player marker changed, and what that did to sight lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Change {
    cell: Cell,
    sight: Sight,
}

/// How a change affects rays passing through its cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sight {
    /// An obstacle went away (a block broken, a player left).
    Opened,
    /// An obstacle appeared.
    Closed,
    /// Obstacle before and after (a block replaced by another).
    Unchanged,
}

impl Sight {
    fn between(obstacle_before: bool, obstacle_after: bool) -> Self {
        match (obstacle_before, obstacle_after) {
            (true, false) => Self::Opened,
            (false, true) => Self::Closed,
            _ => Self::Unchanged,
        }
    }
}

impl Incremental<'_> {
    /// Whether the entries of target `t` may have changed, given the click point
    /// that made it valid last time (`witness`; `None` if it was not valid with
    /// line of sight).
    ///
    /// Entries depend on the target's neighbourhood (placeability, faces, click
    /// points) and on the voxels rays from the eye to click points cross. A valid
    /// target stays valid unless an obstacle appeared on its witness ray; an
    /// invalid one can only become valid if an obstacle went away inside the
    /// convex hull of the eye and the target (where every such ray lies).
    /// `witness` is `None` when no witnesses are kept; then any change of sight
    /// inside the hull counts.
    fn dirty(
        &self,
        eye: [f64; 3],
        eye_voxel: Cell,
        t: Cell,
        witness: Option<Option<[f64; 3]>>,
        possible: impl Fn() -> bool,
    ) -> bool {
        // The target's own cell and its six face neighbours decide placeability,
        // faces and click points; other cells matter only through rays.
        let near = |c: Cell| (c.x - t.x).abs() + (c.y - t.y).abs() + (c.z - t.z).abs() <= 1;
        if self.changed.iter().any(|change| near(change.cell)) {
            return true;
        }
        // With its neighbourhood unchanged, a target that cannot be valid whatever
        // it sees (air with nothing to click against, a player in it, an
        // unbreakable block) stays invalid.
        if !possible() {
            return false;
        }
        self.changed.iter().any(|change| {
            let c = change.cell;
            // Every ray stays in the box spanned by the eye's voxel and the target:
            // a cheap first bound.
            let within = |e: i32, t: i32, c: i32| e.min(t - 1) <= c && c <= e.max(t + 1);
            if !(within(eye_voxel.x, t.x, c.x)
                && within(eye_voxel.y, t.y, c.y)
                && within(eye_voxel.z, t.z, c.z))
            {
                return false;
            }
            match (change.sight, witness) {
                (Sight::Unchanged, _) => false,
                (Sight::Closed, Some(Some(click))) => segment_may_meet_cell(eye, click, c),
                (Sight::Closed, Some(None)) => false,
                (Sight::Opened, Some(Some(_))) => false,
                (Sight::Opened, Some(None)) | (_, None) => may_meet_sight_cone(eye, t, c),
            }
        })
    }
}

/// Half the extra size given to cells in the geometric tests, far above any
/// rounding in the voxel walk or in the tests.
const GEOMETRY_MARGIN: f64 = 1e-3;

/// Whether the segment from `a` to `b` may pass through cell `c` (slab test on the
/// cell grown by a margin; conservative).
fn segment_may_meet_cell(a: [f64; 3], b: [f64; 3], c: Cell) -> bool {
    // First the line: a cell whose centre is farther from it than the cell's
    // half-diagonal cannot meet the segment (one division, no square root).
    let v = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let w = [
        f64::from(c.x) + 0.5 - a[0],
        f64::from(c.y) + 0.5 - a[1],
        f64::from(c.z) + 0.5 - a[2],
    ];
    let vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    let wv = w[0] * v[0] + w[1] * v[1] + w[2] * v[2];
    let ww = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    if vv > 1e-12 && ww - wv * wv / vv > (0.8661 + 2.0 * GEOMETRY_MARGIN).powi(2) {
        return false;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for (axis, cell) in [c.x, c.y, c.z].into_iter().enumerate() {
        let min = f64::from(cell) - GEOMETRY_MARGIN;
        let max = f64::from(cell) + 1.0 + GEOMETRY_MARGIN;
        let d = b[axis] - a[axis];
        if d.abs() < 1e-12 {
            if a[axis] < min || a[axis] > max {
                return false;
            }
            continue;
        }
        let (t0, t1) = ((min - a[axis]) / d, (max - a[axis]) / d);
        lo = lo.max(t0.min(t1));
        hi = hi.min(t0.max(t1));
        if lo > hi {
            return false;
        }
    }
    true
}

/// Whether cell `c` may meet the convex hull of the point `eye` and the cube of
/// target cell `t` grown by 1e-4. Conservative: `false` only when they provably do
/// not meet.
///
/// Every hull point is `eye + s (p - eye)` with `p` in the grown cube, so it lies
/// within `s r` of the axis point `eye + s (centre - eye)` (r = the grown cube's
/// half-diagonal). The cell meets the hull only if some `s` in [0, 1] has
/// `|c_centre - axis(s)| - s r <= h` (h = the cell's half-diagonal); that function
/// of `s` is convex, so its minimum is at its clamped stationary point.
fn may_meet_sight_cone(eye: [f64; 3], t: Cell, c: Cell) -> bool {
    const R: f64 = 0.866_2; // sqrt(3) * (0.5 + 1e-4), rounded up
    const H: f64 = 0.866_1; // sqrt(3) / 2, rounded up
    let centre = |v: Cell| {
        [
            f64::from(v.x) + 0.5,
            f64::from(v.y) + 0.5,
            f64::from(v.z) + 0.5,
        ]
    };
    let (tc, cc) = (centre(t), centre(c));
    let d = [tc[0] - eye[0], tc[1] - eye[1], tc[2] - eye[2]];
    let w = [cc[0] - eye[0], cc[1] - eye[1], cc[2] - eye[2]];
    let dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    // First the axis: the hull lies within R of it, so a cell centre farther than
    // R + H from the axis line cannot meet it (one division, no square root).
    let wd = w[0] * d[0] + w[1] * d[1] + w[2] * d[2];
    let ww = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    if dd > 1e-12 && ww - wd * wd / dd > (R + H + 2.0 * GEOMETRY_MARGIN).powi(2) {
        return false;
    }
    let len = dd.sqrt();
    if len < 1e-9 || R / len >= 0.999 {
        return true;
    }
    let k = R / len;
    let along = wd / len;
    let across = (ww - along * along).max(0.0).sqrt();
    // Distance along the axis, in [0, len]: f(x) = |(along - x, across)| - k x.
    let x = (along + k * across / (1.0 - k * k).sqrt()).clamp(0.0, len);
    let f = ((along - x) * (along - x) + across * across).sqrt() - k * x;
    f <= H + 2.0 * GEOMETRY_MARGIN
}

/// The click point of the first candidate for a line-of-sight check, if any.
fn first_click<W: viewpoint::SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    standing: Option<[f64; 3]>,
) -> Option<[f64; 3]> {
    let mut click = None;
    viewpoint::search(world, kind, target, standing, |c| {
        click = Some(c.click);
        true
    });
    click
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
    mut witnesses: Option<&mut [Option<[f64; 3]>]>,
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
    let player = find_player(size, world.markers);
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
    let eye_voxel = Cell::new(px, head_y, pz);
    let eye = [
        f64::from(px) + 0.5,
        f64::from(feet_y) + viewpoint::EYE_HEIGHT,
        f64::from(pz) + 0.5,
    ];

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
    let mut visit = |x: i32, y: i32, z: i32, i: usize| {
        let cell = Cell::new(x, y, z);
        if let Some(inc) = &incremental {
            let witness = witnesses.as_deref().map(|w| w[i]);
            let possible = || {
                let block = BlockId(blocks[i]);
                if block.is_air() {
                    place_offset.is_some()
                        && world.markers[i] == NO_ONE
                        && solid_neighbour(x, y, z, i)
                } else {
                    break_offset.is_some() && block.is_breakable()
                }
            };
            if !inc.dirty(eye, eye_voxel, cell, witness, possible) {
                return;
            }
            // Take the target's old entries out of the counts; they are
            // decided afresh below.
            if let Some(offset) = place_offset
                && std::mem::take(&mut out[offset + have[0] * n + i])
            {
                place_cells -= 1;
            }
            if let Some(offset) = break_offset
                && std::mem::take(&mut out[offset + i])
            {
                breaks -= 1;
            }
        }
        if let Some(w) = witnesses.as_deref_mut() {
            w[i] = None;
        }
        let mut sees = |kind: Interaction| {
            let click = first_click(&world, kind, cell, standing);
            if let Some(w) = witnesses.as_deref_mut() {
                w[i] = click;
            }
            click.is_some()
        };
        let block = BlockId(blocks[i]);
        if block.is_air() {
            if let Some(offset) = place_offset
                && world.markers[i] == NO_ONE
                && solid_neighbour(x, y, z, i)
                && (!line_of_sight || sees(Interaction::Place))
            {
                // Every held block has the same cells; the other blocks'
                // spans are copied from the first one after the loop.
                out[offset + have[0] * n + i] = true;
                place_cells += 1;
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
                        visit(x, y, z, world.idx(x, y, z));
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
                        // Truncation is floor here (rest >= 0), and avoids a libm call.
                        let dz = f64::from(rest).sqrt() as i32;
                        ((pz - dz).max(lo.z), (pz + dz).min(hi.z))
                    };
                    let row = (x as usize * size.height + y as usize) * size.depth;
                    for z in z0..=z1 {
                        visit(x, y, z, row + z as usize);
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
    if let Some(offset) = place_offset {
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
const NEIGHBOURHOOD: [(i32, i32, i32); 7] = [
    (0, 0, 0),
    (-1, 0, 0),
    (1, 0, 0),
    (0, -1, 0),
    (0, 1, 0),
    (0, 0, -1),
    (0, 0, 1),
];

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
    /// Per cell, the click point that made its entry valid with line of sight.
    witnesses: Vec<Option<[f64; 3]>>,
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
        // Teleporting line-of-sight masks search around every target, so a change
        // can reach far; they cost less to compute than to keep.
        if abilities.teleportation && line_of_sight {
            self.key = None;
            self.full += 1;
            return compute(obs, abilities, layout, line_of_sight, out);
        }
        let size = obs.size();
        let blocks = obs.channel(WorldChannel::CurrentBlocks);
        let markers = obs.channel(WorldChannel::PlayerLocations);
        let key = Some((size, abilities, layout.len(), line_of_sight));
        let player = find_player(size, markers);
        let reusable = self.key == key
            // Walking masks need the observer's position (and keep it); teleporting
            // ones have none.
            && (player.is_some() || abilities.teleportation)
            && self.player == player
            // Place entries depend on which blocks are held, not how many; GIVE
            // entries are always redone.
            && self.inventory.len() == obs.inventory_row(0).len()
            && self
                .inventory
                .iter()
                .zip(obs.inventory_row(0))
                .all(|(&a, &b)| (a > 0) == (b > 0))
            && self.find_changes(size, blocks, markers);

        let (counts, place_cells) = if reusable {
            self.incremental += 1;
            let incremental = Incremental {
                changed: &self.changed,
                counts: self.counts,
                place_cells: self.place_cells,
            };
            compute_inner(
                obs,
                abilities,
                layout,
                line_of_sight,
                &mut self.mask,
                Some(incremental),
                line_of_sight.then_some(&mut self.witnesses[..]),
            )
        } else {
            self.full += 1;
            self.mask.resize(layout.len(), false);
            self.witnesses.clear();
            self.witnesses.resize(size.num_cells(), None);
            compute_inner(
                obs,
                abilities,
                layout,
                line_of_sight,
                &mut self.mask,
                None,
                line_of_sight.then_some(&mut self.witnesses[..]),
            )
        };
        out.copy_from_slice(&self.mask);
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
                            Sight::between(is_obstacle_marker(x), is_obstacle_marker(y))
                        } else {
                            Sight::between(x != 0, y != 0)
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
    use crate::sim::block::Blocks;
    use crate::sim::config::Config;
    use crate::sim::env::{Env, place_goal};
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

    /// The geometric shortcuts of incremental updates never say "misses" for a cell
    /// that a ray does cross: sampled rays from eyes to points of the (grown) target
    /// cube, walked voxel by voxel.
    #[test]
    fn sight_tests_are_conservative() {
        let mut rng = StdRng::seed_from_u64(4);
        let mut checked = 0;
        for _ in 0..3000 {
            let eye = [
                f64::from(rng.random_range(0..9)) + 0.5,
                f64::from(rng.random_range(0..8)) + 1.6,
                f64::from(rng.random_range(0..9)) + 0.5,
            ];
            let t = Cell::new(
                rng.random_range(0..9),
                rng.random_range(0..9),
                rng.random_range(0..9),
            );
            for _ in 0..20 {
                let p = [
                    f64::from(t.x) - 1e-4 + rng.random_range(0.0..1.0002),
                    f64::from(t.y) - 1e-4 + rng.random_range(0.0..1.0002),
                    f64::from(t.z) - 1e-4 + rng.random_range(0.0..1.0002),
                ];
                // Cells along the segment, by dense sampling.
                for k in 0..=400 {
                    let s = f64::from(k) / 400.0;
                    let q = [
                        eye[0] + s * (p[0] - eye[0]),
                        eye[1] + s * (p[1] - eye[1]),
                        eye[2] + s * (p[2] - eye[2]),
                    ];
                    let c = Cell::new(
                        q[0].floor() as i32,
                        q[1].floor() as i32,
                        q[2].floor() as i32,
                    );
                    assert!(
                        may_meet_sight_cone(eye, t, c),
                        "{eye:?} -> {p:?} crosses {c:?}"
                    );
                    assert!(
                        segment_may_meet_cell(eye, p, c),
                        "{eye:?} -> {p:?} crosses {c:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 1_000_000);
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
