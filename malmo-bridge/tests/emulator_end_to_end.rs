//! Our agent side against the emulator, end to end: reservation, roles > 0 via
//! MALMO_FIND_SERVER, the echo, observations with the mission's grids, commands
//! that change the world, a scripted human, and quitting.

mod emulator_util;

use std::time::Duration;

use emulator_util::*;
use malmo_bridge::agent::{AgentError, MissionEvent};
use malmo_bridge::command::{Command, Number};
use malmo_bridge::mission_ended::MissionEndedStatus;
use malmo_bridge::mission_init::ServerConnection;

fn int(v: i64) -> Number {
    Number::Int(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_player_observes_acts_and_quits() {
    let emu = emulator(1).await;
    let mission = one_player_mission();
    let mut missions = start_and_begin(&emu, &mission, "exp-1p").await;
    let m = &mut missions[0];
    let echo = m.echo().unwrap().clone();
    assert_eq!(
        echo.connection.client_commands_port,
        emu.clients()[0].commands_port()
    );
    assert_eq!(echo.connection.agent_address, "localhost");
    assert_eq!(echo.server, None);

    // Observations come about every 50 ms with the mission's grids.
    let (text, first) = next_observation(m).await;
    assert!(text.starts_with(r#"{"world":["bedrock","#), "{text}");
    let started = tokio::time::Instant::now();
    for _ in 0..10 {
        next_observation(m).await;
    }
    let per_observation = started.elapsed() / 10;
    assert!(
        per_observation < Duration::from_millis(500),
        "{per_observation:?}"
    );
    let size = (5, 5, 5);
    let world = first.grid("world").unwrap();
    let goal = first.grid("goal").unwrap();
    assert_eq!(world.len(), 125);
    assert_eq!(cell(&world, size, 4, 2, 4), "wool");
    assert_eq!(cell(&world, size, 0, 1, 0), "grass");
    assert_eq!(cell(&world, size, 0, 0, 0), "bedrock");
    assert_eq!(cell(&goal, size, 2, 2, 2), "planks");
    for key in [
        "InventorySlot_40_item",
        "InventorySlot_held_item",
        "inventoriesAvailable",
        "serverTicksPerSecond",
    ] {
        assert!(first.extra.contains_key(key), "{key}");
    }
    assert_eq!(first.name.as_deref(), Some("human"));
    assert_eq!(first.current_item_index, Some(0));

    // tp moves the player.
    m.send(&Command::Teleport {
        x: Number::Float(2.5),
        y: int(4),
        z: Number::Float(1.5),
    })
    .await
    .unwrap();
    let obs = observation_where(m, |o| o.x == Some(2.5)).await;
    assert_eq!((obs.y, obs.z), (Some(4.0), Some(1.5)));
    assert_eq!(
        obs.commands.as_deref(),
        Some(&["tp 2.5 4 1.5".to_owned()][..])
    );

    // /give fills the inventory; the feedback shows in Chat.
    m.send(&Command::Chat("/give human planks 3".into()))
        .await
        .unwrap();
    let obs = observation_where(m, |o| o.inventory_slot(0).is_some_and(|s| s.size == 3)).await;
    assert_eq!(obs.inventory_slot(0).unwrap().item, "planks");
    assert_eq!(
        obs.chat.as_deref(),
        Some(&["Given [Oak Wood Planks] * 3 to human".to_owned()][..])
    );
    assert_eq!(obs.extra["InventorySlot_0_variant"], "oak");

    // Look straight down and use: the block goes on the grass below.
    m.send(&Command::SetYaw(Number::Float(0.0))).await.unwrap();
    m.send(&Command::SetPitch(Number::Float(90.0)))
        .await
        .unwrap();
    m.send(&Command::Use).await.unwrap();
    let obs = observation_where(m, |o| {
        o.grid("world")
            .is_some_and(|g| cell(&g, size, 2, 2, 1) == "planks")
    })
    .await;
    let sight = obs.line_of_sight.unwrap();
    assert_eq!((sight.kind.as_str(), sight.in_range), ("planks", true));
    assert_eq!((sight.x, sight.y, sight.z), (2.5, 3.0, 1.5));

    // Attack breaks it again.
    m.send(&Command::Attack).await.unwrap();
    observation_where(m, |o| {
        o.grid("world")
            .is_some_and(|g| cell(&g, size, 2, 2, 1) == "air")
    })
    .await;

    // Plain chat reaches the player's own Chat.
    m.send(&Command::Chat("hello".into())).await.unwrap();
    observation_where(m, |o| {
        o.chat
            .as_ref()
            .is_some_and(|c| c.contains(&"<human> hello".to_owned()))
    })
    .await;

    // The round trip a benchmark measures.
    let trip = m
        .round_trip(&Command::Teleport {
            x: Number::Float(1.5),
            y: int(2),
            z: Number::Float(1.5),
        })
        .await
        .unwrap();
    assert!(
        trip.observation.contains(r#""XPos":1.5"#),
        "{}",
        trip.observation
    );

    assert_eq!(m.quit().await.unwrap(), MissionEndedStatus::Ended);
    // The client is free again.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(matches!(
        emu.clients()[0].status(),
        malmo_bridge::emulator::ClientStatus::Dormant { reserved_for: None }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistant_and_human_share_a_world_and_see_the_humans_edits() {
    let emu = emulator(2).await;
    let mission = example_mission("mission_2p_assistant_human_11x10x10");
    let experiment = "exp-2p";
    let mut missions = start_and_begin(&emu, &mission, experiment).await;
    // Role 0's echo names its LAN server; role 1 joined it.
    let server: &ServerConnection = missions[0].echo().unwrap().server.as_ref().unwrap();
    assert_eq!(
        missions[1].echo().unwrap().server.as_ref().unwrap().port,
        server.port
    );

    let size = (11, 10, 10);
    let (_, first) = next_observation(&mut missions[0]).await;
    // The goal copy and the walls as drawn by the mission.
    let goal = first.grid("goal").unwrap();
    let expected = mission.goal();
    for (x, y, z, block) in expected.cells() {
        let seen = cell(&goal, size, x as usize, y as usize, z as usize);
        let seen = malmo_bridge::block::Block::from_observed_name(seen).unwrap();
        assert_eq!(seen, block, "goal ({x}, {y}, {z})");
    }

    // The human gets blocks, selects them and builds.
    let human = emu.human(experiment, "human").unwrap();
    human.chat("/give human cobblestone 2").await.unwrap();
    human.select_hotbar(0).await.unwrap();
    human.place_block([3, 2, 3]).await.unwrap();
    let obs = observation_where(&mut missions[0], |o| {
        o.grid("world")
            .is_some_and(|g| cell(&g, size, 3, 2, 3) == "cobblestone")
    })
    .await;
    assert_eq!(obs.name.as_deref(), Some("assistant"));
    let obs = observation_where(&mut missions[1], |o| {
        o.events.as_ref().is_some_and(|e| {
            e.iter()
                .any(|e| e["command"] == "use" && e["pressed"] == true)
        })
    })
    .await;
    assert_eq!(obs.name.as_deref(), Some("human"));
    // The human looks at what it placed.
    let sight = obs.line_of_sight.unwrap();
    assert_eq!(sight.kind, "cobblestone");

    human.break_block([3, 2, 3]).await.unwrap();
    observation_where(&mut missions[0], |o| {
        o.grid("world")
            .is_some_and(|g| cell(&g, size, 3, 2, 3) == "air")
    })
    .await;
    assert!(
        human.place_block([13, 2, 3]).await.is_err(),
        "the goal copy is protected"
    );

    // The assistant's chat reaches the human; the assistant has no Chat key.
    missions[0]
        .send(&Command::Chat("hi human".into()))
        .await
        .unwrap();
    observation_where(&mut missions[1], |o| {
        o.chat
            .as_ref()
            .is_some_and(|c| c.contains(&"<assistant> hi human".to_owned()))
    })
    .await;

    // The assistant's tp applies to the assistant only (the fork's named player).
    missions[0]
        .send(&Command::Teleport {
            x: Number::Float(5.5),
            y: int(2),
            z: Number::Float(5.5),
        })
        .await
        .unwrap();
    observation_where(&mut missions[0], |o| o.x == Some(5.5)).await;
    let world = emu.world(experiment).unwrap();
    assert_eq!(
        world.player("human").await.unwrap().unwrap().pos,
        [1.5, 2.0, 0.5]
    );

    // Quitting one role is not the end; quitting both is.
    missions[0].send(&Command::Quit).await.unwrap();
    let last = observation_where(&mut missions[0], |o| o.commands.is_some()).await;
    assert_eq!(last.commands.unwrap(), ["quit "]);
    missions[1].send(&Command::Quit).await.unwrap();
    for m in &mut missions {
        assert_eq!(m.quit().await.unwrap(), MissionEndedStatus::Ended);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_mission_ends_once_the_spectators_agent_is_gone() {
    let emu = emulator(3).await;
    let mission = example_mission("mission_2p_assistant_human_spectator_11x10x10");
    let mut missions = start_and_begin(&emu, &mission, "exp-spectator").await;
    for m in &mut missions[..2] {
        next_observation(m).await;
        m.send(&Command::Quit).await.unwrap();
    }
    // The spectator observes nothing and ignores quit.
    let mut spectator = missions.pop().unwrap();
    spectator.send(&Command::Quit).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    while tokio::time::Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_millis(300), spectator.next_event()).await {
            Ok(Ok(MissionEvent::Ping)) | Err(_) => {}
            Ok(other) => panic!("the spectator got {other:?}"),
        }
    }
    // MBAG closes the spectator's agent; its client's pings fail and the
    // mission ends for everyone else.
    drop(spectator);
    for m in &mut missions {
        let status = loop {
            match m.next_event().await {
                Ok(MissionEvent::Ended(e)) => break e.status,
                Ok(_) => {}
                Err(e) => panic!("role {}: {e}", m.role()),
            }
        };
        assert_eq!(status, MissionEndedStatus::Ended);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_started_before_role_zero_finds_no_server() {
    let emu = emulator(2).await;
    let mission = example_mission("mission_2p_assistant_human_11x10x10");
    let pool = emu.pool();
    let t = malmo_bridge::agent::Timeouts {
        find_server: Duration::from_millis(300),
        ..timeouts()
    };
    let init = init_for(
        &mission,
        1,
        "exp-early",
        ("127.0.0.1", pool[1].control_port),
    );
    let err = malmo_bridge::agent::start_role(&pool, 1, "exp-early", false, init, t)
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::ServerNotFound { .. }), "{err}");
}
