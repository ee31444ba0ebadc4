//! The real MalmoPython traffic in `../shared/malmo/captures` through our codecs:
//! every command stream parses into typed commands and re-encodes byte for byte, and
//! every length-prefixed stream from the mod decodes completely.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine;
use malmo_bridge::command::Command;
use malmo_bridge::control::{ControlReply, ControlRequest};
use malmo_bridge::frame::{FrameDecoder, LineDecoder, encode_line};

fn captures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/malmo/captures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "expected the captures in {}",
        dir.display()
    );
    files
}

/// Per (channel, direction, connection), the concatenated bytes of a capture.
fn streams(path: &PathBuf) -> BTreeMap<(String, String, u64), Vec<u8>> {
    let mut out: BTreeMap<(String, String, u64), Vec<u8>> = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let channel = record["channel"].as_str().unwrap_or_default().to_owned();
        let dir = record["dir"].as_str().unwrap_or_default().to_owned();
        if dir == "event" || channel.is_empty() {
            continue;
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(record["b64"].as_str().unwrap())
            .unwrap();
        let conn = record["conn"].as_u64().unwrap_or(0);
        out.entry((channel, dir, conn)).or_default().extend(bytes);
    }
    out
}

#[test]
fn captured_command_streams_round_trip_through_typed_commands() {
    let mut commands = 0;
    for path in captures() {
        for ((channel, dir, _), bytes) in streams(&path) {
            if channel != "commands" || dir != "agent->mod" {
                continue;
            }
            let mut decoder = LineDecoder::new(10_000_000);
            decoder.push(&bytes);
            let mut again = Vec::new();
            while let Some(line) = decoder.next_line().unwrap() {
                let text = String::from_utf8(line).unwrap();
                let command: Command = text.parse().unwrap();
                assert!(
                    !matches!(command, Command::Other { .. }),
                    "{}: unrecognised command {text:?}",
                    path.display()
                );
                encode_line(command.to_string().as_bytes(), &mut again).unwrap();
                commands += 1;
            }
            assert_eq!(
                decoder.buffered(),
                0,
                "{}: unterminated command",
                path.display()
            );
            assert_eq!(again, bytes, "{}: command bytes differ", path.display());
        }
    }
    assert!(commands > 100, "only {commands} commands found");
}

#[test]
fn captured_mod_streams_decode_into_whole_frames() {
    let mut frames = 0;
    for path in captures() {
        for ((channel, dir, _), bytes) in streams(&path) {
            // Everything the mod sends is length-prefixed.
            if dir != "mod->agent" {
                continue;
            }
            let mut decoder = FrameDecoder::new(64 << 20);
            // One byte at a time, as the mod writes its control replies.
            for byte in &bytes {
                decoder.push(std::slice::from_ref(byte));
                while let Some(frame) = decoder.next_frame().unwrap() {
                    if channel == "obs" {
                        let obs = malmo_bridge::observation::Observation::parse(&frame)
                            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                        let original: serde_json::Value = serde_json::from_slice(&frame).unwrap();
                        assert_eq!(serde_json::to_value(&obs).unwrap(), original);
                    }
                    frames += 1;
                }
            }
            assert_eq!(
                decoder.buffered(),
                0,
                "{}: {channel} stream ends mid-frame",
                path.display()
            );
        }
    }
    assert!(frames > 100, "only {frames} frames found");
}

#[test]
fn captured_control_exchanges_parse_and_round_trip() {
    let (mut requests, mut replies) = (0, 0);
    for path in captures() {
        for ((channel, dir, _), bytes) in streams(&path) {
            if channel != "control" {
                continue;
            }
            if dir == "agent->mod" {
                let mut decoder = LineDecoder::new(10_000_000);
                decoder.push(&bytes);
                while let Some(line) = decoder.next_line().unwrap() {
                    let text = String::from_utf8(line).unwrap();
                    let request: ControlRequest = text
                        .parse()
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert_eq!(request.to_string(), text);
                    requests += 1;
                }
            } else {
                let mut decoder = FrameDecoder::new(1 << 20);
                decoder.push(&bytes);
                while let Some(frame) = decoder.next_frame().unwrap() {
                    let reply = ControlReply::parse(&frame);
                    assert!(
                        !matches!(reply, ControlReply::Unknown(_)),
                        "{}: unknown reply {reply}",
                        path.display()
                    );
                    assert_eq!(reply.to_string().as_bytes(), frame.as_slice());
                    replies += 1;
                }
            }
        }
    }
    assert!(
        requests >= 30 && replies >= 30,
        "{requests} requests, {replies} replies"
    );
}

