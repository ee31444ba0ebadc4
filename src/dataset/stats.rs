//! A dataset's statistics table in the style of BEDD's Table 1 (episodes,
//! hours, mean episode length, success rate per task), per condition or per
//! goal, with what an assistance dataset adds: a Wilson interval on the success
//! rate (conditions here hold tens of episodes, not thousands), steps, actions
//! per minute by type for each role, and chat.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::manifest::{ActionCounts, ChatCounts, EpisodeEntry};
use crate::eval::stats::RateCi;
use crate::recording::header::Role;

/// What the rows of a [`DatasetTable`] are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// One row per condition ([`EpisodeEntry::condition`]).
    Condition,
    /// One row per goal (by the goal grid's hash).
    Goal,
}

impl FromStr for GroupBy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "condition" => Ok(Self::Condition),
            "goal" => Ok(Self::Goal),
            _ => Err(format!("{s:?}: expected condition or goal")),
        }
    }
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Condition => "condition",
            Self::Goal => "goal",
        })
    }
}

/// Actions of one role per minute of wall clock, by type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerMinute {
    /// Placements.
    pub place: f64,
    /// Breaks.
    #[serde(rename = "break")]
    pub break_: f64,
    /// Moves.
    #[serde(rename = "move")]
    pub moves: f64,
    /// Gifts.
    pub give: f64,
    /// NOOPs (in the converted human data, steps where only another player
    /// acted, so they say more about the recording than the player).
    pub noop: f64,
}

impl PerMinute {
    fn of(counts: &ActionCounts, minutes: f64) -> Self {
        let per = |c: u64| c as f64 / minutes;
        Self {
            place: per(counts.place),
            break_: per(counts.break_),
            moves: per(counts.moves),
            give: per(counts.give),
            noop: per(counts.noop),
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupStats {
    /// The condition, or the goal's label.
    pub group: String,
    /// Episodes (files).
    pub episodes: u64,
    /// Distinct participants named.
    pub participants: usize,
    /// Episodes that built their goal, with the 95% Wilson interval.
    pub success: RateCi,
    /// Episodes with a wall clock (the others count in steps only).
    pub timed_episodes: u64,
    /// Mean length in seconds of the timed episodes.
    pub mean_length_s: Option<f64>,
    /// Mean steps per episode.
    pub mean_steps: Option<f64>,
    /// All steps.
    pub steps: u64,
    /// Total wall-clock hours.
    pub hours: f64,
    /// The human seats' actions per minute (over timed episodes).
    pub human_per_minute: Option<PerMinute>,
    /// The assistant seats' actions per minute (over timed episodes with an
    /// assistant).
    pub assistant_per_minute: Option<PerMinute>,
    /// Chat messages by intent flag, every player.
    pub chat: ChatCounts,
}

impl GroupStats {
    /// The row of `episodes`, named `group`.
    pub fn of(group: String, episodes: &[&EpisodeEntry]) -> Self {
        let n = episodes.len() as u64;
        let successes = episodes.iter().filter(|e| e.succeeded()).count() as u64;
        let participants: BTreeSet<&str> = episodes
            .iter()
            .filter_map(|e| e.participant.as_deref())
            .collect();
        let timed: Vec<(&EpisodeEntry, f64)> = episodes
            .iter()
            .filter_map(|e| e.duration_s.filter(|d| *d > 0.0).map(|d| (*e, d)))
            .collect();
        let seconds: f64 = timed.iter().map(|(_, d)| d).sum();
        let steps: u64 = episodes.iter().map(|e| e.steps).sum();
        let per_minute = |role: Role| {
            let mut counts = None::<ActionCounts>;
            let mut minutes = 0.0;
            for (e, d) in &timed {
                if let Some(c) = e.role_actions(role) {
                    counts.get_or_insert_with(ActionCounts::default).add(&c);
                    minutes += d / 60.0;
                }
            }
            counts.map(|c| PerMinute::of(&c, minutes))
        };
        let mut chat = ChatCounts::default();
        for e in episodes {
            chat.add(&e.chat_total());
        }
        Self {
            group,
            episodes: n,
            participants: participants.len(),
            success: RateCi::wilson(successes, n),
            timed_episodes: timed.len() as u64,
            mean_length_s: (!timed.is_empty()).then(|| seconds / timed.len() as f64),
            mean_steps: (n > 0).then(|| steps as f64 / n as f64),
            steps,
            hours: seconds / 3600.0,
            human_per_minute: per_minute(Role::Human),
            assistant_per_minute: per_minute(Role::Assistant),
            chat,
        }
    }
}

/// The statistics table: a row per group and a total.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DatasetTable {
    /// What the rows are.
    pub by: GroupBy,
    /// The rows, sorted by group.
    pub groups: Vec<GroupStats>,
    /// Every episode together.
    pub total: GroupStats,
}

/// Column titles of [`DatasetTable::rows`], after the group's.
const COLUMNS: [&str; 11] = [
    "episodes",
    "people",
    "success",
    "95% CI",
    "len s",
    "steps",
    "hours",
    "human/min p/b/m",
    "assist/min p/b/m",
    "chat",
    "a/r/i/n",
];

impl DatasetTable {
    /// The table of `entries`, grouped `by`.
    pub fn of(entries: &[EpisodeEntry], by: GroupBy) -> Self {
        // Goals are told apart by their whole hash and sorted by label.
        let mut groups: BTreeMap<(String, &str), Vec<&EpisodeEntry>> = BTreeMap::new();
        for e in entries {
            let key = match by {
                GroupBy::Condition => (e.condition.clone(), ""),
                GroupBy::Goal => (e.goal.label(), e.goal.sha256.as_str()),
            };
            groups.entry(key).or_default().push(e);
        }
        let all: Vec<&EpisodeEntry> = entries.iter().collect();
        Self {
            by,
            groups: groups
                .into_iter()
                .map(|((label, _), v)| GroupStats::of(label, &v))
                .collect(),
            total: GroupStats::of("total".into(), &all),
        }
    }

    /// The header and the rows (groups, then the total) as text cells.
    pub fn rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header = vec![self.by.to_string()];
        header.extend(COLUMNS.iter().map(|c| (*c).to_owned()));
        let rows = self
            .groups
            .iter()
            .chain(std::iter::once(&self.total))
            .map(cells)
            .collect();
        (header, rows)
    }

    /// The table as aligned plain text (the group column left-aligned).
    pub fn to_text(&self) -> String {
        let (header, rows) = self.rows();
        // Group names come from the recordings' headers: printed as escapes
        // where they hold control characters.
        let rows: Vec<Vec<String>> = rows
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|c| crate::printable::printable(&c).into_owned())
                    .collect()
            })
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| -> String {
            let parts: Vec<String> = cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, w))| {
                    if i == 0 {
                        format!("{c:<w$}")
                    } else {
                        format!("{c:>w$}")
                    }
                })
                .collect();
            parts.join("  ").trim_end().to_owned()
        };
        let mut out = line(&header);
        out.push('\n');
        for row in &rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    /// The table in Markdown.
    pub fn to_markdown(&self) -> String {
        let (header, rows) = self.rows();
        let line = |cells: &[String]| {
            let escaped: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
            format!("| {} |\n", escaped.join(" | "))
        };
        let mut out = line(&header);
        out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
        for row in &rows {
            out.push_str(&line(row));
        }
        out
    }
}

