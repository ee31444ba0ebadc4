//! The replay buffer on disk, so that a resumed run trains on the samples the
//! interrupted one had collected instead of refilling the buffer from scratch.
//!
//! A file is the 8 bytes `MBAGRPLY`, a little-endian `u32` format version, then
//! one gzip stream of little-endian fields: the shape (world extents, players,
//! flat actions) and capacity, then every fragment oldest first: its initial
//! recurrent state (tensors as shape + float32 values), then its samples with
//! every field of [`Sample`]. A sample's goal is written once per run of equal
//! goals (all of a fragment's samples share one episode's goal). Nothing is
//! lossy: played goal logits are already bfloat16 in memory.
//!
//! Reading checks the shape against the run's network and env, every index
//! against its range and the stream's end, so a corrupt, cut or foreign file
//! is refused with an error naming it rather than trained on.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use tch::{Kind, Tensor};

use super::config::ResolvedConfig;
use super::replay::{Fragment, ReplayBuffer, Sample};
use crate::sim::block::NUM_BLOCKS;
use crate::sim::coords::WorldSize;
use crate::sim::obs::{NUM_WORLD_CHANNELS, Observation};
use crate::train::TrainError;

/// The buffer's file name inside a checkpoint folder.
pub const REPLAY_FILE: &str = "replay.bin";
const MAGIC: &[u8; 8] = b"MBAGRPLY";
/// Bumped whenever the layout of the stream changes.
const VERSION: u32 = 1;
/// Bounds that only a corrupt file exceeds, checked before allocating.
const MAX_DIMS: u32 = 8;
const MAX_LEN: u64 = 1 << 32;

/// What every sample of a buffer must fit: the run's env and network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayShape {
    /// The world size of the observations and goals.
    pub size: WorldSize,
    /// Players (inventory rows of an observation).
    pub num_players: usize,
    /// Flat actions (policy targets, valid bits, previous actions).
    pub n_actions: usize,
}

impl ReplayShape {
    /// The shape of a training run's samples: its env's world and players, its
    /// network's flat actions.
    pub fn of(config: &ResolvedConfig) -> Self {
        Self {
            size: config.env.world_size,
            num_players: config.env.num_players,
            n_actions: config.model.n_actions(),
        }
    }

    fn valid_words(&self) -> usize {
        self.n_actions.div_ceil(64)
    }
}

/// Writes `buffer`'s fragments to `path` (replacing it).
pub fn write_replay(
    buffer: &ReplayBuffer,
    shape: &ReplayShape,
    path: &Path,
) -> Result<(), TrainError> {
    let file = std::fs::File::create(path).map_err(TrainError::io(path))?;
    let mut out = BufWriter::new(file);
    out.write_all(MAGIC)
        .and_then(|()| out.write_all(&VERSION.to_le_bytes()))
        .map_err(TrainError::io(path))?;
    // Observations are mostly zeros; the fast level already shrinks them several
    // times, and the checkpoint is written on the training thread.
    let mut w = Writer(GzEncoder::new(out, Compression::fast()));
    write_body(&mut w, buffer, shape).map_err(TrainError::io(path))?;
    let out = w.0.finish().map_err(TrainError::io(path))?;
    out.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .map_err(TrainError::io(path))
}

fn write_body<W: Write>(
    w: &mut Writer<W>,
    buffer: &ReplayBuffer,
    shape: &ReplayShape,
) -> std::io::Result<()> {
    for axis in shape.size.axes() {
        w.u32(axis as u32)?;
    }
    w.u32(shape.num_players as u32)?;
    w.u32(shape.n_actions as u32)?;
    w.u64(buffer.capacity() as u64)?;
    w.u64(buffer.fragments().count() as u64)?;
    for fragment in buffer.fragments() {
        match &fragment.initial_state {
            None => w.u8(0)?,
            Some(tensors) => {
                w.u8(1)?;
                w.u32(tensors.len() as u32)?;
                for t in tensors {
                    write_tensor(w, t)?;
                }
            }
        }
        w.u64(fragment.samples.len() as u64)?;
        let mut last_goal: Option<&Arc<[u8]>> = None;
        for s in &fragment.samples {
            write_sample(w, s, last_goal)?;
            last_goal = Some(&s.goal);
        }
    }
    Ok(())
}

