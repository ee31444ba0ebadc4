//! `mbag malmo ...`: Project Malmo tools: `mission-xml`, which prints the Mission
//! XML the reference would send for a game, and `emulator`, which runs emulated
//! Minecraft clients; other subcommands slot into [`MalmoCommand`].

use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{Context, bail, ensure};
use clap::{Args, Subcommand, ValueEnum};
use malmo_bridge::emulator::{FaultSpec, FaultSpecError};
use malmo_bridge::mission::{MissionLayout, Role};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use crate::sim::block::{BlockId, Blocks};
use crate::sim::config::Config;
use crate::sim::coords::{Cell, WorldSize};
use crate::sim::env::{Env, place_goal};
use crate::sim::goal::GoalConfig;
use crate::sim::presets::{BlockSupply, Game, Malmo, Player};

/// Malmo subcommands.
#[derive(Debug, Subcommand)]
pub enum MalmoCommand {
    /// Print the Mission XML the MBAG reference generates for one role of a game.
    ///
    /// The game is set up as the reference sets it up at `env.reset()`: the goal
    /// structure is generated into a world-sized goal (a one-cell border, the
    /// palette column in palette mode), the build area starts flat (plus the
    /// palette), and the XML draws the goal beside the build area at x + W + 1.
    /// The text is exactly the reference's `_get_mission_spec_xml` output with its
    /// leading whitespace removed (use --raw to keep it), so it validates with
    /// `xmllint --schema ../shared/malmo/schemas/Mission.xsd`.
    ///
    /// Players: by default the human-study seating, player 0 the AI `assistant`
    /// and the others humans (`human` when there is one, else `player_<i>`); a
    /// single player is the human `human`. --all-human seats humans named
    /// `player_<i>`, as the data-collection script does. Walls keep the players in
    /// the build area (restrict_players) unless --open is given.
    ///
    /// Examples:
    ///
    /// mbag malmo mission-xml > mission.xml
    ///
    /// mbag malmo mission-xml --spectator --role 2
    ///
    /// mbag malmo mission-xml --players 1 --world 6,6,6 --goal basic
    ///
    /// mbag malmo mission-xml --all-human --palette --goal ../shared/malmo/examples/mission_2p_humans_palette_11x10x10.inputs.json
    /// (reproduces that example's role-0 file byte for byte)
    MissionXml(MissionXmlArgs),
    /// Ask running Minecraft clients whether they answer, are idle and speak our
    /// Malmo version, and say what to do if not (the "Minecraft is not responding"
    /// help).
    ///
    /// It sends `MALMO_FIND_SERVER` for a made-up experiment (harmless), then
    /// reserves the client for one second and cancels at once to tell idle from
    /// busy (--no-reserve skips that), and checks the commands port (control port +
    /// 1000). Exit status 1 if any client cannot take a mission now.
    ///
    /// Examples:
    ///
    /// mbag malmo probe
    ///
    /// mbag malmo probe --clients 2
    ///
    /// mbag malmo probe --host 10.0.0.5 --port 10001 --no-reserve
    Probe(super::probe::ProbeArgs),

    /// Run emulated Minecraft clients (the MBAG fork of the Malmo mod) so that any
    /// Malmo agent, MalmoPython included, can run missions without Minecraft.
    ///
    /// Client i listens for mission control on port P+i and for commands on
    /// P+1000+i, as MBAG's launcher sets them up. The clients speak the mod's
    /// protocol (reservations, MALMO_FIND_SERVER, MissionInit, the echo, pings,
    /// observations at 20 Hz, commands, MissionEnded) over a small block world
    /// built from each mission's XML. What happens is logged (use -v for every
    /// request and mission, -vv for every command). It runs until Ctrl-C, or, with
    /// --until-stdin-closes, until its standard input closes.
    ///
    /// Examples:
    ///
    /// mbag -v malmo emulator --clients 2
    ///
    /// mbag -v malmo emulator --clients 3 --port 10000 --world-delay-ms 4000
    /// (role 0's world takes 4 s to create, so roles > 0 see MALMONOSERVERYET)
    ///
    /// mbag malmo emulator --until-stdin-closes < fifo
    /// (for tests that spawn it: closing its stdin stops it cleanly)
    ///
    /// mbag malmo emulator --clients 2 --port 0 --transcript t.jsonl
    /// (free ports; every control exchange and command line goes to t.jsonl)
    ///
    /// mbag malmo emulator --patched-mod
    /// (the mod with mbag's patches: a version string and block-change events)
    ///
    /// mbag -v malmo emulator --fault exit@2s --fault delay:observations=200ms@10
    /// (misbehaving clients: see --fault)
    Emulator(EmulatorArgs),
}