/// Real observations: the 2023 tutorial recording and the four tutorial streams.
fn real_observations() -> Vec<(String, serde_json::Value)> {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let read = |path: PathBuf| {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text).unwrap();
        text
    };
    let mut out = Vec::new();
    let recording = shared.join("malmo/captures/real_mod_observations_tutorial_p1.jsonl.gz");
    for (i, line) in read(recording).lines().enumerate().skip(1) {
        let step: serde_json::Value = serde_json::from_str(line).unwrap();
        for o in step["malmo_observations"].as_array().unwrap() {
            out.push((format!("recording line {}", i + 1), o["json"].clone()));
        }
    }
    let dir = shared.join("data/malmo_observations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".full."))
    {
        for (i, line) in read(path.clone()).lines().enumerate().skip(1) {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            out.push((
                format!("{}:{}", path.display(), i + 1),
                record["obs"].clone(),
            ));
        }
    }
    out
}

#[test]
fn real_observations_parse_without_loss() {
    use malmo_bridge::observation::Observation;
    let observations = real_observations();
    assert!(
        observations.len() > 2_178 + 8_000,
        "found {}",
        observations.len()
    );
    let mut with_sight = 0;
    for (place, value) in &observations {
        let text = serde_json::to_vec(value).unwrap();
        let obs = Observation::parse(&text).unwrap_or_else(|e| panic!("{place}: {e}"));
        assert_eq!(
            &serde_json::to_value(&obs).unwrap(),
            value,
            "{place}: not lossless"
        );
        assert!(obs.grid("world").is_some(), "{place}: no world grid");
        assert!(obs.x.is_some() && obs.yaw.is_some(), "{place}: no position");
        with_sight += usize::from(obs.line_of_sight.is_some());
    }
    assert!(with_sight > 1000);
}

/// The fast decoder reads the same values as the lossless reader from every real
/// observation: positions, look, inventory, line of sight, commands, events, chat,
/// and each grid cell through NAME2ID.
#[test]
fn real_observations_decode_like_the_lossless_reader() {
    use malmo_bridge::block::Block;
    use malmo_bridge::decoded::DecodedObservation;
    use malmo_bridge::observation::Observation;
    for (place, value) in real_observations() {
        let text = serde_json::to_vec(&value).unwrap();
        let full = Observation::parse(&text).unwrap();
        let fast = DecodedObservation::decode(&text).unwrap_or_else(|e| panic!("{place}: {e}"));
        assert_eq!(fast.position, [full.x, full.y, full.z], "{place}");
        assert_eq!((fast.yaw, fast.pitch), (full.yaw, full.pitch), "{place}");
        assert_eq!(fast.name, full.name, "{place}");
        assert_eq!(fast.current_item_index, full.current_item_index, "{place}");
        assert_eq!(fast.line_of_sight, full.line_of_sight, "{place}");
        assert_eq!(
            fast.commands,
            full.commands.clone().unwrap_or_default(),
            "{place}"
        );
        let events: Vec<malmo_bridge::decoded::HumanEvent> = full
            .events
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|e| serde_json::from_value(e).unwrap())
            .collect();
        assert!(
            events
                .iter()
                .all(|e| !matches!(e, malmo_bridge::decoded::HumanEvent::Other(_))),
            "{place}"
        );
        assert_eq!(fast.events, events, "{place}");
        assert_eq!(fast.chat, full.chat.clone().unwrap_or_default(), "{place}");
        for name in ["world", "goal"] {
            let expected: Option<Vec<Option<Block>>> = full
                .grid(name)
                .map(|g| g.iter().map(|n| Block::from_observed_name(n)).collect());
            assert_eq!(
                fast.grid(name).map(<[_]>::to_vec),
                expected,
                "{place}: {name}"
            );
        }
        for slot in 0..41 {
            let expected = full.inventory_slot(slot);
            let got = fast.inventory.get(slot).cloned().flatten();
            assert_eq!(
                got.map(|s| (s.item, s.size)),
                expected.map(|s| (s.item, s.size)),
                "{place}: slot {slot}"
            );
        }
    }
}
