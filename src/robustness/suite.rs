//! Running a suite of robustness tests for several assistants side by side, and
//! summarising: pass rates per test, variant and category with Wilson intervals,
//! which tests each assistant passes, and the flags a suite author needs (a test
//! the oracle fails is a bad test; one the idle assistant passes is vacuous).
//!
//! Every rollout depends only on its test, case and index, never on the thread
//! that played it, so reports are reproducible whatever `threads` is.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde::Serialize;

use super::format::{Category, RobustnessTest};
use super::run::{self, ASSISTANT, Case, RunError};
use crate::agents::Agent;
use crate::agents::spec::{AgentFactory, AgentSpec};
use crate::eval::run::{EvalError, EvalSettings, default_lanes, evaluate};
use crate::eval::stats::{MeanCi, RateCi};
use crate::sim::config::Config;
use crate::sim::goal::GoalConfig;

/// The share of a test's rollouts (every variant counted) an assistant must pass
/// for the test to count as passed.
pub const PASS_RATE: f64 = 0.8;
/// No variant may fall below this share for the test to count as passed: a pass
/// must not hang on one start.
pub const VARIANT_FLOOR: f64 = 0.5;

/// What to run.
#[derive(Clone, Debug)]
pub struct SuiteSettings {
    /// The tests.
    pub tests: Vec<RobustnessTest>,
    /// The assistants, one column each (the one under test, `oracle`, `noop`).
    pub columns: Vec<AgentSpec>,
    /// Rollouts per case (the test and each variant).
    pub rollouts: usize,
    /// Worker threads.
    pub threads: usize,
}

/// One case of a test (`base` or a variant) for one assistant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseResult {
    /// `base` or the variant.
    pub case: String,
    /// Rollouts that passed.
    pub rate: RateCi,
}

/// One test for one assistant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestResult {
    /// The test's id.
    pub id: String,
    /// Its category.
    pub category: Category,
    /// Every rollout of every case.
    pub rate: RateCi,
    /// Per case.
    pub cases: Vec<CaseResult>,
    /// Whether the assistant passes the test ([`PASS_RATE`], [`VARIANT_FLOOR`]).
    pub passed: bool,
}

/// One category for one assistant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CategoryResult {
    /// The category.
    pub category: Category,
    /// Its tests.
    pub tests: usize,
    /// Those passed.
    pub tests_passed: usize,
    /// Every rollout of every test of the category.
    pub rate: RateCi,
}

/// One assistant's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ColumnResult {
    /// The assistant.
    pub assistant: AgentSpec,
    /// Per test, in suite order.
    pub tests: Vec<TestResult>,
    /// Per category present in the suite.
    pub categories: Vec<CategoryResult>,
    /// Tests passed.
    pub tests_passed: usize,
    /// Every rollout of the suite.
    pub overall: RateCi,
    /// The ordinary evaluation's goal % (fraction), when it was run.
    pub goal_percentage: Option<MeanCi>,
}

impl ColumnResult {
    /// The result of test `id`.
    pub fn test(&self, id: &str) -> Option<&TestResult> {
        self.tests.iter().find(|t| t.id == id)
    }
}

/// What the reference columns say about the suite and where robustness and goal
/// % rank assistants differently.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Flags {
    /// Tests the `oracle` column fails: the situation does not reveal enough, or
    /// the predicate rejects a good behaviour.
    pub bad_tests: Vec<String>,
    /// Tests the `noop` column passes: they test nothing.
    pub vacuous_tests: Vec<String>,
    /// Pairs of assistants that robustness and goal % order oppositely.
    pub disagreements: Vec<String>,
}

/// A worker's agents for one (column, test, case).
struct Built {
    key: (usize, usize, usize),
    person: Box<dyn Agent>,
    assistant: Box<dyn Agent>,
}

