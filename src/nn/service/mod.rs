//! The inference service: a worker owns a [`Model`] (and so its device) and
//! answers many callers, batching their requests dynamically. Every service's
//! worker runs on the process's one inference thread ([`hub`]), so that
//! libtorch's CPU kernels have one thread team, which each batch gets whole.
//!
//! # How it works
//! Callers hold [`InferenceHandle`]s (cheap clones) and send jobs, each a
//! `Vec<InferenceRequest>`, through one bounded channel of `queue_capacity` jobs; a
//! full queue blocks the sender, which is the back-pressure. The worker takes the
//! first job, then keeps taking jobs until the batch holds `max_batch` samples,
//! `max_wait` has passed since the first, or every live handle has a job in it (no
//! one else can be about to send, so waiting longer only adds latency). It then
//! groups the samples into forward passes (one per inventory row count, and one per
//! repeat of a stream key so that a stream's second step sees its first step's
//! state), concatenates their recurrent states, runs each forward once, splits the
//! outputs into one [`Prediction`] per sample and answers every job on its own
//! reply channel, in request order.
//!
//! # Recurrent state
//! [`StateSource`] says where a sample's input state comes from: zeros, rows the
//! caller gives (a tree search keeps them in its nodes), or a stream the service
//! keeps per caller key and advances after each successful call. Each
//! [`Prediction`] carries the sample's next state for recurrent models.
//!
//! # Errors and shutdown
//! A request that does not fit the model (world size, previous action, state
//! shape) fails its own job with [`NnError::BadInput`] before any forward pass. A
//! forward pass that errors or panics fails every job with a sample in it with
//! [`NnError::BatchFailed`]; the service keeps running. [`InferenceService::shutdown`]
//! (or dropping the service) answers every job already queued, then ends the
//! worker; from then on every call returns [`NnError::ServiceClosed`], and a
//! [`Pending`] whose job was never taken resolves to it too, because the worker's
//! end closes a channel every `Pending` watches. Nothing waits forever.
//!
//! # From async code
//! [`InferenceHandle::evaluate`] blocks. A tokio task should either run it inside
//! `tokio::task::spawn_blocking`, or call [`InferenceHandle::submit`] (which
//! blocks only while the queue is full) and poll [`Pending::try_wait`] between
//! awaits, e.g. on a `tokio::time::interval` of a millisecond.

use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, bounded, select};

mod hub;
use hub::{Entry, Finished, Turn};
use tch::{Kind, Tensor};

use super::error::NnError;
use super::model::{Model, RecurrentState, host_f32};
use super::obs::ObsBatch;
use crate::sim::obs::Observation;

/// How the service batches and queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceConfig {
    /// Most samples in one batch (a single job larger than this runs whole, alone).
    pub max_batch: usize,
    /// Longest wait for more jobs after the first job of a batch arrived.
    pub max_wait: Duration,
    /// Jobs the request queue holds before senders block.
    pub queue_capacity: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            max_batch: 64,
            max_wait: Duration::from_millis(1),
            queue_capacity: 1024,
        }
    }
}

/// A caller's key for a recurrent state the service keeps ([`StateSource::Stream`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

/// Where a sample's input recurrent state comes from.
#[derive(Debug, Default)]
pub enum StateSource {
    /// The zero state (an episode's first step).
    #[default]
    Zero,
    /// This state, batch 1 (e.g. a [`Prediction::state`] kept in a search node).
    /// Stateless models accept only an empty state.
    Given(RecurrentState),
    /// The state the service keeps for this key: zeros the first time and after
    /// [`InferenceHandle::reset_stream`], else the previous successful call's
    /// next state. The service stores the next state after each call.
    Stream(StreamId),
}

/// One sample to evaluate.
#[derive(Debug)]
pub struct InferenceRequest {
    /// What the player sees; its world size must be the model's.
    pub observation: Arc<Observation>,
    /// The player's previous flat action, read by models with `use_prev_action`;
    /// `None` means NOOP (0), as at an episode's first step.
    pub prev_action: Option<usize>,
    /// The input recurrent state.
    pub state: StateSource,
    /// Only the policy logits (and the state) are wanted: the goal and
    /// other-player logits, two thirds of the bytes a sample's answer copies,
    /// come back empty.
    pub policy_only: bool,
}

impl InferenceRequest {
    /// A request from the zero state with no previous action.
    pub fn new(observation: impl Into<Arc<Observation>>) -> Self {
        Self {
            observation: observation.into(),
            prev_action: None,
            state: StateSource::Zero,
            policy_only: false,
        }
    }