/// Arguments of `mbag malmo emulator`.
#[derive(Debug, Args)]
pub struct EmulatorArgs {
    /// How many clients to emulate.
    #[arg(long, default_value_t = 1, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::CLIENTS))]
    pub clients: usize,
    /// Client 0's mission-control port (commands ports are 1000 higher); 0 picks
    /// free ports and prints them.
    #[arg(long, default_value_t = malmo_bridge::agent::DEFAULT_CONTROL_PORT, value_parser = crate::cli::numeric::count::<u16>(crate::cli::numeric::PORT_OR_ZERO))]
    pub port: u16,
    /// How long role 0 takes to create its world, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 500, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::MILLIS))]
    pub world_delay_ms: u64,
    /// Stop when standard input reaches its end (as well as on Ctrl-C).
    #[arg(long)]
    pub until_stdin_closes: bool,
    /// Write what agents send to FILE as JSON lines, flushed as they come: every
    /// control exchange (`{"client":0,"channel":"control","received":"MALMO_...",
    /// "reply":"MALMOOK"}`) and every command line (`"channel":"commands"`), for
    /// comparing agents (the differential test of MalmoPython and mbag).
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Emulate the mod with mbag's `mod-patch/` series instead of the stock MBAG
    /// fork: clients answer `MALMO_MBAG_VERSION`, and observations carry
    /// `mbag_mod_version` and the players' `block_changes`.
    #[arg(long)]
    pub patched_mod: bool,
    /// Make a client misbehave (repeatable): KIND[:CHANNEL][=VALUE][@WHEN][#CLIENT]
    ///
    /// KIND is one of:
    ///   drop:CHANNEL                 close the mission's connection on CHANNEL
    ///   delay:CHANNEL=DURATION       wait DURATION before every write (commands:
    ///                                every line read) from then on
    ///   truncate:CHANNEL             write the next frame cut off halfway, then close
    ///   corrupt:CHANNEL[=HOW]        write garbage instead of the next frame
    ///                                (HOW: garbage (default) or hostile-length)
    ///   malformed-json               send the next observation as cut JSON
    ///   stop-pings                   stop pinging mission control
    ///   exit                         vanish mid-mission: every connection closes,
    ///                                no MissionEnded
    ///   fail-world-creation[=TEXT]   role 0's next world creation fails
    ///                                (MOD_FAILED_TO_CREATE_WORLD with TEXT)
    ///   mod-version=VERSION          answer control requests as that Malmo version
    ///
    /// CHANNEL is mission-control, observations, rewards, video or commands;
    /// truncate and corrupt take mission-control or observations, delay those
    /// and commands (the emulator writes nothing on rewards and video).
    ///
    /// @WHEN counts from the start of a mission on the client: @N after its Nth
    /// tick (one observation, 50 ms), @2s, @1.5s or @500ms after it starts. A
    /// scheduled fault fires once, in the first mission that lasts that long.
    /// Without @WHEN a fault is armed at start-up and fires at its first chance;
    /// fail-world-creation and mod-version act before missions and take no @WHEN.
    ///
    /// #CLIENT picks the client by index (default #0, role 0's client). A VALUE
    /// cannot contain @ or #.
    ///
    /// Examples:
    ///   --fault exit@2s                      client 0 vanishes 2 s into a mission
    ///   --fault delay:observations=200ms@10  observations 200 ms late from tick 10
    ///   --fault corrupt:mission-control=hostile-length@1s#1
    ///   --fault stop-pings@40 --fault drop:commands@5s
    ///   --fault fail-world-creation="disk full"
    ///   --fault mod-version=0.37.0
    #[arg(long, value_name = "SPEC", value_parser = parse_fault, verbatim_doc_comment)]
    pub fault: Vec<FaultSpec>,
}

