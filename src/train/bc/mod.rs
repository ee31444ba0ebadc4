//! Behaviour cloning (`mbag train bc`): a policy network trained to predict a
//! player's recorded actions, as the paper trains its human models (appendix
//! E.3.1): the previous action as input, LSTMs unrolled over sequences of the
//! episode, dropout, block-type permutation, Adam, cross-entropy over the valid
//! actions, and a train/validation split by episode.
//!
//! A run writes into its output folder `metrics.jsonl` (every metric, see
//! [`crate::train::log`]), `checkpoints/` (resumable, see
//! [`crate::train::checkpoint`]), `config.json` (the run's config) and, at the
//! end, `model.json` + `model.safetensors` (the final network, loadable by
//! [`Model::load`] and `bc:` agent specs).

pub mod config;
pub mod cv;
pub mod data;
pub mod stream;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde_json::Value;
use tch::{Device, Kind, Tensor};

pub use config::{BcConfig, DataConfig, Fold, ModelSpec};
pub use data::{ActionGroup, Batch, Dataset, SeqRef, Split, split_episodes};
pub use stream::{NoopRows, StreamSpec};

use super::checkpoint::{Checkpointer, MODEL_NAME, Progress};
use super::error::TrainError;
use super::log::MetricsLog;
use super::optim::Adam;
use crate::nn::{Model, ModelConfig, RecurrentState};

/// The logit given to invalid actions (the reference's `MASK_LOGIT`).
const MASK_LOGIT: f64 = -1e8;

/// How a run is started.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Recordings (files or folders).
    pub data: Vec<PathBuf>,
    /// The output folder.
    pub out: PathBuf,
    /// Where to train.
    pub device: Device,
    /// Continue from the latest checkpoint in `out` (a fresh start if none).
    pub resume: bool,
    /// Draw a progress bar on stderr.
    pub progress_bar: bool,
    /// Stop after this many optimizer steps in this invocation (checkpointing
    /// first), as if interrupted; for tests and time-boxed runs.
    pub stop_after: Option<u64>,
    /// Stop (checkpointing first) at the first step that ends after this much
    /// wall time in this invocation: runs longer than a working session go on in
    /// chunks, each continued with `resume`.
    pub time_limit: Option<std::time::Duration>,
}

/// Cross-entropy and accuracy, overall and per target group.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores {
    /// Mean cross-entropy (nats) over learnable targets.
    pub cross_entropy: f64,
    /// Share of learnable targets that are the arg-max of the masked policy.
    pub accuracy: f64,
    /// Learnable targets scored.
    pub count: usize,
    /// Per group: `(cross_entropy, accuracy, count)`; groups without targets are
    /// left out.
    pub by_group: BTreeMap<ActionGroup, (f64, f64, usize)>,
}

impl Scores {
    /// `prefix/ce`, `prefix/accuracy`, `prefix/targets` (the count), and per
    /// group `prefix/ce_by_type/<group>`, `prefix/targets_by_type/<group>`,
    /// `prefix/accuracy_by_type/<group>`.
    pub fn metrics(&self, prefix: &str) -> Vec<(String, f64)> {
        let mut out = vec![
            (format!("{prefix}/ce"), self.cross_entropy),
            (format!("{prefix}/accuracy"), self.accuracy),
            (format!("{prefix}/targets"), self.count as f64),
        ];
        for (g, (ce, acc, n)) in &self.by_group {
            out.push((format!("{prefix}/ce_by_type/{}", g.name()), *ce));
            out.push((format!("{prefix}/accuracy_by_type/{}", g.name()), *acc));
            out.push((format!("{prefix}/targets_by_type/{}", g.name()), *n as f64));
        }
        out
    }
}

/// Sums behind [`Scores`].
#[derive(Clone, Debug, Default)]
struct ScoreSums {
    ce: [f64; 5],
    correct: [f64; 5],
    count: [usize; 5],
}

impl ScoreSums {
    fn add(&mut self, group: ActionGroup, ce: f64, correct: bool) {
        let g = group.index();
        self.ce[g] += ce;
        self.correct[g] += f64::from(u8::from(correct));
        self.count[g] += 1;
    }

