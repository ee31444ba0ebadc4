//! Parity of the daemon's human-action detection with the recorded tutorial
//! episodes (TESTING.md 2C): every Malmo observation of each of the four episodes
//! in `../shared/data/malmo_observations/*.full.jsonl.gz` is replayed, sorted by
//! its stored receive time, through `mbag::daemon::detect::Detector`, against a
//! simulator that steps with the detected actions (one per step, as the reference's
//! human agent takes them) and is synced from Minecraft by
//! `mbag::daemon::divergence` whenever no human action is queued.
//!
//! Checked, per environment step: the detected actions equal the recorded
//! `steps_in_window[..].detected_human_actions`, in order; and over the whole
//! episode the actions the simulator executes, with whether they took effect, equal
//! the recorded `attempted`/`effective` ones.
//!
//! The single exception, explicit below: the 2023 detector that recorded these
//! episodes also compared the simulator's inventory with Minecraft's and, for every
//! block Minecraft had more of, invented a BREAK of that block's palette cell
//! (`_get_missing_blocks_break_actions`: `(BREAK_BLOCK, (W-1, 2, z), block)`, the
//! only breaks whose block id is not air). They do not come from observations,
//! the current reference no longer makes them (it overwrites the simulator's
//! inventory instead, which `divergence` does), so they are removed from the
//! recording before comparing, and their number per episode is asserted.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;

use base64::Engine;
use flate2::read::GzDecoder;
use malmo_bridge::decoded::DecodedObservation;
use mbag::daemon::detect::{Detector, DetectorConfig};
use mbag::daemon::divergence;
use mbag::sim::action::{Action, ActionType};
use mbag::sim::block::{BlockId, Blocks};
use mbag::sim::config::Config;
use mbag::sim::coords::{Cell, PlayerId, PlayerPos};
use mbag::sim::env::Env;
use mbag::sim::inventory::Inventory;
use mbag::sim::state::EnvState;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

fn shared(path: &str) -> PathBuf {
    PathBuf::from("../shared/data").join(path)
}

fn gunzip_lines(path: &PathBuf) -> Vec<String> {
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
        .read_to_string(&mut text)
        .unwrap();
    text.lines().map(str::to_owned).collect()
}

fn b64(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str().expect("base64 string"))
        .expect("valid base64")
}

#[derive(Deserialize)]
struct ObsLine<'a> {
    i: u64,
    env_t: u64,
    time: String,
    player: usize,
    #[serde(borrow)]
    obs: &'a RawValue,
}

#[derive(Deserialize)]
struct RecordedStep {
    env_t: u64,
    detected_human_actions: Vec<[i64; 6]>,
    attempted: [i64; 6],
    effective: [i64; 6],
}

/// The recorded `[type, x, y, z, block, flat]` as an action tuple.
fn recorded_action(a: [i64; 6], env: &Env) -> Action {
    let size = env.size();
    let loc = size.index(Cell::new(a[1] as i32, a[2] as i32, a[3] as i32));
    Action::from_tuple([a[0], i64::from(loc.0), a[4]], size).expect("recorded action is valid")
}

/// The 2023 inventory-sync palette break (see the module docs).
fn is_legacy_palette_break(a: [i64; 6], width: i64) -> bool {
    if a[0] != i64::from(ActionType::BreakBlock.id()) || a[4] == 0 {
        return false;
    }
    // Its cell is (W-1, 2, index of the block among the placeable ids 2..=9).
    assert_eq!(
        (a[1], a[2], a[3]),
        (width - 1, 2, a[4] - 2),
        "unexpected non-air break {a:?}"
    );
    true
}

fn strip_key(value: &mut Value, key: &str) {
    match value {
        Value::Object(map) => {
            map.remove(key);
            map.values_mut().for_each(|v| strip_key(v, key));
        }
        Value::Array(list) => list.iter_mut().for_each(|v| strip_key(v, key)),
        _ => {}
    }
}

