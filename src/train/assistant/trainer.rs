//! The training loop: each iteration plays `rollout_len` moves in every
//! environment with the current network behind an inference service, adds the
//! fragments to the replay buffer, then runs SGD on samples drawn from it, logs
//! every metric and checkpoints every `checkpoint_every` iterations.
//!
//! A run resumes from its latest checkpoint (weights, Adam's state, iteration,
//! counters and the replay buffer, [`super::replay_file`]), so a crash loses at
//! most the iterations since it. The episodes in progress are not
//! checkpointed (their environments, human models and search trees): a resumed
//! run starts new episodes, seeded from the iteration it resumes at, so it
//! reproduces itself but not the self-play of an uninterrupted run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde_json::{Value, json};
use tch::{Device, Tensor};

use super::AssistantError;
use super::batch::{cat_targets, inputs_and_targets};
use super::config::{Corpus, ResolvedConfig};
use super::goal_eval::HeldOutGoals;
use super::loss::{Coefficients, LossTerms, Predictions, assistant_loss};
use super::partial_builds::PartialBuilds;
use super::remote::{RemoteSettings, RemoteWorkers, SharedSetup};
use super::replay::{Fragment, ReplayBuffer, Sample};
use super::replay_file::{REPLAY_FILE, ReplayShape, read_replay, write_replay};
use super::selfplay::{Collection, SelfPlay, SelfPlaySettings};
use crate::agents::spec::{AgentFactory, AgentSpec};
use crate::nn::{
    InferenceService, Model, ModelConfig, Outputs, Precision, RecurrentState, ServiceConfig,
};
use crate::recording::starts::Starts;
use crate::train::{Adam, AdamConfig, Checkpointer, MetricsLog, Progress};

/// The metrics log's file name inside the output folder.
pub const LOG_FILE: &str = "metrics.jsonl";
/// The final model's file stem in the output folder (`az:OUT/model.json`).
pub const FINAL_MODEL: &str = "model";
/// Checkpoints kept.
const KEEP_CHECKPOINTS: usize = 3;

/// How to run one training.
#[derive(Debug)]
pub struct RunOptions {
    /// The human model.
    pub human: AgentSpec,
    /// The output folder (log, checkpoints).
    pub out: PathBuf,
    /// Where the network runs.
    pub device: Device,
    /// Continue from the latest checkpoint in `out` (a fresh start if none).
    pub resume: bool,
    /// Stop after this many iterations in total instead of the config's.
    pub stop_after: Option<u64>,
    /// Stop (checkpointing) after the first iteration that ends this long
    /// after the run started.
    pub time_limit: Option<std::time::Duration>,
    /// The number format self-play's searches evaluate the network in. Anything
    /// but `f32` plays on a converted copy of the weights, made each iteration,
    /// while training keeps updating the `f32` ones.
    pub selfplay_precision: Precision,
    /// Recorded moments self-play episodes start from (`--starts DIR`), instead
    /// of fresh worlds on the config's goals.
    pub starts: Option<Arc<Starts>>,
    /// Self-play on workers that connect to this port (`--ray`), instead of on
    /// this process's threads.
    pub remote: Option<RemoteSettings>,
}

/// What one iteration did, for progress displays.
#[derive(Clone, Debug)]
pub struct IterationReport {
    /// Iterations done (1 after the first).
    pub iteration: u64,
    /// Iterations planned.
    pub iterations: u64,
    /// The metrics logged.
    pub metrics: Vec<(String, f64)>,
    /// The checkpoint written this iteration, if any (its model config).
    pub checkpoint: Option<PathBuf>,
}

impl IterationReport {
    /// A metric by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.metrics.iter().find(|(k, _)| k == name).map(|m| m.1)
    }
}

/// The end of a run.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// The final model's config, `OUT/model.json` (an `az:` spec's path).
    pub model: PathBuf,
    /// Iterations done in total (resumed runs included).
    pub iterations: u64,
    /// The last iteration's metrics.
    pub last: Vec<(String, f64)>,
}

