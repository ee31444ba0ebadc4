//! Training checkpoints: everything a run needs to continue after a crash.
//!
//! A checkpoint is a folder `<out>/checkpoints/step_<N>/` holding
//! - `model.json` + `model.safetensors`: the network in the shared models'
//!   format ([`Model::save`]), loadable by [`Model::load`] and by `bc:`/`az:`
//!   agent specs;
//! - `optimizer.safetensors`: the [`Adam`] state;
//! - `progress.json`: [`Progress`] (step, epoch, seed, data order, and the
//!   trainer's own `extra` fields) plus the training config it was made under;
//! - whatever else the trainer writes into the folder ([`Checkpointer::save_with`]),
//!   such as the assistant trainer's replay buffer.
//!
//! The folder is written under a temporary name and renamed into place, then
//! `<out>/checkpoints/latest` (the folder's name) is replaced the same way, so a
//! crash at any point leaves the previous checkpoint intact and `latest` always
//! names a complete one. Older checkpoints beyond `keep` are deleted.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tch::Device;

use super::error::TrainError;
use super::optim::Adam;
use crate::nn::Model;

/// The model's file stem inside a checkpoint folder.
pub const MODEL_NAME: &str = "model";
const OPTIMIZER_FILE: &str = "optimizer.safetensors";
const PROGRESS_FILE: &str = "progress.json";
const LATEST_FILE: &str = "latest";

/// Where a run stands: what a resumed run needs besides weights and optimizer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    /// Optimizer steps taken.
    pub step: u64,
    /// The epoch in progress (0-based).
    pub epoch: u64,
    /// Training samples consumed so far.
    pub samples: u64,
    /// The run's seed; with `step` and `epoch` it fixes every later random draw
    /// (trainers derive per-step and per-epoch generators from it).
    pub seed: u64,
    /// Position inside the epoch's data order: items already consumed.
    pub epoch_position: u64,
    /// The epoch's data order (indices into the trainer's items), so a resumed
    /// epoch visits exactly the items the interrupted one had left.
    #[serde(default)]
    pub data_order: Vec<u64>,
    /// Training seconds so far, summed over resumed runs.
    pub wall_s: f64,
    /// Trainer-specific state (best validation loss, self-play iteration, ...).
    #[serde(default)]
    pub extra: Value,
}

/// The JSON document of `progress.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgressFile {
    format: String,
    progress: Progress,
    /// The training config, as JSON, that produced the checkpoint.
    config: Value,
}

const PROGRESS_FORMAT: &str = "mbag-train-checkpoint/1";

/// A checkpoint on disk.
#[derive(Clone, Debug)]
pub struct CheckpointPaths {
    /// Its folder.
    pub dir: PathBuf,
}

impl CheckpointPaths {
    /// The model's config (give it to [`Model::load`] or a `bc:` spec).
    pub fn model_config(&self) -> PathBuf {
        self.dir.join(format!("{MODEL_NAME}.json"))
    }

    /// The optimizer state.
    pub fn optimizer(&self) -> PathBuf {
        self.dir.join(OPTIMIZER_FILE)
    }

    /// The progress file.
    pub fn progress(&self) -> PathBuf {
        self.dir.join(PROGRESS_FILE)
    }

    /// A file a trainer wrote into the folder ([`Checkpointer::save_with`]).
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// A checkpoint read back: everything but the optimizer, which needs the model's
/// variables first ([`Loaded::restore_optimizer`]).
#[derive(Debug)]
pub struct Loaded {
    /// Where it was read from.
    pub paths: CheckpointPaths,
    /// The model, weights loaded.
    pub model: Model,
    /// The progress.
    pub progress: Progress,
    /// The training config it was made under.
    pub config: Value,
}

impl Loaded {
    /// Restores the optimizer state into `adam` (built on `self.model`'s store).
    pub fn restore_optimizer(&self, adam: &mut Adam) -> Result<(), TrainError> {
        adam.load(&self.paths.optimizer())
    }
}

/// Writes and finds the checkpoints of one run's output folder.
#[derive(Clone, Debug)]
pub struct Checkpointer {
    root: PathBuf,
    keep: usize,
}

impl Checkpointer {
    /// Checkpoints under `<out>/checkpoints`, keeping the newest `keep` (at least
    /// one).
    pub fn new(out: &Path, keep: usize) -> Self {
        Self {
            root: out.join("checkpoints"),
            keep: keep.max(1),
        }
    }

