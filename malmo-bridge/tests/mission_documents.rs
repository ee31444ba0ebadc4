//! The mission documents against `../shared/malmo/examples` and the Malmo XSDs:
//! every example Mission renders byte for byte from its `inputs.json`, every
//! MissionInit and MissionEnded example parses and renders back, malformed
//! documents give typed errors, and everything we generate (the examples and
//! missions of other shapes) validates with xmllint.

use std::path::PathBuf;
use std::process::Command;

use malmo_bridge::block::Block;
use malmo_bridge::grid::{BlockGrid, WorldSize};
use malmo_bridge::mission::{
    Boundary, Mission, MissionDocument, MissionError, MissionLayout, Player, PlayerKind,
    PlayerName, Role, Spectator, VideoSize, WorldReset,
};
use malmo_bridge::mission_ended::{MissionEnded, MissionEndedError, MissionEndedStatus};
use malmo_bridge::mission_init::{MissionInit, MissionInitError, MissionInitForm};
use serde_json::Value;

fn malmo_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/malmo"))
}

fn example(name: &str) -> String {
    let path = malmo_dir().join("examples").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The example scenarios with their roles.
const SCENARIOS: [(&str, u32); 3] = [
    ("mission_2p_assistant_human_11x10x10", 2),
    ("mission_2p_assistant_human_spectator_11x10x10", 3),
    ("mission_2p_humans_palette_11x10x10", 2),
];

fn grid(size: WorldSize, value: &Value) -> BlockGrid {
    let mut ids = Vec::new();
    for plane in value.as_array().unwrap() {
        for row in plane.as_array().unwrap() {
            for id in row.as_array().unwrap() {
                ids.push(u8::try_from(id.as_u64().unwrap()).unwrap());
            }
        }
    }
    BlockGrid::from_mbag_ids(size, &ids).unwrap()
}

/// The mission an `inputs.json` describes, read as the reference reads its config.
fn mission_from_inputs(scenario: &str) -> Mission {
    let inputs: Value = serde_json::from_str(&example(&format!("{scenario}.inputs.json"))).unwrap();
    let config = &inputs["env_config"];
    let extent = |k: usize| u32::try_from(config["world_size"][k].as_u64().unwrap()).unwrap();
    let size = WorldSize::new(extent(0), extent(1), extent(2)).unwrap();
    let players = config["players"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = match p["player_name"].as_str() {
                Some(name) => PlayerName::truncated(name).unwrap(),
                None => PlayerName::default_for(i),
            };
            if p["is_human"].as_bool().unwrap() {
                Player::human(name)
            } else {
                Player::ai(name)
            }
        })
        .collect();
    let malmo = &config["malmo"];
    let spectator = malmo["use_spectator"]
        .as_bool()
        .unwrap()
        .then(Spectator::default);
    let boundary = if malmo["restrict_players"].as_bool().unwrap() {
        Boundary::Walled
    } else {
        Boundary::Open
    };
    Mission::new(
        &grid(size, &inputs["goal_blocks_xyz"]),
        &grid(size, &inputs["current_blocks_xyz"]),
        players,
    )
    .unwrap()
    .with_spectator(spectator)
    .with_boundary(boundary)
}

