//! Agent specs: short strings naming who plays a seat, and the factory that turns
//! them into [`Agent`]s.
//!
//! # Forms
//!
//! | spec | agent |
//! |---|---|
//! | `heuristic:NAME` | a reference heuristic agent by short name (see [`HEURISTICS`]), e.g. `heuristic:lowest_block` is `LowestBlockAgent` |
//! | `bc:PATH` | a behaviour-cloning policy network |
//! | `pikl:PATH` | a piKL human model (BC network + MCTS) |
//! | `az:PATH` | an AssistanceZero network with MCTS |
//! | `pretrained:PATH` | the pretrained (Copilot-style) assistant: a goal-blind policy cloned from a BC human's episodes, at temperature 0.3 unless `?temperature=` says |
//! | `oracle` | a scripted assistant that sees the goal and builds it ([`super::oracle`]); its seat is shown the goal ([`AgentSpec::sees_goal`]) |
//! | `none` | nobody: the seat is left empty |
//!
//! `bc:PATH?max_idle=N` never idles more than N moves in a row (an emulated
//! person kept within its data's support; see `defaults::EMULATED_PERSON`).
//!
//! `az:PATH?sims=0` (or `pikl:`) searches nothing and samples the network's
//! policy head alone, at `temperature` (1 unless given; `argmax=true` for 0).
//!
//! `PATH` is a model config JSON (e.g. `../shared/models/az_test_assistant.json`)
//! whose weights lie next to it. A network spec may carry options after a `?`, as in
//! a URL query: `az:PATH?sims=20&temperature=0.3`. Keys must be among the kind's
//! [`NetworkKind::option_keys`]; values are kept as written (so a spec prints back
//! exactly as parsed, options sorted by key) and the well-known ones are checked
//! when parsed. Adding an option means adding its key to `option_keys` (and a check
//! in [`SpecOptions::validate`] if it has a type). A `PATH` therefore cannot contain
//! `?`.
//!
//! # `none`
//!
//! The paper's "human alone" baseline has no assistant at all, not an idle one: a
//! second player still occupies cells and would be seen in observations. So the
//! evaluation runner (`crate::eval::run`) plays `none` by dropping the seat, running
//! the human in a 1-player version of the env config. [`AgentFactory::build`] for
//! `none` gives a `NoopAgent`, for callers that keep a 2-player env with an idle
//! second player.
//!
//! # Network agents
//!
//! This module builds heuristic agents itself. Network-backed agents (bc, pikl, az)
//! are built by a [`NetworkAgents`] implementation handed to
//! [`StandardAgents::with_network`]; without one they are
//! [`AgentSpecError::Unsupported`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use serde_json::Value;

use super::Agent;
use super::oracle::OracleAgent;
use super::registry::{AgentError, build_agent};
use crate::sim::config::Config;

/// Heuristic agents by spec short name and reference class name.
pub const HEURISTICS: [(&str, &str); 7] = [
    ("noop", "NoopAgent"),
    ("movement", "MovementAgent"),
    ("random", "RandomAgent"),
    ("lowest_block", "LowestBlockAgent"),
    ("layer_builder", "LayerBuilderAgent"),
    ("priority_queue", "PriorityQueueAgent"),
    ("mirror_building", "MirrorBuildingAgent"),
];

/// A reference heuristic agent, by its index in [`HEURISTICS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Heuristic(usize);

impl Heuristic {
    /// The heuristic with spec short name `name` (e.g. `lowest_block`).
    pub fn from_short_name(name: &str) -> Option<Self> {
        HEURISTICS.iter().position(|(n, _)| *n == name).map(Self)
    }

    /// The spec short name, e.g. `lowest_block`.
    pub fn short_name(self) -> &'static str {
        HEURISTICS[self.0].0
    }

    /// The reference class name, e.g. `LowestBlockAgent`.
    pub fn class_name(self) -> &'static str {
        HEURISTICS[self.0].1
    }
}

