//! Ratings from the answers: TrueSkill per agent (humans included, as the
//! agent `human`), taking the answers in the order they were submitted; a
//! draw is a draw. The table is sorted by the conservative score
//! `mu - 3 sigma`, which a player only earns with both a high estimate and
//! enough judgements to be sure of it.
//!
//! Beside the ratings, each factor question gets a plain score per agent, as
//! BEDD's decomposed figures do: the share of its answered comparisons (not
//! "n.a.") in which the agent's side was chosen, a draw counting half.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use skillratings::Outcomes;
use skillratings::trueskill::{TrueSkillConfig, TrueSkillRating, get_rank, trueskill};

use super::answer::{Choice, Factor, Verdict};
use super::db::StoredAnswer;
use crate::printable::printable;

/// The format tag of `mbag rate leaderboard --json`.
pub const FORMAT: &str = "mbag-rate-leaderboard/1";

/// TrueSkill's standard settings (mu 25, sigma 25/3, beta 25/6, tau 25/300,
/// 10% draws), those BEDD's evaluation used.
pub fn config() -> TrueSkillConfig {
    TrueSkillConfig::new()
}

/// Every agent's rating after the answers, in submission order. Agents never
/// judged are absent (they have the default rating). An answer comparing an
/// agent with itself says nothing about it and is left out.
pub fn ratings(answers: &[StoredAnswer]) -> BTreeMap<String, TrueSkillRating> {
    let cfg = config();
    let mut ratings: BTreeMap<String, TrueSkillRating> = BTreeMap::new();
    for a in answers.iter().filter(|a| a.left_agent != a.right_agent) {
        let left = ratings.get(&a.left_agent).copied().unwrap_or_default();
        let right = ratings.get(&a.right_agent).copied().unwrap_or_default();
        let outcome = match a.overall {
            Verdict::Left => Outcomes::WIN,
            Verdict::Right => Outcomes::LOSS,
            Verdict::Draw => Outcomes::DRAW,
        };
        let (left, right) = trueskill(&left, &right, &outcome, &cfg);
        ratings.insert(a.left_agent.clone(), left);
        ratings.insert(a.right_agent.clone(), right);
    }
    ratings
}

/// One factor's score for one agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FactorScore {
    /// The factor's key (`built_more`, ...).
    pub factor: &'static str,
    /// Comparisons in which the question applied.
    pub answered: usize,
    /// Share of them won, draws counting half; `None` when none applied.
    pub score: Option<f64>,
}

/// One row of the leaderboard.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlayerRow {
    /// Position, 1 first.
    pub rank: usize,
    /// The agent (an agent spec, `human` or `none`).
    pub agent: String,
    /// TrueSkill's estimate.
    pub mu: f64,
    /// Its uncertainty.
    pub sigma: f64,
    /// `mu - 3 sigma`, the sort key.
    pub conservative: f64,
    /// Answers it took part in.
    pub games: usize,
    /// Overall wins.
    pub wins: usize,
    /// Overall draws.
    pub draws: usize,
    /// Overall losses.
    pub losses: usize,
    /// The factor questions, in the form's order.
    pub factors: Vec<FactorScore>,
}

/// The ratings of every agent, best first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Leaderboard {
    /// [`FORMAT`].
    pub format: &'static str,
    /// Answers counted.
    pub answers: usize,
    /// Distinct raters.
    pub raters: usize,
    /// Median seconds from shown to submitted, over answers with a time.
    pub median_answer_seconds: Option<f64>,
    /// The rows, sorted by `conservative` (then `mu`, then name).
    pub players: Vec<PlayerRow>,
}

