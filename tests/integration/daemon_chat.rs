//! Chat through the daemon (issue 22), end to end in emulated Minecraft.
//!
//! The assistant is a chat-listening [`PolicyAgent`] on an evaluator that
//! wants one wrong placement: planks at a cell the goal leaves empty, from its
//! fourth move on, whenever that cell is free. The person is a
//! [`RejectingPerson`] (probability 1, no delay) around a person who breaks
//! every block the goal does not have: it says its refusal in Minecraft's chat
//! and breaks the planks. The daemon must read the words back from the chat
//! observations, record them with their intent, and pass them to the
//! assistant, which then never puts planks there again although the cell is
//! free, and answers in chat, through its own Minecraft connection.
//!
//! The same episode with chat off is the control: the assistant hears nothing
//! and puts the planks back after every break, so the first test's checks
//! fail without the daemon's chat.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mbag::agents::network::PolicyAgent;
use mbag::agents::spec::{AgentFactory, AgentSpec, AgentSpecError};
use mbag::agents::{Agent, Internals};
use mbag::chat::intent::Intent;
use mbag::chat::person::{ChatPersonConfig, RejectingPerson};
use mbag::daemon::episode::{EmulatedPerson, EpisodeHooks, EpisodeReport, Mode, Seat, run_episode};
use mbag::mcts::{Evaluator, LeafEvaluation, LeafQuery};
use mbag::recording::{Recording, StepRecord, verify};
use mbag::sim::action::{Action, ActionType, FlatLayout};
use mbag::sim::block::{BlockId, Blocks};
use mbag::sim::config::Config;
use mbag::sim::coords::{Cell, CellIndex};
use mbag::sim::env::Env;
use mbag::sim::obs::{Observation, WorldChannel};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;
use tokio::sync::watch;

use super::daemon_modes::{config, settings};

/// The cell the assistant wrongly fills: free, two cells from both players,
/// on the ground.
const CELL: Cell = Cell { x: 2, y: 2, z: 2 };

/// The block it fills it with.
const WRONG: BlockId = BlockId::PLANKS;

/// The assistant's first move that may be the wrong placement: the person has
/// seen the cell empty by then (a person notices changes between two of its
/// observations).
const FIRST_TRY: i32 = 3;

const STEPS: u64 = 30;

/// Policy logits that want `WRONG` at `CELL` (from `FIRST_TRY` on) and
/// otherwise nothing: no goal head, so only words can keep it from the cell.
#[derive(Debug)]
struct WantsPlanks {
    len: usize,
    noop: usize,
    wrong: usize,
}

impl WantsPlanks {
    fn new(config: &Config) -> Self {
        let layout = FlatLayout::new(config.world_size, config.abilities);
        let wrong = Action::new(ActionType::PlaceBlock, config.world_size.index(CELL), WRONG);
        Self {
            len: layout.len(),
            noop: layout.flat(Action::NOOP).unwrap(),
            wrong: layout.flat(wrong).unwrap(),
        }
    }
}

impl Evaluator for WantsPlanks {
    type State = ();
    type Error = std::convert::Infallible;

    fn initial_state(&self) {}

    fn evaluate(
        &mut self,
        queries: &[LeafQuery<'_, ()>],
    ) -> Result<Vec<LeafEvaluation<()>>, Self::Error> {
        Ok(queries
            .iter()
            .map(|q| {
                let mut logits = vec![-30.0; self.len];
                logits[self.noop] = 0.0;
                if q.observation.timestep >= FIRST_TRY {
                    logits[self.wrong] = 20.0;
                }
                LeafEvaluation {
                    policy_logits: logits,
                    value: 0.0,
                    goal_logits: None,
                    other_action_logits: None,
                    state: (),
                }
            })
            .collect())
    }
}

/// A person who breaks every block above the ground that the goal does not
/// have there (it sees the goal), and otherwise waits.
#[derive(Debug)]
struct Breaker;

impl Agent for Breaker {
    fn name(&self) -> &'static str {
        "Breaker"
    }

    fn reset(&mut self, _seed: u64) {}

