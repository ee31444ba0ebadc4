//! Which training rows a player's recorded lines become.
//!
//! A recording has one line per env step, but a person does not decide once per
//! env step: in a two-player study the env steps whenever either player acts, so
//! half of a participant's lines are the partner's moves. The reference's human
//! models are trained on the participant's own stream instead
//! (`convert_human_data_to_rllib.py` with `include_noops=True`,
//! `include_noops_for_other_player_actions=False`, `action_delay=0.8`): one row
//! per line where the player acted, preceded by one NOOP row per `action_delay`
//! seconds the player stood idle. That is also how the model is used: in a
//! simulated episode it is asked once per env step, each step standing for one
//! `action_delay` of a person's time.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::recording::step::StepRecord;

/// The reference's Malmo `action_delay`: seconds of a person's time per env step.
pub const DEFAULT_ACTION_DELAY_S: f64 = 0.8;

/// How a player's rows are drawn from a recording's lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoopRows {
    /// The reference's `with_own_noops` stream: a row for each line where the
    /// player acted, preceded by its idle NOOP rows. The idle count is the
    /// source's (`src.idle`, kept by `recording convert`) where it has one, else
    /// one row per whole `action_delay` of wall-clock time since the player's
    /// previous action, else none.
    #[default]
    Own,
    /// A row for every line, the player's NOOP lines included: for recordings
    /// made in the simulator, where every env step was a decision.
    EveryStep,
    /// Only the lines where the player acted (the reference's `no_noops`).
    ActionsOnly,
}

/// How each player's lines become training rows .
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamSpec {
    /// Which lines give rows, and whether idle NOOP rows are added.
    pub noop_rows: NoopRows,
    /// Seconds of a person's time per env step, for idle rows derived from
    /// wall-clock gaps.
    pub action_delay_s: f64,
}

impl Default for StreamSpec {
    fn default() -> Self {
        Self {
            noop_rows: NoopRows::Own,
            action_delay_s: DEFAULT_ACTION_DELAY_S,
        }
    }
}

/// One training row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The line whose pre-step observation the row sees.
    pub line: usize,
    /// Whether the row's target is the line's action; `false` for an idle NOOP
    /// row (target NOOP).
    pub action: bool,
    /// The timestep the row observes: the row counter at the start of its group
    /// of idle rows and action, as the reference's converter stamps them.
    pub timestep: usize,
}

/// Whether `player` acted in a line: the source's RLlib row index where the
/// converter kept one (the authoritative record of the study's streams), else
/// an effective action other than NOOP.
fn acted(step: &StepRecord, player: usize) -> bool {
    if let Some(rows) = step
        .src
        .as_ref()
        .and_then(|s| s.get("row"))
        .and_then(Value::as_array)
    {
        return rows.get(player).is_some_and(|v| !v.is_null());
    }
    let effective = step.e.get(player).or_else(|| step.a.get(player));
    effective.is_some_and(|a| a.type_id() != 0)
}

/// The source's idle count before the player's action in a line, if it has one.
fn source_idle(step: &StepRecord, player: usize) -> Option<usize> {
    step.src
        .as_ref()?
        .get("idle")?
        .as_array()?
        .get(player)
        .and_then(Value::as_u64)
        .map(|n| n as usize)
}

/// The rows of `player` in the first `lines` lines of `steps`, as `spec` says.
pub fn rows(steps: &[StepRecord], lines: usize, player: usize, spec: StreamSpec) -> Vec<Row> {
    let StreamSpec {
        noop_rows: mode,
        action_delay_s,
    } = spec;
    let mut out = Vec::with_capacity(lines);
    // The reference starts the idle clock at the episode's first observation; a
    // recording's times start at its first line, so without the source's count
    // the first action gets no idle rows.
    let mut last_action_time = steps.first().and_then(|s| s.wall);
    for (line, step) in steps.iter().take(lines).enumerate() {
        let timestep = out.len();
        match mode {
            NoopRows::EveryStep => out.push(Row {
                line,
                action: true,
                timestep,
            }),
            NoopRows::ActionsOnly => {
                if acted(step, player) {
                    out.push(Row {
                        line,
                        action: true,
                        timestep,
                    });
                }
            }
            NoopRows::Own => {
                if !acted(step, player) {
                    continue;
                }
                let idle = source_idle(step, player).unwrap_or_else(|| {
                    match (last_action_time, step.wall) {
                        (Some(prev), Some(now)) => idle_rows(now - prev, action_delay_s),
                        _ => 0,
                    }
                });
                if let Some(now) = step.wall {
                    last_action_time = Some(now);
                }
                for _ in 0..idle {
                    out.push(Row {
                        line,
                        action: false,
                        timestep,
                    });
                }
                out.push(Row {
                    line,
                    action: true,
                    timestep,
                });
            }
        }
    }
    out
}

/// How many idle rows a gap of `gap_s` seconds holds: the reference adds one per
/// `action_delay` for as long as the previous action time plus the delay is
/// still before the current one, i.e. the whole delays strictly inside the gap.
fn idle_rows(gap_s: f64, action_delay_s: f64) -> usize {
    if gap_s.is_nan() || gap_s <= 0.0 || action_delay_s.is_nan() || action_delay_s <= 0.0 {
        return 0;
    }
    let whole = (gap_s / action_delay_s).ceil() - 1.0;
    // A gap of days would still fit; the cap only keeps a corrupt time from
    // asking for an absurd allocation.
    whole.clamp(0.0, 1e6) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_rows_count_whole_delays_strictly_inside_the_gap() {
        assert_eq!(idle_rows(0.5, 0.8), 0);
        assert_eq!(idle_rows(0.8, 0.8), 0);
        assert_eq!(idle_rows(0.81, 0.8), 1);
        assert_eq!(idle_rows(2.5, 0.8), 3);
        assert_eq!(idle_rows(-3.0, 0.8), 0);
        assert_eq!(idle_rows(f64::NAN, 0.8), 0);
        assert_eq!(idle_rows(5.0, 0.0), 0);
    }
}
