//! `mbag bench nn`: network speed per batch size, and the inference service's
//! throughput with concurrent callers against direct calls on the batches it
//! formed.

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tch::{Device, Tensor};

use crate::nn::{
    InferenceRequest, InferenceService, Model, ModelConfig, NnError, ObsBatch, ServiceConfig,
    ServiceStats, host_f32,
};
use crate::sim::obs::{NUM_WORLD_CHANNELS, Observation};

/// A network the bench knows by a short key.
#[derive(Clone, Copy, Debug)]
pub struct BenchModel {
    /// The key `--models` takes.
    pub key: &'static str,
    /// The shared config's file stem.
    pub config: &'static str,
    /// What it is, for the report.
    pub about: &'static str,
}

/// The networks `mbag bench nn` measures by default.
pub const MODELS: &[BenchModel] = &[
    BenchModel {
        key: "paper",
        config: "paper_assistant_full",
        about: "the paper's conv assistant (random weights)",
    },
    BenchModel {
        key: "small",
        config: "paper_assistant_small",
        about: "the same architecture at 16 channels",
    },
    BenchModel {
        key: "transformer",
        config: "az_test_assistant",
        about: "the axial-transformer alpha-zero test model",
    },
];

/// Builds a bench model from `dir`: with its weights if the shared data has them,
/// else with seeded random weights (the paper-size configs ship without weights).
pub fn load_model(dir: &Path, model: &BenchModel, device: Device) -> Result<Model, NnError> {
    let config = dir.join(format!("{}.json", model.config));
    if config.with_extension("safetensors").exists() {
        return Model::load(&config, device);
    }
    tch::manual_seed(0);
    Model::new(ModelConfig::read(&config)?, device)
}

/// `n` random observations of the model's world size and player count (the
/// networks' cost does not depend on the values).
pub fn observations(model: &Model, n: usize, seed: u64) -> Vec<Arc<Observation>> {
    let size = model.config().world_size;
    let players = model.config().num_players;
    let cells = size.num_cells();
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut world = vec![0u8; NUM_WORLD_CHANNELS * cells];
            for c in 0..cells {
                world[c] = rng.random_range(0..10);
                world[2 * cells + c] = rng.random_range(0..10);
            }
            world[4 * cells + rng.random_range(0..cells)] = 1;
            let inventory = (0..players * 10).map(|_| rng.random_range(0..64)).collect();
            Arc::new(Observation::from_raw(
                size,
                players,
                world,
                inventory,
                rng.random_range(0..1000),
            ))
        })
        .collect()
}

/// One direct call as a caller without the service makes it: observations to
/// tensors, the forward pass, and the outputs copied to the CPU.
pub fn direct_call(
    model: &Model,
    observations: &[Arc<Observation>],
    outputs: OutputCopy,
) -> Result<(), NnError> {
    let refs: Vec<&Observation> = observations.iter().map(|o| o.as_ref()).collect();
    let prev = model
        .config()
        .net
        .use_prev_action
        .then(|| vec![0; refs.len()]);
    let batch = ObsBatch::from_observations(&refs, prev.as_deref(), model.device())?;
    let out = model.forward(&batch, None)?;
    let to_cpu = |t: &Tensor| -> Result<Vec<f32>, NnError> { Ok(host_f32(t, model.precision())?) };
    match outputs {
        OutputCopy::All => std::hint::black_box((
            to_cpu(&out.flat_logits)?,
            to_cpu(&out.value)?,
            to_cpu(&out.goal_logits)?,
            out.other_agent_logits.as_ref().map(to_cpu).transpose()?,
        )),
        OutputCopy::Value => {
            std::hint::black_box((to_cpu(&out.value)?, Vec::new(), Vec::new(), None))
        }
    };
    Ok(())
}

/// Which outputs a timed call copies back to the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputCopy {
    /// Every head, as the inference service does (on CUDA, the logits of a batch
    /// of 512 are about 150 MB).
    All,
    /// The value alone: the copy waits for the device to finish, so this times
    /// the network without the transfer of its outputs.
    Value,
}

/// Timings of direct calls at one batch size.
#[derive(Clone, Copy, Debug)]
pub struct DirectTiming {
    /// Samples per call.
    pub batch: usize,
    /// Calls timed.
    pub iterations: usize,
    /// Whether an untimed warm-up call ran first.
    pub warmed_up: bool,
    /// Mean time per call.
    pub mean: Duration,
    /// Fastest call.
    pub min: Duration,
}