    fn act(&mut self, obs: &Observation) -> Action {
        let size = obs.size();
        let now = obs.channel(WorldChannel::CurrentBlocks);
        let goal = obs.channel(WorldChannel::GoalBlocks);
        (0..now.len())
            .map(|i| CellIndex(i as u32))
            .find(|&i| {
                let k = i.0 as usize;
                size.cell(i).y >= 2 && now[k] != BlockId::AIR.0 && now[k] != goal[k]
            })
            .map_or(Action::NOOP, |i| {
                Action::new(ActionType::BreakBlock, i, BlockId::AIR)
            })
    }

    fn internals(&self) -> Internals<'_> {
        Internals::None
    }
}

/// Builds the seats by player: the rejecting person (0) and the assistant (1).
struct ChatSeats;

impl AgentFactory for ChatSeats {
    fn build(
        &self,
        _spec: &AgentSpec,
        player: usize,
        config: &Config,
    ) -> Result<Box<dyn Agent>, AgentSpecError> {
        Ok(match player {
            0 => Box::new(RejectingPerson::new(
                Box::new(Breaker),
                ChatPersonConfig {
                    probability: 1.0,
                    delay_steps: 0,
                },
            )),
            _ => Box::new(PolicyAgent::new(
                WantsPlanks::new(config),
                config,
                false,
                0.05,
            )),
        })
    }
}

/// The emulated episode, with chat on or off; the recording is in `dir`.
fn episode(chat: bool, dir: &Path) -> EpisodeReport {
    let config = config(&[("human", true), ("assistant", false)]);
    // A goal the two never build (one block away from everything), with
    // `CELL` empty in it.
    let mut goal = Blocks::initial_world(config.world_size);
    goal.set(Cell::new(8, 2, 8), BlockId::COBBLESTONE);
    let mut env = Env::new(config.clone());
    env.reset_with_goal(goal, &mut StdRng::seed_from_u64(0));
    let seats = vec![
        Seat::Person {
            emulated_by: Some(EmulatedPerson::Agent(AgentSpec::None)),
        },
        Seat::Agent(AgentSpec::None),
    ];
    let mut s = settings(Mode::Play, config, seats, &dir.join("chat.jsonl"), STEPS);
    s.start_from = Some((env.goal().clone(), env.state().clone()));
    s.lockstep.step_period = Duration::from_millis(300);
    s.lockstep.keep_observations = true;
    s.lockstep.chat.enabled = chat;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (_stop_tx, stop) = watch::channel(false);
    let report = runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(240),
            run_episode(s, None, Arc::new(ChatSeats), stop, EpisodeHooks::default()),
        )
        .await
        .expect("the episode ends within 4 minutes")
        .expect("the episode starts")
    });
    assert!(report.end.error.is_none(), "{:?}", report.end.error);
    assert_eq!(report.steps, STEPS);
    report
}

/// The recording, verified, with what `CELL` held after each step.
fn read_back(report: &EpisodeReport) -> (Recording, Vec<BlockId>, usize) {
    let path = report.recording.as_ref().expect("a recording");
    let recording = Recording::read(path).unwrap();
    let mut cell = Vec::new();
    let verified = verify(&recording, &mut |env, _| {
        cell.push(env.state().blocks.get(CELL))
    })
    .unwrap();
    assert!(verified.finished, "the recording has its footer");
    assert!(verified.mismatches.is_empty(), "{:?}", verified.mismatches);
    assert_eq!(verified.steps_replayed as u64, STEPS);
    (recording, cell, verified.chat_messages)
}

/// Whether the assistant's effective action in `step` is the wrong placement.
fn wrong_placement(step: &StepRecord, recording: &Recording) -> bool {
    let size = mbag::recording::verify::env_for(recording).unwrap().size();
    step.e[1].to_action(size).unwrap()
        == Action::new(ActionType::PlaceBlock, size.index(CELL), WRONG)
}

/// Every chat line player `p`'s client showed, from the kept observations.
fn chat_seen_by(recording: &Recording, p: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for step in &recording.steps {
        let Some(per_player) = step.obs.as_ref().and_then(|o| o.get(p)) else {
            continue;
        };
        for entry in per_player.as_array().into_iter().flatten() {
            let json: Value = match &entry[1] {
                Value::String(text) => serde_json::from_str(text).unwrap(),
                other => other.clone(),
            };
            if let Some(chat) = json["Chat"].as_array() {
                lines.extend(chat.iter().filter_map(Value::as_str).map(str::to_owned));
            }
        }
    }
    lines
}