    /// The folder holding the checkpoints.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes a checkpoint at `progress.step` and makes it the latest.
    pub fn save(
        &self,
        model: &Model,
        adam: &Adam,
        progress: &Progress,
        config: &Value,
    ) -> Result<CheckpointPaths, TrainError> {
        self.save_with(model, adam, progress, config, &mut |_| Ok(()))
    }

    /// [`Checkpointer::save`], with `extra` writing the trainer's own files into
    /// the folder (given its temporary path) before it is renamed into place,
    /// so they appear together with the rest or not at all.
    pub fn save_with(
        &self,
        model: &Model,
        adam: &Adam,
        progress: &Progress,
        config: &Value,
        extra: &mut dyn FnMut(&Path) -> Result<(), TrainError>,
    ) -> Result<CheckpointPaths, TrainError> {
        std::fs::create_dir_all(&self.root).map_err(TrainError::io(&self.root))?;
        let name = format!("step_{:09}", progress.step);
        let final_dir = self.root.join(&name);
        let tmp_dir = self.root.join(format!(".tmp-{name}"));
        if tmp_dir.exists() {
            std::fs::remove_dir_all(&tmp_dir).map_err(TrainError::io(&tmp_dir))?;
        }
        std::fs::create_dir_all(&tmp_dir).map_err(TrainError::io(&tmp_dir))?;
        model.save(&tmp_dir, MODEL_NAME)?;
        adam.save(&tmp_dir.join(OPTIMIZER_FILE))?;
        let doc = ProgressFile {
            format: PROGRESS_FORMAT.to_owned(),
            progress: progress.clone(),
            config: config.clone(),
        };
        let text = serde_json::to_string_pretty(&doc).expect("progress serialises") + "\n";
        let progress_path = tmp_dir.join(PROGRESS_FILE);
        std::fs::write(&progress_path, text).map_err(TrainError::io(&progress_path))?;
        extra(&tmp_dir)?;
        sync_dir(&tmp_dir);
        if final_dir.exists() {
            // A checkpoint of the same step from an earlier, crashed run.
            std::fs::remove_dir_all(&final_dir).map_err(TrainError::io(&final_dir))?;
        }
        std::fs::rename(&tmp_dir, &final_dir).map_err(TrainError::io(&final_dir))?;
        write_atomically(&self.root.join(LATEST_FILE), &format!("{name}\n"))?;
        sync_dir(&self.root);
        self.prune(&name)?;
        Ok(CheckpointPaths { dir: final_dir })
    }

    /// Keeps the newest `keep` checkpoints, and removes the temporary folders of
    /// saves that a crash or an interrupt cut short (they are never loaded, but
    /// would otherwise be left lying in the run, and committed with it).
    fn prune(&self, latest: &str) -> Result<(), TrainError> {
        for entry in std::fs::read_dir(&self.root)
            .map_err(TrainError::io(&self.root))?
            .filter_map(|e| e.ok())
        {
            if entry.file_name().to_string_lossy().starts_with(".tmp-") {
                let dir = entry.path();
                std::fs::remove_dir_all(&dir).map_err(TrainError::io(&dir))?;
            }
        }
        let mut names = self.list()?;
        names.retain(|n| n.as_str() != latest);
        let excess = (names.len() + 1).saturating_sub(self.keep);
        for name in names.into_iter().take(excess) {
            let dir = self.root.join(name);
            std::fs::remove_dir_all(&dir).map_err(TrainError::io(&dir))?;
        }
        Ok(())
    }

    /// The complete checkpoints' folder names, oldest first.
    fn list(&self) -> Result<Vec<String>, TrainError> {
        if !self.root.exists() {
            return Ok(Vec::new());
        }
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .map_err(TrainError::io(&self.root))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("step_"))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The latest complete checkpoint, if any.
    pub fn latest(&self) -> Result<Option<CheckpointPaths>, TrainError> {
        let pointer = self.root.join(LATEST_FILE);
        if !pointer.exists() {
            return Ok(None);
        }
        let name = std::fs::read_to_string(&pointer).map_err(TrainError::io(&pointer))?;
        let dir = self.root.join(name.trim());
        if !dir.join(PROGRESS_FILE).exists() {
            return Err(TrainError::Checkpoint {
                path: dir,
                message: format!("named by {} but incomplete", pointer.display()),
            });
        }
        Ok(Some(CheckpointPaths { dir }))
    }