struct Outcome {
    matched: usize,
    recorded: usize,
    legacy: usize,
}

fn replay(episode: &str) -> Outcome {
    let human = gunzip_lines(&shared(&format!("human/{episode}.jsonl.gz")));
    let header: Value = serde_json::from_str(&human[0]).unwrap();
    let mut env_config = header["env_config"].clone();
    env_config["malmo"]["use_malmo"] = false.into();
    env_config["terminate_on_goal_completion"] = false.into();
    // A 2023 key (null here) that the current config no longer has.
    strip_key(&mut env_config, "own_reward_prop_horizon");
    let config = Config::from_json(&env_config).expect("tutorial config");
    let size = config.world_size;
    let goal = Blocks::from_raw(
        size,
        b64(&header["goal"]["blocks"]),
        b64(&header["goal"]["block_states"]),
    );
    let initial = &header["initial"];
    let positions: Vec<PlayerPos> =
        serde_json::from_value(initial["env_locations"].clone()).unwrap();
    let mut inventories = Vec::new();
    for counts in initial["inventories"].as_array().unwrap() {
        let mut inventory = Inventory::default();
        for (b, n) in counts.as_array().unwrap().iter().enumerate() {
            let n = n.as_i64().unwrap() as i32;
            if n > 0 {
                assert!(inventory.try_give(BlockId(b as u8), n));
            }
        }
        inventories.push(inventory);
    }
    let state = EnvState {
        blocks: Blocks::from_raw(size, b64(&initial["blocks"]), b64(&initial["block_states"])),
        last_interacted: b64(&initial["li"]).into_iter().map(|b| b as i8).collect(),
        player_positions: positions.clone(),
        inventories,
        timestep: 0,
        timesteps_with_no_progress: 0,
        maximum_goal_percentages: vec![0.0; config.num_players],
    };
    let mut env = Env::new(config.clone());
    env.restore(goal.clone(), state);

    let observations = gunzip_lines(&shared(&format!(
        "malmo_observations/{episode}.full.jsonl.gz"
    )));
    let obs_header: Value = serde_json::from_str(&observations[0]).unwrap();
    let steps: Vec<RecordedStep> =
        serde_json::from_value(obs_header["steps_in_window"].clone()).unwrap();
    let mut lines: Vec<ObsLine> = observations[1..]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The stored receive times; ISO 8601 strings of one format sort as times.
    lines.sort_by(|a, b| (&a.time, a.i).cmp(&(&b.time, b.i)));

    let mut detector = Detector::new(
        DetectorConfig::from_config(&config),
        env.state().blocks.clone(),
        &positions,
    );
    let mut detected: BTreeMap<u64, Vec<Action>> = BTreeMap::new();
    let mut executed: Vec<(Action, bool)> = Vec::new();

    let step = |env: &mut Env, detector: &mut Detector, executed: &mut Vec<(Action, bool)>| {
        let Some(action) = detector.next_action(PlayerId(0)) else {
            return false;
        };
        let outcome = env.step(&[action]).expect("one action");
        executed.push((action, outcome.infos[0].action == action));
        true
    };
    let sync = |env: &mut Env, detector: &mut Detector| {
        let scope = divergence::SyncScope::new(detector);
        let report = divergence::compare(&config, &goal, env.state(), detector.state(), &scope);
        let mut state = env.state().clone();
        mbag::recording::apply_sync(&mut state, &report.repair.simulator).expect("valid edits");
        env.set_state(state);
        detector.sync_positions(&env.state().player_positions);
    };

    let mut next_t = 0u64;
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].env_t;
        // Queued actions take the steps before this observation's step.
        while next_t < t && detector.any_queued() {
            step(&mut env, &mut detector, &mut executed);
            next_t += 1;
        }
        // This step's own action, then its observations (the env detects after
        // stepping).
        if next_t <= t {
            step(&mut env, &mut detector, &mut executed);
            next_t = t + 1;
        }
        while i < lines.len() && lines[i].env_t == t {
            let line = &lines[i];
            let obs = DecodedObservation::decode(line.obs.get().as_bytes()).expect("decodes");
            let player = PlayerId(line.player);
            let world = mbag::daemon::detect::reads_world(player);
            let obs = mbag::daemon::seam::observation::read(&obs, config.world_size, world);
            let found = detector.observe(player, &obs).expect("detects");
            detected
                .entry(t)
                .or_default()
                .extend(found.into_iter().map(|a| a.action));
            i += 1;
        }
        // Like the daemon, sync after handling a batch of observations.
        sync(&mut env, &mut detector);
    }
    while step(&mut env, &mut detector, &mut executed) {}

    // Per step: detected actions.
    let width = size.width as i64;
    let mut legacy = 0;
    let mut recorded_total = 0;
    let mut matched = 0;
    let mut recorded: BTreeMap<u64, Vec<Action>> = BTreeMap::new();
    for s in &steps {
        for &a in &s.detected_human_actions {
            recorded_total += 1;
            if is_legacy_palette_break(a, width) {
                legacy += 1;
            } else {
                recorded
                    .entry(s.env_t)
                    .or_default()
                    .push(recorded_action(a, &env));
            }
        }
    }
    detected.retain(|_, v| !v.is_empty());
    let steps_with_actions: BTreeSet<u64> =
        recorded.keys().chain(detected.keys()).copied().collect();
    let mut mismatches = Vec::new();
    for t in steps_with_actions {
        let r = recorded.get(&t).cloned().unwrap_or_default();
        let d = detected.get(&t).cloned().unwrap_or_default();
        if r == d {
            matched += r.len();
        } else {
            mismatches.push(format!("env_t {t}: recorded {r:?}, detected {d:?}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{episode}: {} steps differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );

    // Over the episode: executed actions and whether they took effect.
    let recorded_executed: Vec<(Action, bool)> = steps
        .iter()
        .filter(|s| s.attempted[0] != 0 && !is_legacy_palette_break(s.attempted, width))
        .map(|s| {
            let a = recorded_action(s.attempted, &env);
            (a, s.effective == s.attempted)
        })
        .collect();
    // The recording stops while the last detected actions still wait in the queue:
    // we execute them, the recording never did.
    let never_executed = matched - recorded_executed.len();
    assert_eq!(
        executed.len(),
        matched,
        "{episode}: every detected action is executed"
    );
    for (k, (ours, theirs)) in executed.iter().zip(&recorded_executed).enumerate() {
        assert_eq!(
            ours, theirs,
            "{episode}: executed action {k} (action, took effect) differs"
        );
    }
    eprintln!(
        "{episode}: {} executed actions and their effect match; the last {never_executed} detected were still queued when the recording ended",
        recorded_executed.len()
    );
    Outcome {
        matched,
        recorded: recorded_total,
        legacy,
    }
}

fn check(episode: &str, expected_legacy: usize) {
    let o = replay(episode);
    eprintln!(
        "{episode}: {} of {} recorded human actions detected identically; {} legacy palette breaks excluded",
        o.matched, o.recorded, o.legacy
    );
    assert_eq!(
        o.legacy, expected_legacy,
        "{episode}: legacy palette breaks"
    );
    assert_eq!(o.matched + o.legacy, o.recorded);
}

#[test]
fn tutorial_p01_detection_matches_recording() {
    check("tutorial_p01_2023-07-18_15-41-19", 0);
}

#[test]
fn tutorial_p02_detection_matches_recording() {
    check("tutorial_p02_2023-06-08_13-02-02", 13);
}

#[test]
fn tutorial_p03_detection_matches_recording() {
    check("tutorial_p03_2023-07-18_13-54-32", 12);
}

#[test]
fn tutorial_p04_detection_matches_recording() {
    check("tutorial_p04_2023-06-08_13-29-08", 14);
}
