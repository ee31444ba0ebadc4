//! `mbag chat`: the chat tools (issue 22).
//!
//! # JSON (`chat eval --json FILE`)
//!
//! `{"messages": FILE, "flags": {"accept": {"count", "correct", "accuracy"}, ...},
//! "overall": {...}, "mistakes": [[text, label, parsed], ...]}`

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::chat::eval::{Scores, read_labelled, score};
use crate::chat::intent::RuleParser;

/// The chat subcommands.
#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// Accuracy of the intent-flag parser per flag (accept, reject, inquiry,
    /// none) on labelled messages: JSON Lines of {"text": ..., "flag": ...}.
    ///
    /// Example: mbag chat eval --messages tests/chat/messages.jsonl --json chat.json
    Eval(EvalArgs),
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The labelled messages.
    #[arg(long, value_name = "FILE", default_value = "tests/chat/messages.jsonl")]
    pub messages: PathBuf,
    /// Write the scores as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print every message the parser got wrong.
    #[arg(long)]
    pub mistakes: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    messages: &'a std::path::Path,
    #[serde(flatten)]
    scores: &'a Scores,
}

/// Runs a chat subcommand.
pub fn run(command: ChatCommand) -> anyhow::Result<u8> {
    match command {
        ChatCommand::Eval(args) => {
            let messages = read_labelled(&args.messages)?;
            let scores = score(&RuleParser, &messages);
            println!(
                "{:<8} {:>6} {:>8} {:>9}",
                "flag", "count", "correct", "accuracy"
            );
            for (flag, s) in &scores.flags {
                println!(
                    "{flag:<8} {:>6} {:>8} {:>8.1}%",
                    s.count,
                    s.correct,
                    100.0 * s.accuracy
                );
            }
            let o = &scores.overall;
            println!(
                "{:<8} {:>6} {:>8} {:>8.1}%",
                "all",
                o.count,
                o.correct,
                100.0 * o.accuracy
            );
            if args.mistakes {
                for (text, label, got) in &scores.mistakes {
                    println!(
                        "  {text:?}: labelled {}, parsed {}",
                        label.name(),
                        got.name()
                    );
                }
            }
            if let Some(path) = &args.json {
                let report = Report {
                    messages: &args.messages,
                    scores: &scores,
                };
                std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(0)
        }
    }
}
