//! `mbag dataset` on hand-built datasets: a folder with a copy under another
//! name, a reused episode id, a file cut by `kill -9`, a manifest entry whose
//! file is gone, an orphan and one episode split over two files is reported
//! problem by problem; the manifest round-trips and is deterministic; the stats
//! table's numbers are those of the recordings; the datasheet lists the errata.

use std::path::Path;
use std::process::{Command, Output};

use mbag::dataset::{GroupBy, Manifest, index, recording_files};
use mbag::recording::header::Role;
use mbag::recording::verify::env_for;
use mbag::recording::{
    EndReason, EndRecord, EpisodeRecorder, Fsync, Recording, RecordingWriter, SnapshotMode, verify,
};
use serde_json::{Value, json};

const TUTORIAL: &str = "recordings/samples/tutorial_p01_2023-07-18_15-41-19.jsonl.gz";
const SIMULATED: &str = "recordings/samples/simulated_lowest_block_pair_seed3.jsonl";
const KILLED: &str = "recordings/samples/simulated_seed3_killed_mid_write.jsonl";

fn mbag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(args)
        .output()
        .expect("running mbag")
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn copy(from: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// `rec` written again under `path` with another episode id: the same steps
/// under another name.
fn rename(rec: &Recording, path: &Path, episode_id: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut header = rec.header.clone();
    header.episode_id = episode_id.into();
    let mut w = RecordingWriter::create(path, &header, Fsync::Never).unwrap();
    for step in &rec.steps {
        w.append(step).unwrap();
    }
    w.finish(rec.footer.as_ref().unwrap()).unwrap();
}

/// `rec` as two files, the way a daemon that crashed after step `at` and
/// was restarted from where the world stood would leave it: the first part
/// has no footer; the second starts from the state after step `at - 1`,
/// replays the rest of the recorded actions, keeps their step times and
/// ends as the original did. (The sample's steps 0 to 97 carry times, not
/// all of them.)
fn split(rec: &Recording, at: usize, first: &Path, second: &Path) {
    std::fs::create_dir_all(first.parent().unwrap()).unwrap();
    let mut header = rec.header.clone();
    header.episode_id = "split_part1".into();
    let mut w = RecordingWriter::create(first, &header, Fsync::Never).unwrap();
    for step in &rec.steps[..at] {
        w.append(step).unwrap();
    }
    drop(w);

    let mut state = None;
    verify(rec, &mut |env, step| {
        if step.t as usize == at - 1 {
            state = Some(env.state().clone());
        }
    })
    .unwrap();
    let mut env = env_for(rec).unwrap();
    let goal = env.goal().clone();
    env.restore(goal, state.unwrap());
    let (mut recorder, header) = EpisodeRecorder::start(
        &env,
        "split_part2".into(),
        rec.header.source.clone(),
        rec.header.players.clone(),
        SnapshotMode::Changes,
    );
    let mut w = RecordingWriter::create(second, &header, Fsync::Never).unwrap();
    let size = env.size();
    for step in &rec.steps[at..] {
        assert!(
            step.sync.is_none(),
            "the sample's sync edits are at the start"
        );
        let actions: Vec<_> = step.a.iter().map(|a| a.to_tuple(size).unwrap()).collect();
        let outcome = env.step_tuples(&actions).unwrap().clone();
        let mut record = recorder.step(&env, &actions, &outcome);
        record.wall = step.wall;
        w.append(&record).unwrap();
    }
    let footer = recorder.footer(
        &env,
        EndRecord {
            reason: EndReason::Truncated,
            message: None,
        },
    );
    w.finish(&footer).unwrap();
}

/// Problems of a `--json` report as `(kind, files)`.
fn problems(report: &Value) -> Vec<(String, Vec<String>)> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let kind = p["problem"].as_str().unwrap().to_owned();
            let files = match (&p["file"], &p["files"], &p["manifest"]) {
                (Value::String(f), _, _) => vec![f.clone()],
                (_, Value::Array(fs), _) => fs.iter().map(|f| f.as_str().unwrap().into()).collect(),
                (_, _, Value::String(m)) => vec![m.clone()],
                _ => panic!("no file in {p}"),
            };
            (kind, files)
        })
        .collect()
}

fn pairs(expected: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    expected
        .iter()
        .map(|(k, fs)| {
            (
                (*k).to_owned(),
                fs.iter().map(|f| (*f).to_owned()).collect(),
            )
        })
        .collect()
}

