//! Recordings: the writer and reader round trip, files cut as `kill -9` leaves
//! them, corrupt lines named, tampered recordings caught, the samples verify, and
//! the whole shared human dataset converts and verifies with zero mismatches.

use std::path::{Path, PathBuf};
use std::time::Instant;

use mbag::agents::spec::AgentSpec;
use mbag::recording::codec::Float;
use mbag::recording::convert::{convert_human_episode, human_episode_files};
use mbag::recording::simulate::record_simulated;
use mbag::recording::{Recording, RecordingError, SnapshotMode, verify};
use mbag::sim::config::Config;
use mbag::sim::goal::GoalConfig;
use serde_json::json;

fn simulate(dir: &Path, steps: u64, mode: SnapshotMode) -> PathBuf {
    let config = Config::from_json(&json!({
        "num_players": 2,
        "horizon": 500,
        "world_size": [6, 6, 6],
        "rewards": {"place_wrong": -1},
        "players": [{}, {}],
        "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
    }))
    .unwrap();
    let mut goals = GoalConfig::from_env("tutorial", &json!({}))
        .unwrap()
        .build()
        .unwrap();
    let specs: Vec<AgentSpec> = ["heuristic:lowest_block", "heuristic:random"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let path = dir.join("sim.jsonl");
    let written = record_simulated(&path, &config, goals.as_mut(), &specs, 7, steps, mode).unwrap();
    assert!(written > 10, "only {written} steps");
    path
}

fn verify_path(path: &Path) -> mbag::recording::VerifyReport {
    let rec = Recording::read(path).unwrap();
    verify(&rec, &mut |_, _| {}).unwrap()
}

#[test]
fn written_recordings_read_back_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = simulate(dir.path(), 60, SnapshotMode::ChangesAndHash);
    let rec = Recording::read(&path).unwrap();
    assert_eq!(rec.header.format, "mbag-recording/1");
    assert_eq!(rec.header.mbag_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(
        rec.header.players[1].agent.as_deref(),
        Some("heuristic:random")
    );
    let footer = rec.footer.as_ref().expect("finished");
    assert_eq!(footer.steps as usize, rec.steps.len());
    assert!(rec.tail.is_none());
    assert!(
        rec.steps
            .iter()
            .all(|s| s.state.as_ref().is_some_and(|st| st.sha256.is_some()))
    );
    let report = verify(&rec, &mut |_, _| {}).unwrap();
    assert!(report.passed(), "{:?}", report.mismatches);
    assert_eq!(report.states_checked, rec.steps.len());

    // Archived copies read the same.
    let gz = dir.path().join("sim.jsonl.gz");
    mbag::recording::gzip_file(&path, &gz).unwrap();
    let again = Recording::read(&gz).unwrap();
    assert_eq!(again.steps, rec.steps);
    assert_eq!(again.header, rec.header);
}

#[test]
fn a_file_cut_anywhere_keeps_every_complete_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = simulate(dir.path(), 40, SnapshotMode::Changes);
    let bytes = std::fs::read(&path).unwrap();
    let line_ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let cut_path = dir.path().join("cut.jsonl");
    // Cut points every 97 bytes, plus each line boundary and one byte either side.
    let mut cuts: Vec<usize> = (line_ends[0]..bytes.len()).step_by(97).collect();
    for &end in &line_ends {
        cuts.extend([end - 1, end, end + 1]);
    }
    for cut in cuts
        .into_iter()
        .filter(|&c| c >= line_ends[0] && c <= bytes.len())
    {
        std::fs::write(&cut_path, &bytes[..cut]).unwrap();
        let rec = Recording::read(&cut_path).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        // Step lines are lines 2..total-1; one is read when its bytes up to the
        // newline survive (a line cut just before its newline is still whole).
        let total = line_ends.len();
        let steps_expected = line_ends[1..total - 1]
            .iter()
            .filter(|&&end| end - 1 <= cut)
            .count();
        assert_eq!(rec.steps.len(), steps_expected, "cut at {cut}");
        let complete = line_ends.iter().filter(|&&e| e <= cut).count();
        let partial = cut > line_ends[complete - 1] && line_ends[complete] - 1 != cut;
        assert_eq!(rec.tail.is_some(), partial, "cut at {cut}");
        assert_eq!(rec.footer.is_some(), cut + 1 >= bytes.len(), "cut at {cut}");
        if let Some(tail) = &rec.tail {
            assert_eq!(tail.line, complete + 1, "cut at {cut}");
        }
        let report = verify(&rec, &mut |_, _| {}).unwrap();
        assert!(report.passed(), "cut at {cut}: {:?}", report.mismatches);
    }
    // Cut inside the header: a clear error, not a panic.
    std::fs::write(&cut_path, &bytes[..line_ends[0] / 2]).unwrap();
    let err = Recording::read(&cut_path).unwrap_err();
    assert!(err.to_string().contains("no complete header"), "{err}");
}