/// The kinds of network-backed agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NetworkKind {
    /// A behaviour-cloning policy (`bc:`).
    Bc,
    /// A piKL human model: BC prior plus MCTS (`pikl:`).
    Pikl,
    /// An AssistanceZero assistant: network plus MCTS (`az:`).
    AssistanceZero,
    /// The paper's pretrained ("Copilot-style") assistant (`pretrained:`): a
    /// goal-blind policy cloned from a BC human's episodes, which does what it
    /// expects the person to do next, sampled at a low temperature
    /// ([`PRETRAINED_TEMPERATURE`] unless given).
    Pretrained,
}

/// The pretrained assistant's sampling temperature unless its spec says: the
/// paper's (the reference README's evaluation of the pretrained and SFT
/// assistants), low enough that it acts mostly where it is sure.
pub const PRETRAINED_TEMPERATURE: f64 = 0.3;

impl NetworkKind {
    /// Every kind, in the order of the spec forms.
    pub const ALL: [Self; 4] = [Self::Bc, Self::Pikl, Self::AssistanceZero, Self::Pretrained];

    /// The spec prefix (without the colon).
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Bc => "bc",
            Self::Pikl => "pikl",
            Self::AssistanceZero => "az",
            Self::Pretrained => "pretrained",
        }
    }

    /// Whether the agent plans with MCTS (and so takes `sims`).
    pub fn uses_mcts(self) -> bool {
        matches!(self, Self::Pikl | Self::AssistanceZero)
    }

    /// The option keys this kind accepts.
    pub fn option_keys(self) -> &'static [&'static str] {
        match self {
            Self::Bc => &["temperature", "argmax", "max_idle"],
            Self::Pretrained => &["temperature", "argmax"],
            Self::Pikl => &["sims", "leaves", "temperature", "argmax"],
            Self::AssistanceZero => &[
                "sims",
                "leaves",
                "temperature",
                "argmax",
                "oracle_goal",
                "goal_model",
                "tilt",
                "guide",
                "guide_threshold",
                "refill",
            ],
        }
    }
}

/// The most leaves a search may gather per network call: past the batch where
/// the network's cost per sample flattens (`mbag bench nn`), more only weakens
/// the search.
pub const MAX_LEAVES: usize = 256;

/// A network spec's `?key=value&...` options, sorted by key, values as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecOptions(BTreeMap<String, String>);

impl SpecOptions {
    /// The raw value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The options as key/value pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// MCTS simulations per move (`sims`), if given. 0 means no search: the agent
    /// samples its network's policy head, as a `bc:` agent does.
    pub fn sims(&self) -> Option<u32> {
        self.get("sims").and_then(|v| v.parse().ok())
    }

    /// Leaves the search gathers (under virtual loss) for each network call
    /// (`leaves`), if given: 1 is the reference's one-at-a-time search, more
    /// fill the network's batches (`mbag bench mcts --leaves`).
    pub fn leaves(&self) -> Option<usize> {
        self.get("leaves").and_then(|v| v.parse().ok())
    }

    /// Sampling temperature (`temperature`), if given.
    pub fn temperature(&self) -> Option<f64> {
        self.get("temperature").and_then(|v| v.parse().ok())
    }

    /// The most NOOPs in a row a BC agent makes before it must act
    /// (`max_idle`; see [`crate::agents::network::PolicyAgent::with_max_idle`]).
    pub fn max_idle(&self) -> Option<u32> {
        self.get("max_idle").and_then(|v| v.parse().ok())
    }

    /// Whether to take the most likely action instead of sampling (`argmax`).
    pub fn argmax(&self) -> Option<bool> {
        self.get("argmax").and_then(|v| v.parse().ok())
    }

    /// Whether an assistant plans with the true goal from its observation instead
    /// of its goal head's prediction (`oracle_goal`): the upper bound that tells a
    /// weak search from a weak goal prediction. Needs a goal-visible seat.
    pub fn oracle_goal(&self) -> Option<bool> {
        self.get("oracle_goal").and_then(|v| v.parse().ok())
    }

