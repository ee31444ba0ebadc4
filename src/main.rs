use std::process::ExitCode;

use clap::Parser;
use mbag::cli::Cli;

fn main() -> ExitCode {
    match Cli::parse().run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
