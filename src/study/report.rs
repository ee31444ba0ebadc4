//! A study's results (`mbag study report`): per condition, the objective
//! measures from each completed session's recording and the survey's scores,
//! each as a mean with its standard error and 90% t interval; paired one-sided
//! t-tests between every two conditions; with three or more conditions, a
//! repeated-measures ANOVA and Tukey's HSD.
//!
//! Measures of a session ([`SessionResult`]):
//! - `goal_pct`: the person's goal percentage at the end (×100), as
//!   `evaluate` and the recording's footer define it.
//! - `human_actions`: the person's effective place and break actions (the
//!   paper's "human actions").
//! - `assistant_pct`: the part of the goal percentage the assistant's own
//!   edits made (×100): its goal-dependent reward over `W·H·D − S0`, as
//!   `evaluate` computes it; 0 with no assistant.
//! - `survey_ITEM`: the participant's last answer to each survey item.
//!
//! The practice round is left out. Sessions that are not complete are left
//! out and named, so a paired test or the ANOVA uses the participants who have
//! both (or all) conditions.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::StudyError;
use super::design::Study;
use super::inference::{self, Anova, Estimate, LEVEL, PairedTest, TukeyPair};
use super::session::{self, SessionStatus};
use super::survey;
use crate::recording::Recording;

/// One completed session's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct SessionResult {
    /// The participant.
    pub participant: String,
    /// The session's index.
    pub index: usize,
    /// Its place among the participant's conditions (1 = first after the
    /// practice), for order effects.
    pub position: usize,
    /// The condition's index in the study.
    pub condition: usize,
    /// The condition's blinded name.
    pub label: String,
    /// The condition's assistant spec.
    pub assistant: String,
    /// Its recording.
    pub recording: PathBuf,
    /// Steps played.
    pub steps: usize,
    /// Whether the house was finished.
    pub goal_completed: bool,
    /// Per measure id, the value (NaN when the recording lacks it).
    pub values: BTreeMap<String, f64>,
    /// The survey's free text, if answered.
    pub comment: Option<String>,
}

/// A measure and what the report says of it.
#[derive(Clone, Debug, Serialize)]
pub struct MeasureReport {
    /// Its id (`goal_pct`, `survey_helpful`).
    pub id: String,
    /// Its name for people.
    pub name: String,
    /// Per condition (report order), the estimate.
    pub conditions: Vec<Estimate>,
    /// Per position in the order (1, 2, ...), the estimate over conditions.
    pub positions: Vec<Estimate>,
    /// Paired one-sided t-tests of every two conditions `(a, b)`, `a` before
    /// `b` in report order.
    pub paired: Vec<PairedRow>,
    /// The repeated-measures ANOVA (three or more conditions).
    pub anova: Option<Anova>,
    /// Tukey's HSD on the ANOVA's error term.
    pub tukey: Vec<TukeyPair>,
}

/// One paired test between conditions `a` and `b` (report indices).
#[derive(Clone, Debug, Serialize)]
pub struct PairedRow {
    /// The first condition.
    pub a: usize,
    /// The second condition.
    pub b: usize,
    /// The test of `a − b`.
    pub test: PairedTest,
}

/// A condition as the report names it.
#[derive(Clone, Debug, Serialize)]
pub struct ConditionName {
    /// The blinded name.
    pub label: String,
    /// The assistant spec.
    pub assistant: String,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The study folder.
    pub study: PathBuf,
    /// The interval level (0.9).
    pub level: f64,
    /// The conditions in report order (by blinded name).
    pub conditions: Vec<ConditionName>,
    /// Participants in the study.
    pub participants: usize,
    /// Participants with every condition complete.
    pub complete_participants: usize,
    /// Every completed session (practice left out).
    pub sessions: Vec<SessionResult>,
    /// Sessions not (yet) complete, as `participant session label`.
    pub missing: Vec<String>,
    /// The measures.
    pub measures: Vec<MeasureReport>,
}

/// The objective measures: id and name.
pub const OBJECTIVE: [(&str, &str); 3] = [
    ("goal_pct", "goal % built"),
    ("human_actions", "human actions (place + break)"),
    ("assistant_pct", "assistant's share of the goal (%)"),
];

