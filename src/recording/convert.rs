//! Converting the shared human data (`mbag-human-episode/1`,
//! `../shared/data/README.md` section 3) into recordings, so that the human
//! episodes and new recordings are one dataset.
//!
//! Actions, rewards, sync edits, states and times are the source's. The source has
//! no per-player infos, so the converter steps the simulator alongside and records
//! its infos and footer metrics; `verify` then checks the source's states and
//! rewards against an independent replay.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::codec::{ActionRecord, B64, Float, parse_iso_utc};
use super::error::RecordingError;
use super::footer::{EndReason, EndRecord};
use super::header::{Controller, Header, InitialRecord, PlayerEntry, Role, Source, SourceKind};
use super::record::footer_from;
use super::state::{StateView, apply_sync, initial_record};
use super::step::{PlayerInfo, StepRecord, SyncEdits};
use super::verify::env_for_header;
use super::writer::{Fsync, RecordingWriter, gzip_file};
use crate::sim::block::{BlockId, Blocks};
use crate::sim::config::Config;
use crate::sim::coords::PlayerPos;
use crate::sim::env::Env;
use crate::sim::inventory::{Inventory, Slot};
use crate::sim::state::EnvState;

/// The source format this module reads.
pub const HUMAN_FORMAT: &str = "mbag-human-episode/1";

#[derive(Debug, Deserialize)]
struct HumanHeader {
    format: String,
    episode_id: String,
    #[serde(default)]
    source: Value,
    split: String,
    #[serde(default)]
    participant_id: Value,
    #[serde(default)]
    house_id: Value,
    human_subject_player: usize,
    players: Vec<HumanPlayer>,
    env_config: Value,
    #[serde(default)]
    env_config_note: Value,
    #[serde(default)]
    timestep_unit: Value,
    #[serde(default)]
    stats: Value,
    goal: HumanGrid,
    initial: HumanInitial,
}

#[derive(Debug, Deserialize)]
struct HumanPlayer {
    index: usize,
    #[serde(default)]
    role: String,
}

#[derive(Debug, Deserialize)]
struct HumanGrid {
    blocks: B64,
    block_states: B64,
}

#[derive(Debug, Deserialize)]
struct HumanInitial {
    blocks: B64,
    block_states: B64,
    env_locations: Vec<[f64; 3]>,
    li: B64,
    inventories: Option<Vec<[i32; 10]>>,
}

#[derive(Debug, Deserialize)]
struct HumanSync {
    #[serde(default)]
    blocks: Vec<[i32; 4]>,
    #[serde(default)]
    block_states: Vec<[i32; 4]>,
    #[serde(default)]
    pos: Vec<[i32; 4]>,
    #[serde(default)]
    li: Vec<[i32; 4]>,
    #[serde(default)]
    inv: Vec<[i32; 3]>,
}

#[derive(Debug, Deserialize)]
struct HumanState {
    pos: Vec<[i32; 3]>,
    blocks: Option<B64>,
    block_states: Option<B64>,
    li: Option<B64>,
    inv: Option<Vec<[i32; 10]>>,
}

#[derive(Debug, Deserialize)]
struct HumanLine {
    t: u64,
    a: Vec<[i64; 6]>,
    r: f64,
    #[serde(default)]
    e: Option<Vec<[i64; 6]>>,
    #[serde(default)]
    sync: Option<HumanSync>,
    #[serde(default)]
    s: Option<HumanState>,
    #[serde(default)]
    time: Value,
    #[serde(default)]
    env_t: Option<u64>,
    #[serde(default)]
    row: Value,
    #[serde(default)]
    idle: Value,
    #[serde(default)]
    rr: Value,
    #[serde(default)]
    failed: Value,
}

/// What converting one episode produced.
#[derive(Clone, Debug)]
pub struct Converted {
    /// The recording written.
    pub path: PathBuf,
    /// Its episode id.
    pub episode_id: String,
    /// Step lines written.
    pub steps: usize,
}

fn parse_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    line: usize,
    text: &str,
) -> Result<T, RecordingError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| RecordingError::field(path, line, e.path().to_string(), e.into_inner()))
}

fn centred(x: i32, y: i32, z: i32) -> [f64; 3] {
    let p = PlayerPos::centred_in(crate::sim::coords::Cell::new(x, y, z));
    [p.x, p.y, p.z]
}

