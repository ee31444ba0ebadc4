//! The AssistanceZero loss (equation 1 of the paper, with the reference's
//! `MbagAlphaZeroPolicy.loss` choices):
//!
//! - policy: cross-entropy from the MCTS policy to the policy head, the head's
//!   logits masked to the valid actions (as the reference's masked distribution);
//! - value: squared error against the discounted return;
//! - goal: per-voxel cross-entropy against the true goal blocks, averaged over
//!   the voxels (the reward parameters θ);
//! - prev-goal KL: `KL(played ‖ current)` of the per-voxel goal distributions,
//!   averaged over the voxels (the reference's `F.kl_div(current, played)`);
//! - other action: `KL(human ‖ predicted)` from the human model's action
//!   distribution to the other-player head, as the reference's
//!   `other_agent_action_predictor_loss` (`mbag/rllib/alpha_zero/alpha_zero_policy.py`);
//!   for a one-hot target (a human model without a distribution) it is the
//!   negative log-likelihood of the action taken.
//!
//! Every term is a mean over the samples weighted by `weight` (0 for the padding
//! of short fragments).

use tch::{Kind, Tensor};

/// What the network predicted for a batch of `B`.
#[derive(Debug)]
pub struct Predictions {
    /// `(B, N)` policy logits over the flat actions, unmasked.
    pub policy_logits: Tensor,
    /// `(B,)` value estimates.
    pub value: Tensor,
    /// `(B, 10, X, Y, Z)` goal logits.
    pub goal_logits: Tensor,
    /// `(B, N)` logits of the human's action.
    pub other_action_logits: Tensor,
}

/// The targets of a batch of `B`, on the predictions' device.
#[derive(Debug)]
pub struct Targets {
    /// `(B, N)` float: the MCTS policy.
    pub policy: Tensor,
    /// `(B, N)` bool: the valid actions.
    pub valid: Tensor,
    /// `(B,)` float: the discounted returns.
    pub value: Tensor,
    /// `(B, X, Y, Z)` int64: the goal's block ids.
    pub goal: Tensor,
    /// `(B, 10, X, Y, Z)` float: the goal logits when the samples were played.
    pub played_goal_logits: Option<Tensor>,
    /// `(B, N)` float: the human model's distribution over flat actions (one-hot
    /// on the action taken when the model exposes none).
    pub human_policy: Tensor,
    /// `(B,)` float: each sample's weight (1, or 0 for padding).
    pub weight: Tensor,
}

/// The weights of the terms at this point of training.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coefficients {
    /// λ_policy.
    pub policy: f64,
    /// λ_value.
    pub value: f64,
    /// λ_reward (the goal term).
    pub goal: f64,
    /// λ_prev-rew (the KL to the goal predictions at play time).
    pub prev_goal_kl: f64,
    /// λ_action.
    pub other_action: f64,
}

/// The loss and its terms (weighted means, before the coefficients).
#[derive(Debug)]
pub struct LossTerms {
    /// The weighted sum, with gradients.
    pub total: Tensor,
    /// Policy cross-entropy.
    pub policy: f64,
    /// Policy KL (cross-entropy less the MCTS policy's entropy).
    pub policy_kl: f64,
    /// Value squared error.
    pub value: f64,
    /// Goal cross-entropy per voxel.
    pub goal: f64,
    /// KL to the played goal predictions per voxel (0 without them).
    pub prev_goal_kl: f64,
    /// `KL(human ‖ predicted)` of the human's action distribution.
    pub other_action: f64,
    /// Share of voxels whose most likely predicted block is the goal's.
    pub goal_accuracy: f64,
}