    fn scores(&self) -> Scores {
        let count: usize = self.count.iter().sum();
        let n = count.max(1) as f64;
        let mut by_group = BTreeMap::new();
        for g in ActionGroup::ALL {
            let i = g.index();
            if self.count[i] > 0 {
                let c = self.count[i] as f64;
                by_group.insert(g, (self.ce[i] / c, self.correct[i] / c, self.count[i]));
            }
        }
        Scores {
            cross_entropy: self.ce.iter().sum::<f64>() / n,
            accuracy: self.correct.iter().sum::<f64>() / n,
            count,
            by_group,
        }
    }
}

/// The baselines a trained model must beat, scored on the validation episodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Baselines {
    /// A uniform policy over each step's valid actions (its accuracy is the
    /// expected one, 1 / valid actions).
    pub uniform: Scores,
    /// The training targets' action frequencies (add-one smoothed), restricted
    /// to each step's valid actions; its arg-max is the most frequent valid
    /// action.
    pub frequency: Scores,
}

impl Baselines {
    /// Scores both baselines on `valid`, with frequencies counted on `train`.
    pub fn compute(data: &Dataset, train: &[usize], valid: &[usize]) -> Self {
        let n = data.layout.len();
        let mut counts = vec![1.0f64; n];
        for &e in train {
            for t in 0..data.episodes[e].len() {
                if let Some(f) = data.episodes[e].target(t) {
                    counts[f as usize] += 1.0;
                }
            }
        }
        let mut uniform = ScoreSums::default();
        let mut frequency = ScoreSums::default();
        for &e in valid {
            for t in 0..data.episodes[e].len() {
                let Some(target) = data.episodes[e].target(t) else {
                    continue;
                };
                let group = data.group(target);
                let (mut k, mut total, mut best) = (0usize, 0.0f64, (0usize, f64::MIN));
                for f in data.valid_actions(e, t) {
                    k += 1;
                    total += counts[f];
                    if counts[f] > best.1 {
                        best = (f, counts[f]);
                    }
                }
                let k = k.max(1) as f64;
                // The expected accuracy of a uniform guess, as a fraction.
                uniform.ce[group.index()] += k.ln();
                uniform.correct[group.index()] += 1.0 / k;
                uniform.count[group.index()] += 1;
                let p = counts[target as usize] / total;
                frequency.add(group, -p.ln(), best.0 == target as usize);
            }
        }
        Self {
            uniform: uniform.scores(),
            frequency: frequency.scores(),
        }
    }
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct BcReport {
    /// Optimizer steps taken in total (earlier runs included).
    pub steps: u64,
    /// Steps taken by this invocation.
    pub steps_this_run: u64,
    /// Training samples (steps of data, padding excluded) consumed in total.
    pub samples: u64,
    /// Samples per second of this invocation (data, forward, backward, update).
    pub samples_per_s: f64,
    /// The last training-batch loss (mean cross-entropy).
    pub last_train_loss: f64,
    /// The last validation scores, on whole episodes with the recurrent state
    /// carried through ([`evaluate_episodes`]); `None` without validation
    /// episodes.
    pub validation: Option<Scores>,
    /// The baselines on the validation episodes.
    pub baselines: Option<Baselines>,
    /// Whether the run reached its planned end (else `stop_after` stopped it).
    pub finished: bool,
    /// The final model's config (when finished) or the last checkpoint's.
    pub model_path: PathBuf,
    /// The metrics log.
    pub log_path: PathBuf,
}

/// The model config JSON for a spec and a dataset: the class and net from the
/// spec, the env from the data.
pub fn model_config(
    spec: &ModelSpec,
    data: &Dataset,
    name: &str,
) -> Result<ModelConfig, TrainError> {
    let [x, y, z] = data.size.axes();
    let mut env_config = data.env_config.clone();
    if let Some(obj) = env_config.as_object_mut() {
        obj.insert("num_players".into(), Value::from(data.inventory_rows));
    }
    let num_inventory_obs = spec
        .net
        .get("num_inventory_obs")
        .and_then(Value::as_u64)
        .map_or(data.inventory_rows, |n| n as usize);
    let json = serde_json::json!({
        "name": name,
        "source": "mbag train bc",
        "weights_are_trained": true,
        "model_class": spec.class,
        "world_size": [x, y, z],
        "n_actions": data.layout.len(),
        "resolved": {"num_inventory_obs": num_inventory_obs},
        "custom_model_config": spec.net,
        "env_config": env_config,
    });
    Ok(ModelConfig::from_json(json)?)
}

/// Per-row losses of a batch: mean loss over targets as a tensor with
/// gradients, per-row cross-entropy and correctness, and the recurrent state
/// after each sequence.
struct BatchLoss {
    loss: Tensor,
    nll: Vec<f32>,
    correct: Vec<bool>,
    state: RecurrentState,
}

/// [`BatchLoss`] of `batch` from `state` before each sequence (`None`: zeros).
fn batch_loss(
    model: &Model,
    batch: &Batch,
    state: Option<&RecurrentState>,
    train: bool,
) -> Result<BatchLoss, TrainError> {
    let out = model.forward_seq_t(&batch.obs, batch.seq_len, state, train)?;
    let logits = out
        .flat_logits
        .masked_fill(&batch.mask.logical_not(), MASK_LOGIT);
    let logp = logits.log_softmax(1, Kind::Float);
    let has = batch.targets.ge(0);
    let idx = batch.targets.clamp_min(0).unsqueeze(1);
    let nll = -logp.gather(1, &idx, false).squeeze_dim(1);
    let weight = has.to_kind(Kind::Float);
    let n = weight.sum(Kind::Float).clamp_min(1.0);
    let loss = (&nll * &weight).sum(Kind::Float) / n;
    let correct = logits.argmax(1, false).eq_tensor(&batch.targets);
    Ok(BatchLoss {
        loss,
        nll: Vec::<f32>::try_from(nll.detach().to_device(Device::Cpu))?,
        correct: Vec::<bool>::try_from(correct.to_device(Device::Cpu))?,
        state: out.state,
    })
}

fn accumulate(sums: &mut ScoreSums, batch: &Batch, nll: &[f32], correct: &[bool]) {
    for (row, group) in batch.groups.iter().enumerate() {
        if let Some(g) = group {
            sums.add(*g, f64::from(nll[row]), correct[row]);
        }
    }
}

/// Scores the model on sequences, each from the zero state, as it trains (eval
/// mode, no augmentation).
pub fn evaluate(
    model: &Model,
    data: &Dataset,
    seqs: &[SeqRef],
    seq_len: usize,
    per_batch: usize,
) -> Result<Scores, TrainError> {
    let _guard = tch::no_grad_guard();
    let mut sums = ScoreSums::default();
    for chunk in seqs.chunks(per_batch.max(1)) {
        let batch = data.batch(chunk, seq_len, None, model.device());
        let scored = batch_loss(model, &batch, None, false)?;
        accumulate(&mut sums, &batch, &scored.nll, &scored.correct);
    }
    Ok(sums.scores())
}

/// Scores the model on whole episodes, as it plays them: each episode runs
/// through its consecutive `seq_len`-step sequences carrying the recurrent state
/// from one to the next, so late steps see the whole episode before them rather
/// than at most `seq_len` steps from a zero state. `per_batch` episodes run side
/// by side; one that has ended is padded (no targets) while the others go on.
pub fn evaluate_episodes(
    model: &Model,
    data: &Dataset,
    episodes: &[usize],
    seq_len: usize,
    per_batch: usize,
) -> Result<Scores, TrainError> {
    let _guard = tch::no_grad_guard();
    let seq_len = seq_len.max(1);
    let mut sums = ScoreSums::default();
    for group in episodes.chunks(per_batch.max(1)) {
        let cut: Vec<Vec<SeqRef>> = group
            .iter()
            .map(|&e| data.sequences(&[e], seq_len))
            .collect();
        let rounds = cut.iter().map(Vec::len).max().unwrap_or(0);
        let mut state: Option<RecurrentState> = None;
        for j in 0..rounds {
            let seqs: Vec<SeqRef> = cut
                .iter()
                .zip(group)
                .map(|(seqs, &episode)| {
                    seqs.get(j).copied().unwrap_or(SeqRef {
                        episode,
                        start: 0,
                        len: 0,
                    })
                })
                .collect();
            let batch = data.batch(&seqs, seq_len, None, model.device());
            let scored = batch_loss(model, &batch, state.as_ref(), false)?;
            accumulate(&mut sums, &batch, &scored.nll, &scored.correct);
            state = Some(scored.state);
        }
    }
    Ok(sums.scores())
}

/// A seed for one purpose at one position, so a resumed run draws what an
/// uninterrupted one would (SplitMix64 of the mixed inputs).
fn derive_seed(seed: u64, purpose: u64, position: u64) -> u64 {
    let mut z = seed
        ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ position.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const PURPOSE_SPLIT: u64 = 1;
const PURPOSE_ORDER: u64 = 2;
const PURPOSE_AUGMENT: u64 = 3;
const PURPOSE_TORCH: u64 = 4;

/// Trains (or resumes) a BC model. `config_json` is the config as read, stored
/// in checkpoints so a resumed run can tell a changed config.
pub fn train(config: &BcConfig, options: &RunOptions) -> Result<BcReport, TrainError> {
    let out = &options.out;
    std::fs::create_dir_all(out).map_err(TrainError::io(out))?;
    let config_json = serde_json::to_value(config).expect("a config serialises");
    let los = config
        .model
        .net
        .get("line_of_sight_masking")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let bar = |len: u64, msg: &str| {
        let pb = if options.progress_bar {
            ProgressBar::new(len)
        } else {
            ProgressBar::hidden()
        };
        pb.set_style(
            ProgressStyle::with_template(
                "{msg:>10} [{bar:30}] {pos}/{len} {elapsed} eta {eta} {per_sec}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        pb.set_message(msg.to_owned());
        pb
    };
    let load_started = Instant::now();
    let load_bar = bar(0, "replaying");
    let stream = StreamSpec {
        noop_rows: config.data.noop_rows,
        action_delay_s: config.data.action_delay_s,
    };
    let data = Dataset::load(
        &options.data,
        config.data.role,
        los,
        stream,
        &mut |done, total| {
            load_bar.set_length(total as u64);
            load_bar.set_position(done as u64);
        },
    )?;
    load_bar.finish_and_clear();
    let s = &data.stats;
    log::info!(
        "{:.1} s to replay {} recordings ({} skipped): {} episodes, {} rows ({} unlearnable targets, {} replay mismatches)",
        load_started.elapsed().as_secs_f64(),
        s.recordings,
        s.skipped_recordings,
        data.episodes.len(),
        s.steps,
        s.unlearnable_targets,
        s.replay_mismatches
    );
    let mut split_rng = StdRng::seed_from_u64(derive_seed(config.seed, PURPOSE_SPLIT, 0));
    let (train_eps, valid_eps) = split_episodes(&data, Split::of(&config.data), &mut split_rng)?;
    log::info!(
        "split by episode: {} training ({} targets), {} validation ({} targets): {}",
        train_eps.len(),
        data.learnable_steps(&train_eps),
        valid_eps.len(),
        data.learnable_steps(&valid_eps),
        valid_eps
            .iter()
            .map(|&e| data.episodes[e].id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let train_seqs = data.sequences(&train_eps, config.seq_len);
    let valid_seqs = data.sequences(&valid_eps, config.seq_len);
    let per_batch = config.sequences_per_batch();
    let steps_per_epoch = train_seqs.len().div_ceil(per_batch) as u64;
    let planned = config.epochs * steps_per_epoch;
    let total_steps = config.max_steps.map_or(planned, |m| m.min(planned));
    let baselines =
        (!valid_eps.is_empty()).then(|| Baselines::compute(&data, &train_eps, &valid_eps));

    let checkpointer = Checkpointer::new(out, config.keep_checkpoints);
    let resumed = if options.resume {
        checkpointer.load_latest(options.device)?
    } else {
        None
    };
    let adam_config = config.adam_for(total_steps);
    let (model, mut adam, mut progress, mut log) = match resumed {
        Some(loaded) => {
            if loaded.config != config_json {
                log::warn!(
                    "{}: the config differs from the checkpoint's; continuing with the new one",
                    loaded.paths.dir.display()
                );
            }
            let mut adam = Adam::new(loaded.model.var_store(), adam_config);
            loaded.restore_optimizer(&mut adam)?;
            let log = MetricsLog::resume(&out.join("metrics.jsonl"), loaded.progress.step)?;
            log::info!(
                "resuming from {} at step {}",
                loaded.paths.dir.display(),
                loaded.progress.step
            );
            (loaded.model, adam, loaded.progress, log)
        }
        None => {
            tch::manual_seed(derive_seed(config.seed, PURPOSE_TORCH, u64::MAX) as i64);
            let model = Model::new(
                model_config(&config.model, &data, MODEL_NAME)?,
                options.device,
            )?;
            let adam = Adam::new(model.var_store(), adam_config);
            let progress = Progress {
                seed: config.seed,
                ..Progress::default()
            };
            let log = MetricsLog::create(&out.join("metrics.jsonl"))?;
            (model, adam, progress, log)
        }
    };
    let config_path = out.join("config.json");
    std::fs::write(
        &config_path,
        serde_json::to_string_pretty(&config_json).expect("serialises") + "\n",
    )
    .map_err(TrainError::io(&config_path))?;
    log::info!(
        "model: {} parameters; {} training sequences of <= {} steps, {} per batch, {} steps per epoch, {} steps planned",
        model.num_parameters(),
        train_seqs.len(),
        config.seq_len,
        per_batch,
        steps_per_epoch,
        total_steps
    );

    let pb = bar(total_steps, "training");
    pb.set_position(progress.step);
    let started = Instant::now();
    let start_step = progress.step;
    let start_samples = progress.samples;
    let mut window = ScoreSums::default();
    let mut window_loss = (0.0, 0u64);
    let mut last_loss = f64::NAN;
    let mut last_valid: Option<Scores> = None;
    let mut last_checkpoint = None;
    // `valid/*` scores whole episodes with the state carried through, as the
    // model plays; `valid_cut/*` the zero-state sequences it trains on, so the
    // gap between them shows what the cut costs.
    let validate = |model: &Model| -> Result<(Scores, Scores), TrainError> {
        let whole = evaluate_episodes(
            model,
            &data,
            &valid_eps,
            config.seq_len,
            config.validation_sequences_per_batch,
        )?;
        let cut = evaluate(
            model,
            &data,
            &valid_seqs,
            config.seq_len,
            config.validation_sequences_per_batch,
        )?;
        Ok((whole, cut))
    };
    let write_validation = |log: &mut MetricsLog,
                            progress: &Progress,
                            (scores, cut): &(Scores, Scores)|
     -> Result<(), TrainError> {
        let mut metrics = scores.metrics("valid");
        metrics.extend(cut.metrics("valid_cut"));
        if let Some(b) = &baselines {
            metrics.extend([
                ("uniform/ce".to_owned(), b.uniform.cross_entropy),
                ("uniform/accuracy".to_owned(), b.uniform.accuracy),
                ("frequency/ce".to_owned(), b.frequency.cross_entropy),
                ("frequency/accuracy".to_owned(), b.frequency.accuracy),
            ]);
        }
        log.write(
            progress.step,
            progress.epoch,
            metrics.iter().map(|(k, v)| (k.as_str(), *v)),
        )?;
        Ok(())
    };
    if progress.step == 0 && !valid_seqs.is_empty() {
        let scores = validate(&model)?;
        write_validation(&mut log, &progress, &scores)?;
        last_valid = Some(scores.0);
    }
    let mut stopped_early = false;
    // Seconds in batch assembly, forward + loss, backward + update since the last log.
    let mut timing = [0.0f64; 3];
    while progress.step < total_steps {
        if progress.data_order.is_empty()
            || progress.epoch_position as usize >= progress.data_order.len()
        {
            if !progress.data_order.is_empty() {
                progress.epoch += 1;
            }
            let mut order: Vec<u64> = (0..train_seqs.len() as u64).collect();
            order.shuffle(&mut StdRng::seed_from_u64(derive_seed(
                config.seed,
                PURPOSE_ORDER,
                progress.epoch,
            )));
            progress.data_order = order;
            progress.epoch_position = 0;
        }
        let from = progress.epoch_position as usize;
        let to = (from + per_batch).min(progress.data_order.len());
        let seqs: Vec<SeqRef> = progress.data_order[from..to]
            .iter()
            .map(|&i| train_seqs[i as usize])
            .collect();
        let mut aug_rng =
            StdRng::seed_from_u64(derive_seed(config.seed, PURPOSE_AUGMENT, progress.step));
        let augment: Option<&mut dyn rand::RngCore> = if config.data.augment {
            Some(&mut aug_rng)
        } else {
            None
        };
        let t0 = Instant::now();
        let batch = data.batch(&seqs, config.seq_len, augment, options.device);
        let t1 = Instant::now();
        tch::manual_seed(derive_seed(config.seed, PURPOSE_TORCH, progress.step) as i64);
        let BatchLoss {
            loss, nll, correct, ..
        } = batch_loss(&model, &batch, None, true)?;
        let t2 = Instant::now();
        let stats = adam.backward_step(&loss);
        let t3 = Instant::now();
        timing[0] += (t1 - t0).as_secs_f64();
        timing[1] += (t2 - t1).as_secs_f64();
        timing[2] += (t3 - t2).as_secs_f64();
        last_loss = loss.double_value(&[]);
        let last_grad = (stats.grad_norm, stats.lr);
        accumulate(&mut window, &batch, &nll, &correct);
        window_loss.0 += last_loss;
        window_loss.1 += 1;
        progress.step += 1;
        progress.epoch_position = to as u64;
        progress.samples += seqs.iter().map(|s| s.len as u64).sum::<u64>();
        pb.inc(1);
        let epoch_done = to >= progress.data_order.len();
        let at_end = progress.step == total_steps;
        if progress.step % config.log_every == 0 || at_end {
            let elapsed = started.elapsed().as_secs_f64().max(1e-9);
            let mut metrics = window.scores().metrics("train");
            metrics.push((
                "train/loss".into(),
                window_loss.0 / window_loss.1.max(1) as f64,
            ));
            metrics.push(("optim/lr".into(), last_grad.1));
            metrics.push(("optim/grad_norm".into(), last_grad.0));
            metrics.push((
                "speed/samples_per_s".into(),
                (progress.samples - start_samples) as f64 / elapsed,
            ));
            let steps = window_loss.1.max(1) as f64;
            for (name, t) in ["batch", "forward", "backward"].iter().zip(timing) {
                metrics.push((format!("time/{name}_ms"), 1e3 * t / steps));
            }
            timing = [0.0; 3];
            log.write(
                progress.step,
                progress.epoch,
                metrics.iter().map(|(k, v)| (k.as_str(), *v)),
            )?;
            pb.set_message(format!(
                "loss {:.3}",
                window_loss.0 / window_loss.1.max(1) as f64
            ));
            window = ScoreSums::default();
            window_loss = (0.0, 0);
        }
        let stop_now = options
            .stop_after
            .is_some_and(|n| progress.step - start_step >= n)
            || options
                .time_limit
                .is_some_and(|limit| started.elapsed() >= limit);
        let validate_now = if config.validate_every == 0 {
            epoch_done
        } else {
            progress.step % config.validate_every == 0
        };
        if !valid_seqs.is_empty() && (validate_now || at_end || stop_now) {
            let scores = validate(&model)?;
            write_validation(&mut log, &progress, &scores)?;
            log::info!(
                "step {}: validation ce {:.4}, accuracy {:.4} (whole episodes; cut sequences {:.4}, {:.4})",
                progress.step,
                scores.0.cross_entropy,
                scores.0.accuracy,
                scores.1.cross_entropy,
                scores.1.accuracy
            );
            last_valid = Some(scores.0);
        }
        if progress.step % config.checkpoint_every == 0 || at_end || stop_now {
            progress.wall_s = log.wall_s();
            last_checkpoint = Some(checkpointer.save(&model, &adam, &progress, &config_json)?);
        }
        if stop_now && !at_end {
            stopped_early = true;
            break;
        }
    }
    pb.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    let finished = !stopped_early;
    let model_path = if finished {
        model.save(out, MODEL_NAME)?
    } else {
        last_checkpoint
            .map(|c| c.model_config())
            .unwrap_or_else(|| out.join(format!("{MODEL_NAME}.json")))
    };
    Ok(BcReport {
        steps: progress.step,
        steps_this_run: progress.step - start_step,
        samples: progress.samples,
        samples_per_s: (progress.samples - start_samples) as f64 / elapsed,
        last_train_loss: last_loss,
        validation: last_valid,
        baselines,
        finished,
        model_path,
        log_path: log.path().to_owned(),
    })
}

/// The output folder's final model config, if the run finished.
pub fn final_model(out: &Path) -> PathBuf {
    out.join(format!("{MODEL_NAME}.json"))
}
