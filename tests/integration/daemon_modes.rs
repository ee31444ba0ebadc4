//! The daemon end to end in each mode, against the in-process emulator: an
//! emulated person (the BC human model, carried out as in-game edits the daemon
//! must detect) builds while agents act; afterwards the emulator's world, the
//! simulator and the recording must agree.

use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::time::Duration;

use malmo_bridge::agent::Timeouts;
use malmo_bridge::block::Block;
use malmo_bridge::mod_patch::ModFlavour;
use mbag::agents::spec::{AgentSpec, StandardAgents};
use mbag::daemon::episode::{
    EmulatedPerson, EpisodeError, EpisodeHooks, EpisodeReport, EpisodeSettings, Minecraft, Mode,
    Seat, run_episode,
};
use mbag::daemon::lockstep::LockstepSettings;
use mbag::nn::{DeviceChoice, ServiceAgents, ServiceConfig};
use mbag::recording::{EndReason, Fsync, Recording, verify};
use mbag::sim::config::Config;
use mbag::sim::goal::GoalConfig;
use serde_json::json;
use tokio::sync::watch;

const HUMAN_MODEL: &str = "../shared/models/az_test_human.json";
const ASSISTANT_MODEL: &str = "../shared/models/az_test_assistant.json";

pub(super) fn config(seats: &[(&str, bool)]) -> Config {
    let players: Vec<_> = seats
        .iter()
        .enumerate()
        .map(|(p, (name, human))| json!({"player_name": name, "is_human": human, "goal_visible": p == 0}))
        .collect();
    Config::from_json(&json!({
        "num_players": seats.len(),
        "horizon": 1_000_000_000u64,
        "world_size": [11, 10, 10],
        "random_start_locations": false,
        "randomize_first_episode_length": false,
        "rewards": {"place_wrong": -1},
        "players": players,
        "abilities": {"teleportation": false, "flying": true, "inf_blocks": true},
        "malmo": {"use_malmo": true, "restrict_players": true},
    }))
    .unwrap()
}

pub(super) fn settings(
    mode: Mode,
    config: Config,
    seats: Vec<Seat>,
    out: &Path,
    steps: u64,
) -> EpisodeSettings {
    EpisodeSettings {
        mode,
        config,
        seats,
        seed: 7,
        minecraft: Minecraft::Emulated {
            mod_flavour: ModFlavour::Stock,
            faults: Vec::new(),
        },
        recording: out.to_owned(),
        fsync: Fsync::Never,
        lockstep: LockstepSettings {
            step_period: Duration::from_millis(400),
            max_steps: Some(steps),
            ..LockstepSettings::default()
        },
        agent_address: std::net::Ipv4Addr::LOCALHOST.into(),
        timeouts: Timeouts {
            find_server: Duration::from_secs(20),
            ..Timeouts::default()
        },
        episode_id: format!("{mode:?}-test").to_lowercase(),
        start_from: None,
        origin: serde_json::Map::new(),
    }
}

pub(super) fn az() -> AgentSpec {
    format!("az:{ASSISTANT_MODEL}?sims=2").parse().unwrap()
}

pub(super) fn bc() -> AgentSpec {
    format!("bc:{HUMAN_MODEL}").parse().unwrap()
}

pub(super) fn run(settings: EpisodeSettings) -> EpisodeReport {
    run_with(settings, EpisodeHooks::default())
}

/// [`run`] with hooks (fault injection).
pub(super) fn run_with(settings: EpisodeSettings, hooks: EpisodeHooks) -> EpisodeReport {
    try_run_with(settings, hooks).unwrap()
}

/// [`run_with`], returning why the episode could not start instead of
/// panicking.
pub(super) fn try_run_with(
    settings: EpisodeSettings,
    hooks: EpisodeHooks,
) -> Result<EpisodeReport, EpisodeError> {
    let factory = Arc::new(StandardAgents::with_network(Arc::new(ServiceAgents::new(
        DeviceChoice::Cpu,
        ServiceConfig::default(),
    ))));
    let mut goals = GoalConfig::from_env("random", &json!({}))
        .unwrap()
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (_stop_tx, stop) = watch::channel(false);
    runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(240),
            run_episode(settings, Some(goals.as_mut()), factory, stop, hooks),
        )
        .await
        .expect("the episode ends within 4 minutes")
    })
}