impl LossTerms {
    /// The terms as `(name, value)` pairs, for logs.
    pub fn named(&self) -> [(&'static str, f64); 8] {
        [
            ("loss", self.total.double_value(&[])),
            ("policy_loss", self.policy),
            ("policy_kl", self.policy_kl),
            ("value_loss", self.value),
            ("goal_loss", self.goal),
            ("prev_goal_kl", self.prev_goal_kl),
            ("other_action_loss", self.other_action),
            ("goal_accuracy", self.goal_accuracy),
        ]
    }
}

/// A logit low enough to take no probability, yet finite so that a zero target
/// times it stays zero.
const MASKED_LOGIT: f64 = -1e9;

/// The loss of `p` against `t` with the coefficients `c`.
pub fn assistant_loss(p: &Predictions, t: &Targets, c: &Coefficients) -> LossTerms {
    let w = t.weight.to_kind(Kind::Float);
    let total_weight = w.sum(Kind::Float).clamp_min(1e-8);
    let mean = |per_sample: &Tensor| (per_sample * &w).sum(Kind::Float) / &total_weight;

    let masked = p
        .policy_logits
        .masked_fill(&t.valid.logical_not(), MASKED_LOGIT);
    let log_pi = masked.log_softmax(-1, Kind::Float);
    let policy_ce = -(&t.policy * &log_pi).sum_dim_intlist(-1, false, Kind::Float);
    let target_entropy =
        -(&t.policy * t.policy.clamp_min(1e-12).log()).sum_dim_intlist(-1, false, Kind::Float);
    let policy = mean(&policy_ce);
    let policy_kl = mean(&(&policy_ce - &target_entropy).detach());

    let value = mean(&(&p.value - &t.value).square());

    let b = p.goal_logits.size()[0];
    let log_goal = p.goal_logits.log_softmax(1, Kind::Float);
    let goal_nll = -log_goal
        .gather(1, &t.goal.unsqueeze(1), false)
        .squeeze_dim(1)
        .reshape([b, -1])
        .mean_dim(-1, false, Kind::Float);
    let goal = mean(&goal_nll);
    let correct = p
        .goal_logits
        .argmax(1, false)
        .eq_tensor(&t.goal)
        .to_kind(Kind::Float)
        .reshape([b, -1])
        .mean_dim(-1, false, Kind::Float);
    let goal_accuracy = mean(&correct);

    let prev_goal_kl = match &t.played_goal_logits {
        Some(played) => {
            let log_played = played.log_softmax(1, Kind::Float);
            let kl = (log_played.exp() * (&log_played - &log_goal))
                .sum_dim_intlist(1, false, Kind::Float)
                .reshape([b, -1])
                .mean_dim(-1, false, Kind::Float);
            mean(&kl)
        }
        None => Tensor::zeros([], (Kind::Float, p.value.device())),
    };

    // Zero-probability target entries contribute nothing (0 · log 0 = 0), so
    // the target's log is taken only where it is positive.
    let target = &t.human_policy;
    let log_target = target
        .clamp_min(1e-30)
        .log()
        .masked_fill(&target.le(0.0), 0.0);
    let log_q = p.other_action_logits.log_softmax(-1, Kind::Float);
    let other_kl = (target * (log_target - log_q)).sum_dim_intlist(-1, false, Kind::Float);
    let other_action = mean(&other_kl);

    let total = &policy * c.policy
        + &value * c.value
        + &goal * c.goal
        + &prev_goal_kl * c.prev_goal_kl
        + &other_action * c.other_action;
    let f = |t: &Tensor| t.double_value(&[]);
    LossTerms {
        policy: f(&policy),
        policy_kl: f(&policy_kl),
        value: f(&value),
        goal: f(&goal),
        prev_goal_kl: f(&prev_goal_kl),
        other_action: f(&other_action),
        goal_accuracy: f(&goal_accuracy),
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-5, "{a} != {b}");
    }

