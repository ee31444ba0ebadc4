//! Replaying a golden episode through the simulator and comparing everything the
//! reference recorded (the procedure of the golden README).

use std::path::PathBuf;

use super::agents::{AgentCheckStats, AgentReplay};
use super::compare::{Checker, FloatCounts, Mismatch};
use super::format::{GoldenEpisode, GoldenError, GoldenInfo, GoldenMasks, GoldenObs, GoldenState};
use crate::eval::metrics;
use crate::sim::action::ActionTuple;
use crate::sim::block::{BlockId, Blocks};
use crate::sim::config::Config;
use crate::sim::coords::PlayerPos;
use crate::sim::env::{Env, StepInfo};
use crate::sim::inventory::{Inventory, NUM_SLOTS, Slot};
use crate::sim::mask;
use crate::sim::state::EnvState;
use crate::sim::viewpoint::Interaction;

/// The result of replaying one episode.
#[derive(Clone, Debug)]
pub struct EpisodeReport {
    /// The file.
    pub path: PathBuf,
    /// The episode id.
    pub episode_id: String,
    /// Number of steps replayed.
    pub steps: usize,
    /// What the reference-agent checks covered.
    pub agent_checks: AgentCheckStats,
    /// The environment's floats compared (rewards, infos, similarities,
    /// percentages, metrics) and how many were bit-identical.
    pub floats: FloatCounts,
    /// The first difference from the reference, if any.
    pub mismatch: Option<Mismatch>,
}

impl EpisodeReport {
    /// Whether the replay matched the reference everywhere.
    pub fn passed(&self) -> bool {
        self.mismatch.is_none()
    }
}

fn field_error(
    ep: &GoldenEpisode,
    line: usize,
    field: &str,
    message: impl ToString,
) -> GoldenError {
    GoldenError::Field {
        path: ep.path.clone(),
        line,
        field: field.to_owned(),
        message: message.to_string(),
    }
}

fn expect_per_player(
    ep: &GoldenEpisode,
    line: usize,
    field: &str,
    len: usize,
    num_players: usize,
) -> Result<(), GoldenError> {
    if len == num_players {
        Ok(())
    } else {
        Err(field_error(
            ep,
            line,
            field,
            format!("expected {num_players} entries (one per player), got {len}"),
        ))
    }
}

