//! Every public golden episode replays exactly, and broken golden files give errors
//! that name the file, line and field.

use std::io::Write;
use std::path::{Path, PathBuf};

use mbag::golden::agents::{AgentCheckStats, count_reference_records};
use mbag::golden::episode::replay;
use mbag::golden::format::{GoldenEpisode, GoldenError, collect_episode_files};

fn episodes_dir() -> PathBuf {
    PathBuf::from("../shared/reference/golden/episodes")
}

#[test]
fn all_public_golden_episodes_match_the_reference() {
    let files = collect_episode_files(&[episodes_dir()]).expect("golden folder readable");
    // New goldens generated the same way may join the 47 this was written with; they
    // must pass too, so the counts below are floors, not exact figures.
    assert!(
        files.len() >= 47,
        "expected at least the 47 public golden episodes, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    let mut steps = 0;
    let mut agent_checks = AgentCheckStats::default();
    let mut agent_records = 0;
    for file in &files {
        let ep = GoldenEpisode::read(file).expect("golden file parses");
        let report = replay(&ep).expect("golden file replays");
        steps += report.steps;
        agent_records += count_reference_records(&ep);
        agent_checks += report.agent_checks;
        if let Some(m) = report.mismatch {
            failures.push(format!("{}: {m}", report.episode_id));
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
    assert!(steps >= 7_629, "{steps} steps replayed");
    // Every reference agent's record was compared, so the agent checks cannot pass
    // by skipping: at least the 2,101 records of the first 18 episodes with
    // reference agents.
    assert!(agent_records >= 2_101, "{agent_records} agent records");
    assert_eq!(agent_checks.records, agent_records);
    // Summing in numpy's order makes every recorded probability bit-identical, not
    // just within the 1e-12 the check allows.
    assert!(agent_checks.probabilities > 70_000, "{agent_checks:?}");
    assert_eq!(
        agent_checks.probabilities_exact, agent_checks.probabilities,
        "{agent_checks:?}"
    );
}

/// The lines of a golden episode, decompressed.
fn lines_of(name: &str) -> Vec<String> {
    let file = std::fs::File::open(episodes_dir().join(name)).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text).unwrap();
    text.lines().map(str::to_owned).collect()
}

/// Replays `name` with `from` replaced by `to` on line `line` (0 = header) and
/// returns the first mismatch.
fn tampered_mismatch(
    name: &str,
    line: usize,
    from: &str,
    to: &str,
) -> mbag::golden::compare::Mismatch {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = lines_of(name);
    assert!(lines[line].contains(from), "fixture changed: {from}");
    lines[line] = lines[line].replacen(from, to, 1);
    let path = write_lines(dir.path(), "tampered.jsonl", &lines);
    let report = replay(&GoldenEpisode::read(&path).unwrap()).unwrap();
    report.mismatch.expect("tampering is detected")
}

#[test]
fn tampered_agent_records_are_mismatches() {
    // A hardcoded agent's command counter.
    let m = tampered_mismatch(
        "p01_hc_builder.jsonl.gz",
        1,
        r#""agent_info":[{"state":[[1]]}]"#,
        r#""agent_info":[{"state":[[2]]}]"#,
    );
    assert_eq!((m.step, m.field.as_str()), (Some(0), "agent_info[0].state"));
    // A LowestBlockAgent probability.
    let m = tampered_mismatch(
        "p06_lowest_block_overhang.jsonl.gz",
        3,
        "[[493,0.5],[553,0.5]]",
        "[[493,0.5],[553,0.5000000001]]",
    );
    assert_eq!(m.step, Some(2));
    assert!(m.field.starts_with("agent_info[0].flat_dist[1]"), "{m}");
    // A sampled action the agent's distribution gives no mass to.
    let m = tampered_mismatch(
        "p06_lowest_block_overhang.jsonl.gz",
        1,
        r#""tuple":[2,37,0],"xyz":[1,1,2],"block_id":0,"type_name":"BREAK_BLOCK","flat":1538"#,
        r#""tuple":[2,36,0],"xyz":[1,1,1],"block_id":0,"type_name":"BREAK_BLOCK","flat":1537"#,
    );
    assert_eq!(m.step, Some(0));
    assert!(m.field.starts_with("actions[0] (probability"), "{m}");
    // The priority queue's contents.
    let m = tampered_mismatch(
        "p14_priority_queue_basic.jsonl.gz",
        2,
        "[[1,[1,2]],[1,[1,3]]",
        "[[1,[1,3]],[1,[1,2]]",
    );
    assert_eq!(
        (m.step, m.field.as_str()),
        (Some(1), "agent_info[0].state.frontier_sorted")
    );
    // A record that goes missing.
    let m = tampered_mismatch(
        "p01_hc_builder.jsonl.gz",
        3,
        r#""agent_info":[{"state":[[3]]}]"#,
        r#""agent_info":[null]"#,
    );
    assert_eq!((m.step, m.field.as_str()), (Some(2), "agent_info[0]"));
    // A deterministic agent whose recorded action (consistently tampered, so the env
    // side still matches) differs from what it would do.
    let m = tampered_mismatch(
        "p01_hc_builder.jsonl.gz",
        1,
        r#""tuple":[6,0,0],"xyz":[0,0,0],"block_id":0,"type_name":"MOVE_NEG_Y","flat":1654"#,
        r#""tuple":[5,0,0],"xyz":[0,0,0],"block_id":0,"type_name":"MOVE_POS_Y","flat":1653"#,
    );
    assert_eq!(m.step, Some(0));
    assert!(m.field.starts_with("actions[0].tuple (agent"), "{m}");
}

#[test]
fn an_unknown_agent_class_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = lines_of("p01_hc_builder.jsonl.gz");
    lines[0] = lines[0].replace("\"HardcodedBuilderAgent\"", "\"HardcodedBuilderAgnet\"");
    let path = write_lines(dir.path(), "agent.jsonl", &lines);
    let err = replay(&GoldenEpisode::read(&path).unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("HardcodedBuilderAgnet") && text.contains("agents[0]"),
        "{text}"
    );
}

/// The lines of a small golden episode, decompressed.
fn sample_lines() -> Vec<String> {
    lines_of("p01_hc_builder.jsonl.gz")
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
fn an_unknown_action_type_is_replayed_not_refused() {
    // The reference accepts any type id as a no-op, so the replay takes the step;
    // the file's flat index and infos for the original tuple then differ.
    let m = tampered_mismatch(
        "p01_hc_builder.jsonl.gz",
        1,
        "\"tuple\":[6,0,0]",
        "\"tuple\":[10,0,0]",
    );
    assert_eq!(
        (m.step, m.field.as_str()),
        (Some(0), "actions[0].flat"),
        "{m}"
    );
    assert_eq!(m.got, "None", "{m}");
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
