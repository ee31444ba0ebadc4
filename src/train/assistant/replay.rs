//! Training samples and the replay buffer. A [`Fragment`] is a run of consecutive
//! steps of one episode with the recurrent state before its first step, kept as
//! one unit (appendix A: "each fragment is kept as a single unit within the replay
//! buffer to enable training recurrent policies").

use std::collections::VecDeque;
use std::sync::Arc;

use rand::Rng;
use tch::Tensor;

use crate::sim::obs::Observation;

/// One assistant step, with every training target.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The assistant's observation.
    pub observation: Observation,
    /// The assistant's previous flat action (0 at an episode's start).
    pub prev_action: u32,
    /// The valid flat actions at the observation, one bit each.
    pub valid: Vec<u64>,
    /// The search's tree policy, the policy head's target: `(flat action,
    /// probability)` for every action with positive probability.
    pub policy: Vec<(u32, f32)>,
    /// The assistant's reward for the step.
    pub reward: f32,
    /// The discounted return from this step on, bootstrapped with the value head
    /// where the fragment stops mid-episode: the value head's target.
    pub value_target: f32,
    /// The value head's estimate when the step was played.
    pub root_value: f32,
    /// The true goal, one block id per cell: the goal head's target.
    pub goal: Arc<[u8]>,
    /// The goal logits when the step was played, as bfloat16 bits (`(10, X, Y,
    /// Z)` C order), for the KL term; halves the buffer's largest part.
    pub played_goal_logits: Option<Vec<u16>>,
    /// The human's flat action at this step.
    pub human_action: u32,
    /// The distribution the human model drew `human_action` from, `(flat
    /// action, probability)` for its support: the other-player head's target, as
    /// the reference's loss uses the human policy's action distribution. Empty
    /// when the human model exposes none; the target is then `human_action`.
    pub human_policy: Vec<(u32, f32)>,
}

impl Sample {
    /// The other-player head's target as `(flat action, probability)` pairs.
    pub fn human_target(&self) -> Vec<(u32, f32)> {
        if self.human_policy.is_empty() {
            vec![(self.human_action, 1.0)]
        } else {
            self.human_policy.clone()
        }
    }
}

/// Consecutive samples of one episode.
#[derive(Debug)]
pub struct Fragment {
    /// The recurrent state before the first sample (batch of 1), `None` for the
    /// zero state (an episode's start, or a stateless network).
    pub initial_state: Option<Vec<Tensor>>,
    /// The samples, in order.
    pub samples: Vec<Sample>,
}

/// Sets bit `i`.
pub fn set_bit(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

/// An action mask as bits, one per action (bit `a` set where `mask[a]`).
pub fn mask_bits(mask: &[bool]) -> Vec<u64> {
    let mut bits = vec![0u64; mask.len().div_ceil(64)];
    for (a, _) in mask.iter().enumerate().filter(|(_, v)| **v) {
        set_bit(&mut bits, a);
    }
    bits
}

/// Whether bit `i` is set.
pub fn bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

/// float32 to bfloat16 bits, rounding to nearest even.
pub fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return 0x7fc0;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// bfloat16 bits to float32 (exact).
pub fn from_bf16(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// Fills in the value targets of `samples`: discounted returns with `bootstrap`
/// (the value of the state after the last sample; 0 after an episode's end).
pub fn discount_returns(samples: &mut [Sample], gamma: f64, bootstrap: f64) {
    let mut ret = bootstrap;
    for s in samples.iter_mut().rev() {
        ret = f64::from(s.reward) + gamma * ret;
        s.value_target = ret as f32;
    }
}

/// A first-in first-out buffer of fragments holding at most `capacity` samples.
#[derive(Debug)]
pub struct ReplayBuffer {
    capacity: usize,
    fragments: VecDeque<Fragment>,
    samples: usize,
}

impl ReplayBuffer {
    /// An empty buffer.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            fragments: VecDeque::new(),
            samples: 0,
        }
    }

    /// The most samples held (an older fragment goes once a new one passes it).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The fragments held, oldest first.
    pub fn fragments(&self) -> impl ExactSizeIterator<Item = &Fragment> {
        self.fragments.iter()
    }

    /// The fragments held, oldest first, taken out of the buffer.
    pub fn into_fragments(self) -> impl Iterator<Item = Fragment> {
        self.fragments.into_iter()
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.samples
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// Adds a fragment, dropping the oldest ones beyond capacity.
    pub fn push(&mut self, fragment: Fragment) {
        if fragment.samples.is_empty() {
            return;
        }
        self.samples += fragment.samples.len();
        self.fragments.push_back(fragment);
        while self.samples > self.capacity && self.fragments.len() > 1 {
            let old = self.fragments.pop_front().expect("not empty");
            self.samples -= old.samples.len();
        }
    }

    /// Fragments drawn uniformly with replacement until they hold at least
    /// `samples` samples (none if the buffer is empty).
    pub fn draw(&self, samples: usize, rng: &mut impl Rng) -> Vec<&Fragment> {
        let mut out = Vec::new();
        let mut got = 0;
        while got < samples && !self.fragments.is_empty() {
            let f = &self.fragments[rng.random_range(0..self.fragments.len())];
            got += f.samples.len();
            out.push(f);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::coords::WorldSize;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn sample(reward: f32) -> Sample {
        Sample {
            observation: Observation::new(WorldSize::new(3, 3, 3), 2),
            prev_action: 0,
            valid: vec![0],
            policy: vec![(0, 1.0)],
            reward,
            value_target: f32::NAN,
            root_value: 0.0,
            goal: Arc::from(vec![0u8; 27]),
            played_goal_logits: None,
            human_action: 0,
            human_policy: Vec::new(),
        }
    }

    #[test]
    fn returns_are_discounted_and_bootstrapped() {
        let mut s = vec![sample(1.0), sample(0.0), sample(2.0)];
        discount_returns(&mut s, 0.5, 4.0);
        // 2 + 0.5 * 4 = 4; 0 + 0.5 * 4 = 2; 1 + 0.5 * 2 = 2.
        let v: Vec<f32> = s.iter().map(|s| s.value_target).collect();
        assert_eq!(v, [2.0, 2.0, 4.0]);
    }

    #[test]
    fn the_buffer_keeps_the_newest_fragments() {
        let mut buffer = ReplayBuffer::new(5);
        for r in 0..4 {
            buffer.push(Fragment {
                initial_state: None,
                samples: vec![sample(r as f32), sample(r as f32)],
            });
        }
        assert_eq!(buffer.len(), 4);
        let mut rng = StdRng::seed_from_u64(0);
        let drawn = buffer.draw(7, &mut rng);
        assert!(drawn.iter().map(|f| f.samples.len()).sum::<usize>() >= 7);
        assert!(drawn.iter().all(|f| f.samples[0].reward >= 2.0));
        assert!(ReplayBuffer::new(3).draw(5, &mut rng).is_empty());
    }

    #[test]
    fn bits_and_bfloat16() {
        let mut bits = vec![0u64; 2];
        set_bit(&mut bits, 70);
        assert!(bit(&bits, 70) && !bit(&bits, 69));
        for x in [0.0f32, 1.0, -2.5, 1e-3, 123.456] {
            let y = from_bf16(to_bf16(x));
            assert!((x - y).abs() <= x.abs() / 128.0, "{x} {y}");
        }
    }
}