    /// The same request with this previous action.
    pub fn with_prev_action(mut self, prev_action: usize) -> Self {
        self.prev_action = Some(prev_action);
        self
    }

    /// The same request with this state source.
    pub fn with_state(mut self, state: StateSource) -> Self {
        self.state = state;
        self
    }
}

/// The model's outputs for one sample, on the CPU except the state.
#[derive(Debug)]
pub struct Prediction {
    /// Unmasked policy logits over the flat actions ([`Model::layout`]'s order).
    pub flat_logits: Vec<f32>,
    /// The value estimate.
    pub value: f32,
    /// Goal block logits, `(10, X, Y, Z)` in C order (softmax over the first
    /// axis); empty for a `policy_only` request.
    pub goal_logits: Vec<f32>,
    /// The other player's predicted action logits (alpha-zero models only;
    /// `None` for a `policy_only` request).
    pub other_agent_logits: Option<Vec<f32>>,
    /// The sample's next state, batch 1, on the model's device (recurrent models
    /// only). Its tensors are views of the batch's output: read them, feed them
    /// back as [`StateSource::Given`], but do not change them in place.
    pub state: Option<RecurrentState>,
}

/// What the service did, returned by [`InferenceService::shutdown`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceStats {
    /// Samples answered (successfully or not).
    pub requests: u64,
    /// Jobs (calls of `evaluate` or `submit`) answered.
    pub jobs: u64,
    /// Forward passes run.
    pub batches: u64,
    /// Forward passes that failed.
    pub failed_batches: u64,
    /// Time spent building inputs, running forward passes and splitting outputs.
    pub busy: Duration,
    /// How many forward passes ran at each batch size.
    pub batch_sizes: BTreeMap<usize, u64>,
}

impl ServiceStats {
    /// Mean samples per forward pass (0 if none ran).
    pub fn mean_batch_size(&self) -> f64 {
        let samples: u64 = self.batch_sizes.iter().map(|(&b, &n)| b as u64 * n).sum();
        if self.batches == 0 {
            0.0
        } else {
            samples as f64 / self.batches as f64
        }
    }
}

type Reply = Result<Vec<Prediction>, NnError>;

/// A caller's requests and where to answer them.
struct Job {
    requests: Vec<InferenceRequest>,
    reply: Sender<Reply>,
}

enum Message {
    Job(Job),
    ForgetStream(StreamId),
    Shutdown,
}

/// State the handles and the service share.
#[derive(Debug, Default)]
struct Shared {
    /// Set before the worker is told to stop; calls check it first.
    closed: AtomicBool,
    /// Live [`InferenceHandle`]s: when a batch holds as many jobs, nobody else
    /// can be about to send, so the worker stops waiting.
    live_handles: AtomicUsize,
    next_stream: AtomicU64,
}

/// A caller's way into the service: clone one per thread or task.
#[derive(Debug)]
pub struct InferenceHandle {
    tx: Sender<Message>,
    shared: Arc<Shared>,
    /// Disconnected when the worker ends (its entry holds the only sender).
    done: Receiver<()>,
}

impl Clone for InferenceHandle {
    fn clone(&self) -> Self {
        self.shared.live_handles.fetch_add(1, Ordering::SeqCst);
        Self {
            tx: self.tx.clone(),
            shared: Arc::clone(&self.shared),
            done: self.done.clone(),
        }
    }
}

impl Drop for InferenceHandle {
    fn drop(&mut self) {
        self.shared.live_handles.fetch_sub(1, Ordering::SeqCst);
    }
}

impl InferenceHandle {
    /// Evaluates the requests and blocks until they are answered, in order.
    pub fn evaluate(&self, requests: Vec<InferenceRequest>) -> Result<Vec<Prediction>, NnError> {
        self.submit(requests)?.wait()
    }

    /// Queues the requests and returns at once (unless the queue is full, when it
    /// blocks until there is room); the answer comes through the [`Pending`].
    pub fn submit(&self, requests: Vec<InferenceRequest>) -> Result<Pending, NnError> {
        if self.is_closed() {
            return Err(NnError::ServiceClosed);
        }
        let (reply, rx) = bounded(1);
        let pending = Pending {
            reply: rx,
            done: self.done.clone(),
        };
        if requests.is_empty() {
            let _ = reply.send(Ok(Vec::new()));
            return Ok(pending);
        }
        self.send(Message::Job(Job { requests, reply }))?;
        Ok(pending)
    }