    /// A goal model file (`goal_model`, from the working directory) whose
    /// predictions replace the network's goal head in the search
    /// ([`crate::goal_model`]).
    pub fn goal_model(&self) -> Option<&str> {
        self.get("goal_model")
    }

    /// How far the goal model tilts the search's prior towards places it is
    /// sure of (`tilt`; see [`crate::goal_model::evaluator`]).
    pub fn tilt(&self) -> Option<f64> {
        self.get("tilt").and_then(|v| v.parse().ok())
    }

    /// The share of the search's prior given to the goal model's guide
    /// (`guide`, 0 to 1; see [`crate::goal_model::evaluator`]).
    pub fn guide(&self) -> Option<f64> {
        self.get("guide").and_then(|v| v.parse().ok())
    }

    /// The probability above which the guide builds a cell (`guide_threshold`).
    pub fn guide_threshold(&self) -> Option<f64> {
        self.get("guide_threshold").and_then(|v| v.parse().ok())
    }

    /// Whether the guide may build again where the person cleared (`refill`).
    pub fn refill(&self) -> Option<bool> {
        self.get("refill").and_then(|v| v.parse().ok())
    }

    /// Sets `key` to `value` (unchecked; [`SpecOptions::validate`] checks).
    pub fn set(&mut self, key: &str, value: impl ToString) {
        self.0.insert(key.to_owned(), value.to_string());
    }

    /// Checks that every key is accepted by `kind` and that typed values parse.
    pub fn validate(&self, kind: NetworkKind) -> Result<(), String> {
        for (key, value) in self.iter() {
            if !kind.option_keys().contains(&key) {
                return Err(format!(
                    "{}: specs take no option {key:?} (accepted: {})",
                    kind.prefix(),
                    kind.option_keys().join(", ")
                ));
            }
            let ok = match key {
                "sims" => value.parse::<u32>().is_ok(),
                "max_idle" => value.parse::<u32>().is_ok_and(|n| n >= 1),
                "leaves" => value
                    .parse::<usize>()
                    .is_ok_and(|n| (1..=MAX_LEAVES).contains(&n)),
                "temperature" | "tilt" => value
                    .parse::<f64>()
                    .is_ok_and(|t| t.is_finite() && t >= 0.0),
                "goal_model" => !value.is_empty(),
                "guide" | "guide_threshold" => {
                    value.parse::<f64>().is_ok_and(|t| (0.0..=1.0).contains(&t))
                }
                "argmax" | "oracle_goal" | "refill" => value.parse::<bool>().is_ok(),
                _ => true,
            };
            if !ok {
                let expected = match key {
                    "sims" => "a non-negative integer",
                    "max_idle" => "a positive integer",
                    "leaves" => "an integer from 1 to 256",
                    "temperature" | "tilt" => "a non-negative number",
                    "goal_model" => "a file",
                    "guide" | "guide_threshold" => "a number from 0 to 1",
                    "argmax" | "oracle_goal" | "refill" => "true or false",
                    _ => "a value",
                };
                return Err(format!("option {key}={value:?} must be {expected}"));
            }
        }
        Ok(())
    }

    fn parse(query: &str, kind: NetworkKind) -> Result<Self, String> {
        let mut options = Self::default();
        for pair in query.split('&') {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(format!("option {pair:?} is not key=value"));
            };
            if key.is_empty() || value.is_empty() {
                return Err(format!("option {pair:?} has an empty key or value"));
            }
            if options.0.insert(key.to_owned(), value.to_owned()).is_some() {
                return Err(format!("option {key:?} is given twice"));
            }
        }
        options.validate(kind)?;
        Ok(options)
    }
}

