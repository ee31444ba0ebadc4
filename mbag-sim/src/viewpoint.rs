//! Where a block can be placed or broken from: the viewpoint/click search with
//! reach and line of sight (ENV_SPEC section 6).
//!
//! The arithmetic copies the reference's C code operation for operation in `f64`,
//! because both the candidate count and the chosen candidate (which decides where a
//! teleporting player lands) are compared bit for bit with the goldens.

use super::coords::{Cell, WorldSize};

mod ray_table;

pub use ray_table::{CandidateSet, ObstacleRows};

/// Maximum reach from the eye, in blocks.
pub const REACH: f64 = 4.5;
/// Height of the eye above the feet.
pub const EYE_HEIGHT: f64 = 1.6;

/// Whether the search is for placing or breaking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interaction {
    /// Place a block into the (air) target cell, clicking a face of a neighbour.
    Place,
    /// Break the target block, clicking one of its exposed faces.
    Break,
}

/// One way to reach the target: where the eye is and which point is clicked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The eye position (feet + 1.6 in y).
    pub viewpoint: [f64; 3],
    /// The clicked point.
    pub click: [f64; 3],
}

impl Candidate {
    /// The feet position of a player standing at this viewpoint (`y - 1.6`, which can
    /// be a value like `2.9999999999999996`).
    pub fn feet(&self) -> [f64; 3] {
        [
            self.viewpoint[0],
            self.viewpoint[1] - EYE_HEIGHT,
            self.viewpoint[2],
        ]
    }
}

/// The world as the search sees it: block ids and which cells hold another player.
pub trait SearchWorld {
    /// The world size.
    fn size(&self) -> WorldSize;
    /// The block ids of the world, C order.
    fn ids(&self) -> &[u8];
    /// Whether the in-world cell `(x, y, z)` is air.
    #[inline]
    fn is_air(&self, x: i32, y: i32, z: i32) -> bool {
        let size = self.size();
        self.ids()[(x as usize * size.height + y as usize) * size.depth + z as usize] == 0
    }
    /// Whether the cell holds another player (an obstacle for standing and sight).
    /// `y` may equal the world height (a head above the world).
    fn is_obstacle_player(&self, x: i32, y: i32, z: i32) -> bool;
    /// Bit rows of every obstacle of this world, if the caller keeps them up to
    /// date. Only for worlds where nothing above the top obstructs (no other
    /// player's head there); they let the teleportation search use precomputed
    /// rays.
    fn obstacle_rows(&self) -> Option<&ObstacleRows> {
        None
    }
}

/// Independent work a search runs piecewise between pieces of its own (a caller's
/// long dependency chain, which the processor then overlaps with the search).
pub trait Meanwhile {
    /// Runs one piece.
    fn run_some(&mut self);
}

impl<M: Meanwhile + ?Sized> Meanwhile for &mut M {
    #[inline(always)]
    fn run_some(&mut self) {
        (**self).run_some();
    }
}

/// Nothing to run.
impl Meanwhile for () {
    #[inline(always)]
    fn run_some(&mut self) {}
}

/// Up to 54 click points (3 axes x 2 faces x 3 x 3), each with its face
/// (`2 * axis + side`, side 0 = the low face, 1 = the high face).
struct ClickPoints {
    points: [[f64; 3]; 54],
    faces: [u8; 54],
    len: usize,
}

/// The click points of the faces in `faces` (a 6-bit set, see [`viable_faces`]).
fn click_points<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    faces: u8,
) -> ClickPoints {
    let mut out = ClickPoints {
        points: [[0.0; 3]; 54],
        faces: [0; 54],
        len: 0,
    };
    for_each_click_point(world, kind, target, faces, |face, p| {
        out.points[out.len] = p;
        out.faces[out.len] = face;
        out.len += 1;
        false
    });
    out
}

