//! `mbag evaluate`: a heuristic human alone on a small goal, read back from the
//! JSON report; bad specs fail with the accepted forms.

use std::process::{Command, Output};

use serde_json::Value;

fn mbag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(args)
        .output()
        .expect("running mbag")
}

/// Runs mbag on arguments it must refuse as a usage error (exit status 2) and
/// returns what it said on stderr.
fn usage_error(args: &[&str]) -> String {
    let output = mbag(args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

#[test]
fn human_alone_on_a_small_goal_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("eval.json");
    let output = mbag(&[
        "evaluate",
        "--human",
        "heuristic:lowest_block",
        "--assistant",
        "none",
        "--episodes",
        "2",
        "--goals",
        "basic",
        "--world-size",
        "6x6x6",
        "--horizon",
        "200",
        "--threads",
        "2",
        "--per-episode",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("goal %") && stdout.contains("human actions (p+b)"));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["format"], "mbag-evaluate/1");
    assert_eq!(report["human"], "heuristic:lowest_block");
    assert_eq!(report["assistant"], "none");
    assert_eq!(report["env_config"]["num_players"], 1);
    let episodes = report["per_episode"].as_array().unwrap();
    assert_eq!(episodes.len(), 2);
    for (i, e) in episodes.iter().enumerate() {
        assert_eq!(e["episode"], i);
        assert_eq!(e["goal_completed"], true, "{e}");
        assert_eq!(e["goal_percentage"], 1.0);
        assert!(e["human_place_break"].as_u64().unwrap() > 0);
        assert!(e["assistant_goal_percentage"].is_null());
    }
    let summary = &report["summary"];
    assert_eq!(summary["episodes"], 2);
    assert_eq!(summary["completion"]["rate"], 1.0);
    assert_eq!(summary["goal_percentage"]["mean"], 1.0);
    assert!(summary["assistant_goal_percentage"].is_null());
    assert!(summary["human_place_break"]["high"].is_number());
}

#[test]
fn bad_specs_list_the_accepted_forms() {
    let output = mbag(&[
        "evaluate",
        "--human",
        "heuristic:greedy",
        "--assistant",
        "none",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown heuristic \"greedy\""), "{stderr}");
    assert!(stderr.contains("accepted forms"), "{stderr}");
}

#[test]
fn a_network_for_another_world_is_refused_by_name() {
    let _torch = crate::nn::torch();
    let stderr = usage_error(&[
        "evaluate",
        "--human",
        "heuristic:lowest_block",
        "--assistant",
        "az:../shared/models/az_test_assistant.json",
        "--goals",
        "basic",
        "--world-size",
        "6x6x6",
        "--episodes",
        "1",
        "--sims",
        "20",
        "--device",
        "cpu",
        "-q",
    ]);
    assert!(
        stderr.contains("az:../shared/models/az_test_assistant.json?sims=20")
            && stderr.contains("built for a 11x10x10 world"),
        "{stderr}"
    );
}

/// `oracle_goal` swaps the goal head for the true goal inside the search, so
/// with no search (`sims=0`) it would silently do nothing: it is refused.
#[test]
fn oracle_goal_without_simulations_is_refused() {
    let _torch = crate::nn::torch();
    let stderr = usage_error(&[
        "evaluate",
        "--human",
        "heuristic:noop",
        "--assistant",
        "az:../shared/models/az_test_assistant.json?sims=0&oracle_goal=true",
        "--walking",
        "--episodes",
        "1",
        "--device",
        "cpu",
        "-q",
    ]);
    assert!(
        stderr.contains("oracle_goal") && stderr.contains("sims=0"),
        "{stderr}"
    );
}

/// The shared AssistanceZero test assistant plans with MCTS against a heuristic
/// human (the reference's builders need teleportation, so the random agent), the
/// shared test human model sampling its policy, and a piKL search on it, in the
/// paper's 11x10x10 walking setting.
#[test]
fn shared_checkpoints_play_end_to_end() {
    let _torch = crate::nn::torch();
    for human in [
        "heuristic:random",
        "bc:../shared/models/az_test_human.json",
        "pikl:../shared/models/az_test_human.json?sims=3",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("eval.json");
        let output = mbag(&[
            "evaluate",
            "--human",
            human,
            "--assistant",
            "az:../shared/models/az_test_assistant.json?sims=4",
            "--walking",
            "--goals",
            "random",
            "--horizon",
            "4",
            "--episodes",
            "2",
            "--threads",
            "2",
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
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let episodes = report["per_episode"].as_array().unwrap();
        assert_eq!(episodes.len(), 2);
        for e in episodes {
            assert_eq!(e["length"], 4, "{e}");
            assert!(
                e["assistant_move_ms"]["mean_ms"].as_f64().unwrap() > 0.0,
                "{e}"
            );
        }
    }
}

/// `--torch-threads` sets libtorch's intra-op threads before a network agent
/// runs, and 0 is refused with the reason, as in the daemon's commands.
#[test]
fn torch_threads_are_set_and_zero_is_refused() {
    let _torch = crate::nn::torch();
    let output = mbag(&[
        "evaluate",
        "--human",
        "bc:../shared/models/az_test_human.json",
        "--assistant",
        "none",
        "--walking",
        "--goals",
        "random",
        "--horizon",
        "3",
        "--episodes",
        "1",
        "--threads",
        "1",
        "--torch-threads",
        "1",
        "--device",
        "cpu",
        "-q",
        "-v",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("libtorch intra-op threads: 1"), "{stderr}");
    for command in [
        &[
            "evaluate",
            "--human",
            "heuristic:noop",
            "--assistant",
            "none",
        ][..],
        &["play", "--emulated", "--assistant", "none"][..],
    ] {
        let mut args = command.to_vec();
        args.extend(["--torch-threads", "0"]);
        let stderr = usage_error(&args);
        assert!(
            stderr.contains("--torch-threads") && stderr.contains("from 1"),
            "{stderr}"
        );
    }
}

#[test]
fn goals_stats_puts_procedural_and_held_out_houses_side_by_side() {
    let output = mbag(&["goals", "stats", "--count", "10", "--seed", "1"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let header = stdout.lines().nth(1).unwrap();
    assert!(
        header.contains("procedural_house") && header.contains("held_out"),
        "{stdout}"
    );
    for row in ["share planks", "fill ratio", "layer y=7"] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }
    let output = mbag(&["goals", "show", "--goals", "held_out", "--seed", "2"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("y=0"),
        "{stdout}"
    );
    let output = mbag(&[
        "goals",
        "stats",
        "--goals",
        "held_out",
        "--houses",
        "/nonexistent",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("--houses"),
        "{stderr}"
    );
}

/// `az:PATH?sims=0` plays the policy head alone, and the episodes do not depend
/// on how many run at once (`--lanes`), network agents included.
#[test]
fn policy_head_assistant_plays_the_same_episodes_on_any_lanes() {
    let _torch = crate::nn::torch();
    let run = |lanes: &str| -> Vec<Value> {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("eval.json");
        let output = mbag(&[
            "evaluate",
            "--human",
            "bc:../shared/models/az_test_human.json",
            "--assistant",
            "az:../shared/models/az_test_assistant.json?sims=0",
            "--walking",
            "--goals",
            "random",
            "--horizon",
            "4",
            "--episodes",
            "3",
            "--threads",
            "1",
            "--lanes",
            lanes,
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
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("env steps/s"), "{stdout}");
        let mut report: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(report["lanes"].as_u64(), lanes.parse().ok());
        assert!(report["env_steps_per_s"].as_f64().unwrap() > 0.0);
        let mut episodes = report["per_episode"].take();
        let episodes = episodes.as_array_mut().unwrap();
        for e in episodes.iter_mut() {
            // Wall times differ from run to run.
            e.as_object_mut().unwrap().remove("assistant_move_ms");
        }
        episodes.clone()
    };
    let one = run("1");
    assert_eq!(one.len(), 3);
    assert_eq!(one, run("3"));
}

/// The pretrained assistant is goal-blind: a model that reads the goal is
/// refused in its seat, with the reason; the shipped one plays.
#[test]
fn a_pretrained_assistant_must_be_goal_blind() {
    let output = mbag(&[
        "evaluate",
        "--human",
        "heuristic:noop",
        "--assistant",
        "pretrained:models/human.json",
        "--episodes",
        "1",
        "--walking",
        "--horizon",
        "5",
        "--quiet",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("mask_goal is false") && stderr.contains("goal-blind"),
        "{stderr}"
    );
    // The shipped one plays beside the human model.
    let output = mbag(&[
        "evaluate",
        "--human",
        "bc:models/human.json",
        "--assistant",
        "pretrained:models/pretrained_assistant.json",
        "--episodes",
        "1",
        "--walking",
        "--horizon",
        "30",
        "--quiet",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("assistant pretrained:models/pretrained_assistant.json"),
        "{stdout}"
    );
}

/// `--record` writes each episode as a recording, and `mbag plot` draws the
/// report's goal % against steps beside the paper's rows.
#[test]
fn episodes_are_recorded_and_the_report_plots() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("eval.json");
    let recordings = dir.path().join("episodes");
    let output = mbag(&[
        "evaluate",
        "--human",
        "heuristic:lowest_block",
        "--assistant",
        "heuristic:random",
        "--episodes",
        "2",
        "--goals",
        "basic",
        "--world-size",
        "6x6x6",
        "--horizon",
        "200",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--record",
        recordings.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for i in 0..2 {
        let file = recordings.join(format!("episode_0000{i}.jsonl"));
        let verify = mbag(&["recording", "verify", file.to_str().unwrap()]);
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stdout)
        );
    }
    let png = dir.path().join("goal.png");
    let plot = mbag(&[
        "plot",
        json.to_str().unwrap(),
        "--label",
        "lowest block",
        "--out",
        png.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&plot.stdout);
    assert!(plot.status.success(), "{stdout}");
    assert!(
        stdout.contains("1 evaluation(s) beside the paper's Table 2"),
        "{stdout}"
    );
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
    // Two labels for one report is a mistake, said as such.
    let twice = mbag(&[
        "plot",
        json.to_str().unwrap(),
        "--label",
        "a",
        "--label",
        "b",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(!twice.status.success());
    assert!(String::from_utf8_lossy(&twice.stderr).contains("2 labels for 1 reports"));
}
