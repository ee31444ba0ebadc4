//! Building agents by the reference's class names.

use serde_json::Value;

use super::Agent;
use super::distribution::{LowestBlockAgent, MovementAgent, NoopAgent, RandomAgent};
use super::hardcoded::{
    HardcodedBuilderAgent, HardcodedHumanAgent, HardcodedInventoryDonator,
    HardcodedInventoryReceiver, HardcodedResourceAgent,
};
use super::heuristic::{LayerBuilderAgent, MirrorBuildingAgent, PriorityQueueAgent};
use super::human::HumanAgent;
use crate::sim::config::Config;
use crate::sim::coords::WorldSize;

/// Every agent [`build_agent`] knows, by reference class name.
pub const AGENT_NAMES: [&str; 13] = [
    "NoopAgent",
    "MovementAgent",
    "RandomAgent",
    "LowestBlockAgent",
    "LayerBuilderAgent",
    "PriorityQueueAgent",
    "MirrorBuildingAgent",
    "HardcodedBuilderAgent",
    "HardcodedResourceAgent",
    "HardcodedInventoryDonator",
    "HardcodedInventoryReceiver",
    "HardcodedHumanAgent",
    "HumanAgent",
];

/// Why an agent cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// No agent has this name.
    #[error("unknown agent {name:?}; known agents: {}", AGENT_NAMES.join(", "))]
    UnknownAgent {
        /// The name asked for.
        name: String,
    },
    /// The agent config is not a JSON object (or null).
    #[error("{agent} expects a JSON object as its config, got {config}")]
    InvalidConfig {
        /// The agent.
        agent: &'static str,
        /// The config given, as JSON.
        config: String,
    },
    /// The agent cannot play in this env config.
    #[error("{agent} cannot be used here: {reason}")]
    Unsupported {
        /// The agent.
        agent: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The agent could not choose an action (a network agent whose evaluator
    /// failed).
    #[error("{agent} could not act: {message}")]
    Failed {
        /// The agent.
        agent: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A hardcoded command targets a cell the world does not have.
    #[error("{agent} targets cell {cell:?}, outside the {size} world")]
    CellOutsideWorld {
        /// The agent.
        agent: &'static str,
        /// The cell `[x, y, z]`.
        cell: [i32; 3],
        /// The world size.
        size: WorldSize,
    },
}

/// Builds the agent of reference class `name` for an env config.
///
/// None of the reference's heuristic agents reads its `agent_config`; like the
/// reference, any object (or `null`) is accepted and its keys are ignored, with a
/// warning so that a misplaced option does not go unnoticed. The agent is in its
/// reset state with seed 0; call [`Agent::reset`] with the episode's agent seed.
pub fn build_agent(
    name: &str,
    agent_config: &Value,
    env_config: &Config,
) -> Result<Box<dyn Agent>, AgentError> {
    let Some(&known) = AGENT_NAMES.iter().find(|&&n| n == name) else {
        return Err(AgentError::UnknownAgent {
            name: name.to_owned(),
        });
    };
    match agent_config {
        Value::Null => {}
        Value::Object(map) => {
            if !map.is_empty() {
                log::warn!("{known} ignores its config {agent_config}");
            }
        }
        _ => {
            return Err(AgentError::InvalidConfig {
                agent: known,
                config: agent_config.to_string(),
            });
        }
    }
    let c = env_config;
    Ok(match known {
        "NoopAgent" => Box::new(NoopAgent::new(c)?),
        "MovementAgent" => Box::new(MovementAgent::new(c)?),
        "RandomAgent" => Box::new(RandomAgent::new(c)?),
        "LowestBlockAgent" => Box::new(LowestBlockAgent::new(c)?),
        "LayerBuilderAgent" => Box::new(LayerBuilderAgent::new(c)),
        "PriorityQueueAgent" => Box::new(PriorityQueueAgent::new(c)),
        "MirrorBuildingAgent" => Box::new(MirrorBuildingAgent::new(c)),
        "HardcodedBuilderAgent" => Box::new(HardcodedBuilderAgent::new(c)?),
        "HardcodedResourceAgent" => Box::new(HardcodedResourceAgent::new(c)?),
        "HardcodedInventoryDonator" => Box::new(HardcodedInventoryDonator::new(c)?),
        "HardcodedInventoryReceiver" => Box::new(HardcodedInventoryReceiver::new(c)?),
        "HardcodedHumanAgent" => Box::new(HardcodedHumanAgent::new(c)?),
        "HumanAgent" => Box::new(HumanAgent::new()),
        other => unreachable!("{other} is in AGENT_NAMES but has no constructor"),
    })
}

/// Whether `name` is a reference agent class this crate implements.
pub fn is_known_agent(name: &str) -> bool {
    AGENT_NAMES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> Config {
        Config::from_json(&json!({
            "world_size": [11, 10, 10],
            "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
        }))
        .unwrap()
    }

    #[test]
    fn every_name_builds_and_reports_its_name() {
        for name in AGENT_NAMES {
            let agent = build_agent(name, &json!({}), &config()).unwrap();
            assert_eq!(agent.name(), name);
        }
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = build_agent("GreedyAgent", &Value::Null, &config()).unwrap_err();
        assert_eq!(
            err,
            AgentError::UnknownAgent {
                name: "GreedyAgent".into()
            }
        );
        let text = err.to_string();
        assert!(text.contains("GreedyAgent") && text.contains("LayerBuilderAgent"));
        assert!(!is_known_agent("uniform_valid"));
    }

    #[test]
    fn configs_and_unsupported_settings_are_errors() {
        // Ignored like in the reference, but a non-object is refused.
        assert!(build_agent("RandomAgent", &json!({"eps": 0.1}), &config()).is_ok());
        let err = build_agent("RandomAgent", &json!([1]), &config()).unwrap_err();
        assert!(matches!(err, AgentError::InvalidConfig { .. }), "{err}");
        let walking = Config::from_json(&json!({
            "world_size": [5, 6, 5],
            "abilities": {"teleportation": false, "flying": true, "inf_blocks": true},
        }))
        .unwrap();
        let err = build_agent("LowestBlockAgent", &Value::Null, &walking).unwrap_err();
        assert!(matches!(err, AgentError::Unsupported { .. }), "{err}");
    }
}