/// Converts a recorded state, checking array sizes.
fn state_from_golden(
    ep: &GoldenEpisode,
    line: usize,
    field: &str,
    s: &GoldenState,
    config: &Config,
) -> Result<EnvState, GoldenError> {
    let size = config.world_size;
    let n = size.num_cells();
    for (name, len) in [
        ("blocks", s.blocks.0.len()),
        ("block_states", s.block_states.0.len()),
        ("last_interacted", s.last_interacted.0.len()),
    ] {
        if len != n {
            return Err(field_error(
                ep,
                line,
                &format!("{field}.{name}"),
                format!("{len} bytes, expected {n} for a {size} world"),
            ));
        }
    }
    let p = config.num_players;
    if s.player_locations.len() != p
        || s.inventories.len() != p
        || s.maximum_goal_percentages.len() != p
    {
        return Err(field_error(
            ep,
            line,
            field,
            format!("expected per-player lists of {p} entries"),
        ));
    }
    let inventories = s
        .inventories
        .iter()
        .enumerate()
        .map(|(i, slots)| {
            if slots.len() != NUM_SLOTS {
                return Err(field_error(
                    ep,
                    line,
                    &format!("{field}.inventories[{i}]"),
                    format!("{} slots, expected {NUM_SLOTS}", slots.len()),
                ));
            }
            let mut out = [Slot::default(); NUM_SLOTS];
            for (slot, &[id, count]) in out.iter_mut().zip(slots) {
                *slot = Slot {
                    block: BlockId(u8::try_from(id).map_err(|_| {
                        field_error(
                            ep,
                            line,
                            &format!("{field}.inventories[{i}]"),
                            format!("block id {id}"),
                        )
                    })?),
                    count: count as i32,
                };
            }
            Ok(Inventory::from_slots(out))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EnvState {
        blocks: Blocks::from_raw(size, s.blocks.0.clone(), s.block_states.0.clone()),
        last_interacted: s.last_interacted.0.iter().map(|&b| b as i8).collect(),
        player_positions: s
            .player_locations
            .iter()
            .map(|&p| PlayerPos::from(p))
            .collect(),
        inventories,
        timestep: s.timestep,
        timesteps_with_no_progress: s.timesteps_with_no_progress,
        maximum_goal_percentages: s.maximum_goal_percentages.iter().map(|f| f.0).collect(),
    })
}

fn check_state(c: &mut Checker, expected: &EnvState, env: &Env) {
    let got = env.state();
    c.bytes("state.blocks", expected.blocks.ids(), got.blocks.ids());
    c.bytes(
        "state.block_states",
        expected.blocks.states(),
        got.blocks.states(),
    );
    let li = |v: &[i8]| v.iter().map(|&b| b as u8).collect::<Vec<u8>>();
    c.bytes(
        "state.last_interacted",
        &li(&expected.last_interacted),
        &li(&got.last_interacted),
    );
    for (p, (e, g)) in expected
        .player_positions
        .iter()
        .zip(&got.player_positions)
        .enumerate()
    {
        c.eq(format!("state.player_locations[{p}]"), e, g);
    }
    for (p, (e, g)) in expected
        .inventories
        .iter()
        .zip(&got.inventories)
        .enumerate()
    {
        if let Some(slot) = (0..NUM_SLOTS).find(|&s| e.slots()[s] != g.slots()[s]) {
            c.eq(
                format!("state.inventories[{p}][{slot}]"),
                e.slots()[slot],
                g.slots()[slot],
            );
        }
    }
    c.eq("state.timestep", expected.timestep, got.timestep);
    c.eq(
        "state.timesteps_with_no_progress",
        expected.timesteps_with_no_progress,
        got.timesteps_with_no_progress,
    );
    for (p, (&e, &g)) in expected
        .maximum_goal_percentages
        .iter()
        .zip(&got.maximum_goal_percentages)
        .enumerate()
    {
        c.float(format!("state.maximum_goal_percentages[{p}]"), e, g);
    }
}

fn check_info(c: &mut Checker, p: usize, expected: &GoldenInfo, got: &StepInfo) {
    let f = |name: &str| format!("infos[{p}].{name}");
    c.float(
        f("goal_similarity"),
        expected.goal_similarity.0,
        got.goal_similarity,
    );
    c.float(
        f("goal_percentage"),
        expected.goal_percentage.0,
        got.goal_percentage,
    );
    c.float(
        f("goal_dependent_reward"),
        expected.goal_dependent_reward.0,
        got.goal_dependent_reward,
    );
    c.float(
        f("goal_independent_reward"),
        expected.goal_independent_reward.0,
        got.goal_independent_reward,
    );
    c.float(f("own_reward"), expected.own_reward.0, got.own_reward);
    c.float(
        f("own_reward_prop"),
        expected.own_reward_prop.0,
        got.own_reward_prop,
    );
    c.eq(
        f("attempted_action"),
        expected.attempted_action,
        got.attempted_action.to_array(),
    );
    c.eq(f("action"), expected.action, got.action_tuple().to_array());
    c.eq(
        f("action_correct"),
        expected.action_correct,
        got.action_correct,
    );
}

fn check_obs_and_masks(
    c: &mut Checker,
    env: &Env,
    expected_obs: &[GoldenObs],
    expected_masks: &[GoldenMasks],
) {
    let layout = env.layout();
    let abilities = env.config().abilities;
    let mut obs = env.new_observation();
    let mut buf = vec![false; layout.len()];
    let valid = |buf: &[bool]| -> Vec<usize> { (0..buf.len()).filter(|&i| buf[i]).collect() };
    for (p, expected) in expected_obs.iter().enumerate() {
        if let Err(e) = env.observe(p, &mut obs) {
            c.fail(format!("obs[{p}]"), "an observation", e);
            return;
        }
        c.bytes(
            &format!("obs[{p}].world_obs"),
            &expected.world_obs.0,
            &obs.world,
        );
        let inv: Vec<i64> = expected.inventory_obs.iter().flatten().copied().collect();
        let got_inv: Vec<i64> = obs.inventory.iter().map(|&v| i64::from(v)).collect();
        c.eq(format!("obs[{p}].inventory_obs"), inv, got_inv);
        c.eq(
            format!("obs[{p}].timestep"),
            expected.timestep,
            i64::from(obs.timestep),
        );
        if let Some(masks) = expected_masks.get(p) {
            mask::compute(&obs, abilities, layout, false, &mut buf);
            c.index_set(&format!("masks[{p}].no_los"), &masks.no_los, &valid(&buf));
            mask::compute(&obs, abilities, layout, true, &mut buf);
            c.index_set(&format!("masks[{p}].los"), &masks.los, &valid(&buf));
        }
    }
}

/// Replays one golden episode and reports the first mismatch.
///
/// Errors are for files that cannot be replayed at all (bad config, malformed
/// arrays, impossible action tuples); a simulator that disagrees with the reference
/// gives a report with a mismatch instead.
pub fn replay(ep: &GoldenEpisode) -> Result<EpisodeReport, GoldenError> {
    let h = &ep.header;
    let config =
        Config::from_json(&h.env_config).map_err(|e| field_error(ep, 1, "env_config", e))?;
    let size = config.world_size;
    let num_players = config.num_players;
    let mut env = Env::new(config.clone());
    env.set_global_timestep(h.global_timestep);
    env.set_tracing(true);
    let n = size.num_cells();
    if h.goal.blocks.0.len() != n || h.goal.block_states.0.len() != n {
        return Err(field_error(
            ep,
            1,
            "goal",
            format!("expected {n} cells for a {size} world"),
        ));
    }
    let goal = Blocks::from_raw(size, h.goal.blocks.0.clone(), h.goal.block_states.0.clone());
    let initial = state_from_golden(ep, 1, "initial_state", &h.initial_state, &config)?;
    env.restore(goal, initial.clone());

    for (name, len) in [
        (
            "initial_goal_similarities",
            h.initial_goal_similarities.len(),
        ),
        ("initial_obs", h.initial_obs.len()),
        ("initial_masks", h.initial_masks.len()),
        ("initial_infos", h.initial_infos.len()),
    ] {
        expect_per_player(ep, 1, name, len, num_players)?;
    }
    let mut c = Checker::default();
    c.eq("num_flat_actions", h.num_flat_actions, env.layout().len());
    c.eq("palette_x", h.palette_x, env.palette_x());
    for (p, e) in h.initial_goal_similarities.iter().enumerate() {
        c.float(
            format!("initial_goal_similarities[{p}]"),
            e.0,
            env.initial_goal_similarities()[p],
        );
    }
    check_state(&mut c, &initial, &env);
    let infos = env.reset_infos();
    for (p, e) in h.initial_infos.iter().enumerate() {
        check_info(&mut c, p, e, &infos[p]);
    }
    check_obs_and_masks(&mut c, &env, &h.initial_obs, &h.initial_masks);
    let mut agents = AgentReplay::new(ep, &config, &env)?;

    let mut totals = vec![0.0; num_players];
    let mut last_done = false;
    let mut info_history: Vec<Vec<StepInfo>> = Vec::with_capacity(ep.steps.len());
    let mut reward_history: Vec<Vec<f64>> = Vec::with_capacity(ep.steps.len());
    for (k, step) in ep.steps.iter().enumerate() {
        if c.failed() {
            break;
        }
        let line = k + 2;
        c.at_step(Some(step.t));
        c.eq("t", k, step.t);
        c.eq(
            "timestep_before",
            step.timestep_before,
            env.state().timestep,
        );
        if step.actions.len() != num_players {
            return Err(field_error(
                ep,
                line,
                "actions",
                format!("expected {num_players} actions"),
            ));
        }
        let actions: Vec<ActionTuple> = step.actions.iter().map(|a| a.tuple.into()).collect();
        for (p, (a, g)) in actions.iter().zip(&step.actions).enumerate() {
            c.eq(
                format!("actions[{p}].flat"),
                g.flat,
                env.layout().flat_tuple(*a).ok(),
            );
        }
        agents.check_step(&mut c, &env, step);
        let outcome = match env.step_tuples(&actions) {
            Ok(o) => o.clone(),
            Err(e) => {
                let field = e
                    .player()
                    .map_or("actions".into(), |p| format!("actions[{}].tuple", p.0));
                return Err(field_error(ep, line, &field, e));
            }
        };
        for (name, len) in [
            ("rewards", step.rewards.len()),
            ("dones", step.dones.len()),
            ("infos", step.infos.len()),
            ("obs", step.obs.as_ref().map_or(num_players, Vec::len)),
            ("masks", step.masks.as_ref().map_or(num_players, Vec::len)),
        ] {
            expect_per_player(ep, line, name, len, num_players)?;
        }
        for (p, total) in totals.iter_mut().enumerate() {
            c.float(
                format!("rewards[{p}]"),
                step.rewards[p].0,
                outcome.rewards[p],
            );
            c.eq(format!("dones[{p}]"), step.dones[p], outcome.done);
            check_info(&mut c, p, &step.infos[p], &outcome.infos[p]);
            *total += outcome.rewards[p];
        }
        last_done = outcome.done;
        info_history.push(outcome.infos.clone());
        reward_history.push(outcome.rewards.clone());
        let attempts = env.place_break_attempts();
        c.eq(
            "place_break_attempts (count)",
            step.place_break_attempts.len(),
            attempts.len(),
        );
        for (i, (e, g)) in step.place_break_attempts.iter().zip(attempts).enumerate() {
            let f = |name: &str| format!("place_break_attempts[{i}].{name}");
            c.eq(f("player"), e.player, g.player.0);
            let kind = match g.kind {
                Interaction::Place => 1,
                Interaction::Break => 2,
            };
            c.eq(f("action_type"), e.action_type, kind);
            c.eq(f("location"), e.location, g.location.to_array());
            c.eq(f("num_candidates"), e.num_candidates, g.num_candidates);
            let got_chosen = g.chosen.as_ref();
            c.eq(f("chosen"), e.chosen, got_chosen.map(|x| x.0));
            c.eq(f("seed"), e.seed, got_chosen.map(|x| x.1));
            c.eq(
                f("viewpoint"),
                e.viewpoint,
                got_chosen.map(|x| x.2.viewpoint),
            );
            c.eq(f("click"), e.click, got_chosen.map(|x| x.2.click));
        }
        let expected_state = state_from_golden(ep, line, "state", &step.state, &config)?;
        check_state(&mut c, &expected_state, &env);
        if let Some(obs) = &step.obs {
            check_obs_and_masks(&mut c, &env, obs, step.masks.as_deref().unwrap_or(&[]));
        }
    }
    if !c.failed() {
        let f = &ep.footer;
        c.at_step(None);
        c.eq("footer.length", f.length, ep.steps.len());
        c.eq("footer.done", f.done, last_done);
        for (p, e) in f.total_rewards.iter().enumerate() {
            c.float(format!("footer.total_rewards[{p}]"), e.0, totals[p]);
        }
        // The reference reports the last infos, computed before the palette repair.
        let last_infos = info_history
            .last()
            .cloned()
            .unwrap_or_else(|| env.reset_infos());
        c.float(
            "footer.final_goal_similarity",
            f.final_goal_similarity.0,
            last_infos[0].goal_similarity,
        );
        for (p, e) in f.final_goal_percentage.iter().enumerate() {
            c.float(
                format!("footer.final_goal_percentage[{p}]"),
                e.0,
                last_infos[p].goal_percentage,
            );
        }
        c.eq(
            "footer.goal_completed",
            f.goal_completed,
            env.goal_completed(),
        );
        if !info_history.is_empty() {
            let metrics = metrics::calculate(&config, &info_history, &reward_history);
            c.json(
                "footer.metrics",
                &f.metrics,
                &metrics.to_reference_json(&config),
            );
        }
    }
    Ok(EpisodeReport {
        path: ep.path.clone(),
        episode_id: h.episode_id.clone(),
        steps: ep.steps.len(),
        agent_checks: agents.stats(),
        floats: c.float_counts(),
        mismatch: c.into_mismatch(),
    })
}