    /// A stream key no other caller of this service has been given.
    pub fn new_stream(&self) -> StreamId {
        StreamId(self.shared.next_stream.fetch_add(1, Ordering::Relaxed))
    }

    /// Makes the stream's next call start from the zero state (a new episode).
    /// Ordered after this handle's earlier submissions.
    pub fn reset_stream(&self, id: StreamId) -> Result<(), NnError> {
        self.send(Message::ForgetStream(id))
    }

    /// Frees the stream's state. Using the key again starts from zeros, so this
    /// is [`InferenceHandle::reset_stream`] under the name that says "done".
    pub fn end_stream(&self, id: StreamId) -> Result<(), NnError> {
        self.send(Message::ForgetStream(id))
    }

    /// Whether the service has been shut down.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    fn send(&self, message: Message) -> Result<(), NnError> {
        if self.is_closed() {
            return Err(NnError::ServiceClosed);
        }
        self.tx.send(message).map_err(|_| NnError::ServiceClosed)
    }
}

/// A submitted job's answer, to wait for or poll.
#[derive(Debug)]
pub struct Pending {
    reply: Receiver<Reply>,
    done: Receiver<()>,
}

impl Pending {
    /// Blocks until the answer comes, or [`NnError::ServiceClosed`] if the service
    /// stopped without answering.
    pub fn wait(self) -> Result<Vec<Prediction>, NnError> {
        select! {
            recv(self.reply) -> r => r.unwrap_or(Err(NnError::ServiceClosed)),
            // The worker has ended: an answer it sent before is still queued.
            recv(self.done) -> _ => self.reply.try_recv().unwrap_or(Err(NnError::ServiceClosed)),
        }
    }

    /// Like [`Pending::wait`], but `None` after `timeout` (the job stays queued).
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<Vec<Prediction>, NnError>> {
        select! {
            recv(self.reply) -> r => Some(r.unwrap_or(Err(NnError::ServiceClosed))),
            recv(self.done) -> _ => Some(self.reply.try_recv().unwrap_or(Err(NnError::ServiceClosed))),
            default(timeout) => None,
        }
    }

    /// The answer if it has come (or the service has stopped), else `None`; never
    /// blocks, so an async task can poll it.
    pub fn try_wait(&self) -> Option<Result<Vec<Prediction>, NnError>> {
        match self.reply.try_recv() {
            Ok(reply) => Some(reply),
            Err(TryRecvError::Disconnected) => Some(Err(NnError::ServiceClosed)),
            Err(TryRecvError::Empty) => match self.done.try_recv() {
                Err(TryRecvError::Disconnected) => {
                    Some(self.reply.try_recv().unwrap_or(Err(NnError::ServiceClosed)))
                }
                _ => None,
            },
        }
    }
}

/// A model's worker on the inference thread, and its request queue. Dropping
/// it shuts it down.
#[derive(Debug)]
pub struct InferenceService {
    tx: Sender<Message>,
    shared: Arc<Shared>,
    done: Receiver<()>,
    /// Answered once when the worker ends; taken by the first stop.
    finished: Option<Receiver<Finished>>,
}

impl InferenceService {
    /// Starts serving `model`, which the inference thread owns from now on. A
    /// `max_batch` or `queue_capacity` of 0 counts as 1.
    pub fn spawn(model: Model, config: ServiceConfig) -> Result<Self, NnError> {
        let config = ServiceConfig {
            max_batch: config.max_batch.max(1),
            queue_capacity: config.queue_capacity.max(1),
            ..config
        };
        let (tx, rx) = bounded(config.queue_capacity);
        let (done_tx, done) = bounded::<()>(0);
        let shared = Arc::new(Shared::default());
        let worker_shared = Arc::clone(&shared);
        log::debug!(
            "inference service for model {} on {:?}: {config:?}",
            model.config().name,
            model.device()
        );
        let (finished_tx, finished) = bounded(1);
        hub::add(Entry {
            worker: Worker::new(model, config, rx, worker_shared),
            finished: finished_tx,
            _done: done_tx,
        })
        .map_err(NnError::ServiceThread)?;
        Ok(Self {
            tx,
            shared,
            done,
            finished: Some(finished),
        })
    }

