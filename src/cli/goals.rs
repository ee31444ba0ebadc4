//! `mbag goals stats|show`: what goal generators produce, to check that the
//! procedural houses resemble the held-out real ones.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::evaluate::{goal_config_named, parse_world_size};
use crate::sim::coords::WorldSize;
use crate::sim::goal::stats::{StatsSummary, render_layers, sample_goals, summarize};
use crate::sim::{BlockId, NUM_BLOCKS};

/// The `goals` subcommands.
#[derive(Debug, Subcommand)]
pub enum GoalsCommand {
    /// Mean statistics of each generator's goals, side by side: block shares (the
    /// ground dirt that add_grass lays around a house left out), fill ratio (blocks
    /// over bounding box), bounding box and height profile (per layer, blocks over
    /// the bounding box's footprint).
    ///
    /// Example: mbag goals stats --goals procedural_house --goals held_out --count 200
    Stats(StatsArgs),
    /// Goals drawn as text, layer by layer from the top.
    ///
    /// Example: mbag goals show --goals procedural_house --count 2 --seed 1
    Show(ShowArgs),
}

/// Where goals come from, shared by both subcommands.
#[derive(Debug, Args)]
pub struct GoalSource {
    /// World size, WxHxD (goals fit it less a one-cell border, as in the env).
    #[arg(long, value_name = "WxHxD", default_value = "11x10x10", value_parser = parse_world_size)]
    pub world_size: WorldSize,
    /// Folder of houses for `paper` and `held_out` (as `mbag evaluate --houses`).
    #[arg(long, value_name = "DIR")]
    pub houses: Option<PathBuf>,
    /// Seed of the goal rng.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
}

/// Arguments of `mbag goals stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Goal generators as `mbag evaluate --goals` names them; repeat for columns.
    #[arg(long, value_name = "GENERATOR", default_values_t = ["procedural_house".to_owned(), "held_out".to_owned()])]
    pub goals: Vec<String>,
    /// Goals drawn from each.
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::EPISODES))]
    pub count: usize,
    /// Where goals come from.
    #[command(flatten)]
    pub source: GoalSource,
}

/// Arguments of `mbag goals show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The goal generator, as `mbag evaluate --goals` names it.
    #[arg(long, value_name = "GENERATOR", default_value = "procedural_house")]
    pub goals: String,
    /// Goals to draw.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::EPISODES))]
    pub count: usize,
    /// Where goals come from.
    #[command(flatten)]
    pub source: GoalSource,
}

/// Runs a `goals` subcommand.
pub fn run(command: GoalsCommand) -> anyhow::Result<u8> {
    match command {
        GoalsCommand::Stats(args) => stats(args),
        GoalsCommand::Show(args) => show(args),
    }
}

fn stats(args: StatsArgs) -> anyhow::Result<u8> {
    let s = &args.source;
    let mut columns = Vec::new();
    for name in &args.goals {
        let config = goal_config_named(name, s.houses.as_deref())?;
        let goals = sample_goals(&config, s.world_size, args.count, s.seed)?;
        columns.push((name.as_str(), summarize(&goals)));
    }
    println!(
        "{} goals each, world {}, seed {}",
        args.count, s.world_size, s.seed
    );
    print_table(&columns);
    Ok(0)
}

fn print_table(columns: &[(&str, StatsSummary)]) {
    let width = columns.iter().map(|c| c.0.len()).max().unwrap_or(0).max(8);
    let row = |label: &str, cell: &dyn Fn(&StatsSummary) -> String| {
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, summary)| format!("{:>width$}", cell(summary)))
            .collect();
        println!("{label:<20} {}", cells.join("  "));
    };
    let names: Vec<String> = columns.iter().map(|c| format!("{:>width$}", c.0)).collect();
    println!("{:<20} {}", "", names.join("  "));
    for b in 2..NUM_BLOCKS {
        let name = BlockId(b as u8).to_string();
        row(&format!("share {name}"), &|s| format!("{:.3}", s.shares[b]));
    }
    row("fill ratio", &|s| {
        format!("{:.3}±{:.3}", s.fill_ratio, s.fill_ratio_std)
    });
    row("blocks", &|s| format!("{:.1}", s.blocks));
    row("bbox x,y,z", &|s| {
        format!(
            "{:.1},{:.1},{:.1}",
            s.extents[0], s.extents[1], s.extents[2]
        )
    });
    let height = columns
        .iter()
        .map(|c| c.1.height_profile.len())
        .max()
        .unwrap_or(0);
    for y in 0..height {
        row(&format!("layer y={y}"), &|s| {
            format!("{:.3}", s.height_profile.get(y).copied().unwrap_or(0.0))
        });
    }
}

fn show(args: ShowArgs) -> anyhow::Result<u8> {
    let s = &args.source;
    let config = goal_config_named(&args.goals, s.houses.as_deref())?;
    for (i, goal) in sample_goals(&config, s.world_size, args.count, s.seed)?
        .iter()
        .enumerate()
    {
        println!("goal {i} ({}), top layer first:", goal.size());
        print!("{}", render_layers(goal));
    }
    Ok(0)
}
