//! Each fault hook of the emulator gives the typed `AgentError` it should on our
//! agent side, within bounded time.

mod emulator_util;

use std::time::Duration;

use emulator_util::*;
use malmo_bridge::agent::{AgentError, AgentMission, MissionEvent, Stage, Timeouts};
use malmo_bridge::command::Command;
use malmo_bridge::emulator::{Corruption, Emulator, FaultChannel};
use malmo_bridge::mission_ended::MissionEndedStatus;
use malmo_bridge::observation::Observation;
use tokio::time::Instant;

/// How long any fault may take to show.
const BOUND: Duration = Duration::from_secs(5);

async fn running(experiment: &str) -> (Emulator, AgentMission) {
    let emu = emulator(1).await;
    let mut missions = start_and_begin(&emu, &one_player_mission(), experiment).await;
    let mut m = missions.pop().unwrap();
    next_observation(&mut m).await;
    (emu, m)
}

/// The first error of the running mission, within `BOUND`.
async fn first_error(m: &mut AgentMission) -> AgentError {
    let started = Instant::now();
    loop {
        let event = tokio::time::timeout(BOUND, m.next_event())
            .await
            .expect("the fault shows within the bound");
        if let Err(e) = event {
            assert!(started.elapsed() < BOUND);
            return e;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_pings_are_a_lost_client_after_the_silence_timeout() {
    let (emu, mut m) = running("f-pings").await;
    emu.clients()[0].faults().stop_pings(true);
    let started = Instant::now();
    let err = first_error(&mut m).await;
    assert!(
        matches!(err, AgentError::ClientLost { role: 0, .. }),
        "{err}"
    );
    // Observations kept coming, so only the silence of mission control counts.
    assert!(started.elapsed() >= timeouts().silence - Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_exiting_mid_mission_is_a_lost_client() {
    let (emu, mut m) = running("f-exit").await;
    emu.clients()[0].faults().exit_mid_mission();
    let err = first_error(&mut m).await;
    assert!(
        matches!(err, AgentError::ClientLost { role: 0, .. }),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_mission_control_connection_is_a_lost_client() {
    let (emu, mut m) = running("f-drop-mcp").await;
    emu.clients()[0]
        .faults()
        .drop_connection(FaultChannel::MissionControl);
    let err = first_error(&mut m).await;
    assert!(matches!(err, AgentError::ClientLost { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_commands_connection_fails_the_next_commands() {
    let (emu, mut m) = running("f-drop-commands").await;
    emu.clients()[0]
        .faults()
        .drop_connection(FaultChannel::Commands);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The first write after the close may still be accepted by the kernel.
    let started = Instant::now();
    let err = loop {
        assert!(started.elapsed() < BOUND, "commands still accepted");
        if let Err(e) = m.send(&Command::Jump(true)).await {
            break e;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(matches!(err, AgentError::ClientLost { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_delivered_as_text_and_fails_to_parse() {
    // The agent side does not parse observations (MBAG's daemon does), so the
    // text arrives and `Observation::parse` reports it; the mission goes on.
    let (emu, mut m) = running("f-json").await;
    emu.clients()[0].faults().malformed_json();
    let deadline = Instant::now() + BOUND;
    let bad = loop {
        assert!(Instant::now() < deadline);
        if let MissionEvent::Observation { json, .. } = m.next_event().await.unwrap()
            && Observation::parse(json.as_bytes()).is_err()
        {
            break json;
        }
    };
    assert!(bad.starts_with(r#"{"world":["#));
    next_observation(&mut m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_observation_frame_is_a_protocol_error() {
    let (emu, mut m) = running("f-truncate").await;
    emu.clients()[0]
        .faults()
        .truncate_next_frame(FaultChannel::Observations);
    let err = first_error(&mut m).await;
    assert!(
        matches!(err, AgentError::Protocol { channel: "obs", .. }),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_frames_are_protocol_errors() {
    for (channel, name, how) in [
        (
            FaultChannel::MissionControl,
            "mcp",
            Corruption::HostileLength,
        ),
        (FaultChannel::Observations, "obs", Corruption::Garbage),
    ] {
        let (emu, mut m) = running("f-corrupt").await;
        emu.clients()[0].faults().corrupt_next_frame(channel, how);
        let err = first_error(&mut m).await;
        assert!(
            matches!(&err, AgentError::Protocol { channel, .. } if *channel == name),
            "{err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_mission_control_looks_like_a_hung_client() {
    let (emu, mut m) = running("f-delay").await;
    emu.clients()[0]
        .faults()
        .delay(FaultChannel::MissionControl, Some(timeouts().silence * 2));
    let err = first_error(&mut m).await;
    assert!(matches!(err, AgentError::ClientLost { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_version_is_insufficient_clients_with_a_version_hint() {
    let emu = emulator(1).await;
    emu.clients()[0].faults().answer_as_version(Some("0.37.0"));
    let err = start(&emu, &one_player_mission(), "f-version")
        .await
        .unwrap_err();
    match &err {
        AgentError::InsufficientClients {
            stage: Stage::Reservation,
            attempts,
            hint,
            ..
        } => {
            assert!(attempts.any_version_mismatch());
            assert!(hint.contains("another Malmo version"), "{hint}");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_world_creation_ends_the_mission_abnormally_before_it_begins() {
    let emu = emulator(1).await;
    emu.clients()[0].faults().fail_world_creation(Some("test"));
    let mut missions = start(&emu, &one_player_mission(), "f-world").await.unwrap();
    let err = missions[0].wait_until_begun().await.unwrap_err();
    match err {
        AgentError::MissionEndedAbnormally { status, text } => {
            assert_eq!(status, MissionEndedStatus::ModFailedToCreateWorld);
            assert_eq!(
                text,
                "Server world-creation handler failed to create a world: test"
            );
        }
        other => panic!("{other}"),
    }
    // The client is free for the next attempt.
    tokio::time::sleep(Duration::from_millis(100)).await;
    start_and_begin(&emu, &one_player_mission(), "f-world-2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_nobody_joins_ends_with_connection_failed() {
    let config = malmo_bridge::emulator::EmulatorConfig {
        world_delay: Duration::from_millis(50),
        join_timeout: Duration::from_millis(500),
        ..malmo_bridge::emulator::EmulatorConfig::ephemeral(2)
    };
    let emu = Emulator::start(config).await.unwrap();
    let mission = example_mission("mission_2p_assistant_human_11x10x10");
    let pool = emu.pool();
    let t = Timeouts { ..timeouts() };
    let reserved = malmo_bridge::agent::reserve_clients(&pool, 2, "f-alone", &t)
        .await
        .unwrap();
    let init = init_for(
        &mission,
        0,
        "f-alone",
        ("127.0.0.1", reserved[0].control_port),
    );
    let mut role0 = malmo_bridge::agent::start_role(&reserved, 0, "f-alone", false, init, t)
        .await
        .unwrap();
    let err = role0.wait_until_begun().await.unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::MissionEndedAbnormally {
                status: MissionEndedStatus::ModConnectionFailed,
                ..
            }
        ),
        "{err}"
    );
}

/// A fault spec in the config fires when its `@WHEN` arrives: `exit@20` lets
/// the mission run 20 ticks, then the client vanishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_fault_fires_at_its_tick() {
    let config = malmo_bridge::emulator::EmulatorConfig {
        world_delay: Duration::from_millis(50),
        faults: vec!["exit@20".parse().unwrap()],
        ..malmo_bridge::emulator::EmulatorConfig::ephemeral(1)
    };
    let emu = Emulator::start(config).await.unwrap();
    let mut m = start_and_begin(&emu, &one_player_mission(), "f-scheduled")
        .await
        .pop()
        .unwrap();
    let mut observations = 0;
    let err = loop {
        let event = tokio::time::timeout(BOUND, m.next_event())
            .await
            .expect("the fault shows within the bound");
        match event {
            Ok(MissionEvent::Observation { .. }) => observations += 1,
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert!(
        matches!(err, AgentError::ClientLost { role: 0, .. }),
        "{err}"
    );
    // One observation per tick, the first perhaps before the agent listened.
    assert!((19..=21).contains(&observations), "{observations}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_for_a_client_that_does_not_exist_is_refused() {
    let config = malmo_bridge::emulator::EmulatorConfig {
        faults: vec!["exit#2".parse().unwrap()],
        ..malmo_bridge::emulator::EmulatorConfig::ephemeral(2)
    };
    let err = Emulator::start(config).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "fault exit#2: there is no client #2 (2 emulated)"
    );
}
