//! The inference service as the search's [`Evaluator`], and the network agents
//! built on it for `bc:`, `pikl:` and `az:` specs.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{
    DeviceChoice, InferenceHandle, InferenceRequest, InferenceService, Model, ModelConfig, NnError,
    Precision, RecurrentState, ServiceConfig, StateSource,
};
use crate::agents::Agent;
use crate::agents::network::{PolicyAgent, SearchAgent};
use crate::agents::spec::{
    AgentSpec, AgentSpecError, NetworkAgents, NetworkKind, PRETRAINED_TEMPERATURE, SpecOptions,
};
use crate::goal_model::evaluator::{GoalModelEvaluator, Guide};
use crate::goal_model::{GoalModel, GoalModelError};
use crate::mcts::{Evaluator, LeafEvaluation, LeafQuery, MctsConfig};
use crate::nn::reduced::FormatChoice;
use crate::sim::action::FlatLayout;
use crate::sim::config::Config;

/// A recurrent state kept in search nodes and agents. Tensors may move between
/// threads but not be shared by them, so the state sits behind a mutex and is
/// handed to the service as a shallow copy.
#[derive(Clone)]
pub struct SharedState(Arc<Mutex<RecurrentState>>);

impl SharedState {
    /// Wraps a state.
    pub fn new(state: RecurrentState) -> Self {
        Self(Arc::new(Mutex::new(state)))
    }

    /// A new handle on the same tensors (no data is copied); training keeps the
    /// state a fragment started from this way.
    pub fn shallow_copy(&self) -> RecurrentState {
        let state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        RecurrentState::from_tensors(state.tensors().iter().map(|t| t.shallow_clone()).collect())
    }
}

impl fmt::Debug for SharedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedState")
    }
}

/// Evaluates leaves through an [`InferenceHandle`], so that the leaves of every
/// search on every thread meet in the service's batches.
#[derive(Clone, Debug)]
pub struct NetEvaluator {
    handle: InferenceHandle,
}

impl NetEvaluator {
    /// An evaluator on `handle`'s service.
    pub fn new(handle: InferenceHandle) -> Self {
        Self { handle }
    }
}

impl Evaluator for NetEvaluator {
    /// `None` is the zero state (an episode's start, or a stateless model).
    type State = Option<SharedState>;
    type Error = NnError;

    fn initial_state(&self) -> Self::State {
        None
    }