#[test]
fn chat_a_persons_rejection_stops_the_assistant_which_answers_in_minecraft() {
    let dir = tempfile::tempdir().unwrap();
    let report = episode(true, dir.path());
    let (recording, cell, messages) = read_back(&report);
    let steps = &recording.steps;

    let placed = steps
        .iter()
        .position(|s| wrong_placement(s, &recording))
        .expect("the assistant put planks at the cell");
    // The person's refusal, read back from Minecraft's chat and recorded as a
    // reject by the person.
    let rejected = steps
        .iter()
        .position(|s| {
            s.chat
                .iter()
                .flatten()
                .any(|m| m.speaker == 0 && m.intent == Intent::Reject)
        })
        .expect("the person's rejection is recorded");
    assert!(
        rejected >= placed,
        "rejected at {rejected}, placed at {placed}"
    );
    let refusal = steps[rejected]
        .chat
        .iter()
        .flatten()
        .find(|m| m.speaker == 0)
        .unwrap();
    assert!(
        refusal.wall.is_some(),
        "a person's message has its arrival time"
    );

    // Heard: never the planks there again, though the cell was free for
    // several of the assistant's moves after the person broke them.
    for (t, step) in steps.iter().enumerate().skip(rejected + 1) {
        assert!(
            !wrong_placement(step, &recording),
            "planks at {CELL:?} again at step {t}, after the rejection at step {rejected}"
        );
    }
    let free_moves = (rejected + 1..steps.len())
        .filter(|&t| cell[t - 1] == BlockId::AIR)
        .count();
    assert!(
        free_moves >= 5,
        "the cell was free for only {free_moves} moves after the rejection: {cell:?}"
    );

    // Answered: recorded once, as said, and shown to the person by Minecraft.
    let answers: Vec<_> = steps
        .iter()
        .enumerate()
        .flat_map(|(t, s)| s.chat.iter().flatten().map(move |m| (t, m)))
        .filter(|(_, m)| m.speaker == 1)
        .collect();
    let (answered, answer) = answers.first().expect("the assistant answered");
    assert!(*answered >= rejected);
    assert!(answer.text.contains("planks"), "{:?}", answer.text);
    let person_saw = chat_seen_by(&recording, 0);
    let line = format!("<assistant> {}", answer.text);
    assert_eq!(
        person_saw.iter().filter(|l| **l == line).count(),
        1,
        "the person's client shows the answer once: {person_saw:?}"
    );
    // The assistant's own connection observes chat: it saw the refusal.
    let assistant_saw = chat_seen_by(&recording, 1);
    assert!(
        assistant_saw.contains(&format!("<human> {}", refusal.text)),
        "{assistant_saw:?}"
    );
    // Each message is recorded once, though both clients showed it.
    let recorded: usize = steps
        .iter()
        .map(|s| s.chat.as_ref().map_or(0, Vec::len))
        .sum();
    assert_eq!(messages, recorded);
    let from_person = steps
        .iter()
        .flat_map(|s| s.chat.iter().flatten())
        .filter(|m| m.speaker == 0)
        .count();
    assert_eq!(from_person as u64, report.drivers[0].said);
}

#[test]
fn chat_off_the_assistant_hears_nothing_and_puts_the_planks_back() {
    let dir = tempfile::tempdir().unwrap();
    let report = episode(false, dir.path());
    let (recording, cell, messages) = read_back(&report);
    assert_eq!(messages, 0, "nothing is read or said");
    assert!(report.drivers[0].said >= 1, "the person still typed");
    let placements: Vec<usize> = recording
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| wrong_placement(s, &recording))
        .map(|(t, _)| t)
        .collect();
    assert!(
        placements.len() >= 2,
        "the assistant put the planks back after the break: {placements:?}, cell {cell:?}"
    );
    // The reference's AI mission: no chat on the assistant's connection.
    assert!(chat_seen_by(&recording, 1).is_empty());
    assert!(!chat_seen_by(&recording, 0).is_empty());
}
