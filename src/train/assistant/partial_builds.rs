//! A goal corpus that needs no human model: partial builds of generated goals.
//!
//! Pretraining on the human model's rollouts (the paper's corpus) sees few
//! goals: a 1,500-step episode is one house, so 24,000 env steps teach the goal
//! head about 16 houses, and it memorises them (held-out cross-entropy stops
//! falling after a few iterations while training goals' keeps falling). Here
//! every sample is a fresh goal, built part of the way the way people build:
//! layer by layer from the ground up, each layer grown outward from where it
//! started, the next layer begun before the last is finished, now and then in no
//! order at all, with the odd wrong block. The blocks count as the human's
//! (`last_interacted`), the players stand wherever they fit, and the assistant's
//! goal-blind observation of that world is the sample, the goal its target.
//!
//! Only the goal head learns from it: there is no search, no reward and no
//! human action (their loss weights must be 0, which the config checks), and a
//! recurrent network cannot learn from single steps, so it is refused.

use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::AssistantError;
use super::replay::{Fragment, Sample, mask_bits};
use super::selfplay::Collection;
use crate::eval::run::{ASSISTANT, HUMAN};
use crate::goal_model::build_order::{add_mistakes, build_order};
use crate::sim::action::FlatLayout;
use crate::sim::config::{Abilities, Config};
use crate::sim::coords::CellIndex;
use crate::sim::env::Env;
use crate::sim::goal::{GoalConfig, GoalGenerator};
use crate::sim::mask;

/// Samples drawn from each generated goal, at different stages of its build.
const SAMPLES_PER_GOAL: usize = 2;
/// The most of a goal a sample has built: a finished house teaches nothing
/// about inferring the rest.
const MAX_BUILT: f64 = 0.9;
/// How often a sample carries a few wrong blocks, as people's builds do.
const MISTAKE_PROBABILITY: f64 = 0.3;

/// The generator of partial builds.
#[derive(Debug)]
pub struct PartialBuilds {
    env: Env,
    goals: Box<dyn GoalGenerator>,
    rng: StdRng,
    layout: FlatLayout,
    abilities: Abilities,
    line_of_sight: bool,
}

impl PartialBuilds {
    /// Goals from `goals` in worlds of `env` (its player 1 is the assistant
    /// whose observations are kept), valid-action masks as the network is
    /// trained with (`line_of_sight`), seeded with `seed`.
    pub fn new(
        env: &Config,
        goals: &GoalConfig,
        seed: u64,
        line_of_sight: bool,
    ) -> Result<Self, AssistantError> {
        let env = Env::new(env.clone());
        Ok(Self {
            layout: *env.layout(),
            abilities: env.config().abilities,
            env,
            goals: goals.build()?,
            rng: StdRng::seed_from_u64(seed),
            line_of_sight,
        })
    }

    /// `samples` single-step fragments, `SAMPLES_PER_GOAL` per goal.
    pub fn collect(&mut self, samples: usize) -> Result<Collection, AssistantError> {
        let started = Instant::now();
        let mut out = Collection::default();
        let size = self.env.size();
        let mut mask_buf = vec![false; self.layout.len()];
        let mut observation = self.env.new_observation();
        while out.fragments.len() < samples {
            // Not `Env::reset`: it keeps the goal when no step was taken since
            // the last reset, as the reference does, and no step ever is here.
            let goal = self.env.generate_goal(self.goals.as_mut(), &mut self.rng)?;
            self.env.reset_with_goal(goal, &mut self.rng);
            let goal = self.env.goal().clone();
            let goal_ids: Arc<[u8]> = Arc::from(goal.ids());
            let start = self.env.state().clone();
            let order = build_order(&start.blocks, &goal, &mut self.rng);
            for _ in 0..SAMPLES_PER_GOAL.min(samples - out.fragments.len()) {
                let fraction = self.rng.random_range(0.0..MAX_BUILT);
                let built = (fraction * order.len() as f64).round() as usize;
                let mut state = start.clone();
                for &i in &order[..built] {
                    let cell = size.cell(CellIndex(i as u32));
                    state
                        .blocks
                        .set_with_state(cell, goal.get(cell), goal.state(cell));
                    state.last_interacted[i] = HUMAN as i8;
                }
                if self.rng.random_bool(MISTAKE_PROBABILITY) {
                    add_mistakes(
                        &mut state.blocks,
                        &goal,
                        &mut state.last_interacted,
                        &mut self.rng,
                    );
                }
                state.player_positions = self.env.start_positions(&state.blocks, &mut self.rng);
                // The human builds about one block in eight steps: the clock of
                // a real build this far along.
                state.timestep = (built * 8) as u64;
                self.env.set_state(state);
                self.env.observe(ASSISTANT, &mut observation)?;
                mask::compute(
                    &observation,
                    self.abilities,
                    &self.layout,
                    self.line_of_sight,
                    &mut mask_buf,
                );
                let valid = mask_bits(&mask_buf);
                out.fragments.push(Fragment {
                    initial_state: None,
                    samples: vec![Sample {
                        observation: observation.clone(),
                        prev_action: 0,
                        valid,
                        policy: Vec::new(),
                        reward: 0.0,
                        value_target: 0.0,
                        root_value: 0.0,
                        goal: Arc::clone(&goal_ids),
                        played_goal_logits: None,
                        human_action: 0,
                        human_policy: Vec::new(),
                    }],
                });
                out.env_steps += 1;
            }
        }
        out.seconds = started.elapsed().as_secs_f64();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::block::Blocks;

    #[test]
    fn samples_are_goal_blind_partial_builds_of_their_goal() {
        let config = crate::train::assistant::config::tests::tiny();
        // Random goals, so that each generated goal differs from the last.
        let goals = GoalConfig::from_env("random", &serde_json::json!({})).unwrap();
        let mut builds = PartialBuilds::new(&config.env, &goals, 9, false).unwrap();
        let collected = builds.collect(7).unwrap();
        assert_eq!(collected.fragments.len(), 7);
        assert_eq!(collected.env_steps, 7);
        let size = config.env.world_size;
        let n = size.num_cells();
        let initial = Blocks::initial_world(size);
        let mut partly_built = 0;
        for f in &collected.fragments {
            assert!(f.initial_state.is_none());
            let [s] = &f.samples[..] else {
                panic!("one sample per fragment")
            };
            assert_eq!(s.goal.len(), n);
            let world = &s.observation.world;
            // Cells off the initial world are the goal's, but for at most
            // three mistakes, and every one is marked as the human's.
            let changed: Vec<usize> = (0..n).filter(|&i| world[i] != initial.ids()[i]).collect();
            let wrong = changed.iter().filter(|&&i| world[i] != s.goal[i]).count();
            assert!(wrong <= 3, "{wrong} wrong blocks");
            let last = s
                .observation
                .channel(crate::sim::obs::WorldChannel::LastInteracted);
            assert!(changed.iter().all(|&i| last[i] != 0), "unmarked change");
            let missing = (0..n).filter(|&i| world[i] != s.goal[i]).count();
            partly_built += usize::from(!changed.is_empty() && missing > 0);
            // Something is left to infer.
            assert!(missing > 0);
            assert!(s.valid.iter().any(|&w| w != 0), "no valid action");
        }
        assert!(partly_built > 0, "every sample empty");
        // Every pair of samples shares a goal: a new one each time.
        let goals: std::collections::HashSet<&[u8]> = collected
            .fragments
            .iter()
            .map(|f| &*f.samples[0].goal)
            .collect();
        assert_eq!(goals.len(), 4, "7 samples, 2 per goal");
    }
}
