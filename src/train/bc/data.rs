//! Behaviour-cloning data: recordings replayed through the simulator into each
//! step's observation, valid-action mask, target action and previous action for
//! one player, cut into training sequences and assembled into tensor batches
//! (with the paper's block-type permutation when asked).

use std::path::PathBuf;

use rand::Rng;
use rand::seq::SliceRandom;
use serde_json::Value;
use tch::{Device, Tensor};

use crate::nn::ObsBatch;
use crate::recording::header::Role;
use crate::recording::reader::{Recording, collect_files};
use crate::recording::verify::{env_for, verify};
use crate::sim::action::{ActionType, FlatLayout};
use crate::sim::block::NUM_BLOCKS;
use crate::sim::config::Abilities;
use crate::sim::coords::WorldSize;
use crate::sim::mask;
use crate::sim::obs::NUM_WORLD_CHANNELS;

use super::super::error::TrainError;
use super::config::{DataConfig, Fold};
use super::stream::{self, Row, StreamSpec};

/// The block ids the permutation shuffles (everything but air and bedrock, which
/// can never be placed).
const PLACEABLE: std::ops::Range<usize> = 2..NUM_BLOCKS;

/// What the target action of a step is, for per-type metrics. The six moves are
/// one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ActionGroup {
    /// NOOP.
    Noop,
    /// PLACE_BLOCK.
    Place,
    /// BREAK_BLOCK.
    Break,
    /// Any MOVE.
    Move,
    /// GIVE_BLOCK.
    Give,
}

impl ActionGroup {
    /// Every group, in metric order.
    pub const ALL: [Self; 5] = [Self::Noop, Self::Place, Self::Break, Self::Move, Self::Give];

    /// The group of an action type.
    pub fn of(t: ActionType) -> Self {
        match t {
            ActionType::Noop => Self::Noop,
            ActionType::PlaceBlock => Self::Place,
            ActionType::BreakBlock => Self::Break,
            ActionType::GiveBlock => Self::Give,
            _ => Self::Move,
        }
    }

    /// The name used in metric names.
    pub fn name(self) -> &'static str {
        match self {
            Self::Noop => "noop",
            Self::Place => "place",
            Self::Break => "break",
            Self::Move => "move",
            Self::Give => "give",
        }
    }

    /// The index in [`ActionGroup::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One player's side of one recorded episode, replayed: per step the
/// observation, the valid-action mask, the target and the previous action.
#[derive(Clone, Debug)]
pub struct EpisodeData {
    /// The recording's episode id.
    pub id: String,
    /// The recording file.
    pub path: PathBuf,
    /// The player whose actions are the targets.
    pub player: usize,
    len: usize,
    /// `len × 6 × cells` world observations.
    world: Vec<u8>,
    /// `len × rows × 10` inventories, rows padded with zeros to the dataset's.
    inventory: Vec<i32>,
    timestep: Vec<f32>,
    /// The flat target action, `None` where it cannot be learned from (its type
    /// is disabled in the layout, or the mask says it is invalid: the reference
    /// drops such steps from the loss).
    targets: Vec<Option<u32>>,
    /// The player's previous flat action (NOOP = 0 at the first step).
    prev: Vec<u32>,
    /// `len × words` valid-action bits.
    masks: Vec<u64>,
}

impl EpisodeData {
    /// Number of steps.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the episode has no steps.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The target of step `t`, if learnable.
    pub fn target(&self, t: usize) -> Option<u32> {
        self.targets[t]
    }
}

/// A contiguous run of steps of one episode: one training sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqRef {
    /// Index into [`Dataset::episodes`].
    pub episode: usize,
    /// First step.
    pub start: usize,
    /// Steps (at most the sequence length).
    pub len: usize,
}

/// Counts from loading, for the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Recordings read.
    pub recordings: usize,
    /// Recordings without a player of the wanted role.
    pub skipped_recordings: usize,
    /// Training rows loaded (over every episode; which lines give rows is
    /// [`super::stream`]'s choice).
    pub steps: usize,
    /// Rows whose target cannot be learned from (invalid or disabled action).
    pub unlearnable_targets: usize,
    /// Replay mismatches between a recording and the simulator (the data are used
    /// anyway, with the simulator's observations).
    pub replay_mismatches: usize,
}