    /// Loads the latest checkpoint's model and progress onto `device`.
    pub fn load_latest(&self, device: Device) -> Result<Option<Loaded>, TrainError> {
        match self.latest()? {
            Some(paths) => load(paths, device).map(Some),
            None => Ok(None),
        }
    }
}

/// Loads a checkpoint folder's model and progress onto `device`.
pub fn load(paths: CheckpointPaths, device: Device) -> Result<Loaded, TrainError> {
    let progress_path = paths.progress();
    let text = std::fs::read_to_string(&progress_path).map_err(TrainError::io(&progress_path))?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let doc: ProgressFile =
        serde_path_to_error::deserialize(&mut de).map_err(|e| TrainError::Json {
            path: progress_path.clone(),
            line: None,
            message: format!("{}: {}", e.path(), e.inner()),
        })?;
    if doc.format != PROGRESS_FORMAT {
        return Err(TrainError::Checkpoint {
            path: progress_path,
            message: format!("format {:?}, expected {PROGRESS_FORMAT:?}", doc.format),
        });
    }
    let model = Model::load(&paths.model_config(), device)?;
    Ok(Loaded {
        paths,
        model,
        progress: doc.progress,
        config: doc.config,
    })
}

/// Replaces `path` with `text` through a temporary file and a rename.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), TrainError> {
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(TrainError::io(&tmp))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(TrainError::io(&tmp))?;
    }
    std::fs::rename(&tmp, path).map_err(TrainError::io(path))
}

/// Syncs a folder's entries to disk where the platform allows; a failure only
/// weakens crash safety, so it is logged, not returned.
fn sync_dir(dir: &Path) {
    if let Err(e) = std::fs::File::open(dir).and_then(|f| f.sync_all()) {
        log::debug!("{}: directory sync failed: {e}", dir.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::ModelConfig;
    use crate::train::optim::AdamConfig;

    fn small_model() -> Model {
        let path = crate::cli::shared_dir().join("models/bc_human_tutorial.json");
        Model::new(ModelConfig::read(&path).unwrap(), Device::Cpu).unwrap()
    }

    #[test]
    fn checkpoints_round_trip_and_old_ones_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let model = small_model();
        let adam = Adam::new(model.var_store(), AdamConfig::new(1e-3));
        let saver = Checkpointer::new(dir.path(), 2);
        assert!(saver.latest().unwrap().is_none());
        let config = serde_json::json!({"lr": 1e-3});
        for step in [10, 20, 30] {
            let progress = Progress {
                step,
                epoch: 1,
                seed: 7,
                data_order: vec![3, 1, 2],
                extra: serde_json::json!({"best": 0.5}),
                ..Progress::default()
            };
            saver.save(&model, &adam, &progress, &config).unwrap();
        }
        let loaded = saver.load_latest(Device::Cpu).unwrap().unwrap();
        assert_eq!(loaded.progress.step, 30);
        assert_eq!(loaded.progress.data_order, [3, 1, 2]);
        assert_eq!(loaded.config, config);
        let mut fresh = Adam::new(loaded.model.var_store(), AdamConfig::new(1e-3));
        loaded.restore_optimizer(&mut fresh).unwrap();
        let names: Vec<String> = saver.list().unwrap();
        assert_eq!(names, ["step_000000020", "step_000000030"]);
        // The weights equal the saved model's.
        let a = model.var_store().variables();
        for (name, t) in loaded.model.var_store().variables() {
            assert!(t.equal(&a[&name]), "{name}");
        }
    }

    #[test]
    fn a_stale_temporary_folder_does_not_hide_the_latest_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let model = small_model();
        let adam = Adam::new(model.var_store(), AdamConfig::new(1e-3));
        let saver = Checkpointer::new(dir.path(), 3);
        let progress = Progress {
            step: 5,
            ..Progress::default()
        };
        saver.save(&model, &adam, &progress, &Value::Null).unwrap();
        // A crash while writing step 6 leaves only its temporary folder.
        std::fs::create_dir_all(saver.root().join(".tmp-step_000000006")).unwrap();
        assert_eq!(
            saver
                .load_latest(Device::Cpu)
                .unwrap()
                .unwrap()
                .progress
                .step,
            5
        );
        // The next save clears it away.
        let progress = Progress {
            step: 7,
            ..Progress::default()
        };
        saver.save(&model, &adam, &progress, &Value::Null).unwrap();
        assert!(!saver.root().join(".tmp-step_000000006").exists());
    }
}