fn write_tensor<W: Write>(w: &mut Writer<W>, t: &Tensor) -> std::io::Result<()> {
    let dims = t.size();
    w.u32(dims.len() as u32)?;
    for &d in &dims {
        w.u64(d as u64)?;
    }
    let values = Vec::<f32>::try_from(
        t.to_device(tch::Device::Cpu)
            .to_kind(Kind::Float)
            .reshape([-1]),
    )
    .map_err(std::io::Error::other)?;
    for v in values {
        w.f32(v)?;
    }
    Ok(())
}

fn write_sample<W: Write>(
    w: &mut Writer<W>,
    s: &Sample,
    last_goal: Option<&Arc<[u8]>>,
) -> std::io::Result<()> {
    w.bytes(&s.observation.world)?;
    for &c in &s.observation.inventory {
        w.i32(c)?;
    }
    w.i32(s.observation.timestep)?;
    w.u32(s.prev_action)?;
    for &word in &s.valid {
        w.u64(word)?;
    }
    w.pairs(&s.policy)?;
    w.f32(s.reward)?;
    w.f32(s.value_target)?;
    w.f32(s.root_value)?;
    if last_goal.is_some_and(|g| Arc::ptr_eq(g, &s.goal) || **g == *s.goal) {
        w.u8(0)?;
    } else {
        w.u8(1)?;
        w.bytes(&s.goal)?;
    }
    match &s.played_goal_logits {
        None => w.u8(0)?,
        Some(logits) => {
            w.u8(1)?;
            for &h in logits {
                w.0.write_all(&h.to_le_bytes())?;
            }
        }
    }
    w.u32(s.human_action)?;
    w.pairs(&s.human_policy)
}

/// Reads a buffer written by [`write_replay`] into a buffer of `capacity`
/// samples (the run's, which may differ from the file's: the oldest fragments
/// beyond it are dropped), refusing a file that does not fit `shape`.
pub fn read_replay(
    path: &Path,
    shape: &ReplayShape,
    capacity: usize,
) -> Result<ReplayBuffer, TrainError> {
    let bad = |message: String| TrainError::Checkpoint {
        path: path.to_owned(),
        message,
    };
    let file = std::fs::File::open(path).map_err(TrainError::io(path))?;
    let mut input = BufReader::new(file);
    let mut head = [0u8; 12];
    input
        .read_exact(&mut head)
        .map_err(|e| bad(format!("not a replay buffer file ({e})")))?;
    if &head[..8] != MAGIC {
        return Err(bad("not a replay buffer file (bad magic bytes)".into()));
    }
    let version = u32::from_le_bytes(head[8..].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(bad(format!(
            "replay buffer format version {version}, this mbag reads version {VERSION}"
        )));
    }
    let mut r = Reader(GzDecoder::new(input));
    let fragments = read_body(&mut r, shape).map_err(|e| match e {
        ReadError::Io(e) => bad(format!("replay buffer truncated or corrupt: {e}")),
        ReadError::Invalid(m) => bad(format!("replay buffer: {m}")),
    })?;
    let mut rest = [0u8; 1];
    if r.0.read(&mut rest).map_err(|e| bad(e.to_string()))? != 0 {
        return Err(bad("replay buffer: data after the last fragment".into()));
    }
    let mut buffer = ReplayBuffer::new(capacity);
    for f in fragments {
        buffer.push(f);
    }
    Ok(buffer)
}