/// Every episode of a run's data, all of one world size and action layout.
#[derive(Debug)]
pub struct Dataset {
    /// The world size.
    pub size: WorldSize,
    /// The abilities (they decide the flat layout).
    pub abilities: Abilities,
    /// The flat action layout.
    pub layout: FlatLayout,
    /// Inventory rows per observation (the most players of any recording).
    pub inventory_rows: usize,
    /// The first recording's complete env config, for the model's `env_config`.
    pub env_config: Value,
    /// The episodes, in file order.
    pub episodes: Vec<EpisodeData>,
    /// What loading found.
    pub stats: LoadStats,
    words: usize,
}

impl Dataset {
    /// Reads the recordings under `paths` (files or folders), replays each, and
    /// keeps the steps of every player whose role is `role`. A run trains on one
    /// world size and action layout: that of most recordings; the others are
    /// skipped with a warning (the tutorial's 6x6x6 episodes beside the study's
    /// 11x10x10 ones). Masks use line of sight if `line_of_sight`; `stream` says
    /// which lines give rows. `on_file` is called after each file (for a
    /// progress bar).
    pub fn load(
        paths: &[PathBuf],
        role: Role,
        line_of_sight: bool,
        stream: StreamSpec,
        on_file: &mut dyn FnMut(usize, usize),
    ) -> Result<Self, TrainError> {
        let files = collect_files(paths).map_err(|e| TrainError::Data(e.to_string()))?;
        if files.is_empty() {
            return Err(TrainError::Data(format!(
                "no recordings (*.jsonl, *.jsonl.gz) under {}",
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let recordings = files
            .iter()
            .map(|f| Recording::read(f).map_err(|e| TrainError::Data(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        // One world size and action layout per run: the setting of the most
        // recordings wins (ties: the first), the others are skipped with a warning.
        let mut settings = Vec::with_capacity(recordings.len());
        for rec in &recordings {
            let env = env_for(rec).map_err(|e| TrainError::Data(e.to_string()))?;
            settings.push((env.size(), env.config().abilities));
        }
        let chosen = *settings
            .iter()
            .max_by_key(|s| {
                let count = settings.iter().filter(|t| t == s).count();
                let first = settings.iter().position(|t| t == *s).unwrap_or(0);
                (count, std::cmp::Reverse(first))
            })
            .expect("at least one recording");
        let mut data: Option<Dataset> = None;
        let mut stats = LoadStats::default();
        for (i, rec) in recordings.iter().enumerate() {
            stats.recordings += 1;
            let env = env_for(rec).map_err(|e| TrainError::Data(e.to_string()))?;
            let (size, abilities) = (env.size(), env.config().abilities);
            if (size, abilities) != chosen {
                log::warn!(
                    "{}: a {size} world with {abilities:?}, but most recordings are {} with {:?}; skipped (train on one setting at a time)",
                    rec.path.display(),
                    chosen.0,
                    chosen.1
                );
                stats.skipped_recordings += 1;
                on_file(i + 1, recordings.len());
                continue;
            }
            let ds = data.get_or_insert_with(|| Dataset {
                size,
                abilities,
                layout: *env.layout(),
                inventory_rows: recordings
                    .iter()
                    .zip(&settings)
                    .filter(|(_, s)| **s == chosen)
                    .map(|(r, _)| r.header.players.len())
                    .max()
                    .unwrap_or(1),
                env_config: rec.header.config.clone(),
                episodes: Vec::new(),
                stats: LoadStats::default(),
                words: env.layout().len().div_ceil(64),
            });
            let players: Vec<usize> = rec
                .header
                .players
                .iter()
                .filter(|p| p.role == role)
                .map(|p| p.index)
                .collect();
            if players.is_empty() {
                log::warn!(
                    "{}: no player with role {role:?}, skipped",
                    rec.path.display()
                );
                stats.skipped_recordings += 1;
                on_file(i + 1, recordings.len());
                continue;
            }
            for player in players {
                let (episode, mismatches) = ds.replay(rec, player, line_of_sight, stream)?;
                stats.replay_mismatches += mismatches;
                stats.steps += episode.len;
                stats.unlearnable_targets += episode.targets.iter().filter(|t| t.is_none()).count();
                ds.episodes.push(episode);
            }
            on_file(i + 1, recordings.len());
        }
        let Some(mut ds) = data.filter(|d| !d.episodes.is_empty()) else {
            return Err(TrainError::Data(format!(
                "none of the {} recordings has a {role:?} player",
                recordings.len()
            )));
        };
        ds.stats = stats;
        Ok(ds)
    }

    fn replay(
        &self,
        rec: &Recording,
        player: usize,
        line_of_sight: bool,
        stream: StreamSpec,
    ) -> Result<(EpisodeData, usize), TrainError> {
        let bad = |e: String| TrainError::Data(format!("{}: {e}", rec.path.display()));
        let env = env_for(rec).map_err(|e| bad(e.to_string()))?;
        let cells = self.size.num_cells();
        let n = rec.steps.len();
        let mut episode = EpisodeData {
            id: rec.header.episode_id.clone(),
            path: rec.path.clone(),
            player,
            len: 0,
            world: Vec::with_capacity(n * NUM_WORLD_CHANNELS * cells),
            inventory: Vec::with_capacity(n * self.inventory_rows * NUM_BLOCKS),
            timestep: Vec::with_capacity(n),
            targets: Vec::with_capacity(n),
            prev: Vec::with_capacity(n),
            masks: Vec::with_capacity(n * self.words),
        };
        let mut obs = env.new_observation();
        let mut mask_buf = vec![false; self.layout.len()];
        let mut failure: Option<String> = None;
        let mut push_obs = |env: &crate::sim::env::Env, episode: &mut EpisodeData| {
            if let Err(e) = env.observe(player, &mut obs) {
                failure.get_or_insert(format!("{e:?}"));
                return;
            }
            episode.world.extend_from_slice(&obs.world);
            let row = &obs.inventory;
            episode.inventory.extend_from_slice(row);
            let pad =
                self.inventory_rows * NUM_BLOCKS - row.len().min(self.inventory_rows * NUM_BLOCKS);
            episode.inventory.extend(std::iter::repeat_n(0, pad));
            episode.timestep.push(obs.timestep as f32);
            mask::compute(
                &obs,
                self.abilities,
                &self.layout,
                line_of_sight,
                &mut mask_buf,
            );
            let start = episode.masks.len();
            episode.masks.resize(start + self.words, 0);
            for (i, _) in mask_buf.iter().enumerate().filter(|(_, v)| **v) {
                episode.masks[start + i / 64] |= 1 << (i % 64);
            }
            episode.len += 1;
        };
        push_obs(&env, &mut episode);
        let mut steps_seen = 0;
        let report = verify(rec, &mut |env, _| {
            steps_seen += 1;
            // The observation after the last step has no action to go with it.
            if steps_seen < n {
                push_obs(env, &mut episode);
            }
        })
        .map_err(|e| bad(e.to_string()))?;
        if let Some(f) = failure {
            return Err(bad(format!("player {player}: {f}")));
        }
        if !report.mismatches.is_empty() {
            log::warn!(
                "{}: {} replay mismatches (first: line {} {})",
                rec.path.display(),
                report.mismatches.len(),
                report.mismatches[0].line,
                report.mismatches[0].field
            );
        }
        let len = episode.len.min(report.steps_replayed.max(1)).min(n);
        episode.truncate(len, self.words);
        let rows = stream::rows(&rec.steps, len, player, stream);
        Ok((self.rows_of(&episode, rec, &rows), report.mismatches.len()))
    }

    /// The training rows of a replayed episode (one observation per line):
    /// each row copies its line's observation and mask; an action row's target
    /// is the line's action (if learnable), an idle row's is NOOP.
    fn rows_of(&self, lines: &EpisodeData, rec: &Recording, rows: &[Row]) -> EpisodeData {
        let world_len = lines.world.len() / lines.len.max(1);
        let inv_len = lines.inventory.len() / lines.len.max(1);
        let words = self.words;
        let mut out = EpisodeData {
            id: lines.id.clone(),
            path: lines.path.clone(),
            player: lines.player,
            len: rows.len(),
            world: Vec::with_capacity(rows.len() * world_len),
            inventory: Vec::with_capacity(rows.len() * inv_len),
            timestep: Vec::with_capacity(rows.len()),
            targets: Vec::with_capacity(rows.len()),
            prev: Vec::with_capacity(rows.len()),
            masks: Vec::with_capacity(rows.len() * words),
        };
        let mut prev = 0u32;
        for row in rows {
            let t = row.line;
            out.world
                .extend_from_slice(&lines.world[t * world_len..(t + 1) * world_len]);
            out.inventory
                .extend_from_slice(&lines.inventory[t * inv_len..(t + 1) * inv_len]);
            out.timestep.push(row.timestep as f32);
            out.masks
                .extend_from_slice(&lines.masks[t * words..(t + 1) * words]);
            let flat = if row.action {
                rec.steps[t]
                    .a
                    .get(lines.player)
                    .and_then(|a| a.to_action(self.size).ok())
                    .and_then(|a| self.layout.flat(a))
                    .map(|f| f as u32)
            } else {
                Some(0)
            };
            let learnable = flat.filter(|&f| lines.mask_bit(t, words, f as usize));
            out.targets.push(learnable);
            out.prev.push(prev);
            prev = flat.unwrap_or(0);
        }
        out
    }

    /// Sequences of at most `seq_len` steps covering the given episodes in order.
    pub fn sequences(&self, episodes: &[usize], seq_len: usize) -> Vec<SeqRef> {
        let mut out = Vec::new();
        for &e in episodes {
            let len = self.episodes[e].len;
            let mut start = 0;
            while start < len {
                let n = seq_len.min(len - start);
                out.push(SeqRef {
                    episode: e,
                    start,
                    len: n,
                });
                start += n;
            }
        }
        out
    }

    /// How many learnable targets the episodes hold.
    pub fn learnable_steps(&self, episodes: &[usize]) -> usize {
        episodes
            .iter()
            .map(|&e| self.episodes[e].targets.iter().flatten().count())
            .sum()
    }

    /// The group of a flat action.
    pub fn group(&self, flat: u32) -> ActionGroup {
        let t = self
            .layout
            .action(flat as usize)
            .map_or(ActionType::Noop, |a| a.kind);
        ActionGroup::of(t)
    }

    /// The valid actions of step `t` of episode `e`, as flat indices.
    pub fn valid_actions(&self, e: usize, t: usize) -> impl Iterator<Item = usize> + '_ {
        let words = &self.episodes[e].masks[t * self.words..(t + 1) * self.words];
        words.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits >> b & 1 == 1)
                .map(move |b| w * 64 + b)
        })
    }

    /// A batch of sequences, each padded to `seq_len` steps (padding has no
    /// target). With `augment`, each sequence gets its own random permutation of
    /// the placeable block types, applied to current and goal blocks, inventories,
    /// masks, targets and previous actions (the paper's data augmentation).
    pub fn batch(
        &self,
        seqs: &[SeqRef],
        seq_len: usize,
        mut augment: Option<&mut dyn rand::RngCore>,
        device: Device,
    ) -> Batch {
        let cells = self.size.num_cells();
        let world_len = NUM_WORLD_CHANNELS * cells;
        let inv_len = self.inventory_rows * NUM_BLOCKS;
        let n = self.layout.len();
        let rows = seqs.len() * seq_len;
        let mut world = vec![0u8; rows * world_len];
        let mut inventory = vec![0i32; rows * inv_len];
        let mut timestep = vec![0f32; rows];
        let mut prev = vec![0i64; rows];
        let mut targets = vec![-1i64; rows];
        let mut mask = vec![false; rows * n];
        let mut groups = vec![None; rows];
        let mut flat_map: Vec<u32> = (0..n as u32).collect();
        for (s, seq) in seqs.iter().enumerate() {
            let ep = &self.episodes[seq.episode];
            let block_map = match augment.as_deref_mut() {
                Some(rng) => {
                    let mut map: Vec<u8> = (0..NUM_BLOCKS as u8).collect();
                    map[PLACEABLE].shuffle(rng);
                    self.fill_flat_map(&map, &mut flat_map);
                    Some(map)
                }
                None => None,
            };
            for i in 0..seq.len {
                let t = seq.start + i;
                let row = s * seq_len + i;
                let w = &mut world[row * world_len..(row + 1) * world_len];
                w.copy_from_slice(&ep.world[t * world_len..(t + 1) * world_len]);
                let inv = &mut inventory[row * inv_len..(row + 1) * inv_len];
                let src = &ep.inventory[t * inv_len..(t + 1) * inv_len];
                timestep[row] = ep.timestep[t];
                let m = &mut mask[row * n..(row + 1) * n];
                let bits = &ep.masks[t * self.words..(t + 1) * self.words];
                let target = ep.targets[t];
                groups[row] = target.map(|f| self.group(f));
                match &block_map {
                    Some(map) => {
                        // Channels 0 (current) and 2 (goal) hold block ids.
                        for channel in [0, 2] {
                            for v in &mut w[channel * cells..(channel + 1) * cells] {
                                *v = map[*v as usize];
                            }
                        }
                        for (r, dst) in inv.chunks_mut(NUM_BLOCKS).enumerate() {
                            for b in 0..NUM_BLOCKS {
                                dst[map[b] as usize] = src[r * NUM_BLOCKS + b];
                            }
                        }
                        for_each_bit(bits, |f| m[flat_map[f] as usize] = true);
                        targets[row] = target.map_or(-1, |f| i64::from(flat_map[f as usize]));
                        prev[row] = i64::from(flat_map[ep.prev[t] as usize]);
                    }
                    None => {
                        inv.copy_from_slice(src);
                        for_each_bit(bits, |f| m[f] = true);
                        targets[row] = target.map_or(-1, i64::from);
                        prev[row] = i64::from(ep.prev[t]);
                    }
                }
            }
        }
        let [x, y, z] = self.size.axes().map(|a| a as i64);
        let r = rows as i64;
        let obs = ObsBatch::new(
            Tensor::from_slice(&world).reshape([r, NUM_WORLD_CHANNELS as i64, x, y, z]),
            Tensor::from_slice(&inventory).reshape([
                r,
                self.inventory_rows as i64,
                NUM_BLOCKS as i64,
            ]),
            Tensor::from_slice(&timestep),
            Some(Tensor::from_slice(&prev)),
        )
        .expect("tensors built to the batch's shapes")
        .to_device(device);
        Batch {
            obs,
            mask: Tensor::from_slice(&mask)
                .reshape([r, n as i64])
                .to_device(device),
            targets: Tensor::from_slice(&targets).to_device(device),
            groups,
            sequences: seqs.len(),
            seq_len,
        }
    }

    /// The flat-index image of every action under a block permutation: PLACE and
    /// GIVE move to the permuted block, everything else stays.
    fn fill_flat_map(&self, block_map: &[u8], out: &mut [u32]) {
        let cells = self.size.num_cells();
        for (f, v) in out.iter_mut().enumerate() {
            *v = f as u32;
        }
        for t in [ActionType::PlaceBlock, ActionType::GiveBlock] {
            if let Some(off) = self.layout.offset(t) {
                for b in 0..NUM_BLOCKS {
                    let to = block_map[b] as usize;
                    for loc in 0..cells {
                        out[off + b * cells + loc] = (off + to * cells + loc) as u32;
                    }
                }
            }
        }
    }
}

impl EpisodeData {
    fn mask_bit(&self, t: usize, words: usize, f: usize) -> bool {
        self.masks[t * words + f / 64] >> (f % 64) & 1 == 1
    }

    fn truncate(&mut self, len: usize, words: usize) {
        let cells = self.world.len() / self.len.max(1);
        let inv = self.inventory.len() / self.len.max(1);
        self.world.truncate(len * cells);
        self.inventory.truncate(len * inv);
        self.timestep.truncate(len);
        self.masks.truncate(len * words);
        self.len = len;
    }
}

fn for_each_bit(words: &[u64], mut f: impl FnMut(usize)) {
    for (w, &bits) in words.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            f(w * 64 + b);
            bits &= bits - 1;
        }
    }
}

/// A batch of sequences as tensors.
#[derive(Debug)]
pub struct Batch {
    /// `sequences × seq_len` rows, each sequence's steps consecutive.
    pub obs: ObsBatch,
    /// `(rows, N)` valid actions.
    pub mask: Tensor,
    /// `(rows,)` target flat actions, -1 where there is none (padding or an
    /// unlearnable step).
    pub targets: Tensor,
    /// Each row's target group, `None` without a target.
    pub groups: Vec<Option<ActionGroup>>,
    /// Sequences in the batch.
    pub sequences: usize,
    /// Steps per sequence (with padding).
    pub seq_len: usize,
}

/// How the validation episodes are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Split<'a> {
    /// These episode ids.
    Named(&'a [String]),
    /// This share of the episodes (at least one when there are two or more),
    /// drawn with the rng.
    Fraction(f64),
    /// Fold `index` of `of`: the episodes shuffled with the rng, every `of`-th
    /// from `index`.
    Fold(Fold),
}

impl<'a> Split<'a> {
    /// The split a data config asks for.
    pub fn of(data: &'a DataConfig) -> Self {
        match (&data.fold, data.validation_episodes.as_slice()) {
            (Some(fold), _) => Self::Fold(*fold),
            (None, []) => Self::Fraction(data.validation_fraction),
            (None, ids) => Self::Named(ids),
        }
    }
}

/// Splits episode indices into training and validation by episode, as `split`
/// says.
pub fn split_episodes(
    data: &Dataset,
    split: Split<'_>,
    rng: &mut impl Rng,
) -> Result<(Vec<usize>, Vec<usize>), TrainError> {
    let ids: Vec<&str> = data.episodes.iter().map(|e| e.id.as_str()).collect();
    split_ids(&ids, split, rng)
}

/// [`split_episodes`] on the episodes' ids, in order.
fn split_ids(
    ids: &[&str],
    split: Split<'_>,
    rng: &mut impl Rng,
) -> Result<(Vec<usize>, Vec<usize>), TrainError> {
    let n = ids.len();
    let mut valid: Vec<usize> = if let Split::Fold(fold) = split {
        if fold.of > n {
            return Err(TrainError::Data(format!(
                "fold {fold}: {} folds but only {n} episodes",
                fold.of
            )));
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(rng);
        order
            .into_iter()
            .enumerate()
            .filter(|(position, _)| position % fold.of == fold.index)
            .map(|(_, e)| e)
            .collect()
    } else if let Split::Fraction(fraction) = split {
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(rng);
        let mut k = (fraction * n as f64).round() as usize;
        if fraction > 0.0 && n >= 2 {
            k = k.clamp(1, n - 1);
        }
        order.truncate(k.min(n));
        order
    } else {
        let Split::Named(validation_ids) = split else {
            unreachable!("the other splits are handled above")
        };
        let mut out = Vec::new();
        for id in validation_ids {
            let found: Vec<usize> = (0..n).filter(|&i| ids[i] == id).collect();
            if found.is_empty() {
                return Err(TrainError::Data(format!(
                    "validation episode {id:?} is not in the data"
                )));
            }
            out.extend(found);
        }
        out
    };
    valid.sort_unstable();
    valid.dedup();
    let train: Vec<usize> = (0..n).filter(|i| !valid.contains(i)).collect();
    if train.is_empty() {
        return Err(TrainError::Data(
            "every episode is in the validation split; nothing is left to train on".into(),
        ));
    }
    Ok((train, valid))
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn folds_hold_out_every_episode_exactly_once() {
        let ids: Vec<String> = (0..18).map(|i| format!("episode {i}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut held_out = vec![0; ids.len()];
        for index in 0..5 {
            let split = Split::Fold(Fold { index, of: 5 });
            let (train, valid) = split_ids(&ids, split, &mut StdRng::seed_from_u64(3)).unwrap();
            assert!(valid.len() == 3 || valid.len() == 4, "{valid:?}");
            assert_eq!(train.len() + valid.len(), ids.len());
            assert!(train.iter().all(|e| !valid.contains(e)));
            for e in valid {
                held_out[e] += 1;
            }
        }
        assert_eq!(held_out, vec![1; ids.len()]);
    }

    #[test]
    fn more_folds_than_episodes_is_an_error_naming_both() {
        let split = Split::Fold(Fold { index: 0, of: 4 });
        let err = split_ids(&["a", "b", "c"], split, &mut StdRng::seed_from_u64(0)).unwrap_err();
        assert!(
            err.to_string().contains("4 folds but only 3 episodes"),
            "{err}"
        );
    }

    #[test]
    fn fold_specs_parse_and_refuse_nonsense() {
        assert_eq!("2/5".parse::<Fold>().unwrap(), Fold { index: 2, of: 5 });
        for bad in ["5/5", "0/1", "x/3", "3", "-1/4", ""] {
            let err = bad.parse::<Fold>().unwrap_err();
            assert!(err.contains("K/N"), "{bad}: {err}");
        }
    }
}
