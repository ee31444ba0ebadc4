//! Every public golden episode replays exactly, and broken golden files give errors
//! that name the file, line and field.

use std::io::Write;
use std::path::{Path, PathBuf};

use mbag::golden::episode::replay;
use mbag::golden::format::{GoldenEpisode, GoldenError, collect_episode_files};

fn episodes_dir() -> PathBuf {
    PathBuf::from("../shared/reference/golden/episodes")
}

#[test]
fn all_public_golden_episodes_match_the_reference() {
    let files = collect_episode_files(&[episodes_dir()]).expect("golden folder readable");
    assert_eq!(files.len(), 47, "expected the 47 public golden episodes");
    let mut failures = Vec::new();
    let mut steps = 0;
    for file in &files {
        let ep = GoldenEpisode::read(file).expect("golden file parses");
        let report = replay(&ep).expect("golden file replays");
        steps += report.steps;
        if let Some(m) = report.mismatch {
            failures.push(format!("{}: {m}", report.episode_id));
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
    assert_eq!(steps, 7_629);
}

/// The lines of a small golden episode, decompressed.
fn sample_lines() -> Vec<String> {
    let path = episodes_dir().join("p01_hc_builder.jsonl.gz");
    let file = std::fs::File::open(path).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text).unwrap();
    text.lines().map(str::to_owned).collect()
}

fn write_lines(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for line in lines {
        writeln!(f, "{line}").unwrap();
    }
    path
}

#[test]
fn a_truncated_episode_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let lines = sample_lines();
    let path = write_lines(dir.path(), "cut.jsonl", &lines[..5]);
    let err = GoldenEpisode::read(&path).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, GoldenError::Structure { .. }), "{text}");
    assert!(
        text.contains("cut.jsonl") && text.contains("no footer after 4 step lines"),
        "{text}"
    );
}

#[test]
fn a_cut_gzip_stream_is_an_io_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(episodes_dir().join("p01_hc_builder.jsonl.gz")).unwrap();
    let path = dir.path().join("cut.jsonl.gz");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = GoldenEpisode::read(&path).unwrap_err();
    assert!(err.to_string().contains("cut.jsonl.gz"), "{err}");
}

#[test]
fn a_malformed_field_names_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = sample_lines();
    lines[3] = lines[3].replace("\"timestep_before\":2", "\"timestep_before\":\"two\"");
    let path = write_lines(dir.path(), "bad.jsonl", &lines);
    let err = GoldenEpisode::read(&path).unwrap_err();
    match &err {
        GoldenError::Field { line, field, .. } => {
            assert_eq!(*line, 4);
            assert_eq!(field, "timestep_before");
        }
        other => panic!("expected a field error, got {other}"),
    }
}

#[test]
fn an_unknown_config_key_and_an_out_of_range_action_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = sample_lines();
    lines[0] = lines[0].replace("\"horizon\":25", "\"horizon\":25,\"horizn\":3");
    let path = write_lines(dir.path(), "key.jsonl", &lines);
    let err = replay(&GoldenEpisode::read(&path).unwrap()).unwrap_err();
    assert!(err.to_string().contains("horizn"), "{err}");

    let mut lines = sample_lines();
    lines[1] = lines[1].replace("\"tuple\":[6,0,0]", "\"tuple\":[6,150,0]");
    let path = write_lines(dir.path(), "action.jsonl", &lines);
    let err = replay(&GoldenEpisode::read(&path).unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(":2:") && text.contains("actions[0].tuple") && text.contains("outside"),
        "{text}"
    );
}

#[test]
fn a_tampered_reward_is_a_mismatch_at_its_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = sample_lines();
    // Step 4 of p01 places a block for +1; claim the reference paid 2.
    assert!(lines[5].contains("\"rewards\":[1.0]"), "fixture changed");
    lines[5] = lines[5].replace("\"rewards\":[1.0]", "\"rewards\":[2.0]");
    let path = write_lines(dir.path(), "tampered.jsonl", &lines);
    let report = replay(&GoldenEpisode::read(&path).unwrap()).unwrap();
    let m = report.mismatch.expect("tampering is detected");
    assert_eq!(m.step, Some(4));
    assert_eq!(m.field, "rewards[0]");
}