#[test]
fn every_kind_of_problem_is_reported_with_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("study");
    let tutorial = Recording::read(Path::new(TUTORIAL)).unwrap();
    copy(TUTORIAL, &dir.join("tutorial_p01.jsonl.gz"));
    rename(&tutorial, &dir.join("copies/renamed.jsonl"), "renamed_copy");
    copy(SIMULATED, &dir.join("sim/full.jsonl"));
    copy(KILLED, &dir.join("sim/killed.jsonl"));
    split(
        &tutorial,
        60,
        &dir.join("split/part1.jsonl"),
        &dir.join("split/part2.jsonl"),
    );
    let gone = dir.join("gone.jsonl");
    let out = mbag(&[
        "recording",
        "simulate",
        "--out",
        s(&gone),
        "--seed",
        "4",
        "--steps",
        "20",
    ]);
    assert!(out.status.success(), "{}", text(&out));

    let out = mbag(&["dataset", "index", s(&dir)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("7 episodes"), "{}", text(&out));
    let manifest = Manifest::read(&dir.join("manifest.jsonl")).unwrap();
    let files: Vec<&str> = manifest.episodes.iter().map(|e| e.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "copies/renamed.jsonl",
            "gone.jsonl",
            "sim/full.jsonl",
            "sim/killed.jsonl",
            "split/part1.jsonl",
            "split/part2.jsonl",
            "tutorial_p01.jsonl.gz"
        ]
    );

    std::fs::remove_file(&gone).unwrap();
    let orphan = dir.join("late/orphan.jsonl");
    std::fs::create_dir_all(orphan.parent().unwrap()).unwrap();
    let out = mbag(&[
        "recording",
        "simulate",
        "--out",
        s(&orphan),
        "--seed",
        "6",
        "--steps",
        "20",
    ]);
    assert!(out.status.success(), "{}", text(&out));

    let json = tmp.path().join("problems.json");
    let out = mbag(&["dataset", "validate", s(&dir), "--json", s(&json)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["format"], "mbag-dataset-validate/1");
    assert_eq!(report["files"], 7);
    // Every file replays exactly, the split parts included.
    assert_eq!(
        problems(&report),
        pairs(&[
            ("cut", &["sim/killed.jsonl"]),
            ("unfinished", &["split/part1.jsonl"]),
            ("duplicate_id", &["sim/full.jsonl", "sim/killed.jsonl"]),
            (
                "duplicate_content",
                &["copies/renamed.jsonl", "tutorial_p01.jsonl.gz"]
            ),
            ("missing", &["gone.jsonl"]),
            ("orphan", &["late/orphan.jsonl"]),
            ("split", &["split/part1.jsonl", "split/part2.jsonl"]),
        ]),
        "{}",
        text(&out)
    );
    let problems = &report["problems"];
    assert_eq!(problems[0]["line"], 28);
    assert_eq!(problems[0]["steps"], 26);
    assert_eq!(problems[2]["episode_id"], "simulated_seed3");
    assert_eq!(problems[6]["participant"], "1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "one episode split over 2 files (participant 1, goal 596a1a2d99bc): split/part1.jsonl, split/part2.jsonl"
        ),
        "{stdout}"
    );
    assert!(stdout.ends_with("7 problems\n"), "{stdout}");

    // The datasheet's errata are the same problems.
    let sheet = tmp.path().join("sheet.md");
    let out = mbag(&["dataset", "datasheet", s(&dir), "--out", s(&sheet)]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(&sheet).unwrap();
    assert!(md.contains("found 7 problems in 7 files"), "{md}");
    assert!(md.contains("7. one episode split over 2 files"), "{md}");
    assert!(md.contains("5. gone.jsonl: listed in the manifest"), "{md}");

    // Without the replay the same problems are found.
    let out = mbag(&["dataset", "validate", s(&dir), "--no-replay"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("7 files read; 7 problems"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_clean_dataset_passes_and_its_manifest_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("clean");
    copy(TUTORIAL, &dir.join("b/tutorial.jsonl.gz"));
    copy(SIMULATED, &dir.join("a/sim.jsonl"));
    let out = mbag(&["dataset", "validate", s(&dir)]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "no manifest yet: {}",
        text(&out)
    );
    assert!(text(&out).contains("no_manifest"), "{}", text(&out));

    let out = mbag(&["dataset", "index", s(&dir)]);
    assert!(out.status.success(), "{}", text(&out));
    let first = std::fs::read(dir.join("manifest.jsonl")).unwrap();
    let elsewhere = tmp.path().join("m.jsonl");
    let out = mbag(&["dataset", "index", s(&dir), "--out", s(&elsewhere)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(&elsewhere).unwrap(),
        first,
        "indexing is deterministic"
    );

    // What the command wrote is what the library indexes, read back exactly.
    let files = recording_files(&dir, &[dir.join("manifest.jsonl")]).unwrap();
    let fresh = index(&dir, &files, &mut |_| {});
    assert!(fresh.unreadable.is_empty());
    assert_eq!(
        Manifest::read(&dir.join("manifest.jsonl")).unwrap(),
        fresh.manifest
    );

    let out = mbag(&["dataset", "validate", s(&dir)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("2 files, 260 steps replayed; no problems"),
        "{}",
        text(&out)
    );
    let out = mbag(&["dataset", "validate", s(&dir), "--manifest", s(&elsewhere)]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn stats_are_the_recordings_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("two");
    copy(TUTORIAL, &dir.join("tutorial.jsonl.gz"));
    copy(SIMULATED, &dir.join("sim.jsonl"));
    let json = tmp.path().join("stats.json");
    let out = mbag(&["dataset", "stats", s(&dir), "--json", s(&json)]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let table: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(table["format"], "mbag-dataset-stats/1");
    assert_eq!(table["by"], "condition");

    // The expected figures, from the recordings themselves.
    for (path, condition) in [
        (TUTORIAL, "tutorial"),
        (
            SIMULATED,
            "heuristic:lowest_block with heuristic:lowest_block",
        ),
    ] {
        let rec = Recording::read(Path::new(path)).unwrap();
        let group = table["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["group"] == condition)
            .unwrap_or_else(|| panic!("no row {condition}: {table}"));
        let first = rec.steps.iter().find_map(|s| s.wall).unwrap();
        let last = rec.steps.iter().rev().find_map(|s| s.wall).unwrap();
        let seconds = last - first;
        let human = rec
            .header
            .players
            .iter()
            .position(|p| p.role == Role::Human)
            .unwrap();
        let places = rec
            .steps
            .iter()
            .filter(|s| s.a[human].type_id() == 1)
            .count() as f64;
        let moves = rec
            .steps
            .iter()
            .filter(|s| (3..=8).contains(&s.a[human].type_id()))
            .count() as f64;
        let completed = rec.footer.as_ref().unwrap().goal_completed;
        assert_eq!(group["episodes"], 1);
        assert_eq!(group["steps"], rec.steps.len());
        assert_eq!(group["success"]["successes"], u64::from(completed));
        assert_eq!(group["success"]["n"], 1);
        let close =
            |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() <= 1e-9 * want.max(1.0);
        assert!(close(&group["mean_length_s"], seconds), "{group}");
        assert!(close(&group["hours"], seconds / 3600.0), "{group}");
        assert!(
            close(
                &group["human_per_minute"]["place"],
                places / (seconds / 60.0)
            ),
            "{group}"
        );
        assert!(
            close(&group["human_per_minute"]["move"], moves / (seconds / 60.0)),
            "{group}"
        );
        assert!(stdout.lines().any(|l| l.starts_with(condition)), "{stdout}");
    }
    assert_eq!(table["total"]["episodes"], 2);
    assert_eq!(table["total"]["steps"], 260);
    assert!(stdout.lines().any(|l| l.starts_with("total ")), "{stdout}");

    // By goal: the tutorial house and the simulated one are different grids.
    let out = mbag(&[
        "dataset",
        "stats",
        s(&dir),
        "--by",
        "goal",
        "--json",
        s(&json),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let table: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(table["by"], json!(GroupBy::Goal));
    assert_eq!(table["groups"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_arguments_are_usage_errors() {
    let out = mbag(&[
        "dataset",
        "validate",
        "recordings/samples",
        "--split-gap",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--split-gap"), "{}", text(&out));
    let out = mbag(&["dataset", "stats", "/nonexistent/folder"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("/nonexistent/folder"), "{}", text(&out));
    let help = mbag(&["dataset", "validate", "--help"]);
    assert!(text(&help).contains("Examples:"), "{}", text(&help));
}
