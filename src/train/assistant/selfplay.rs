//! Self-play: many environments of a human model and the assistant, the assistant
//! choosing each move by MCTS on the current network, producing [`Fragment`]s of
//! training samples.
//!
//! The environments are split into one chunk per thread. Each thread runs its
//! chunk's searches together ([`run_together`]), so one call to the inference
//! service carries leaves of every environment in the chunk, and the service
//! batches the calls of all threads into forward passes. Each environment plays
//! `steps` moves per [`SelfPlay::collect`] and then pauses mid-episode until the
//! next call (appendix A's fragments); an episode that ends is replaced at once by
//! a new one on a new goal.

use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tch::Tensor;

use super::AssistantError;
use super::replay::{Fragment, Sample, discount_returns, mask_bits, set_bit, to_bf16};
use crate::agents::spec::{AgentFactory, AgentSpec};
use crate::agents::{Agent, Internals};
use crate::eval::run::{ASSISTANT, HUMAN};
use crate::mcts::{Decision, Evaluator, LeafQuery, MctsConfig, Search, run_together};
use crate::nn::{InferenceHandle, NetEvaluator, SharedState};
use crate::recording::starts::{Starts, reset_episode};
use crate::sim::action::FlatLayout;
use crate::sim::config::{Abilities, Config};
use crate::sim::env::Env;
use crate::sim::goal::{GoalConfig, GoalGenerator};
use crate::sim::mask;
use crate::sim::obs::Observation;

/// The recurrent state the search carries (see [`NetEvaluator`]).
type NetState = Option<SharedState>;

/// What self-play plays.
#[derive(Clone, Debug)]
pub struct SelfPlaySettings {
    /// The 2-player env config (human, assistant).
    pub env: Config,
    /// Where goals come from.
    pub goals: GoalConfig,
    /// The human model.
    pub human: AgentSpec,
    /// The assistant's search.
    pub mcts: MctsConfig,
    /// Environments.
    pub num_envs: usize,
    /// Threads (at most one per environment is used).
    pub threads: usize,
    /// Seeds the environments, humans and searches.
    pub seed: u64,
    /// The action mask the network is trained with.
    pub line_of_sight: bool,
    /// Discount of the value targets.
    pub gamma: f64,
    /// Whether the assistant searches or stands by.
    pub assistant: AssistantPlays,
    /// Recorded moments to start episodes from (`--starts DIR`) instead of a
    /// fresh world on a goal from `goals`.
    pub starts: Option<Arc<Starts>>,
}

/// What the assistant does during self-play.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssistantPlays {
    /// It chooses each move by MCTS on the current network (AssistanceZero).
    #[default]
    Search,
    /// It never acts, so the episodes are the human model building alone with
    /// the assistant looking on: the paper's pretraining corpus (section 5),
    /// on which the goal and human-action heads learn without any search.
    Noop,
}

/// One finished episode. Serialised for remote self-play, where a value that is
/// not a number (a goal percentage over no cells) travels as `null`: JSON has no
/// NaN, and one must not fail a whole iteration's transfer.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EpisodeStats {
    /// Steps.
    pub length: u64,
    /// The human's final goal percentage (a fraction).
    #[serde(with = "nan_as_null")]
    pub goal_percentage: f64,
    /// The assistant's goal-dependent reward over `W·H·D − S0`, as
    /// `mbag evaluate` reports it.
    #[serde(with = "nan_as_null")]
    pub assistant_goal_percentage: f64,
    /// The assistant's summed reward.
    #[serde(with = "nan_as_null")]
    pub assistant_reward: f64,
}