#[test]
fn a_corrupt_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = simulate(dir.path(), 30, SnapshotMode::Changes);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[5] = lines[5].replacen("\"r\":[", "\"r\":[\"lots\",", 1);
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let err = Recording::read(&bad).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, RecordingError::Field { line: 6, .. }),
        "{message}"
    );
    assert!(
        message.contains("bad.jsonl:6") && message.contains('r'),
        "{message}"
    );

    // Broken JSON in the middle is an error too, not a truncated tail.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[3].truncate(20);
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let err = Recording::read(&bad).unwrap_err();
    assert!(err.to_string().contains("bad.jsonl:4"), "{err}");
}

#[test]
fn verify_catches_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let path = simulate(dir.path(), 40, SnapshotMode::Changes);
    let clean = Recording::read(&path).unwrap();

    let mut rec = clean.clone();
    rec.steps[4].r[0] = Float(rec.steps[4].r[0].0 + 1.0);
    let report = verify(&rec, &mut |_, _| {}).unwrap();
    let m = &report.mismatches[0];
    assert_eq!((m.line, m.field.as_str()), (6, "r[0]"), "{m}");

    let mut rec = clean.clone();
    let k = rec
        .steps
        .iter()
        .position(|s| s.state.as_ref().is_some_and(|st| !st.cells.is_empty()))
        .unwrap();
    let cell = &mut rec.steps[k].state.as_mut().unwrap().cells[0];
    cell[3] = (cell[3] + 1) % 10;
    let report = verify(&rec, &mut |_, _| {}).unwrap();
    let m = &report.mismatches[0];
    assert_eq!(m.line, k + 2, "{m}");
    assert!(m.field.starts_with("state.blocks"), "{m}");
    assert_eq!(
        report.steps_replayed,
        k + 1,
        "replay stops at the state mismatch"
    );

    let mut rec = clean.clone();
    rec.steps[2].state.as_mut().unwrap().pos[1][0] += 1.0;
    let report = verify(&rec, &mut |_, _| {}).unwrap();
    assert_eq!(report.mismatches[0].field, "state.pos[1]");

    let mut rec = clean;
    rec.steps[3].e[0] = rec.steps[3].a[1];
    let report = verify(&rec, &mut |_, _| {}).unwrap();
    assert!(!report.passed());
}

#[test]
fn the_samples_verify() {
    let dir = PathBuf::from("recordings/samples");
    let files = mbag::recording::reader::collect_files(&[dir]).unwrap();
    assert!(files.len() >= 3, "{files:?}");
    for f in &files {
        assert!(
            std::fs::metadata(f).unwrap().len() < 200_000,
            "{} is too big",
            f.display()
        );
        let report = verify_path(f);
        assert!(report.passed(), "{}: {:?}", f.display(), report.mismatches);
        assert!(report.steps_replayed > 0);
        let killed = f.to_string_lossy().contains("killed");
        assert_eq!(report.tail.is_some(), killed, "{}", f.display());
        assert_eq!(report.finished, !killed, "{}", f.display());
    }
}

