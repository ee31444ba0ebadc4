//! Summaries of recordings: episodes, steps, actions per type, goal %, durations.

use std::path::PathBuf;

use serde::Serialize;

use super::header::{Role, SourceKind};
use super::reader::Recording;
use crate::chat::intent::Intent;

/// Action type names, by id.
pub const ACTION_NAMES: [&str; 10] = [
    "noop", "place", "break", "move+x", "move-x", "move+y", "move-y", "move+z", "move-z", "give",
];

/// What one recording holds.
#[derive(Clone, Debug, Serialize)]
pub struct EpisodeStats {
    /// The file.
    pub path: PathBuf,
    /// Its episode id.
    pub episode_id: String,
    /// How it came about.
    pub source: SourceKind,
    /// Number of players.
    pub players: usize,
    /// Index of the first human player, whose goal % is reported.
    pub human: usize,
    /// Complete step lines.
    pub steps: usize,
    /// Per player, attempted actions per type id (0 NOOP ... 9 GIVE).
    pub actions: Vec<[u64; 10]>,
    /// The human's goal percentage (0..1) after the last step, if recorded.
    pub goal_percentage: Option<f64>,
    /// Per player, the sum of recorded rewards.
    pub total_rewards: Vec<f64>,
    /// Wall-clock seconds from the first to the last timed step.
    pub duration_s: Option<f64>,
    /// Whether the file has a footer.
    pub finished: bool,
    /// Whether the file ends in a partial line.
    pub truncated: bool,
    /// Per player, chat messages said, by intent flag (accept, reject,
    /// inquiry, none).
    pub chat: Vec<[u64; 4]>,
    /// Per player, the sum of goal-dependent rewards (the progress each made).
    pub goal_rewards: Vec<f64>,
    /// Per player, places that moved the world away from the goal (a wrong
    /// block, or a block where the goal has air).
    pub wrong_places: Vec<u64>,
    /// Per player, breaks that moved the world away from the goal (a block the
    /// goal has).
    pub correct_broken: Vec<u64>,
    /// Per player, the most steps in a row it did nothing (NOOP): a person
    /// model that stalls shows here long before its goal % does.
    pub longest_idle: Vec<u64>,
}

impl EpisodeStats {
    /// Summarises a recording.
    pub fn of(rec: &Recording) -> Self {
        let n = rec.header.players.len();
        let human = rec
            .header
            .players
            .iter()
            .position(|p| p.role == Role::Human)
            .unwrap_or(0);
        let mut actions = vec![[0u64; 10]; n];
        let mut total_rewards = vec![0.0; n];
        let mut chat = vec![[0u64; 4]; n];
        let mut goal_rewards = vec![0.0; n];
        let mut wrong_places = vec![0u64; n];
        let mut correct_broken = vec![0u64; n];
        let mut longest_idle = vec![0u64; n];
        let mut idle = vec![0u64; n];
        for m in rec.steps.iter().flat_map(|s| s.chat.iter().flatten()) {
            let flag = Intent::ALL.iter().position(|&i| i == m.intent).unwrap_or(3);
            if let Some(c) = chat.get_mut(m.speaker) {
                c[flag] += 1;
            }
        }
        for s in &rec.steps {
            for (p, a) in s.a.iter().enumerate() {
                if let (Some(run), Some(longest)) = (idle.get_mut(p), longest_idle.get_mut(p)) {
                    *run = if a.type_id() == 0 { *run + 1 } else { 0 };
                    *longest = (*longest).max(*run);
                }
                if let Some(c) = usize::try_from(a.type_id())
                    .ok()
                    .and_then(|i| actions[p].get_mut(i))
                {
                    *c += 1;
                }
                total_rewards[p] += s.r[p].0;
                if let Some(info) = s.info.as_ref().and_then(|i| i.get(p)) {
                    let gained = info.goal_dependent_reward.0;
                    goal_rewards[p] += gained;
                    if gained < 0.0 {
                        match a.type_id() {
                            1 => wrong_places[p] += 1,
                            2 => correct_broken[p] += 1,
                            _ => {}
                        }
                    }
                }
            }
        }
        let goal_percentage = rec
            .footer
            .as_ref()
            .and_then(|f| f.final_goal_percentage.get(human).map(|f| f.0))
            .or_else(|| {
                rec.steps.iter().rev().find_map(|s| {
                    s.info
                        .as_ref()
                        .and_then(|i| i.get(human))
                        .map(|i| i.goal_percentage.0)
                })
            });
        let first = rec.steps.iter().find_map(|s| s.wall);
        let last = rec.steps.iter().rev().find_map(|s| s.wall);
        Self {
            path: rec.path.clone(),
            episode_id: rec.header.episode_id.clone(),
            source: rec.header.source.kind,
            players: n,
            human,
            steps: rec.steps.len(),
            actions,
            goal_percentage,
            total_rewards,
            duration_s: first.zip(last).map(|(a, b)| b - a),
            finished: rec.footer.is_some(),
            truncated: rec.tail.is_some(),
            chat,
            goal_rewards,
            wrong_places,
            correct_broken,
            longest_idle,
        }
    }

    /// The share of the house's built percentage that player `p`'s edits
    /// made: the goal % split in proportion to each player's net progress
    /// (`None` without a goal % or any net progress).
    pub fn share_of(&self, p: usize) -> Option<f64> {
        let total: f64 = self.goal_rewards.iter().sum();
        let goal = self.goal_percentage?;
        let mine = *self.goal_rewards.get(p)?;
        (total.abs() > 1e-9).then(|| goal * mine / total)
    }