/// Click point `k` (`3 * u + v`, u and v indexing 0.1, 0.5, 0.9) of face `face`
/// (`2 * axis + side`) of the target, computed as the reference does: it steps
/// the face offset by `1 + 2*shift` from `0 - shift`, and u, v by 0.4 from 0.1, and
/// those float sequences are kept rather than literals.
#[inline]
fn click_point(kind: Interaction, target: Cell, face: u8, k: usize) -> [f64; 3] {
    let shift = match kind {
        Interaction::Break => 1e-4,
        Interaction::Place => -1e-4,
    };
    let face_offsets = [0.0 - shift, (0.0 - shift) + (1.0 + 2.0 * shift)];
    let uv = [0.1, 0.1 + 0.4, (0.1 + 0.4) + 0.4];
    let t = target.to_array();
    let mut p = [f64::from(t[0]), f64::from(t[1]), f64::from(t[2])];
    let axis = usize::from(face / 2);
    p[axis] += face_offsets[usize::from(face % 2)];
    p[(axis + 1) % 3] += uv[k / 3];
    p[(axis + 2) % 3] += uv[k % 3];
    p
}

/// Calls `f(face, point)` for the click points of the faces in `faces` (a 6-bit
/// set, see [`viable_faces`]), in the reference's order, until it returns `true`;
/// returns whether it did.
fn for_each_click_point<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    faces: u8,
    mut f: impl FnMut(u8, [f64; 3]) -> bool,
) -> bool {
    let size = world.size();
    let t = target.to_array();
    for face in 0..6u8 {
        if faces & (1 << face) == 0 {
            continue;
        }
        let axis = usize::from(face / 2);
        let high = face % 2 == 1;
        if kind == Interaction::Place {
            let mut against = t;
            against[axis] += if high { 1 } else { -1 };
            let a = Cell::new(against[0], against[1], against[2]);
            if !size.contains(a) || world.is_air(a.x, a.y, a.z) {
                continue;
            }
        }
        // The u and v coordinates lie in (t, t + 1), inside the world; only the
        // face's own coordinate can leave it (break faces on the world's border),
        // and then all nine points do.
        let plane = click_point(kind, target, face, 0)[axis];
        if !(plane >= 0.0 && plane < size.axes()[axis] as f64) {
            continue;
        }
        for k in 0..9 {
            if f(face, click_point(kind, target, face, k)) {
                return true;
            }
        }
    }
    false
}

/// The feet of the teleportation search's standing position at offset
/// `(dx, dy, dz)` from the target, computed as the reference does.
#[inline]
fn standing_feet(target: Cell, dx: i32, dy: i32, dz: i32) -> [f64; 3] {
    [
        f64::from(target.x) + 0.5 + f64::from(dx),
        f64::from(target.y + dy),
        f64::from(target.z) + 0.5 + f64::from(dz),
    ]
}

/// The eye of a player standing at `feet`.
#[inline]
fn eye_of(feet: [f64; 3]) -> [f64; 3] {
    [feet[0], feet[1] + EYE_HEIGHT, feet[2]]
}

/// The heights `dy` at which the teleportation search does not stand directly
/// above or below the target (`dx == dz == 0`): the target's own column next to it.
fn skipped_in_column(kind: Interaction) -> std::ops::RangeInclusive<i32> {
    match kind {
        Interaction::Place => -1..=1,
        Interaction::Break => -1..=0,
    }
}

/// Calls `f` with each standing position (feet) of the teleportation search, in the
/// reference's order.
fn for_each_standing_position<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    mut f: impl FnMut([f64; 3]) -> bool,
) -> bool {
    let size = world.size();
    let skipped = skipped_in_column(kind);
    for dx in -4..=4 {
        for dy in -5..=3 {
            for dz in -4..=4 {
                if dx == 0 && dz == 0 && skipped.contains(&dy) {
                    continue;
                }
                let c = target.offset(dx, dy, dz);
                if !size.contains(c) || !world.is_air(c.x, c.y, c.z) {
                    continue;
                }
                if c.y + 1 < size.height as i32 && !world.is_air(c.x, c.y + 1, c.z) {
                    continue;
                }
                if world.is_obstacle_player(c.x, c.y, c.z)
                    || world.is_obstacle_player(c.x, c.y + 1, c.z)
                {
                    continue;
                }
                if f(standing_feet(target, dx, dy, dz)) {
                    return true;
                }
            }
        }
    }
    false
}

/// `floor` for the small coordinates of a world, without a libm call (the baseline
/// x86-64 target has no rounding instruction).
#[inline(always)]
fn floor(x: f64) -> f64 {
    let t = x as i64 as f64;
    if t > x { t - 1.0 } else { t }
}

#[inline]
fn voxel_of(p: [f64; 3]) -> [i32; 3] {
    [floor(p[0]) as i32, floor(p[1]) as i32, floor(p[2]) as i32]
}