/// Trains an assistant as `config` says, calling `on_iteration` after each
/// iteration.
pub fn train(
    config: &ResolvedConfig,
    options: &RunOptions,
    factory: &dyn AgentFactory,
    on_iteration: &mut dyn FnMut(&IterationReport),
) -> Result<RunSummary, AssistantError> {
    let t = &config.file.training;
    let iterations = options.stop_after.unwrap_or(t.iterations).min(t.iterations);
    std::fs::create_dir_all(&options.out).map_err(|e| AssistantError::Config {
        path: options.out.clone(),
        message: format!("cannot create the output folder: {e}"),
    })?;
    let checkpointer = Checkpointer::new(&options.out, KEEP_CHECKPOINTS);
    let run_config = json!({
        "config": config.file,
        "human": options.human.to_string(),
    });
    let adam_config = AdamConfig {
        grad_clip: Some(t.grad_clip),
        ..AdamConfig::new(t.learning_rate)
    };
    let log_path = options.out.join(LOG_FILE);
    let shape = ReplayShape::of(config);
    let resumed = if options.resume {
        checkpointer.load_latest(options.device)?
    } else {
        if let Some(existing) = checkpointer.latest()? {
            return Err(AssistantError::Config {
                path: options.out.clone(),
                message: format!(
                    "already holds a run ({}); resume it or choose another output folder",
                    existing.dir.display()
                ),
            });
        }
        None
    };
    let (mut model, mut adam, mut progress, mut log, mut replay) = match resumed {
        Some(loaded) => {
            if loaded.config != run_config {
                log::warn!(
                    "resuming {} under a different config or human than it was made with",
                    loaded.paths.dir.display()
                );
            }
            let mut adam = Adam::new(loaded.model.var_store(), adam_config);
            loaded.restore_optimizer(&mut adam)?;
            let log = MetricsLog::resume(&log_path, loaded.progress.step)?;
            let replay_path = loaded.paths.file(REPLAY_FILE);
            let replay = if replay_path.exists() {
                read_replay(&replay_path, &shape, t.replay_capacity)?
            } else {
                log::warn!(
                    "{} has no replay buffer (made by an older mbag); it refills from self-play",
                    loaded.paths.dir.display()
                );
                ReplayBuffer::new(t.replay_capacity)
            };
            log::info!(
                "resumed from {} at iteration {} with {} samples in the replay buffer",
                loaded.paths.dir.display(),
                loaded.progress.epoch,
                replay.len()
            );
            (loaded.model, adam, loaded.progress, log, replay)
        }
        None => {
            tch::manual_seed(t.seed as i64);
            let mut model = Model::new(config.model.clone(), options.device)?;
            if let Some(init) = &config.file.model.init {
                let init_config = ModelConfig::read(init)?;
                let fresh = model.warm_start(&Model::weights_path(init, &init_config))?;
                log::info!("starting from the weights of {}", init.display());
                if !fresh.is_empty() {
                    log::info!(
                        "{} not in it: left at their initial values",
                        fresh.join(", ")
                    );
                }
            }
            let adam = Adam::new(model.var_store(), adam_config);
            let progress = Progress {
                seed: t.seed,
                ..Progress::default()
            };
            let replay = ReplayBuffer::new(t.replay_capacity);
            (
                model,
                adam,
                progress,
                MetricsLog::create(&log_path)?,
                replay,
            )
        }
    };
    let start = progress.epoch;
    let line_of_sight = config.model.json["custom_model_config"]["line_of_sight_masking"]
        .as_bool()
        .unwrap_or(false);
    let threads = if t.threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        t.threads
    };
    let keep_goal_logits = config.file.loss.prev_goal_kl != super::config::Schedule::Constant(0.0);
    // A resumed run plays new episodes, not the first run's again.
    let seed = t.seed.wrapping_add(start.wrapping_mul(0x9e37_79b9));
    // Only the corpus in use is built: self-play's environments and human
    // models cost a model load per environment.
    let mut source = match (&t.corpus, &options.remote) {
        (Corpus::SelfPlay, Some(remote)) => {
            let setup = SharedSetup {
                config: serde_json::to_string(&config.file).expect("configs serialise"),
                human: options.human.clone(),
                num_envs: t.num_envs,
                threads,
                seed,
                rollout_len: t.rollout_len,
                keep_goal_logits,
                line_of_sight,
                precision: options.selfplay_precision,
                starts: options.starts.clone(),
            };
            log::info!(
                "waiting for {} self-play workers on {}",
                remote.workers,
                remote
                    .listener
                    .local_addr()
                    .map_or("?".into(), |a| a.to_string())
            );
            Source::Remote(RemoteWorkers::accept(remote, &setup, shape)?)
        }
        (Corpus::SelfPlay, None) => Source::SelfPlay(SelfPlay::new(
            &SelfPlaySettings {
                env: config.env.clone(),
                goals: config.goals.clone(),
                human: options.human.clone(),
                mcts: config.mcts.clone(),
                num_envs: t.num_envs,
                threads,
                seed,
                line_of_sight,
                gamma: t.gamma,
                assistant: t.assistant,
                starts: options.starts.clone(),
            },
            factory,
            keep_goal_logits,
        )?),
        (Corpus::PartialBuilds, Some(_)) => {
            return Err(AssistantError::Config {
                path: "training.corpus".into(),
                message: "partial_builds are made on the learner; --ray plays self-play only"
                    .into(),
            });
        }
        (Corpus::PartialBuilds, None) => {
            if !model.initial_state(1).is_empty() {
                return Err(AssistantError::Config {
                    path: "training.corpus".into(),
                    message: "partial_builds are single steps; a recurrent network cannot learn from them".into(),
                });
            }
            Source::PartialBuilds(PartialBuilds::new(
                &config.env,
                &config.goals,
                seed,
                line_of_sight,
            )?)
        }
    };
    let held_out = match &config.file.validation {
        Some(v) => {
            let started = Instant::now();
            let (returned, set) = HeldOutGoals::collect(
                config,
                v,
                &options.human,
                factory,
                model,
                line_of_sight,
                threads,
            )?;
            model = returned;
            let b = set.baseline();
            log::info!(
                "held-out goals: {} samples played in {:.1} s; block-frequency baseline: cross-entropy {:.3}, accuracy {:.3}",
                set.samples(),
                started.elapsed().as_secs_f64(),
                b.cross_entropy,
                b.accuracy
            );
            Some((v.every, set))
        }
        None => None,
    };
    let n_actions = config.model.n_actions();
    let recurrent = !model.initial_state(1).is_empty();
    let mut extra = Counters::from_json(&progress.extra);
    let mut saved_any = start > 0;
    let mut last = Vec::new();
    let service_config = ServiceConfig {
        max_batch: (t.num_envs * config.mcts.leaves_per_batch.max(1)).max(1),
        ..ServiceConfig::default()
    };
    let started = std::time::Instant::now();
    for iteration in start..iterations {
        let (collected, service_stats) = match &mut source {
            Source::Remote(workers) => (
                workers
                    .collect(&model, iteration)
                    .map_err(AssistantError::from),
                crate::nn::ServiceStats::default(),
            ),
            Source::PartialBuilds(builds) => (
                builds.collect(t.num_envs * t.rollout_len),
                crate::nn::ServiceStats::default(),
            ),
            Source::SelfPlay(selfplay) => {
                // An f32 run lends the learner's own model to the service and
                // takes it back; a reduced-precision one plays a converted copy.
                let mut play = |player: Model| -> Result<_, AssistantError> {
                    let service = InferenceService::spawn(player, service_config)?;
                    let collected = selfplay.collect(service.handle(), t.rollout_len);
                    let (player, stats) = service.shutdown_into_model()?;
                    Ok((collected, stats, player))
                };
                if options.selfplay_precision == Precision::F32 {
                    let (collected, stats, returned) = play(model)?;
                    model = returned;
                    (collected, stats)
                } else {
                    let (collected, stats, _) =
                        play(model.inference_copy(options.selfplay_precision)?)?;
                    (collected, stats)
                }
            }
        };
        let collected = collected?;
        extra.env_steps += collected.env_steps;
        extra.episodes += collected.episodes.len() as u64;
        let mut metrics = selfplay_metrics(&collected);
        metrics.push((
            "selfplay/mean_batch".into(),
            service_stats.mean_batch_size(),
        ));
        for fragment in collected.fragments {
            replay.push(fragment);
        }
        metrics.push(("replay/samples".into(), replay.len() as f64));
        // Schedules run over the config's whole training, wherever this run stops.
        let fraction = iteration as f64 / t.iterations.max(1) as f64;
        let coefficients = Coefficients {
            policy: config.file.loss.policy,
            value: config.file.loss.value,
            goal: config.file.loss.goal,
            prev_goal_kl: config.file.loss.prev_goal_kl.at(fraction),
            other_action: config.file.loss.other_action,
        };
        if replay.len() >= t.min_replay.max(1) {
            let mut rng = StdRng::seed_from_u64(t.seed ^ iteration.wrapping_mul(0x2545_f491));
            let sgd_start = Instant::now();
            let mut drawn = replay.draw(t.samples_per_iteration, &mut rng);
            let mut sums = TermSums::default();
            let mut samples = 0u64;
            for _ in 0..t.epochs {
                drawn.shuffle(&mut rng);
                let (terms, n) = if recurrent {
                    let per = (t.minibatch_size / t.rollout_len).max(1);
                    sgd_recurrent(&model, &mut adam, &drawn, per, n_actions, &coefficients)?
                } else {
                    let mut flat: Vec<&Sample> =
                        drawn.iter().flat_map(|f| f.samples.iter()).collect();
                    flat.shuffle(&mut rng);
                    sgd_flat(
                        &model,
                        &mut adam,
                        &flat,
                        t.minibatch_size,
                        n_actions,
                        &coefficients,
                    )?
                };
                sums.merge(terms);
                samples += n;
            }
            let seconds = sgd_start.elapsed().as_secs_f64();
            progress.samples += samples;
            metrics.extend(sums.means());
            metrics.push((
                "sgd/samples_per_s".into(),
                samples as f64 / seconds.max(1e-9),
            ));
            metrics.push(("sgd/samples".into(), samples as f64));
        }
        if let Some((every, set)) = &held_out
            && ((iteration + 1) % every == 0 || iteration + 1 == iterations)
        {
            let scores = set.score(&model)?;
            let baseline = set.baseline();
            metrics.push(("valid/goal_ce".into(), scores.cross_entropy));
            metrics.push(("valid/goal_accuracy".into(), scores.accuracy));
            // The first level (2/3) keeps the plain names the logs began with.
            for (k, c) in scores.confident.iter().enumerate() {
                let suffix = if k == 0 {
                    String::new()
                } else {
                    format!("_p{:.0}", 100.0 * c.level)
                };
                metrics.push((format!("valid/confident_places{suffix}"), c.per_observation));
                if c.precision.is_finite() {
                    metrics.push((format!("valid/confident_precision{suffix}"), c.precision));
                }
            }
            metrics.push(("valid/frequency_goal_ce".into(), baseline.cross_entropy));
            metrics.push(("valid/frequency_goal_accuracy".into(), baseline.accuracy));
            metrics.push((
                "valid/current_world_goal_accuracy".into(),
                set.current_world_accuracy(),
            ));
        }
        metrics.push(("train/lr".into(), adam.current_lr()));
        metrics.push(("train/prev_goal_kl_coeff".into(), coefficients.prev_goal_kl));
        metrics.push(("selfplay/total_env_steps".into(), extra.env_steps as f64));
        progress.step = adam.step_count();
        progress.epoch = iteration + 1;
        progress.wall_s = log.wall_s();
        progress.extra = extra.to_json();
        log.write(
            progress.step,
            progress.epoch,
            metrics.iter().map(|(k, v)| (k.as_str(), *v)),
        )?;
        let mut checkpoint = None;
        let out_of_time = options
            .time_limit
            .is_some_and(|limit| started.elapsed() >= limit);
        if progress.epoch % t.checkpoint_every == 0 || progress.epoch == iterations || out_of_time {
            let paths =
                checkpointer.save_with(&model, &adam, &progress, &run_config, &mut |dir| {
                    write_replay(&replay, &shape, &dir.join(REPLAY_FILE))
                })?;
            checkpoint = Some(paths.model_config());
            saved_any = true;
        }
        on_iteration(&IterationReport {
            iteration: progress.epoch,
            iterations,
            metrics: metrics.clone(),
            checkpoint,
        });
        last = metrics;
        if out_of_time {
            log::info!(
                "time limit reached after iteration {}; --resume continues",
                progress.epoch
            );
            break;
        }
    }
    if !saved_any {
        // Asked for no iterations at all: the untrained network, checkpointed so
        // that a later --resume starts from it.
        checkpointer.save_with(&model, &adam, &progress, &run_config, &mut |dir| {
            write_replay(&replay, &shape, &dir.join(REPLAY_FILE))
        })?;
    }
    let final_model = model.save(&options.out, FINAL_MODEL)?;
    Ok(RunSummary {
        model: final_model,
        iterations: progress.epoch,
        last,
    })
}