/// An `f64` that may be NaN, as a number or `null` (serde_json writes every
/// non-finite float as `null`; they read back as NaN).
mod nan_as_null {
    pub fn serialize<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_some(x)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(<Option<f64> as serde::Deserialize>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// What one [`SelfPlay::collect`] produced.
#[derive(Debug, Default)]
pub struct Collection {
    /// Finished fragments (value targets filled in).
    pub fragments: Vec<Fragment>,
    /// Episodes that ended.
    pub episodes: Vec<EpisodeStats>,
    /// Environment steps taken.
    pub env_steps: u64,
    /// MCTS simulations run.
    pub simulations: u64,
    /// Wall time.
    pub seconds: f64,
}

struct Slot {
    env: Env,
    human: Box<dyn Agent>,
    search: Search<NetState>,
    state: NetState,
    prev_action: usize,
    rng: StdRng,
    observations: [Observation; 2],
    goal: Arc<[u8]>,
    samples: Vec<Sample>,
    fragment_state: Option<Vec<Tensor>>,
    length: u64,
    assistant_goal_reward: f64,
    assistant_reward: f64,
    denominator: f64,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

impl Slot {
    fn start_episode(
        &mut self,
        goals: &mut dyn GoalGenerator,
        starts: Option<&Starts>,
    ) -> Result<(), AssistantError> {
        reset_episode(&mut self.env, goals, starts, &mut self.rng)?;
        let seed: u64 = self.rng.random();
        self.human.reset(seed);
        self.search.clear();
        self.search.reseed(seed.rotate_left(17));
        self.state = None;
        self.prev_action = 0;
        self.goal = Arc::from(self.env.goal().ids());
        self.fragment_state = None;
        self.length = 0;
        self.assistant_goal_reward = 0.0;
        self.assistant_reward = 0.0;
        let cells = self.env.size().num_cells() as f64;
        self.denominator = cells - self.env.initial_goal_similarities()[HUMAN];
        Ok(())
    }

    /// Closes the current fragment with `bootstrap` as the value after it.
    fn flush(&mut self, gamma: f64, bootstrap: f64, out: &mut Vec<Fragment>) {
        if self.samples.is_empty() {
            return;
        }
        let mut samples = std::mem::take(&mut self.samples);
        discount_returns(&mut samples, gamma, bootstrap);
        out.push(Fragment {
            initial_state: self.fragment_state.take(),
            samples,
        });
    }

    /// Remembers the state the next fragment starts from, copied so that it does
    /// not keep the whole batch it was computed in alive.
    fn open_fragment(&mut self) {
        self.fragment_state = self.state.as_ref().map(|s| {
            s.shallow_copy()
                .into_tensors()
                .iter()
                .map(Tensor::copy)
                .collect()
        });
    }
}

struct Chunk {
    slots: Vec<Slot>,
    goals: Box<dyn GoalGenerator>,
    starts: Option<Arc<Starts>>,
}

/// The self-play environments, kept between collections.
pub struct SelfPlay {
    chunks: Vec<Chunk>,
    play: PlaySettings,
}

/// What every chunk's thread needs to know.
#[derive(Clone, Copy, Debug)]
struct PlaySettings {
    layout: FlatLayout,
    abilities: Abilities,
    line_of_sight: bool,
    gamma: f64,
    keep_goal_logits: bool,
    assistant: AssistantPlays,
}

impl std::fmt::Debug for SelfPlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfPlay")
            .field("chunks", &self.chunks.len())
            .finish_non_exhaustive()
    }
}

impl SelfPlay {
    /// Builds the environments (each starting an episode) and their human models.
    /// `keep_goal_logits` stores the goal predictions in the samples (for the KL
    /// term; skip it when its weight is always 0).
    pub fn new(
        settings: &SelfPlaySettings,
        factory: &dyn AgentFactory,
        keep_goal_logits: bool,
    ) -> Result<Self, AssistantError> {
        let threads = settings.threads.clamp(1, settings.num_envs.max(1));
        let per_chunk = settings.num_envs.div_ceil(threads);
        let template = Env::new(settings.env.clone());
        let mut chunks = Vec::new();
        for c in 0..threads {
            let mut goals = settings.goals.build()?;
            let mut slots = Vec::new();
            for i in c * per_chunk..((c + 1) * per_chunk).min(settings.num_envs) {
                let seed = settings.seed.wrapping_mul(1_000_003).wrapping_add(i as u64);
                let mut human = factory.build(&settings.human, HUMAN, &settings.env)?;
                // The distribution each action is drawn from is the other-player
                // head's target; agents that have none report nothing.
                human.record_internals(true);
                let mut slot = Slot {
                    env: template.clone(),
                    human,
                    search: Search::new(
                        settings.env.clone(),
                        ASSISTANT,
                        settings.line_of_sight,
                        settings.mcts.clone(),
                        seed,
                    ),
                    state: None,
                    prev_action: 0,
                    rng: StdRng::seed_from_u64(seed),
                    observations: [template.new_observation(), template.new_observation()],
                    goal: Arc::from(Vec::new()),
                    samples: Vec::new(),
                    fragment_state: None,
                    length: 0,
                    assistant_goal_reward: 0.0,
                    assistant_reward: 0.0,
                    denominator: 1.0,
                };
                slot.start_episode(goals.as_mut(), settings.starts.as_deref())?;
                slots.push(slot);
            }
            if !slots.is_empty() {
                chunks.push(Chunk {
                    slots,
                    goals,
                    starts: settings.starts.clone(),
                });
            }
        }
        Ok(Self {
            chunks,
            play: PlaySettings {
                layout: *template.layout(),
                abilities: settings.env.abilities,
                line_of_sight: settings.line_of_sight,
                gamma: settings.gamma,
                keep_goal_logits,
                assistant: settings.assistant,
            },
        })
    }