/// Whether any point of the target cell, grown by the 1e-4 that break clicks stick
/// out, lies within reach of the eye. Every click point lies in that box, so
/// `false` means no click is in reach; the margin covers the rounding of the
/// per-click distance test.
#[inline]
fn box_in_reach(target: Cell, eye: [f64; 3]) -> bool {
    let t = target.to_array();
    let mut d2 = 0.0;
    for a in 0..3 {
        let low = f64::from(t[a]) - 1e-4;
        let high = f64::from(t[a]) + 1.0 + 1e-4;
        let d = (low - eye[a]).max(eye[a] - high).max(0.0);
        d2 += d * d;
    }
    d2 <= REACH * REACH + 1e-6
}

/// Which faces of the target can possibly be clicked from an eye, as a 6-bit set
/// (bit `2 * axis + side`). A pruned face is one whose every ray provably hits a
/// block, so pruning never changes a result, only skips walks:
/// - breaking, the click lies 1e-4 inside the face's outside neighbour, so the walk
///   ends by entering that neighbour: it must be free (air, no other player) unless
///   the eye is in it;
/// - breaking, an eye on the inner side of the face's plane sees the point through
///   the (solid) target itself, unless the eye is inside the target;
/// - placing, an eye beyond the plane of the face being clicked sees the point
///   through the solid neighbour clicked against, unless the eye is in it.
///
/// The "through" arguments need the eye at least ~0.4 from the plane (so the ray
/// crosses it within 1e-3 of the click point, well inside the 0.1 margin of the
/// click grid); eyes stand at cell centres at height +1.6, so they always are.
fn viable_faces<W: SearchWorld>(world: &W, kind: Interaction, target: Cell, eye: [f64; 3]) -> u8 {
    let size = world.size();
    let eye_voxel = Cell::new(
        floor(eye[0]) as i32,
        floor(eye[1]) as i32,
        floor(eye[2]) as i32,
    );
    let t = target.to_array();
    let mut viable = 0u8;
    for axis in 0..3 {
        for side in 0..2u8 {
            let mut n = t;
            n[axis] += if side == 0 { -1 } else { 1 };
            let neighbour = Cell::new(n[0], n[1], n[2]);
            let low = f64::from(t[axis]);
            let high = low + 1.0;
            let ok = match kind {
                Interaction::Break => {
                    // The cheap float test first; the world only for faces that
                    // face the eye.
                    let facing = eye_voxel == target
                        || if side == 0 {
                            eye[axis] < low
                        } else {
                            eye[axis] > high
                        };
                    facing
                        && (neighbour == eye_voxel
                            || (size.contains(neighbour)
                                && world.is_air(n[0], n[1], n[2])
                                && !world.is_obstacle_player(n[0], n[1], n[2])))
                }
                Interaction::Place => {
                    let beyond = if side == 0 {
                        eye[axis] < low
                    } else {
                        eye[axis] > high
                    };
                    !beyond || neighbour == eye_voxel
                }
            };
            if ok {
                viable |= 1 << (2 * axis as u8 + side);
            }
        }
    }
    viable
}

/// An eye position with what every ray from it shares.
#[derive(Clone, Copy)]
struct Eye {
    pos: [f64; 3],
    voxel: [i32; 3],
    /// Per axis, `start - floor(start)` for `start = -pos` (rays going up the axis)
    /// and `start = pos` (going down), as the reference computes it per ray.
    frac_up: [f64; 3],
    frac_down: [f64; 3],
}

impl Eye {
    fn new(pos: [f64; 3]) -> Self {
        let frac = |v: f64| v - floor(v);
        Self {
            pos,
            voxel: voxel_of(pos),
            frac_up: [frac(-pos[0]), frac(-pos[1]), frac(-pos[2])],
            frac_down: [frac(pos[0]), frac(pos[1]), frac(pos[2])],
        }
    }
}

