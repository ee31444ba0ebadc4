//! The networks: every shared model matches the reference's golden outputs, weights
//! load with typed errors, checkpoints round-trip, and observations from the
//! simulator become the goldens' input tensors.
//!
//! libtorch tests hold one lock so that they never run their kernels side by side
//! (LIBTORCH.md pitfall 8), and each uses one intra-op thread.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use mbag::nn::golden::{GoldenFile, golden_files, verify_loaded, verify_model};
use mbag::nn::{Model, ModelConfig, NnError, ObsBatch};
use mbag::sim::coords::WorldSize;
use mbag::sim::obs::Observation;
use tch::{Device, Kind, Tensor};

static TORCH: Mutex<()> = Mutex::new(());

/// Takes the libtorch lock (surviving a panicked holder) and limits threads.
pub(crate) fn torch() -> MutexGuard<'static, ()> {
    let guard = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    tch::set_num_threads(1);
    guard
}

/// The shared models with weights (and golden files); the paper-size configs
/// have neither.
const WITH_WEIGHTS: [&str; 6] = [
    "az_test_assistant",
    "az_test_human",
    "bc_human_inf_blocks",
    "bc_human_tutorial",
    "paper_assistant_small",
    "paper_human_small",
];

fn models_dir() -> PathBuf {
    PathBuf::from("../shared/models")
}

pub(crate) fn config_path(name: &str) -> PathBuf {
    models_dir().join(format!("{name}.json"))
}