/// Where each iteration's samples come from (`training.corpus`).
// One value per run, on the stack: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Source {
    SelfPlay(SelfPlay),
    PartialBuilds(PartialBuilds),
    /// Self-play on workers elsewhere (`--ray`).
    Remote(RemoteWorkers),
}

/// Run-wide counters kept in the checkpoint's `extra`.
#[derive(Debug, Default)]
struct Counters {
    env_steps: u64,
    episodes: u64,
}

impl Counters {
    fn from_json(v: &Value) -> Self {
        Self {
            env_steps: v["env_steps"].as_u64().unwrap_or(0),
            episodes: v["episodes"].as_u64().unwrap_or(0),
        }
    }

    fn to_json(&self) -> Value {
        json!({"env_steps": self.env_steps, "episodes": self.episodes})
    }
}

fn selfplay_metrics(c: &Collection) -> Vec<(String, f64)> {
    let per_s = |n: u64| n as f64 / c.seconds.max(1e-9);
    let mut m = vec![
        ("selfplay/env_steps_per_s".to_owned(), per_s(c.env_steps)),
        ("selfplay/sims_per_s".to_owned(), per_s(c.simulations)),
        ("selfplay/seconds".to_owned(), c.seconds),
        ("selfplay/episodes".to_owned(), c.episodes.len() as f64),
    ];
    if !c.episodes.is_empty() {
        let n = c.episodes.len() as f64;
        let mean = |f: &dyn Fn(&super::selfplay::EpisodeStats) -> f64| {
            c.episodes.iter().map(f).sum::<f64>() / n
        };
        m.push((
            "episode/goal_pct".into(),
            100.0 * mean(&|e| e.goal_percentage),
        ));
        m.push((
            "episode/assistant_goal_pct".into(),
            100.0 * mean(&|e| e.assistant_goal_percentage),
        ));
        m.push((
            "episode/assistant_reward".into(),
            mean(&|e| e.assistant_reward),
        ));
        m.push(("episode/length".into(), mean(&|e| e.length as f64)));
    }
    m
}