/// The ray from `eye` to `click`, if its length is within reach (the reference's
/// squared-distance test, bit for bit).
#[inline(always)]
fn ray_in_reach(eye: [f64; 3], click: [f64; 3]) -> Option<[f64; 3]> {
    let d = [click[0] - eye[0], click[1] - eye[1], click[2] - eye[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= REACH * REACH).then_some(d)
}

/// Whether the segment from the eye to the click point is within reach and passes
/// only through air and no other player.
#[inline]
fn reachable<W: SearchWorld>(world: &W, eye: &Eye, click: [f64; 3]) -> bool {
    ray_in_reach(eye.pos, click).is_some_and(|d| walk_ray(world, eye, d, |_| {}).is_ok())
}

/// Runs the search, calling `f` with each candidate in the reference's order until it
/// returns `true`. Returns whether `f` stopped the search.
///
/// `player_feet` is the acting player's feet position (walking mode: exactly that one
/// viewpoint, without any check); `None` searches every standing position around
/// the target (teleportation mode).
pub fn search<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    player_feet: Option<[f64; 3]>,
    mut f: impl FnMut(Candidate) -> bool,
) -> bool {
    // With one viewpoint, only the faces it can see need click points, and they are
    // walked as they are generated.
    if let Some(feet) = player_feet {
        let eye = eye_of(feet);
        if !box_in_reach(target, eye) {
            return false;
        }
        let faces = viable_faces(world, kind, target, eye);
        if faces == 0 {
            return false;
        }
        let eye_info = Eye::new(eye);
        return for_each_click_point(world, kind, target, faces, |_, click| {
            reachable(world, &eye_info, click)
                && f(Candidate {
                    viewpoint: eye,
                    click,
                })
        });
    }
    if world.obstacle_rows().is_some() {
        let mut set = CandidateSet::default();
        if ray_table::search_into(world, kind, target, &mut set, ()) {
            return set.iter().any(f);
        }
    }
    search_every_position(world, kind, target, f)
}

/// The teleportation search without the ray table: every standing position's
/// rays are walked.
fn search_every_position<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    mut f: impl FnMut(Candidate) -> bool,
) -> bool {
    let clicks = click_points(world, kind, target, 0b11_1111);
    let (points, point_faces) = (&clicks.points[..clicks.len], &clicks.faces[..clicks.len]);
    if points.is_empty() {
        return false;
    }
    let try_position = |feet: [f64; 3]| {
        let eye = eye_of(feet);
        if !box_in_reach(target, eye) {
            return false;
        }
        let viable = viable_faces(world, kind, target, eye);
        if viable == 0 {
            return false;
        }
        let eye_info = Eye::new(eye);
        points.iter().zip(point_faces).any(|(&click, &face)| {
            viable & (1 << face) != 0
                && reachable(world, &eye_info, click)
                && f(Candidate {
                    viewpoint: eye,
                    click,
                })
        })
    };
    for_each_standing_position(world, kind, target, try_position)
}

/// The teleportation search's candidates, into `out` (a reused buffer): by the ray
/// table when the world keeps [`ObstacleRows`] that fit it, else by walking every
/// ray. Once the table's search has found a candidate, it runs a piece of
/// `meanwhile` per further standing position it visits (the walking search runs
/// none).
pub fn teleport_candidates<W: SearchWorld, M: Meanwhile>(
    world: &W,
    kind: Interaction,
    target: Cell,
    out: &mut CandidateSet,
    meanwhile: M,
) {
    if !ray_table::search_into(world, kind, target, out, meanwhile) {
        out.fill_listed(|push| {
            search_every_position(world, kind, target, |c| {
                push(c);
                false
            });
        });
    }
}

/// Every candidate, in order, written into `out` (cleared first) so a caller can
/// reuse one buffer.
pub fn candidates_into<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    player_feet: Option<[f64; 3]>,
    out: &mut Vec<Candidate>,
) {
    out.clear();
    search(world, kind, target, player_feet, |c| {
        out.push(c);
        false
    });
}

/// Every candidate, in order.
pub fn candidates<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    player_feet: Option<[f64; 3]>,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    candidates_into(world, kind, target, player_feet, &mut out);
    out
}

/// Whether at least one candidate exists (stops at the first).
pub fn any_candidate<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    player_feet: Option<[f64; 3]>,
) -> bool {
    search(world, kind, target, player_feet, |_| true)
}

/// A set of world cells (by linear index) kept as a 128-bit filter: inserting is
/// exact, membership and intersection may answer "maybe" for cells never inserted,
/// never "no" for one that was. Enough to decide cheaply which cached answers a
/// change of some cells may have touched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellSet(u128);

