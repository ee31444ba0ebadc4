//! Which pairs to rate next: the comparisons whose answers are expected to
//! shrink the ratings' uncertainty the most, as BEDD chose its videos "to
//! maximally reduce uncertainty" under TrueSkill.
//!
//! The rule, for `--count N` picks one after another:
//!
//! 1. Candidates are pairs of different agents with episodes on a common
//!    goal; a pair of episodes already pending (made but unanswered) is not
//!    made again.
//! 2. Each candidate agent pair is scored by the **expected reduction of the
//!    total variance** `sigma_a^2 + sigma_b^2` after one judgement: TrueSkill's
//!    update is computed for a left win, a right win and a draw, weighted by
//!    their probabilities under the current ratings (`(1 - d) p`, `(1 - d)
//!    (1 - p)` and `d`, with `p` TrueSkill's win probability and `d` its draw
//!    rate). This is largest for agents with a high sigma (little known) and
//!    close mus (whose outcome is least predictable), the usual heuristic,
//!    with the trade-off between the two made by TrueSkill itself. The best
//!    scoring pair is taken; ties go to the agent pair compared least.
//! 3. Of that agent pair's episodes, the pair of episodes compared least is
//!    taken (then the least used episodes), on any goal they share.
//! 4. Sides alternate per agent pair, so neither agent is always on the left.
//! 5. The pick is counted as pending: both agents' sigmas are shrunk to their
//!    expected values after it (mus unchanged), so the next pick goes where
//!    uncertainty is now largest rather than repeating the same agents.
//!
//! Ratings are those of [`leaderboard::ratings`](super::leaderboard::ratings)
//! over the answers so far; agents never judged start at TrueSkill's default.

use std::collections::{BTreeMap, HashMap, HashSet};

use skillratings::Outcomes;
use skillratings::trueskill::{TrueSkillConfig, TrueSkillRating, expected_score, trueskill};

use super::db::{Comparison, StoredEpisode};

/// One chosen comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct PairPick {
    /// The left episode's row id.
    pub left: i64,
    /// The right episode's row id.
    pub right: i64,
    /// The left episode's agent.
    pub left_agent: String,
    /// The right episode's agent.
    pub right_agent: String,
    /// The goal both share.
    pub goal: String,
    /// The expected reduction of `sigma_left^2 + sigma_right^2` it was chosen for.
    pub expected_gain: f64,
}

/// The ratings of both players after one judgement, averaged over its
/// outcomes: mus kept, variances their expected values.
pub fn expected_posterior(
    a: &TrueSkillRating,
    b: &TrueSkillRating,
    cfg: &TrueSkillConfig,
) -> (TrueSkillRating, TrueSkillRating) {
    let (p, q) = expected_score(a, b, cfg);
    let d = cfg.draw_probability;
    let mut var = (0.0, 0.0);
    for (outcome, weight) in [
        (Outcomes::WIN, (1.0 - d) * p),
        (Outcomes::LOSS, (1.0 - d) * q),
        (Outcomes::DRAW, d),
    ] {
        let (a2, b2) = trueskill(a, b, &outcome, cfg);
        var.0 += weight * a2.uncertainty.powi(2);
        var.1 += weight * b2.uncertainty.powi(2);
    }
    (
        TrueSkillRating {
            rating: a.rating,
            uncertainty: var.0.sqrt(),
        },
        TrueSkillRating {
            rating: b.rating,
            uncertainty: var.1.sqrt(),
        },
    )
}

/// The expected reduction of `sigma_a^2 + sigma_b^2` from one judgement.
pub fn expected_gain(a: &TrueSkillRating, b: &TrueSkillRating, cfg: &TrueSkillConfig) -> f64 {
    let (a2, b2) = expected_posterior(a, b, cfg);
    a.uncertainty.powi(2) + b.uncertainty.powi(2) - a2.uncertainty.powi(2) - b2.uncertainty.powi(2)
}