/// Who plays a seat, parsed from a short string (see the module docs for the forms).
#[derive(Clone, Debug, PartialEq)]
pub enum AgentSpec {
    /// A reference heuristic agent.
    Heuristic(Heuristic),
    /// A network-backed agent.
    Network {
        /// Which kind.
        kind: NetworkKind,
        /// The model config JSON (weights next to it).
        path: PathBuf,
        /// Options after the `?`.
        options: SpecOptions,
    },
    /// The goal-aware scripted assistant ([`super::oracle::OracleAgent`]).
    Oracle,
    /// Nobody plays the seat.
    None,
}

impl AgentSpec {
    /// Whether the agent needs the goal in its observation: whoever builds the env
    /// config for its seat sets `goal_visible` (the `oracle`, and an `az:` spec
    /// planning with `oracle_goal=true`).
    pub fn sees_goal(&self) -> bool {
        match self {
            Self::Oracle => true,
            Self::Network { options, .. } => options.oracle_goal() == Some(true),
            Self::Heuristic(_) | Self::None => false,
        }
    }

    /// Whether the seat is empty.
    pub fn is_none(&self) -> bool {
        matches!(self, Self::None)
    }

    /// Sets `sims` on an MCTS spec that does not already choose it (an explicit
    /// `?sims=` wins); other specs are returned unchanged.
    pub fn with_default_sims(mut self, sims: u32) -> Self {
        if let Self::Network { kind, options, .. } = &mut self
            && kind.uses_mcts()
            && options.get("sims").is_none()
        {
            options.set("sims", sims);
        }
        self
    }
}

/// The accepted spec forms, for error messages.
fn accepted_forms() -> String {
    let names: Vec<&str> = HEURISTICS.iter().map(|(n, _)| *n).collect();
    format!(
        "accepted forms: heuristic:NAME (NAME one of {}), bc:PATH, pikl:PATH, az:PATH, pretrained:PATH \
         (PATH a model config JSON, optionally followed by ?key=value&...), oracle, none",
        names.join(", ")
    )
}

/// Why an agent spec cannot be parsed or built.
#[derive(Debug, thiserror::Error)]
pub enum AgentSpecError {
    /// The text is not a spec.
    #[error("bad agent spec {spec:?}: {problem}; {}", accepted_forms())]
    Parse {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The spec is valid but cannot be built here.
    #[error("agent spec {spec} is not supported here: {reason}")]
    Unsupported {
        /// The spec.
        spec: String,
        /// Why.
        reason: String,
    },
    /// The agent's constructor refused the env config.
    #[error("building {spec}: {source}")]
    Build {
        /// The spec.
        spec: String,
        /// The constructor's error.
        #[source]
        source: AgentError,
    },
    /// A network agent could not be built (model loading and the like).
    #[error("building {spec}: {message}")]
    Network {
        /// The spec.
        spec: String,
        /// What went wrong.
        message: String,
    },
}

impl FromStr for AgentSpec {
    type Err = AgentSpecError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |problem: String| AgentSpecError::Parse {
            spec: text.to_owned(),
            problem,
        };
        match text {
            "none" => return Ok(Self::None),
            "oracle" => return Ok(Self::Oracle),
            _ => {}
        }
        let Some((prefix, rest)) = text.split_once(':') else {
            return Err(fail("no KIND: prefix".into()));
        };
        if prefix == "heuristic" {
            return Heuristic::from_short_name(rest)
                .map(Self::Heuristic)
                .ok_or_else(|| fail(format!("unknown heuristic {rest:?}")));
        }
        let Some(kind) = NetworkKind::ALL.into_iter().find(|k| k.prefix() == prefix) else {
            return Err(fail(format!("unknown kind {prefix:?}")));
        };
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        if path.is_empty() {
            return Err(fail(format!("{prefix}: needs a model config path")));
        }
        let options = match query {
            Some(q) => SpecOptions::parse(q, kind).map_err(fail)?,
            None => SpecOptions::default(),
        };
        Ok(Self::Network {
            kind,
            path: PathBuf::from(path),
            options,
        })
    }
}

