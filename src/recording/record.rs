//! Building records from a running simulator: what a live writer (the daemon, the
//! simulate command) appends after each `Env::step`.

use super::codec::{ActionRecord, Float};
use super::footer::{EndRecord, Footer};
use super::header::{Header, PlayerEntry, Source};
use super::state::{StateView, grid_record, initial_record, state_hash};
use super::step::{PlayerInfo, StepRecord};
use crate::eval::metrics;
use crate::sim::action::ActionTuple;
use crate::sim::env::{Env, StepInfo, StepOutcome};

/// How much of the state each step line carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SnapshotMode {
    /// Nothing: verification checks actions and rewards only.
    None,
    /// Changed cells, positions, inventories and timestep (the default).
    #[default]
    Changes,
    /// Changes plus a SHA-256 of the whole state.
    ChangesAndHash,
}

/// Turns an episode in a simulator into records, step by step: it keeps the
/// previous recorded state (for cell changes) and the infos and rewards so far
/// (for the footer's metrics).
#[derive(Debug)]
pub struct EpisodeRecorder {
    mode: SnapshotMode,
    previous: StateView,
    infos: Vec<Vec<StepInfo>>,
    rewards: Vec<Vec<f64>>,
}

impl EpisodeRecorder {
    /// Starts at the env's current state (after `reset` or `restore`); returns the
    /// recorder and the header for it.
    pub fn start(
        env: &Env,
        episode_id: String,
        source: Source,
        players: Vec<PlayerEntry>,
        mode: SnapshotMode,
    ) -> (Self, Header) {
        let header = Header::new(
            episode_id,
            source,
            env.config().to_json(),
            env.global_timestep(),
            env.layout().len(),
            grid_record(env.goal()),
            initial_record(env.state()),
            players,
        );
        let recorder = Self {
            mode,
            previous: StateView::of(env.state()),
            infos: Vec::new(),
            rewards: Vec::new(),
        };
        (recorder, header)
    }

    /// The record of the step just taken with `actions` (typed actions or tuples),
    /// with wall-clock time now.
    pub fn step<A: Copy + Into<ActionTuple>>(
        &mut self,
        env: &Env,
        actions: &[A],
        outcome: &StepOutcome,
    ) -> StepRecord {
        let size = env.size();
        let layout = env.layout();
        self.infos.push(outcome.infos.clone());
        self.rewards.push(outcome.rewards.clone());
        let state = match self.mode {
            SnapshotMode::None => None,
            SnapshotMode::Changes | SnapshotMode::ChangesAndHash => {
                let mut snap = self.previous.advance_to(StateView::of(env.state()));
                if self.mode == SnapshotMode::ChangesAndHash {
                    snap.sha256 = Some(state_hash(env.state()));
                }
                Some(snap)
            }
        };
        StepRecord {
            t: self.infos.len() as u64 - 1,
            a: actions
                .iter()
                .map(|&a| ActionRecord::new(a, size, layout))
                .collect(),
            e: outcome
                .infos
                .iter()
                .map(|i| ActionRecord::new(i.action_tuple(), size, layout))
                .collect(),
            r: outcome.rewards.iter().map(|&r| Float(r)).collect(),
            done: outcome.done,
            info: Some(outcome.infos.iter().map(PlayerInfo::from).collect()),
            wall: Some(super::codec::now_unix_s()),
            sync: None,
            state,
            obs: None,
            src: None,
            chat: None,
            explain: None,
        }
    }

    /// The footer of the episode so far.
    pub fn footer(&self, env: &Env, end: EndRecord) -> Footer {
        let n = env.num_players();
        footer_from(env, &self.infos, &self.rewards, n, end)
    }
}

/// Longest horizon whose metrics the footer holds: the reference's metrics pad
/// every episode to its horizon minute by minute, which for the human data's
/// horizon of 10^9 steps would take minutes and megabytes per file.
pub const MAX_METRICS_HORIZON: u64 = 1_000_000;

/// A footer from the whole episode's infos and rewards and the env at its end.
/// `metrics` is left out when the horizon exceeds [`MAX_METRICS_HORIZON`].
pub fn footer_from(
    env: &Env,
    infos: &[Vec<StepInfo>],
    rewards: &[Vec<f64>],
    n: usize,
    end: EndRecord,
) -> Footer {
    let final_pct = infos.last().map_or_else(
        || (0..n).map(|p| env.goal_percentage(p)).collect::<Vec<_>>(),
        |i| i.iter().map(|x| x.goal_percentage).collect(),
    );
    Footer {
        steps: infos.len() as u64,
        end,
        total_rewards: (0..n)
            .map(|p| Float(rewards.iter().map(|r| r[p]).sum()))
            .collect(),
        final_goal_percentage: final_pct.into_iter().map(Float).collect(),
        goal_completed: env.goal_completed(),
        metrics: (!infos.is_empty() && env.config().horizon <= MAX_METRICS_HORIZON).then(|| {
            metrics::calculate(env.config(), infos, rewards).to_reference_json(env.config())
        }),
    }
}
