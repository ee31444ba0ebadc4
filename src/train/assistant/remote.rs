//! Self-play on other processes and machines (`mbag train assistant --ray`).
//!
//! The learner listens on one TCP port; each worker (`mbag train assistant-worker`,
//! started by Ray through `python -m mbag_rs.ray_workers`) connects, says hello and
//! receives the run's settings. Then, every iteration, the learner sends the current
//! weights to every worker, each worker plays its share of the iteration's
//! environments with them (the same [`SelfPlay`] as a local run: MCTS, the simulator
//! and the network in Rust) and sends its fragments back. The iteration is
//! synchronous, as a local one: the learner trains once every worker has answered,
//! so the data is on-policy to the same degree.
//!
//! Frames are `u64` length (little endian), one kind byte and the payload; a payload
//! is a JSON header (`u32` length, then the JSON) and bytes: the weights in mbag's
//! model format, or the fragments in the replay file's format. Everything is bounded
//! in size and time, and a closed or misbehaving peer ends the run with an error
//! naming the worker.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::config::AssistantTrainConfig;
use super::replay::ReplayBuffer;
use super::replay_file::{ReplayShape, read_replay, write_replay};
use super::selfplay::{Collection, EpisodeStats, SelfPlay, SelfPlaySettings};
use crate::agents::spec::{AgentFactory, AgentSpec};
use crate::nn::{InferenceService, Model, Precision, ServiceConfig};
use crate::recording::starts::Starts;

/// The protocol's version; a worker of another version is refused.
pub const PROTOCOL_VERSION: u32 = 2;
/// The largest frame accepted (a paper-size network's weights are tens of MB, an
/// iteration's fragments hundreds).
const MAX_FRAME: u64 = 8 << 30;
/// How long a worker may take over one iteration's share before the learner gives up.
const COLLECT_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

/// What can go wrong between the learner and its workers.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// A socket or file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A peer sent something that is not this protocol.
    #[error("{peer}: {message}")]
    Protocol {
        /// Which peer.
        peer: String,
        /// What was wrong.
        message: String,
    },
    /// Not every worker connected in time.
    #[error(
        "{connected} of {expected} self-play workers connected to {address} within {seconds} s \
         (is the Ray cluster up, and can its nodes reach this address? see --listen)"
    )]
    Missing {
        /// Workers that did connect.
        connected: usize,
        /// Workers expected.
        expected: usize,
        /// The learner's address.
        address: SocketAddr,
        /// How long the learner waited.
        seconds: u64,
    },
    /// A worker failed on its side.
    #[error("self-play worker {index} failed: {message}")]
    Worker {
        /// The worker.
        index: usize,
        /// Its message.
        message: String,
    },
    /// Training's own errors, on the worker's side.
    #[error(transparent)]
    Assistant(#[from] Box<super::AssistantError>),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RemoteError {
    let what = what.into();
    move |source| RemoteError::Io { what, source }
}

/// Frame kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Hello = 1,
    Setup = 2,
    Collect = 3,
    Collected = 4,
    Stop = 5,
    Failed = 6,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Self> {
        [
            Self::Hello,
            Self::Setup,
            Self::Collect,
            Self::Collected,
            Self::Stop,
            Self::Failed,
        ]
        .into_iter()
        .find(|k| *k as u8 == b)
    }
}

fn write_frame(
    w: &mut impl Write,
    kind: Kind,
    header: &impl Serialize,
    bytes: &[u8],
) -> std::io::Result<()> {
    let header = serde_json::to_vec(header).map_err(std::io::Error::other)?;
    let len = 1 + 4 + header.len() as u64 + bytes.len() as u64;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&[kind as u8])?;
    w.write_all(&(header.len() as u32).to_le_bytes())?;
    w.write_all(&header)?;
    w.write_all(bytes)?;
    w.flush()
}

/// One frame: its kind, JSON header and bytes.
struct Frame {
    kind: Kind,
    header: Vec<u8>,
    bytes: Vec<u8>,
}

impl Frame {
    fn header<T: for<'de> Deserialize<'de>>(&self, peer: &str) -> Result<T, RemoteError> {
        serde_json::from_slice(&self.header).map_err(|e| RemoteError::Protocol {
            peer: peer.to_owned(),
            message: format!("a malformed {:?} header: {e}", self.kind),
        })
    }
}

