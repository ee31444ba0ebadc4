//! The spectator camera (MBAG_INTEGRATION.md §5.4): a Minecraft agent in
//! spectator mode flying around the build and the goal, looking at the centre,
//! for people watching (and the spectator's video).
//!
//! [`pose`] is pure: where the camera is `t` seconds in. [`spawn`] runs it on the
//! spectator's own connection, every 30 ms as the reference does; nothing else
//! sends through that connection, so it needs no queue.

use std::time::Duration;

use malmo_bridge::command::{Command, Number};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::roles::RoleSender;

/// How often the camera moves.
pub const PERIOD: Duration = Duration::from_millis(30);

/// The camera's angular speed around the centre, radians per second.
pub const RAD_PER_SECOND: f64 = 0.1;

/// The world's width, height and depth in blocks (Minecraft's x, y, z), which
/// is all the camera needs to know of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extent(pub [f64; 3]);

/// One camera position: feet position and look angles (degrees).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// Feet position.
    pub pos: [f64; 3],
    /// Pitch, degrees (positive looks down).
    pub pitch: f64,
    /// Yaw, degrees.
    pub yaw: f64,
}

/// Where the camera is `t` seconds into the episode (`rotate` false: it stays at
/// the start). The path is an ellipse around the world's centre, two blocks
/// above it, rising by half the height as it passes over the wall between the
/// build area and the goal copy (on the +x side).
pub fn pose(size: Extent, t: f64, rotate: bool) -> Pose {
    let [w, h, d] = size.0;
    let centre = [w / 2.0, h / 2.0, d / 2.0];
    let x_axis = w / 2.0 + d / 3.0;
    let z_axis = d / 2.0 + w / 3.0;
    let (min_x, max_x) = (centre[0] - x_axis, centre[0] + x_axis);
    let angle = if rotate { RAD_PER_SECOND * t } else { 0.0 };
    let mut x = centre[0] + x_axis * angle.sin();
    let mut y = centre[1] + 2.0;
    let z = centre[2] + z_axis * -angle.cos();
    let u = (x - min_x) / (max_x - min_x);
    x -= u * (x_axis - w / 2.0);
    y += u * (h / 2.0);
    let horizontal = ((x - centre[0]).powi(2) + (z - centre[2]).powi(2)).sqrt();
    Pose {
        pos: [x, y, z],
        pitch: ((y - centre[1]) / horizontal).atan().to_degrees(),
        yaw: (x - centre[0]).atan2(centre[2] - z).to_degrees(),
    }
}

/// The commands that put the camera at `pose`.
pub fn pose_commands(pose: Pose) -> [Command; 3] {
    [
        Command::Teleport {
            x: Number::Float(pose.pos[0]),
            y: Number::Float(pose.pos[1]),
            z: Number::Float(pose.pos[2]),
        },
        Command::SetPitch(Number::Float(pose.pitch)),
        Command::SetYaw(Number::Float(pose.yaw)),
    ]
}

/// Runs the camera on the spectator's connection until `stop` turns true or the
/// connection closes: command feedback off, spectator mode, a double jump to
/// fly, then the path of [`pose`].
pub fn spawn(
    spectator: RoleSender,
    size: Extent,
    rotate: bool,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let start = [
            Command::Chat("/gamerule sendCommandFeedback false".into()),
            Command::Chat("/gamemode spectator".into()),
        ];
        for command in start {
            if spectator.send(command).await.is_err() {
                return;
            }
        }
        for on in [true, false, true, false] {
            if spectator.send(Command::Jump(on)).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let began = tokio::time::Instant::now();
        let mut tick = tokio::time::interval(PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.changed() => return,
            }
            if *stop.borrow() {
                return;
            }
            let p = pose(size, began.elapsed().as_secs_f64(), rotate);
            for command in pose_commands(p) {
                if spectator.send(command).await.is_err() {
                    return;
                }
            }
            if !rotate {
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_camera_starts_behind_the_build_looking_at_its_centre() {
        let size = Extent([11.0, 10.0, 10.0]);
        let p = pose(size, 0.0, true);
        // x_axis = 5.5 + 10/3; at angle 0, x = 5.5, u = 0.5.
        let x_axis = 5.5 + 10.0 / 3.0;
        assert!((p.pos[0] - (5.5 - 0.5 * (x_axis - 5.5))).abs() < 1e-12);
        assert!((p.pos[1] - (5.0 + 2.0 + 2.5)).abs() < 1e-12);
        assert!((p.pos[2] - (5.0 - (5.0 + 11.0 / 3.0))).abs() < 1e-12);
        // Looking towards +z (yaw near 0 or slightly off) and down.
        assert!(p.pitch > 0.0);
        assert!(p.yaw.abs() < 90.0);
    }

    #[test]
    fn it_rises_over_the_goal_side_and_does_not_move_without_rotation() {
        let size = Extent([11.0, 10.0, 10.0]);
        let quarter = std::f64::consts::FRAC_PI_2 / RAD_PER_SECOND;
        let goal_side = pose(size, quarter, true);
        let build_side = pose(size, 3.0 * quarter, true);
        assert!(goal_side.pos[1] > build_side.pos[1]);
        assert_eq!(pose(size, 1000.0, false), pose(size, 0.0, true));
    }
}