impl CellSet {
    /// No cell.
    pub const EMPTY: Self = Self(0);
    /// Every cell (what a set that cannot be described becomes).
    pub const ALL: Self = Self(u128::MAX);

    /// The bit of a cell: a multiplicative hash, so that the cells of one ray and
    /// those of one neighbourhood rarely share bits.
    #[inline]
    fn bit(index: usize) -> u128 {
        1 << ((index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57)
    }

    /// Adds the cell with linear index `index`.
    #[inline]
    pub fn insert(&mut self, index: usize) {
        self.0 |= Self::bit(index);
    }

    /// Whether the two sets may share a cell (`false` means they certainly do not).
    #[inline]
    pub fn may_intersect(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
}

/// Whether a walking player with feet at `feet` can place or break at `target`,
/// exactly [`any_candidate`] with `Some(feet)`, together with the cells the answer
/// rests on. With the eye and the target's own cell unchanged:
/// - `true` stays `true` while the cells of the ray found clear stay free and,
///   placing, the block clicked against stays; other changes of the face
///   neighbours can only add faces or take away faces no longer needed;
/// - `false` stays `false` while the first obstacle of each ray walked stays and no
///   face neighbour gains a face (placing: turns from air to a block; breaking:
///   becomes free). Rays not walked were skipped for reach or for facing away,
///   which depends only on the eye.
///
/// Cells above the world are never in the set, so it serves only worlds where
/// nothing there can become an obstacle (observations: no markers above the top);
/// a ray stopped there gives [`CellSet::ALL`]. Every ray is walked: an obstacle
/// table's shortcut would not tell which cells a clear ray crossed.
pub fn sees_from<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    feet: [f64; 3],
) -> (bool, CellSet) {
    let eye = eye_of(feet);
    if !box_in_reach(target, eye) {
        return (false, CellSet::EMPTY);
    }
    let faces = viable_faces(world, kind, target, eye);
    if faces == 0 {
        return (false, CellSet::EMPTY);
    }
    let eye_info = Eye::new(eye);
    let mut blockers = CellSet::EMPTY;
    let mut witness = CellSet::EMPTY;
    let size = world.size();
    let found = for_each_click_point(world, kind, target, faces, |face, click| {
        let Some(d) = ray_in_reach(eye, click) else {
            return false;
        };
        let mut crossed = CellSet::EMPTY;
        match walk_ray(world, &eye_info, d, |i| crossed.insert(i)) {
            Ok(()) => {
                witness = crossed;
                if kind == Interaction::Place {
                    // The block clicked against: the point is clickable only
                    // while it stays.
                    let mut against = target.to_array();
                    against[usize::from(face / 2)] += if face % 2 == 0 { -1 } else { 1 };
                    witness.insert(
                        size.index(Cell::new(against[0], against[1], against[2]))
                            .get(),
                    );
                }
                true
            }
            Err(Some(index)) => {
                blockers.insert(index);
                false
            }
            Err(None) => {
                blockers = CellSet::ALL;
                false
            }
        }
    });
    if found {
        (true, witness)
    } else {
        (false, blockers)
    }
}

/// The Amanatides-Woo voxel walk from `eye` along `d` (the eye's own voxel is not
/// checked), calling `on_free` with the linear index of every free in-world voxel
/// entered. `Err` holds the first obstructing voxel's linear index, `None` if it
/// lies above the world (another player's head).
#[inline(always)]
fn walk_ray<W: SearchWorld>(
    world: &W,
    eye: &Eye,
    d: [f64; 3],
    mut on_free: impl FnMut(usize),
) -> Result<(), Option<usize>> {
    let size = world.size();
    // Per-axis setup, then the walk on scalars so that everything stays in
    // registers (indexing arrays by a computed axis spills them to the stack).
    let axis = |a: usize| {
        let s = 1f64.copysign(d[a]);
        // `-s * pos - floor(-s * pos)`, precomputed per eye for both signs.
        let frac = if s > 0.0 {
            eye.frac_up[a]
        } else {
            eye.frac_down[a]
        };
        let t_max = if d[a] == 0.0 {
            1.0
        } else {
            (frac / d[a]).abs()
        };
        let t_delta = if d[a] == 0.0 { 1.0 } else { (1.0 / d[a]).abs() };
        (s as i32, t_max, t_delta, eye.voxel[a])
    };
    let (sx, mut tx, dx, mut x) = axis(0);
    let (sy, mut ty, dy, mut y) = axis(1);
    let (sz, mut tz, dz, mut z) = axis(2);
    let height = size.height as i32;
    let ids = world.ids();
    // The linear index follows the voxel; it is only read while y is in the world.
    let (stride_x, stride_y) = ((size.height * size.depth) as isize, size.depth as isize);
    let mut index = (x as isize * size.height as isize + y as isize) * stride_y + z as isize;
    let (step_x, step_y, step_z) = (sx as isize * stride_x, sy as isize * stride_y, sz as isize);
    while tx < 1.0 || ty < 1.0 || tz < 1.0 {
        // Smallest t first; ties go to x before y before z, as in the reference.
        if tx <= ty {
            if tx <= tz {
                x += sx;
                tx += dx;
                index += step_x;
            } else {
                z += sz;
                tz += dz;
                index += step_z;
            }
        } else if ty <= tz {
            y += sy;
            ty += dy;
            index += step_y;
        } else {
            z += sz;
            tz += dz;
            index += step_z;
        }
        debug_assert!(
            x >= 0 && (x as usize) < size.width && y >= 0 && z >= 0 && (z as usize) < size.depth,
            "voxel walk left the world at ({x}, {y}, {z})"
        );
        let inside = y < height;
        if (inside && ids[index as usize] != 0) || world.is_obstacle_player(x, y, z) {
            return Err(inside.then_some(index as usize));
        }
        if inside {
            on_free(index as usize);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::CellIndex;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    struct Grid {
        size: WorldSize,
        blocks: Vec<bool>,
        ids: Vec<u8>,
        players: Vec<Cell>,
        rows: Option<ObstacleRows>,
    }

    impl SearchWorld for Grid {
        fn size(&self) -> WorldSize {
            self.size
        }
        fn ids(&self) -> &[u8] {
            &self.ids
        }
        fn is_obstacle_player(&self, x: i32, y: i32, z: i32) -> bool {
            self.players
                .iter()
                .any(|p| p.x == x && p.z == z && (p.y == y || p.y + 1 == y))
        }
        fn obstacle_rows(&self) -> Option<&ObstacleRows> {
            self.rows.as_ref()
        }
    }

    /// The search without any pruning: every click point of every face, walked.
    fn brute_force(
        world: &Grid,
        kind: Interaction,
        target: Cell,
        feet: Option<[f64; 3]>,
    ) -> Vec<Candidate> {
        let walker = Grid {
            size: world.size,
            blocks: world.blocks.clone(),
            ids: world.ids.clone(),
            players: world.players.clone(),
            rows: None,
        };
        let world = &walker;
        let clicks = click_points(world, kind, target, 0b11_1111);
        let mut out = Vec::new();
        let mut visit = |feet: [f64; 3]| {
            let eye = eye_of(feet);
            for &click in &clicks.points[..clicks.len] {
                if reachable(world, &Eye::new(eye), click) {
                    out.push(Candidate {
                        viewpoint: eye,
                        click,
                    });
                }
            }
            false
        };
        match feet {
            Some(f) => {
                visit(f);
            }
            None => {
                for_each_standing_position(world, kind, target, visit);
            }
        }
        out
    }

    #[test]
    fn pruning_never_changes_the_candidates() {
        let mut rng = StdRng::seed_from_u64(5);
        let size = WorldSize::new(9, 8, 9);
        let mut compared = 0;
        for _ in 0..300 {
            let density = rng.random_range(0.05..0.6);
            let mut grid = Grid {
                size,
                blocks: (0..size.num_cells())
                    .map(|_| rng.random_bool(density))
                    .collect(),
                ids: Vec::new(),
                players: Vec::new(),
                rows: None,
            };
            grid.ids = grid.blocks.iter().map(|&b| u8::from(b)).collect();
            for _ in 0..rng.random_range(0..3) {
                let c = Cell::new(
                    rng.random_range(0..9),
                    rng.random_range(0..7),
                    rng.random_range(0..9),
                );
                grid.players.push(c);
            }
            // Half the worlds keep obstacle rows, so that teleportation searches use
            // the ray table; the brute force walks every ray. (No player's head is
            // above the world here, so the rows can hold every obstacle.)
            if rng.random_bool(0.5) {
                let mut rows = ObstacleRows::default();
                rows.rebuild(size, |i| {
                    let c = size.cell(CellIndex(i as u32));
                    grid.blocks[i] || grid.is_obstacle_player(c.x, c.y, c.z)
                });
                grid.rows = Some(rows);
            }
            // Walking eyes, sometimes inside blocks (a player may build into itself).
            let feet = Cell::new(
                rng.random_range(0..9),
                rng.random_range(0..8),
                rng.random_range(0..9),
            );
            let feet_pos = [
                f64::from(feet.x) + 0.5,
                f64::from(feet.y),
                f64::from(feet.z) + 0.5,
            ];
            for target in size.cells() {
                let solid = grid.blocks[size.index(target).get()];
                let kind = if solid {
                    Interaction::Break
                } else {
                    Interaction::Place
                };
                let expected = brute_force(&grid, kind, target, Some(feet_pos));
                assert_eq!(candidates(&grid, kind, target, Some(feet_pos)), expected);
                assert_eq!(
                    any_candidate(&grid, kind, target, Some(feet_pos)),
                    !expected.is_empty()
                );
                assert_eq!(
                    sees_from(&grid, kind, target, feet_pos).0,
                    !expected.is_empty()
                );
                compared += 1;
            }
            // Teleporting: every standing position around a few targets.
            for _ in 0..3 {
                let target = Cell::new(
                    rng.random_range(0..9),
                    rng.random_range(0..8),
                    rng.random_range(0..9),
                );
                let solid = grid.blocks[size.index(target).get()];
                let kind = if solid {
                    Interaction::Break
                } else {
                    Interaction::Place
                };
                assert_eq!(
                    candidates(&grid, kind, target, None),
                    brute_force(&grid, kind, target, None)
                );
                compared += 1;
            }
        }
        assert!(compared > 150_000);
    }

    /// A world of random blocks and its obstacle rows.
    fn random_world(rng: &mut StdRng, size: WorldSize) -> Grid {
        let density = rng.random_range(0.02..0.5);
        let blocks: Vec<bool> = (0..size.num_cells())
            .map(|_| rng.random_bool(density))
            .collect();
        let ids = blocks.iter().map(|&b| u8::from(b)).collect();
        let mut rows = ObstacleRows::default();
        rows.rebuild(size, |i| blocks[i]);
        Grid {
            size,
            blocks,
            ids,
            players: Vec::new(),
            rows: Some(rows),
        }
    }

    #[test]
    fn the_ray_table_finds_what_walking_every_ray_finds() {
        let mut rng = StdRng::seed_from_u64(21);
        let mut searches = 0;
        let mut found = 0;
        // Small worlds (every target near a border), the paper's, and large and
        // far-out ones where rounding differs most from the table's.
        let sizes = [
            WorldSize::new(3, 4, 3),
            WorldSize::new(5, 6, 5),
            WorldSize::new(11, 10, 10),
            WorldSize::new(20, 12, 64),
            WorldSize::new(250, 9, 40),
            // Small again, after large worlds left their cells in the set's
            // neighbourhood buffer.
            WorldSize::new(4, 5, 3),
        ];
        let mut set = CandidateSet::default();
        for size in sizes {
            for _ in 0..6 {
                let world = random_world(&mut rng, size);
                for _ in 0..150 {
                    let target = Cell::new(
                        rng.random_range(0..size.width as i32),
                        rng.random_range(0..size.height as i32),
                        rng.random_range(0..size.depth as i32),
                    );
                    let kind = if world.blocks[size.index(target).get()] {
                        Interaction::Break
                    } else {
                        Interaction::Place
                    };
                    let expected = brute_force(&world, kind, target, None);
                    teleport_candidates(&world, kind, target, &mut set, ());
                    assert_eq!(set.len(), expected.len(), "{size} {target} {kind:?}");
                    assert_eq!(set.iter().collect::<Vec<_>>(), expected);
                    for (i, c) in expected.iter().enumerate() {
                        assert_eq!(set.get(i), *c);
                    }
                    assert_eq!(
                        any_candidate(&world, kind, target, None),
                        !expected.is_empty()
                    );
                    searches += 1;
                    found += expected.len();
                }
            }
        }
        assert!(searches == 5400 && found > 100_000, "{found} candidates");
    }
}
