//! Aiming an AI player's place or break so that Minecraft clicks the block the
//! simulator chose.
//!
//! The simulator picks a viewpoint and a clicked point with its own eye 1.6 above
//! the feet (the reference's line-of-sight rules). Minecraft casts the click from
//! 1.62, along a yaw and pitch it holds as floats. Aimed at the same point from
//! the higher eye, the ray can graze a neighbouring block first: in emulated play
//! about one AI place or break in ten landed on the wrong cell, and every such
//! miss left the simulator and Minecraft disagreeing. So the aim is checked by
//! casting Minecraft's ray through the world the simulator predicts; when the
//! chosen point fails, other points on the faces that would give the same
//! result are tried.

use malmo_bridge::emulator::ray::{self, EYE_HEIGHT as MINECRAFT_EYE};

use crate::sim::block::{BlockId, Blocks};
use crate::sim::coords::Cell;
use crate::sim::viewpoint::{EYE_HEIGHT as SIM_EYE, Interaction};

/// How far a player in creative mode reaches, as Minecraft (and the emulator)
/// has it; MBAG starts every player in creative mode.
pub const CREATIVE_REACH: f64 = 5.0;

/// Where on a face the fallback points sit, as fractions of its sides: the
/// centre first, then further out, never on an edge (a ray through an edge is
/// at the mercy of rounding).
const FACE_OFFSETS: [f64; 5] = [0.5, 0.3, 0.7, 0.12, 0.88];

/// A checked aim.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aim {
    /// Yaw in degrees (Minecraft's convention).
    pub yaw: f64,
    /// Pitch in degrees (positive looks down).
    pub pitch: f64,
    /// Whether Minecraft's ray, cast through the predicted world, does what the
    /// simulator decided (false: no point on the target's faces does, and the
    /// angles are the simulator's point seen from Minecraft's eye).
    pub checked: bool,
}

/// Whether Minecraft's ray stops at `c` in `world` (the blocks as they will be
/// when the click happens): a block inside the grid, the floor and walls below
/// and beside it, air above it.
fn stops(world: &Blocks, c: [i32; 3]) -> bool {
    let cell = Cell {
        x: c[0],
        y: c[1],
        z: c[2],
    };
    match world.checked_get(cell) {
        Some(block) => block != BlockId::AIR,
        None => cell.y < world.size().height as i32,
    }
}

/// The yaw and pitch for the simulator's `(sim_eye, click)` on `target`, checked
/// against `world` with Minecraft's `reach`.
pub fn aim(
    world: &Blocks,
    sim_eye: [f64; 3],
    click: [f64; 3],
    kind: Interaction,
    target: Cell,
    reach: f64,
) -> Aim {
    let eye = [
        sim_eye[0],
        sim_eye[1] + f64::from(MINECRAFT_EYE) - SIM_EYE,
        sim_eye[2],
    ];
    let t = [target.x, target.y, target.z];
    let lands = |point: [f64; 3]| -> Option<(f64, f64)> {
        let (yaw, pitch) = look_angles(eye, point);
        // Minecraft keeps the angles as floats: cast what it will cast.
        let dir = ray::look_vector(yaw as f32, pitch as f32);
        let hit = ray::cast(eye, dir, reach, |c| stops(world, c))?;
        let ok = match kind {
            Interaction::Break => hit.cell == t,
            Interaction::Place => {
                hit.normal != [0; 3] && (0..3).all(|a| hit.cell[a] + hit.normal[a] == t[a])
            }
        };
        ok.then_some((yaw, pitch))
    };
    let checked = |(yaw, pitch)| Aim {
        yaw,
        pitch,
        checked: true,
    };
    if let Some(angles) = lands(click) {
        return checked(angles);
    }
    if let Some(angles) = faces(world, kind, t).into_iter().find_map(lands) {
        return checked(angles);
    }
    let (yaw, pitch) = look_angles(eye, click);
    Aim {
        yaw,
        pitch,
        checked: false,
    }
}

