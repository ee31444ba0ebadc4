//! Every numeric option of every subcommand refuses extreme and malformed
//! values as a usage error (exit 2) naming the option and its range: never a
//! panic (exit 101) and never a silent replacement.

use std::any::TypeId;
use std::process::{Command, Output};

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use mbag::cli::Cli;
use mbag::cli::numeric::Seconds;

/// Refused by every numeric option.
const MALFORMED: &[&str] = &[
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "1e30",
    "99999999999999999999999",
    "",
    "x",
];

/// Options where 0 means something (seeds, "only at the end", no search, a free
/// port, no delay, role 0, `train assistant --iterations 0`: save the untrained
/// network).
const ZERO_ALLOWED: &[&str] = &[
    "seed",
    "iterations",
    "every",
    "sims",
    "selfplay-sims",
    "port",
    "max-wait-us",
    "world-delay-ms",
    // A chatting human who speaks in the step it notices.
    "chat-delay",
    "role",
    // A recording's step 0 is before its first step; no history and no
    // evaluation episodes are meaningful choices.
    "step",
    "history",
    "eval-episodes",
    // Remote self-play workers count from 0.
    "index",
    // A goal model is scored from an empty world up.
    "min-built",
    "max-built",
];

/// Every option taking a numeric value, as (subcommand path, long name).
fn numeric_options() -> Vec<(Vec<String>, String)> {
    let numeric = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<f32>(),
        TypeId::of::<f64>(),
        TypeId::of::<Seconds>(),
    ];
    let mut found = Vec::new();
    let mut stack = vec![(Vec::new(), Cli::command())];
    while let Some((path, command)) = stack.pop() {
        for arg in command.get_arguments() {
            let takes_value = arg.get_action().takes_values();
            let id = arg.get_value_parser().type_id();
            if let (Some(long), true) = (arg.get_long(), takes_value)
                && numeric.iter().any(|t| id == *t)
            {
                found.push((path.clone(), long.to_owned()));
            }
        }
        for sub in command.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name().to_owned());
            stack.push((p, sub.clone()));
        }
    }
    found
}

fn parse_error(path: &[String], long: &str, value: &str) -> Option<clap::Error> {
    // `--opt=value`, so that "-1" reaches the option's parser instead of being
    // read as another option (which clap refuses too, but not for its value).
    let flag = format!("--{long}={value}");
    let args = std::iter::once("mbag")
        .chain(path.iter().map(String::as_str))
        .chain([flag.as_str()]);
    Cli::try_parse_from(args).err()
}

#[test]
fn every_numeric_option_refuses_extreme_and_malformed_values() {
    let options = numeric_options();
    // The daemon's, evaluate's, the benches', the emulator's, ...: a sweep that
    // finds only a few options has lost its way.
    assert!(options.len() > 40, "{} numeric options", options.len());
    let mut failures = Vec::new();
    for (path, long) in &options {
        let zero = (!ZERO_ALLOWED.contains(&long.as_str())).then_some("0");
        for value in MALFORMED.iter().copied().chain(zero) {
            let where_ = format!("mbag {} --{long} {value:?}", path.join(" "));
            match parse_error(path, long, value) {
                None => failures.push(format!("{where_}: accepted")),
                Some(e) => {
                    let text = e.render().to_string();
                    let usage = matches!(
                        e.kind(),
                        ErrorKind::ValueValidation | ErrorKind::InvalidValue
                    );
                    if !usage || e.exit_code() != 2 || !text.contains(&format!("--{long}")) {
                        failures.push(format!(
                            "{where_}: {:?} (exit {}): {text}",
                            e.kind(),
                            e.exit_code()
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn mbag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(args)
        .output()
        .expect("running mbag")
}

/// The cases that panicked (exit 101) or were silently replaced, through the
/// binary: a usage error naming the option and the accepted range.
#[test]
fn daemon_durations_are_usage_errors_not_panics() {
    let cases: &[&[&str]] = &[
        &["play", "--step-period", "1e30"],
        &["watch", "--step-period", "1e30"],
        &["record", "--step-period", "1e30"],
        &["recording", "replay", "x.jsonl", "--step-period", "1e30"],
        &["play", "--start-timeout", "1e30"],
        &["watch", "--start-timeout", "nan"],
        &["record", "--start-timeout", "0"],
        &["bench", "daemon", "--seconds", "inf"],
        &["malmo", "emulator", "--clients", "0"],
        &[
            "evaluate",
            "--human",
            "heuristic:random",
            "--assistant",
            "none",
            "--episodes",
            "18446744073709551616",
        ],
    ];
    for args in cases {
        let out = mbag(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let option = args.iter().rev().nth(1).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            stderr.contains(option) && stderr.contains("expected"),
            "{args:?} names the option and the range: {stderr}"
        );
    }
}

/// A range that only the combination of options breaks is a clean error too.
#[test]
fn emulator_ports_past_65535_are_a_clean_error() {
    let out = mbag(&["malmo", "emulator", "--port", "65000", "--clients", "8"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("65535"), "{stderr}");
}

/// `--agent-address` is an IP address, and never "every interface".
#[test]
fn agent_address_refuses_every_interface() {
    for (value, words) in [("0.0.0.0", "every interface"), ("not-an-ip", "IP address")] {
        let out = mbag(&["play", "--agent-address", value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("--agent-address") && stderr.contains(words),
            "{stderr}"
        );
    }
}