    /// A new handle for a caller.
    pub fn handle(&self) -> InferenceHandle {
        self.shared.live_handles.fetch_add(1, Ordering::SeqCst);
        InferenceHandle {
            tx: self.tx.clone(),
            shared: Arc::clone(&self.shared),
            done: self.done.clone(),
        }
    }

    /// Answers every queued job, ends the worker and returns what it did. Later
    /// calls through any handle return [`NnError::ServiceClosed`].
    pub fn shutdown(self) -> Result<ServiceStats, NnError> {
        self.shutdown_into_model().map(|(_, stats)| stats)
    }

    /// [`InferenceService::shutdown`], also giving the model back.
    pub fn shutdown_into_model(mut self) -> Result<(Model, ServiceStats), NnError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(Model, ServiceStats), NnError> {
        let finished = self
            .finished
            .take()
            .ok_or_else(|| NnError::ServiceThread("already stopped".into()))?;
        self.shared.closed.store(true, Ordering::SeqCst);
        // Fails only if the worker has already ended; `finished` says why.
        let _ = self.tx.send(Message::Shutdown);
        let (model, stats) = match finished.recv() {
            Ok(Ok(parts)) => parts,
            Ok(Err(panic)) => return Err(NnError::ServiceThread(format!("panicked: {panic}"))),
            Err(_) => {
                return Err(NnError::ServiceThread(
                    "the inference thread stopped without ending the worker".into(),
                ));
            }
        };
        log::debug!(
            "inference service stopped: {} requests in {} batches (mean {:.1}), busy {:.3} s",
            stats.requests,
            stats.batches,
            stats.mean_batch_size(),
            stats.busy.as_secs_f64()
        );
        Ok((model, stats))
    }
}

impl Drop for InferenceService {
    fn drop(&mut self) {
        if self.finished.is_some()
            && let Err(e) = self.stop()
        {
            log::error!("inference service: {e}");
        }
    }
}

pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// A service's side on the inference thread: the model, the streams' states
/// and the statistics.
struct Worker {
    model: Model,
    config: ServiceConfig,
    rx: Receiver<Message>,
    shared: Arc<Shared>,
    streams: HashMap<StreamId, RecurrentState>,
    /// The zero state of one sample (empty for stateless models).
    zero_row: RecurrentState,
    /// A message taken from the queue that did not fit the last batch.
    carry: Option<Message>,
    /// Told to stop: answer what is queued and no more.
    stopping: bool,
    /// libtorch's intra-op threads for this model's batches: the count of the
    /// thread that started the service, as when each service had a thread of
    /// its own that took the count on its first operator.
    threads: i32,
    stats: ServiceStats,
}

/// A job's place in a batch: its index and its request's index.
type Slot = (usize, usize);

impl Worker {
    fn new(
        model: Model,
        config: ServiceConfig,
        rx: Receiver<Message>,
        shared: Arc<Shared>,
    ) -> Self {
        let zero_row = model.initial_state(1);
        Self {
            model,
            config,
            rx,
            shared,
            streams: HashMap::new(),
            zero_row,
            carry: None,
            stopping: false,
            threads: tch::get_num_threads(),
            stats: ServiceStats::default(),
        }
    }

    /// Handles the next message (a carried one first) if there is one without
    /// waiting.
    fn turn(&mut self) -> Turn {
        let message = match self.carry.take() {
            Some(m) => m,
            None => match self.rx.try_recv() {
                Ok(m) => m,
                Err(TryRecvError::Empty) if !self.stopping => return Turn::Idle,
                Err(_) => return Turn::Finished,
            },
        };
        match message {
            Message::Shutdown => self.stopping = true,
            Message::ForgetStream(id) => {
                self.streams.remove(&id);
            }
            Message::Job(job) => {
                let jobs = self.gather(job, self.stopping);
                self.process(jobs);
            }
        }
        Turn::Worked
    }

    /// Whether a message waits outside the queue.
    fn has_carry(&self) -> bool {
        self.carry.is_some()
    }

    /// Whether the worker has been told to stop.
    fn is_stopping(&self) -> bool {
        self.stopping
    }

    /// The model and what the worker did.
    fn into_parts(self) -> (Model, ServiceStats) {
        (self.model, self.stats)
    }