#[derive(Debug)]
enum ReadError {
    Io(std::io::Error),
    Invalid(String),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

fn invalid<T>(message: String) -> Result<T, ReadError> {
    Err(ReadError::Invalid(message))
}

fn read_body<R: Read>(r: &mut Reader<R>, shape: &ReplayShape) -> Result<Vec<Fragment>, ReadError> {
    let axes = [r.u32()?, r.u32()?, r.u32()?].map(|a| a as usize);
    let found = ReplayShape {
        size: WorldSize::new(axes[0], axes[1], axes[2]),
        num_players: r.u32()? as usize,
        n_actions: r.u32()? as usize,
    };
    if found != *shape {
        return invalid(format!(
            "made for a {} world with {} players and {} flat actions, this run has a {} world with {} players and {} flat actions",
            found.size,
            found.num_players,
            found.n_actions,
            shape.size,
            shape.num_players,
            shape.n_actions
        ));
    }
    let _capacity = r.u64()?;
    let count = r.len()?;
    let mut fragments = Vec::with_capacity(count.min(1 << 16));
    for k in 0..count {
        let initial_state = match r.u8()? {
            0 => None,
            1 => {
                let n = r.u32()?;
                if n > MAX_DIMS * 16 {
                    return invalid(format!("fragment {k}: {n} state tensors"));
                }
                Some((0..n).map(|_| read_tensor(r)).collect::<Result<_, _>>()?)
            }
            flag => return invalid(format!("fragment {k}: state flag {flag}")),
        };
        let n = r.len()?;
        let mut samples: Vec<Sample> = Vec::with_capacity(n.min(1 << 16));
        for i in 0..n {
            let last_goal = samples.last().map(|s| Arc::clone(&s.goal));
            let s = read_sample(r, shape, last_goal).map_err(|e| match e {
                ReadError::Invalid(m) => {
                    ReadError::Invalid(format!("fragment {k} sample {i}: {m}"))
                }
                e => e,
            })?;
            samples.push(s);
        }
        fragments.push(Fragment {
            initial_state,
            samples,
        });
    }
    Ok(fragments)
}

fn read_tensor<R: Read>(r: &mut Reader<R>) -> Result<Tensor, ReadError> {
    let ndim = r.u32()?;
    if ndim > MAX_DIMS {
        return invalid(format!("a state tensor of {ndim} dimensions"));
    }
    let dims: Vec<i64> = (0..ndim)
        .map(|_| r.len().map(|d| d as i64))
        .collect::<Result<_, _>>()?;
    let numel: i64 = dims.iter().product();
    if numel as u64 > MAX_LEN {
        return invalid(format!("a state tensor of shape {dims:?}"));
    }
    let values: Vec<f32> = (0..numel).map(|_| r.f32()).collect::<Result<_, _>>()?;
    Ok(Tensor::from_slice(&values).reshape(&dims))
}

fn read_sample<R: Read>(
    r: &mut Reader<R>,
    shape: &ReplayShape,
    last_goal: Option<Arc<[u8]>>,
) -> Result<Sample, ReadError> {
    let cells = shape.size.num_cells();
    let world = r.bytes(NUM_WORLD_CHANNELS * cells)?;
    let inventory: Vec<i32> = (0..shape.num_players * NUM_BLOCKS)
        .map(|_| r.i32())
        .collect::<Result<_, _>>()?;
    let timestep = r.i32()?;
    let observation =
        Observation::from_raw(shape.size, shape.num_players, world, inventory, timestep);
    let prev_action = r.action(shape)?;
    let valid: Vec<u64> = (0..shape.valid_words())
        .map(|_| r.u64())
        .collect::<Result<_, _>>()?;
    let policy = r.pairs(shape)?;
    let reward = r.f32()?;
    let value_target = r.f32()?;
    let root_value = r.f32()?;
    let goal: Arc<[u8]> = match (r.u8()?, last_goal) {
        (0, Some(goal)) => goal,
        (0, None) => return invalid("refers to a previous goal but is a fragment's first".into()),
        (1, _) => {
            let goal = r.bytes(cells)?;
            if let Some(&b) = goal.iter().find(|&&b| usize::from(b) >= NUM_BLOCKS) {
                return invalid(format!("goal block id {b}"));
            }
            Arc::from(goal)
        }
        (flag, _) => return invalid(format!("goal flag {flag}")),
    };
    let played_goal_logits = match r.u8()? {
        0 => None,
        1 => Some(
            (0..NUM_BLOCKS * cells)
                .map(|_| r.u16())
                .collect::<Result<_, _>>()?,
        ),
        flag => return invalid(format!("goal logits flag {flag}")),
    };
    let human_action = r.action(shape)?;
    let human_policy = r.pairs(shape)?;
    Ok(Sample {
        observation,
        prev_action,
        valid,
        policy,
        reward,
        value_target,
        root_value,
        goal,
        played_goal_logits,
        human_action,
        human_policy,
    })
}

/// Little-endian fields onto a stream.
struct Writer<W>(W);

impl<W: Write> Writer<W> {
    fn u8(&mut self, v: u8) -> std::io::Result<()> {
        self.0.write_all(&[v])
    }
    fn u32(&mut self, v: u32) -> std::io::Result<()> {
        self.0.write_all(&v.to_le_bytes())
    }
    fn i32(&mut self, v: i32) -> std::io::Result<()> {
        self.0.write_all(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> std::io::Result<()> {
        self.0.write_all(&v.to_le_bytes())
    }
    fn f32(&mut self, v: f32) -> std::io::Result<()> {
        self.0.write_all(&v.to_le_bytes())
    }
    fn bytes(&mut self, v: &[u8]) -> std::io::Result<()> {
        self.0.write_all(v)
    }
    fn pairs(&mut self, v: &[(u32, f32)]) -> std::io::Result<()> {
        self.u32(v.len() as u32)?;
        for &(a, p) in v {
            self.u32(a)?;
            self.f32(p)?;
        }
        Ok(())
    }
}

/// Little-endian fields from a stream.
struct Reader<R>(R);

impl<R: Read> Reader<R> {
    fn array<const N: usize>(&mut self) -> std::io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.0.read_exact(&mut b)?;
        Ok(b)
    }
    fn u8(&mut self) -> std::io::Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> std::io::Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> std::io::Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn i32(&mut self) -> std::io::Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> std::io::Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn f32(&mut self) -> std::io::Result<f32> {
        Ok(f32::from_le_bytes(self.array()?))
    }
    fn bytes(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        let mut v = vec![0u8; n];
        self.0.read_exact(&mut v)?;
        Ok(v)
    }
    /// A count, refused before anything is allocated for it if absurd.
    fn len(&mut self) -> Result<usize, ReadError> {
        let n = self.u64()?;
        if n > MAX_LEN {
            return invalid(format!("a count of {n}"));
        }
        Ok(n as usize)
    }
    fn action(&mut self, shape: &ReplayShape) -> Result<u32, ReadError> {
        let a = self.u32()?;
        if a as usize >= shape.n_actions {
            return invalid(format!(
                "flat action {a} of {} flat actions",
                shape.n_actions
            ));
        }
        Ok(a)
    }
    fn pairs(&mut self, shape: &ReplayShape) -> Result<Vec<(u32, f32)>, ReadError> {
        let n = self.u32()? as usize;
        if n > shape.n_actions {
            return invalid(format!(
                "{n} probabilities over {} flat actions",
                shape.n_actions
            ));
        }
        (0..n)
            .map(|_| Ok((self.action(shape)?, self.f32()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> ReplayShape {
        ReplayShape {
            size: WorldSize::new(2, 3, 2),
            num_players: 2,
            n_actions: 70,
        }
    }

    fn sample(seed: u8, goal: &Arc<[u8]>) -> Sample {
        let sh = shape();
        let cells = sh.size.num_cells();
        let world = (0..NUM_WORLD_CHANNELS * cells)
            .map(|i| (i as u8).wrapping_mul(seed))
            .collect();
        let inventory = (0..sh.num_players * NUM_BLOCKS)
            .map(|i| i as i32 - seed as i32)
            .collect();
        Sample {
            observation: Observation::from_raw(sh.size, 2, world, inventory, i32::from(seed)),
            prev_action: u32::from(seed) % 70,
            valid: vec![0xdead_beef_u64 ^ u64::from(seed), 0b1011],
            policy: vec![(3, 0.25), (69, 0.75)],
            reward: -1.5 * f32::from(seed),
            value_target: 0.125,
            root_value: f32::from(seed) / 3.0,
            goal: Arc::clone(goal),
            played_goal_logits: seed
                .is_multiple_of(2)
                .then(|| (0..NUM_BLOCKS * cells).map(|i| i as u16 * 7).collect()),
            human_action: 5,
            human_policy: if seed.is_multiple_of(3) {
                Vec::new()
            } else {
                vec![(5, 0.5), (6, 0.5)]
            },
        }
    }

    fn buffer() -> ReplayBuffer {
        let goal_a: Arc<[u8]> = Arc::from(vec![1u8; 12]);
        let goal_b: Arc<[u8]> = Arc::from((0..12).map(|i| i % 10).collect::<Vec<u8>>());
        let mut buffer = ReplayBuffer::new(100);
        buffer.push(Fragment {
            initial_state: None,
            samples: vec![sample(1, &goal_a), sample(2, &goal_a), sample(3, &goal_b)],
        });
        buffer.push(Fragment {
            initial_state: Some(vec![
                Tensor::from_slice(&[1.0f32, -2.0, 3.5, 0.0, 1e-7, 9.0]).reshape([1, 2, 3]),
                Tensor::from_slice(&[4.0f32]),
            ]),
            samples: vec![sample(4, &goal_b)],
        });
        buffer
    }

    fn assert_same(a: &ReplayBuffer, b: &ReplayBuffer) {
        assert_eq!(a.len(), b.len());
        assert_eq!(a.fragments().count(), b.fragments().count());
        for (x, y) in a.fragments().zip(b.fragments()) {
            assert_eq!(x.samples, y.samples);
            match (&x.initial_state, &y.initial_state) {
                (None, None) => {}
                (Some(p), Some(q)) => {
                    assert_eq!(p.len(), q.len());
                    for (s, t) in p.iter().zip(q) {
                        assert!(s.equal(t), "{s} {t}");
                    }
                }
                _ => panic!("initial states differ"),
            }
        }
    }

    #[test]
    fn a_buffer_round_trips_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REPLAY_FILE);
        let original = buffer();
        write_replay(&original, &shape(), &path).unwrap();
        let back = read_replay(&path, &shape(), 100).unwrap();
        assert_same(&original, &back);
        // Equal goals are shared again after reading.
        let f = back.fragments().next().unwrap();
        assert!(Arc::ptr_eq(&f.samples[0].goal, &f.samples[1].goal));
        // A smaller capacity keeps the newest fragments.
        let small = read_replay(&path, &shape(), 1).unwrap();
        assert_eq!(small.len(), 1);
        assert_eq!(small.fragments().next().unwrap().samples[0].human_action, 5);
    }

    #[test]
    fn corrupt_cut_and_foreign_files_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REPLAY_FILE);
        write_replay(&buffer(), &shape(), &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let message = |p: &Path, shape: &ReplayShape| {
            let e = read_replay(p, shape, 100).unwrap_err().to_string();
            assert!(e.contains(&p.display().to_string()), "{e}");
            e
        };
        let other = ReplayShape {
            n_actions: 71,
            ..shape()
        };
        let e = message(&path, &other);
        assert!(e.contains("71 flat actions"), "{e}");
        let cut = dir.path().join("cut.bin");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        assert!(message(&cut, &shape()).contains("truncated or corrupt"));
        let foreign = dir.path().join("foreign.bin");
        std::fs::write(&foreign, b"{\"not\": \"a buffer\"}").unwrap();
        assert!(message(&foreign, &shape()).contains("bad magic"));
        let mut future = bytes.clone();
        future[8] = 9;
        let newer = dir.path().join("newer.bin");
        std::fs::write(&newer, &future).unwrap();
        assert!(message(&newer, &shape()).contains("version 9"));
    }
}