/// Up to `count` new comparisons by the rule in the module docs, given the
/// catalogue, the comparisons made so far (pending ones have no answers) and
/// the current ratings (missing agents: the default). Fewer when every
/// possible pair of episodes is already pending.
pub fn choose(
    episodes: &[StoredEpisode],
    comparisons: &[Comparison],
    ratings: &BTreeMap<String, TrueSkillRating>,
    count: usize,
) -> Vec<PairPick> {
    let cfg = super::leaderboard::config();
    // goal -> agent -> episode ids.
    let mut by_goal: BTreeMap<&str, BTreeMap<&str, Vec<i64>>> = BTreeMap::new();
    for e in episodes {
        by_goal
            .entry(&e.info.goal)
            .or_default()
            .entry(&e.info.agent)
            .or_default()
            .push(e.id);
    }
    // (agent a < agent b) -> goals they share.
    let mut agent_pairs: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for (goal, agents) in &by_goal {
        let names: Vec<&str> = agents.keys().copied().collect();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                agent_pairs.entry((a, b)).or_default().push(goal);
            }
        }
    }
    let agent_of: HashMap<i64, &str> = episodes
        .iter()
        .map(|e| (e.id, e.info.agent.as_str()))
        .collect();
    let key = |x: i64, y: i64| (x.min(y), x.max(y));
    let mut pending: HashSet<(i64, i64)> = HashSet::new();
    let mut pair_uses: HashMap<(i64, i64), usize> = HashMap::new();
    let mut episode_uses: HashMap<i64, usize> = HashMap::new();
    let mut agent_pair_uses: HashMap<(String, String), usize> = HashMap::new();
    let mut current = ratings.clone();
    let agent_key = |a: &str, b: &str| {
        if a <= b {
            (a.to_owned(), b.to_owned())
        } else {
            (b.to_owned(), a.to_owned())
        }
    };
    for c in comparisons {
        *pair_uses.entry(key(c.left, c.right)).or_default() += 1;
        *episode_uses.entry(c.left).or_default() += 1;
        *episode_uses.entry(c.right).or_default() += 1;
        *agent_pair_uses
            .entry(agent_key(&c.left_agent, &c.right_agent))
            .or_default() += 1;
        if c.answers == 0 {
            pending.insert(key(c.left, c.right));
            shrink(&mut current, &c.left_agent, &c.right_agent, &cfg);
        }
    }
    let mut picks = Vec::new();
    while picks.len() < count {
        // The agent pair with the largest expected gain that still has a
        // pair of episodes not pending.
        let mut best: Option<((&str, &str), f64, usize)> = None;
        for (&(a, b), goals) in &agent_pairs {
            let open = goals.iter().any(|g| {
                let agents = &by_goal[g];
                agents[a]
                    .iter()
                    .any(|&x| agents[b].iter().any(|&y| !pending.contains(&key(x, y))))
            });
            if !open {
                continue;
            }
            let ra = current.get(a).copied().unwrap_or_default();
            let rb = current.get(b).copied().unwrap_or_default();
            let gain = expected_gain(&ra, &rb, &cfg);
            let uses = agent_pair_uses.get(&agent_key(a, b)).copied().unwrap_or(0);
            let better = match best {
                None => true,
                Some((_, g, u)) => gain > g + 1e-12 || ((gain - g).abs() <= 1e-12 && uses < u),
            };
            if better {
                best = Some(((a, b), gain, uses));
            }
        }
        let Some(((a, b), gain, uses)) = best else {
            break;
        };
        // Its least compared pair of episodes: (times compared, uses of
        // either episode, goal, left id, right id), smallest first.
        let mut choice: Option<(usize, usize, &str, i64, i64)> = None;
        for goal in &agent_pairs[&(a, b)] {
            let agents = &by_goal[goal];
            for &x in &agents[a] {
                for &y in &agents[b] {
                    if pending.contains(&key(x, y)) {
                        continue;
                    }
                    let rank = (
                        pair_uses.get(&key(x, y)).copied().unwrap_or(0),
                        episode_uses.get(&x).copied().unwrap_or(0)
                            + episode_uses.get(&y).copied().unwrap_or(0),
                        *goal,
                        x,
                        y,
                    );
                    if choice.is_none_or(|r| rank < r) {
                        choice = Some(rank);
                    }
                }
            }
        }
        let Some((_, _, goal, x, y)) = choice else {
            break;
        };
        let (left, right) = if uses % 2 == 0 { (x, y) } else { (y, x) };
        picks.push(PairPick {
            left,
            right,
            left_agent: agent_of[&left].to_owned(),
            right_agent: agent_of[&right].to_owned(),
            goal: goal.to_owned(),
            expected_gain: gain,
        });
        pending.insert(key(x, y));
        *pair_uses.entry(key(x, y)).or_default() += 1;
        *episode_uses.entry(x).or_default() += 1;
        *episode_uses.entry(y).or_default() += 1;
        *agent_pair_uses.entry(agent_key(a, b)).or_default() += 1;
        shrink(&mut current, a, b, &cfg);
    }
    picks
}