    /// The batch that starts with `first`.
    fn gather(&mut self, first: Job, stopping: bool) -> Vec<Job> {
        let deadline = Instant::now() + self.config.max_wait;
        let mut samples = first.requests.len();
        let mut jobs = vec![first];
        while samples < self.config.max_batch {
            let message = match self.rx.try_recv() {
                Ok(m) => m,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    if stopping || jobs.len() >= self.shared.live_handles.load(Ordering::SeqCst) {
                        break;
                    }
                    match self.rx.recv_deadline(deadline) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                    }
                }
            };
            match message {
                Message::Job(job) if samples + job.requests.len() <= self.config.max_batch => {
                    samples += job.requests.len();
                    jobs.push(job);
                }
                // A control message ends the batch so that it applies after the
                // jobs sent before it.
                other => {
                    self.carry = Some(other);
                    break;
                }
            }
        }
        jobs
    }

    /// Runs a batch and answers its jobs.
    fn process(&mut self, jobs: Vec<Job>) {
        let started = Instant::now();
        let mut errors: Vec<Option<NnError>> = jobs.iter().map(|j| self.check(j).err()).collect();
        let mut answers: Vec<Vec<Option<Prediction>>> = jobs
            .iter()
            .map(|j| j.requests.iter().map(|_| None).collect())
            .collect();
        // Forward passes keyed by (repeat of its stream in this batch, players):
        // a stream's k-th sample runs in pass k, after its earlier steps.
        let mut passes: BTreeMap<(usize, usize), Vec<Slot>> = BTreeMap::new();
        let mut repeats: HashMap<StreamId, usize> = HashMap::new();
        for (j, job) in jobs.iter().enumerate() {
            if errors[j].is_some() {
                continue;
            }
            for (r, request) in job.requests.iter().enumerate() {
                let round = match request.state {
                    StateSource::Stream(id) => {
                        let seen = repeats.entry(id).or_insert(0);
                        *seen += 1;
                        *seen - 1
                    }
                    _ => 0,
                };
                let players = request.observation.num_players();
                passes.entry((round, players)).or_default().push((j, r));
            }
        }
        for slots in passes.into_values() {
            // A job that failed in an earlier pass gets no more work.
            let slots: Vec<Slot> = slots
                .into_iter()
                .filter(|&(j, _)| errors[j].is_none())
                .collect();
            if slots.is_empty() {
                continue;
            }
            let result = catch_unwind(AssertUnwindSafe(|| self.forward(&jobs, &slots)))
                .unwrap_or_else(|panic| Err(panic_message(panic.as_ref())));
            *self.stats.batch_sizes.entry(slots.len()).or_default() += 1;
            self.stats.batches += 1;
            match result {
                Ok(predictions) => {
                    for (&(j, r), prediction) in slots.iter().zip(predictions) {
                        if let (StateSource::Stream(id), Some(state)) =
                            (&jobs[j].requests[r].state, &prediction.state)
                        {
                            self.streams.insert(*id, shallow_clone(state));
                        }
                        answers[j][r] = Some(prediction);
                    }
                }
                Err(message) => {
                    self.stats.failed_batches += 1;
                    log::warn!("inference batch of {} failed: {message}", slots.len());
                    for &(j, _) in &slots {
                        errors[j].get_or_insert_with(|| NnError::BatchFailed {
                            batch: slots.len(),
                            message: message.clone(),
                        });
                    }
                }
            }
        }
        self.stats.busy += started.elapsed();
        for ((job, error), answer) in jobs.into_iter().zip(errors).zip(answers) {
            self.stats.jobs += 1;
            self.stats.requests += job.requests.len() as u64;
            let reply = match error {
                Some(e) => Err(e),
                None => Ok(answer
                    .into_iter()
                    .map(|p| p.expect("every sample of a job without errors ran"))
                    .collect()),
            };
            // The caller may have dropped its `Pending`; nothing to do then.
            let _ = job.reply.send(reply);
        }
    }

    /// Whether every request of the job fits the model.
    fn check(&self, job: &Job) -> Result<(), NnError> {
        let config = self.model.config();
        let bad = |input: &'static str, message: String| NnError::BadInput {
            model: config.name.clone(),
            input,
            message,
        };
        for (i, request) in job.requests.iter().enumerate() {
            let obs = &request.observation;
            if obs.size() != config.world_size {
                return Err(bad(
                    "world",
                    format!(
                        "request {i}: world size {:?}, the model's is {:?}",
                        obs.size().axes(),
                        config.world_size.axes()
                    ),
                ));
            }
            if obs.num_players() == 0 {
                return Err(bad("inventory", format!("request {i}: no players")));
            }
            let actions = self.model.layout().len();
            if let Some(a) = request.prev_action.filter(|&a| a >= actions) {
                return Err(bad(
                    "prev_action",
                    format!("request {i}: action {a} of {actions}"),
                ));
            }
            if let StateSource::Given(state) = &request.state {
                let want = self.zero_row.tensors();
                let fits = state.tensors().len() == want.len()
                    && state
                        .tensors()
                        .iter()
                        .zip(want)
                        .all(|(t, w)| t.size() == w.size() && t.kind() == Kind::Float);
                if !fits {
                    let shapes: Vec<Vec<i64>> = state.tensors().iter().map(Tensor::size).collect();
                    let want: Vec<Vec<i64>> = want.iter().map(Tensor::size).collect();
                    return Err(bad(
                        "state",
                        format!(
                            "request {i}: tensors of shapes {shapes:?}, expected {want:?} Float"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// One forward pass over the samples at `slots`, split into predictions.
    fn forward(&self, jobs: &[Job], slots: &[Slot]) -> Result<Vec<Prediction>, String> {
        let requests: Vec<&InferenceRequest> =
            slots.iter().map(|&(j, r)| &jobs[j].requests[r]).collect();
        let observations: Vec<&Observation> =
            requests.iter().map(|r| r.observation.as_ref()).collect();
        let prev_actions: Option<Vec<usize>> = self.model.config().net.use_prev_action.then(|| {
            requests
                .iter()
                .map(|r| r.prev_action.unwrap_or(0))
                .collect()
        });
        let device = self.model.device();
        let text = |e: NnError| e.to_string();
        let batch = ObsBatch::from_observations(&observations, prev_actions.as_deref(), device)
            .map_err(text)?;
        let recurrent = !self.zero_row.is_empty();
        let all_zero = requests
            .iter()
            .all(|r| matches!(r.state, StateSource::Zero));
        let state = (recurrent && !all_zero).then(|| {
            let rows: Vec<&RecurrentState> = requests
                .iter()
                .map(|r| match &r.state {
                    StateSource::Zero => &self.zero_row,
                    StateSource::Given(s) => s,
                    StateSource::Stream(id) => self.streams.get(id).unwrap_or(&self.zero_row),
                })
                .collect();
            RecurrentState::cat(&rows)
        });
        let outputs = self.model.forward(&batch, state.as_ref()).map_err(text)?;
        let precision = self.model.precision();
        let to_cpu = |t: &Tensor| -> Result<Vec<f32>, String> {
            host_f32(t, precision).map_err(|e| e.to_string())
        };
        let b = requests.len();
        let flat = to_cpu(&outputs.flat_logits)?;
        let value = to_cpu(&outputs.value)?;
        // Outputs no request in the batch wants are not copied at all.
        let full = requests.iter().any(|r| !r.policy_only);
        let goal = if full {
            to_cpu(&outputs.goal_logits)?
        } else {
            Vec::new()
        };
        let other = match &outputs.other_agent_logits {
            Some(o) if full => Some(to_cpu(o)?),
            _ => None,
        };
        let n = flat.len() / b;
        let g = goal.len() / b;
        Ok((0..b)
            .map(|i| Prediction {
                flat_logits: flat[i * n..(i + 1) * n].to_vec(),
                value: value[i],
                goal_logits: if requests[i].policy_only {
                    Vec::new()
                } else {
                    goal[i * g..(i + 1) * g].to_vec()
                },
                other_agent_logits: other
                    .as_ref()
                    .filter(|_| !requests[i].policy_only)
                    .map(|o| o[i * n..(i + 1) * n].to_vec()),
                state: recurrent.then(|| outputs.state.narrow(i as i64, 1)),
            })
            .collect())
    }
}

/// Another handle on the same tensors.
fn shallow_clone(state: &RecurrentState) -> RecurrentState {
    RecurrentState::from_tensors(state.tensors().iter().map(Tensor::shallow_clone).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_answers_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<InferenceHandle>();
        send::<Pending>();
        send::<InferenceRequest>();
        send::<Prediction>();
        send::<InferenceService>();
    }

    #[test]
    fn mean_batch_size_counts_samples_per_pass() {
        let mut stats = ServiceStats::default();
        assert_eq!(stats.mean_batch_size(), 0.0);
        stats.batch_sizes.insert(1, 2);
        stats.batch_sizes.insert(4, 1);
        stats.batches = 3;
        assert_eq!(stats.mean_batch_size(), 2.0);
    }
}
