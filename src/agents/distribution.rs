//! The distribution agents (`mbag_sim::distribution`) as [`Agent`]s.
//!
//! They live in the simulator crate so that the Python wheel can run them without
//! the networks; this module adds the agent interface the rest of mbag uses.

pub use mbag_sim::distribution::*;

use super::registry::AgentError;
use super::{Agent, Internals};
use crate::sim::action::Action;
use crate::sim::obs::Observation;

impl From<Unsupported> for AgentError {
    fn from(e: Unsupported) -> Self {
        AgentError::Unsupported {
            agent: e.agent,
            reason: e.reason,
        }
    }
}

impl<P: Policy> Agent for DistributionAgent<P> {
    fn name(&self) -> &'static str {
        DistributionAgent::name(self)
    }

    fn reset(&mut self, seed: u64) {
        DistributionAgent::reset(self, seed);
    }

    fn act(&mut self, obs: &Observation) -> Action {
        DistributionAgent::act(self, obs)
    }

    fn record_internals(&mut self, on: bool) {
        self.set_recording(on);
    }

    fn internals(&self) -> Internals<'_> {
        if self.recording() {
            Internals::Distribution(self.last_distribution())
        } else {
            Internals::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::action::{ActionType, FlatLayout};
    use crate::sim::config::Config;
    use crate::sim::coords::{Cell, WorldSize};
    use crate::sim::mask;
    use crate::sim::obs::{CURRENT_PLAYER, WorldChannel};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn config(size: [usize; 3], teleportation: bool, inf_blocks: bool) -> Config {
        Config::from_json(&serde_json::json!({
            "world_size": size,
            "abilities": {"teleportation": teleportation, "flying": true, "inf_blocks": inf_blocks},
        }))
        .unwrap()
    }

    /// A world with a bedrock floor and dirt at y = 1, player 1 at `player` if given.
    fn observation(size: WorldSize, player: Option<Cell>) -> Observation {
        let mut obs = Observation::new(size, 1);
        for c in size.cells() {
            let i = size.index(c).get();
            obs.channel_mut(WorldChannel::CurrentBlocks)[i] = match c.y {
                0 => 1,
                1 => 2,
                _ => 0,
            };
        }
        if let Some(p) = player {
            let markers = obs.channel_mut(WorldChannel::PlayerLocations);
            markers[size.index(p).get()] = CURRENT_PLAYER;
            markers[size.index(p.above()).get()] = CURRENT_PLAYER;
        }
        obs
    }

    #[test]
    fn channel_layout_matches_the_reference() {
        assert_eq!(channels_of(ActionType::Noop), 0..1);
        assert_eq!(channels_of(ActionType::PlaceBlock), 1..11);
        assert_eq!(channels_of(ActionType::BreakBlock), 11..12);
        assert_eq!(channels_of(ActionType::MovePosX), 12..13);
        assert_eq!(channels_of(ActionType::MoveNegZ), 17..18);
        assert_eq!(channels_of(ActionType::GiveBlock), 18..28);
    }

    #[test]
    fn noop_and_movement_distributions() {
        let cfg = config([5, 6, 5], false, true);
        let obs = observation(cfg.world_size, Some(Cell::new(2, 2, 2)));
        let mut noop = NoopAgent::new(&cfg).unwrap();
        noop.reset(3);
        assert_eq!(noop.act(&obs), Action::NOOP);
        assert_eq!(noop.last_distribution().entries(), &[(0, 1.0)]);

        let mut movement = MovementAgent::new(&cfg).unwrap();
        movement.reset(3);
        let a = movement.act(&obs);
        assert!(a.kind.is_move());
        let layout = FlatLayout::new(cfg.world_size, cfg.abilities);
        let first = layout.offset(ActionType::MovePosX).unwrap();
        let expected: Vec<_> = (first..first + 6).map(|i| (i, 1.0 / 6.0)).collect();
        assert_eq!(movement.last_distribution().entries(), &expected[..]);

        // Teleporting: no moves exist; like numpy's multinomial over zeros, the agent
        // lands on the last flat action (BREAK at the last cell here).
        let cfg = config([5, 6, 5], true, true);
        let mut movement = MovementAgent::new(&cfg).unwrap();
        assert_eq!(movement.act(&obs).to_tuple(), [2, 149, 0]);
        assert_eq!(movement.last_distribution().nnz(), 0);
    }

    #[test]
    fn random_agent_splits_mass_per_action_type() {
        let cfg = config([5, 6, 5], false, true);
        let size = cfg.world_size;
        let obs = observation(size, Some(Cell::new(2, 2, 2)));
        let layout = FlatLayout::new(size, cfg.abilities);
        let mut agent = RandomAgent::new(&cfg).unwrap();
        agent.reset(7);
        let dist = agent.distribution(&obs).clone();
        let mut valid = vec![false; layout.len()];
        mask::compute(&obs, cfg.abilities, &layout, false, &mut valid);
        assert_eq!(dist.nnz(), valid.iter().filter(|&&v| v).count());
        // Types with a valid entry: NOOP, PLACE, BREAK and the moves that are free.
        let types: Vec<ActionType> = ActionType::ALL
            .into_iter()
            .filter(|&t| {
                layout
                    .offset(t)
                    .is_some_and(|o| valid[o..o + layout.block_len(t)].iter().any(|&v| v))
            })
            .collect();
        assert!(types.contains(&ActionType::PlaceBlock));
        for &t in &types {
            let o = layout.offset(t).unwrap();
            let mass: f64 = (o..o + layout.block_len(t)).map(|i| dist.prob(i)).sum();
            assert!((mass - 1.0 / types.len() as f64).abs() < 1e-12, "{t}");
        }
        let total: f64 = dist.entries().iter().map(|e| e.1).sum();
        assert!((total - 1.0).abs() < 1e-12);
        for _ in 0..50 {
            let a = agent.act(&obs);
            assert!(valid[layout.flat(a).unwrap()], "{a:?} is masked out");
        }
    }

    #[test]
    fn random_agent_is_reproducible_per_seed() {
        let cfg = config([5, 6, 5], true, true);
        let obs = observation(cfg.world_size, None);
        let run = |seed| {
            let mut agent = RandomAgent::new(&cfg).unwrap();
            agent.reset(seed);
            (0..20).map(|_| agent.act(&obs)).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn lowest_block_breaks_lowest_wrong_blocks_first() {
        let cfg = config([5, 6, 5], true, true);
        let size = cfg.world_size;
        let mut obs = observation(size, None);
        let idx = |x, y, z| size.index(Cell::new(x, y, z)).get();
        // Goal: the dirt layer, plus cobblestone at (1, 2, 1) and (3, 3, 3) (floating,
        // so not yet placeable), with the dirt at (2, 1, 2) and (4, 1, 0) wrong.
        let goal: Vec<u8> = obs.channel(WorldChannel::CurrentBlocks).to_vec();
        obs.channel_mut(WorldChannel::GoalBlocks)
            .copy_from_slice(&goal);
        let g = obs.channel_mut(WorldChannel::GoalBlocks);
        g[idx(1, 2, 1)] = 3;
        g[idx(3, 3, 3)] = 3;
        g[idx(2, 1, 2)] = 0;
        g[idx(4, 1, 0)] = 5;
        let layout = FlatLayout::new(size, cfg.abilities);
        let brk = layout.offset(ActionType::BreakBlock).unwrap();
        let place = layout.offset(ActionType::PlaceBlock).unwrap();
        let n = size.num_cells();
        let mut agent = LowestBlockAgent::new(&cfg).unwrap();
        agent.record_internals(true);
        agent.reset(0);
        let dist = agent.distribution(&obs).clone();
        assert_eq!(
            dist.entries(),
            &[(brk + idx(2, 1, 2), 0.5), (brk + idx(4, 1, 0), 0.5)]
        );

        // Once both are broken, only the supported cobblestone can be placed; the
        // wool goal at (4, 1, 0) is lower and wins.
        let c = obs.channel_mut(WorldChannel::CurrentBlocks);
        c[idx(2, 1, 2)] = 0;
        c[idx(4, 1, 0)] = 0;
        let dist = agent.distribution(&obs).clone();
        assert_eq!(dist.entries(), &[(place + 5 * n + idx(4, 1, 0), 1.0)]);
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [1, idx(4, 1, 0) as i64, 5]);

        // Matching the goal except the floating block: NOOP.
        let c = obs.channel_mut(WorldChannel::CurrentBlocks);
        c[idx(4, 1, 0)] = 5;
        c[idx(1, 2, 1)] = 3;
        assert_eq!(agent.act(&obs), Action::NOOP);
        assert_eq!(agent.last_distribution().entries(), &[(0, 1.0)]);
    }

    #[test]
    fn lowest_block_refuses_walking_or_palette_configs() {
        let err = LowestBlockAgent::new(&config([5, 6, 5], false, true)).unwrap_err();
        assert!(err.to_string().contains("LowestBlockAgent"), "{err}");
        assert!(LowestBlockAgent::new(&config([5, 6, 5], true, false)).is_err());
    }

    #[test]
    fn sampling_follows_the_weights() {
        let dist = FlatDist::from_weights(&[0.0, 0.0, 0.25, 0.0, 0.0, 0.0, 0.0, 0.75, 0.0, 0.0]);
        assert_eq!(dist.entries(), [(2, 0.25), (7, 0.75)]);
        let mut rng = StdRng::seed_from_u64(1);
        let sevens = (0..4000)
            .filter(|_| dist.sample(&mut rng) == Some(7))
            .count();
        assert!((2800..3200).contains(&sevens), "{sevens}");
        assert_eq!(FlatDist::default().sample(&mut rng), None);
    }

    /// Direct sampling must follow the exact distribution: every draw in its support,
    /// and per-entry frequencies within a few standard deviations of it.
    fn check_direct_sampling<P: Policy>(cfg: &Config, obs: &Observation) {
        let mut exact = DistributionAgent::<P>::new(cfg).unwrap();
        exact.record_internals(true);
        let dist = exact.distribution(obs).clone();
        let layout = FlatLayout::new(cfg.world_size, cfg.abilities);
        let mut fast = DistributionAgent::<P>::new(cfg).unwrap();
        fast.reset(3);
        let draws = 40_000;
        let mut counts = std::collections::HashMap::new();
        for _ in 0..draws {
            let flat = layout.flat(fast.act(obs)).unwrap();
            *counts.entry(flat).or_insert(0usize) += 1;
        }
        for (&flat, &n) in &counts {
            let p = dist.prob(flat);
            assert!(p > 0.0, "{} drew {flat}, outside the support", P::NAME);
            let sd = (draws as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (n as f64 - draws as f64 * p).abs() <= 5.0 * sd + 3.0,
                "{}: {flat} drawn {n} times, p = {p}",
                P::NAME
            );
        }
        assert!(matches!(fast.internals(), Internals::None));
    }

    #[test]
    fn direct_sampling_follows_the_exact_distribution() {
        let cfg = config([5, 6, 5], false, true);
        let obs = observation(cfg.world_size, Some(Cell::new(2, 2, 2)));
        check_direct_sampling::<Random>(&cfg, &obs);
        let cfg = config([5, 6, 5], true, true);
        let mut obs = observation(cfg.world_size, None);
        // A goal with blocks at two heights and a wrong block: the lowest work wins.
        let size = cfg.world_size;
        for (c, b) in [
            ((1, 2, 1), 3),
            ((3, 2, 3), 5),
            ((2, 2, 2), 4),
            ((2, 3, 2), 6),
        ] {
            let i = size.index(Cell::new(c.0, c.1, c.2)).get();
            obs.channel_mut(WorldChannel::GoalBlocks)[i] = b;
        }
        for c in size.cells().filter(|c| c.y < 2) {
            let i = size.index(c).get();
            obs.channel_mut(WorldChannel::GoalBlocks)[i] =
                obs.channel(WorldChannel::CurrentBlocks)[i];
        }
        check_direct_sampling::<LowestBlock>(&cfg, &obs);
        check_direct_sampling::<Random>(&cfg, &obs);
    }
}