impl fmt::Display for AgentSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Heuristic(h) => write!(f, "heuristic:{}", h.short_name()),
            Self::None => f.write_str("none"),
            Self::Oracle => f.write_str("oracle"),
            Self::Network {
                kind,
                path,
                options,
            } => {
                write!(f, "{}:{}", kind.prefix(), path.display())?;
                for (i, (k, v)) in options.iter().enumerate() {
                    write!(f, "{}{k}={v}", if i == 0 { '?' } else { '&' })?;
                }
                Ok(())
            }
        }
    }
}

impl serde::Serialize for AgentSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Builds the agent for one seat of an episode.
///
/// Called once per worker thread and seat; the agent is then [`Agent::reset`] before
/// every episode, so an implementation may share expensive state (a loaded network)
/// between the agents it builds.
pub trait AgentFactory: Send + Sync {
    /// The agent for `spec` playing player `player` in envs with `config`.
    fn build(
        &self,
        spec: &AgentSpec,
        player: usize,
        config: &Config,
    ) -> Result<Box<dyn Agent>, AgentSpecError>;
}

/// The extension point for network-backed agents (bc, pikl, az): whoever owns the
/// networks and MCTS implements it and hands it to [`StandardAgents::with_network`].
pub trait NetworkAgents: Send + Sync {
    /// The agent of `kind` loaded from the model config at `path`, with `options`
    /// (already checked against [`NetworkKind::option_keys`]), playing `player`.
    fn build(
        &self,
        kind: NetworkKind,
        path: &Path,
        options: &SpecOptions,
        player: usize,
        config: &Config,
    ) -> Result<Box<dyn Agent>, AgentSpecError>;
}

/// The factory for every spec form: heuristics and `none` here, networks through an
/// optional [`NetworkAgents`].
#[derive(Clone, Default)]
pub struct StandardAgents {
    network: Option<Arc<dyn NetworkAgents>>,
}

impl fmt::Debug for StandardAgents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StandardAgents")
            .field("network", &self.network.is_some())
            .finish()
    }
}

impl StandardAgents {
    /// Heuristic agents and `none` only; network specs are unsupported.
    pub fn heuristics_only() -> Self {
        Self::default()
    }

    /// Also network specs, built by `network`.
    pub fn with_network(network: Arc<dyn NetworkAgents>) -> Self {
        Self {
            network: Some(network),
        }
    }
}

