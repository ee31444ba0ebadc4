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
                while decoder.next_frame().unwrap().is_some() {
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