/// Shows where two long texts first differ.
#[track_caller]
fn assert_same_text(found: &str, expected: &str, what: &str) {
    if found == expected {
        return;
    }
    let at = found
        .bytes()
        .zip(expected.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(found.len().min(expected.len()));
    let around = |s: &str| {
        let bytes = &s.as_bytes()[at.saturating_sub(80)..(at + 80).min(s.len())];
        String::from_utf8_lossy(bytes).into_owned()
    };
    panic!(
        "{what}: first difference at byte {at} (lengths {} vs {})\n--- found:\n{:?}\n--- expected:\n{:?}",
        found.len(),
        expected.len(),
        around(found),
        around(expected)
    );
}

#[test]
fn example_missions_render_byte_for_byte_from_their_inputs() {
    for (scenario, roles) in SCENARIOS {
        let mission = mission_from_inputs(scenario);
        assert_eq!(mission.num_agents() as u32, roles, "{scenario}");
        for role in mission.roles() {
            let expected = example(&format!("{scenario}.role{role}.xml"));
            assert_same_text(
                &mission.to_xml(role),
                &expected,
                &format!("{scenario} role {role}"),
            );
        }
    }
    let mission = mission_from_inputs(SCENARIOS[0].0);
    let raw = mission
        .document(Role(0))
        .render(MissionLayout::ReferenceRaw);
    assert_same_text(
        &raw,
        &example("mission_2p_assistant_human_11x10x10.reference-raw.xml"),
        "reference-raw",
    );
}

#[test]
fn example_missions_parse_to_their_inputs_and_render_back() {
    for (scenario, _) in SCENARIOS {
        let mission = mission_from_inputs(scenario);
        for role in mission.roles() {
            let text = example(&format!("{scenario}.role{role}.xml"));
            let parsed = MissionDocument::parse(&text)
                .unwrap_or_else(|e| panic!("{scenario} role {role}: {e}"));
            assert_eq!(parsed, mission.document(role), "{scenario} role {role}");
            assert_eq!(parsed.render(MissionLayout::Reference), text);
        }
    }
    let raw = example("mission_2p_assistant_human_11x10x10.reference-raw.xml");
    let parsed = MissionDocument::parse(&raw).unwrap();
    assert_eq!(parsed.render(MissionLayout::ReferenceRaw), raw);
}

/// Missions of other shapes than the examples: `(what, mission)`.
fn varied_missions() -> Vec<(&'static str, Mission)> {
    let name = |s: &str| PlayerName::new(s).unwrap();
    let mut out = Vec::new();

    // One human alone in a 6x6x6 tutorial-sized world with a few goal blocks.
    let size = WorldSize::new(6, 6, 6).unwrap();
    let mut goal = BlockGrid::flat(size);
    goal.set(1, 2, 1, Block::Planks);
    goal.set(2, 2, 1, Block::Glass);
    goal.set(1, 1, 1, Block::Stone);
    let current = BlockGrid::flat(size);
    out.push((
        "1 human, 6x6x6, walls",
        Mission::new(&goal, &current, vec![Player::human(name("human"))])
            .unwrap()
            .with_boundary(Boundary::Walled),
    ));

    // Three players (two AI, one human), no walls, a 5x6x5 world with a pillar.
    let size = WorldSize::new(5, 6, 5).unwrap();
    let goal = BlockGrid::from_fn(size, |x, y, z| match (x, y, z) {
        (_, 0, _) => Block::Bedrock,
        (2, 1..=4, 2) => Block::Log,
        (_, 1, _) => Block::Dirt,
        _ => Block::Air,
    });
    out.push((
        "3 players, 5x6x5, open",
        Mission::new(
            &goal,
            &BlockGrid::flat(size),
            vec![
                Player::ai(PlayerName::default_for(0)),
                Player::ai(PlayerName::default_for(1)),
                Player::human(PlayerName::default_for(2)),
            ],
        )
        .unwrap(),
    ));

    // Palette mode with a spectator of another video size, 7x5x9.
    let size = WorldSize::new(7, 5, 9).unwrap();
    let palette = |x: u32, y: u32, z: u32| {
        (x == 6 && y == 2)
            .then(|| Block::PLACEABLE.get(z as usize).copied())
            .flatten()
    };
    let goal = BlockGrid::from_fn(size, |x, y, z| {
        palette(x, y, z).unwrap_or(match (x, y) {
            (_, 0) => Block::Bedrock,
            (1..=3, 1) => Block::StoneBrick,
            (_, 1) => Block::Dirt,
            (1, 2) => Block::Wool,
            _ => Block::Air,
        })
    });
    let current = BlockGrid::from_fn(size, |x, y, z| {
        palette(x, y, z).unwrap_or(match y {
            0 => Block::Bedrock,
            1 => Block::Dirt,
            _ => Block::Air,
        })
    });
    out.push((
        "2 humans, palette, spectator 640x480, 7x5x9",
        Mission::new(
            &goal,
            &current,
            vec![
                Player::human(name("player_0")),
                Player::human(name("player_1")),
            ],
        )
        .unwrap()
        .with_spectator(Some(Spectator {
            video: VideoSize::new(640, 480).unwrap(),
        }))
        .with_boundary(Boundary::Walled),
    ));

    // The daemon's chat: the assistant's own section observes chat too.
    let mut with_chat = mission_from_inputs("mission_2p_assistant_human_11x10x10");
    let players = with_chat
        .players()
        .iter()
        .map(|p| p.clone().with_chat())
        .collect();
    with_chat = Mission::new(with_chat.goal(), with_chat.current(), players)
        .unwrap()
        .with_boundary(with_chat.boundary());
    out.push(("assistant observing chat + human, 11x10x10", with_chat));

    // A tiny 1x1x1 world: everything at its smallest.
    let size = WorldSize::new(1, 1, 1).unwrap();
    out.push((
        "1 AI, 1x1x1",
        Mission::new(
            &BlockGrid::filled(size, Block::Cobblestone),
            &BlockGrid::flat(size),
            vec![Player::ai(name("a"))],
        )
        .unwrap()
        .with_boundary(Boundary::Walled),
    ));
    out
}

#[test]
fn varied_missions_round_trip() {
    for (what, mission) in varied_missions() {
        for role in mission.roles() {
            let document = mission.document(role);
            for layout in [MissionLayout::Reference, MissionLayout::ReferenceRaw] {
                let text = document.render(layout);
                let parsed =
                    MissionDocument::parse(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(parsed, document, "{what} role {role}");
                assert_eq!(parsed.render(layout), text, "{what} role {role}");
            }
        }
    }
}

#[test]
fn spectator_and_walls_change_only_their_sections() {
    let (_, mission) = varied_missions().swap_remove(2);
    let text = mission.to_xml(Role(2));
    assert!(text.contains("<Width>640</Width>") && text.contains("<Height>480</Height>"));
    assert_eq!(text.matches("<AgentSection").count(), 3);
    assert_eq!(text.matches("<DrawCuboid").count(), 5);
    assert!(text.contains("forceReset=\"false\""));
    // The palette column sits at x = W-1 = 6 in the build area.
    assert!(text.contains("type=\"dirt\"\n                    x=\"6\"\n                    y=\"2\"\n                    z=\"0\""));
    let open = mission
        .clone()
        .with_boundary(Boundary::Open)
        .to_xml(Role(0));
    assert_eq!(open.matches("<DrawCuboid").count(), 0);
    assert!(open.contains("forceReset=\"true\""));
}

#[test]
fn an_ai_observing_chat_adds_one_producer_to_the_reference_document() {
    let scenario = "mission_2p_assistant_human_11x10x10";
    let reference = mission_from_inputs(scenario);
    let (_, with_chat) = varied_missions()
        .into_iter()
        .find(|(what, _)| what.starts_with("assistant observing chat"))
        .unwrap();
    assert!(with_chat.players()[0].observes_chat());
    assert_eq!(with_chat.players()[0].kind, PlayerKind::Ai);
    assert!(!reference.players()[0].observes_chat());
    // Humans observe chat whatever they are told.
    assert!(reference.players()[1].observes_chat());
    assert_eq!(with_chat.players()[1], reference.players()[1]);
    for role in reference.roles() {
        let expected = example(&format!("{scenario}.role{}.xml", role.0));
        assert_same_text(&reference.to_xml(role), &expected, "reference");
        let stats = "<ObservationFromFullStats />";
        let at = expected.find(stats).unwrap() + stats.len();
        let mut added = expected.clone();
        added.insert_str(at, "\n                    <ObservationFromChat />");
        assert_same_text(&with_chat.to_xml(role), &added, "with chat");
        let parsed = MissionDocument::parse(&added).unwrap();
        assert_eq!(parsed.mission, with_chat);
        assert_ne!(parsed.mission, reference);
    }
}

#[test]
fn air_on_the_floor_layers_reads_back_as_the_flat_world() {
    let size = WorldSize::new(3, 4, 3).unwrap();
    let mut goal = BlockGrid::flat(size);
    goal.set(1, 1, 1, Block::Air); // a goal structure with air in its bottom layer
    let mission = Mission::new(
        &goal,
        &BlockGrid::flat(size),
        vec![Player::human(PlayerName::default_for(0))],
    )
    .unwrap();
    assert_eq!(mission.goal(), &BlockGrid::flat(size));
    let parsed = MissionDocument::parse(&mission.to_xml(Role(0))).unwrap();
    assert_eq!(parsed.mission, mission);
}

/// Replaces the first occurrence of `from`, which must exist.
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} not in the document");
    text.replacen(from, to, 1)
}