fn read_frame(r: &mut impl Read, peer: &str) -> Result<Frame, RemoteError> {
    let protocol = |message: String| RemoteError::Protocol {
        peer: peer.to_owned(),
        message,
    };
    let mut len = [0u8; 8];
    r.read_exact(&mut len)
        .map_err(io(format!("reading from {peer}")))?;
    let len = u64::from_le_bytes(len);
    if !(5..=MAX_FRAME).contains(&len) {
        return Err(protocol(format!("a frame of {len} bytes")));
    }
    let mut kind_and_header = [0u8; 5];
    r.read_exact(&mut kind_and_header)
        .map_err(io(format!("reading from {peer}")))?;
    let kind = Kind::from_byte(kind_and_header[0])
        .ok_or_else(|| protocol(format!("an unknown frame kind {}", kind_and_header[0])))?;
    let header_len = u32::from_le_bytes(kind_and_header[1..5].try_into().expect("4 bytes")) as u64;
    if header_len > len - 5 {
        return Err(protocol(format!(
            "a header of {header_len} bytes in a frame of {len}"
        )));
    }
    let mut header = vec![0u8; header_len as usize];
    r.read_exact(&mut header)
        .map_err(io(format!("reading from {peer}")))?;
    let mut bytes = vec![0u8; (len - 5 - header_len) as usize];
    r.read_exact(&mut bytes)
        .map_err(io(format!("reading from {peer}")))?;
    Ok(Frame {
        kind,
        header,
        bytes,
    })
}

#[derive(Debug, Serialize, Deserialize)]
struct Hello {
    version: u32,
    index: usize,
}

/// What a worker plays with, sent once it connects.
#[derive(Debug, Serialize, Deserialize)]
struct Setup {
    /// The training config file's JSON.
    config: String,
    /// The human model spec.
    human: String,
    /// This worker's environments.
    num_envs: usize,
    /// Its self-play threads.
    threads: usize,
    /// Its seed.
    seed: u64,
    /// Steps per environment per iteration.
    rollout_len: usize,
    /// Whether fragments keep the goal head's logits.
    keep_goal_logits: bool,
    /// Whether the network masks with line of sight.
    line_of_sight: bool,
    /// The number format the worker's network plays in (`f32`, `bf16`, `f16`).
    precision: String,
    /// The recordings episodes start from (`--starts`), their bytes in the
    /// frame's payload one after the other; `None`: fresh worlds.
    starts: Option<StartsFiles>,
}

/// The recordings of `--starts`, sent with the setup so that a worker on another
/// machine needs no copy of them.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StartsFiles {
    /// Each recording's file name (extension kept: it says how it is read) and
    /// length in the payload.
    files: Vec<(String, u64)>,
    /// Which steps of each are starts (`Starts::every`).
    every: usize,
}

impl StartsFiles {
    /// The recordings of `starts` and their bytes, read once for every worker.
    fn read(starts: &Starts) -> Result<(Self, Vec<u8>), RemoteError> {
        let mut files = Vec::with_capacity(starts.files.len());
        let mut bytes = Vec::new();
        for (i, path) in starts.files.iter().enumerate() {
            let content = read_file(path)?;
            let base = path
                .file_name()
                .map_or_else(|| "recording.jsonl".into(), |n| n.to_string_lossy());
            // Numbered: recordings of one name in different folders stay apart,
            // and in their order.
            files.push((format!("{i:05}-{base}"), content.len() as u64));
            bytes.extend_from_slice(&content);
        }
        Ok((
            Self {
                files,
                every: starts.every,
            },
            bytes,
        ))
    }

