//! Training: behaviour cloning on the shared human data learns (it beats a
//! uniform and a most-frequent-action baseline on held-out episodes), resumes
//! exactly from its checkpoints, and its models load as agents; `mbag plot`
//! draws the metrics log.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mbag::nn::Model;
use mbag::recording::convert::{convert_human_episode, human_episode_files};
use mbag::train::bc::{self, BcConfig, RunOptions};
use mbag::train::read_log;
use tch::Device;

fn mbag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(args)
        .output()
        .expect("running mbag")
}

/// Converts the shared human episodes whose file names start with `prefix` (at
/// most `limit`) into recordings in `dir`.
fn convert(prefix: &str, limit: usize, dir: &Path) -> Vec<String> {
    let files = human_episode_files(Path::new("../shared/data/human")).unwrap();
    files
        .iter()
        .filter(|f| f.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .take(limit)
        .map(|f| convert_human_episode(f, dir, false).unwrap().episode_id)
        .collect()
}

/// A small conv network with every part of the paper's human model (previous
/// action, residual blocks with dropout, a per-voxel LSTM), cheap enough for a
/// test on two cores.
fn config(extra: serde_json::Value) -> BcConfig {
    let mut v = serde_json::json!({
        "model": {"class": "mbag_convolutional_model", "net": {
            "embedding_size": 8, "use_extra_features": true, "use_fc_after_embedding": true,
            "num_conv_1_layers": 2, "num_layers": 4, "use_resnet": true, "dropout": 0.1,
            "filter_size": 3, "hidden_size": 16, "hidden_channels": 16,
            "num_action_layers": 2, "num_value_layers": 2, "use_prev_action": true,
            "line_of_sight_masking": true, "scale_obs": true,
            "interleave_lstm_every": 4, "lstm_size": 16
        }},
        "seq_len": 16,
        "batch_size": 64,
        "epochs": 1,
        "optimizer": {"lr": 0.005, "grad_clip": 10.0},
        "seed": 3,
        "log_every": 5,
        "checkpoint_every": 4,
        "validation_sequences_per_batch": 16
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    BcConfig::parse(&v.to_string(), Path::new("test.json")).unwrap()
}

fn options(data: &Path, out: &Path) -> RunOptions {
    RunOptions {
        data: vec![data.to_path_buf()],
        out: out.to_path_buf(),
        device: Device::Cpu,
        resume: false,
        progress_bar: false,
        stop_after: None,
        time_limit: None,
    }
}

/// Acceptance test of BC: trained briefly (50 steps of 64 samples) on five
/// human-alone episodes, the
/// model predicts the two held-out episodes' actions better than a uniform
/// policy over the valid actions and than the training data's action
/// frequencies (cross-entropy), and more often than the most frequent valid
/// action (accuracy).
#[test]
fn bc_beats_uniform_and_most_frequent_baselines_on_held_out_episodes() {
    let _torch = crate::nn::torch();
    tch::set_num_threads(2);
    let data = tempfile::tempdir().unwrap();
    let ids = convert("human_alone", 7, data.path());
    let out = tempfile::tempdir().unwrap();
    let config = config(serde_json::json!({
        "data": {"validation_episodes": [ids[1], ids[5]]},
        "max_steps": 50,
        "epochs": 5,
        "checkpoint_every": 1000,
        "validate_every": 1000,
    }));
    let report = bc::train(&config, &options(data.path(), out.path())).unwrap();
    let valid = report.validation.unwrap();
    let base = report.baselines.unwrap();
    eprintln!(
        "{} steps, {:.1} samples/s; held-out ce {:.3} (uniform {:.3}, frequency {:.3}), accuracy {:.3} (most frequent {:.3}, uniform {:.4})",
        report.steps,
        report.samples_per_s,
        valid.cross_entropy,
        base.uniform.cross_entropy,
        base.frequency.cross_entropy,
        valid.accuracy,
        base.frequency.accuracy,
        base.uniform.accuracy
    );
    assert_eq!(report.steps, 50);
    assert!(valid.count > 500, "{} held-out targets", valid.count);
    assert!(valid.cross_entropy < base.uniform.cross_entropy);
    assert!(valid.cross_entropy < base.frequency.cross_entropy);
    assert!(valid.accuracy > base.frequency.accuracy);
    // Per-type metrics are logged for every type present.
    let records = read_log(&report.log_path).unwrap();
    let last = records
        .iter()
        .rev()
        .find(|r| r.get("valid/ce").is_some())
        .unwrap();
    // (The converted human-alone episodes hold no NOOPs.)
    for group in ["place", "break", "move"] {
        assert!(
            last.get(&format!("valid/ce_by_type/{group}")).is_some(),
            "{group}"
        );
        assert!(
            last.get(&format!("valid/accuracy_by_type/{group}"))
                .is_some()
        );
    }
    assert!(records.iter().any(|r| r.get("train/loss").is_some()));
}

fn weights(model: &Model) -> Vec<(String, Vec<f32>)> {
    let mut all: Vec<(String, Vec<f32>)> = model
        .var_store()
        .variables()
        .into_iter()
        .map(|(k, t)| (k, Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// A run stopped after 5 steps and resumed ends with exactly the weights,
/// step count and log of a run that was never interrupted.
#[test]
fn bc_resumes_exactly_from_its_checkpoint() {
    let _torch = crate::nn::torch();
    let data = tempfile::tempdir().unwrap();
    let ids = convert("human_alone", 2, data.path());
    let config = config(serde_json::json!({
        "data": {"validation_episodes": [ids[1]]},
        "max_steps": 8,
        "batch_size": 32,
        "validate_every": 4,
    }));
    let whole = tempfile::tempdir().unwrap();
    let a = bc::train(&config, &options(data.path(), whole.path())).unwrap();
    assert!(a.finished);
    assert_eq!(a.steps, 8);

    let parts = tempfile::tempdir().unwrap();
    let mut first = options(data.path(), parts.path());
    first.stop_after = Some(5);
    let b1 = bc::train(&config, &first).unwrap();
    assert!(!b1.finished);
    assert_eq!(b1.steps, 5);
    assert!(!bc::final_model(parts.path()).exists());
    let mut second = options(data.path(), parts.path());
    second.resume = true;
    let b2 = bc::train(&config, &second).unwrap();
    assert!(b2.finished);
    assert_eq!((b2.steps, b2.steps_this_run), (8, 3));
    assert_eq!(b2.samples, a.samples);

    let wa = weights(&Model::load(&bc::final_model(whole.path()), Device::Cpu).unwrap());
    let wb = weights(&Model::load(&bc::final_model(parts.path()), Device::Cpu).unwrap());
    assert_eq!(wa.len(), wb.len());
    for ((name, x), (_, y)) in wa.iter().zip(&wb) {
        let diff = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max);
        assert!(diff <= 1e-6, "{name} differs by {diff}");
    }
    // The resumed log has each training record once, in order, with the same
    // losses (the interrupted run also validated where it stopped).
    let steps = |dir: &Path| -> Vec<(u64, Option<f64>)> {
        read_log(&dir.join("metrics.jsonl"))
            .unwrap()
            .iter()
            .filter(|r| r.get("train/loss").is_some() || r.step % 4 == 0)
            .map(|r| {
                (
                    r.step,
                    r.get("train/loss")
                        .or(r.get("valid/ce"))
                        .map(|v| (v * 1e4).round()),
                )
            })
            .collect()
    };
    assert_eq!(steps(whole.path()), steps(parts.path()));
    // Checkpoints hold the latest model in the shared format.
    let latest = mbag::train::Checkpointer::new(parts.path(), 1)
        .latest()
        .unwrap()
        .unwrap();
    Model::load(&latest.model_config(), Device::Cpu).unwrap();
}

/// The trained model plays as `bc:` in `mbag evaluate` (the paper's walking
/// setting), and `mbag plot` draws its metrics log.
#[test]
fn a_trained_model_plays_in_evaluate_and_its_log_plots() {
    let _torch = crate::nn::torch();
    let data = tempfile::tempdir().unwrap();
    let ids = convert("human_alone", 2, data.path());
    let out = tempfile::tempdir().unwrap();
    let config = config(serde_json::json!({
        "data": {"validation_episodes": [ids[0]]},
        "max_steps": 3,
        "log_every": 1,
        "validate_every": 1,
    }));
    let report = bc::train(&config, &options(data.path(), out.path())).unwrap();
    let model: PathBuf = report.model_path;
    let spec = format!("bc:{}", model.display());
    let json = out.path().join("eval.json");
    let output = mbag(&[
        "evaluate",
        "--human",
        &spec,
        "--assistant",
        "none",
        "--walking",
        "--goals",
        "random",
        "--horizon",
        "5",
        "--episodes",
        "2",
        "--threads",
        "1",
        "--device",
        "cpu",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["per_episode"].as_array().unwrap().len(), 2);

    // Validation logs whole-episode scores per action type, and the zero-state
    // sequences' beside them.
    let records = read_log(&out.path().join("metrics.jsonl")).unwrap();
    let validation = records
        .iter()
        .rev()
        .find(|r| r.get("valid/ce").is_some())
        .unwrap();
    assert!(validation.get("valid/accuracy_by_type/place").is_some());
    assert!(validation.get("valid_cut/ce").is_some());
    assert!(validation.get("valid_cut/ce_by_type/place").is_some());

    let png = out.path().join("curves.png");
    let log = out.path().join("metrics.jsonl");
    let output = mbag(&[
        "plot",
        log.to_str().unwrap(),
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    // Several panels (loss, ce, accuracy, by type, lr, ...) in a grid.
    assert!(
        (1000..=4000).contains(&width) && (700..=4000).contains(&height),
        "{width}x{height}"
    );
    // Text is drawn: the image is not just lines on white (a font was found).
    assert!(bytes.len() > 20_000, "{} bytes", bytes.len());

    let output = mbag(&[
        "plot",
        log.to_str().unwrap(),
        "--out",
        png.to_str().unwrap(),
        "--only",
        "nothing-matches",
    ]);
    assert!(!output.status.success());
}

/// Whole-episode validation carries the recurrent state from one sequence of
/// an episode to the next: its scores do not depend on where the episode is
/// cut (sequences of 16 steps or one sequence per episode), whereas the
/// zero-state sequences training uses score differently; every learnable step
/// is scored once, with cross-entropy and accuracy per action type.
/// The human player's steps of the recordings in `dir`.
fn human_steps(dir: &Path) -> bc::Dataset {
    bc::Dataset::load(
        &[dir.to_path_buf()],
        mbag::recording::header::Role::Human,
        true,
        bc::StreamSpec::default(),
        &mut |_, _| {},
    )
    .unwrap()
}

#[test]
fn whole_episode_validation_carries_the_state_across_sequences() {
    let _torch = crate::nn::torch();
    let data = tempfile::tempdir().unwrap();
    convert("human_alone", 2, data.path());
    let ds = human_steps(data.path());
    let config = config(serde_json::json!({}));
    tch::manual_seed(0);
    let model = Model::new(
        bc::model_config(&config.model, &ds, "test").unwrap(),
        Device::Cpu,
    )
    .unwrap();
    let episodes: Vec<usize> = (0..ds.episodes.len()).collect();
    let longest = ds.episodes.iter().map(|e| e.len()).max().unwrap();
    let whole = bc::evaluate_episodes(&model, &ds, &episodes, 16, 2).unwrap();
    let uncut = bc::evaluate_episodes(&model, &ds, &episodes, longest, 1).unwrap();
    let cut = bc::evaluate(&model, &ds, &ds.sequences(&episodes, 16), 16, 8).unwrap();
    eprintln!(
        "untrained: whole episodes ce {:.5} acc {:.4}, one sequence ce {:.5}, cut ce {:.5}",
        whole.cross_entropy, whole.accuracy, uncut.cross_entropy, cut.cross_entropy
    );
    assert_eq!(whole.count, ds.learnable_steps(&episodes));
    assert_eq!((uncut.count, cut.count), (whole.count, whole.count));
    assert!((whole.cross_entropy - uncut.cross_entropy).abs() < 1e-4);
    assert!((whole.accuracy - uncut.accuracy).abs() < 1e-3);
    assert!(
        (whole.cross_entropy - cut.cross_entropy).abs() > 1e-4,
        "the state carried through should change the scores"
    );
    for group in ["place", "break", "move"] {
        let (ce, acc, n) = whole
            .by_group
            .iter()
            .find(|(g, _)| g.name() == group)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {group} targets"));
        assert!(n > 0 && ce.is_finite() && (0.0..=1.0).contains(&acc));
    }
}

/// Loading replays each episode into one sample per step of the human player,
/// keeps the setting of most recordings (the tutorial's 6x6x6 episode is
/// skipped beside two 11x10x10 ones) and reads the two-player episodes' human,
/// player 1.
#[test]
fn loading_keeps_the_majority_setting_and_the_human_player() {
    let data = tempfile::tempdir().unwrap();
    convert("human_alone", 1, data.path());
    convert("human_with_assistant", 1, data.path());
    convert("tutorial", 1, data.path());
    let ds = human_steps(data.path());
    assert_eq!(ds.stats.recordings, 3);
    assert_eq!(ds.stats.skipped_recordings, 1);
    assert_eq!(ds.size.axes(), [11, 10, 10]);
    assert_eq!(ds.inventory_rows, 2);
    let players: Vec<usize> = ds.episodes.iter().map(|e| e.player).collect();
    assert_eq!(players, [0, 1]);
    assert_eq!(ds.stats.replay_mismatches, 0);
    assert!(ds.episodes.iter().all(|e| e.len() > 100));
    // Most targets are learnable (valid under the replayed masks).
    assert!(ds.stats.unlearnable_targets * 50 < ds.stats.steps);
}

/// A time limit already reached stops the run after its first step, with a
/// checkpoint that `resume` continues to the planned end.
#[test]
fn a_time_limit_stops_at_the_next_step_and_resume_finishes() {
    let data = tempfile::tempdir().unwrap();
    let ids = convert("human_alone", 2, data.path());
    let config = config(serde_json::json!({
        "data": {"validation_episodes": [ids[1]]},
        "max_steps": 3,
        "batch_size": 32,
    }));
    let out = tempfile::tempdir().unwrap();
    let mut first = options(data.path(), out.path());
    first.time_limit = Some(std::time::Duration::from_nanos(1));
    let a = bc::train(&config, &first).unwrap();
    assert!(!a.finished);
    assert_eq!(a.steps, 1);
    let mut second = options(data.path(), out.path());
    second.resume = true;
    let b = bc::train(&config, &second).unwrap();
    assert!(b.finished);
    assert_eq!((b.steps, b.steps_this_run), (3, 2));
}

/// The human's rows are the reference converter's stream (`with_own_noops`):
/// per episode as many rows as its RLlib file held, idle NOOP rows included,
/// each action at the row index the file gave it; without the source's idle
/// counts, the wall-clock gaps give the same idle rows after the first action.
#[test]
fn the_human_rows_are_the_reference_converters_stream() {
    use mbag::recording::header::Role;
    use mbag::recording::reader::Recording;
    use mbag::train::bc::stream::{self, NoopRows, StreamSpec};
    let spec = |noop_rows| StreamSpec {
        noop_rows,
        action_delay_s: 0.8,
    };
    let data = tempfile::tempdir().unwrap();
    convert("human_alone", 2, data.path());
    convert("human_with_assistant", 3, data.path());
    let mut files: Vec<PathBuf> = std::fs::read_dir(data.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 5);
    for file in files {
        let mut rec = Recording::read(&file).unwrap();
        let player = rec
            .header
            .players
            .iter()
            .find(|p| p.role == Role::Human)
            .unwrap()
            .index;
        let origin = rec.header.source.origin.as_ref().unwrap();
        let expected = origin["stats"]["rllib_rows_per_player"][player]
            .as_u64()
            .unwrap() as usize;
        let actions = origin["stats"]["actions_per_player"][player]
            .as_u64()
            .unwrap() as usize;
        let n = rec.steps.len();
        let rows = stream::rows(&rec.steps, n, player, spec(NoopRows::Own));
        assert_eq!(rows.len(), expected, "{}", file.display());
        let mut acted = 0;
        for (i, row) in rows.iter().enumerate().filter(|(_, r)| r.action) {
            let src = rec.steps[row.line].src.as_ref().unwrap();
            assert_eq!(
                src["row"][player].as_u64(),
                Some(i as u64),
                "{}",
                file.display()
            );
            acted += 1;
        }
        assert_eq!(acted, actions);
        let only = stream::rows(&rec.steps, n, player, spec(NoopRows::ActionsOnly));
        assert_eq!(only.len(), actions);
        assert_eq!(
            stream::rows(&rec.steps, n, player, spec(NoopRows::EveryStep)).len(),
            n
        );
        // Without the source's fields, the wall-clock gaps decide.
        for step in &mut rec.steps {
            step.src = None;
        }
        let timed = stream::rows(&rec.steps, n, player, spec(NoopRows::Own));
        // The idle time before the first action is unknown without the source
        // (a recording's times start at its first line); count the rest.
        let first = rows[0].line;
        let idle =
            |r: &[stream::Row]| r.iter().filter(|r| !r.action && r.line != first).count() as f64;
        let (want, got) = (idle(&rows), idle(&timed));
        assert_eq!(got, want, "{}: idle rows from wall times", file.display());
    }
}

/// Cross-validation end to end: two folds of two, each a short run with mbag's
/// network options on (relative position, goal action prior), hold out every
/// episode once between them, and `mbag train cv` pools their held-out targets.
#[test]
fn two_folds_hold_out_every_episode_once_and_train_cv_pools_them() {
    let _torch = crate::nn::torch();
    tch::set_num_threads(2);
    let data = tempfile::tempdir().unwrap();
    convert("human_alone", 4, data.path());
    let runs = tempfile::tempdir().unwrap();
    let mut total_targets = 0;
    let mut dirs = Vec::new();
    for index in 0..2 {
        let mut config = config(serde_json::json!({
            "data": {"fold": {"index": index, "of": 2}},
            "max_steps": 3,
            "checkpoint_every": 1000,
            "validate_every": 1000,
        }));
        let net = &mut config.model.net;
        net["use_relative_position"] = serde_json::json!(true);
        net["use_goal_action_prior"] = serde_json::json!(true);
        let out = runs.path().join(format!("fold_{index}"));
        let report = bc::train(&config, &options(data.path(), &out)).unwrap();
        total_targets += report.validation.unwrap().count;
        dirs.push(out.display().to_string());
    }
    let learnable = human_steps(data.path());
    let all: usize = (0..learnable.episodes.len())
        .map(|e| learnable.learnable_steps(&[e]))
        .sum();
    assert_eq!(total_targets, all, "the two folds' held-out targets");
    let json = runs.path().join("cv.json");
    let mut args = vec!["train", "cv"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend(["--json", json.to_str().unwrap()]);
    let out = mbag(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("mean over 2 folds"), "{stdout}");
    assert!(
        stdout.contains("pooled over every held-out target"),
        "{stdout}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let pooled_targets: f64 = summary["folds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["targets"].as_f64().unwrap())
        .sum();
    assert_eq!(pooled_targets as usize, all);
    assert_eq!(summary["folds"][1]["fold"], "1/2");
}