#[test]
fn malformed_missions_give_typed_errors_naming_the_problem() {
    let text = example("mission_2p_assistant_human_11x10x10.role0.xml");
    let parse = |t: &str| MissionDocument::parse(t).unwrap_err();

    let error = parse(&text[..text.len() / 2]);
    assert!(
        matches!(
            error,
            MissionError::Read(malmo_bridge::ReadError::Syntax { .. })
        ),
        "{error}"
    );

    let error = parse(&edit(&text, "type=\"planks\"", "type=\"diamond_block\""));
    assert!(
        matches!(&error, MissionError::UnknownBlock { name, path } if name == "diamond_block" && path.contains("DrawBlock")),
        "{error}"
    );

    let error = parse(&edit(&text, "x=\"14\"", "x=\"40\""));
    assert!(
        matches!(error, MissionError::BlockOutside { x: 40, .. }),
        "{error}"
    );

    let error = parse(&edit(&text, "x=\"14\"", "x=\"fourteen\""));
    assert!(
        matches!(&error, MissionError::Read(malmo_bridge::ReadError::BadValue { path, expected: "an integer", .. }) if path.ends_with("@x")),
        "{error}"
    );

    let block = "\n                <DrawBlock\n                    type=\"stone\"\n                    x=\"12\"\n                    y=\"1\"\n                    z=\"4\"\n                />";
    let error = parse(&edit(&text, block, &format!("{block}{block}")));
    assert!(
        matches!(
            error,
            MissionError::DuplicateBlock {
                x: 12,
                y: 1,
                z: 4,
                ..
            }
        ),
        "{error}"
    );

    let error = parse(&edit(
        &text,
        "<Weather>clear</Weather>",
        "<Weather>rain</Weather>",
    ));
    assert!(
        matches!(&error, MissionError::Read(malmo_bridge::ReadError::Mismatch { path, .. }) if path.contains("Weather")),
        "{error}"
    );

    let error = parse(&edit(
        &text,
        "<Name>assistant</Name>",
        "<Name>not a name</Name>",
    ));
    assert!(matches!(error, MissionError::PlayerName { .. }), "{error}");

    let error = parse(&edit(&text, "<ObservationFromRay />\n", ""));
    assert!(
        matches!(&error, MissionError::Read(malmo_bridge::ReadError::Mismatch { path, .. }) if path.contains("AgentHandlers")),
        "{error}"
    );

    let error = parse(&edit(
        &text,
        "<FlatWorldGenerator\n                        forceReset=\"true\"",
        "<FlatWorldGenerator\n                        forceReset=\"maybe\"",
    ));
    assert!(
        matches!(
            error,
            MissionError::Read(malmo_bridge::ReadError::BadValue { .. })
        ),
        "{error}"
    );

    let error = parse(&text.replace("Mission", "Mishun"));
    assert!(
        matches!(
            error,
            MissionError::Read(malmo_bridge::ReadError::WrongRoot { .. })
        ),
        "{error}"
    );

    let error = parse(
        &edit(&text, "<BuildBattleDecorator>", "<BuildBattleDecoratorX>").replacen(
            "</BuildBattleDecorator>",
            "</BuildBattleDecoratorX>",
            1,
        ),
    );
    assert!(
        matches!(
            &error,
            MissionError::Read(malmo_bridge::ReadError::MissingElement {
                element: "BuildBattleDecorator",
                ..
            })
        ),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------
// MissionInit

const EXPERIMENT: &str = "5f0c1e8a-3b7d-4c55-9a51-7f0e2d6b9c11";

#[test]
fn agenthost_mission_inits_parse_and_render_back_byte_for_byte() {
    let cases = [
        ("missioninit_2p", SCENARIOS[0].0, 2),
        ("missioninit_2p_spectator", SCENARIOS[1].0, 3),
    ];
    for (prefix, scenario, roles) in cases {
        let mission = mission_from_inputs(scenario);
        for role in 0..roles {
            let text = example(&format!("{prefix}.role{role}.sent_by_agenthost.xml"));
            let init =
                MissionInit::parse(&text).unwrap_or_else(|e| panic!("{prefix} role {role}: {e}"));
            assert_eq!(init.mission, mission.document(Role(role)));
            assert_eq!(init.experiment_id.as_str(), EXPERIMENT);
            assert_eq!(init.role, Role(role));
            assert_eq!(init.server.is_some(), role > 0);
            assert_eq!(
                init.connection.client_mission_control_port,
                10000 + role as u16
            );
            assert_eq!(init.connection.client_commands_port, 0);
            assert_eq!(
                init.connection.agent_ports.video != 0,
                Some(Role(role)) == mission.spectator_role()
            );
            assert_same_text(
                &init.render(MissionInitForm::AgentHost),
                &text,
                &format!("{prefix} role {role}"),
            );
        }
    }
    // The 1-player mission has no inputs file; it must still round-trip.
    let text = example("missioninit_1p.role0.sent_by_agenthost.xml");
    let init = MissionInit::parse(&text).unwrap();
    assert_eq!(init.mission.mission.players().len(), 1);
    assert_eq!(init.mission.mission.players()[0].kind, PlayerKind::Human);
    assert_same_text(&init.render(MissionInitForm::AgentHost), &text, "1p");
}

#[test]
fn recommended_mission_init_renders_byte_for_byte() {
    let sent = MissionInit::parse(&example("missioninit_2p.role1.sent_by_agenthost.xml")).unwrap();
    let recommended = example("missioninit_2p.role1.recommended.xml");
    assert_same_text(
        &sent.render(MissionInitForm::Compact),
        &recommended,
        "recommended",
    );
    assert_eq!(MissionInit::parse(&recommended).unwrap(), sent);
}

#[test]
fn the_mods_jaxb_echo_parses_with_the_fields_the_mod_filled_in() {
    let sent = MissionInit::parse(&example("missioninit_1p.role0.sent_by_agenthost.xml")).unwrap();
    let echo =
        MissionInit::parse(&example("missioninit_1p.role0.returned_by_mod_jaxb.xml")).unwrap();
    assert_eq!(
        echo.mission, sent.mission,
        "JAXB reorders attributes and bounds only"
    );
    assert_eq!(echo.connection.client_commands_port, 11000);
    assert_eq!(echo.connection.agent_address, "localhost");
    assert_eq!(echo.connection.agent_ports, sent.connection.agent_ports);
    assert_eq!(echo.experiment_id, sent.experiment_id);
    assert_eq!(echo.platform_version, "0.38.0");
    assert_eq!(echo.schema_version, "");
    assert_eq!(echo.mission.reset, WorldReset::Force);
}

#[test]
fn malformed_mission_inits_give_typed_errors() {
    let text = example("missioninit_2p.role1.recommended.xml");
    let parse = |t: &str| MissionInit::parse(t).unwrap_err();
    let error = parse(&edit(&text, " PlatformVersion=\"0.38.0\"", ""));
    assert!(
        matches!(
            &error,
            MissionInitError::Read(malmo_bridge::ReadError::MissingAttribute {
                attribute: "PlatformVersion",
                ..
            })
        ),
        "{error}"
    );
    let error = parse(&edit(
        &text,
        "<ClientRole>1</ClientRole>",
        "<ClientRole>one</ClientRole>",
    ));
    assert!(
        matches!(&error, MissionInitError::Read(malmo_bridge::ReadError::BadValue { path, .. }) if path.ends_with("ClientRole")),
        "{error}"
    );
    let error = parse(&edit(&text, "port=\"60393\"", "port=\"70000\""));
    assert!(
        matches!(
            error,
            MissionInitError::Read(malmo_bridge::ReadError::BadValue { .. })
        ),
        "{error}"
    );
    let error = parse(&edit(
        &text,
        "<ExperimentUID>5f0c1e8a-3b7d-4c55-9a51-7f0e2d6b9c11</ExperimentUID>",
        "",
    ));
    assert!(
        matches!(
            &error,
            MissionInitError::Read(malmo_bridge::ReadError::MissingElement {
                element: "ExperimentUID",
                ..
            })
        ),
        "{error}"
    );
    let error = parse(&edit(
        &text,
        "<Weather>clear</Weather>",
        "<Weather>thunder</Weather>",
    ));
    assert!(matches!(error, MissionInitError::Mission(_)), "{error}");
    let error = parse(&edit(
        &text,
        "<ClientRole>1</ClientRole>",
        "<ClientRole>5</ClientRole>",
    ));
    assert!(
        matches!(
            error,
            MissionInitError::RoleOutOfRange {
                role: Role(5),
                agents: 2
            }
        ),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------
// MissionEnded

#[test]
fn mission_ended_examples_parse_and_render_back() {
    for (file, status) in [
        ("missionended_ENDED.jaxb.xml", MissionEndedStatus::Ended),
        (
            "missionended_MOD_FAILED_TO_CREATE_WORLD.constructed.xml",
            MissionEndedStatus::ModFailedToCreateWorld,
        ),
    ] {
        let text = example(file);
        let ended = MissionEnded::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(ended.status, status);
        assert_eq!(ended.render(), text, "{file}");
    }
    let failed = MissionEnded::parse(&example(
        "missionended_MOD_FAILED_TO_CREATE_WORLD.constructed.xml",
    ))
    .unwrap();
    assert_eq!(
        failed.human_readable_status,
        "Server world-creation handler failed to create a world: test"
    );
    assert!(failed.status.is_abnormal());
    assert!(!MissionEndedStatus::PlayerDied.is_abnormal());
}

/// MissionEnded documents with every status, a reward and video diagnostics.
fn varied_mission_endeds() -> Vec<MissionEnded> {
    use malmo_bridge::mission_ended::{
        Decimal, MissionDiagnostics, Reward, RewardValue, VideoData,
    };
    MissionEndedStatus::ALL
        .into_iter()
        .enumerate()
        .map(|(k, status)| MissionEnded {
            status,
            human_readable_status: if k % 2 == 0 {
                String::new()
            } else {
                format!("MALMO_AGENT_NOT_RESPONDING;\nquit <{k}> & \"done\"")
            },
            reward: (k % 3 == 1).then(|| Reward {
                values: vec![
                    RewardValue {
                        dimension: 0,
                        value: "1.5".parse::<Decimal>().unwrap(),
                    },
                    RewardValue {
                        dimension: 2,
                        value: "-0.25".parse().unwrap(),
                    },
                ],
            }),
            diagnostics: MissionDiagnostics {
                video: if k % 4 == 3 {
                    vec![VideoData {
                        frame_type: "VIDEO".into(),
                        frames_sent: 1200,
                        average_fps_sent: "19.87".parse().unwrap(),
                        frames_received: Some(1190),
                        frames_written: None,
                    }]
                } else {
                    Vec::new()
                },
            },
        })
        .collect()
}

#[test]
fn every_status_round_trips() {
    let statuses: Vec<&str> = MissionEndedStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(statuses.len(), 11);
    // Every status of the schema, and nothing else.
    let xsd = std::fs::read_to_string(malmo_dir().join("schemas/MissionEnded.xsd")).unwrap();
    let in_xsd: Vec<&str> = xsd
        .split("<xs:enumeration value=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert_eq!(statuses, in_xsd);
    for ended in varied_mission_endeds() {
        let text = ended.render();
        assert_eq!(MissionEnded::parse(&text).unwrap(), ended, "{text}");
    }
}

#[test]
fn malformed_mission_endeds_give_typed_errors() {
    let text = example("missionended_ENDED.jaxb.xml");
    let error =
        MissionEnded::parse(&text.replace("ENDED</Status>", "FINISHED</Status>")).unwrap_err();
    assert!(
        matches!(&error, MissionEndedError::UnknownStatus(s) if s == "FINISHED"),
        "{error}"
    );
    // MalmoPython refuses a MissionEnded without MissionDiagnostics; so do we.
    let error = MissionEnded::parse(&text.replace("<MissionDiagnostics/>", "")).unwrap_err();
    assert!(
        matches!(
            &error,
            MissionEndedError::Read(malmo_bridge::ReadError::MissingElement {
                element: "MissionDiagnostics",
                ..
            })
        ),
        "{error}"
    );
    let error = MissionEnded::parse("<MissionInit/>").unwrap_err();
    assert!(
        matches!(
            error,
            MissionEndedError::Read(malmo_bridge::ReadError::WrongRoot { .. })
        ),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------
// xmllint

/// `xmllint`, or `None` after saying loudly that the validation is skipped.
fn xmllint() -> Option<&'static str> {
    let found = Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        // Straight to the stderr handle, which the test harness does not capture,
        // so the skip shows in every run.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: xmllint not found; run scripts/setup (installs Debian libxml2-utils)"
        );
        return None;
    }
    Some("xmllint")
}

/// Validates each `(name, text)` against `schema` in one xmllint run.
fn validate(xmllint: &str, schema: &str, documents: &[(String, String)]) {
    let (ok, report) = run_xmllint(xmllint, schema, documents);
    let names: Vec<&str> = documents.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        ok,
        "xmllint rejects some of {names:?} against {schema}:\n{report}"
    );
    assert_eq!(
        report.matches(" validates").count(),
        documents.len(),
        "{report}"
    );
}

/// Runs xmllint on the documents: (all valid, its report).
fn run_xmllint(xmllint: &str, schema: &str, documents: &[(String, String)]) -> (bool, String) {
    let dir = tempdir();
    let files: Vec<PathBuf> = documents
        .iter()
        .enumerate()
        .map(|(k, (_, text))| {
            let path = dir.join(format!("doc{k}.xml"));
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
    let output = Command::new(xmllint)
        .arg("--noout")
        .arg("--schema")
        // A canonical path: with `..` in it, libxml2 loads Mission.xsd twice through
        // the schemas' circular includes and refuses the duplicate declarations.
        .arg(
            malmo_dir()
                .join("schemas")
                .join(schema)
                .canonicalize()
                .unwrap(),
        )
        .args(&files)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A fresh temporary folder (std only: the crate has no tempfile dependency).
fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "malmo-bridge-xsd-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn all_missions() -> Vec<(&'static str, Mission)> {
    let mut missions: Vec<(&'static str, Mission)> = SCENARIOS
        .iter()
        .map(|(scenario, _)| (*scenario, mission_from_inputs(scenario)))
        .collect();
    missions.extend(varied_missions());
    missions
}

#[test]
fn generated_missions_validate_against_the_mission_xsd() {
    let Some(xmllint) = xmllint() else { return };
    let mut documents = Vec::new();
    for (what, mission) in all_missions() {
        for role in mission.roles() {
            documents.push((format!("{what} role {role}"), mission.to_xml(role)));
        }
    }
    validate(xmllint, "Mission.xsd", &documents);
}

fn connection_for(role: u32, video: bool) -> malmo_bridge::mission_init::ClientAgentConnection {
    use malmo_bridge::mission_init::{AgentPorts, ClientAgentConnection};
    ClientAgentConnection {
        client_address: "127.0.0.1".into(),
        client_mission_control_port: 10000 + role as u16,
        client_commands_port: 0,
        agent_address: "127.0.0.1".into(),
        agent_ports: AgentPorts {
            mission_control: 12000 + role as u16,
            video: if video { 12100 + role as u16 } else { 0 },
            depth: 0,
            luminance: 0,
            observations: 12200 + role as u16,
            rewards: 12300 + role as u16,
            colour_map: 0,
        },
    }
}

#[test]
fn generated_mission_inits_validate_against_the_mission_init_xsd() {
    use malmo_bridge::mission_init::{ExperimentId, ServerConnection};
    let Some(xmllint) = xmllint() else { return };
    let mut documents = Vec::new();
    for (what, mission) in all_missions() {
        for role in mission.roles() {
            let init = MissionInit::new(
                mission.document(role),
                ExperimentId::new(EXPERIMENT).unwrap(),
                role,
                connection_for(role.0, Some(role) == mission.spectator_role()),
            )
            .with_server((role.0 > 0).then(|| ServerConnection {
                address: "127.0.0.1".into(),
                port: 43663,
            }));
            let compact = init.render(MissionInitForm::Compact);
            assert_eq!(MissionInit::parse(&compact).unwrap(), init, "{what}");
            let agenthost = init.render(MissionInitForm::AgentHost);
            assert_eq!(MissionInit::parse(&agenthost).unwrap(), init, "{what}");
            documents.push((format!("{what} role {role}"), compact));
            // Role 0 has no server connection, so the AgentHost form has no
            // `port=" N"` and passes xmllint too (PROTOCOL.md §3.2).
            if role.0 == 0 {
                documents.push((format!("{what} role 0, AgentHost form"), agenthost));
            }
        }
    }
    validate(xmllint, "MissionInit.xsd", &documents);
}

#[test]
fn xmllint_rejects_the_agenthosts_padded_port_as_documented() {
    // Shows that the validation above has teeth: the AgentHost's own bytes for
    // role 1 fail on `port=" 60393"` (PROTOCOL.md §3.2).
    let Some(xmllint) = xmllint() else { return };
    let init = MissionInit::parse(&example("missioninit_2p.role1.sent_by_agenthost.xml")).unwrap();
    let (ok, report) = run_xmllint(
        xmllint,
        "MissionInit.xsd",
        &[(
            "role 1, AgentHost form".into(),
            init.render(MissionInitForm::AgentHost),
        )],
    );
    assert!(!ok && report.contains("port"), "{report}");
}

#[test]
fn generated_mission_endeds_validate_against_the_mission_ended_xsd() {
    let Some(xmllint) = xmllint() else { return };
    let documents: Vec<(String, String)> = varied_mission_endeds()
        .into_iter()
        .map(|e| (e.status.as_str().to_owned(), e.render()))
        .collect();
    validate(xmllint, "MissionEnded.xsd", &documents);
}

#[test]
fn the_shared_examples_validate_as_documented() {
    let Some(xmllint) = xmllint() else { return };
    let dir = malmo_dir().join("examples");
    let read = |name: &str| (name.to_owned(), example(name));
    let missions: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("mission_") && n.contains(".role"))
        .map(|n| read(&n))
        .collect();
    assert_eq!(missions.len(), 7);
    validate(xmllint, "Mission.xsd", &missions);
    validate(
        xmllint,
        "MissionInit.xsd",
        &[
            read("missioninit_2p.role1.recommended.xml"),
            read("missioninit_1p.role0.returned_by_mod_jaxb.xml"),
        ],
    );
}