    fn evaluate(
        &mut self,
        queries: &[LeafQuery<'_, Self::State>],
    ) -> Result<Vec<LeafEvaluation<Self::State>>, NnError> {
        let requests = queries
            .iter()
            .map(|q| InferenceRequest {
                observation: Arc::new(q.observation.clone()),
                prev_action: q.prev_action,
                policy_only: q.policy_only,
                state: match q.state {
                    None => StateSource::Zero,
                    Some(state) => StateSource::Given(state.shallow_copy()),
                },
            })
            .collect();
        let predictions = self.handle.evaluate(requests)?;
        Ok(predictions
            .into_iter()
            .map(|p| LeafEvaluation {
                policy_logits: p.flat_logits,
                value: p.value,
                goal_logits: (!p.goal_logits.is_empty()).then_some(p.goal_logits),
                other_action_logits: p.other_agent_logits,
                state: p.state.map(SharedState::new),
            })
            .collect())
    }
}

/// Builds network agents for agent specs: one inference service per model file,
/// shared by every agent (and thread) that plays with it, shut down when this
/// value is dropped.
pub struct ServiceAgents {
    device: DeviceChoice,
    service: ServiceConfig,
    formats: FormatChoice,
    services: Mutex<HashMap<PathBuf, Loaded>>,
    goal_models: Mutex<HashMap<PathBuf, Arc<GoalModel>>>,
}

struct Loaded {
    service: InferenceService,
    config: ModelConfig,
    precision: Precision,
}

impl fmt::Debug for ServiceAgents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAgents")
            .field("device", &self.device)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl ServiceAgents {
    /// Agents whose models run on `device`, batched as `service` says.
    pub fn new(device: DeviceChoice, service: ServiceConfig) -> Self {
        Self {
            device,
            service,
            formats: FormatChoice::Checked,
            services: Mutex::new(HashMap::new()),
            goal_models: Mutex::new(HashMap::new()),
        }
    }

    /// How models loaded from now on choose their number format on the CPU
    /// (bfloat16 where [`crate::nn::reduced::check`] allows, by default).
    pub fn with_formats(mut self, formats: FormatChoice) -> Self {
        self.formats = formats;
        self
    }

    /// The number format the model served for `path` computes in, once it is
    /// served.
    pub fn precision_of(&self, path: &Path) -> Option<Precision> {
        let services = self.services.lock().unwrap_or_else(|e| e.into_inner());
        services.get(&service_key(path)).map(|l| l.precision)
    }

    /// The goal model at `path`, read the first time it is asked for.
    fn goal_model(&self, path: &Path) -> Result<Arc<GoalModel>, GoalModelError> {
        let mut models = self.goal_models.lock().unwrap_or_else(|e| e.into_inner());
        let key = service_key(path);
        if let Some(model) = models.get(&key) {
            return Ok(Arc::clone(model));
        }
        let model = Arc::new(GoalModel::load(path)?);
        log::info!(
            "loaded goal model {} ({:?} contexts)",
            path.display(),
            model.contexts()
        );
        models.insert(key, Arc::clone(&model));
        Ok(model)
    }

    /// Serves `model` for specs naming `path`, instead of loading the file: for
    /// models without weights files (benches run the paper-size configs with
    /// random weights). A model already served for `path` is kept.
    pub fn insert(&self, path: &Path, model: Model) -> Result<(), NnError> {
        let mut services = self.services.lock().unwrap_or_else(|e| e.into_inner());
        let key = service_key(path);
        if !services.contains_key(&key) {
            let mut model = model;
            self.choose_format(&mut model, path)?;
            self.serve(&mut services, key, model)?;
        }
        Ok(())
    }

    /// The handle and config of the service for the model at `path`, loading it
    /// the first time.
    fn load(&self, path: &Path) -> Result<(InferenceHandle, ModelConfig), NnError> {
        let mut services = self.services.lock().unwrap_or_else(|e| e.into_inner());
        let key = service_key(path);
        if let Some(loaded) = services.get(&key) {
            return Ok((loaded.service.handle(), loaded.config.clone()));
        }
        let device = self.device.resolve()?;
        let mut model = Model::load(path, device)?;
        // Served models only answer queries: one pass fewer per residual block.
        model.fold_batch_norm();
        self.choose_format(&mut model, path)?;
        log::info!(
            "loaded {} ({} parameters) on {device:?}",
            model.config().name,
            model.num_parameters()
        );
        self.serve(&mut services, key, model)
    }

    /// bfloat16 for `model` (from `path`) on the CPU if the check allows and
    /// the formats are [`FormatChoice::Checked`].
    fn choose_format(&self, model: &mut Model, path: &Path) -> Result<(), NnError> {
        if self.formats != FormatChoice::Checked {
            return Ok(());
        }
        if let Some(check) = crate::nn::reduced::choose_on_cpu(model, path)? {
            log::info!("{check}");
        }
        Ok(())
    }

    /// Starts `model`'s inference thread and keeps it under `key`.
    fn serve(
        &self,
        services: &mut HashMap<PathBuf, Loaded>,
        key: PathBuf,
        model: Model,
    ) -> Result<(InferenceHandle, ModelConfig), NnError> {
        let config = model.config().clone();
        let precision = model.precision();
        let service = InferenceService::spawn(model, self.service)?;
        let handle = service.handle();
        services.insert(
            key,
            Loaded {
                service,
                config: config.clone(),
                precision,
            },
        );
        Ok((handle, config))
    }
}

/// The key a model path is served under: canonical where the file exists, so that
/// two spellings of one path share a service.
fn service_key(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The guide's threshold when neither the spec nor the model names one: a
/// little above 2/3, where a place starts to pay.
const DEFAULT_GUIDE_THRESHOLD: f64 = 0.7;

/// How a shipped assistant plays when its spec asks nothing else: the model
/// config's `play` object, e.g. `{"sims": 20, "goal_model":
/// "assistant_goal.json.gz", "tilt": 1.0}` (the goal model's path relative to
/// the config's folder). Spec options override each field.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlaySettings {
    sims: Option<u32>,
    leaves: Option<usize>,
    goal_model: Option<PathBuf>,
    tilt: Option<f64>,
    guide: Option<f64>,
    guide_threshold: Option<f64>,
    refill: Option<bool>,
    temperature: Option<f64>,
    argmax: Option<bool>,
}

impl PlaySettings {
    /// The `play` object of the config at `path`, if any.
    fn of(config: &ModelConfig, path: &Path) -> Result<Self, String> {
        let Some(value) = config.json.get("play") else {
            return Ok(Self::default());
        };
        let mut play: Self = serde_json::from_value(value.clone())
            .map_err(|e| format!("{}: \"play\": {e}", path.display()))?;
        if let Some(file) = &play.goal_model {
            let dir = path.parent().unwrap_or(Path::new("."));
            play.goal_model = Some(dir.join(file));
        }
        Ok(play)
    }
}

/// The search settings a checkpoint was trained with, if it records them, else
/// `fallback`; the discount comes from `training_gamma` when present.
fn trained_search(config: &ModelConfig, fallback: MctsConfig) -> MctsConfig {
    let mut search = config
        .json
        .get("training_mcts_config")
        .and_then(|v| serde_json::from_value::<MctsConfig>(v.clone()).ok())
        .unwrap_or(fallback);
    if let Some(gamma) = config.json["training_gamma"].as_f64() {
        search.gamma = gamma;
    }
    search
}

impl NetworkAgents for ServiceAgents {
    fn build(
        &self,
        kind: NetworkKind,
        path: &Path,
        options: &SpecOptions,
        player: usize,
        config: &Config,
    ) -> Result<Box<dyn Agent>, AgentSpecError> {
        let spec = || {
            AgentSpec::Network {
                kind,
                path: path.to_path_buf(),
                options: options.clone(),
            }
            .to_string()
        };
        let (handle, model) = self.load(path).map_err(|e| AgentSpecError::Network {
            spec: spec(),
            message: e.to_string(),
        })?;
        if model.world_size != config.world_size || model.abilities != config.abilities {
            return Err(AgentSpecError::Network {
                spec: spec(),
                message: format!(
                    "the model was built for a {} world with {:?}, the env is {} with {:?}",
                    model.world_size, model.abilities, config.world_size, config.abilities
                ),
            });
        }
        let evaluator = NetEvaluator::new(handle);
        let los = model.line_of_sight_masking();
        let network = |message: String| AgentSpecError::Network {
            spec: spec(),
            message,
        };
        let play = if kind == NetworkKind::AssistanceZero {
            PlaySettings::of(&model, path).map_err(network)?
        } else {
            PlaySettings::default()
        };
        let sims = options.sims().or(play.sims);
        let goal_model = match options.goal_model().map(PathBuf::from).or(play.goal_model) {
            Some(file) => Some(self.goal_model(&file).map_err(|e| network(e.to_string()))?),
            None => None,
        };
        let tilt = options.tilt().or(play.tilt).unwrap_or(0.0) as f32;
        let guide = options.guide().or(play.guide).unwrap_or(0.0) as f32;
        let guide_threshold = options
            .guide_threshold()
            .or(play.guide_threshold)
            .unwrap_or(DEFAULT_GUIDE_THRESHOLD);
        let refill = options.refill().or(play.refill).unwrap_or(false);
        let with_goal = |evaluator: NetEvaluator, goal: Arc<GoalModel>| {
            let layout = FlatLayout::new(config.world_size, config.abilities);
            let evaluator = GoalModelEvaluator::new(evaluator, goal, layout, tilt);
            if guide > 0.0 {
                evaluator.with_guide(Guide::new(config, guide_threshold, guide).refilling(refill))
            } else {
                evaluator
            }
        };
        let mut temperature = options.temperature().or(play.temperature);
        let argmax = options.argmax().or(play.argmax);
        if kind == NetworkKind::Pretrained {
            // A pretrained assistant must not read the goal it is not shown: a
            // human model given an empty goal would build nonsense.
            if !model.net.mask_goal {
                return Err(network(format!(
                    "{} reads the goal (mask_goal is false): a pretrained assistant is a \
                     goal-blind policy (train it with `mbag train bc` on a BC human's \
                     episodes, configs/train/pretrained_assistant.json)",
                    path.display()
                )));
            }
            temperature = temperature.or(Some(PRETRAINED_TEMPERATURE));
        }
        Ok(match kind {
            // No search: the policy head alone, sampled as a BC policy is.
            _ if matches!(kind, NetworkKind::Bc | NetworkKind::Pretrained) || sims == Some(0) => {
                if options.oracle_goal() == Some(true) {
                    // With no simulations the policy head acts alone and no
                    // goal is consulted: the option would do nothing.
                    return Err(AgentSpecError::Network {
                        spec: spec(),
                        message: concat!(
                            "oracle_goal plans with the true goal, but sims=0 plays the policy ",
                            "head alone without planning; give sims of at least 1 or drop oracle_goal"
                        )
                        .into(),
                    });
                }
                let temperature = if argmax == Some(true) {
                    0.0
                } else {
                    temperature.unwrap_or(1.0) as f32
                };
                let max_idle = options.max_idle();
                match goal_model {
                    // The tilted prior is the policy the agent samples.
                    Some(goal) => Box::new(
                        PolicyAgent::new(with_goal(evaluator, goal), config, los, temperature)
                            .with_max_idle(max_idle),
                    ),
                    None => Box::new(
                        PolicyAgent::new(evaluator, config, los, temperature)
                            .with_max_idle(max_idle),
                    ),
                }
            }
            _ => {
                let mut search = match kind {
                    NetworkKind::Pikl => MctsConfig::pikl_human(),
                    _ => {
                        // Train-time settings, but the evaluation's 20 simulations
                        // (appendix E.4) unless asked otherwise.
                        let mut s = trained_search(&model, MctsConfig::default());
                        s.num_simulations = MctsConfig::assistant_evaluation().num_simulations;
                        s
                    }
                };
                if let Some(sims) = sims {
                    search.num_simulations = sims as usize;
                }
                if let Some(leaves) = options.leaves().or(play.leaves) {
                    search.leaves_per_batch = leaves;
                }
                if let Some(t) = temperature {
                    search.temperature = t;
                }
                if let Some(argmax) = argmax {
                    search.argmax_tree_policy = argmax;
                }
                if options.oracle_goal() == Some(true) {
                    if !config.players[player].goal_visible {
                        return Err(AgentSpecError::Network {
                            spec: spec(),
                            message: format!(
                                "oracle_goal needs the goal in player {player}'s observation, \
                                 but the env hides it (goal_visible is false)"
                            ),
                        });
                    }
                    search.use_goal_predictor = false;
                }
                match goal_model {
                    Some(goal) if search.use_goal_predictor => Box::new(SearchAgent::new(
                        with_goal(evaluator, goal),
                        config,
                        player,
                        los,
                        search,
                    )),
                    _ => Box::new(SearchAgent::new(evaluator, config, player, los, search)),
                }
            }
        })
    }
}