impl Leaderboard {
    /// The leaderboard of `answers`; `agents` are listed even when no answer
    /// judged them yet (with the default rating), so the table shows what is
    /// still unrated.
    pub fn new(agents: impl IntoIterator<Item = String>, answers: &[StoredAnswer]) -> Self {
        let ratings = ratings(answers);
        let mut names: BTreeSet<String> = agents.into_iter().collect();
        for a in answers {
            names.insert(a.left_agent.clone());
            names.insert(a.right_agent.clone());
        }
        let mut players: Vec<PlayerRow> = names
            .into_iter()
            .map(|agent| {
                let r = ratings.get(&agent).copied().unwrap_or_default();
                row(agent, r, answers)
            })
            .collect();
        players.sort_by(|x, y| {
            y.conservative
                .total_cmp(&x.conservative)
                .then(y.mu.total_cmp(&x.mu))
                .then(x.agent.cmp(&y.agent))
        });
        for (i, p) in players.iter_mut().enumerate() {
            p.rank = i + 1;
        }
        let mut seconds: Vec<f64> = answers.iter().filter_map(|a| a.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        let median_answer_seconds = (!seconds.is_empty()).then(|| {
            let n = seconds.len();
            if n % 2 == 1 {
                seconds[n / 2]
            } else {
                (seconds[n / 2 - 1] + seconds[n / 2]) / 2.0
            }
        });
        Self {
            format: FORMAT,
            answers: answers.len(),
            raters: answers
                .iter()
                .map(|a| &a.rater)
                .collect::<BTreeSet<_>>()
                .len(),
            median_answer_seconds,
            players,
        }
    }

    /// The table for people: ratings, then the factor scores.
    pub fn table(&self) -> String {
        let width = self
            .players
            .iter()
            .map(|p| printable(&p.agent).chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        let mut out = format!(
            "{:>4}  {:<width$}  {:>7}  {:>6}  {:>9}  {:>5}  W-D-L\n",
            "rank", "agent", "mu", "sigma", "mu-3sigma", "games"
        );
        // 25 - 3 * 25/3 is a rounding error below zero; print it as 0.
        let tidy = |x: f64| if x.abs() < 5e-3 { 0.0 } else { x };
        for p in &self.players {
            out.push_str(&format!(
                "{:>4}  {:<width$}  {:>7.2}  {:>6.2}  {:>9.2}  {:>5}  {}-{}-{}\n",
                p.rank,
                printable(&p.agent),
                p.mu,
                p.sigma,
                tidy(p.conservative),
                p.games,
                p.wins,
                p.draws,
                p.losses
            ));
        }
        out.push_str(&format!(
            "\nfactor scores (share of answered comparisons won, draws half; n = answered):\n{:<width$}",
            "agent"
        ));
        for f in Factor::ALL {
            out.push_str(&format!("  {:>16}", f.key()));
        }
        out.push('\n');
        for p in &self.players {
            out.push_str(&format!("{:<width$}", p.agent));
            for f in &p.factors {
                let cell = match f.score {
                    Some(s) => format!("{:.2} (n={})", s, f.answered),
                    None => "-".to_owned(),
                };
                out.push_str(&format!("  {cell:>16}"));
            }
            out.push('\n');
        }
        let median = self
            .median_answer_seconds
            .map_or("-".to_owned(), |s| format!("{s:.0} s"));
        out.push_str(&format!(
            "\n{} answers from {} raters; median time per answer {median}\n",
            self.answers, self.raters
        ));
        out
    }
}

fn row(agent: String, r: TrueSkillRating, answers: &[StoredAnswer]) -> PlayerRow {
    let (mut wins, mut draws, mut losses) = (0, 0, 0);
    let mut factor_tally = [(0usize, 0.0f64); Factor::ALL.len()];
    for a in answers.iter().filter(|a| a.left_agent != a.right_agent) {
        let side = if a.left_agent == agent {
            Verdict::Left
        } else if a.right_agent == agent {
            Verdict::Right
        } else {
            continue;
        };
        match a.overall {
            Verdict::Draw => draws += 1,
            v if v == side => wins += 1,
            _ => losses += 1,
        }
        for (i, (_, choice)) in a.factors.iter().enumerate() {
            let won = match (choice, side) {
                (Choice::NotApplicable, _) => continue,
                (Choice::Draw, _) => 0.5,
                (Choice::Left, Verdict::Left) | (Choice::Right, Verdict::Right) => 1.0,
                _ => 0.0,
            };
            factor_tally[i].0 += 1;
            factor_tally[i].1 += won;
        }
    }
    PlayerRow {
        rank: 0,
        agent,
        mu: r.rating,
        sigma: r.uncertainty,
        conservative: get_rank(&r),
        games: wins + draws + losses,
        wins,
        draws,
        losses,
        factors: Factor::ALL
            .iter()
            .zip(factor_tally)
            .map(|(f, (n, won))| FactorScore {
                factor: f.key(),
                answered: n,
                score: (n > 0).then(|| won / n as f64),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::answer::FactorChoices;

    fn judged(left: &str, right: &str, overall: Verdict, t: f64) -> StoredAnswer {
        StoredAnswer {
            id: t as i64,
            comparison: t as i64,
            rater: "r".into(),
            left_agent: left.into(),
            right_agent: right.into(),
            overall,
            factors: FactorChoices([
                Choice::Left,
                Choice::Draw,
                Choice::NotApplicable,
                Choice::Right,
            ]),
            justification: String::new(),
            shown_at: Some(t - 30.0),
            submitted_at: t,
            seconds: Some(30.0),
        }
    }

    #[test]
    fn draws_count_as_draws_and_shrink_uncertainty_without_a_winner() {
        let answers: Vec<_> = (0..10)
            .map(|i| judged("a", "b", Verdict::Draw, f64::from(i)))
            .collect();
        let board = Leaderboard::new(["c".to_owned()], &answers);
        let a = board.players.iter().find(|p| p.agent == "a").unwrap();
        let b = board.players.iter().find(|p| p.agent == "b").unwrap();
        assert!((a.mu - b.mu).abs() < 1e-6, "{} vs {}", a.mu, b.mu);
        assert!(a.sigma < 25.0 / 3.0);
        assert_eq!((a.wins, a.draws, a.losses), (0, 10, 0));
        // The unjudged agent is listed at the default, below the judged ones.
        let c = board.players.last().unwrap();
        assert_eq!((c.agent.as_str(), c.games), ("c", 0));
        assert!((c.mu - 25.0).abs() < 1e-12);
    }

    #[test]
    fn factor_scores_are_shares_from_each_agents_side() {
        let answers = vec![
            judged("a", "b", Verdict::Left, 1.0),
            judged("b", "a", Verdict::Left, 2.0),
        ];
        let board = Leaderboard::new([], &answers);
        let a = board.players.iter().find(|p| p.agent == "a").unwrap();
        // built_more was "left" both times: a was left once, right once.
        assert_eq!(a.factors[0].score, Some(0.5));
        assert_eq!(a.factors[1].score, Some(0.5));
        assert_eq!(a.factors[2].score, None);
        assert_eq!((a.wins, a.losses), (1, 1));
        assert_eq!(board.median_answer_seconds, Some(30.0));
        assert!(board.table().contains("mu-3sigma"));
    }
}