impl AgentFactory for StandardAgents {
    fn build(
        &self,
        spec: &AgentSpec,
        player: usize,
        config: &Config,
    ) -> Result<Box<dyn Agent>, AgentSpecError> {
        let class = match spec {
            AgentSpec::Heuristic(h) => h.class_name(),
            AgentSpec::None => "NoopAgent",
            AgentSpec::Oracle => return Ok(Box::new(OracleAgent::new(config))),
            AgentSpec::Network {
                kind,
                path,
                options,
            } => {
                return match &self.network {
                    Some(network) => network.build(*kind, path, options, player, config),
                    None => Err(AgentSpecError::Unsupported {
                        spec: spec.to_string(),
                        reason: "network agents (bc, pikl, az) need the network agent \
                                 builder, which this build does not provide yet"
                            .into(),
                    }),
                };
            }
        };
        build_agent(class, &Value::Null, config).map_err(|source| AgentSpecError::Build {
            spec: spec.to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> AgentSpec {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn good_specs_round_trip() {
        for text in [
            "none",
            "oracle",
            "heuristic:lowest_block",
            "heuristic:layer_builder",
            "heuristic:priority_queue",
            "heuristic:mirror_building",
            "heuristic:random",
            "heuristic:noop",
            "heuristic:movement",
            "bc:../shared/models/bc_human_tutorial.json",
            "pikl:models/h.json?sims=10",
            "az:../shared/models/az_test_assistant.json?argmax=true&sims=20&temperature=0.3",
        ] {
            let spec = parse(text);
            assert_eq!(spec.to_string(), text);
            assert_eq!(parse(&spec.to_string()), spec);
        }
        assert_eq!(
            parse("heuristic:lowest_block"),
            AgentSpec::Heuristic(Heuristic::from_short_name("lowest_block").unwrap())
        );
        let AgentSpec::Network {
            kind,
            path,
            options,
        } = parse("az:m.json?temperature=0.3&sims=20")
        else {
            panic!("not a network spec");
        };
        assert_eq!(kind, NetworkKind::AssistanceZero);
        assert_eq!(path, PathBuf::from("m.json"));
        assert_eq!(options.sims(), Some(20));
        assert_eq!(options.temperature(), Some(0.3));
        // Options print sorted, so the canonical text differs from the input.
        assert_eq!(
            parse("az:m.json?temperature=0.3&sims=20").to_string(),
            "az:m.json?sims=20&temperature=0.3"
        );
    }

    #[test]
    fn bad_specs_name_the_problem_and_the_forms() {
        for (text, problem) in [
            ("", "no KIND: prefix"),
            ("lowest_block", "no KIND: prefix"),
            ("heuristic:greedy", "unknown heuristic \"greedy\""),
            ("heuristic:LowestBlockAgent", "unknown heuristic"),
            ("ppo:x.json", "unknown kind \"ppo\""),
            ("az:", "needs a model config path"),
            ("az:m.json?sims", "not key=value"),
            ("az:m.json?sims=-1", "must be a non-negative integer"),
            ("az:m.json?sims=5&sims=6", "given twice"),
            ("bc:m.json?sims=5", "no option \"sims\""),
            ("pretrained:m.json?sims=5", "no option \"sims\""),
            ("bc:m.json?max_idle=0", "must be a positive integer"),
            ("az:m.json?max_idle=5", "no option \"max_idle\""),
            ("pretrained:", "needs a model config path"),
            ("pikl:m.json?temperature=hot", "non-negative number"),
        ] {
            let err = text.parse::<AgentSpec>().unwrap_err();
            let message = err.to_string();
            assert!(matches!(err, AgentSpecError::Parse { .. }), "{text}");
            assert!(message.contains(problem), "{text}: {message}");
            assert!(
                message.contains("accepted forms: heuristic:NAME"),
                "{message}"
            );
            assert!(message.contains("lowest_block") && message.contains("az:PATH"));
        }
    }

    #[test]
    fn default_sims_only_fill_mcts_specs() {
        assert_eq!(
            parse("az:m.json").with_default_sims(20).to_string(),
            "az:m.json?sims=20"
        );
        assert_eq!(
            parse("pikl:m.json?sims=5")
                .with_default_sims(20)
                .to_string(),
            "pikl:m.json?sims=5"
        );
        assert_eq!(
            parse("bc:m.json").with_default_sims(20).to_string(),
            "bc:m.json"
        );
        assert_eq!(
            parse("pretrained:m.json?temperature=0.1")
                .with_default_sims(20)
                .to_string(),
            "pretrained:m.json?temperature=0.1"
        );
        assert_eq!(parse("none").with_default_sims(20), AgentSpec::None);
    }

    #[test]
    fn the_standard_factory_builds_heuristics_and_refuses_networks() {
        let config = Config::from_json(&json!({
            "num_players": 2,
            "world_size": [6, 6, 6],
            "players": [{}, {}],
        }))
        .unwrap();
        let factory = StandardAgents::heuristics_only();
        for (short, class) in HEURISTICS {
            let spec = parse(&format!("heuristic:{short}"));
            assert_eq!(factory.build(&spec, 0, &config).unwrap().name(), class);
        }
        assert_eq!(
            factory.build(&AgentSpec::None, 1, &config).unwrap().name(),
            "NoopAgent"
        );
        let err = factory
            .build(&parse("az:m.json"), 1, &config)
            .expect_err("no network builder");
        assert!(
            matches!(&err, AgentSpecError::Unsupported { spec, .. } if spec == "az:m.json"),
            "{err}"
        );
        assert!(err.to_string().contains("network agent"));
    }
}