impl DirectTiming {
    /// Samples per second at the mean.
    pub fn samples_per_s(&self) -> f64 {
        self.batch as f64 / self.mean.as_secs_f64()
    }
}

/// Times direct calls of `batch` samples for about `budget` (at least one call).
/// A warm-up call runs first unless `expected` (a guess of one call's time) says
/// a call takes more than the budget: the paper network at batch 128 on a
/// CPU takes tens of seconds, and first-call costs are small beside that.
pub fn time_direct(
    model: &Model,
    observations: &[Arc<Observation>],
    batch: usize,
    budget: Duration,
    expected: Option<Duration>,
    outputs: OutputCopy,
) -> Result<DirectTiming, NnError> {
    let obs: Vec<Arc<Observation>> = observations.iter().cycle().take(batch).cloned().collect();
    let warm_up = expected.is_none_or(|e| e < budget);
    if warm_up {
        direct_call(model, &obs, outputs)?;
    }
    let mut times = Vec::new();
    let start = Instant::now();
    while times.is_empty() || start.elapsed() < budget {
        let t = Instant::now();
        direct_call(model, &obs, outputs)?;
        times.push(t.elapsed());
    }
    Ok(DirectTiming {
        batch,
        iterations: times.len(),
        warmed_up: warm_up,
        mean: times.iter().sum::<Duration>() / times.len() as u32,
        min: times.iter().copied().min().unwrap_or_default(),
    })
}

/// What one service run measured.
#[derive(Clone, Debug)]
pub struct ServiceRun {
    /// Concurrent callers, each sending one sample per call.
    pub callers: usize,
    /// From the callers' start to the last one's stop.
    pub elapsed: Duration,
    /// Samples answered.
    pub samples: u64,
    /// The service's own counts, with the batch sizes it formed.
    pub stats: ServiceStats,
}

impl ServiceRun {
    /// Answered samples per second.
    pub fn samples_per_s(&self) -> f64 {
        self.samples as f64 / self.elapsed.as_secs_f64()
    }
}

/// Runs the service on `model` with `callers` threads, each calling
/// `evaluate` with one zero-state sample in a loop for `duration`; gives the model
/// back with the measurements.
pub fn run_service(
    model: Model,
    config: ServiceConfig,
    callers: usize,
    duration: Duration,
    observations: &[Arc<Observation>],
) -> Result<(Model, ServiceRun), NnError> {
    let service = InferenceService::spawn(model, config)?;
    // Warm the thread up (first-call allocations) outside the timing.
    let first = InferenceRequest::new(Arc::clone(&observations[0]));
    service.handle().evaluate(vec![first])?;
    let barrier = Arc::new(Barrier::new(callers + 1));
    let threads: Vec<_> = (0..callers)
        .map(|c| {
            let handle = service.handle();
            let barrier = Arc::clone(&barrier);
            let obs = Arc::clone(&observations[c % observations.len()]);
            std::thread::spawn(move || -> Result<u64, NnError> {
                barrier.wait();
                let stop = Instant::now() + duration;
                let mut n = 0;
                while Instant::now() < stop {
                    handle.evaluate(vec![InferenceRequest::new(Arc::clone(&obs))])?;
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut samples = 0;
    let mut failure = None;
    for thread in threads {
        match thread.join() {
            Ok(Ok(n)) => samples += n,
            Ok(Err(e)) => failure = Some(e),
            Err(_) => failure = Some(NnError::ServiceThread("a bench caller panicked".into())),
        }
    }
    let elapsed = start.elapsed();
    let (model, mut stats) = service.shutdown_into_model()?;
    if let Some(e) = failure {
        return Err(e);
    }
    // Leave the warm-up call out of the counts.
    stats.requests -= 1;
    stats.jobs -= 1;
    stats.batches -= 1;
    if let Some(n) = stats.batch_sizes.get_mut(&1) {
        *n -= 1;
    }
    stats.batch_sizes.retain(|_, n| *n > 0);
    Ok((
        model,
        ServiceRun {
            callers,
            elapsed,
            samples,
            stats,
        },
    ))
}

/// The time direct calls would take for the batches a service run formed: each
/// batch size's forward passes times its measured mean.
pub fn direct_time_of(run: &ServiceRun, timings: &[DirectTiming]) -> Duration {
    run.stats
        .batch_sizes
        .iter()
        .map(|(&b, &n)| {
            let t = timings
                .iter()
                .find(|t| t.batch == b)
                .expect("every formed batch size timed");
            t.mean * n as u32
        })
        .sum()
}
