//! `mbag robustness run` on the shipped suite: the oracle passes it, the idle
//! assistant does not, and the JSON report lists every test with its variants,
//! per-category rates and intervals; a malformed test names its file and field.

use std::process::{Command, Output};

use serde_json::Value;

fn mbag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(args)
        .output()
        .expect("running mbag")
}

fn column<'a>(report: &'a Value, spec: &str) -> &'a Value {
    report["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["assistant"] == spec)
        .unwrap_or_else(|| panic!("no column {spec}"))
}

#[test]
fn the_oracle_passes_the_suite_and_noop_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("robustness.json");
    let output = mbag(&[
        "robustness",
        "run",
        "--assistant",
        "oracle",
        "--rollouts",
        "4",
        "--eval-episodes",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("every test is valid"), "{stdout}");
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["format"], "mbag-robustness/1");
    let suite: Vec<String> = std::fs::read_dir("tests/robustness")
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            (path.extension()? == "json")
                .then(|| path.file_stem().unwrap().to_string_lossy().into())
        })
        .collect();
    assert!(suite.len() >= 11, "{suite:?}");
    let (oracle, noop) = (column(&report, "oracle"), column(&report, "heuristic:noop"));
    for c in [oracle, noop] {
        let tests = c["tests"].as_array().unwrap();
        assert_eq!(tests.len(), suite.len());
        for t in tests {
            assert!(suite.contains(&t["id"].as_str().unwrap().to_owned()));
            let cases = t["cases"].as_array().unwrap();
            assert!(cases.len() >= 3, "{t}");
            assert_eq!(cases[0]["case"], "base");
            for k in ["rate", "low", "high", "n", "successes"] {
                assert!(t["rate"][k].is_number(), "{k} in {t}");
            }
        }
        let categories: Vec<&str> = c["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["category"].as_str().unwrap())
            .collect();
        assert_eq!(categories, ["SR", "AR", "A+MR"]);
    }
    // The oracle passes at least 80% of the SR and AR tests; noop at most 30%
    // of all.
    let passed = |c: &Value, cats: &[&str]| {
        let tests: Vec<&Value> = c["tests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| cats.contains(&t["category"].as_str().unwrap()))
            .collect();
        let n = tests.iter().filter(|t| t["passed"] == true).count();
        n as f64 / tests.len() as f64
    };
    assert!(passed(oracle, &["SR", "AR"]) >= 0.8);
    assert!(passed(noop, &["SR", "AR", "A+MR"]) <= 0.3);
    assert_eq!(report["flags"]["bad_tests"].as_array().unwrap().len(), 0);
    assert_eq!(
        report["flags"]["vacuous_tests"].as_array().unwrap().len(),
        0
    );
}

#[test]
fn a_malformed_test_names_its_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string("tests/robustness/sr_wall_gaps.json").unwrap();
    let bad = good.replace(r#""block": "planks"}],"#, r#""block": "gold"}],"#);
    assert_ne!(good, bad);
    std::fs::write(dir.path().join("broken.json"), bad).unwrap();
    let output = mbag(&[
        "robustness",
        "run",
        "--assistant",
        "oracle",
        "--tests",
        dir.path().to_str().unwrap(),
        "--eval-episodes",
        "0",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("broken.json: start.goal[0].block"),
        "{stderr}"
    );
    assert!(stderr.contains("\"gold\" is not an MBAG block"), "{stderr}");
}