/// The world, the simulator and the recording agree at the end.
fn check_agreement(report: &EpisodeReport, steps: u64) {
    assert!(report.end.error.is_none(), "{:?}", report.end.error);
    assert!(matches!(
        report.end.end.reason,
        EndReason::Truncated | EndReason::Done
    ));
    assert_eq!(report.steps, steps);

    let world = report
        .minecraft_blocks
        .as_ref()
        .expect("emulated world read");
    let env = &report.env;
    let mut differing = Vec::new();
    for (k, cell) in env.size().cells().enumerate() {
        let sim = env.state().blocks.get(cell);
        let mc = Block::from_observed_name(world[k]).map(Block::mbag_id);
        if mc != Some(sim.0) {
            differing.push((cell, sim, world[k]));
        }
    }
    assert!(
        differing.is_empty(),
        "Minecraft and the simulator differ: {differing:?}"
    );

    let path: &PathBuf = report.recording.as_ref().expect("a recording");
    let recording = Recording::read(path).unwrap();
    let verified = verify(&recording, &mut |_, _| {}).unwrap();
    assert!(verified.finished, "the recording has its footer");
    assert!(verified.mismatches.is_empty(), "{:?}", verified.mismatches);
    assert_eq!(verified.steps_replayed as u64, steps);
    // The replay's end is the daemon's simulator.
    let (_, replayed) = mbag::recording::verify::verify_into(&recording, &mut |_, _| {}).unwrap();
    assert_eq!(replayed.state().blocks, env.state().blocks);
    assert_eq!(
        replayed.state().player_positions,
        env.state().player_positions
    );
}

#[test]
fn play_a_person_builds_with_the_assistant() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("play.jsonl");
    let seats = vec![
        Seat::Person {
            emulated_by: Some(EmulatedPerson::Agent(bc())),
        },
        Seat::Agent(az()),
    ];
    let report = run(settings(
        Mode::Play,
        config(&[("human", true), ("assistant", false)]),
        seats,
        &out,
        30,
    ));
    check_agreement(&report, 30);
    let driver = &report.drivers[0];
    assert!(driver.acted > 0, "the emulated person acted: {driver:?}");
    assert!(
        report.stats.human_actions > 0,
        "the daemon detected the person's actions"
    );
}

#[test]
fn record_a_person_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("record.jsonl");
    let seats = vec![Seat::Person {
        emulated_by: Some(EmulatedPerson::Agent(bc())),
    }];
    let report = run(settings(
        Mode::Record,
        config(&[("human", true)]),
        seats,
        &out,
        30,
    ));
    check_agreement(&report, 30);
    let recording = Recording::read(&out).unwrap();
    // Every effective human action in the recording was detected in Minecraft.
    let moved_or_built = recording.steps.iter().filter(|s| s.e[0].0 != 0).count();
    assert!(
        moved_or_built > 0,
        "the person's actions reached the recording"
    );
}

#[test]
fn watch_agents_play_every_seat() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("watch.jsonl");
    let seats = vec![Seat::Agent(bc()), Seat::Agent(az())];
    let report = run(settings(
        Mode::Watch,
        config(&[("human", false), ("assistant", false)]),
        seats,
        &out,
        20,
    ));
    check_agreement(&report, 20);
    assert_eq!(report.stats.human_actions, 0, "nobody plays in person");
}

/// With mbag's patched mod, the daemon attributes places and breaks from the
/// mod's block-change events, and the episode agrees end to end as with the
/// stock mod.
#[test]
fn play_with_the_patched_mod_uses_its_block_changes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("patched.jsonl");
    let seats = vec![
        Seat::Person {
            emulated_by: Some(EmulatedPerson::Agent(bc())),
        },
        Seat::Agent(az()),
    ];
    let mut s = settings(
        Mode::Play,
        config(&[("human", true), ("assistant", false)]),
        seats,
        &out,
        30,
    );
    s.minecraft = Minecraft::Emulated {
        mod_flavour: ModFlavour::Patched,
        faults: Vec::new(),
    };
    let report = run(s);
    check_agreement(&report, 30);
    assert!(
        report.stats.attributed_by_mod > 0,
        "the mod's events attributed some change: {:?}",
        report.stats
    );
}

/// A recording replayed in emulated Minecraft: every player's recorded actions
/// carried out as commands; Minecraft ends with the world the recording had at
/// the same step, and the new recording agrees with both.
#[test]
fn a_recording_replays_in_minecraft() {
    let sample = Path::new("recordings/samples/simulated_lowest_block_pair_seed3.jsonl");
    let original = Recording::read(sample).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replay.jsonl");
    let base = settings(
        Mode::Watch,
        config(&[("human", true)]),
        Vec::new(),
        &out,
        20,
    );
    let replay = mbag::daemon::episode::replay_settings(&original, base).unwrap();
    let report = run(replay);
    check_agreement(&report, 20);

    let mut first = original.clone();
    first.steps.truncate(20);
    first.step_lines.truncate(20);
    first.footer = None;
    let (_, recorded) = mbag::recording::verify::verify_into(&first, &mut |_, _| {}).unwrap();
    assert_eq!(
        report.env.state().blocks,
        recorded.state().blocks,
        "Minecraft (through the daemon) ends where the recording was at step 20"
    );
}
