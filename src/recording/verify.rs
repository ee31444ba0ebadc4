//! Replaying a recording through the simulator and checking everything it
//! recorded: effective actions, rewards, infos, states, the footer.

use std::path::{Path, PathBuf};

use super::codec::{ActionRecord, Float};
use super::error::RecordingError;
use super::header::{Header, SourceKind};
use super::reader::{Recording, TruncatedTail};
use super::state::{StateView, apply_sync, grid_from_record, state_from_initial, state_hash};
use super::step::{PlayerInfo, StepRecord, SyncEdits};
use crate::eval::metrics;
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::coords::Cell;
use crate::sim::env::{Env, StepInfo};
use crate::sim::state::EnvState;

/// Most mismatches kept per file; the first ones say what went wrong.
const MAX_MISMATCHES: usize = 50;

/// One place where the simulator disagrees with the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// 1-based line of the file.
    pub line: usize,
    /// The step (`None` for the header or footer).
    pub t: Option<u64>,
    /// What differs.
    pub field: String,
    /// What the recording says.
    pub recorded: String,
    /// What the simulator did.
    pub replayed: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(t) = self.t {
            write!(f, " (t = {t})")?;
        }
        write!(
            f,
            ": {}: recorded {}, replayed {}",
            self.field, self.recorded, self.replayed
        )
    }
}

/// The result of verifying one recording.
#[derive(Clone, Debug)]
pub struct VerifyReport {
    /// The file.
    pub path: PathBuf,
    /// Its episode id.
    pub episode_id: String,
    /// Steps replayed.
    pub steps_replayed: usize,
    /// Steps whose recorded state was compared.
    pub states_checked: usize,
    /// Steps with external sync edits.
    pub sync_steps: usize,
    /// Chat messages recorded (they do not take part in the replay; the reader
    /// has checked their speakers).
    pub chat_messages: usize,
    /// Sync edits applied, and of those, how many changed the replayed state.
    /// In a recording of mbag's daemon every edit repairs a difference the
    /// live simulator had, so an edit that changes nothing in the replay means
    /// the two disagreed before the repair and is a mismatch.
    pub repairs: RepairCount,
    /// Disagreements (at most 50 kept); replay stops after the first state
    /// mismatch, since everything after it would differ too.
    pub mismatches: Vec<Mismatch>,
    /// The partial last line of a cut file.
    pub tail: Option<TruncatedTail>,
    /// Whether the file has a footer.
    pub finished: bool,
}

/// What the sync edits of a recording did in its replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepairCount {
    /// Edits applied (a block's id and state count as one edit).
    pub edits: usize,
    /// Edits that changed the replayed state.
    pub changed: usize,
}

/// The edits of `sync` that would leave `state` as it is, each named as the
/// recording names it (`sync.blocks[3]`) with what the state already holds.
/// A block edit counts as one with its state; inventory counts and slots are
/// compared as applied.
fn unchanged_edits(state: &EnvState, sync: &SyncEdits) -> (usize, Vec<(String, String)>) {
    let mut edits = 0;
    let mut same = Vec::new();
    let size = state.blocks.size();
    let cell = |x: i32, y: i32, z: i32| {
        let c = Cell::new(x, y, z);
        size.contains(c).then_some(c)
    };
    for (k, &[x, y, z, id]) in sync.blocks.iter().enumerate() {
        edits += 1;
        if let Some(c) = cell(x, y, z) {
            let state_edit = sync
                .block_states
                .iter()
                .find(|e| e[..3] == [x, y, z])
                .map_or(i32::from(state.blocks.state(c)), |e| e[3]);
            let now = (
                i32::from(state.blocks.get(c).0),
                i32::from(state.blocks.state(c)),
            );
            if now == (id, state_edit) {
                same.push((
                    format!("sync.blocks[{k}]"),
                    format!("block {id} at [{x}, {y}, {z}]"),
                ));
            }
        }
    }
    for (k, &[p, x, y, z]) in sync.pos.iter().enumerate() {
        edits += 1;
        let here = state.player_positions.get(p as usize);
        if here.is_some_and(|h| (h.x, h.y, h.z) == (x, y, z)) {
            same.push((
                format!("sync.pos[{k}]"),
                format!("player {p} at [{x}, {y}, {z}]"),
            ));
        }
    }
    for (k, &[p, block, count]) in sync.inv.iter().enumerate() {
        edits += 1;
        let inv = state.inventories.get(p as usize);
        if inv.is_some_and(|i| i.count(BlockId(block as u8)) == count) {
            same.push((
                format!("sync.inv[{k}]"),
                format!("player {p} has {count} of block {block}"),
            ));
        }
    }
    for (k, &[p, slot, block, count]) in sync.slots.iter().enumerate() {
        edits += 1;
        let now = state
            .inventories
            .get(p as usize)
            .and_then(|i| i.slots().get(slot as usize));
        if now.is_some_and(|s| (i32::from(s.block.0), s.count) == (block, count)) {
            same.push((
                format!("sync.slots[{k}]"),
                format!("player {p}'s slot {slot} holds {count} of block {block}"),
            ));
        }
    }
    (edits, same)
}