/// `--fault`'s parser: the library's, whose error names what is wrong.
pub fn parse_fault(text: &str) -> Result<FaultSpec, FaultSpecError> {
    text.parse()
}

/// Where the goal comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoalSource {
    /// A simulator goal generator that needs no data set.
    Generator(BuiltinGoal),
    /// No goal structure: the goal is the flat world (plus the palette).
    Empty,
    /// A world-sized goal from a JSON file.
    File(PathBuf),
}

/// The goal generators `--goal` accepts by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BuiltinGoal {
    /// A small house: stone floor, plank walls with glass above, log corners and a
    /// cobblestone roof (needs a world at least 6 high).
    Tutorial,
    /// Two layers of cobblestone.
    Basic,
    /// The reference's simple overhang.
    SimpleOverhang,
    /// Random blocks (drawn with --seed).
    Random,
}

impl BuiltinGoal {
    fn generator_name(self) -> &'static str {
        match self {
            Self::Tutorial => "tutorial",
            Self::Basic => "basic",
            Self::SimpleOverhang => "simple_overhang",
            Self::Random => "random",
        }
    }
}

impl FromStr for GoalSource {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "empty" {
            return Ok(Self::Empty);
        }
        if let Ok(builtin) = BuiltinGoal::from_str(s, true) {
            return Ok(Self::Generator(builtin));
        }
        if s.ends_with(".json") {
            return Ok(Self::File(PathBuf::from(s)));
        }
        Err(format!(
            "{s:?} is neither a goal (tutorial, basic, simple-overhang, random, empty) nor a .json file"
        ))
    }
}

/// `W,H,D`, each at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorldArg(pub WorldSize);

impl FromStr for WorldArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let extents: Vec<usize> = s
            .split(',')
            .map(|part| part.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{s:?} is not W,H,D"))?;
        match extents[..] {
            [w, h, d] if w > 0 && h > 0 && d > 0 => Ok(Self(WorldSize::new(w, h, d))),
            _ => Err(format!("{s:?} is not W,H,D with three positive extents")),
        }
    }
}

/// Arguments of `mbag malmo mission-xml`.
#[derive(Debug, Args)]
pub struct MissionXmlArgs {
    /// Number of players (the spectator, if any, comes on top).
    #[arg(long, default_value_t = 2, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::PLAYERS))]
    pub players: usize,
    /// Seat only humans, named player_0, player_1, ... (data collection).
    #[arg(long)]
    pub all_human: bool,
    /// Add the spectator with 1920x1080 video (the reference's use_spectator);
    /// its role is the last one.
    #[arg(long)]
    pub spectator: bool,
    /// Limited blocks (inf_blocks false): a palette column at x = W-1 in the goal
    /// and the build area.
    #[arg(long)]
    pub palette: bool,
    /// No walls around the build area (restrict_players false).
    #[arg(long)]
    pub open: bool,
    /// World size W,H,D.
    #[arg(long, value_name = "W,H,D", default_value = "11,10,10")]
    pub world: WorldArg,
    /// The role whose document to print (role 0 alone has forceReset="true").
    #[arg(long, default_value_t = 0, value_parser = crate::cli::numeric::count::<u32>(crate::cli::numeric::ROLE))]
    pub role: u32,
    /// The goal: tutorial (the default, a small house built into the simulator),
    /// basic, simple-overhang, random, empty, or a JSON file holding a world-sized
    /// `[x][y][z]` array of MBAG block ids, or an object with `goal_blocks_xyz`
    /// (the `*.inputs.json` examples).
    #[arg(long, value_name = "NAME|FILE.json", default_value = "tutorial")]
    pub goal: GoalSource,
    /// Seed for the random goal.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the reference's raw string, with its newline and indentation before
    /// the XML declaration.
    #[arg(long)]
    pub raw: bool,
}

