//! `mbag malmo probe`: is Minecraft there, idle and speaking our Malmo version?

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use malmo_bridge::agent::{ClientAddr, DEFAULT_CONTROL_PORT, probe};

/// Arguments of `mbag malmo probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Mission-control port(s) to ask (repeatable). Default: 10000, or
    /// 10000..10000+N with --clients N.
    #[arg(long = "port", value_name = "P", value_parser = crate::cli::numeric::count::<u16>(crate::cli::numeric::PORT))]
    pub ports: Vec<u16>,
    /// Ask the N clients of a local MBAG pool (ports 10000+i).
    #[arg(long, value_name = "N", conflicts_with = "ports", value_parser = crate::cli::numeric::count::<u16>(crate::cli::numeric::CLIENTS))]
    pub clients: Option<u16>,
    /// Host the clients run on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// How long to wait for each answer, in milliseconds.
    #[arg(long, default_value_t = 3000, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::POSITIVE_MILLIS))]
    pub timeout_ms: u64,
    /// Only check that the clients answer; skip the brief reservation that tells
    /// idle from busy and checks the Malmo version.
    #[arg(long)]
    pub no_reserve: bool,
}

/// Probes every client asked for and prints one line each, with advice for
/// those mbag cannot use; exit status 1 if any is unusable.
pub fn run(args: &ProbeArgs) -> anyhow::Result<u8> {
    let ports: Vec<u16> = match (args.clients, args.ports.is_empty()) {
        (Some(n), _) => (0..n).map(|i| DEFAULT_CONTROL_PORT + i).collect(),
        (None, true) => vec![DEFAULT_CONTROL_PORT],
        (None, false) => args.ports.clone(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let deadline = Duration::from_millis(args.timeout_ms);
    let mut unusable = 0;
    for port in ports {
        let client = ClientAddr::new(args.host.clone(), port);
        let report = runtime.block_on(probe(&client, deadline, !args.no_reserve));
        println!("{report}");
        if let Some(advice) = report.advice() {
            println!("  what to do: {advice}");
        }
        if !report.is_usable() {
            unusable += 1;
        }
    }
    Ok(u8::from(unusable > 0))
}