impl VerifyReport {
    /// Whether the simulator reproduced everything recorded.
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty()
    }
}

#[derive(Default)]
struct Mismatches(Vec<Mismatch>);

impl Mismatches {
    fn push(
        &mut self,
        line: usize,
        t: Option<u64>,
        field: String,
        recorded: String,
        replayed: String,
    ) {
        if self.0.len() < MAX_MISMATCHES {
            self.0.push(Mismatch {
                line,
                t,
                field,
                recorded,
                replayed,
            });
        }
    }
}

/// Builds the env of a recording and restores its goal and initial state.
pub fn env_for(rec: &Recording) -> Result<Env, RecordingError> {
    env_for_header(&rec.header, &rec.path)
}

/// Builds the env of a header (read from `path`, for errors) and restores its goal
/// and initial state.
pub fn env_for_header(h: &Header, path: &Path) -> Result<Env, RecordingError> {
    let bad = |field: &str, m: String| RecordingError::field(path, 1, field, m);
    let config = Config::from_json(&h.config).map_err(|e| bad("config", e.to_string()))?;
    if h.players.len() != config.num_players {
        return Err(bad(
            "players",
            format!(
                "{} entries for {} players",
                h.players.len(),
                config.num_players
            ),
        ));
    }
    let size = config.world_size;
    let num_players = config.num_players;
    let mut env = Env::new(config);
    env.set_global_timestep(h.global_timestep);
    if h.num_flat_actions != env.layout().len() {
        return Err(bad(
            "num_flat_actions",
            format!(
                "{} but the config's layout has {}",
                h.num_flat_actions,
                env.layout().len()
            ),
        ));
    }
    let goal = grid_from_record(&h.goal, size).map_err(|m| bad("goal", m))?;
    let initial =
        state_from_initial(&h.initial, size, num_players).map_err(|m| bad("initial", m))?;
    env.restore(goal, initial);
    Ok(env)
}

/// Replays `rec` through the simulator, comparing what it recorded. `on_step` sees
/// the env after each step (and its sync edits) with the step's record.
///
/// Errors are for recordings that cannot be replayed at all (a bad config, an
/// impossible action, sync edits outside the world); disagreements are mismatches
/// in the report.
pub fn verify(
    rec: &Recording,
    on_step: &mut dyn FnMut(&Env, &StepRecord),
) -> Result<VerifyReport, RecordingError> {
    verify_into(rec, on_step).map(|(report, _)| report)
}