    /// Writes the recordings into `dir` and loads them as starts for `size`.
    fn load(
        &self,
        payload: &[u8],
        dir: &Path,
        size: crate::sim::coords::WorldSize,
    ) -> Result<Starts, RemoteError> {
        std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        let mut at = 0usize;
        for (name, len) in &self.files {
            // A name with a path in it would write outside `dir`.
            let plain = Path::new(name)
                .file_name()
                .is_some_and(|n| n == name.as_str());
            let end = usize::try_from(*len)
                .ok()
                .and_then(|len| at.checked_add(len))
                .filter(|&end| end <= payload.len());
            let (true, Some(end)) = (plain, end) else {
                return Err(RemoteError::Protocol {
                    peer: "the learner".into(),
                    message: format!("sent a malformed starts recording {name:?}"),
                });
            };
            write_file(&dir.join(name), &payload[at..end])?;
            at = end;
        }
        Starts::load(dir, size, self.every).map_err(|e| {
            RemoteError::Assistant(Box::new(super::AssistantError::Config {
                path: "--starts (sent by the learner)".into(),
                message: e.to_string(),
            }))
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Collect {
    iteration: u64,
    /// The model's config JSON (its weights are the frame's bytes).
    model_config: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Collected {
    episodes: Vec<EpisodeStats>,
    env_steps: u64,
    simulations: u64,
    seconds: f64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Failed {
    message: String,
}

/// A scratch folder of this process, removed when dropped.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Result<Self, RemoteError> {
        // Numbered as well: two workers of one index in one process (tests, or a
        // learner restarted in-process) must not share, or remove, each other's.
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("mbag-remote-{}-{n}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
        Ok(Self(dir))
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, RemoteError> {
    std::fs::read(path).map_err(io(format!("reading {}", path.display())))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RemoteError> {
    std::fs::write(path, bytes).map_err(io(format!("writing {}", path.display())))
}

/// How the learner shares an iteration's environments among its workers.
#[derive(Debug, Clone)]
pub struct RemoteSettings {
    /// Where the workers connect (bound before they are started).
    pub listener: std::sync::Arc<TcpListener>,
    /// How many connect.
    pub workers: usize,
    /// How long to wait for all of them.
    pub connect_timeout: Duration,
}

/// The learner's side: one connection per worker.
#[derive(Debug)]
pub struct RemoteWorkers {
    workers: Vec<(BufReader<TcpStream>, BufWriter<TcpStream>)>,
    shape: ReplayShape,
    scratch: Scratch,
}

/// What the learner tells every worker, less the per-worker parts.
#[derive(Debug, Clone)]
pub struct SharedSetup {
    /// The training config file's JSON.
    pub config: String,
    /// The human model.
    pub human: AgentSpec,
    /// The iteration's environments, over all workers.
    pub num_envs: usize,
    /// Self-play threads per worker.
    pub threads: usize,
    /// The run's seed (worker `i` plays from a seed derived from it).
    pub seed: u64,
    /// Steps per environment per iteration.
    pub rollout_len: usize,
    /// Whether fragments keep the goal head's logits.
    pub keep_goal_logits: bool,
    /// Whether the network masks with line of sight.
    pub line_of_sight: bool,
    /// The number format the workers' networks play in.
    pub precision: Precision,
    /// Recorded moments episodes start from, instead of fresh worlds.
    pub starts: Option<Arc<Starts>>,
}

impl RemoteWorkers {
    /// Waits for `settings.workers` workers and sends each its setup.
    pub fn accept(
        settings: &RemoteSettings,
        setup: &SharedSetup,
        shape: ReplayShape,
    ) -> Result<Self, RemoteError> {
        let address = settings
            .listener
            .local_addr()
            .map_err(io("reading the learner's address"))?;
        settings
            .listener
            .set_nonblocking(true)
            .map_err(io("setting up the learner's port"))?;
        let deadline = Instant::now() + settings.connect_timeout;
        let mut slots: Vec<Option<(BufReader<TcpStream>, BufWriter<TcpStream>)>> =
            (0..settings.workers).map(|_| None).collect();
        let per_worker = setup.num_envs.div_ceil(settings.workers);
        let (starts, starts_bytes) = match &setup.starts {
            Some(starts) => {
                let (files, bytes) = StartsFiles::read(starts)?;
                (Some(files), bytes)
            }
            None => (None, Vec::new()),
        };
        while slots.iter().any(Option::is_none) {
            let (stream, peer) = match settings.listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(RemoteError::Missing {
                            connected: slots.iter().flatten().count(),
                            expected: settings.workers,
                            address,
                            seconds: settings.connect_timeout.as_secs(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                Err(e) => return Err(io("accepting a worker")(e)),
            };
            let peer = peer.to_string();
            stream
                .set_nonblocking(false)
                .and_then(|()| stream.set_read_timeout(Some(Duration::from_secs(30))))
                .and_then(|()| stream.set_nodelay(true))
                .map_err(io(format!("setting up the connection of {peer}")))?;
            let mut reader = BufReader::new(
                stream
                    .try_clone()
                    .map_err(io(format!("setting up the connection of {peer}")))?,
            );
            let hello = read_frame(&mut reader, &peer)?;
            if hello.kind != Kind::Hello {
                log::warn!("{peer} did not say hello; ignored");
                continue;
            }
            let hello: Hello = hello.header(&peer)?;
            if hello.version != PROTOCOL_VERSION {
                return Err(RemoteError::Protocol {
                    peer,
                    message: format!(
                        "speaks protocol version {} (this mbag: {PROTOCOL_VERSION})",
                        hello.version
                    ),
                });
            }
            let Some(slot) = slots.get_mut(hello.index) else {
                return Err(RemoteError::Protocol {
                    peer,
                    message: format!(
                        "calls itself worker {} of {}",
                        hello.index, settings.workers
                    ),
                });
            };
            if slot.is_some() {
                return Err(RemoteError::Protocol {
                    peer,
                    message: format!("worker {} connected twice", hello.index),
                });
            }
            stream
                .set_read_timeout(Some(COLLECT_TIMEOUT))
                .map_err(io(format!("setting up the connection of {peer}")))?;
            let mut writer = BufWriter::new(stream);
            let first = hello.index * per_worker;
            let num_envs = per_worker.min(setup.num_envs.saturating_sub(first)).max(1);
            let message = Setup {
                config: setup.config.clone(),
                human: setup.human.to_string(),
                num_envs,
                threads: setup.threads,
                seed: setup
                    .seed
                    .wrapping_add((hello.index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                rollout_len: setup.rollout_len,
                keep_goal_logits: setup.keep_goal_logits,
                line_of_sight: setup.line_of_sight,
                precision: setup.precision.to_string(),
                starts: starts.clone(),
            };
            write_frame(&mut writer, Kind::Setup, &message, &starts_bytes)
                .map_err(io(format!("sending the setup to worker {}", hello.index)))?;
            log::info!(
                "self-play worker {} connected from {peer}: {num_envs} envs",
                hello.index
            );
            *slot = Some((reader, writer));
        }
        Ok(Self {
            workers: slots.into_iter().flatten().collect(),
            shape,
            scratch: Scratch::new("learner")?,
        })
    }

    /// One iteration: every worker plays with `model`'s weights; their fragments
    /// and statistics, merged.
    pub fn collect(&mut self, model: &Model, iteration: u64) -> Result<Collection, RemoteError> {
        let started = Instant::now();
        let config_path =
            model
                .save(&self.scratch.0, "weights")
                .map_err(|e| RemoteError::Protocol {
                    peer: "the learner".into(),
                    message: format!("saving the weights to send: {e}"),
                })?;
        let model_config =
            String::from_utf8(read_file(&config_path)?).map_err(|e| RemoteError::Protocol {
                peer: "the learner".into(),
                message: e.to_string(),
            })?;
        let weights = read_file(&Model::weights_path(&config_path, model.config()))?;
        let message = Collect {
            iteration,
            model_config,
        };
        for (index, (_, writer)) in self.workers.iter_mut().enumerate() {
            write_frame(writer, Kind::Collect, &message, &weights)
                .map_err(io(format!("sending the weights to worker {index}")))?;
        }
        let mut merged = Collection::default();
        for index in 0..self.workers.len() {
            let peer = format!("self-play worker {index}");
            let frame = read_frame(&mut self.workers[index].0, &peer)?;
            match frame.kind {
                Kind::Collected => {}
                Kind::Failed => {
                    let failed: Failed = frame.header(&peer)?;
                    return Err(RemoteError::Worker {
                        index,
                        message: failed.message,
                    });
                }
                other => {
                    return Err(RemoteError::Protocol {
                        peer,
                        message: format!("answered the weights with {other:?}"),
                    });
                }
            }
            let header: Collected = frame.header(&peer)?;
            let path = self.scratch.path(&format!("fragments-{index}.bin"));
            write_file(&path, &frame.bytes)?;
            let buffer =
                read_replay(&path, &self.shape, usize::MAX).map_err(|e| RemoteError::Protocol {
                    peer: peer.clone(),
                    message: format!("its fragments do not read: {e}"),
                })?;
            merged.fragments.extend(buffer.into_fragments());
            merged.episodes.extend(header.episodes);
            merged.env_steps += header.env_steps;
            merged.simulations += header.simulations;
        }
        merged.seconds = started.elapsed().as_secs_f64();
        Ok(merged)
    }
}

impl Drop for RemoteWorkers {
    fn drop(&mut self) {
        // The workers exit on Stop (or when the connection closes).
        for (_, writer) in &mut self.workers {
            let _ = write_frame(writer, Kind::Stop, &serde_json::json!({}), &[]);
        }
    }
}

/// The worker's side: connects to the learner, plays every iteration it is asked
/// to, and returns when the learner says stop.
pub fn run_worker(
    learner: &str,
    index: usize,
    factory: &dyn AgentFactory,
    device: tch::Device,
) -> Result<(), RemoteError> {
    let stream = connect(learner)?;
    stream
        .set_nodelay(true)
        .map_err(io(format!("connecting to {learner}")))?;
    let mut reader = BufReader::new(
        stream
            .try_clone()
            .map_err(io(format!("connecting to {learner}")))?,
    );
    let mut writer = BufWriter::new(stream);
    write_frame(
        &mut writer,
        Kind::Hello,
        &Hello {
            version: PROTOCOL_VERSION,
            index,
        },
        &[],
    )
    .map_err(io(format!("greeting {learner}")))?;
    let frame = read_frame(&mut reader, learner)?;
    if frame.kind != Kind::Setup {
        return Err(RemoteError::Protocol {
            peer: learner.to_owned(),
            message: format!("sent {:?} instead of the setup", frame.kind),
        });
    }
    let setup: Setup = frame.header(learner)?;
    match play(
        &setup,
        &frame.bytes,
        &mut reader,
        &mut writer,
        learner,
        index,
        factory,
        device,
    ) {
        Err(RemoteError::Assistant(e)) => {
            // Tell the learner why before going, so its error names the cause.
            let _ = write_frame(
                &mut writer,
                Kind::Failed,
                &Failed {
                    message: e.to_string(),
                },
                &[],
            );
            Err(RemoteError::Assistant(e))
        }
        other => other,
    }
}

fn connect(learner: &str) -> Result<TcpStream, RemoteError> {
    // The learner may still be starting when Ray places the worker.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match TcpStream::connect(learner) {
            Ok(stream) => return Ok(stream),
            Err(e) if Instant::now() < deadline => {
                log::debug!("connecting to {learner}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => return Err(io(format!("connecting to {learner}"))(e)),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn play(
    setup: &Setup,
    starts_bytes: &[u8],
    reader: &mut BufReader<TcpStream>,
    writer: &mut BufWriter<TcpStream>,
    learner: &str,
    index: usize,
    factory: &dyn AgentFactory,
    device: tch::Device,
) -> Result<(), RemoteError> {
    let assistant = |message: String| {
        RemoteError::Assistant(Box::new(super::AssistantError::Config {
            path: "the learner's config".into(),
            message,
        }))
    };
    let config = AssistantTrainConfig::parse(&setup.config)
        .and_then(AssistantTrainConfig::resolve)
        .map_err(assistant)?;
    let human: AgentSpec = setup
        .human
        .parse()
        .map_err(|e| assistant(format!("the human {:?}: {e}", setup.human)))?;
    let shape = ReplayShape::of(&config);
    let precision: Precision = setup
        .precision
        .parse()
        .map_err(|e| assistant(format!("the precision {:?}: {e}", setup.precision)))?;
    let scratch = Scratch::new(&format!("worker-{index}"))?;
    let starts = setup
        .starts
        .as_ref()
        .map(|files| files.load(starts_bytes, &scratch.path("starts"), config.env.world_size))
        .transpose()?
        .map(Arc::new);
    let mut selfplay = SelfPlay::new(
        &SelfPlaySettings {
            env: config.env.clone(),
            goals: config.goals.clone(),
            human,
            mcts: config.mcts.clone(),
            num_envs: setup.num_envs,
            threads: setup.threads,
            seed: setup.seed,
            line_of_sight: setup.line_of_sight,
            gamma: config.file.training.gamma,
            assistant: config.file.training.assistant,
            starts,
        },
        factory,
        setup.keep_goal_logits,
    )
    .map_err(|e| RemoteError::Assistant(Box::new(e)))?;
    log::info!(
        "self-play worker {index}: {} envs x {} steps per iteration",
        setup.num_envs,
        setup.rollout_len
    );
    loop {
        let frame = read_frame(reader, learner)?;
        match frame.kind {
            Kind::Stop => return Ok(()),
            Kind::Collect => {}
            other => {
                return Err(RemoteError::Protocol {
                    peer: learner.to_owned(),
                    message: format!("sent {other:?} where weights were due"),
                });
            }
        }
        let collect: Collect = frame.header(learner)?;
        let config_path = scratch.path("weights.json");
        write_file(&config_path, collect.model_config.as_bytes())?;
        let model_config = crate::nn::ModelConfig::read(&config_path)
            .map_err(|e| assistant(format!("the weights' config: {e}")))?;
        write_file(
            &Model::weights_path(&config_path, &model_config),
            &frame.bytes,
        )?;
        let model = Model::load(&config_path, device)
            .and_then(|m| match precision {
                Precision::F32 => Ok(m),
                reduced => m.inference_copy(reduced),
            })
            .map_err(|e| assistant(format!("the weights: {e}")))?;
        let service = InferenceService::spawn(
            model,
            ServiceConfig {
                max_batch: (setup.num_envs * config.mcts.leaves_per_batch.max(1)).max(1),
                ..ServiceConfig::default()
            },
        )
        .map_err(|e| RemoteError::Assistant(Box::new(e.into())))?;
        let collected = selfplay
            .collect(service.handle(), setup.rollout_len)
            .map_err(|e| RemoteError::Assistant(Box::new(e)))?;
        drop(service);
        let samples: usize = collected.fragments.iter().map(|f| f.samples.len()).sum();
        let mut buffer = ReplayBuffer::new(samples.max(1));
        for fragment in collected.fragments {
            buffer.push(fragment);
        }
        let path = scratch.path("fragments.bin");
        write_replay(&buffer, &shape, &path).map_err(|e| assistant(e.to_string()))?;
        let header = Collected {
            episodes: collected.episodes,
            env_steps: collected.env_steps,
            simulations: collected.simulations,
            seconds: collected.seconds,
        };
        write_frame(writer, Kind::Collected, &header, &read_file(&path)?).map_err(io(format!(
            "sending iteration {}'s fragments",
            collect.iteration
        )))?;
        log::info!(
            "self-play worker {index}: iteration {} sent ({} steps, {} episodes)",
            collect.iteration,
            header.env_steps,
            header.episodes.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec::StandardAgents;
    use std::sync::Arc;

    fn small_config() -> super::super::config::ResolvedConfig {
        AssistantTrainConfig::read(Path::new("configs/train/assistant_small.json")).unwrap()
    }

    fn loopback() -> Arc<TcpListener> {
        Arc::new(TcpListener::bind("127.0.0.1:0").unwrap())
    }

    fn setup(config: &super::super::config::ResolvedConfig, num_envs: usize) -> SharedSetup {
        SharedSetup {
            config: serde_json::to_string(&config.file).unwrap(),
            human: "heuristic:lowest_block".parse().unwrap(),
            num_envs,
            threads: 1,
            seed: 5,
            rollout_len: 3,
            keep_goal_logits: false,
            line_of_sight: false,
            precision: Precision::F32,
            starts: None,
        }
    }

    /// Runs `workers` workers for `iterations` iterations of `setup`; what each
    /// iteration collected.
    fn run_remote(
        config: &super::super::config::ResolvedConfig,
        setup: &SharedSetup,
        workers: usize,
        iterations: u64,
    ) -> Vec<Collection> {
        let listener = loopback();
        let address = listener.local_addr().unwrap().to_string();
        let handles: Vec<_> = (0..workers)
            .map(|i| {
                let address = address.clone();
                std::thread::spawn(move || {
                    run_worker(
                        &address,
                        i,
                        &StandardAgents::heuristics_only(),
                        tch::Device::Cpu,
                    )
                })
            })
            .collect();
        let shape = ReplayShape::of(config);
        let settings = RemoteSettings {
            listener,
            workers,
            connect_timeout: Duration::from_secs(60),
        };
        let mut remote = RemoteWorkers::accept(&settings, setup, shape).unwrap();
        let model = Model::new(config.model.clone(), tch::Device::Cpu).unwrap();
        let collected = (0..iterations)
            .map(|iteration| remote.collect(&model, iteration).unwrap())
            .collect();
        drop(remote);
        for worker in handles {
            worker.join().unwrap().unwrap();
        }
        collected
    }

    #[test]
    fn two_workers_play_an_iteration_with_the_learners_weights() {
        let config = small_config();
        for (iteration, collected) in run_remote(&config, &setup(&config, 3), 2, 2)
            .iter()
            .enumerate()
        {
            // 3 envs (2 + 1 across the workers) x 3 steps each.
            assert_eq!(collected.env_steps, 9, "iteration {iteration}");
            let samples: usize = collected.fragments.iter().map(|f| f.samples.len()).sum();
            assert_eq!(samples, 9);
        }
    }

    /// `--starts` and `--selfplay-precision` reach the workers: their episodes play
    /// the recordings' goals (sent with the setup, so the workers need no copy), in
    /// bf16.
    #[test]
    fn workers_start_from_the_learners_recordings_in_its_precision() {
        let config = small_config();
        let starts =
            Starts::load(Path::new("recordings/samples"), config.env.world_size, 5).unwrap();
        let mut env = crate::sim::env::Env::new(config.env.clone());
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
        let mut goals: Vec<Vec<u8>> = Vec::new();
        for _ in 0..200 {
            let goal = starts.reset(&mut env, &mut rng).goal.ids().to_vec();
            if !goals.contains(&goal) {
                goals.push(goal);
            }
        }
        let setup = SharedSetup {
            precision: Precision::Bf16,
            starts: Some(Arc::new(starts)),
            ..setup(&config, 2)
        };
        let collected = run_remote(&config, &setup, 2, 1);
        let samples: Vec<_> = collected[0]
            .fragments
            .iter()
            .flat_map(|f| &f.samples)
            .collect();
        assert_eq!(samples.len(), 6);
        for s in samples {
            assert!(
                goals.iter().any(|g| *g == s.goal.to_vec()),
                "a goal from no recording"
            );
        }
    }

    #[test]
    fn a_stranger_or_a_wrong_version_is_an_error_naming_it() {
        let config = small_config();
        let shape = ReplayShape::of(&config);
        // A frame claiming a huge length.
        let listener = loopback();
        let address = listener.local_addr().unwrap();
        let stranger = std::thread::spawn(move || {
            let mut s = TcpStream::connect(address).unwrap();
            s.write_all(&u64::MAX.to_le_bytes()).unwrap();
            s
        });
        let settings = RemoteSettings {
            listener,
            workers: 1,
            connect_timeout: Duration::from_secs(10),
        };
        let err = RemoteWorkers::accept(&settings, &setup(&config, 1), shape).unwrap_err();
        assert!(err.to_string().contains("a frame of"), "{err}");
        drop(stranger.join());
        // A worker of another protocol version.
        let listener = loopback();
        let address = listener.local_addr().unwrap();
        let old = std::thread::spawn(move || {
            let mut s = TcpStream::connect(address).unwrap();
            write_frame(
                &mut s,
                Kind::Hello,
                &Hello {
                    version: PROTOCOL_VERSION + 1,
                    index: 0,
                },
                &[],
            )
            .unwrap();
            s
        });
        let settings = RemoteSettings {
            listener,
            workers: 1,
            connect_timeout: Duration::from_secs(10),
        };
        let err = RemoteWorkers::accept(&settings, &setup(&config, 1), shape).unwrap_err();
        assert!(err.to_string().contains("protocol version"), "{err}");
        drop(old.join());
        // Nobody at all: a bounded wait and an error saying what to check.
        let settings = RemoteSettings {
            listener: loopback(),
            workers: 2,
            connect_timeout: Duration::from_millis(200),
        };
        let err = RemoteWorkers::accept(&settings, &setup(&config, 1), shape).unwrap_err();
        assert!(
            err.to_string().contains("0 of 2 self-play workers"),
            "{err}"
        );
    }
}