#[test]
fn the_shared_human_data_converts_and_verifies_with_zero_mismatches() {
    let start = Instant::now();
    let files = human_episode_files(Path::new("../shared/data/human")).unwrap();
    assert_eq!(files.len(), 22);
    let out = tempfile::tempdir().unwrap();
    let (mut steps, mut sync_steps) = (0, 0);
    for f in &files {
        let converted = convert_human_episode(f, out.path(), false).unwrap();
        let report = verify_path(&converted.path);
        assert!(
            report.passed(),
            "{}: {}",
            converted.episode_id,
            report
                .mismatches
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(report.steps_replayed, converted.steps);
        assert!(report.finished && report.tail.is_none());
        steps += report.steps_replayed;
        sync_steps += report.sync_steps;
    }
    // The data README's counts: 22,971 lines, sync edits on 267 of them.
    assert_eq!(steps, 22_971);
    assert_eq!(sync_steps, 267);
    eprintln!(
        "converted and verified 22 human episodes ({steps} steps) in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn the_writer_refuses_what_the_format_forbids() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recording::read(&simulate(dir.path(), 20, SnapshotMode::Changes)).unwrap();
    let gz = dir.path().join("live.jsonl.gz");
    let err =
        mbag::recording::RecordingWriter::create(&gz, &rec.header, Default::default()).unwrap_err();
    assert!(err.to_string().contains("uncompressed"), "{err}");
    let path = dir.path().join("live.jsonl");
    let mut w = mbag::recording::RecordingWriter::create(
        &path,
        &rec.header,
        mbag::recording::Fsync::EveryLine,
    )
    .unwrap();
    w.append(&rec.steps[0]).unwrap();
    let err = w.append(&rec.steps[2]).unwrap_err();
    assert!(err.to_string().contains("t = 1 was expected"), "{err}");
    // What was appended is readable at once, before any footer.
    let partial = Recording::read(&path).unwrap();
    assert_eq!(partial.steps.len(), 1);
    assert!(partial.footer.is_none() && partial.tail.is_none());
    let err = w.finish(rec.footer.as_ref().unwrap()).unwrap_err();
    assert!(err.to_string().contains("footer says"), "{err}");
}

/// A recording of tuples the reference accepts but no agent produces: unknown
/// types, fields out of range that the type ignores, a block id out of range where
/// it is a no-op, a skipped player's location outside the world.
#[test]
fn tuples_outside_the_ten_types_round_trip_and_verify() {
    use mbag::recording::codec::ActionRecord;
    use mbag::recording::header::{Controller, PlayerEntry, Role, Source, SourceKind};
    use mbag::recording::{EndReason, EndRecord, EpisodeRecorder, Fsync, RecordingWriter};
    use mbag::sim::action::ActionTuple;
    use mbag::sim::coords::Cell;
    use mbag::sim::env::Env;
    use rand::SeedableRng;

    let config = Config::from_json(&json!({
        "num_players": 2,
        "horizon": 100,
        "world_size": [6, 6, 6],
        "rewards": {"noop": -0.5, "action": 0.25, "place_wrong": -1},
        "players": [{}, {"timestep_skip": 2}],
        "abilities": {"teleportation": false, "flying": true, "inf_blocks": false},
    }))
    .unwrap();
    let mut goals = GoalConfig::from_env("tutorial", &json!({}))
        .unwrap()
        .build()
        .unwrap();
    let mut env = Env::new(config);
    env.reset(goals.as_mut(), &mut rand::rngs::StdRng::seed_from_u64(3))
        .unwrap();
    let size = env.size();
    let at = |x, y, z| size.index(Cell::new(x, y, z)).get() as i64;
    let outside = size.num_cells() as i64 + 1000;
    let steps = [
        [(10, 5, 300), (2, at(1, 1, 1), -7)],
        [(-1, 0, 0), (1, outside, 2)],
        [(1, at(2, 2, 2), 300), (i64::MAX, 3, 3)],
        [(2, at(0, 1, 1), 77), (0, -4, 99)],
        [(3, 0, -1), (i64::MIN, 0, i64::MIN)],
    ];
    let players = (0..2)
        .map(|p| PlayerEntry {
            index: p,
            role: if p == 0 { Role::Human } else { Role::Assistant },
            controller: Controller::Agent,
            agent: None,
            models: Vec::new(),
            note: None,
        })
        .collect();
    let source = Source {
        kind: SourceKind::Simulated,
        description: Some("odd tuples".into()),
        origin: None,
    };
    let (mut recorder, header) = EpisodeRecorder::start(
        &env,
        "odd_tuples".into(),
        source,
        players,
        SnapshotMode::ChangesAndHash,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.jsonl");
    let mut writer = RecordingWriter::create(&path, &header, Fsync::HeaderAndFooter).unwrap();
    let mut took_effect = 0;
    for step in steps {
        let tuples = step.map(|(t, l, b)| ActionTuple::new(t, l, b));
        let outcome = env.step_tuples(&tuples).unwrap().clone();
        took_effect += outcome
            .infos
            .iter()
            .filter(|i| i.action_tuple() != ActionTuple::NOOP)
            .count();
        writer
            .append(&recorder.step(&env, &tuples, &outcome))
            .unwrap();
    }
    assert!(
        took_effect >= 2,
        "the breaks with odd block ids took effect"
    );
    let end = EndRecord {
        reason: EndReason::Truncated,
        message: None,
    };
    writer.finish(&recorder.footer(&env, end)).unwrap();

    let rec = Recording::read(&path).unwrap();
    for (step, tuples) in rec.steps.iter().zip(steps) {
        for (a, (t, l, b)) in step.a.iter().zip(tuples) {
            assert_eq!(a.to_tuple(size), Ok(ActionTuple::new(t, l, b)), "{a:?}");
        }
    }
    assert_eq!(rec.steps[0].a[0], ActionRecord(10, 0, 0, 5, 300, None));
    assert_eq!(rec.steps[0].e[0], ActionRecord(0, 0, 0, 0, 0, Some(0)));
    let report = verify(&rec, &mut |_, _| {}).unwrap();
    assert!(report.passed(), "{:?}", report.mismatches);
    assert_eq!(report.states_checked, steps.len());

    // Turning the first unknown type into a move changes the position and the
    // reward: the replay sees it.
    let mut tampered = rec.clone();
    tampered.steps[0].a[0] = ActionRecord(7, 0, 0, 0, 0, None);
    let report = verify(&tampered, &mut |_, _| {}).unwrap();
    assert!(!report.passed());

    // A player who acts with a location outside the world is an error naming the
    // line and the player's field.
    let mut tampered = rec;
    tampered.steps[2].a[1] = ActionRecord(1, 6, 0, 0, 2, None);
    let err = verify(&tampered, &mut |_, _| {}).unwrap_err();
    match &err {
        RecordingError::Field {
            line,
            field,
            message,
            ..
        } => {
            assert_eq!((*line, field.as_str()), (4, "a[1]"), "{err}");
            assert!(message.contains("location index 216 is outside"), "{err}");
        }
        other => panic!("expected a field error, got {other}"),
    }
}