    /// Plays `steps` moves in every environment with the network behind
    /// `handle`, one thread per chunk. The handle is consumed: the service stops
    /// waiting for more work once every live handle has sent a job, so an idle
    /// handle kept by the caller would add its full wait to every batch.
    pub fn collect(
        &mut self,
        handle: InferenceHandle,
        steps: usize,
    ) -> Result<Collection, AssistantError> {
        let started = Instant::now();
        let play = self.play;
        let evaluators: Vec<NetEvaluator> = self
            .chunks
            .iter()
            .map(|_| NetEvaluator::new(handle.clone()))
            .collect();
        drop(handle);
        let results: Vec<Result<Collection, AssistantError>> = std::thread::scope(|s| {
            let workers: Vec<_> = self
                .chunks
                .iter_mut()
                .zip(evaluators)
                .map(|(chunk, evaluator)| {
                    std::thread::Builder::new()
                        .name("mbag-selfplay".into())
                        .spawn_scoped(s, move || play_chunk(chunk, evaluator, steps, &play))
                        .expect("spawning a self-play thread")
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut all = Collection::default();
        for r in results {
            let c = r?;
            all.fragments.extend(c.fragments);
            all.episodes.extend(c.episodes);
            all.env_steps += c.env_steps;
            all.simulations += c.simulations;
        }
        all.seconds = started.elapsed().as_secs_f64();
        Ok(all)
    }
}

fn play_chunk(
    chunk: &mut Chunk,
    mut evaluator: NetEvaluator,
    steps: usize,
    play: &PlaySettings,
) -> Result<Collection, AssistantError> {
    let layout = &play.layout;
    let mut out = Collection::default();
    let words = layout.len().div_ceil(64);
    let searching = play.assistant == AssistantPlays::Search;
    let mut mask_buf = vec![false; layout.len()];
    for slot in &mut chunk.slots {
        slot.open_fragment();
    }
    for _ in 0..steps {
        for slot in &mut chunk.slots {
            slot.env.observe(ASSISTANT, &mut slot.observations[1])?;
            if searching {
                let state = slot.state.clone();
                slot.search
                    .set_root(&slot.observations[1], Some(slot.prev_action), state);
            }
        }
        if searching {
            let mut searches: Vec<&mut Search<NetState>> =
                chunk.slots.iter_mut().map(|s| &mut s.search).collect();
            run_together(&mut searches, &mut evaluator)?;
        }
        for slot in &mut chunk.slots {
            let mut valid = vec![0u64; words];
            let decision = if searching {
                let decision = slot.search.decide()?;
                out.simulations += decision.simulations as u64;
                if let Some(root) = slot.search.root() {
                    for &a in &root.actions {
                        set_bit(&mut valid, a as usize);
                    }
                }
                decision
            } else {
                mask::compute(
                    &slot.observations[1],
                    play.abilities,
                    layout,
                    play.line_of_sight,
                    &mut mask_buf,
                );
                valid = mask_bits(&mask_buf);
                standing_by(layout.len())
            };
            slot.env.observe(HUMAN, &mut slot.observations[0])?;
            let human_action = slot.human.try_act(&slot.observations[0])?;
            let human_policy = human_distribution(slot.human.as_ref(), layout.len());
            let assistant_action = layout.action(decision.action)?;
            let outcome = slot.env.step(&[human_action, assistant_action])?;
            out.env_steps += 1;
            let reward = outcome.rewards[ASSISTANT];
            slot.length += 1;
            slot.assistant_reward += reward;
            slot.assistant_goal_reward += outcome.infos[ASSISTANT].goal_dependent_reward;
            let done = outcome.done;
            let goal_percentage = outcome.infos[HUMAN].goal_percentage;
            slot.samples.push(Sample {
                observation: slot.observations[1].clone(),
                prev_action: slot.prev_action as u32,
                valid,
                policy: decision
                    .policy
                    .iter()
                    .enumerate()
                    .filter(|&(_, &p)| p > 0.0)
                    .map(|(a, &p)| (a as u32, p))
                    .collect(),
                reward: reward as f32,
                value_target: f32::NAN,
                root_value: decision.root_value,
                goal: Arc::clone(&slot.goal),
                played_goal_logits: play
                    .keep_goal_logits
                    .then(|| {
                        decision
                            .goal_logits
                            .as_ref()
                            .map(|g| g.iter().map(|&x| to_bf16(x)).collect())
                    })
                    .flatten(),
                // An action outside the flat layout cannot happen with the
                // reference's agents; NOOP keeps the sample usable if it does.
                human_action: layout.flat(human_action).unwrap_or(0) as u32,
                human_policy,
            });
            slot.prev_action = decision.action;
            slot.state = decision.state_out;
            if done {
                out.episodes.push(EpisodeStats {
                    length: slot.length,
                    goal_percentage,
                    assistant_goal_percentage: slot.assistant_goal_reward / slot.denominator,
                    assistant_reward: slot.assistant_reward,
                });
                slot.flush(play.gamma, 0.0, &mut out.fragments);
                slot.start_episode(chunk.goals.as_mut(), chunk.starts.as_deref())?;
            }
        }
    }
    bootstrap(chunk, &mut evaluator, play.gamma, &mut out.fragments)?;
    Ok(out)
}

/// The assistant's NOOP when it does not search: the policy target is NOOP
/// itself, and no state is carried (no network ran).
fn standing_by(n_actions: usize) -> Decision<NetState> {
    let mut policy = vec![0.0; n_actions];
    policy[0] = 1.0;
    Decision {
        action: 0,
        policy,
        root_value: 0.0,
        goal_logits: None,
        state_out: None,
        root_visits: 0,
        simulations: 0,
    }
}

/// The distribution `human` drew its last action from, as `(flat action,
/// probability)` pairs; empty if it exposes none over the `n_actions` flat
/// actions.
fn human_distribution(human: &dyn Agent, n_actions: usize) -> Vec<(u32, f32)> {
    match human.internals() {
        Internals::Distribution(d) if d.space_len() == n_actions => d
            .entries()
            .iter()
            .map(|&(a, p)| (a as u32, p as f32))
            .collect(),
        _ => Vec::new(),
    }
}

/// Closes the fragments of episodes still running with the value head's estimate
/// of where they paused.
fn bootstrap(
    chunk: &mut Chunk,
    evaluator: &mut NetEvaluator,
    gamma: f64,
    out: &mut Vec<Fragment>,
) -> Result<(), AssistantError> {
    for slot in &mut chunk.slots {
        slot.env.observe(ASSISTANT, &mut slot.observations[1])?;
    }
    let open: Vec<usize> = (0..chunk.slots.len())
        .filter(|&i| !chunk.slots[i].samples.is_empty())
        .collect();
    if open.is_empty() {
        return Ok(());
    }
    let values: Vec<f32> = {
        let queries: Vec<LeafQuery<'_, NetState>> = open
            .iter()
            .map(|&i| {
                let slot = &chunk.slots[i];
                LeafQuery {
                    observation: &slot.observations[1],
                    prev_action: Some(slot.prev_action),
                    state: &slot.state,
                    policy_only: false,
                }
            })
            .collect();
        evaluator
            .evaluate(&queries)?
            .into_iter()
            .map(|e| e.value)
            .collect()
    };
    for (&i, value) in open.iter().zip(values) {
        chunk.slots[i].flush(gamma, f64::from(value), out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec::StandardAgents;
    use crate::nn::{InferenceService, Model, ServiceConfig};
    use crate::train::assistant::replay::bit;

    #[test]
    fn self_play_produces_consistent_fragments() {
        tch::set_num_threads(1);
        let config = crate::train::assistant::config::tests::tiny();
        let settings = SelfPlaySettings {
            env: config.env.clone(),
            goals: config.goals.clone(),
            human: "heuristic:lowest_block".parse().unwrap(),
            mcts: config.mcts.clone(),
            num_envs: 3,
            threads: 2,
            seed: 5,
            line_of_sight: false,
            gamma: 0.5,
            assistant: AssistantPlays::Search,
            starts: None,
        };
        let factory = StandardAgents::heuristics_only();
        let mut selfplay = SelfPlay::new(&settings, &factory, true).unwrap();
        let model = Model::new(config.model.clone(), tch::Device::Cpu).unwrap();
        let service = InferenceService::spawn(model, ServiceConfig::default()).unwrap();
        let first = selfplay.collect(service.handle(), 4).unwrap();
        assert_eq!(first.env_steps, 12);
        assert_eq!(first.simulations, 12 * 5);
        let samples: usize = first.fragments.iter().map(|f| f.samples.len()).sum();
        assert_eq!(samples, 12);
        let cells = config.env.world_size.num_cells();
        for f in &first.fragments {
            // A conv network without LSTMs has no state to start from.
            assert!(f.initial_state.is_none());
            for (k, s) in f.samples.iter().enumerate() {
                let total: f32 = s.policy.iter().map(|p| p.1).sum();
                assert!((total - 1.0).abs() < 1e-4, "{total}");
                assert!(s.policy.iter().all(|&(a, _)| bit(&s.valid, a as usize)));
                assert!(s.value_target.is_finite());
                assert_eq!(s.goal.len(), cells);
                assert!(
                    s.goal.iter().any(|&b| b != 0),
                    "the tutorial goal has blocks"
                );
                assert_eq!(s.played_goal_logits.as_ref().unwrap().len(), 10 * cells);
                // The lowest-block heuristic draws from a distribution, which
                // is kept as the target and holds the action it took.
                let human: f32 = s.human_policy.iter().map(|p| p.1).sum();
                assert!((human - 1.0).abs() < 1e-4, "{human}");
                assert!(
                    s.human_policy
                        .iter()
                        .any(|&(a, p)| a == s.human_action && p > 0.0)
                );
                if k > 0 {
                    assert_eq!(
                        s.observation.timestep,
                        f.samples[k - 1].observation.timestep + 1
                    );
                }
            }
            // The last target is the reward plus the discounted bootstrap, the
            // others chain: v_t = r_t + gamma * v_{t+1}.
            for w in f.samples.windows(2) {
                let expected = w[0].reward + 0.5 * w[1].value_target;
                assert!((w[0].value_target - expected).abs() < 1e-5);
            }
        }
        // Environments pause mid-episode and go on where they stopped.
        let second = selfplay.collect(service.handle(), 2).unwrap();
        assert_eq!(second.env_steps, 6);
        let last_t = |c: &Collection| {
            let mut t: Vec<i32> = c
                .fragments
                .iter()
                .map(|f| f.samples[0].observation.timestep)
                .collect();
            t.sort();
            t
        };
        assert!(
            last_t(&second).iter().all(|&t| t >= 4),
            "{:?}",
            last_t(&second)
        );
        service.shutdown().unwrap();
    }

    #[test]
    fn episode_stats_survive_json_with_a_nan() {
        let stats = EpisodeStats {
            length: 7,
            goal_percentage: 0.25,
            assistant_goal_percentage: f64::NAN,
            assistant_reward: -1.5,
        };
        let json = serde_json::to_string(&stats).unwrap();
        let back: EpisodeStats = serde_json::from_str(&json).unwrap();
        assert_eq!((back.length, back.goal_percentage), (7, 0.25));
        assert!(back.assistant_goal_percentage.is_nan());
        assert_eq!(back.assistant_reward, -1.5);
    }

    #[test]
    fn self_play_starts_from_recorded_moments() {
        tch::set_num_threads(1);
        let config = crate::train::assistant::config::tests::tiny();
        let starts = Starts::load(
            std::path::Path::new("recordings/samples"),
            config.env.world_size,
            5,
        )
        .unwrap();
        let goals: Vec<Vec<u8>> = starts_goals(&starts);
        let settings = SelfPlaySettings {
            env: config.env.clone(),
            goals: config.goals.clone(),
            human: "heuristic:lowest_block".parse().unwrap(),
            mcts: config.mcts.clone(),
            num_envs: 2,
            threads: 1,
            seed: 3,
            line_of_sight: false,
            gamma: 0.5,
            assistant: AssistantPlays::Search,
            starts: Some(Arc::new(starts)),
        };
        let factory = StandardAgents::heuristics_only();
        let mut selfplay = SelfPlay::new(&settings, &factory, true).unwrap();
        let model = Model::new(config.model.clone(), tch::Device::Cpu).unwrap();
        let service = InferenceService::spawn(model, ServiceConfig::default()).unwrap();
        let collected = selfplay.collect(service.handle(), 3).unwrap();
        for f in &collected.fragments {
            for s in &f.samples {
                // Every episode plays a recording's goal from one of its moments.
                assert!(goals.iter().any(|g| *g == s.goal.to_vec()));
            }
        }
    }

    fn starts_goals(starts: &Starts) -> Vec<Vec<u8>> {
        let mut env = Env::new(crate::train::assistant::config::tests::tiny().env);
        let mut rng = StdRng::seed_from_u64(0);
        let mut goals: Vec<Vec<u8>> = Vec::new();
        for _ in 0..200 {
            let g = starts.reset(&mut env, &mut rng).goal.ids().to_vec();
            if !goals.contains(&g) {
                goals.push(g);
            }
        }
        goals
    }
}