#[test]
fn every_shared_model_matches_its_goldens() {
    let _torch = torch();
    let files = golden_files(&models_dir().join("golden")).unwrap();
    assert_eq!(files.len(), 6, "six golden files");
    let mut failures = Vec::new();
    for file in &files {
        let report = verify_model(file, Device::Cpu).unwrap();
        println!("{report}");
        // 8 steps of 3-4 outputs, the step-0 extras and the batched run.
        assert!(report.compared >= 8 * 3 + 3 + 3, "{report}");
        if !report.passed() {
            failures.push(report.to_string());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn parameter_counts_match_the_configs() {
    let _torch = torch();
    for name in WITH_WEIGHTS
        .iter()
        .chain(&["paper_assistant_full", "paper_human_full"])
    {
        let config = ModelConfig::read(&config_path(name)).unwrap();
        let stated = config.stated_num_parameters.unwrap();
        let model = Model::new(config, Device::Cpu).unwrap();
        assert_eq!(model.num_parameters(), stated, "{name}");
    }
    // The paper network: about 11.3 GFLOP per sample (shared ARCHITECTURE.md §11).
    let full = Model::new(
        ModelConfig::read(&config_path("paper_assistant_full")).unwrap(),
        Device::Cpu,
    )
    .unwrap();
    let gflops = full.flops_per_sample() as f64 / 1e9;
    assert!((11.2..11.6).contains(&gflops), "{gflops}");
}

/// The weights of `name` with one tensor replaced (or removed, for `None`), saved
/// in a temporary folder; returns the error of loading them.
fn load_tampered(name: &str, tensor: &str, replacement: Option<Tensor>) -> NnError {
    let weights = models_dir().join(format!("{name}.safetensors"));
    let mut tensors = Tensor::read_safetensors(&weights).unwrap();
    match replacement {
        Some(t) => match tensors.iter_mut().find(|(n, _)| n == tensor) {
            Some(entry) => entry.1 = t,
            None => tensors.push((tensor.to_owned(), t)),
        },
        None => tensors.retain(|(n, _)| n != tensor),
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.safetensors");
    Tensor::write_safetensors(&tensors, &path).unwrap();
    let config = ModelConfig::read(&config_path(name)).unwrap();
    let mut model = Model::new(config, Device::Cpu).unwrap();
    model.load_weights(&path).unwrap_err()
}

#[test]
fn bad_weights_give_errors_naming_the_tensor_and_shapes() {
    let _torch = torch();
    let name = "paper_human_small";
    let err = load_tampered(name, "backbone.layer_3.weight_hh_l0", None);
    assert!(
        matches!(&err, NnError::MissingTensor { name, expected, .. }
            if name == "backbone.layer_3.weight_hh_l0" && expected == &[64, 16]),
        "{err}"
    );
    let wrong = Tensor::zeros([16, 16, 3, 3, 3], (Kind::Float, Device::Cpu));
    let err = load_tampered(name, "backbone.layer_1.conv1.weight", Some(wrong));
    let text = err.to_string();
    assert!(
        text.contains("backbone.layer_1.conv1.weight")
            && text.contains("[16, 16, 3, 3, 3]")
            && text.contains("[16, 16, 5, 5, 5]"),
        "{text}"
    );
    let extra = Tensor::zeros([3], (Kind::Float, Device::Cpu));
    let err = load_tampered(name, "backbone.layer_9.conv1.weight", Some(extra));
    assert!(
        matches!(&err, NnError::UnexpectedTensor { name, .. } if name == "backbone.layer_9.conv1.weight"),
        "{err}"
    );
}

#[test]
fn checkpoints_round_trip_in_the_shared_format() {
    let _torch = torch();
    let dir = tempfile::tempdir().unwrap();
    for name in ["paper_human_small", "az_test_assistant"] {
        tch::manual_seed(7);
        let config = ModelConfig::read(&config_path(name)).unwrap();
        let state_dict_keys = config.json["state_dict_keys"].clone();
        let model = Model::new(config, Device::Cpu).unwrap();
        let saved = model.save(dir.path(), &format!("{name}_copy")).unwrap();
        let loaded = Model::load(&saved, Device::Cpu).unwrap();
        assert_eq!(loaded.config().name, format!("{name}_copy"));
        assert_eq!(loaded.config().net, model.config().net);
        // The saved state dict has exactly the reference's names and shapes.
        let file =
            Tensor::read_safetensors(dir.path().join(format!("{name}_copy.safetensors"))).unwrap();
        let mut saved_keys: Vec<(String, Vec<i64>)> =
            file.iter().map(|(n, t)| (n.clone(), t.size())).collect();
        saved_keys.sort();
        let mut want: Vec<(String, Vec<i64>)> = state_dict_keys
            .as_object()
            .unwrap()
            .iter()
            .map(|(n, v)| (n.clone(), serde_json::from_value(v[0].clone()).unwrap()))
            .collect();
        want.sort();
        assert_eq!(saved_keys, want, "{name}");
        // Identical outputs on the golden inputs, state carried for two steps.
        let golden =
            GoldenFile::read(&models_dir().join(format!("golden/{name}.safetensors"))).unwrap();
        let mut states = (None, None);
        for t in 0..2 {
            let batch = golden.inputs(t, 1).unwrap();
            let a = model.forward(&batch, states.0.as_ref()).unwrap();
            let b = loaded.forward(&batch, states.1.as_ref()).unwrap();
            assert!(a.flat_logits.equal(&b.flat_logits), "{name} step {t}");
            assert!(a.value.equal(&b.value));
            assert!(a.goal_logits.equal(&b.goal_logits));
            states = (Some(a.state), Some(b.state));
        }
    }
}

#[test]
fn a_saved_shared_model_still_matches_its_goldens() {
    let _torch = torch();
    let dir = tempfile::tempdir().unwrap();
    let model = Model::load(&config_path("bc_human_tutorial"), Device::Cpu).unwrap();
    let saved = model.save(dir.path(), "tutorial").unwrap();
    let loaded = Model::load(&saved, Device::Cpu).unwrap();
    let golden =
        GoldenFile::read(&models_dir().join("golden/bc_human_tutorial.safetensors")).unwrap();
    let report = verify_loaded(&loaded, &golden).unwrap();
    assert!(report.passed(), "{report}");
}

/// Simulator observations built from the goldens' arrays become exactly the
/// goldens' input tensors.
#[test]
fn observations_convert_to_the_golden_input_tensors() {
    let _torch = torch();
    for name in ["paper_human_small", "bc_human_tutorial"] {
        let golden = GoldenFile::read(Path::new(&format!(
            "../shared/models/golden/{name}.safetensors"
        )))
        .unwrap();
        let world = golden.get("step.world_obs").unwrap();
        let inventory = golden.get("step.inventory_obs").unwrap();
        let timestep = golden.get("step.timestep").unwrap();
        let [_, _, x, y, z] = world.size()[..] else {
            panic!("world_obs is rank 5")
        };
        let size = WorldSize::new(x as usize, y as usize, z as usize);
        let players = inventory.size()[1] as usize;
        let steps = world.size()[0];
        let observations: Vec<Observation> = (0..steps)
            .map(|t| {
                Observation::from_raw(
                    size,
                    players,
                    Vec::<u8>::try_from(world.get(t).flatten(0, -1)).unwrap(),
                    Vec::<i32>::try_from(inventory.get(t).flatten(0, -1)).unwrap(),
                    timestep.double_value(&[t]) as i32,
                )
            })
            .collect();
        let refs: Vec<&Observation> = observations.iter().collect();
        let prev: Vec<usize> = Vec::<i64>::try_from(golden.get("step.prev_action").unwrap())
            .unwrap()
            .into_iter()
            .map(|a| a as usize)
            .collect();
        let batch = ObsBatch::from_observations(&refs, Some(&prev), Device::Cpu).unwrap();
        assert_eq!(batch.world.size(), world.size());
        assert!(batch.world.equal(world), "{name}");
        assert!(batch.inventory.equal(inventory), "{name}");
        assert!(batch.timestep.equal(timestep), "{name}");
        let golden_batch = golden.inputs(0, steps).unwrap();
        assert!(
            batch
                .prev_action
                .unwrap()
                .equal(golden_batch.prev_action.as_ref().unwrap())
        );
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let _torch = torch();
    let model = Model::load(&config_path("bc_human_tutorial"), Device::Cpu).unwrap();
    let golden = GoldenFile::read(&models_dir().join("paper_human_small.safetensors"));
    // A weights file is not a golden file: reading works, but it has no inputs.
    assert!(golden.unwrap().inputs(0, 1).is_err());
    let other =
        GoldenFile::read(&models_dir().join("golden/paper_human_small.safetensors")).unwrap();
    let err = model
        .forward(&other.inputs(0, 1).unwrap(), None)
        .unwrap_err();
    assert!(
        matches!(err, NnError::BadInput { input: "world", .. }),
        "{err}"
    );
}

/// `forward` reads its inputs without writing to them (an in-place scaling of the
/// timestep view once changed the goldens' inputs between calls).
#[test]
fn forward_leaves_its_inputs_unchanged() {
    let _torch = torch();
    let model = Model::load(&config_path("paper_assistant_small"), Device::Cpu).unwrap();
    let golden =
        GoldenFile::read(&models_dir().join("golden/paper_assistant_small.safetensors")).unwrap();
    let batch = golden.inputs(0, 2).unwrap();
    let before = (
        batch.world.copy(),
        batch.inventory.copy(),
        batch.timestep.copy(),
    );
    let first = model.forward(&batch, None).unwrap();
    assert!(batch.world.equal(&before.0));
    assert!(batch.inventory.equal(&before.1));
    assert!(batch.timestep.equal(&before.2));
    let again = model.forward(&batch, None).unwrap();
    assert!(first.flat_logits.equal(&again.flat_logits));
}

/// `mbag nn verify-golden`: one line per model, then `N passed, M failed`, and exit
/// status 1 when a golden output is changed.
#[test]
fn the_cli_reports_a_changed_golden_output() {
    let _torch = torch();
    let dir = tempfile::tempdir().unwrap();
    let golden_dir = dir.path().join("golden");
    std::fs::create_dir(&golden_dir).unwrap();
    let name = "bc_human_tutorial";
    for ext in ["json", "safetensors"] {
        let file = format!("{name}.{ext}");
        std::fs::copy(models_dir().join(&file), dir.path().join(&file)).unwrap();
    }
    let run = || {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_mbag"))
            .args(["nn", "verify-golden", "--device", "cpu"])
            .arg(&golden_dir)
            .output()
            .expect("running mbag");
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
        )
    };
    let golden_file = golden_dir.join(format!("{name}.safetensors"));
    std::fs::copy(
        models_dir()
            .join("golden")
            .join(format!("{name}.safetensors")),
        &golden_file,
    )
    .unwrap();
    let (code, stdout) = run();
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.starts_with(&format!("ok   {name}: 30 tensors")),
        "{stdout}"
    );
    assert!(stdout.ends_with("\n1 passed, 0 failed\n"), "{stdout}");

    let mut tensors = Tensor::read_safetensors(&golden_file).unwrap();
    let value = tensors
        .iter_mut()
        .find(|(n, _)| n == "batch.value")
        .unwrap();
    value.1 = &value.1 + 1e-3;
    Tensor::write_safetensors(&tensors, &golden_file).unwrap();
    let (code, stdout) = run();
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("FAIL bc_human_tutorial"), "{stdout}");
    assert!(
        stdout.contains("batch.value: 8 of 8 values outside the tolerance"),
        "{stdout}"
    );
    assert!(stdout.ends_with("\n0 passed, 1 failed\n"), "{stdout}");
}

/// `mbag bench nn --model-file`: a trained model gets its own row, named by
/// its file stem; a file that is not there is an error naming it.
#[test]
fn bench_nn_times_a_model_file() {
    let _torch = torch();
    let file = models_dir().join("bc_human_tutorial.json");
    let run = |path: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mbag"))
            .args(["bench", "nn", "--models", "none", "--service-model", "none"])
            .args(["--batches", "2", "--seconds", "0.05", "--threads", "1"])
            .args(["--device", "cpu", "--model-file"])
            .arg(path)
            .output()
            .expect("running mbag")
    };
    let out = run(&file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| bc_human_tutorial"))
        .unwrap_or_else(|| panic!("a row for the file: {stdout}"));
    assert!(row.contains("|     2 |"), "{row}");
    let missing = run(std::path::Path::new("no/such/model.json"));
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/model.json"));
}

/// A model with its BatchNorms folded into its convolutions (as served models
/// are) still passes the goldens of every residual network, within the same
/// tolerance, and its folded outputs track the unfolded ones closely.
#[test]
fn folded_batch_norms_keep_the_goldens() {
    let _torch = torch();
    for name in ["paper_assistant_small", "paper_human_small"] {
        let golden =
            GoldenFile::read(&models_dir().join(format!("golden/{name}.safetensors"))).unwrap();
        let plain = Model::load(&config_path(name), Device::Cpu).unwrap();
        let mut folded = Model::load(&config_path(name), Device::Cpu).unwrap();
        folded.fold_batch_norm();
        let report = verify_loaded(&folded, &golden).unwrap();
        assert!(report.passed(), "{name}: {:?}", report.failures);
        let batch = golden.inputs(0, 2).unwrap();
        let a = plain.forward(&batch, None).unwrap().flat_logits;
        let b = folded.forward(&batch, None).unwrap().flat_logits;
        let diff = (&a - &b).abs().max().double_value(&[]);
        assert!(diff < 1e-4, "{name}: folded logits differ by {diff}");
    }
}

#[test]
fn the_precision_check_decides_per_shared_model_and_can_say_no() {
    use mbag::nn::Precision;
    use mbag::nn::reduced::{Tolerance, check, golden_file_of};
    let _torch = torch();
    let mut decisions = Vec::new();
    for name in WITH_WEIGHTS {
        let path = config_path(name);
        let model = Model::load(&path, Device::Cpu).unwrap();
        let golden = golden_file_of(&path).expect("every shared model has a golden file");
        let result = check(
            &model,
            Precision::Bf16,
            &Tolerance::default(),
            Some(&golden),
        )
        .unwrap();
        // What scripts/test prints: per model, bf16 used or not, int8 never.
        println!("{result}");
        assert!(result.states >= 20, "{result}");
        assert!(result.golden_error.is_some(), "{result}");
        decisions.push((name, result.passed()));
    }
    // The random-weight small networks round within the tolerance; the trained
    // BC human, whose goldens move by 4.2 in bf16, must be kept in f32.
    let used = |name: &str| decisions.iter().find(|(n, _)| *n == name).unwrap().1;
    assert!(used("paper_assistant_small"), "{decisions:?}");
    assert!(!used("bc_human_inf_blocks"), "{decisions:?}");
}
