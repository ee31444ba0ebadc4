//! Checking our re-implemented reference agents against the goldens' `agent_info`.
//!
//! Each player whose header names a reference agent class gets our agent, built by
//! the registry and reset with the recorded `agent_seed`. Before every env step the
//! agent acts on the player's current observation (the one the reference agent acted
//! on: the previous step's, or the reset observation) and its internals are compared
//! with the step's `agent_info` for that player. Deterministic agents must also
//! choose the recorded action; sampling agents must give it non-zero probability
//! (their sampling stream is not the reference's).

use serde_json::Value;

use super::compare::Checker;
use super::format::{GoldenEpisode, GoldenError, GoldenStep};
use crate::agents::{
    Agent, FlatDist, Internals, LayerBuilderAgent, ScriptedChooser, build_agent, is_known_agent,
};
use crate::sim::config::Config;
use crate::sim::env::Env;
use crate::sim::obs::Observation;

/// The scripted drivers of the golden generator: their actions are recorded, they
/// are not reference agents and have nothing to check.
pub const DRIVERS: [&str; 3] = ["uniform_valid", "mixed", "goal_directed"];

/// Relative tolerance for recorded probabilities.
pub const PROB_REL_TOL: f64 = 1e-12;

/// Counts of what the agent checks covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentCheckStats {
    /// `agent_info` records compared (one per reference-agent player and step).
    pub records: usize,
    /// Recorded flat probabilities compared.
    pub probabilities: usize,
    /// Of those, how many were bit-identical.
    pub probabilities_exact: usize,
}

impl std::ops::AddAssign for AgentCheckStats {
    fn add_assign(&mut self, o: Self) {
        self.records += o.records;
        self.probabilities += o.probabilities;
        self.probabilities_exact += o.probabilities_exact;
    }
}

#[derive(Debug)]
struct Player {
    index: usize,
    agent: Box<dyn Agent>,
}

/// The reference agents of one episode, replayed alongside the env.
#[derive(Debug)]
pub struct AgentReplay {
    players: Vec<Player>,
    obs: Observation,
    stats: AgentCheckStats,
}

/// The recorded `chosen` values of a LayerBuilderAgent player, in step order.
fn recorded_choices(ep: &GoldenEpisode, p: usize) -> Vec<usize> {
    ep.steps
        .iter()
        .filter_map(|s| s.agent_info.as_ref()?.get(p)?.get("choice")?.get("chosen"))
        .filter_map(Value::as_u64)
        .map(|c| c as usize)
        .collect()
}

impl AgentReplay {
    /// Builds our agent for every player whose header names a reference agent.
    ///
    /// A name that is neither a driver nor an agent we implement is an error: the
    /// file would otherwise pass without its agent being checked.
    pub fn new(ep: &GoldenEpisode, config: &Config, env: &Env) -> Result<Self, GoldenError> {
        let mut players = Vec::new();
        for (index, decl) in ep.header.agents.iter().enumerate() {
            if DRIVERS.contains(&decl.agent.as_str()) {
                continue;
            }
            let field_error = |message: String| GoldenError::Field {
                path: ep.path.clone(),
                line: 1,
                field: format!("agents[{index}]"),
                message,
            };
            if !is_known_agent(&decl.agent) {
                return Err(field_error(format!(
                    "{:?} is neither a driver ({}) nor a known reference agent",
                    decl.agent,
                    DRIVERS.join(", ")
                )));
            }
            let mut agent: Box<dyn Agent> = if decl.agent == "LayerBuilderAgent" {
                // The reference drew from Python's global `random`; replay its draws.
                let chooser = ScriptedChooser::new(recorded_choices(ep, index));
                Box::new(LayerBuilderAgent::with_chooser(config, Box::new(chooser)))
            } else {
                build_agent(&decl.agent, &decl.agent_config, config)
                    .map_err(|e| field_error(e.to_string()))?
            };
            agent.record_internals(true);
            agent.reset(decl.agent_seed.unwrap_or(0));
            players.push(Player { index, agent });
        }
        Ok(Self {
            players,
            obs: env.new_observation(),
            stats: AgentCheckStats::default(),
        })
    }

    /// What the checks covered so far.
    pub fn stats(&self) -> AgentCheckStats {
        self.stats
    }

    /// Lets every agent act on its current observation and compares with the step's
    /// records. Call before `env.step`.
    pub fn check_step(&mut self, c: &mut Checker, env: &Env, step: &GoldenStep) {
        for player in &mut self.players {
            let p = player.index;
            let field = |name: &str| format!("agent_info[{p}]{name}");
            let record = step.agent_info.as_ref().and_then(|v| v.get(p));
            let Some(Value::Object(record)) = record else {
                c.fail(
                    field(""),
                    format!("a record of {}", player.agent.name()),
                    format!("{record:?}"),
                );
                return;
            };
            if let Err(e) = env.observe(p, &mut self.obs) {
                c.fail(field(" (observation)"), "an observation", e);
                return;
            }
            let action = player.agent.act(&self.obs);
            let recorded = &step.actions[p];
            let allowed: &[&str] = match player.agent.internals() {
                Internals::Distribution(dist) => {
                    check_distribution(c, &mut self.stats, p, record, dist);
                    // Only the distribution is at parity, not the draw from it; with no
                    // mass at all both sides deterministically take the last action.
                    if dist.entries().iter().any(|&(_, q)| q > 0.0) {
                        match recorded.flat {
                            Some(flat) if dist.prob(flat) > 0.0 => {}
                            _ => c.fail(
                                format!("actions[{p}] (probability under {})", player.agent.name()),
                                "a positive probability",
                                format!("flat {:?}, probability 0", recorded.flat),
                            ),
                        }
                    } else {
                        c.eq(
                            format!(
                                "actions[{p}].tuple (agent {}, empty distribution)",
                                player.agent.name()
                            ),
                            recorded.tuple,
                            action.to_tuple(),
                        );
                    }
                    &["flat_dist_nnz", "flat_dist"]
                }
                internals => {
                    check_state(c, p, record, &internals);
                    c.eq(
                        format!("actions[{p}].tuple (agent {})", player.agent.name()),
                        recorded.tuple,
                        action.to_tuple(),
                    );
                    match internals {
                        Internals::LayerBuilder { .. } => &["choice", "state"],
                        Internals::PriorityQueue { .. } | Internals::Sequence { .. } => &["state"],
                        _ => &[],
                    }
                }
            };
            if let Some(key) = record.keys().find(|k| !allowed.contains(&k.as_str())) {
                c.fail(field(&format!(".{key}")), "a checked field", "unchecked");
            }
            self.stats.records += 1;
        }
    }
}