    /// Two samples and a padding sample (weight 0, absurd values) in a 1x1x1
    /// world with 3 flat actions; every expected value is worked out by hand.
    #[test]
    fn the_terms_match_hand_computed_values() {
        let ln = f64::ln;
        let policy_logits = Tensor::from_slice(&[
            0.0f32,
            0.0,
            0.0, //
            0.0,
            ln(3.0) as f32,
            0.0, //
            50.0,
            -50.0,
            7.0,
        ])
        .reshape([3, 3])
        .set_requires_grad(true);
        let value = Tensor::from_slice(&[1.0f32, -1.0, 100.0]);
        let mut goal = vec![0f32; 30];
        goal[10 + 3] = ln(9.0) as f32;
        goal[20] = 40.0;
        let goal_logits = Tensor::from_slice(&goal).reshape([3, 10, 1, 1, 1]);
        let p = Predictions {
            policy_logits,
            value,
            goal_logits,
            other_action_logits: Tensor::zeros([3, 3], (Kind::Float, tch::Device::Cpu)),
        };
        let t = Targets {
            policy: Tensor::from_slice(&[1.0f32, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0])
                .reshape([3, 3]),
            valid: Tensor::from_slice(&[true, true, false, true, true, false, false, true, true])
                .reshape([3, 3]),
            value: Tensor::from_slice(&[0.0f32, 1.0, 0.0]),
            goal: Tensor::from_slice(&[0i64, 3, 5]).reshape([3, 1, 1, 1]),
            played_goal_logits: Some(Tensor::zeros(
                [3, 10, 1, 1, 1],
                (Kind::Float, tch::Device::Cpu),
            )),
            human_policy: Tensor::from_slice(&[0.0f32, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
                .reshape([3, 3]),
            weight: Tensor::from_slice(&[1.0f32, 1.0, 0.0]),
        };
        let c = Coefficients {
            policy: 1.0,
            value: 0.5,
            goal: 2.0,
            prev_goal_kl: 3.0,
            other_action: 1.0,
        };
        let terms = assistant_loss(&p, &t, &c);
        // Sample 0: two valid actions at equal logits, target on the first: ln 2.
        // Sample 1: probabilities 1/4, 3/4, target 1/2 each: (ln 4 + ln 4/3) / 2.
        let policy = (ln(2.0) + 0.5 * (ln(4.0) + ln(4.0 / 3.0))) / 2.0;
        close(terms.policy, policy);
        // Target entropies 0 and ln 2.
        close(terms.policy_kl, policy - ln(2.0) / 2.0);
        close(terms.value, (1.0 + 4.0) / 2.0);
        // Uniform over 10 blocks: ln 10; block 3 at 9/18: ln 2.
        let goal = (ln(10.0) + ln(2.0)) / 2.0;
        close(terms.goal, goal);
        // KL(uniform ‖ current): 0 for sample 0; sample 1's current is 1/2 on block 3
        // and 1/18 elsewhere.
        let kl = 0.1 * ln(0.1 / 0.5) + 0.9 * ln(0.1 * 18.0);
        close(terms.prev_goal_kl, kl / 2.0);
        close(terms.other_action, ln(3.0));
        // Sample 0's argmax is block 0 (ties go to the first), sample 1's block 3.
        close(terms.goal_accuracy, 1.0);
        let total = policy + 0.5 * 2.5 + 2.0 * goal + 3.0 * kl / 2.0 + ln(3.0);
        close(terms.total.double_value(&[]), total);
        terms.total.backward();
        let grad = p.policy_logits.grad();
        // The padding sample gets no gradient; the masked action none either.
        assert_eq!(grad.get(2).abs().sum(Kind::Float).double_value(&[]), 0.0);
        assert_eq!(grad.double_value(&[0, 2]), 0.0);
        // d/dlogit of -ln softmax at the target: (p - 1) / 2 samples.
        close(grad.double_value(&[0, 0]), (0.5 - 1.0) / 2.0);
    }

    /// The other-player term against soft targets (the human model's action
    /// distributions), worked out by hand: `KL(t ‖ q) = Σ t ln(t / q)`.
    #[test]
    fn the_other_action_term_is_the_kl_from_the_human_distribution() {
        let ln = f64::ln;
        let cpu = (Kind::Float, tch::Device::Cpu);
        let other = Tensor::from_slice(&[
            0.0f32,
            ln(2.0) as f32,
            ln(3.0) as f32, //
            0.0,
            0.0,
            0.0, //
            9.0,
            -9.0,
            0.0,
        ])
        .reshape([3, 3])
        .set_requires_grad(true);
        let p = Predictions {
            policy_logits: Tensor::zeros([3, 3], cpu),
            value: Tensor::zeros([3], cpu),
            goal_logits: Tensor::zeros([3, 10, 1, 1, 1], cpu),
            other_action_logits: other.shallow_clone(),
        };
        let t = Targets {
            policy: Tensor::from_slice(&[1.0f32, 0.0, 0.0]).repeat([3, 1]),
            valid: Tensor::ones([3, 3], (Kind::Bool, tch::Device::Cpu)),
            value: Tensor::zeros([3], cpu),
            goal: Tensor::zeros([3, 1, 1, 1], (Kind::Int64, tch::Device::Cpu)),
            played_goal_logits: None,
            human_policy: Tensor::from_slice(&[
                0.5f32, 0.5, 0.0, //
                0.25, 0.25, 0.5, //
                0.0, 1.0, 0.0,
            ])
            .reshape([3, 3]),
            weight: Tensor::from_slice(&[1.0f32, 1.0, 0.0]),
        };
        let c = Coefficients {
            policy: 0.0,
            value: 0.0,
            goal: 0.0,
            prev_goal_kl: 0.0,
            other_action: 2.0,
        };
        let terms = assistant_loss(&p, &t, &c);
        // Sample 0: q = (1/6, 2/6, 3/6); the zero target entry adds nothing.
        let kl0 = 0.5 * ln(0.5 * 6.0) + 0.5 * ln(0.5 * 3.0);
        // Sample 1: q uniform.
        let kl1 = 2.0 * 0.25 * ln(0.25 * 3.0) + 0.5 * ln(0.5 * 3.0);
        close(terms.other_action, (kl0 + kl1) / 2.0);
        close(terms.total.double_value(&[]), kl0 + kl1);
        terms.total.backward();
        let grad = other.grad();
        // d KL / d logit = q - t, times the coefficient over 2 samples.
        close(grad.double_value(&[0, 0]), 2.0 * (1.0 / 6.0 - 0.5) / 2.0);
        close(grad.double_value(&[0, 2]), 2.0 * (0.5 - 0.0) / 2.0);
        close(grad.double_value(&[1, 2]), 2.0 * (1.0 / 3.0 - 0.5) / 2.0);
        assert_eq!(grad.get(2).abs().sum(Kind::Float).double_value(&[]), 0.0);
    }
}