/// The objective measures of one recording: goal %, human place+break,
/// assistant's share (%), steps, completed.
fn measure(path: &Path) -> Result<(f64, f64, f64, usize, bool), StudyError> {
    let rec = Recording::read(path)?;
    let goal_pct = rec
        .footer
        .as_ref()
        .and_then(|f| f.final_goal_percentage.first().map(|g| g.0))
        .or_else(|| {
            rec.steps
                .last()
                .and_then(|s| s.info.as_ref())
                .and_then(|i| i.first())
                .map(|i| i.goal_percentage.0)
        })
        .unwrap_or(f64::NAN)
        * 100.0;
    let human_actions = rec
        .steps
        .iter()
        .filter(|s| s.e.first().is_some_and(|a| matches!(a.type_id(), 1 | 2)))
        .count() as f64;
    let assistant_pct = if rec.header.players.len() < 2 {
        0.0
    } else {
        let env = crate::recording::verify::env_for(&rec)?;
        let denominator = env.size().num_cells() as f64 - env.initial_goal_similarities()[0];
        let mut sum = 0.0;
        let mut complete = true;
        for s in &rec.steps {
            match s.info.as_ref().and_then(|i| i.get(1)) {
                Some(i) => sum += i.goal_dependent_reward.0,
                None => complete = false,
            }
        }
        if complete {
            sum / denominator * 100.0
        } else {
            f64::NAN
        }
    };
    let completed = rec.footer.as_ref().is_some_and(|f| f.goal_completed);
    Ok((
        goal_pct,
        human_actions,
        assistant_pct,
        rec.steps.len(),
        completed,
    ))
}

/// Reads every participant's sessions and answers and computes the report.
pub fn report(dir: &Path, study: &Study) -> Result<Report, StudyError> {
    let order = study.by_label();
    // Report position of each study condition.
    let mut column = vec![0; study.conditions.len()];
    for (pos, &c) in order.iter().enumerate() {
        column[c] = pos;
    }
    let k = order.len();
    let mut measures: Vec<(String, String)> = OBJECTIVE
        .iter()
        .map(|(id, name)| ((*id).to_owned(), (*name).to_owned()))
        .collect();
    for item in &study.survey.items {
        measures.push((
            format!("survey_{}", item.id),
            format!("survey: {} (1-{})", item.text, study.survey.scale),
        ));
    }
    let mut sessions = Vec::new();
    let mut missing = Vec::new();
    let mut complete_participants = 0;
    // Per measure, per participant, per report column.
    let mut values: Vec<Vec<Vec<f64>>> =
        vec![vec![vec![f64::NAN; k]; study.participants.len()]; measures.len()];
    let mut by_position: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); k]; measures.len()];
    for (pi, p) in study.participants.iter().enumerate() {
        let answers = survey::read_answers(dir, &p.id)?;
        let last = survey::latest(&answers);
        let pdir = session::participant_dir(dir, &p.id);
        let mut all = true;
        for (spec, record) in session::progress(dir, study, &p.id)? {
            let Some(condition) = spec.condition else {
                continue;
            };
            let record = match record {
                Some(r) if r.status == SessionStatus::Complete => r,
                _ => {
                    all = false;
                    missing.push(format!("{} session {} {}", p.id, spec.index, spec.label));
                    continue;
                }
            };
            let path = pdir.join(&record.recording);
            let (goal, human, assistant, steps, completed) = measure(&path)?;
            let mut v = BTreeMap::new();
            v.insert("goal_pct".to_owned(), goal);
            v.insert("human_actions".to_owned(), human);
            v.insert("assistant_pct".to_owned(), assistant);
            let answer = last.get(&spec.index);
            for item in &study.survey.items {
                let score = answer
                    .and_then(|a| a.scores.get(&item.id))
                    .map_or(f64::NAN, |&s| f64::from(s));
                v.insert(format!("survey_{}", item.id), score);
            }
            let position = p
                .order
                .iter()
                .position(|&c| c == condition)
                .unwrap_or_default();
            for (m, (id, _)) in measures.iter().enumerate() {
                values[m][pi][column[condition]] = v[id];
                by_position[m][position].push(v[id]);
            }
            sessions.push(SessionResult {
                participant: p.id.clone(),
                index: spec.index,
                position: position + 1,
                condition,
                label: spec.label.clone(),
                assistant: spec.assistant.clone(),
                recording: path,
                steps,
                goal_completed: completed,
                values: v,
                comment: answer.map(|a| a.comment.clone()).filter(|c| !c.is_empty()),
            });
        }
        if all {
            complete_participants += 1;
        }
    }
    let measures = measures
        .into_iter()
        .enumerate()
        .map(|(m, (id, name))| {
            let rows = &values[m];
            let column_of = |j: usize| rows.iter().map(|r| r[j]).collect::<Vec<f64>>();
            let conditions = (0..k).map(|j| Estimate::of(&column_of(j), LEVEL)).collect();
            let positions = by_position[m]
                .iter()
                .map(|v| Estimate::of(v, LEVEL))
                .collect();
            let mut paired = Vec::new();
            for a in 0..k {
                for b in a + 1..k {
                    paired.push(PairedRow {
                        a,
                        b,
                        test: inference::paired_t(&column_of(a), &column_of(b)),
                    });
                }
            }
            let anova = (k >= 3).then(|| inference::rm_anova(rows)).flatten();
            let tukey = anova.as_ref().map(inference::tukey_hsd).unwrap_or_default();
            MeasureReport {
                id,
                name,
                conditions,
                positions,
                paired,
                anova,
                tukey,
            }
        })
        .collect();
    Ok(Report {
        study: dir.to_owned(),
        level: LEVEL,
        conditions: order
            .iter()
            .map(|&c| ConditionName {
                label: study.conditions[c].label.clone(),
                assistant: study.conditions[c].assistant.clone(),
            })
            .collect(),
        participants: study.participants.len(),
        complete_participants,
        sessions,
        missing,
        measures,
    })
}

