//! Line of sight: a ray from the player's eye along the look direction, stepped
//! cell by cell through the block world (Amanatides and Woo), as Minecraft's
//! `rayTraceBlocks` finds the first block whose full cube the ray enters.
//!
//! Every block of the emulated world is a full cube, which is true of the MBAG
//! blocks. The fork's blueprint blocks, which rays pass through, are not
//! materialised (see the module docs of [`super::world`]).

/// Minecraft's eye height above the feet, a Java float (so the eye of a player at
/// y = 2 is at 3.6200000047683716, as the real observations show).
pub const EYE_HEIGHT: f32 = 1.62;

/// How far `ObservationFromRay` looks.
pub const RAY_LENGTH: f64 = 50.0;

/// The first block a ray enters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayHit {
    /// The block cell.
    pub cell: [i32; 3],
    /// The outward normal of the face entered (zero if the ray starts inside).
    pub normal: [i32; 3],
    /// Where the ray enters the cube.
    pub point: [f64; 3],
    /// Distance from the origin to `point`.
    pub distance: f64,
}

/// The unit look vector for a yaw and pitch in degrees (Minecraft's convention:
/// yaw 0 looks south (+z), 90 west (-x), 270 east (+x); pitch 90 looks down).
/// Components within 1e-12 of zero are snapped to zero, so that an axis-aligned
/// look stays exactly on its axis, as in the real observations.
pub fn look_vector(yaw: f32, pitch: f32) -> [f64; 3] {
    let (yaw, pitch) = (f64::from(yaw).to_radians(), f64::from(pitch).to_radians());
    let snap = |v: f64| if v.abs() < 1e-12 { 0.0 } else { v };
    [
        snap(-yaw.sin() * pitch.cos()),
        snap(-pitch.sin()),
        snap(yaw.cos() * pitch.cos()),
    ]
}

/// The yaw and pitch (degrees) that look from `eye` toward `target`.
pub fn look_at(eye: [f64; 3], target: [f64; 3]) -> (f32, f32) {
    let d = [target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]];
    let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    if len == 0.0 {
        return (0.0, 0.0);
    }
    let yaw = (-d[0]).atan2(d[2]).to_degrees();
    let pitch = (-(d[1] / len)).asin().to_degrees();
    (yaw.rem_euclid(360.0) as f32, pitch as f32)
}

/// Casts a ray of length `max` from `origin` along the unit vector `dir`; `solid`
/// says which cells stop it.
pub fn cast(
    origin: [f64; 3],
    dir: [f64; 3],
    max: f64,
    solid: impl Fn([i32; 3]) -> bool,
) -> Option<RayHit> {
    let mut cell = origin.map(|c| c.floor() as i32);
    if solid(cell) {
        return Some(RayHit {
            cell,
            normal: [0; 3],
            point: origin,
            distance: 0.0,
        });
    }
    let mut step = [0i32; 3];
    let mut t_max = [f64::INFINITY; 3];
    let mut t_delta = [f64::INFINITY; 3];
    for a in 0..3 {
        if dir[a] > 0.0 {
            step[a] = 1;
            t_max[a] = (f64::from(cell[a]) + 1.0 - origin[a]) / dir[a];
            t_delta[a] = 1.0 / dir[a];
        } else if dir[a] < 0.0 {
            step[a] = -1;
            t_max[a] = (f64::from(cell[a]) - origin[a]) / dir[a];
            t_delta[a] = -1.0 / dir[a];
        }
    }
    loop {
        let axis = (0..3)
            .min_by(|&a, &b| t_max[a].total_cmp(&t_max[b]))
            .expect("three axes");
        let t = t_max[axis];
        if t > max {
            return None;
        }
        cell[axis] += step[axis];
        t_max[axis] += t_delta[axis];
        if solid(cell) {
            let mut point = [0.0; 3];
            for a in 0..3 {
                point[a] = origin[a] + dir[a] * t;
            }
            // The entered face lies exactly on a cell boundary.
            point[axis] = f64::from(if step[axis] > 0 {
                cell[axis]
            } else {
                cell[axis] + 1
            });
            let mut normal = [0; 3];
            normal[axis] = -step[axis];
            return Some(RayHit {
                cell,
                normal,
                point,
                distance: t,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looking_east_at_a_wall_hits_its_west_face() {
        let eye = [0.5, 2.0 + f64::from(EYE_HEIGHT), 0.5];
        let hit = cast(eye, look_vector(270.0, 0.0), RAY_LENGTH, |c| c[0] >= 6).unwrap();
        assert_eq!(hit.cell, [6, 3, 0]);
        assert_eq!(hit.normal, [-1, 0, 0]);
        assert_eq!(hit.point, [6.0, 3.6200000047683716, 0.5]);
        assert_eq!(hit.distance, 5.5);
    }

    #[test]
    fn looking_down_hits_the_floor_and_look_at_inverts_look_vector() {
        let eye = [0.5, 3.62, 0.5];
        let hit = cast(eye, look_vector(0.0, 90.0), RAY_LENGTH, |c| c[1] <= 1).unwrap();
        assert_eq!(hit.cell, [0, 1, 0]);
        assert_eq!(hit.normal, [0, 1, 0]);
        let (yaw, pitch) = look_at(eye, [3.5, 1.5, 4.5]);
        let d = look_vector(yaw, pitch);
        let hit = cast(eye, d, RAY_LENGTH, |c| c == [3, 1, 4]).unwrap();
        assert_eq!(hit.cell, [3, 1, 4]);
        assert!(cast(eye, look_vector(0.0, -90.0), RAY_LENGTH, |c| c[1] <= 1).is_none());
    }
}