/// The wall-clock time of a source line: the tutorial's one ISO time, or the
/// latest of the study's per-player row times.
fn wall_time(time: &Value) -> Option<f64> {
    match time {
        Value::String(s) => parse_iso_utc(s),
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str().and_then(parse_iso_utc))
            .reduce(f64::max),
        _ => None,
    }
}

/// Converts one `mbag-human-episode/1` file into `out_dir/<episode_id>.jsonl`
/// (`.jsonl.gz` with `gzip`).
pub fn convert_human_episode(
    src: &Path,
    out_dir: &Path,
    gzip: bool,
) -> Result<Converted, RecordingError> {
    let file = std::fs::File::open(src).map_err(RecordingError::io(src))?;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let mut lines = reader.lines().enumerate();
    let (_, first) = lines.next().ok_or_else(|| RecordingError::Structure {
        path: src.to_owned(),
        line: 1,
        message: "empty file".into(),
    })?;
    let first = first.map_err(RecordingError::io(src))?;
    let h: HumanHeader = parse_line(src, 1, &first)?;
    let bad = |line: usize, field: &str, m: String| RecordingError::field(src, line, field, m);
    if h.format != HUMAN_FORMAT {
        return Err(bad(
            1,
            "format",
            format!("{:?}, expected {HUMAN_FORMAT:?}", h.format),
        ));
    }
    // Replay as the data README says: Malmo off and no termination on completion.
    let mut env_config = h.env_config.clone();
    if let Some(obj) = env_config.as_object_mut() {
        obj.insert("terminate_on_goal_completion".into(), Value::Bool(false));
        if let Some(m) = obj.get_mut("malmo").and_then(Value::as_object_mut) {
            m.insert("use_malmo".into(), Value::Bool(false));
        }
    }
    strip_legacy_keys(&mut env_config).map_err(|m| bad(1, "env_config", m))?;
    let config = Config::from_json(&env_config).map_err(|e| bad(1, "env_config", e.to_string()))?;
    let size = config.world_size;
    let n = config.num_players;
    let cells = size.num_cells();
    for (name, len) in [
        ("goal.blocks", h.goal.blocks.0.len()),
        ("goal.block_states", h.goal.block_states.0.len()),
        ("initial.blocks", h.initial.blocks.0.len()),
        ("initial.block_states", h.initial.block_states.0.len()),
        ("initial.li", h.initial.li.0.len()),
    ] {
        if len != cells {
            return Err(bad(
                1,
                name,
                format!("{len} bytes, expected {cells} for a {size} world"),
            ));
        }
    }
    if h.initial.env_locations.len() != n || h.players.len() != n {
        return Err(bad(
            1,
            "initial.env_locations",
            format!("expected one entry per player ({n})"),
        ));
    }
    // Tutorial inventories are counts; the env's slots fill in its own order. The
    // study tracked none (infinite blocks): humans hold one of each block, as after
    // the env's reset.
    let inventories = (0..n)
        .map(|p| {
            let mut inv = Inventory::default();
            match &h.initial.inventories {
                Some(counts) => {
                    let c = counts.get(p).ok_or_else(|| {
                        bad(1, "initial.inventories", format!("no entry for player {p}"))
                    })?;
                    for (b, &k) in c.iter().enumerate() {
                        if k > 0 && !inv.try_give(BlockId(b as u8), k) {
                            return Err(bad(
                                1,
                                "initial.inventories",
                                format!("player {p}: {k} of block {b} do not fit"),
                            ));
                        }
                    }
                }
                None if config.abilities.inf_blocks && config.players[p].is_human => {
                    for b in BlockId::PLACEABLE {
                        inv.set_slot(usize::from(b.0), Slot { block: b, count: 1 });
                    }
                }
                None => {}
            }
            Ok(inv)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let initial_state = EnvState {
        blocks: Blocks::from_raw(
            size,
            h.initial.blocks.0.clone(),
            h.initial.block_states.0.clone(),
        ),
        last_interacted: h.initial.li.0.iter().map(|&v| v as i8).collect(),
        player_positions: h
            .initial
            .env_locations
            .iter()
            .map(|&p| PlayerPos::from(p))
            .collect(),
        inventories,
        timestep: 0,
        timesteps_with_no_progress: 0,
        maximum_goal_percentages: vec![0.0; n],
    };
    let initial: InitialRecord = initial_record(&initial_state);
    let players = h
        .players
        .iter()
        .map(|p| PlayerEntry {
            index: p.index,
            role: if p.index == h.human_subject_player {
                Role::Human
            } else {
                Role::Assistant
            },
            controller: Controller::Person,
            agent: None,
            models: Vec::new(),
            note: (!p.role.is_empty()).then(|| p.role.clone()),
        })
        .collect();
    let origin = json!({
        "file": src.file_name().map(|f| f.to_string_lossy().into_owned()),
        "format": HUMAN_FORMAT,
        "split": h.split,
        "participant_id": h.participant_id,
        "house_id": h.house_id,
        "human_subject_player": h.human_subject_player,
        "source": h.source,
        "env_config": h.env_config,
        "env_config_note": h.env_config_note,
        "timestep_unit": h.timestep_unit,
        "stats": h.stats,
    });
    let header = Header::new(
        h.episode_id.clone(),
        Source {
            kind: SourceKind::Converted,
            description: Some(format!(
                "{} human episode from ../shared/data/human (participant {}); config with malmo.use_malmo and terminate_on_goal_completion off for replay",
                h.split, h.participant_id
            )),
            origin: Some(origin),
        },
        config.to_json(),
        0,
        crate::sim::action::FlatLayout::new(size, config.abilities).len(),
        super::state::grid_record(&Blocks::from_raw(
            size,
            h.goal.blocks.0.clone(),
            h.goal.block_states.0.clone(),
        )),
        initial,
        players,
    );
    let mut env: Env = env_for_header(&header, src)?;
    let layout = *env.layout();
    let mut previous = StateView::of(env.state());
    let mut recorded = previous.clone();
    recorded.timestep = None;

    std::fs::create_dir_all(out_dir).map_err(RecordingError::io(out_dir))?;
    let plain = out_dir.join(format!("{}.jsonl", h.episode_id));
    let mut writer = RecordingWriter::create(&plain, &header, Fsync::Never)?;
    let mut infos = Vec::new();
    let mut rewards = Vec::new();
    for (i, text) in lines {
        let line = i + 1;
        let text = text.map_err(RecordingError::io(src))?;
        if text.trim().is_empty() {
            continue;
        }
        let l: HumanLine = parse_line(src, line, &text)?;
        if l.a.len() != n {
            return Err(bad(
                line,
                "a",
                format!("{} actions for {n} players", l.a.len()),
            ));
        }
        let to_record =
            |field: &str,
             raw: &[i64; 6]|
             -> Result<(crate::sim::action::Action, ActionRecord), RecordingError> {
                let [ty, x, y, z, b, flat] = *raw;
                let rec = ActionRecord(ty, x, y, z, b, None);
                let action = rec.to_action(size).map_err(|m| bad(line, field, m))?;
                let rec = ActionRecord::new(action, size, &layout);
                // The source writes 0 for types outside the flat space.
                if rec.5.map_or(0, i64::from) != flat {
                    return Err(bad(
                        line,
                        field,
                        format!("flat index {flat}, but the layout gives {:?}", rec.5),
                    ));
                }
                Ok((action, rec))
            };
        let mut actions = Vec::with_capacity(n);
        let mut a = Vec::with_capacity(n);
        for (p, raw) in l.a.iter().enumerate() {
            let (action, rec) = to_record(&format!("a[{p}]"), raw)?;
            actions.push(action);
            a.push(rec);
        }
        let e = match &l.e {
            Some(e) if e.len() == n => e
                .iter()
                .enumerate()
                .map(|(p, raw)| to_record(&format!("e[{p}]"), raw).map(|x| x.1))
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(bad(line, "e", format!("expected {n} actions"))),
            None => a.clone(),
        };
        let outcome = env
            .step(&actions)
            .map_err(|err| bad(line, "a", err.to_string()))?
            .clone();
        let sync = l.sync.map(|s| SyncEdits {
            blocks: s.blocks,
            block_states: s.block_states,
            pos: s
                .pos
                .iter()
                .map(|&[p, x, y, z]| {
                    let c = centred(x, y, z);
                    [f64::from(p), c[0], c[1], c[2]]
                })
                .collect(),
            li: s.li,
            inv: s.inv,
            slots: Vec::new(),
        });
        if let Some(sync) = &sync {
            let mut state = env.state().clone();
            apply_sync(&mut state, sync).map_err(|m| bad(line, "sync", m))?;
            env.set_state(state);
        }
        let state = match &l.s {
            Some(s) => {
                let mut now = recorded.clone();
                if s.pos.len() != n {
                    return Err(bad(line, "s.pos", format!("expected {n} entries")));
                }
                now.pos = s.pos.iter().map(|&[x, y, z]| centred(x, y, z)).collect();
                for (field, new, into) in [
                    ("s.blocks", &s.blocks, &mut now.ids),
                    ("s.block_states", &s.block_states, &mut now.states),
                ] {
                    if let Some(v) = new {
                        if v.0.len() != cells {
                            return Err(bad(
                                line,
                                field,
                                format!("{} bytes, expected {cells}", v.0.len()),
                            ));
                        }
                        into.clone_from(&v.0);
                    }
                }
                if let Some(li) = &s.li {
                    if li.0.len() != cells {
                        return Err(bad(
                            line,
                            "s.li",
                            format!("{} bytes, expected {cells}", li.0.len()),
                        ));
                    }
                    now.li = li.0.iter().map(|&v| v as i8).collect();
                }
                if let Some(inv) = &s.inv {
                    now.inv = Some(inv.clone());
                } else if h.initial.inventories.is_none() {
                    now.inv = None;
                }
                now.timestep = None;
                recorded = now.clone();
                Some(previous.advance_to(now))
            }
            // The study's last line has no recorded state after it.
            None => None,
        };
        let mut src_fields = serde_json::Map::new();
        for (k, v) in [
            ("env_t", json!(l.env_t)),
            ("time", l.time.clone()),
            ("row", l.row),
            ("idle", l.idle),
            ("rr", l.rr),
            ("failed", l.failed),
        ] {
            if !v.is_null() {
                src_fields.insert(k.into(), v);
            }
        }
        src_fields.insert("t".into(), json!(l.t));
        let record = StepRecord {
            t: infos.len() as u64,
            a,
            e,
            r: vec![Float(l.r); n],
            done: outcome.done,
            info: Some(outcome.infos.iter().map(PlayerInfo::from).collect()),
            wall: wall_time(&l.time),
            sync,
            state,
            obs: None,
            src: Some(Value::Object(src_fields)),
            chat: None,
            explain: None,
        };
        writer.append(&record)?;
        infos.push(outcome.infos.clone());
        rewards.push(vec![l.r; n]);
    }
    let footer = footer_from(
        &env,
        &infos,
        &rewards,
        n,
        EndRecord {
            reason: EndReason::Truncated,
            message: Some("the source episode ends here (the session's time was up or the participant stopped)".into()),
        },
    );
    writer.finish(&footer)?;
    let path = if gzip {
        let gz = out_dir.join(format!("{}.jsonl.gz", h.episode_id));
        gzip_file(&plain, &gz)?;
        std::fs::remove_file(&plain).map_err(RecordingError::io(&plain))?;
        gz
    } else {
        plain
    };
    Ok(Converted {
        path,
        episode_id: h.episode_id,
        steps: infos.len(),
    })
}

/// Removes `rewards.own_reward_prop_horizon` (global and per player), a key of the
/// 2023 reference that the tutorial configs carry as `null`; the current reference
/// and this simulator have no such key, and `null` meant "no schedule", so dropping
/// it changes nothing. A non-null value would change rewards and is refused.
fn strip_legacy_keys(config: &mut Value) -> Result<(), String> {
    let strip = |rewards: Option<&mut Value>, at: &str| -> Result<(), String> {
        if let Some(r) = rewards.and_then(Value::as_object_mut)
            && let Some(v) = r.remove("own_reward_prop_horizon")
            && !v.is_null()
        {
            return Err(format!(
                "{at}.own_reward_prop_horizon = {v} is not supported (only null)"
            ));
        }
        Ok(())
    };
    strip(config.get_mut("rewards"), "rewards")?;
    if let Some(players) = config.get_mut("players").and_then(Value::as_array_mut) {
        for (i, p) in players.iter_mut().enumerate() {
            strip(p.get_mut("rewards"), &format!("players[{i}].rewards"))?;
        }
    }
    Ok(())
}

/// The `*.jsonl.gz` episode files of a human data folder, sorted.
pub fn human_episode_files(dir: &Path) -> Result<Vec<PathBuf>, RecordingError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(RecordingError::io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".jsonl.gz"))
        })
        .collect();
    files.sort();
    Ok(files)
}
