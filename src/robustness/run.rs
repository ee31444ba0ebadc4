//! Playing one robustness test episode: the start built from the test (world,
//! goal, positions, history), the partner and the assistant stepping the env for
//! the test's horizon, and the [`Outcome`] its predicate judges.
//!
//! The history is the episode so far: its edits are written into the world one at
//! a time, each marked as made by its player (the observation's last-interacted
//! channel shows who), and after each one both agents observe the world and
//! choose an action that is thrown away. An agent with memory has seen the edits
//! happen in order; the env's clock has run one step per edit.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::format::{Partner, RobustnessTest, Variant};
use super::partner::{ScriptedPerson, StubbornPerson};
use super::predicate::{AssistantEdit, Outcome};
use crate::agents::spec::{AgentFactory, AgentSpec, AgentSpecError, Heuristic};
use crate::agents::{Agent, AgentError};
use crate::eval::run::{agent_seed, episode_seed};
use crate::sim::action::ActionType;
use crate::sim::block::{BlockId, Blocks};
use crate::sim::config::Config;
use crate::sim::coords::{Cell, PlayerPos};
use crate::sim::env::{Env, PlayersOverlapping, StepError};
use crate::sim::presets::{Game, Movement};

/// The person's seat.
pub const PERSON: usize = 0;
/// The assistant's seat.
pub const ASSISTANT: usize = 1;

/// One start a test is played from: the test as written, or one of its variants.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// `base`, or the variant as written (`translate [1, 0, 3]`).
    pub label: String,
    /// Every cell moved by this.
    pub offset: [i32; 3],
    /// The seed of the agents' resets (and so of the rollouts).
    pub seed: u64,
    /// The person's feet position.
    pub person: [f64; 3],
    /// The assistant's feet position.
    pub assistant: [f64; 3],
}

impl RobustnessTest {
    /// The test as written, then each variant.
    pub fn cases(&self) -> Vec<Case> {
        let base = Case {
            label: "base".into(),
            offset: [0, 0, 0],
            seed: 0,
            person: self.start.person,
            assistant: self.start.assistant,
        };
        let mut cases = vec![base.clone()];
        for v in &self.variants {
            let mut case = base.clone();
            match v {
                Variant::Translate(o) => {
                    case.offset = *o;
                    case.label = format!("translate {o:?}");
                }
                Variant::Seed(s) => {
                    case.seed = *s;
                    case.label = format!("seed {s}");
                }
                Variant::Positions { person, assistant } => {
                    case.person = *person;
                    case.assistant = *assistant;
                    case.label = format!("positions person {person:?} assistant {assistant:?}");
                }
            }
            cases.push(case);
        }
        cases
    }

    /// The env config of the test's episodes: the paper's game (walking, infinite
    /// blocks) in the test's world, for the history and the horizon; the person
    /// sees the goal, the assistant only when its spec plans with it.
    pub fn config(&self, assistant: &AgentSpec) -> Result<Config, RunError> {
        let horizon = self.start.history.len() as u64 + self.horizon;
        let mut config = Game::paper()
            .with_world_size(self.world_size())
            .with_horizon(horizon)
            .with_movement(Movement::Walking)
            .config()
            .map_err(|e| RunError::Start {
                test: self.id.clone(),
                case: "base".into(),
                message: format!("the env config: {e}"),
            })?;
        config.randomize_first_episode_length = false;
        config.players[PERSON].goal_visible = true;
        config.players[ASSISTANT].goal_visible = assistant.sees_goal();
        Ok(config)
    }

    /// The goal, moved by `offset`.
    pub fn goal(&self, offset: [i32; 3]) -> Blocks {
        let mut goal = Blocks::initial_world(self.world_size());
        for f in &self.start.goal {
            for c in f.cells() {
                goal.set(moved(c.to_array(), offset), f.block.0);
            }
        }
        goal
    }

    /// The world at the start (before the history), moved by `offset`.
    pub fn start_world(&self, offset: [i32; 3]) -> Blocks {
        let mut world = Blocks::initial_world(self.world_size());
        for f in &self.start.world {
            for c in f.cells() {
                world.set(moved(c.to_array(), offset), f.block.0);
            }
        }
        world
    }
}