/// [`verify`], also returning the env as the replay left it.
pub fn verify_into(
    rec: &Recording,
    on_step: &mut dyn FnMut(&Env, &StepRecord),
) -> Result<(VerifyReport, Env), RecordingError> {
    let mut env = env_for(rec)?;
    let size = env.size();
    let n = env.num_players();
    let mut expected = StateView::of(env.state());
    let mut out = Mismatches::default();
    let mut infos_all: Vec<Vec<StepInfo>> = Vec::with_capacity(rec.steps.len());
    let mut rewards_all: Vec<Vec<f64>> = Vec::with_capacity(rec.steps.len());
    let mut every_step_has_info = true;
    let mut states_checked = 0;
    let mut sync_steps = 0;
    let mut repairs = RepairCount::default();
    // mbag's daemon records only edits that repair a difference; converted
    // data keeps whatever its source wrote.
    let repairs_must_change = matches!(
        rec.header.source.kind,
        SourceKind::Play | SourceKind::Record | SourceKind::Watch
    );
    let mut state_failed = false;
    for (step, &line) in rec.steps.iter().zip(&rec.step_lines) {
        let t = Some(step.t);
        let err = |field: String, m: String| RecordingError::field(&rec.path, line, field, m);
        let actions = step
            .a
            .iter()
            .enumerate()
            .map(|(p, a)| a.to_tuple(size).map_err(|m| err(format!("a[{p}]"), m)))
            .collect::<Result<Vec<_>, _>>()?;
        for (p, (a, rec_a)) in actions.iter().zip(&step.a).enumerate() {
            let flat = env.layout().flat_tuple(*a).ok().map(|f| f as u32);
            if flat != rec_a.5 {
                out.push(
                    line,
                    t,
                    format!("a[{p}] flat index"),
                    format!("{:?}", rec_a.5),
                    format!("{flat:?}"),
                );
            }
        }
        let outcome = env
            .step_tuples(&actions)
            .map_err(|e| {
                let field = e.player().map_or("a".into(), |p| format!("a[{}]", p.0));
                err(field, e.to_string())
            })?
            .clone();
        for p in 0..n {
            if step.r[p] != Float(outcome.rewards[p]) {
                out.push(
                    line,
                    t,
                    format!("r[{p}]"),
                    step.r[p].to_string(),
                    Float(outcome.rewards[p]).to_string(),
                );
            }
            let e = ActionRecord::new(outcome.infos[p].action_tuple(), size, env.layout());
            if step.e[p] != e {
                out.push(
                    line,
                    t,
                    format!("e[{p}]"),
                    format!("{:?}", step.e[p]),
                    format!("{e:?}"),
                );
            }
        }
        if step.done != outcome.done {
            out.push(
                line,
                t,
                "done".into(),
                step.done.to_string(),
                outcome.done.to_string(),
            );
        }
        match &step.info {
            Some(infos) if infos.len() == n => {
                for (p, recorded) in infos.iter().enumerate() {
                    let replayed = PlayerInfo::from(&outcome.infos[p]);
                    if *recorded != replayed {
                        out.push(
                            line,
                            t,
                            format!("info[{p}]"),
                            format!("{recorded:?}"),
                            format!("{replayed:?}"),
                        );
                    }
                }
            }
            Some(infos) => {
                return Err(err(
                    "info".into(),
                    format!("{} entries, expected one per player ({n})", infos.len()),
                ));
            }
            None => every_step_has_info = false,
        }
        infos_all.push(outcome.infos.clone());
        rewards_all.push(outcome.rewards.clone());
        if let Some(sync) = &step.sync
            && !sync.is_empty()
        {
            sync_steps += 1;
            let (edits, same) = unchanged_edits(env.state(), sync);
            repairs.edits += edits;
            repairs.changed += edits - same.len();
            if repairs_must_change {
                for (field, already) in same {
                    out.push(
                        line,
                        t,
                        field,
                        "a change".into(),
                        format!("already {already}"),
                    );
                }
            }
            let mut state = env.state().clone();
            apply_sync(&mut state, sync).map_err(|m| err("sync".into(), m))?;
            env.set_state(state);
        }
        if let Some(snap) = &step.state {
            states_checked += 1;
            expected.apply(snap).map_err(|m| err("state".into(), m))?;
            if let Some((field, e, g)) = expected.first_difference(&StateView::of(env.state())) {
                out.push(line, t, field, e, g);
                state_failed = true;
            }
            if let Some(hash) = &snap.sha256 {
                let got = state_hash(env.state());
                if *hash != got {
                    out.push(line, t, "state.sha256".into(), hash.clone(), got);
                    state_failed = true;
                }
            }
        }
        on_step(&env, step);
        if state_failed {
            break;
        }
    }
    let steps_replayed = infos_all.len();
    if let Some(f) = &rec.footer
        && !state_failed
    {
        let line = rec.step_lines.last().map_or(2, |l| l + 1);
        for p in 0..n {
            let total: f64 = rewards_all.iter().map(|r| r[p]).sum();
            if f.total_rewards.get(p) != Some(&Float(total)) {
                out.push(
                    line,
                    None,
                    format!("footer.total_rewards[{p}]"),
                    format!("{:?}", f.total_rewards.get(p)),
                    total.to_string(),
                );
            }
            let pct = infos_all
                .last()
                .map_or_else(|| env.goal_percentage(p), |i| i[p].goal_percentage);
            if f.final_goal_percentage.get(p) != Some(&Float(pct)) {
                out.push(
                    line,
                    None,
                    format!("footer.final_goal_percentage[{p}]"),
                    format!("{:?}", f.final_goal_percentage.get(p)),
                    pct.to_string(),
                );
            }
        }
        if f.goal_completed != env.goal_completed() {
            out.push(
                line,
                None,
                "footer.goal_completed".into(),
                f.goal_completed.to_string(),
                env.goal_completed().to_string(),
            );
        }
        if let Some(recorded) = &f.metrics
            && every_step_has_info
            && !infos_all.is_empty()
            && env.config().horizon <= super::record::MAX_METRICS_HORIZON
        {
            let m = metrics::calculate(env.config(), &infos_all, &rewards_all)
                .to_reference_json(env.config());
            if *recorded != m {
                out.push(
                    line,
                    None,
                    "footer.metrics".into(),
                    "(recorded dict)".into(),
                    "a different dict".into(),
                );
            }
        }
    }
    let report = VerifyReport {
        path: rec.path.clone(),
        episode_id: rec.header.episode_id.clone(),
        steps_replayed,
        states_checked,
        sync_steps,
        chat_messages: rec
            .steps
            .iter()
            .map(|s| s.chat.as_ref().map_or(0, Vec::len))
            .sum(),
        repairs,
        mismatches: out.0,
        tail: rec.tail.clone(),
        finished: rec.footer.is_some(),
    };
    Ok((report, env))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::coords::{PlayerPos, WorldSize};
    use crate::sim::inventory::Inventory;

    fn state() -> EnvState {
        let size = WorldSize::new(3, 3, 3);
        EnvState {
            blocks: crate::sim::block::Blocks::initial_world(size),
            last_interacted: vec![-1; size.num_cells()],
            player_positions: vec![PlayerPos::new(0.5, 2.0, 0.5)],
            inventories: vec![Inventory::default()],
            timestep: 0,
            timesteps_with_no_progress: 0,
            maximum_goal_percentages: vec![0.0],
        }
    }

    #[test]
    fn edits_that_change_nothing_are_named() {
        let state = state();
        let sync = SyncEdits {
            // Dirt is already at y = 1; planks at y = 2 is a change.
            blocks: vec![[1, 1, 1, 2], [1, 2, 1, 6]],
            block_states: vec![[1, 1, 1, 0], [1, 2, 1, 0]],
            pos: vec![[0.0, 0.5, 2.0, 0.5], [0.0, 1.5, 2.0, 0.5]],
            slots: vec![[0, 3, 0, 0], [0, 3, 6, 2]],
            ..SyncEdits::default()
        };
        let (edits, same) = unchanged_edits(&state, &sync);
        assert_eq!(edits, 6);
        let fields: Vec<&str> = same.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["sync.blocks[0]", "sync.pos[0]", "sync.slots[0]"]);
    }
}