/// Counts a pending judgement of `a` against `b` in the working ratings.
fn shrink(
    ratings: &mut BTreeMap<String, TrueSkillRating>,
    a: &str,
    b: &str,
    cfg: &TrueSkillConfig,
) {
    if a == b {
        return;
    }
    let ra = ratings.get(a).copied().unwrap_or_default();
    let rb = ratings.get(b).copied().unwrap_or_default();
    let (ra, rb) = expected_posterior(&ra, &rb, cfg);
    ratings.insert(a.to_owned(), ra);
    ratings.insert(b.to_owned(), rb);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::episode::EpisodeInfo;

    /// Episodes named `agent@goal#n`.
    fn catalogue(names: &[&str]) -> Vec<StoredEpisode> {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (agent, rest) = name.split_once('@').unwrap();
                let goal = rest.split('#').next().unwrap();
                StoredEpisode {
                    id: i as i64 + 1,
                    info: EpisodeInfo {
                        path: format!("{name}.jsonl"),
                        episode_id: (*name).to_owned(),
                        agent: agent.to_owned(),
                        goal: goal.to_owned(),
                    },
                }
            })
            .collect()
    }

    fn rating(mu: f64, sigma: f64) -> TrueSkillRating {
        TrueSkillRating {
            rating: mu,
            uncertainty: sigma,
        }
    }

    fn as_comparison(id: i64, p: &PairPick, answers: usize) -> Comparison {
        Comparison {
            id,
            left: p.left,
            right: p.right,
            left_agent: p.left_agent.clone(),
            right_agent: p.right_agent.clone(),
            goal: p.goal.clone(),
            answers,
        }
    }

    #[test]
    fn pairs_share_a_goal_and_have_different_agents() {
        let eps = catalogue(&["a@g1#0", "a@g1#1", "a@g2#0", "b@g1#0", "c@g2#0", "d@g3#0"]);
        let picks = choose(&eps, &[], &BTreeMap::new(), 50);
        let info: HashMap<i64, &EpisodeInfo> = eps.iter().map(|e| (e.id, &e.info)).collect();
        // a-b on g1 has 2 episode pairs, a-c on g2 one; d has nobody to meet.
        assert_eq!(picks.len(), 3);
        for p in &picks {
            let (l, r) = (info[&p.left], info[&p.right]);
            assert_eq!(l.goal, r.goal);
            assert_eq!(p.goal, l.goal);
            assert_ne!(l.agent, r.agent);
            assert_eq!(
                (l.agent.as_str(), r.agent.as_str()),
                (p.left_agent.as_str(), p.right_agent.as_str())
            );
            assert!(l.agent != "d" && r.agent != "d");
        }
        let mut seen: Vec<_> = picks
            .iter()
            .map(|p| (p.left.min(p.right), p.left.max(p.right)))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 3, "a pending pair was made twice");
    }

    #[test]
    fn the_most_uncertain_agents_are_compared_first() {
        let eps = catalogue(&["a@g#0", "b@g#0", "c@g#0", "d@g#0"]);
        let ratings = BTreeMap::from([
            ("a".to_owned(), rating(25.0, 1.0)),
            ("b".to_owned(), rating(25.0, 1.0)),
            ("c".to_owned(), rating(25.0, 6.0)),
            ("d".to_owned(), rating(25.0, 6.0)),
        ]);
        let first = &choose(&eps, &[], &ratings, 1)[0];
        let mut agents = [first.left_agent.as_str(), first.right_agent.as_str()];
        agents.sort_unstable();
        assert_eq!(agents, ["c", "d"]);
    }

    #[test]
    fn among_equally_uncertain_agents_the_closest_mus_meet() {
        let eps = catalogue(&["a@g#0", "b@g#0", "c@g#0"]);
        let ratings = BTreeMap::from([
            ("a".to_owned(), rating(20.0, 3.0)),
            ("b".to_owned(), rating(21.0, 3.0)),
            ("c".to_owned(), rating(35.0, 3.0)),
        ]);
        let first = &choose(&eps, &[], &ratings, 1)[0];
        let mut agents = [first.left_agent.as_str(), first.right_agent.as_str()];
        agents.sort_unstable();
        assert_eq!(agents, ["a", "b"]);
        let cfg = crate::rate::leaderboard::config();
        let (a, b, c) = (ratings["a"], ratings["b"], ratings["c"]);
        assert!(expected_gain(&a, &b, &cfg) > expected_gain(&a, &c, &cfg));
        // More uncertainty, more to gain.
        assert!(expected_gain(&rating(20.0, 6.0), &b, &cfg) > expected_gain(&a, &b, &cfg));
    }

    #[test]
    fn pending_picks_spread_the_next_ones_and_sides_alternate() {
        // Three agents, one episode each: three possible pairs.
        let eps = catalogue(&["a@g#0", "a@g#1", "b@g#0", "b@g#1", "c@g#0"]);
        let picks = choose(&eps, &[], &BTreeMap::new(), 3);
        let mut agent_pairs: Vec<_> = picks
            .iter()
            .map(|p| {
                let mut x = [p.left_agent.clone(), p.right_agent.clone()];
                x.sort();
                x
            })
            .collect();
        agent_pairs.sort();
        agent_pairs.dedup();
        assert_eq!(agent_pairs.len(), 3, "{picks:?}");
        // Answered comparisons of a and b free their episodes for more, and
        // the sides of the next a-b pair are swapped.
        let ab: Vec<_> = picks
            .iter()
            .filter(|p| p.left_agent != "c" && p.right_agent != "c")
            .collect();
        let made: Vec<Comparison> = picks
            .iter()
            .enumerate()
            .map(|(i, p)| as_comparison(i as i64 + 1, p, 1))
            .collect();
        let next = choose(&eps, &made, &BTreeMap::new(), 12);
        let next_ab: Vec<_> = next
            .iter()
            .filter(|p| p.left_agent != "c" && p.right_agent != "c")
            .collect();
        assert_eq!(next_ab.len(), 4, "{next:?}");
        assert_ne!(next_ab[0].left_agent, ab[0].left_agent);
        assert_ne!(next_ab[0].left_agent, next_ab[1].left_agent);
        // Every a-b episode pair is pending now; only the others remain.
        assert_eq!(next.len(), 4 + 2 + 2);
    }
}