/// One row's cells, in [`COLUMNS`] order after the group.
fn cells(g: &GroupStats) -> Vec<String> {
    let opt =
        |v: Option<f64>, decimals: usize| v.map_or("-".to_owned(), |v| format!("{v:.decimals$}"));
    let apm = |p: Option<PerMinute>| {
        p.map_or("-".to_owned(), |p| {
            format!("{:.1}/{:.1}/{:.1}", p.place, p.break_, p.moves)
        })
    };
    let s = &g.success;
    let ci = if s.n == 0 {
        "-".to_owned()
    } else {
        format!("{:.0}-{:.0}%", 100.0 * s.low, 100.0 * s.high)
    };
    vec![
        g.group.clone(),
        g.episodes.to_string(),
        g.participants.to_string(),
        if s.n == 0 {
            "-".to_owned()
        } else {
            format!("{}/{} {:.0}%", s.successes, s.n, 100.0 * s.rate)
        },
        ci,
        opt(g.mean_length_s, 0),
        opt(g.mean_steps, 0),
        format!("{:.2}", g.hours),
        apm(g.human_per_minute),
        apm(g.assistant_per_minute),
        g.chat.total().to_string(),
        format!(
            "{}/{}/{}/{}",
            g.chat.accept, g.chat.reject, g.chat.inquiry, g.chat.none
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::manifest::tests::entry;
    use super::super::manifest::{ActionCounts, ChatCounts, Seat};
    use super::*;
    use crate::recording::header::Controller;

    /// Three episodes alone (two built their goal; 60 s, 120 s and one
    /// untimed) and one with an assistant agent (30 s, with chat).
    fn tiny() -> Vec<EpisodeEntry> {
        let mut a = entry("a.jsonl", "alone", "aa");
        a.duration_s = Some(60.0);
        a.steps = 100;
        a.actions = vec![ActionCounts {
            place: 30,
            break_: 6,
            moves: 60,
            give: 0,
            noop: 4,
        }];
        let mut b = entry("b.jsonl", "alone", "bb");
        b.participant = Some("2".into());
        b.duration_s = Some(120.0);
        b.steps = 200;
        b.goal_completed = Some(false);
        b.actions = vec![ActionCounts {
            place: 60,
            break_: 0,
            moves: 120,
            give: 0,
            noop: 20,
        }];
        let mut c = entry("c.jsonl", "alone", "aa");
        c.duration_s = None;
        c.steps = 30;
        c.goal_completed = None;
        let mut d = entry("d.jsonl", "with assistant", "aa");
        d.duration_s = Some(30.0);
        d.steps = 40;
        d.players.push(Seat {
            role: Role::Assistant,
            controller: Controller::Agent,
            agent: Some("oracle".into()),
        });
        d.actions = vec![
            ActionCounts {
                place: 5,
                break_: 1,
                moves: 10,
                give: 0,
                noop: 4,
            },
            ActionCounts {
                place: 10,
                break_: 0,
                moves: 5,
                give: 1,
                noop: 4,
            },
        ];
        d.chat = vec![
            ChatCounts {
                accept: 1,
                reject: 2,
                inquiry: 1,
                none: 0,
            },
            ChatCounts {
                accept: 0,
                reject: 0,
                inquiry: 0,
                none: 3,
            },
        ];
        vec![a, b, c, d]
    }

    #[test]
    fn a_tiny_dataset_by_condition() {
        let t = DatasetTable::of(&tiny(), GroupBy::Condition);
        assert_eq!(t.groups.len(), 2);
        let alone = &t.groups[0];
        assert_eq!(alone.group, "alone");
        assert_eq!((alone.episodes, alone.participants), (3, 2));
        assert_eq!(alone.success, RateCi::wilson(1, 3));
        assert_eq!(alone.timed_episodes, 2);
        assert_eq!(alone.mean_length_s, Some(90.0));
        assert_eq!(alone.mean_steps, Some(110.0));
        assert_eq!(alone.steps, 330);
        assert!((alone.hours - 180.0 / 3600.0).abs() < 1e-12);
        // 90 places, 6 breaks, 180 moves in 3 timed minutes; the untimed
        // episode's actions are left out with its time.
        let h = alone.human_per_minute.unwrap();
        assert_eq!((h.place, h.break_, h.moves, h.noop), (30.0, 2.0, 60.0, 8.0));
        assert_eq!(alone.assistant_per_minute, None);
        assert_eq!(alone.chat.total(), 0);

        let helped = &t.groups[1];
        assert_eq!(helped.group, "with assistant");
        assert_eq!(helped.success, RateCi::wilson(1, 1));
        let a = helped.assistant_per_minute.unwrap();
        assert_eq!((a.place, a.moves, a.give), (20.0, 10.0, 2.0));
        assert_eq!(helped.human_per_minute.unwrap().place, 10.0);
        assert_eq!(
            helped.chat,
            ChatCounts {
                accept: 1,
                reject: 2,
                inquiry: 1,
                none: 3
            }
        );

        assert_eq!(t.total.episodes, 4);
        assert_eq!(t.total.success, RateCi::wilson(2, 4));
        assert_eq!(t.total.mean_length_s, Some(70.0));
        // 95 human places in 3.5 minutes.
        let total = t.total.human_per_minute.unwrap();
        assert!((total.place - 95.0 / 3.5).abs() < 1e-12);

        let text = t.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("condition "), "{text}");
        assert!(lines[1].starts_with("alone "), "{text}");
        assert!(lines[1].contains("1/3 33%"), "{text}");
        assert!(lines[1].contains("30.0/2.0/60.0"), "{text}");
        assert!(lines[3].starts_with("total "), "{text}");
        assert!(lines[3].contains("2/4 50%"), "{text}");
        let md = t.to_markdown();
        assert!(md.starts_with("| condition | episodes |"), "{md}");
        assert_eq!(md.lines().count(), 5);
    }

    #[test]
    fn by_goal_groups_by_the_goal_grid() {
        let t = DatasetTable::of(&tiny(), GroupBy::Goal);
        let names: Vec<(&str, u64)> = t
            .groups
            .iter()
            .map(|g| (g.group.as_str(), g.episodes))
            .collect();
        assert_eq!(names, [("aa0000000000", 3), ("bb0000000000", 1)]);
        assert_eq!("goal".parse::<GroupBy>(), Ok(GroupBy::Goal));
        assert!("task".parse::<GroupBy>().is_err());
    }
}