/// Runs a Malmo subcommand.
pub fn run(command: MalmoCommand) -> anyhow::Result<u8> {
    match command {
        MalmoCommand::MissionXml(args) => mission_xml(&args),
        MalmoCommand::Probe(args) => super::probe::run(&args),

        MalmoCommand::Emulator(args) => emulator(&args),
    }
}

fn emulator(args: &EmulatorArgs) -> anyhow::Result<u8> {
    use malmo_bridge::emulator::{Emulator, EmulatorConfig, Ports, Transcript};

    // Client i listens on port + i and its commands on 1000 above that.
    let last = u32::from(args.port)
        + args.clients as u32
        + u32::from(malmo_bridge::agent::COMMANDS_PORT_OFFSET)
        - 1;
    ensure!(
        args.port == 0 || last <= u32::from(u16::MAX),
        "--port {} with --clients {} needs ports up to {last} (commands ports are 1000 above \
         the control ports); the largest port is 65535",
        args.port,
        args.clients
    );
    let transcript = match &args.transcript {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            Some(Transcript::to_writer(file))
        }
        None => None,
    };
    let config = EmulatorConfig {
        transcript,
        ports: if args.port == 0 {
            Ports::Ephemeral
        } else {
            Ports::Fixed { base: args.port }
        },
        world_delay: std::time::Duration::from_millis(args.world_delay_ms),
        mod_flavour: if args.patched_mod {
            malmo_bridge::mod_patch::ModFlavour::Patched
        } else {
            malmo_bridge::mod_patch::ModFlavour::Stock
        },
        faults: args.fault.clone(),
        ..EmulatorConfig::local(args.clients)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(async {
        let emulator = Emulator::start(config)
            .await
            .context("starting the emulator")?;
        // Tests that spawn the emulator read the ports from this line.
        let ports: Vec<String> = emulator
            .clients()
            .iter()
            .map(|c| format!("{}/{}", c.control_port(), c.commands_port()))
            .collect();
        println!("emulator ready: control/commands ports {}", ports.join(" "));
        use std::io::Write as _;
        std::io::stdout().flush().context("writing to stdout")?;
        let stdin_closed = async {
            if args.until_stdin_closes {
                use tokio::io::AsyncReadExt as _;
                let mut stdin = tokio::io::stdin();
                let mut buf = [0u8; 1024];
                while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            result = tokio::signal::ctrl_c() => {
                result.context("listening for Ctrl-C")?;
                log::info!("Ctrl-C: shutting down");
            }
            () = stdin_closed => log::info!("standard input closed: shutting down"),
        }
        emulator.shutdown().await;
        Ok::<_, anyhow::Error>(())
    })?;
    // The stdin reader runs on a blocking thread that may still wait for input;
    // do not wait for it.
    runtime.shutdown_background();
    Ok(0)
}

fn mission_xml(args: &MissionXmlArgs) -> anyhow::Result<u8> {
    ensure!(args.players > 0, "--players must be at least 1");
    let config = game_config(args)?;
    let mut env = Env::new(config.clone());
    let mut rng = StdRng::seed_from_u64(args.seed);
    let size = env.size();
    let structure_size = env.goal_structure_size();
    let goal = match &args.goal {
        GoalSource::Generator(builtin) => {
            let mut generator = GoalConfig::from_env(builtin.generator_name(), &json!({}))?
                .build()
                .context("building the goal generator")?;
            let structure = generator
                .generate(structure_size, &mut rng)
                .with_context(|| {
                    format!(
                        "generating a {} goal of at most {structure_size}",
                        builtin.generator_name()
                    )
                })?;
            place_goal(size, &structure, !args.palette)
        }
        GoalSource::Empty => place_goal(size, &Blocks::air(structure_size), !args.palette),
        GoalSource::File(path) => goal_from_file(path, size, args.palette)?,
    };
    // The environment copies the palette column into the build area, as at reset.
    env.reset_with_goal(goal, &mut rng);
    let mission =
        crate::daemon::seam::mission::mission_for(&config, env.goal(), &env.state().blocks)?;
    let role = Role(args.role);
    ensure!(
        (role.0 as usize) < mission.num_agents(),
        "--role {} but the mission has {} roles",
        role.0,
        mission.num_agents()
    );
    let layout = if args.raw {
        MissionLayout::ReferenceRaw
    } else {
        MissionLayout::Reference
    };
    // Exactly the document's bytes, so `> file.xml` keeps them.
    print!("{}", mission.document(role).render(layout));
    Ok(0)
}

/// The reference config of the game the arguments describe.
fn game_config(args: &MissionXmlArgs) -> anyhow::Result<Config> {
    let players = (0..args.players)
        .map(|i| {
            let (name, human) = if args.all_human {
                (format!("player_{i}"), true)
            } else if args.players == 1 {
                ("human".to_owned(), true)
            } else if i == 0 {
                ("assistant".to_owned(), false)
            } else if args.players == 2 {
                ("human".to_owned(), true)
            } else {
                (format!("player_{i}"), true)
            };
            Player {
                name: Some(name),
                is_human: human,
                goal_visible: human,
            }
        })
        .collect();
    let mut game = Game::live(players, args.world.0);
    if args.palette {
        game.blocks = BlockSupply::Palette;
    }
    game.malmo = Some(Malmo {
        action_delay: None,
        restrict_players: !args.open,
        use_spectator: args.spectator,
    });
    game.config().context("building the game config")
}

/// A world-sized goal from JSON: `[x][y][z]` ids, bare or as `goal_blocks_xyz`.
/// In palette mode the palette column is written into it, as the reference's
/// `_generate_goal` does.
fn goal_from_file(path: &PathBuf, size: WorldSize, palette: bool) -> anyhow::Result<Blocks> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let grid = value.get("goal_blocks_xyz").unwrap_or(&value);
    let what = || format!("{}: goal_blocks_xyz", path.display());
    let mut ids = Vec::with_capacity(size.num_cells());
    let planes = grid
        .as_array()
        .with_context(|| format!("{} is not an array", what()))?;
    ensure!(
        planes.len() == size.width,
        "{} has width {}, the world {}",
        what(),
        planes.len(),
        size.width
    );
    for plane in planes {
        let rows = plane
            .as_array()
            .with_context(|| format!("{}: not a 3-d array", what()))?;
        ensure!(
            rows.len() == size.height,
            "{} has height {}, the world {}",
            what(),
            rows.len(),
            size.height
        );
        for row in rows {
            let column = row
                .as_array()
                .with_context(|| format!("{}: not a 3-d array", what()))?;
            ensure!(
                column.len() == size.depth,
                "{} has depth {}, the world {}",
                what(),
                column.len(),
                size.depth
            );
            for id in column {
                match id.as_u64().and_then(|id| u8::try_from(id).ok()) {
                    Some(id) if usize::from(id) < crate::sim::NUM_BLOCKS => ids.push(id),
                    _ => bail!("{}: {id} is no MBAG block id", what()),
                }
            }
        }
    }
    let states = vec![0; ids.len()];
    let mut goal = Blocks::from_raw(size, ids, states);
    if palette {
        let x = size.width as i32 - 1;
        for (z, block) in BlockId::PLACEABLE.iter().enumerate().take(size.depth) {
            goal.set(Cell::new(x, 2, z as i32), *block);
        }
    }
    Ok(goal)
}
