//! `mbag verify-golden`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::golden::agents::AgentCheckStats;
use crate::golden::compare::FloatCounts;
use crate::golden::episode::replay;
use crate::golden::format::{GoldenEpisode, collect_episode_files};
use crate::golden::goal_transforms::verify_goal_transforms;

/// Arguments of `mbag verify-golden`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Golden episode files (`*.jsonl.gz`) or folders holding them.
    #[arg(required_unless_present = "goal_transforms")]
    pub paths: Vec<PathBuf>,
    /// Check a goal-transform case file (`goal_transforms.json.gz`) instead.
    #[arg(long, value_name = "FILE")]
    pub goal_transforms: Option<PathBuf>,
}

/// Runs the check; exit code 1 if anything failed.
pub fn run(args: VerifyArgs) -> anyhow::Result<u8> {
    if let Some(file) = args.goal_transforms {
        let outcomes = verify_goal_transforms(&file)
            .with_context(|| format!("checking goal transforms in {}", file.display()))?;
        let failed = outcomes.iter().filter(|o| !o.passed()).count();
        for outcome in outcomes.iter().filter(|o| !o.passed()) {
            println!("{outcome}");
        }
        println!("{} passed, {failed} failed", outcomes.len() - failed);
        return Ok(u8::from(failed > 0));
    }
    let files = collect_episode_files(&args.paths).context("listing golden episodes")?;
    if files.is_empty() {
        anyhow::bail!("no golden episode files (*.jsonl.gz) found in the given paths");
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut agent_checks = AgentCheckStats::default();
    let mut floats = FloatCounts::default();
    for file in &files {
        let result = GoldenEpisode::read(file).and_then(|ep| replay(&ep));
        if let Ok(report) = &result {
            agent_checks += report.agent_checks;
            floats += report.floats;
        }
        match result {
            Ok(report) if report.passed() => {
                log::info!("{}: {} steps match", report.episode_id, report.steps);
                passed += 1;
            }
            Ok(report) => {
                let m = report.mismatch.expect("a failed report has a mismatch");
                println!("FAIL {}: {m}", report.episode_id);
                failed += 1;
            }
            Err(e) => {
                // The error names the file already.
                println!("FAIL {e}");
                failed += 1;
            }
        }
    }
    if agent_checks.records > 0 {
        println!(
            "reference agents: {} agent_info records checked, {} probabilities ({} bit-exact)",
            agent_checks.records, agent_checks.probabilities, agent_checks.probabilities_exact
        );
    }
    println!(
        "environment floats: {} checked ({} bit-exact)",
        floats.checked, floats.exact
    );
    println!("{passed} passed, {failed} failed");
    Ok(u8::from(failed > 0))
}