/// `cell` moved by `offset`.
pub fn moved(cell: [i32; 3], offset: [i32; 3]) -> Cell {
    Cell::new(
        cell[0] + offset[0],
        cell[1] + offset[1],
        cell[2] + offset[2],
    )
}

/// Why a test episode could not be played.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The test's start is impossible (a player inside a block, say).
    #[error("test {test} ({case}): {message}")]
    Start {
        /// The test.
        test: String,
        /// The case.
        case: String,
        /// What is wrong.
        message: String,
    },
    /// An agent could not be built.
    #[error(transparent)]
    Agent(#[from] AgentSpecError),
    /// An agent could not act.
    #[error("test {test}: player {player}: {source}")]
    Act {
        /// The test.
        test: String,
        /// The seat.
        player: usize,
        /// The agent's error.
        #[source]
        source: AgentError,
    },
    /// The env refused a step.
    #[error("test {test}: {source}")]
    Step {
        /// The test.
        test: String,
        /// The env's error.
        #[source]
        source: StepError,
    },
    /// Two players overlapped.
    #[error("test {test}: {source}")]
    Observe {
        /// The test.
        test: String,
        /// The env's error.
        #[source]
        source: PlayersOverlapping,
    },
}

/// The person of `test` in `case`, as an agent.
pub fn partner_agent(
    test: &RobustnessTest,
    case: &Case,
    config: &Config,
    factory: &dyn AgentFactory,
) -> Result<Box<dyn Agent>, RunError> {
    let heuristic = |name: &str| {
        AgentSpec::Heuristic(Heuristic::from_short_name(name).expect("a known heuristic"))
    };
    Ok(match &test.partner {
        Partner::Stationary => factory.build(&heuristic("noop"), PERSON, config)?,
        Partner::Random => factory.build(&heuristic("random"), PERSON, config)?,
        Partner::Stubborn { cell } => {
            let cell = moved(*cell, case.offset);
            let block = test.goal(case.offset).get(cell);
            Box::new(StubbornPerson::new(config, cell, block))
        }
        Partner::Actions(edits) => Box::new(ScriptedPerson::new(config, edits, case.offset)),
        Partner::Agent(text) => {
            let spec: AgentSpec = text.parse()?;
            factory.build(&spec, PERSON, config)?
        }
    })
}