fn check_distribution(
    c: &mut Checker,
    stats: &mut AgentCheckStats,
    p: usize,
    record: &serde_json::Map<String, Value>,
    dist: &FlatDist,
) {
    let field = |name: &str| format!("agent_info[{p}].{name}");
    c.eq(
        field("flat_dist_nnz"),
        record.get("flat_dist_nnz").and_then(Value::as_u64),
        Some(dist.nnz() as u64),
    );
    let Some(expected) = record.get("flat_dist") else {
        return;
    };
    let Some(expected) = expected.as_array() else {
        c.fail(field("flat_dist"), "a list", expected);
        return;
    };
    if expected.len() != dist.nnz() {
        c.fail(field("flat_dist (length)"), expected.len(), dist.nnz());
        return;
    }
    for (k, (e, &(gi, gp))) in expected.iter().zip(dist.entries()).enumerate() {
        let pair = e
            .as_array()
            .filter(|a| a.len() == 2)
            .and_then(|a| Some((a[0].as_u64()? as usize, a[1].as_f64()?)));
        let Some((ei, ep)) = pair else {
            c.fail(field(&format!("flat_dist[{k}]")), "[index, probability]", e);
            return;
        };
        c.eq(field(&format!("flat_dist[{k}].index")), ei, gi);
        let close = (ep - gp).abs() <= PROB_REL_TOL * ep.abs().max(gp.abs());
        if !close {
            c.fail(
                field(&format!("flat_dist[{k}] (flat {ei})")),
                format!("{ep:?}"),
                format!("{gp:?}"),
            );
        }
        stats.probabilities += 1;
        stats.probabilities_exact += usize::from(ep.to_bits() == gp.to_bits());
    }
}

/// `[[n]]`, the reference's `get_state` of a one-counter agent.
fn single_counter(v: Option<&Value>) -> Option<u64> {
    v?.as_array()?.first()?.as_array()?.first()?.as_u64()
}

fn check_state(
    c: &mut Checker,
    p: usize,
    record: &serde_json::Map<String, Value>,
    internals: &Internals<'_>,
) {
    let field = |name: &str| format!("agent_info[{p}].{name}");
    match internals {
        Internals::Sequence { next_command } => c.eq(
            field("state"),
            single_counter(record.get("state")),
            Some(*next_command as u64),
        ),
        Internals::LayerBuilder {
            choice,
            current_layer,
        } => {
            c.eq(
                field("state"),
                single_counter(record.get("state")),
                Some(*current_layer as u64),
            );
            // A step without a choice may record none or null.
            let expected = record.get("choice").filter(|v| !v.is_null()).map(|ch| {
                (
                    ch.get("num_candidates").and_then(Value::as_u64),
                    ch.get("chosen").and_then(Value::as_u64),
                )
            });
            let got = choice.map(|ch| (Some(ch.num_candidates as u64), Some(ch.chosen as u64)));
            c.eq(field("choice"), expected, got);
        }
        Internals::PriorityQueue { seeding, frontier } => {
            let state = record.get("state");
            c.eq(
                field("state.seeding"),
                state
                    .and_then(|s| s.get("seeding"))
                    .and_then(Value::as_bool),
                Some(*seeding),
            );
            let expected: Option<Vec<[u64; 3]>> = state
                .and_then(|s| s.get("frontier_sorted"))
                .and_then(Value::as_array)
                .and_then(|entries| {
                    entries
                        .iter()
                        .map(|e| {
                            let y = e.get(0)?.as_u64()?;
                            let xz = e.get(1)?;
                            Some([y, xz.get(0)?.as_u64()?, xz.get(1)?.as_u64()?])
                        })
                        .collect()
                });
            let got: Vec<[u64; 3]> = frontier
                .iter()
                .map(|&(y, (x, z))| [y as u64, x as u64, z as u64])
                .collect();
            c.eq(field("state.frontier_sorted"), expected, Some(got));
        }
        Internals::None | Internals::Distribution(_) => {}
    }
}

/// Whether a player's header agent is a reference agent (so its records count).
pub fn is_reference_agent(name: &str) -> bool {
    !DRIVERS.contains(&name)
}

/// Number of `agent_info` records of reference-agent players in an episode: what a
/// full replay must have checked.
pub fn count_reference_records(ep: &GoldenEpisode) -> usize {
    let reference: Vec<usize> = ep
        .header
        .agents
        .iter()
        .enumerate()
        .filter(|(_, a)| is_reference_agent(&a.agent))
        .map(|(p, _)| p)
        .collect();
    ep.steps
        .iter()
        .filter_map(|s| s.agent_info.as_ref())
        .map(|info| {
            reference
                .iter()
                .filter(|&&p| info.get(p).is_some_and(|v| !v.is_null()))
                .count()
        })
        .sum()
}