/// Runs every test, case and rollout for every column. `on_rollout` is called
/// after each rollout (for progress).
pub fn run_suite(
    settings: &SuiteSettings,
    factory: &dyn AgentFactory,
    on_rollout: &(dyn Fn() + Sync),
) -> Result<Vec<ColumnResult>, RunError> {
    // Each test's cases, and its env config per column, made once: every
    // rollout reads them.
    let cases: Vec<Vec<Case>> = settings.tests.iter().map(RobustnessTest::cases).collect();
    let configs: Vec<Vec<Config>> = settings
        .columns
        .iter()
        .map(|spec| settings.tests.iter().map(|t| t.config(spec)).collect())
        .collect::<Result<_, _>>()?;
    // Work items grouped by (column, test), so a worker rebuilds agents only
    // when it moves on to another test or column.
    let mut items = Vec::new();
    for column in 0..settings.columns.len() {
        for (t, test_cases) in cases.iter().enumerate() {
            for case in 0..test_cases.len() {
                for rollout in 0..settings.rollouts {
                    items.push((column, t, case, rollout));
                }
            }
        }
    }
    let passed: Mutex<Vec<Option<bool>>> = Mutex::new(vec![None; items.len()]);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let worker = || -> Result<(), RunError> {
        let mut built: Option<Built> = None;
        let result = (|| {
            while !stop.load(Ordering::Relaxed) {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(column, t, c, rollout)) = items.get(k) else {
                    break;
                };
                let test = &settings.tests[t];
                let spec = &settings.columns[column];
                let case = &cases[t][c];
                let config = &configs[column][t];
                // The assistant is rebuilt per column and test; the partner
                // per case too (a stubborn cell moves with a translation).
                if built.as_ref().is_none_or(|b| b.key != (column, t, c)) {
                    let assistant = match built.take() {
                        Some(b) if (b.key.0, b.key.1) == (column, t) => b.assistant,
                        _ => factory.build(spec, ASSISTANT, config)?,
                    };
                    built = Some(Built {
                        key: (column, t, c),
                        person: run::partner_agent(test, case, config, factory)?,
                        assistant,
                    });
                }
                let Built {
                    person, assistant, ..
                } = built.as_mut().expect("built above");
                let outcome = run::play(
                    test,
                    case,
                    config,
                    person.as_mut(),
                    assistant.as_mut(),
                    rollout,
                )?;
                let ok = test.pass.holds(&outcome, case.offset);
                passed.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(ok);
                on_rollout();
            }
            Ok(())
        })();
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result
    };
    let results: Vec<Result<(), RunError>> = std::thread::scope(|s| {
        // Network columns wait on their model's inference thread: more episodes in
        // flight than cores lets its batches fill (as `evaluate`'s lanes do).
        let lanes = settings
            .columns
            .iter()
            .map(|c| default_lanes(c, c))
            .max()
            .unwrap_or(1);
        let workers = settings.threads.max(1).saturating_mul(lanes);
        let handles: Vec<_> = (0..workers.min(items.len().max(1)))
            .map(|_| s.spawn(worker))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let passed = passed.into_inner().unwrap_or_else(|e| e.into_inner());

    let mut columns = Vec::new();
    let mut k = 0;
    for spec in &settings.columns {
        let mut tests = Vec::new();
        for (test, test_cases) in settings.tests.iter().zip(&cases) {
            let mut results = Vec::new();
            for case in test_cases {
                let n = settings.rollouts;
                let ok = passed[k..k + n]
                    .iter()
                    .filter(|p| **p == Some(true))
                    .count();
                k += n;
                results.push(CaseResult {
                    case: case.label.clone(),
                    rate: RateCi::wilson(ok as u64, n as u64),
                });
            }
            tests.push(summarise_test(test, results));
        }
        columns.push(summarise_column(spec.clone(), tests));
    }
    Ok(columns)
}

fn summarise_test(test: &RobustnessTest, cases: Vec<CaseResult>) -> TestResult {
    let ok: u64 = cases.iter().map(|c| c.rate.successes).sum();
    let n: u64 = cases.iter().map(|c| c.rate.n).sum();
    let rate = RateCi::wilson(ok, n);
    let passed =
        n > 0 && rate.rate >= PASS_RATE && cases.iter().all(|c| c.rate.rate >= VARIANT_FLOOR);
    TestResult {
        id: test.id.clone(),
        category: test.category,
        rate,
        cases,
        passed,
    }
}

fn summarise_column(assistant: AgentSpec, tests: Vec<TestResult>) -> ColumnResult {
    let pooled = |tests: &mut dyn Iterator<Item = &TestResult>| {
        let (ok, n) = tests.fold((0, 0), |(ok, n), t| (ok + t.rate.successes, n + t.rate.n));
        RateCi::wilson(ok, n)
    };
    let categories = Category::ALL
        .into_iter()
        .filter(|c| tests.iter().any(|t| t.category == *c))
        .map(|category| {
            let of = || tests.iter().filter(move |t| t.category == category);
            CategoryResult {
                category,
                tests: of().count(),
                tests_passed: of().filter(|t| t.passed).count(),
                rate: pooled(&mut of()),
            }
        })
        .collect();
    ColumnResult {
        assistant,
        tests_passed: tests.iter().filter(|t| t.passed).count(),
        overall: pooled(&mut tests.iter()),
        categories,
        tests,
        goal_percentage: None,
    }
}

/// The flags of a finished run: bad tests from the `oracle` column, vacuous ones
/// from the `noop` column (either may be absent), and pairs of columns whose
/// robustness and goal % (where evaluated) order them oppositely.
pub fn flags(columns: &[ColumnResult]) -> Flags {
    let find = |spec: &str| columns.iter().find(|c| c.assistant.to_string() == spec);
    let mut flags = Flags::default();
    if let Some(oracle) = find("oracle") {
        flags.bad_tests = oracle
            .tests
            .iter()
            .filter(|t| !t.passed)
            .map(|t| t.id.clone())
            .collect();
    }
    if let Some(noop) = find("heuristic:noop") {
        flags.vacuous_tests = noop
            .tests
            .iter()
            .filter(|t| t.passed)
            .map(|t| t.id.clone())
            .collect();
    }
    for (i, a) in columns.iter().enumerate() {
        for b in &columns[i + 1..] {
            let (Some(ga), Some(gb)) = (&a.goal_percentage, &b.goal_percentage) else {
                continue;
            };
            let robust = a.overall.rate - b.overall.rate;
            let goal = ga.mean - gb.mean;
            if robust * goal < 0.0 {
                let (hi, lo) = if robust > 0.0 { (a, b) } else { (b, a) };
                flags.disagreements.push(format!(
                    "{} passes more robustness rollouts than {} ({:.0}% against {:.0}%) but builds less of the goal in evaluation ({:.1}% against {:.1}%)",
                    hi.assistant,
                    lo.assistant,
                    100.0 * hi.overall.rate,
                    100.0 * lo.overall.rate,
                    100.0 * hi.goal_percentage.as_ref().map_or(0.0, |g| g.mean),
                    100.0 * lo.goal_percentage.as_ref().map_or(0.0, |g| g.mean),
                ));
            }
        }
    }
    flags
}

/// The ordinary evaluation run beside the suite, so that robustness and goal %
/// can be compared ([`flags`]).
#[derive(Clone, Debug)]
pub struct GoalCheck {
    /// The env config episodes are played in.
    pub config: Config,
    /// Where goals come from (held-out houses).
    pub goals: GoalConfig,
    /// A name for `goals`.
    pub goals_label: String,
    /// The human models; every one plays `episodes` episodes.
    pub humans: Vec<AgentSpec>,
    /// Episodes per human model.
    pub episodes: usize,
    /// Worker threads.
    pub threads: usize,
}

/// `assistant`'s goal % with every human model of `check`, pooled over all
/// their episodes. `on_human` is told before each human model plays.
pub fn pooled_goal_percentage(
    assistant: &AgentSpec,
    check: &GoalCheck,
    factory: &dyn AgentFactory,
    on_human: &dyn Fn(&AgentSpec),
) -> Result<MeanCi, EvalError> {
    let mut values = Vec::new();
    for human in &check.humans {
        on_human(human);
        let settings = EvalSettings {
            config: check.config.clone(),
            goals: check.goals.clone(),
            goals_label: check.goals_label.clone(),
            human: human.clone(),
            assistant: assistant.clone(),
            episodes: check.episodes,
            seed: 0,
            threads: check.threads,
            lanes: default_lanes(human, assistant),
            starts: None,
            human_chat: None,
            record: None,
        };
        let evaluation = evaluate(&settings, factory, &|_| {})?;
        values.extend(
            evaluation
                .episodes
                .iter()
                .map(|e| e.outcome.goal_percentage),
        );
    }
    Ok(MeanCi::of(values))
}