/// Plays rollout `rollout` of `test` in `case` with agents built for `config`
/// ([`RobustnessTest::config`]) and returns what the predicate judges.
pub fn play(
    test: &RobustnessTest,
    case: &Case,
    config: &Config,
    person: &mut dyn Agent,
    assistant: &mut dyn Agent,
    rollout: usize,
) -> Result<Outcome, RunError> {
    let start_error = |message: String| RunError::Start {
        test: test.id.clone(),
        case: case.label.clone(),
        message,
    };
    let act_error = |player: usize| {
        let test = test.id.clone();
        move |source| RunError::Act {
            test,
            player,
            source,
        }
    };
    let observe_error = |source| RunError::Observe {
        test: test.id.clone(),
        source,
    };
    let goal = test.goal(case.offset);
    let world = test.start_world(case.offset);
    let mut env = Env::new(config.clone());
    env.reset_with_goal(goal.clone(), &mut StdRng::seed_from_u64(0));
    let mut state = env.state().clone();
    state.blocks = world;
    let at = |p: [f64; 3]| {
        let p = PlayerPos::new(
            p[0] + f64::from(case.offset[0]),
            p[1] + f64::from(case.offset[1]),
            p[2] + f64::from(case.offset[2]),
        );
        // Centred in its cell, as the env keeps players (its markers compare
        // positions with cell centres).
        PlayerPos::centred_in(p.feet_cell())
    };
    state.player_positions = vec![at(case.person), at(case.assistant)];
    for (who, pos) in ["person", "assistant"].iter().zip(&state.player_positions) {
        let feet = pos.feet_cell();
        if !env.size().contains(feet) || feet.y < 1 {
            return Err(start_error(format!(
                "the {who}'s feet at {feet} are outside the world or in its floor"
            )));
        }
        let blocked = [feet, feet.above()]
            .iter()
            .any(|c| state.blocks.checked_get(*c).is_some_and(|b| !b.is_air()));
        if blocked {
            return Err(start_error(format!(
                "the {who} stands at {feet} inside a block"
            )));
        }
    }
    let (a, b) = (
        state.player_positions[0].feet_cell(),
        state.player_positions[1].feet_cell(),
    );
    if a.x == b.x && a.z == b.z && (a.y - b.y).abs() <= 1 {
        return Err(start_error(format!(
            "the person ({a}) and the assistant ({b}) overlap"
        )));
    }
    env.restore(goal.clone(), state);

    let seed = episode_seed(case.seed, rollout);
    person.reset(agent_seed(seed, PERSON));
    assistant.reset(agent_seed(seed, ASSISTANT));
    let mut obs = [env.new_observation(), env.new_observation()];

    // The history: written edit by edit, observed (and acted on, muted) by both.
    for edit in &test.start.history {
        let (cell, block) = edit.cell_and_block();
        let cell = moved(cell, case.offset);
        let who = if edit.by_assistant() {
            ASSISTANT
        } else {
            PERSON
        };
        let mut state = env.state().clone();
        state.blocks.set(cell, block.unwrap_or(BlockId::AIR));
        let i = env.size().index(cell).get();
        state.last_interacted[i] = who as i8;
        state.timestep += 1;
        env.set_state(state);
        env.observe(PERSON, &mut obs[0]).map_err(observe_error)?;
        env.observe(ASSISTANT, &mut obs[1]).map_err(observe_error)?;
        person.try_act(&obs[0]).map_err(act_error(PERSON))?;
        assistant.try_act(&obs[1]).map_err(act_error(ASSISTANT))?;
    }

    let mut edits = Vec::new();
    for _ in 0..test.horizon {
        env.observe(PERSON, &mut obs[0]).map_err(observe_error)?;
        env.observe(ASSISTANT, &mut obs[1]).map_err(observe_error)?;
        let actions = [
            person.try_act(&obs[0]).map_err(act_error(PERSON))?,
            assistant.try_act(&obs[1]).map_err(act_error(ASSISTANT))?,
        ];
        let before = env.state().blocks.clone();
        let outcome = env.step(&actions).map_err(|source| RunError::Step {
            test: test.id.clone(),
            source,
        })?;
        let done = outcome.done;
        let [person_did, assistant_did] = [outcome.infos[0].action, outcome.infos[1].action];
        if matches!(
            assistant_did.kind,
            ActionType::PlaceBlock | ActionType::BreakBlock
        ) {
            let i = assistant_did.location;
            let cell = env.size().cell(i);
            // The person moves first within a step: what it did to this cell is
            // what the assistant's edit found there.
            let mut found = before.id_at(i);
            if person_did.location == i {
                match person_did.kind {
                    ActionType::PlaceBlock => found = person_did.block,
                    ActionType::BreakBlock => found = BlockId::AIR,
                    _ => {}
                }
            }
            edits.push(AssistantEdit {
                cell,
                before: found,
                after: env.state().blocks.id_at(i),
            });
        }
        if done {
            break;
        }
    }
    Ok(Outcome {
        goal,
        world: env.state().blocks.clone(),
        assistant_edits: edits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec::StandardAgents;
    use crate::sim::obs::WorldChannel;

    /// A wall with one gap, a stationary person, one history edit by the person.
    const TEST: &str = r#"{
      "id": "gap", "category": "SR", "situation": "one gap",
      "start": {
        "goal": [{"from": [2, 2, 5], "to": [6, 3, 5], "block": "planks"}],
        "world": [{"from": [2, 2, 5], "to": [6, 3, 5], "block": "planks"},
                  {"from": [4, 3, 5], "block": "air"}],
        "person": [0.5, 2, 0.5], "assistant": [8.5, 2, 8.5],
        "history": [{"person_places": {"cell": [2, 4, 5], "block": "wool"}}]
      },
      "partner": "stationary", "horizon": 60,
      "pass": {"cell_is": {"cell": [4, 3, 5], "block": "planks"}},
      "variants": [{"translate": [1, 0, 1]}, {"seed": 4}]
    }"#;

    fn outcome(test: &RobustnessTest, spec: &AgentSpec, case: usize) -> Outcome {
        let factory = StandardAgents::heuristics_only();
        let config = test.config(spec).unwrap();
        let case = &test.cases()[case];
        let mut assistant = factory.build(spec, ASSISTANT, &config).unwrap();
        let mut person = partner_agent(test, case, &config, &factory).unwrap();
        play(test, case, &config, person.as_mut(), assistant.as_mut(), 0).unwrap()
    }

    #[test]
    fn the_oracle_passes_where_noop_fails_in_every_case() {
        let test = RobustnessTest::parse(TEST).unwrap();
        assert_eq!(test.cases().len(), 3);
        for (k, case) in test.cases().iter().enumerate() {
            let oracle = outcome(&test, &AgentSpec::Oracle, k);
            assert!(test.pass.holds(&oracle, case.offset), "{}", case.label);
            assert_eq!(oracle.wrong_places(), 0);
            // The history's wool is not in the goal: the oracle takes it out.
            assert_eq!(
                oracle.world.get(moved([2, 4, 5], case.offset)),
                BlockId::AIR
            );
            let noop = outcome(&test, &"heuristic:noop".parse().unwrap(), k);
            assert!(!test.pass.holds(&noop, case.offset), "{}", case.label);
            assert_eq!(noop.world.get(moved([2, 4, 5], case.offset)), BlockId::WOOL);
        }
    }

    /// Remembers the last observation it was shown.
    #[derive(Debug, Default)]
    struct Watcher {
        seen: Vec<Observation>,
    }

    use crate::sim::action::Action;
    use crate::sim::obs::Observation;

    impl Agent for Watcher {
        fn name(&self) -> &'static str {
            "Watcher"
        }
        fn reset(&mut self, _seed: u64) {
            self.seen.clear();
        }
        fn act(&mut self, obs: &Observation) -> Action {
            self.seen.push(obs.clone());
            Action::NOOP
        }
        fn internals(&self) -> crate::agents::Internals<'_> {
            crate::agents::Internals::None
        }
    }

    #[test]
    fn the_history_is_observed_edit_by_edit_and_marked_with_its_author() {
        let mut test = RobustnessTest::parse(TEST).unwrap();
        test.horizon = 1;
        let config = test.config(&AgentSpec::None).unwrap();
        let case = &test.cases()[0];
        let mut watcher = Watcher::default();
        let mut person =
            partner_agent(&test, case, &config, &StandardAgents::heuristics_only()).unwrap();
        play(&test, case, &config, person.as_mut(), &mut watcher, 0).unwrap();
        // One observation after the history's edit, one for the test's step.
        assert_eq!(watcher.seen.len(), 2);
        let first = &watcher.seen[0];
        let i = test.world_size().index(Cell::new(2, 4, 5)).get();
        assert_eq!(
            first.channel(WorldChannel::CurrentBlocks)[i],
            BlockId::WOOL.0
        );
        // Seen by the assistant, the person is marker 2.
        assert_eq!(first.channel(WorldChannel::LastInteracted)[i], 2);
        assert_eq!(first.timestep, 1);
        // The assistant does not see the goal unless its spec plans with it.
        assert!(
            first
                .channel(WorldChannel::GoalBlocks)
                .iter()
                .all(|&b| b == 0)
        );
    }

    #[test]
    fn a_player_inside_a_block_is_an_error_naming_the_test_and_case() {
        let text = TEST.replace(r#""person": [0.5, 2, 0.5]"#, r#""person": [3.5, 2, 5.5]"#);
        let test = RobustnessTest::parse(&text).unwrap();
        let config = test.config(&AgentSpec::Oracle).unwrap();
        let factory = StandardAgents::heuristics_only();
        let case = &test.cases()[1];
        let mut a = factory
            .build(&AgentSpec::Oracle, ASSISTANT, &config)
            .unwrap();
        let mut p = partner_agent(&test, case, &config, &factory).unwrap();
        let err = play(&test, case, &config, p.as_mut(), a.as_mut(), 0).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("test gap (translate [1, 0, 1])"),
            "{message}"
        );
        assert!(
            message.contains("person stands at (4, 2, 6) inside a block"),
            "{message}"
        );
    }
}
