//! What the viewer's page draws: a world's size, its goal, its blocks at the
//! start, and per step the cells that changed, where the players stand, what
//! was said and how much of the goal is built.
//!
//! A recording becomes a [`Scene`] by replaying it through the simulator
//! ([`crate::recording::verify`]), so converted files without state snapshots
//! draw as well as the daemon's; the page rebuilds any step by applying the
//! changes from the start (or undoing them backwards), which keeps scrubbing
//! cheap for long episodes.

use serde::Serialize;

use crate::recording::{ExplainRecord, Recording, RecordingError};
use crate::sim::env::Env;

/// One player, as the page labels it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenePlayer {
    /// `human` or `assistant`.
    pub role: String,
    /// Who controlled it: the agent spec, or `person`.
    pub controller: String,
}

/// A chat message shown beside the world.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SceneChat {
    /// Who said it (player index).
    pub speaker: usize,
    /// The words.
    pub text: String,
    /// The intent flag read from them.
    pub intent: String,
}

impl SceneChat {
    /// The messages of a step line.
    pub fn of_step(step: &crate::recording::StepRecord) -> Vec<Self> {
        step.chat
            .iter()
            .flatten()
            .map(|m| Self {
                speaker: m.speaker,
                text: m.text.clone(),
                intent: m.intent.name().into(),
            })
            .collect()
    }
}

/// The world after one step, as changes from the step before.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Frame {
    /// Cells that changed: `[x, y, z, block_before, block_after]`.
    pub changes: Vec<[i32; 5]>,
    /// Per player, the feet position.
    pub pos: Vec<[f64; 3]>,
    /// Per player, the action type taken (0 NOOP ... 9 GIVE).
    pub actions: Vec<i64>,
    /// What was said during the step.
    pub chat: Vec<SceneChat>,
    /// Player 0's goal percentage after the step.
    pub goal_percentage: f64,
    /// Per player, the agent's account of its move, where recorded (the
    /// overlays: goal belief, weighed actions, the other's predicted move).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explain: Vec<Option<ExplainRecord>>,
}

/// A whole episode for the page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scene {
    /// The episode's id.
    pub episode_id: String,
    /// `[width, height, depth]`.
    pub size: [usize; 3],
    /// Block names by id, for the legend.
    pub block_names: Vec<String>,
    /// Goal block ids, C order (x, then y, then z).
    pub goal: Vec<u8>,
    /// Block ids before the first step, C order.
    pub initial: Vec<u8>,
    /// Per player, the feet position before the first step.
    pub initial_pos: Vec<[f64; 3]>,
    /// The players.
    pub players: Vec<ScenePlayer>,
    /// One frame per step.
    pub frames: Vec<Frame>,
}

impl Scene {
    /// The scene of a recording, replayed through the simulator (a recording
    /// whose replay disagrees with it still draws: the page shows what the
    /// simulator makes of it).
    pub fn of_recording(rec: &Recording) -> Result<Self, RecordingError> {
        let env = crate::recording::verify::env_for(rec)?;
        let mut scene = Self::start(&env, rec.header.episode_id.clone());
        scene.players = rec
            .header
            .players
            .iter()
            .map(|p| ScenePlayer {
                role: format!("{:?}", p.role).to_lowercase(),
                controller: p.agent.clone().unwrap_or_else(|| "person".into()),
            })
            .collect();
        let mut previous = scene.initial.clone();
        crate::recording::verify::verify(rec, &mut |env, step| {
            let mut frame = Self::frame_from(env, &mut previous);
            frame.actions = step.e.iter().map(|a| a.type_id()).collect();
            frame.explain = step.explain.clone().unwrap_or_default();
            frame.chat = SceneChat::of_step(step);
            scene.frames.push(frame);
        })?;
        Ok(scene)
    }

    /// A scene with no frames yet, from an env at its start (live viewing
    /// adds frames as the daemon steps).
    pub fn start(env: &Env, episode_id: String) -> Self {
        let size = env.size();
        let state = env.state();
        Self {
            episode_id,
            size: size.axes(),
            block_names: (0..crate::sim::block::NUM_BLOCKS)
                .map(|b| {
                    crate::sim::block::BlockId(b as u8)
                        .name()
                        .unwrap_or("?")
                        .to_owned()
                })
                .collect(),
            goal: env.goal().ids().to_vec(),
            initial: state.blocks.ids().to_vec(),
            initial_pos: state
                .player_positions
                .iter()
                .map(|p| [p.x, p.y, p.z])
                .collect(),
            players: (0..env.num_players())
                .map(|p| ScenePlayer {
                    role: if p == 0 { "human" } else { "assistant" }.into(),
                    controller: String::new(),
                })
                .collect(),
            frames: Vec::new(),
        }
    }

    /// The frame of `env` after a step, given the blocks before it (which
    /// become the blocks after it).
    pub fn frame_from(env: &Env, previous: &mut [u8]) -> Frame {
        let size = env.size();
        let now = env.state().blocks.ids();
        let mut changes = Vec::new();
        for (i, (&was, &is)) in previous.iter().zip(now).enumerate() {
            if was != is {
                let c = size.cell(crate::sim::coords::CellIndex(i as u32));
                changes.push([c.x, c.y, c.z, i32::from(was), i32::from(is)]);
            }
        }
        previous.copy_from_slice(now);
        Frame {
            changes,
            pos: env
                .state()
                .player_positions
                .iter()
                .map(|p| [p.x, p.y, p.z])
                .collect(),
            actions: Vec::new(),
            chat: Vec::new(),
            goal_percentage: env.goal_percentage(0),
            explain: Vec::new(),
        }
    }

    /// Block ids after `steps` steps (0: the start), C order.
    pub fn blocks_at(&self, steps: usize) -> Vec<u8> {
        let mut blocks = self.initial.clone();
        let [_, h, d] = self.size;
        for frame in self.frames.iter().take(steps) {
            for &[x, y, z, _, after] in &frame.changes {
                let i = (x as usize * h + y as usize) * d + z as usize;
                blocks[i] = after as u8;
            }
        }
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_sample_replays_into_frames_that_rebuild_its_end() {
        let path = Path::new("recordings/samples/simulated_lowest_block_pair_seed3.jsonl");
        let rec = Recording::read(path).unwrap();
        let scene = Scene::of_recording(&rec).unwrap();
        assert_eq!(scene.frames.len(), rec.steps.len());
        assert!(scene.frames.iter().any(|f| !f.changes.is_empty()));
        // The last frame's blocks are the replayed end state.
        let (_, env) = crate::recording::verify::verify_into(&rec, &mut |_, _| {}).unwrap();
        assert_eq!(
            scene.blocks_at(scene.frames.len()),
            env.state().blocks.ids().to_vec()
        );
        assert_eq!(scene.blocks_at(0), scene.initial);
        assert_eq!(scene.players.len(), rec.header.players.len());
    }
}
