//! The goal model and the house corpus: training never reads a test house, the
//! model beats its baselines on styles it never saw, and the shipped assistant
//! and human load as their specs say.

use std::path::{Path, PathBuf};

use mbag::agents::defaults;
use mbag::agents::spec::{AgentFactory, AgentSpec, StandardAgents};
use mbag::goal_model::learn::{self, Builds, CorpusIndex};
use mbag::goal_model::score::{self, Observation};
use mbag::goal_model::{GoalModel, Smoothing};
use mbag::nn::{DeviceChoice, ServiceAgents, ServiceConfig};
use mbag::sim::config::Config;
use mbag::sim::goal::GoalConfig;
use mbag::sim::presets::{Game, Movement};

const CORPUS: &str = "../shared/data/house_corpus";

/// Folders no training may read: the corpus' test split and the seven
/// evaluation houses.
fn forbidden() -> Vec<PathBuf> {
    [format!("{CORPUS}/test"), "../shared/data/houses".to_owned()]
        .iter()
        .map(|p| {
            Path::new(p)
                .canonicalize()
                .expect("the shared data is beside the project")
        })
        .collect()
}

fn assert_trains_on_allowed_data(what: &Path, goals: &GoalConfig) {
    for dir in goals.data_dirs() {
        // A folder that does not exist reads nothing; one that does must not
        // lie in (or hold) a forbidden folder.
        let Ok(dir) = dir.canonicalize() else {
            continue;
        };
        for bad in forbidden() {
            assert!(
                !dir.starts_with(&bad) && !bad.starts_with(&dir),
                "{} trains on {} (forbidden: {})",
                what.display(),
                dir.display(),
                bad.display()
            );
        }
    }
}

#[test]
fn no_shipped_training_config_draws_a_test_house() {
    let mut checked = 0;
    for entry in std::fs::read_dir("configs/train").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") && is_assistant_config(&path) {
            // The env's goals, as the trainer reads them (without resolving the
            // model, whose template may live only on a GPU machine).
            let value: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let env = Config::from_json(&value["env"]).unwrap();
            let goals =
                GoalConfig::from_env(&env.goal_generator, &env.goal_generator_config).unwrap();
            assert_trains_on_allowed_data(&path, &goals);
            checked += 1;
        }
    }
    for entry in std::fs::read_dir("configs/goals").unwrap() {
        let path = entry.unwrap().path();
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let goals = GoalConfig::from_env(
            value["goal_generator"].as_str().unwrap(),
            &value["goal_generator_config"],
        )
        .unwrap();
        assert_trains_on_allowed_data(&path, &goals);
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} configs found");
    // The check itself catches a config on the test split.
    let bad = GoalConfig::held_out(Path::new(&format!("{CORPUS}/test")));
    let caught = std::panic::catch_unwind(|| {
        assert_trains_on_allowed_data(Path::new("bad.json"), &bad);
    });
    assert!(caught.is_err(), "a test-split config passed the check");
}

/// Whether a file in configs/train is an assistant config (BC configs have no env).
fn is_assistant_config(path: &Path) -> bool {
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value.get("env").is_some()
}

#[test]
fn the_corpus_split_is_respected_by_the_goal_models_learning() {
    let index = CorpusIndex::load(Path::new(CORPUS)).unwrap();
    let (counted, held) = index.training_split(5);
    assert!(!counted.is_empty() && !held.is_empty());
    assert!(
        counted.iter().chain(&held).all(|e| e.split == "train"),
        "learning read a test house"
    );
    // The smoothing is chosen on whole styles the counts never saw.
    for e in &held {
        assert!(counted.iter().all(|c| c.group() != e.group()));
    }
    // No style is on both sides of the corpus' own split.
    let test = index.split("test");
    for e in index.split("train") {
        if e.style.is_some() {
            assert!(
                test.iter().all(|t| t.style != e.style),
                "{:?} in both",
                e.style
            );
        }
    }
    // The shipped model says what it read.
    let shipped = GoalModel::load(Path::new("models/assistant_goal.json.gz")).unwrap();
    assert_eq!(shipped.provenance()["split"], "train");
}

#[test]
fn the_goal_model_beats_its_baselines_on_styles_it_never_saw() {
    let index = CorpusIndex::load(Path::new(CORPUS)).unwrap();
    let env = Game::paper().config().unwrap();
    let train = learn::goals_of(index.houses(&index.split("train")).unwrap());
    let counter = learn::count(&env, &train, 300, 4, 1, 2, &|| {}).unwrap();
    let model = counter.finish(
        3,
        Smoothing {
            alpha: 32.0,
            temperature: 1.0,
        },
        serde_json::json!({}),
    );
    let test = GoalConfig::held_out(Path::new(&format!("{CORPUS}/test")));
    let observations: Vec<Observation> = Builds::new(&env, &test, 7, (0.1, 0.9))
        .unwrap()
        .take(60, 2)
        .unwrap();
    let shares = score::block_shares(&[&observations[0].goal]);
    let base = score::baselines(&observations, &shares);
    let scores = score::score_model(&model, &observations);
    assert!(
        scores.cross_entropy < base.frequency_cross_entropy,
        "CE {} vs frequency {}",
        scores.cross_entropy,
        base.frequency_cross_entropy
    );
    assert!(
        scores.accuracy > base.current_world_accuracy,
        "accuracy {} vs the current world's {}",
        scores.accuracy,
        base.current_world_accuracy
    );
    let sure = scores.confident[0];
    assert!(sure.per_observation > 0.5, "{sure:?}");
    assert!(
        sure.precision > base.runs_precision + 0.2,
        "sure places {sure:?} vs the runs rule's {}",
        base.runs_precision
    );
}

#[test]
fn the_default_specs_load() {
    let config = Game::paper()
        .with_movement(Movement::Walking)
        .config()
        .unwrap();
    let factory = StandardAgents::with_network(std::sync::Arc::new(ServiceAgents::new(
        DeviceChoice::Cpu,
        ServiceConfig::default(),
    )));
    let assistant: AgentSpec = defaults::ASSISTANT.parse().unwrap();
    let human: AgentSpec = defaults::HUMAN.parse().unwrap();
    factory.build(&assistant, 1, &config).unwrap();
    factory.build(&human, 0, &config).unwrap();
    // A broken goal model is named, not a panic.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json.gz");
    std::fs::write(&bad, b"not gzip").unwrap();
    let spec: AgentSpec = format!("{}?goal_model={}", defaults::ASSISTANT, bad.display())
        .parse()
        .unwrap();
    let err = factory.build(&spec, 1, &config).unwrap_err().to_string();
    assert!(err.contains("bad.json.gz"), "{err}");
}