/// Sums of the loss terms over minibatches, weighted by their sample counts.
#[derive(Debug, Default)]
struct TermSums {
    n: f64,
    sums: Vec<(&'static str, f64)>,
}

impl TermSums {
    fn add(&mut self, terms: &LossTerms, samples: usize) {
        let w = samples as f64;
        let named = terms.named();
        if self.sums.is_empty() {
            self.sums = named.iter().map(|&(k, _)| (k, 0.0)).collect();
        }
        for (sum, (_, v)) in self.sums.iter_mut().zip(named) {
            sum.1 += v * w;
        }
        self.n += w;
    }

    fn merge(&mut self, other: TermSums) {
        if self.sums.is_empty() {
            *self = other;
            return;
        }
        for (a, b) in self.sums.iter_mut().zip(other.sums) {
            a.1 += b.1;
        }
        self.n += other.n;
    }

    fn means(&self) -> Vec<(String, f64)> {
        self.sums
            .iter()
            .map(|&(k, s)| (format!("train/{k}"), s / self.n.max(1.0)))
            .collect()
    }
}

fn predictions(outputs: &Outputs) -> Predictions {
    Predictions {
        policy_logits: outputs.flat_logits.shallow_clone(),
        value: outputs.value.shallow_clone(),
        goal_logits: outputs.goal_logits.shallow_clone(),
        other_action_logits: outputs
            .other_agent_logits
            .as_ref()
            .map_or_else(|| outputs.flat_logits.zeros_like(), Tensor::shallow_clone),
    }
}

/// SGD on single samples (a stateless network).
fn sgd_flat(
    model: &Model,
    adam: &mut Adam,
    samples: &[&Sample],
    minibatch: usize,
    n_actions: usize,
    c: &Coefficients,
) -> Result<(TermSums, u64), AssistantError> {
    let mut sums = TermSums::default();
    let mut n = 0;
    for chunk in samples.chunks(minibatch) {
        let weights = vec![1f32; chunk.len()];
        let (inputs, targets) = inputs_and_targets(chunk, &weights, n_actions, model.device())?;
        let outputs = model.forward_t(&inputs, None, true)?;
        let terms = assistant_loss(&predictions(&outputs), &targets, c);
        adam.backward_step(&terms.total);
        sums.add(&terms, chunk.len());
        n += chunk.len() as u64;
    }
    Ok((sums, n))
}

/// SGD on whole fragments, unrolling the network over their steps from the
/// state each fragment began with; short fragments are padded with weight 0.
fn sgd_recurrent(
    model: &Model,
    adam: &mut Adam,
    fragments: &[&Fragment],
    per_minibatch: usize,
    n_actions: usize,
    c: &Coefficients,
) -> Result<(TermSums, u64), AssistantError> {
    let mut sums = TermSums::default();
    let mut n = 0;
    let device = model.device();
    for group in fragments.chunks(per_minibatch) {
        let zero = model.initial_state(1);
        let states: Vec<RecurrentState> = group
            .iter()
            .map(|f| match &f.initial_state {
                Some(tensors) => RecurrentState::from_tensors(
                    tensors.iter().map(|t| t.to_device(device)).collect(),
                ),
                None => RecurrentState::from_tensors(
                    zero.tensors().iter().map(Tensor::shallow_clone).collect(),
                ),
            })
            .collect();
        let mut state = RecurrentState::cat(&states.iter().collect::<Vec<_>>());
        let steps = group.iter().map(|f| f.samples.len()).max().unwrap_or(0);
        let mut preds = Vec::with_capacity(steps);
        let mut targets = Vec::with_capacity(steps);
        let mut real = 0;
        for t in 0..steps {
            let mut batch = Vec::with_capacity(group.len());
            let mut weights = Vec::with_capacity(group.len());
            for f in group {
                let i = t.min(f.samples.len() - 1);
                batch.push(&f.samples[i]);
                weights.push(if t < f.samples.len() { 1.0 } else { 0.0 });
            }
            real += weights.iter().filter(|&&w| w > 0.0).count();
            let (inputs, step_targets) = inputs_and_targets(&batch, &weights, n_actions, device)?;
            let outputs = model.forward_t(&inputs, Some(&state), true)?;
            preds.push(predictions(&outputs));
            targets.push(step_targets);
            state = outputs.state;
        }
        let cat = |f: &dyn Fn(&Predictions) -> &Tensor| {
            Tensor::cat(&preds.iter().map(f).collect::<Vec<_>>(), 0)
        };
        let all = Predictions {
            policy_logits: cat(&|p| &p.policy_logits),
            value: cat(&|p| &p.value),
            goal_logits: cat(&|p| &p.goal_logits),
            other_action_logits: cat(&|p| &p.other_action_logits),
        };
        let terms = assistant_loss(&all, &cat_targets(targets), c);
        adam.backward_step(&terms.total);
        sums.add(&terms, real);
        n += real as u64;
    }
    Ok((sums, n))
}
