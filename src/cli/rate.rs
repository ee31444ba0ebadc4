//! `mbag rate`: pairwise human rating of episodes and the TrueSkill leaderboard.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::cli::numeric::{EPISODES, count};
use crate::printable::printable;
use crate::rate::db::{self, Db};
use crate::rate::leaderboard::{self, Leaderboard};
use crate::rate::serve::{self, ServeSettings};
use crate::rate::{episode, pairs};

/// The subcommands of `mbag rate`.
#[derive(Debug, Subcommand)]
pub enum RateCommand {
    /// Choose pairs of episodes to rate: same goal, different agents, those
    /// whose answers most reduce the ratings' uncertainty; stored as pending
    /// comparisons in the database (made if missing).
    #[command(after_help = "\
The agent of an episode is its assistant seat's agent spec, or `human` where a person
sat there (converted human episodes; a person building alone is `human` too, a model
alone `none`). The goal is a hash of the header's goal grid. Each pick maximises the
expected drop of sigma_a^2 + sigma_b^2 under TrueSkill (high sigma, close mu), and counts
as answered for the next pick, so one call spreads over the agents (src/rate/pairs.rs).

Examples:
  mbag rate pairs --recordings /tmp/human --db ratings.sqlite
  mbag rate pairs --recordings runs/episodes --db ratings.sqlite --count 40")]
    Pairs(PairsArgs),
    /// Serve the rating page: the next pending pair side by side (two `mbag view`
    /// players) with the questions; each answer is timed and stored with the
    /// rater's id.
    #[command(after_help = "\
Open the printed address (add ?rater=ID, or type an id on the page). The page asks which
side did better overall (left/right/draw), four comparative questions (built more of the
goal, broke fewer correct blocks, helped the person more, more human-like; each
left/draw/right/n.a.) and a justification of at least 100 characters, checked by the
server too. Agents' names are hidden. An answer is kept in the browser until the server
confirms it, so a killed server loses nothing: restart it on the same address and the
page sends it again (a repeated answer is stored once). Several raters may rate at once.

Examples:
  mbag rate serve --db ratings.sqlite --recordings /tmp/human
  mbag rate serve --db ratings.sqlite --recordings /tmp/human --listen 127.0.0.1:8790")]
    Serve(ServeArgs),
    /// Rate the agents (humans included) with TrueSkill from the answers:
    /// mu and sigma per agent, sorted by the conservative score mu - 3 sigma,
    /// and per-factor scores.
    #[command(after_help = "\
Draws count as draws. Answers are taken in the order they were submitted. Agents that
are catalogued but were never judged are listed with the default rating (mu 25, sigma
8.33).

Examples:
  mbag rate leaderboard --db ratings.sqlite
  mbag rate leaderboard --db ratings.sqlite --json leaderboard.json")]
    Leaderboard(LeaderboardArgs),
}

/// Arguments of `mbag rate pairs`.
#[derive(Debug, Args)]
pub struct PairsArgs {
    /// The folder of recordings (searched recursively); the database keeps
    /// paths relative to it.
    #[arg(long, value_name = "DIR")]
    pub recordings: PathBuf,
    /// The rating database (SQLite), made if missing.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// How many comparisons to add.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = count::<usize>(EPISODES))]
    pub count: usize,
}

/// Arguments of `mbag rate serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The rating database made by `mbag rate pairs`.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// The folder of recordings given to `mbag rate pairs`.
    #[arg(long, value_name = "DIR")]
    pub recordings: PathBuf,
    /// Where to listen; loopback unless you name another interface.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8790")]
    pub listen: SocketAddr,
}

/// Arguments of `mbag rate leaderboard`.
#[derive(Debug, Args)]
pub struct LeaderboardArgs {
    /// The rating database.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// Also write the leaderboard as JSON (`mbag-rate-leaderboard/1`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `mbag rate ...`.
pub fn run(command: RateCommand) -> anyhow::Result<u8> {
    match command {
        RateCommand::Pairs(args) => run_pairs(args),
        RateCommand::Serve(args) => run_serve(args),
        RateCommand::Leaderboard(args) => run_leaderboard(args),
    }
}

fn run_pairs(args: PairsArgs) -> anyhow::Result<u8> {
    let found = episode::catalogue(&args.recordings)?;
    anyhow::ensure!(
        !found.is_empty(),
        "no recordings (*.jsonl, *.jsonl.gz) under {}",
        args.recordings.display()
    );
    let mut db = Db::open(&args.db)?;
    db.upsert_episodes(&found)?;
    let episodes = db.episodes()?;
    let comparisons = db.comparisons()?;
    let ratings = leaderboard::ratings(&db.answers()?);
    let picks = pairs::choose(&episodes, &comparisons, &ratings, args.count);
    let ids = db.add_comparisons(
        &picks.iter().map(|p| (p.left, p.right)).collect::<Vec<_>>(),
        db::now(),
    )?;
    let path_of = |id: i64| {
        episodes
            .iter()
            .find(|e| e.id == id)
            .map_or("?", |e| e.info.path.as_str())
    };
    for (id, p) in ids.iter().zip(&picks) {
        // Agents and paths come from the recordings' headers and names.
        println!(
            "comparison {id}: {} vs {} on goal {} (expected variance drop {:.2}): {} | {}",
            printable(&p.left_agent),
            printable(&p.right_agent),
            p.goal,
            p.expected_gain,
            printable(path_of(p.left)),
            printable(path_of(p.right))
        );
    }
    let pending = db.comparisons()?.iter().filter(|c| c.answers == 0).count();
    println!(
        "{} episodes catalogued; added {} comparisons ({} asked); {pending} pending in {}",
        found.len(),
        picks.len(),
        args.count,
        args.db.display()
    );
    if picks.len() < args.count {
        println!(
            "fewer than asked: every pair of episodes of different agents on a common goal \
             is already pending"
        );
    }
    Ok(0)
}

fn run_serve(args: ServeArgs) -> anyhow::Result<u8> {
    // Made (or checked) here, so the page's first request finds the tables.
    let db = Db::open(&args.db)?;
    let pending = db.comparisons()?.iter().filter(|c| c.answers == 0).count();
    drop(db);
    let settings = ServeSettings {
        db: args.db.clone(),
        recordings: args.recordings.clone(),
    };
    super::local_server::serve_until_ctrl_c(
        args.listen,
        "other machines can rate and see these episodes",
        serve::bind(args.listen),
        move |addr| format!("rating at http://{addr}/  ({pending} pairs pending; Ctrl-C to stop)"),
        move |listener, stop| serve::serve(listener, settings, stop),
    )
}

fn run_leaderboard(args: LeaderboardArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(
        args.db.is_file(),
        "no rating database at {}; make one with `mbag rate pairs`",
        args.db.display()
    );
    let db = Db::connect(&args.db)?;
    let agents = db.episodes()?.into_iter().map(|e| e.info.agent);
    let board = Leaderboard::new(agents, &db.answers()?);
    print!("{}", board.table());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&board)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(0)
}