/// Points to try, nearest faces' centres first: for a break every face of the
/// target; for a place the faces of its solid neighbours that touch it.
fn faces(world: &Blocks, kind: Interaction, t: [i32; 3]) -> Vec<[f64; 3]> {
    let mut points = Vec::new();
    for axis in 0..3 {
        for side in [-1, 1] {
            let mut n = t;
            n[axis] += side;
            if kind == Interaction::Place && !stops(world, n) {
                continue;
            }
            // The plane between the target and its neighbour on this side.
            let plane = f64::from(t[axis]) + if side > 0 { 1.0 } else { 0.0 };
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            for &a in &FACE_OFFSETS {
                for &b in &FACE_OFFSETS {
                    let mut p = [0.0; 3];
                    p[axis] = plane;
                    p[u] = f64::from(t[u]) + a;
                    p[v] = f64::from(t[v]) + b;
                    points.push(p);
                }
            }
        }
    }
    points
}

/// The yaw and pitch (degrees) that look from an eye at `eye` to `click`, as the
/// reference computes them: `atan2(-dx, dz)` and `-asin(dy)` on the unit vector.
pub fn look_angles(eye: [f64; 3], click: [f64; 3]) -> (f64, f64) {
    let mut delta = [click[0] - eye[0], click[1] - eye[1], click[2] - eye[2]];
    let norm = (delta[0] * delta[0] + delta[1] * delta[1] + delta[2] * delta[2]).sqrt();
    for v in &mut delta {
        *v /= norm;
    }
    (
        (-delta[0]).atan2(delta[2]).to_degrees(),
        (-delta[1].asin()).to_degrees(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::coords::{CellIndex, WorldSize};

    fn cell(x: i32, y: i32, z: i32) -> Cell {
        Cell { x, y, z }
    }

    fn size() -> WorldSize {
        WorldSize::new(8, 6, 8)
    }

    /// A world of `size` with a block (dirt) wherever `solid` says.
    fn blocks_where(size: WorldSize, solid: impl Fn(Cell) -> bool) -> Blocks {
        let mut world = Blocks::air(size);
        for index in 0..size.num_cells() {
            let c = size.cell(CellIndex(index as u32));
            if solid(c) {
                world.set(c, BlockId(2));
            }
        }
        world
    }

    /// The cell Minecraft's ray enters first for an aim.
    fn clicked(world: &Blocks, sim_eye: [f64; 3], aim: Aim) -> Option<[i32; 3]> {
        let eye = [sim_eye[0], sim_eye[1] + 0.02, sim_eye[2]];
        let dir = ray::look_vector(aim.yaw as f32, aim.pitch as f32);
        ray::cast(eye, dir, 5.0, |c| stops(world, c)).map(|h| h.cell)
    }

    /// In random cluttered worlds, every click the simulator's eye sees on its
    /// target: whenever the aim says checked, Minecraft's ray (cast here on its
    /// own, from 1.62 and the float angles) enters the target; and some clicks
    /// that Minecraft's eye would send into another block are re-aimed.
    #[test]
    fn checked_aims_land_on_the_target_and_grazing_clicks_are_re_aimed() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (mut grazing, mut fixed, mut checked_total) = (0, 0, 0);
        for _ in 0..300 {
            let blocks: Vec<Cell> = (0..40)
                .map(|_| {
                    cell(
                        rng.random_range(0..8),
                        rng.random_range(1..6),
                        rng.random_range(0..8),
                    )
                })
                .collect();
            let target = blocks[0];
            let solid = |c: Cell| c.y == 0 || blocks.contains(&c);
            let world = blocks_where(size(), solid);
            let eye = [
                rng.random_range(0.3..7.7),
                rng.random_range(1.0..4.0_f64).floor() + SIM_EYE,
                rng.random_range(0.3..7.7),
            ];
            let feet = [
                eye[0].floor() as i32,
                (eye[1] - SIM_EYE) as i32,
                eye[2].floor() as i32,
            ];
            if solid(cell(feet[0], feet[1], feet[2])) || solid(cell(feet[0], feet[1] + 1, feet[2]))
            {
                continue;
            }
            for click in faces(&world, Interaction::Break, [target.x, target.y, target.z]) {
                let sees = |from: [f64; 3]| {
                    let (yaw, pitch) = look_angles(from, click);
                    let dir = ray::look_vector(yaw as f32, pitch as f32);
                    ray::cast(from, dir, 5.0, |c| stops(&world, c)).map(|h| h.cell)
                };
                let t = Some([target.x, target.y, target.z]);
                if sees(eye) != t {
                    continue;
                }
                let a = aim(&world, eye, click, Interaction::Break, target, 5.0);
                if a.checked {
                    checked_total += 1;
                    assert_eq!(clicked(&world, eye, a), t, "eye {eye:?} click {click:?}");
                }
                if sees([eye[0], eye[1] + 0.02, eye[2]]) != t {
                    grazing += 1;
                    if a.checked {
                        fixed += 1;
                    }
                }
            }
        }
        assert!(checked_total > 1000, "{checked_total} checked aims");
        assert!(
            grazing > 0,
            "no grazing click found: the test shows nothing"
        );
        assert!(fixed > 0, "{grazing} grazing clicks, none re-aimed");
    }

    #[test]
    fn a_place_hits_a_face_that_touches_the_target() {
        // Place into (4, 1, 4) against the floor below it.
        let solid = |c: Cell| c.y == 0;
        let world = blocks_where(size(), solid);
        let sim_eye = [4.5, 2.6, 1.5];
        let click = [4.5, 1.0, 4.5];
        let aim = aim(
            &world,
            sim_eye,
            click,
            Interaction::Place,
            cell(4, 1, 4),
            5.0,
        );
        assert!(aim.checked);
        let hit = {
            let eye = [4.5, 2.62, 1.5];
            let dir = ray::look_vector(aim.yaw as f32, aim.pitch as f32);
            ray::cast(eye, dir, 5.0, |c| stops(&world, c)).unwrap()
        };
        assert_eq!(hit.cell, [4, 0, 4]);
        assert_eq!(hit.normal, [0, 1, 0]);
    }

    #[test]
    fn an_unreachable_target_keeps_the_simulators_point_unchecked() {
        // The target is walled in on every side.
        let target = cell(4, 2, 4);
        let solid = |c: Cell| {
            c.y == 0
                || (c != target
                    && (c.x - 4).abs() <= 1
                    && (c.y - 2).abs() <= 1
                    && (c.z - 4).abs() <= 1)
        };
        let world = blocks_where(size(), solid);
        let aim = aim(
            &world,
            [4.5, 2.6, 0.5],
            [4.5, 2.5, 4.0],
            Interaction::Break,
            target,
            5.0,
        );
        assert!(!aim.checked);
    }

    /// A click near the top edge of a block's face at a shallow pitch: aimed
    /// from the simulator's eye, Minecraft's ray (cast from 1.62) passes over
    /// the block into the one behind; aimed from Minecraft's eye it hits it.
    #[test]
    fn a_shallow_click_is_aimed_from_minecrafts_eye() {
        let target = cell(4, 3, 0);
        let behind = cell(6, 4, 0);
        let solid = |c: Cell| c == target || c == behind;
        let world = blocks_where(WorldSize::new(8, 8, 8), solid);
        let sim_eye = [0.5, 3.6, 0.5];
        // On the target's west face, just below its top edge.
        let click = [4.0, 3.995, 0.5];
        let from_sim_eye = {
            let (yaw, pitch) = look_angles(sim_eye, click);
            let dir = ray::look_vector(yaw as f32, pitch as f32);
            ray::cast([0.5, 3.62, 0.5], dir, 10.0, |c| stops(&world, c)).map(|h| h.cell)
        };
        assert_eq!(from_sim_eye, Some([6, 4, 0]));
        let a = aim(&world, sim_eye, click, Interaction::Break, target, 10.0);
        assert!(a.checked);
        let dir = ray::look_vector(a.yaw as f32, a.pitch as f32);
        let hit = ray::cast([0.5, 3.62, 0.5], dir, 10.0, |c| stops(&world, c)).map(|h| h.cell);
        assert_eq!(hit, Some([4, 3, 0]));
    }

    #[test]
    fn look_angles_follow_minecrafts_convention() {
        let (yaw, pitch) = look_angles([0.5, 3.6, 0.5], [1.5, 3.6, 1.5]);
        assert!((yaw + 45.0).abs() < 1e-12, "{yaw}");
        assert_eq!(pitch, 0.0);
        let (yaw, pitch) = look_angles([0.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
        assert!(yaw.abs() < 1e-12 && pitch.abs() < 1e-12);
        let (yaw, _) = look_angles([0.0, 0.0, 0.0], [1.0, 0.0, 0.0]);
        assert!((yaw + 90.0).abs() < 1e-9);
        let (_, pitch) = look_angles([0.0, 1.0, 0.0], [0.0, 0.0, 0.0]);
        assert!((pitch - 90.0).abs() < 1e-9);
    }
}
