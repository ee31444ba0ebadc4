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

use crate::chat::about::{Place, Scope};
use crate::chat::eval::{Scores, read_labelled, score};
use crate::chat::intent::{Flags, IntentParser, RuleParser};

/// The chat subcommands.
#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// Accuracy of the intent-flag parser per flag (accept, reject, inquiry,
    /// none) on labelled messages: JSON Lines of {"text": ..., "flag": ...}.
    ///
    /// Example: mbag chat eval --messages tests/chat/messages.jsonl --json chat.json
    Eval(EvalArgs),
    /// How the assistant reads messages: each one's flag and what it refers to
    /// (the last edit, a block, a place, everything).
    ///
    /// Example: mbag chat parse "no glass in the roof" "what are you building?"
    Parse(ParseArgs),
}

#[derive(Debug, Args)]
pub struct ParseArgs {
    /// The messages.
    #[arg(required = true, value_name = "MESSAGE")]
    pub messages: Vec<String>,
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
        ChatCommand::Parse(args) => {
            for text in &args.messages {
                let Flags { intent, about } = RuleParser.read(text);
                let mut parts = Vec::new();
                if let Some(b) = about.block {
                    parts.push(format!("block {b}"));
                }
                match about.place {
                    Some(Place::Cell(c)) => parts.push(format!("cell ({}, {}, {})", c.x, c.y, c.z)),
                    Some(Place::Plane(axis, at)) => parts.push(format!("{}={at}", axis.letter())),
                    Some(Place::There) => parts.push("there (the last edit's cell)".into()),
                    Some(Place::Part(p)) => parts.push(format!("the {}", p.name())),
                    None => {}
                }
                if parts.is_empty() {
                    parts.push(match about.scope {
                        Scope::LastAction => "the last edit".into(),
                        Scope::Everything => "everything".into(),
                    });
                }
                println!("{:<8} {:<40} {text:?}", intent.name(), parts.join(", "));
            }
            Ok(0)
        }
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