    /// The team's episode in words, for a person at the end of `play`: how much
    /// of the house stands, and for each player what it placed and broke, how
    /// much of the house it built, and its harm (wrong blocks placed, correct
    /// ones broken).
    pub fn team_summary(&self, names: &[&str]) -> String {
        let goal = self
            .goal_percentage
            .map_or("-".into(), |p| format!("{:.1}%", 100.0 * p));
        let mut lines = vec![format!("{} steps: the house is {goal} built", self.steps)];
        for p in 0..self.players {
            let name = names.get(p).copied().unwrap_or("player");
            let a = &self.actions[p];
            let share = self
                .share_of(p)
                .map_or("-".into(), |s| format!("{:.1}%", 100.0 * s));
            lines.push(format!(
                "  {name}: placed {} and broke {} blocks, built {share} of the house; \
                 {} placed wrong, {} correct blocks broken; idle {} steps at most in a row",
                a[1], a[2], self.wrong_places[p], self.correct_broken[p], self.longest_idle[p]
            ));
        }
        lines.join("\n")
    }

    /// Chat messages said by every player.
    pub fn messages(&self) -> u64 {
        self.chat.iter().flatten().sum()
    }

    /// One player's attempted actions as `place/break/move/give/noop` (the six
    /// moves summed), the order `mbag recording stats` prints.
    pub fn action_counts(&self, player: usize) -> String {
        let a = &self.actions[player];
        let moves: u64 = a[3..9].iter().sum();
        format!("{}/{}/{}/{}/{}", a[1], a[2], moves, a[9], a[0])
    }

    /// The episode in one line: steps, the human's final goal % and every
    /// player's actions, the figures `mbag recording stats` gives, for commands
    /// that end by summarising what they recorded.
    pub fn summary(&self) -> String {
        let goal = self
            .goal_percentage
            .map_or("-".into(), |p| format!("{:.1}%", 100.0 * p));
        let players: Vec<String> = (0..self.players)
            .map(|p| format!("player {p} {}", self.action_counts(p)))
            .collect();
        let mut line = format!(
            "{} steps, goal {goal} built (player {}); actions place/break/move/give/noop: {}",
            self.steps,
            self.human,
            players.join(", ")
        );
        if self.messages() > 0 {
            let said: Vec<String> = self
                .chat
                .iter()
                .enumerate()
                .map(|(p, c)| format!("player {p} {}/{}/{}/{}", c[0], c[1], c[2], c[3]))
                .collect();
            line.push_str(&format!(
                "; chat accept/reject/inquiry/none: {}",
                said.join(", ")
            ));
        }
        line
    }
}

/// Totals over many recordings.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DatasetStats {
    /// Number of recordings.
    pub episodes: usize,
    /// Steps over all of them.
    pub steps: usize,
    /// Attempted actions per type id, all players.
    pub actions: [u64; 10],
    /// Mean of the humans' final goal percentages (over episodes that have one).
    pub mean_goal_percentage: Option<f64>,
    /// Sum of wall-clock durations.
    pub duration_s: f64,
    /// Recordings without a footer.
    pub unfinished: usize,
    /// Chat messages by intent flag (accept, reject, inquiry, none), all
    /// players.
    pub chat: [u64; 4],
}

impl DatasetStats {
    /// Totals of `episodes`.
    pub fn of(episodes: &[EpisodeStats]) -> Self {
        let mut out = Self {
            episodes: episodes.len(),
            ..Self::default()
        };
        let mut pcts = Vec::new();
        for e in episodes {
            out.steps += e.steps;
            for per_player in &e.actions {
                for (o, c) in out.actions.iter_mut().zip(per_player) {
                    *o += c;
                }
            }
            pcts.extend(e.goal_percentage.filter(|p| p.is_finite()));
            out.duration_s += e.duration_s.unwrap_or(0.0);
            out.unfinished += usize::from(!e.finished);
            for per_player in &e.chat {
                for (o, c) in out.chat.iter_mut().zip(per_player) {
                    *o += c;
                }
            }
        }
        out.mean_goal_percentage =
            (!pcts.is_empty()).then(|| pcts.iter().sum::<f64>() / pcts.len() as f64);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::SnapshotMode;
    use crate::recording::simulate::record_simulated;
    use crate::sim::goal::GoalConfig;
    use crate::sim::presets::Game;

    /// A simulated episode of `human` and a `noop` assistant, summarised.
    fn stats_of(human: &str, steps: u64) -> EpisodeStats {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        let config = Game::tutorial(2).config().unwrap();
        let mut goals = GoalConfig::from_env("basic", &serde_json::json!({}))
            .unwrap()
            .build()
            .unwrap();
        let specs = [human.parse().unwrap(), "heuristic:noop".parse().unwrap()];
        record_simulated(
            &path,
            &config,
            goals.as_mut(),
            &specs,
            3,
            steps,
            SnapshotMode::None,
        )
        .unwrap();
        EpisodeStats::of(&Recording::read(&path).unwrap())
    }

    #[test]
    fn the_longest_idle_stretch_is_counted_per_player() {
        let idle = stats_of("heuristic:noop", 30);
        assert_eq!(idle.longest_idle, [30, 30]);
        let builder = stats_of("heuristic:lowest_block", 30);
        assert!(builder.longest_idle[0] < 5, "{:?}", builder.longest_idle);
        assert_eq!(builder.longest_idle[1], builder.steps as u64);
        assert!(
            builder
                .team_summary(&["the person", "the assistant"])
                .contains("idle 30 steps at most in a row"),
        );
    }
}
