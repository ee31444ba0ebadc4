//! The emulator playing either mod: the stock MBAG fork reports no block changes
//! and does not know `MALMO_MBAG_VERSION`; the fork with `mod-patch/` answers it
//! and reports exactly the players' places and breaks, naming the player, to
//! every observer once.

mod emulator_util;

use std::time::Duration;

use emulator_util::*;
use malmo_bridge::agent::{AgentMission, query_mod_version};
use malmo_bridge::command::{Command, Number};
use malmo_bridge::decoded::DecodedObservation;
use malmo_bridge::emulator::ray::{EYE_HEIGHT, look_at};
use malmo_bridge::emulator::{Emulator, EmulatorConfig};
use malmo_bridge::mission_ended::MissionEndedStatus;
use malmo_bridge::mod_patch::{BlockAction, BlockChange, ModFlavour, PATCHED_MOD_VERSION};
use malmo_bridge::observation::Observation;

async fn emulator_of(flavour: ModFlavour) -> Emulator {
    Emulator::start(EmulatorConfig {
        world_delay: Duration::from_millis(100),
        mod_flavour: flavour,
        ..EmulatorConfig::ephemeral(2)
    })
    .await
    .unwrap()
}

/// Aims the agent from `pos` at `target` and sends `action`.
async fn aim_and(m: &mut AgentMission, pos: [f64; 3], target: [f64; 3], action: Command) {
    let eye = [pos[0], pos[1] + f64::from(EYE_HEIGHT), pos[2]];
    let (yaw, pitch) = look_at(eye, target);
    for command in [
        Command::SetYaw(Number::Float(f64::from(yaw))),
        Command::SetPitch(Number::Float(f64::from(pitch))),
        action,
    ] {
        m.send(&command).await.unwrap();
    }
}

/// Plays the same edits under either mod and returns every observation of both
/// roles until each has seen the last edit's grid, then quits.
async fn play(flavour: ModFlavour) -> (Emulator, Vec<Vec<Observation>>) {
    let emu = emulator_of(flavour).await;
    let mission = example_mission("mission_2p_assistant_human_11x10x10");
    let experiment = "exp-mod-patch";
    let mut missions = start_and_begin(&emu, &mission, experiment).await;
    let human = emu.human(experiment, "human").unwrap();

    // The human places and breaks one block; a chat /fill changes the world
    // without being anyone's place or break.
    human.chat("/give human cobblestone 2").await.unwrap();
    human.select_hotbar(0).await.unwrap();
    human.place_block([3, 2, 3]).await.unwrap();
    human.break_block([3, 2, 3]).await.unwrap();
    human.chat("/fill 0 2 9 1 2 9 wool").await.unwrap();

    // The assistant (role 0) places planks on the floor, then breaks them.
    let pos = [5.5, 2.0, 5.5];
    let m = &mut missions[0];
    m.send(&Command::Chat("/give assistant planks 1".into()))
        .await
        .unwrap();
    m.send(&Command::Teleport {
        x: Number::Float(pos[0]),
        y: Number::Int(2),
        z: Number::Float(pos[2]),
    })
    .await
    .unwrap();
    aim_and(m, pos, [5.5, 2.0, 7.5], Command::Use).await;
    let mut seen = vec![Vec::new(), Vec::new()];
    collect_until(m, &mut seen[0], "planks").await;
    aim_and(m, pos, [5.5, 2.5, 7.5], Command::Attack).await;
    collect_until(&mut missions[0], &mut seen[0], "air").await;
    // The human moves last, so once it sees itself moved, its observations have
    // covered every edit.
    human.move_to([2.5, 2.0, 8.5]).await.unwrap();
    loop {
        let (_, obs) = next_observation(&mut missions[1]).await;
        let moved = obs.x == Some(2.5) && obs.z == Some(8.5);
        seen[1].push(obs);
        if moved {
            break;
        }
    }
    for m in &mut missions {
        m.send(&Command::Quit).await.unwrap();
    }
    for m in &mut missions {
        assert_eq!(m.quit().await.unwrap(), MissionEndedStatus::Ended);
    }
    (emu, seen)
}

/// Keeps every observation (the agent side queues them all from the start) until
/// the cell the assistant builds in holds `block`.
async fn collect_until(m: &mut AgentMission, seen: &mut Vec<Observation>, block: &str) {
    loop {
        let (_, obs) = next_observation(m).await;
        let done = obs
            .grid("world")
            .is_some_and(|g| cell(&g, (11, 10, 10), 5, 2, 7) == block);
        seen.push(obs);
        if done {
            return;
        }
    }
}

fn changes_of(observations: &[Observation]) -> Vec<BlockChange> {
    observations
        .iter()
        .flat_map(|o| o.block_changes.clone().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stock_mod_reports_no_block_changes_and_no_version() {
    let (emu, seen) = play(ModFlavour::Stock).await;
    for observations in &seen {
        assert!(!observations.is_empty());
        for obs in observations {
            assert_eq!(obs.block_changes, None);
            assert_eq!(obs.mod_version, None);
        }
    }
    let version = query_mod_version(&emu.pool()[0], Duration::from_secs(5)).await;
    assert_eq!(version.unwrap(), None, "the stock mod does not answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_patched_mod_reports_each_change_once_to_every_observer() {
    let (emu, seen) = play(ModFlavour::Patched).await;
    let expected = [
        ("human", BlockAction::Place, [3, 2, 3], "cobblestone"),
        ("human", BlockAction::Break, [3, 2, 3], "cobblestone"),
        ("assistant", BlockAction::Place, [5, 2, 7], "planks"),
        ("assistant", BlockAction::Break, [5, 2, 7], "planks"),
    ];
    for (role, observations) in seen.iter().enumerate() {
        for obs in observations {
            assert_eq!(obs.mod_version.as_deref(), Some(PATCHED_MOD_VERSION));
        }
        let changes = changes_of(observations);
        let got: Vec<_> = changes
            .iter()
            .map(|c| {
                (
                    c.player.as_str(),
                    c.action.clone(),
                    c.cell,
                    c.block.as_str(),
                )
            })
            .collect();
        assert_eq!(got, expected, "role {role}");
        let seqs: Vec<u64> = changes.iter().map(|c| c.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4], "role {role}: in order, none twice");
        assert!(changes.windows(2).all(|w| w[0].tick <= w[1].tick));
    }
    // The live decoder reads the same changes as the lossless reader.
    let with_changes = seen[1].iter().find(|o| o.block_changes.is_some()).unwrap();
    let text = serde_json::to_string(with_changes).unwrap();
    let decoded = DecodedObservation::decode(text.as_bytes()).unwrap();
    assert_eq!(
        Some(decoded.block_changes),
        with_changes.block_changes.clone()
    );
    assert_eq!(decoded.mod_version.as_deref(), Some(PATCHED_MOD_VERSION));

    let version = query_mod_version(&emu.pool()[1], Duration::from_secs(5)).await;
    assert_eq!(version.unwrap().as_deref(), Some(PATCHED_MOD_VERSION));
}
