use std::process::ExitCode;

use clap::Parser;
use mbag::cli::Cli;

fn main() -> ExitCode {
    mbag::nn::allocator::keep_freed_memory();
    mbag::nn::tf32::keep_f32_exact_on_cuda();
    match Cli::parse().run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {}", describe(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line. Library errors already name their cause in
/// their message (for callers that print only that), so a cause whose text is
/// already there is not repeated.
fn describe(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}