/// A number with `digits` decimals, `-` for NaN.
fn num(v: f64, digits: usize) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.digits$}")
    }
}

/// A p-value, `<0.001` below a thousandth.
fn pval(p: f64) -> String {
    if p.is_nan() {
        "-".into()
    } else if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

impl Report {
    /// The report as text tables.
    pub fn tables(&self) -> String {
        let mut out = String::new();
        let pct = (self.level * 100.0).round();
        let _ = writeln!(
            out,
            "study {}: {} participants, {} with every condition; {} sessions complete",
            self.study.display(),
            self.participants,
            self.complete_participants,
            self.sessions.len()
        );
        let _ = writeln!(out, "conditions (unblinded):");
        for c in &self.conditions {
            let _ = writeln!(out, "  {:<14} {}", c.label, c.assistant);
        }
        if !self.missing.is_empty() {
            let _ = writeln!(out, "not complete: {}", self.missing.join("; "));
        }
        let name = |i: usize| self.conditions[i].label.trim_start_matches("Assistant ");
        for m in &self.measures {
            let _ = writeln!(out, "\n## {}", m.name);
            let _ = writeln!(
                out,
                "{:<14} {:>3} {:>9} {:>8} {:>21}",
                "condition",
                "n",
                "mean",
                "SE",
                format!("{pct}% interval")
            );
            for (c, e) in self.conditions.iter().zip(&m.conditions) {
                let _ = writeln!(
                    out,
                    "{:<14} {:>3} {:>9} {:>8} {:>21}",
                    c.label,
                    e.n,
                    num(e.mean, 2),
                    num(e.se, 2),
                    format!("[{}, {}]", num(e.low, 2), num(e.high, 2))
                );
            }
            let by_position: Vec<String> = m
                .positions
                .iter()
                .enumerate()
                .map(|(i, e)| format!("{}: {}", i + 1, num(e.mean, 2)))
                .collect();
            let _ = writeln!(out, "by position in the order: {}", by_position.join(", "));
            let _ = writeln!(
                out,
                "paired t-tests (one-sided): {:<6} {:>3} {:>9} {:>8} {:>9} {:>9}",
                "pair", "n", "mean a-b", "t", "p(a>b)", "p(a<b)"
            );
            for r in &m.paired {
                let _ = writeln!(
                    out,
                    "                            {:<6} {:>3} {:>9} {:>8} {:>9} {:>9}",
                    format!("{}-{}", name(r.a), name(r.b)),
                    r.test.n,
                    num(r.test.mean_difference, 2),
                    num(r.test.t, 3),
                    pval(r.test.p_greater),
                    pval(r.test.p_less)
                );
            }
            if let Some(a) = &m.anova {
                let _ = writeln!(
                    out,
                    "repeated-measures ANOVA ({} participants): F({}, {}) = {}, p = {} \
                     (Greenhouse-Geisser epsilon {}, corrected p = {})",
                    a.subjects,
                    a.df_conditions,
                    a.df_error,
                    num(a.f, 3),
                    pval(a.p),
                    num(a.gg_epsilon, 3),
                    pval(a.p_gg)
                );
                let pairs: Vec<String> = m
                    .tukey
                    .iter()
                    .map(|t| {
                        format!(
                            "{}-{} {} (q {}, p {})",
                            name(t.a),
                            name(t.b),
                            num(t.difference, 2),
                            num(t.q, 2),
                            pval(t.p)
                        )
                    })
                    .collect();
                let _ = writeln!(out, "Tukey HSD: {}", pairs.join("; "));
            } else if self.conditions.len() >= 3 {
                let _ = writeln!(
                    out,
                    "repeated-measures ANOVA: needs two participants with every condition"
                );
            }
        }
        let comments: Vec<String> = self
            .sessions
            .iter()
            .filter_map(|s| {
                s.comment.as_ref().map(|c| {
                    format!(
                        "  {} on {}: {}",
                        s.participant,
                        s.label,
                        crate::printable::printable(c)
                    )
                })
            })
            .collect();
        if !comments.is_empty() {
            let _ = writeln!(out, "\ncomments:\n{}", comments.join("\n"));
        }
        out
    }
}
