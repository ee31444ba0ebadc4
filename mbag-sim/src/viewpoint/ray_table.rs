//! The teleportation search (no fixed player) by precomputed rays.
//!
//! Which voxels a ray from a standing position's eye to a click point enters depends,
//! in exact arithmetic, only on where the eye and the point lie relative to the
//! target. The reference walks in `f64` from absolute coordinates, so its rounding
//! differs from target to target; but it can only change a decision of the walk (or
//! of the reach test) where two quantities are equal in exact arithmetic. A table
//! built once per interaction kind holds, for every (standing offset, click point)
//! pair, the voxels its ray enters, unless some decision of its walk or reach test is
//! within [`TIE`] of going the other way. Rounding in worlds of the sizes the table
//! accepts stays below 1e-12, far inside the margin.
//!
//! The near ties that occur are all exact ties between the x and z crossings of
//! diagonal rays. Those are settled by the reference's own floats, which along x
//! (z) depend only on the [`Class`] of the target's x (z) coordinate: such faces
//! are worked out again per pair of classes, on first use. Any other tie would be
//! walked in the world's own coordinates (none occurs in the tables built today).
//!
//! For a search, each standing offset's tabulated rays are gathered by voxel
//! ([`EyeRays`]: at most 16 voxels, each with the set of the offset's rays that
//! enter it), so a standing position costs a short loop of byte loads and `AND`s
//! against the target's neighbourhood, with no branch that depends on the
//! obstacles; offsets that see a class-dependent face read a gathering made per
//! pair of classes. The searched standing positions are one 729-bit set, visited a
//! word at a time. Setting up a search has no branch on where the world ends:
//! [`ObstacleRows`] pads the world with free rows, and the standing cells of each
//! x offset come from its ten rows and one load per row from a table of the
//! z offsets that see each set of usable faces. A search ends before its loop
//! when no ray can reach a click point's cell: every ray enters that cell from a
//! free neighbour or starts in it.
//!
//! A caller can give the search independent work to run between
//! standing positions ([`super::Meanwhile`]): the env seeds the generator that picks
//! among the candidates there.

use std::sync::OnceLock;

use super::{
    Candidate, Eye, Interaction, Meanwhile, REACH, SearchWorld, click_point, eye_of, floor,
    reachable, skipped_in_column, standing_feet, voxel_of,
};
use crate::coords::{Cell, WorldSize};

/// Standing offsets from the target: x and z in `-SPAN..=SPAN`, y in
/// `Y_LOW..=Y_HIGH` (ENV_SPEC 6.2).
const SPAN: i32 = 4;
const Y_LOW: i32 = -5;
const Y_HIGH: i32 = 3;
/// Rows of a neighbourhood: one per (x, y) offset, y in `Y_LOW..=Y_HIGH + 1` (the
/// standing cells and the cells above them, where the eyes are).
const ROWS_Y: usize = (Y_HIGH - Y_LOW + 2) as usize;
const NUM_ROWS: usize = 9 * ROWS_Y;
/// Rows of 9 z-bits packed into one word, so that no row straddles two words.
const ROWS_PER_WORD: usize = 7;
const WORDS: usize = NUM_ROWS.div_ceil(ROWS_PER_WORD);
/// Standing offsets, in the reference's order (x outer, then y, then z).
const NUM_EYES: usize = 9 * 9 * 9;
/// Click points per face.
const POINTS_PER_FACE: usize = 9;
/// How close two quantities compared by the walk or the reach test may come before
/// the ray is left to the exact walk.
const TIE: f64 = 1e-9;
/// The largest world extent the table serves: rounding grows with the coordinates,
/// and must stay far below [`TIE`].
const MAX_EXTENT: usize = 256;
/// Where the table is built: a target well inside an imaginary world, so that every
/// offset is a valid coordinate.
const CANONICAL: i32 = 64;

/// The row of an (x, y) offset from the target.
#[inline]
fn row_of(ox: i32, oy: i32) -> usize {
    (ox + SPAN) as usize * ROWS_Y + (oy - Y_LOW) as usize
}

/// A set of cells around a target (offsets x, z in -4..=4, y in -5..=4): row `r`
/// holds z offsets -4..=4 in bits `9 * (r % 7)..` of word `r / 7`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mask([u64; WORDS]);

/// The position of an offset's bit in a [`Mask`]: `word * 64 + bit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MaskBit(u16);

impl MaskBit {
    fn of(offset: [i32; 3]) -> Self {
        let r = row_of(offset[0], offset[1]);
        let bit = (r % ROWS_PER_WORD) * 9 + (offset[2] + SPAN) as usize;
        Self(((r / ROWS_PER_WORD) * 64 + bit) as u16)
    }
}

impl Mask {
    fn insert(&mut self, bit: MaskBit) {
        self.0[usize::from(bit.0 >> 6)] |= 1 << (bit.0 & 63);
    }
}

/// The rays of one face from one standing offset.
#[derive(Clone, Copy, Debug, Default)]
struct FaceRays {
    /// Click points (bit k = point k of the face) whose ray is in reach and whose
    /// voxels are in the table.
    certain: u16,
    /// Click points whose reach test or walk is too close to a tie to tabulate:
    /// walked exactly.
    walk: u16,
    /// Which words of a neighbourhood [`Mask`] hold voxels that the `certain` rays
    /// enter (a face's rays touch at most 6 of the 13); per such word, in order
    /// from `words_from`, each ray's own voxels in [`FaceSet::ray_words`].
    words: u16,
    /// If some ray's walk meets an exact tie between x and z whose outcome depends
    /// on the target's coordinates (see [`Class`]), the face's index in
    /// [`RayTable::class_faces`]; else [`NOT_CLASS_DEPENDENT`].
    class_index: u16,
    words_from: u32,
}

/// [`FaceRays::class_index`] of a face whose rays depend on no class.
const NOT_CLASS_DEPENDENT: u16 = u16::MAX;

/// Faces' rays, as the ray walks produce them; searches read them gathered per
/// standing offset ([`EyeRays`]).
#[derive(Default)]
struct FaceSet {
    faces: Vec<FaceRays>,
    ray_words: Vec<[u64; POINTS_PER_FACE]>,
}

impl FaceSet {
    /// Adds the nine rays of `face` seen from standing offset `offset` of `target`;
    /// `settle_xz` settles exact x-z ties by this target's own arithmetic.
    fn push(
        &mut self,
        kind: Interaction,
        target: Cell,
        offset: [i32; 3],
        face: u8,
        settle_xz: bool,
    ) {
        let feet = standing_feet(target, offset[0], offset[1], offset[2]);
        let eye = eye_of(feet);
        let mut rays = FaceRays {
            class_index: NOT_CLASS_DEPENDENT,
            words_from: self.ray_words.len() as u32,
            ..FaceRays::default()
        };
        let mut paths = [Mask::default(); POINTS_PER_FACE];
        for (k, path) in paths.iter_mut().enumerate() {
            let click = click_point(kind, target, face, k);
            let d = [click[0] - eye[0], click[1] - eye[1], click[2] - eye[2]];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            if (r2 - REACH * REACH).abs() <= TIE {
                rays.walk |= 1 << k;
                continue;
            }
            if r2 > REACH * REACH {
                continue;
            }
            match trace(eye, d, settle_xz) {
                Ok(voxels) => {
                    rays.certain |= 1 << k;
                    for v in voxels {
                        path.insert(MaskBit::of([
                            v[0] - target.x,
                            v[1] - target.y,
                            v[2] - target.z,
                        ]));
                    }
                }
                // The caller numbers class-dependent faces.
                Err(Tie::Xz) => rays.class_index = 0,
                Err(Tie::Other) => rays.walk |= 1 << k,
            }
        }
        for w in 0..WORDS {
            if paths.iter().any(|p| p.0[w] != 0) {
                rays.words |= 1 << w;
                self.ray_words.push(paths.map(|p| p.0[w]));
            }
        }
        self.faces.push(rays);
    }
}

/// Bytes per row of a neighbourhood's [`ObstacleBytes`]: 9 z cells and padding,
/// whose cells are never obstacles.
const ROW_BYTES: usize = 16;
/// A padding cell: what unused entries of an [`EyeRays`] point at.
const NEVER_AN_OBSTACLE: u16 = ROW_BYTES as u16 - 1;
/// The most voxels the tabulated rays of one standing offset's faces enter.
const VOXELS_PER_EYE: usize = 16;

/// A neighbourhood's obstacles, one byte (0 or 1) per cell: row `r` (see
/// [`row_of`]) holds z offsets -4..=4 at `ROW_BYTES * r..`. A search writes every
/// row, so one buffer serves search after search without being cleared; the
/// bytes past each row's ninth stay 0.
#[derive(Clone)]
struct ObstacleBytes([u8; 2048]);

impl Default for ObstacleBytes {
    fn default() -> Self {
        Self([0; 2048])
    }
}

impl std::fmt::Debug for ObstacleBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObstacleBytes { .. }")
    }
}

impl ObstacleBytes {
    #[inline(always)]
    fn set_row(&mut self, row: usize, bits: u64) {
        let at = row * ROW_BYTES;
        self.0[at..at + 8].copy_from_slice(&SPREAD_BYTE[(bits & 0xFF) as usize].to_le_bytes());
        self.0[at + 8] = (bits >> 8 & 1) as u8;
    }

    /// 0 for a free cell, all ones for an obstacle.
    #[inline(always)]
    fn mask(&self, voxel: u16) -> u64 {
        0u64.wrapping_sub(u64::from(self.0[usize::from(voxel) & 2047]))
    }
}

/// The eight bits of a byte spread to the eight bytes of a word, each 0 or 1.
const SPREAD_BYTE: [u64; 256] = {
    let mut spread = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            spread[b] |= ((b as u64 >> k) & 1) << (8 * k);
            k += 1;
        }
        b += 1;
    }
    spread
};

/// All the tabulated rays of one standing offset, by the voxels they enter: a
/// search tests them voxel by voxel with no branch that depends on the
/// obstacles. Rays are numbered as candidates are, bit `9 * face + k`.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct EyeRays {
    /// Cells of [`ObstacleBytes`]; unused entries hold [`NEVER_AN_OBSTACLE`] (and
    /// no rays).
    voxels: [u16; VOXELS_PER_EYE],
    /// The rays in reach whose voxels are tabulated here.
    certain: u64,
    /// The rays too close to a tie to tabulate, walked exactly.
    walk: u64,
    /// Entries in use: testing only those costs a mispredicted loop exit now and
    /// then but saves half the work of a padded list.
    used: u8,
    /// The rays that enter each voxel: after the fields every search reads, so
    /// that an offset's first cache line holds them and its first few voxels' rays.
    rays: [u64; VOXELS_PER_EYE],
}

impl EyeRays {
    /// The rays that enter an obstacle.
    #[inline(always)]
    fn blocked(&self, obstacles: &ObstacleBytes) -> u64 {
        let mut blocked = 0;
        let n = usize::from(self.used).min(VOXELS_PER_EYE);
        for (&voxel, &rays) in self.voxels[..n].iter().zip(&self.rays[..n]) {
            blocked |= rays & obstacles.mask(voxel);
        }
        blocked
    }
}

/// An [`EyeRays`] being put together from faces' rays.
#[derive(Default)]
struct Gathering {
    voxels: Vec<(u16, u64)>,
    certain: u64,
    walk: u64,
}

impl Gathering {
    /// Starts from the rays already gathered for a standing offset.
    fn from_eye(eye: &EyeRays) -> Self {
        Self {
            voxels: (eye.voxels.iter().copied().zip(eye.rays))
                .filter(|&(_, rays)| rays != 0)
                .collect(),
            certain: eye.certain,
            walk: eye.walk,
        }
    }

    /// Adds the rays of `face`, described by `rays` in `set`.
    fn add_face(&mut self, set: &FaceSet, rays: &FaceRays, face: usize) {
        let shift = POINTS_PER_FACE * face;
        self.certain |= u64::from(rays.certain) << shift;
        self.walk |= u64::from(rays.walk) << shift;
        let from = rays.words_from as usize;
        for (j, w) in BitIter(u64::from(rays.words)).enumerate() {
            for (k, &ray) in set.ray_words[from + j].iter().enumerate() {
                for bit in BitIter(ray) {
                    let row = w * ROWS_PER_WORD + bit / 9;
                    let voxel = (row * ROW_BYTES + bit % 9) as u16;
                    let at = match self.voxels.iter().position(|&(v, _)| v == voxel) {
                        Some(at) => at,
                        None => {
                            self.voxels.push((voxel, 0));
                            self.voxels.len() - 1
                        }
                    };
                    self.voxels[at].1 |= 1 << (shift + k);
                }
            }
        }
    }

    /// # Panics
    /// If the rays enter more than [`VOXELS_PER_EYE`] voxels (a table built
    /// wrong).
    fn finish(self, eye: usize) -> EyeRays {
        assert!(
            self.voxels.len() <= VOXELS_PER_EYE,
            "standing offset {eye}: {} voxels",
            self.voxels.len()
        );
        let mut gathered = EyeRays {
            voxels: [NEVER_AN_OBSTACLE; VOXELS_PER_EYE],
            rays: [0; VOXELS_PER_EYE],
            certain: self.certain,
            walk: self.walk,
            used: self.voxels.len() as u8,
        };
        for (i, (voxel, rays)) in self.voxels.into_iter().enumerate() {
            gathered.voxels[i] = voxel;
            gathered.rays[i] = rays;
        }
        gathered
    }
}

/// Target coordinates whose click points lie at bitwise the same offsets from
/// them. A click coordinate is `x + c` rounded, for an integer `x` and a fixed
/// fraction `c`; how it rounds depends only on the power-of-two range that `x + c`
/// falls in, so the coordinates `0..=MAX_EXTENT` fall into a few dozen classes. A
/// ray's floats along x (z) are the same for all targets whose x (z) coordinates
/// share a class: the eye's own coordinate `x + 0.5 + dx` is exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Class(u8);

/// The classes of the coordinates `0..=MAX_EXTENT` and a representative of each.
struct Classes {
    of: Vec<Class>,
    representatives: Vec<i32>,
}

impl Class {
    fn all() -> &'static Classes {
        static CLASSES: OnceLock<Classes> = OnceLock::new();
        CLASSES.get_or_init(|| {
            let mut signatures: Vec<Vec<u64>> = Vec::new();
            let mut classes = Classes {
                of: Vec::new(),
                representatives: Vec::new(),
            };
            for x in 0..=MAX_EXTENT as i32 {
                let signature: Vec<u64> = [Interaction::Place, Interaction::Break]
                    .into_iter()
                    .flat_map(|kind| {
                        (0..6).flat_map(move |face| {
                            (0..POINTS_PER_FACE).flat_map(move |k| {
                                let p = click_point(kind, Cell::new(x, x, x), face, k);
                                p.map(|c| (c - f64::from(x)).to_bits())
                            })
                        })
                    })
                    .collect();
                let class = match signatures.iter().position(|s| *s == signature) {
                    Some(i) => i,
                    None => {
                        signatures.push(signature);
                        classes.representatives.push(x);
                        signatures.len() - 1
                    }
                };
                classes.of.push(Class(class as u8));
            }
            // Sets of classes are kept in 64-bit words.
            assert!(classes.representatives.len() <= 64, "too many classes");
            classes
        })
    }

    /// How many classes there are.
    fn count() -> usize {
        Self::all().representatives.len()
    }

    fn of(coordinate: i32) -> Self {
        Self::all().of[coordinate as usize]
    }

    /// The smallest coordinate of the class.
    fn representative(self) -> i32 {
        Self::all().representatives[usize::from(self.0)]
    }
}

/// Every ray of one interaction kind.
struct RayTable {
    kind: Interaction,
    /// Per standing offset, the faces (bit `2 * axis + side`) that can be seen at
    /// all: the others are out of reach or looked at through a block (see
    /// `viable_faces`).
    facing: Vec<u8>,
    /// Per standing offset and face, worked out at a target far from the origin
    /// (only the faces' summaries are kept: their rays are in `eyes`).
    faces: FaceSet,
    /// Per standing offset, its faces' rays gathered.
    eyes: Vec<EyeRays>,
    /// Per row of standing offsets and set of usable faces (bit `2 * axis +
    /// side`), the z offsets (bit `z + 4`) that see one of the faces, less the
    /// offsets the search skips ([`skipped_in_column`]): a search reads its
    /// standing cells' candidates per row with one load.
    seeing_rows: Vec<[u16; 64]>,
    /// Per face with class-dependent rays (in `faces` order), that face worked out
    /// for each pair of x and z classes of the target; built on first use.
    class_faces: Vec<(u16, u8)>,
    by_class: Vec<OnceLock<FaceSet>>,
    /// The standing offsets that see a class-dependent face, and per standing
    /// offset its place among them ([`NO_CLASS_FACE`] if none).
    class_eyes: Vec<u16>,
    class_slot: Vec<u16>,
    /// Per pair of classes, the gathered rays of `class_eyes` for targets of those
    /// classes (all their faces); built on first use.
    eyes_by_class: Vec<OnceLock<Vec<EyeRays>>>,
}

/// [`RayTable::class_slot`] of a standing offset that sees no class-dependent face.
const NO_CLASS_FACE: u16 = u16::MAX;

impl RayTable {
    fn get(kind: Interaction) -> &'static Self {
        static PLACE: OnceLock<RayTable> = OnceLock::new();
        static BREAK: OnceLock<RayTable> = OnceLock::new();
        match kind {
            Interaction::Place => PLACE.get_or_init(|| Self::build(kind)),
            Interaction::Break => BREAK.get_or_init(|| Self::build(kind)),
        }
    }

    fn build(kind: Interaction) -> Self {
        let target = Cell::new(CANONICAL, CANONICAL, CANONICAL);
        let mut table = Self {
            kind,
            facing: Vec::with_capacity(NUM_EYES),
            faces: FaceSet::default(),
            eyes: Vec::with_capacity(NUM_EYES),
            seeing_rows: Vec::new(),
            class_faces: Vec::new(),
            by_class: (0..Class::count() * Class::count())
                .map(|_| OnceLock::new())
                .collect(),
            class_eyes: Vec::new(),
            class_slot: vec![NO_CLASS_FACE; NUM_EYES],
            eyes_by_class: (0..Class::count() * Class::count())
                .map(|_| OnceLock::new())
                .collect(),
        };
        let mut facing_rows = vec![[0u16; 6]; NUM_EYES / 9];
        for eye in 0..NUM_EYES {
            let offset = offset_of(eye);
            let mut seen = facing(kind, offset);
            for face in 0..6u8 {
                table.faces.push(kind, target, offset, face, false);
                let rays = table.faces.faces.last_mut().expect("just pushed");
                if rays.class_index != NOT_CLASS_DEPENDENT {
                    rays.class_index = u16::try_from(table.class_faces.len())
                        .expect("fewer class-dependent faces than u16::MAX");
                    table.class_faces.push((eye as u16, face));
                } else if rays.certain | rays.walk == 0 {
                    // Every click point is out of reach: no need to look.
                    seen &= !(1 << face);
                }
            }
            table.facing.push(seen);
            let mut gathering = Gathering::default();
            for face in BitIter(u64::from(seen)) {
                facing_rows[eye / 9][face] |= 1 << (eye % 9);
                let rays = &table.faces.faces[eye * 6 + face];
                if rays.class_index == NOT_CLASS_DEPENDENT {
                    gathering.add_face(&table.faces, rays, face);
                } else if table.class_slot[eye] == NO_CLASS_FACE {
                    table.class_slot[eye] = table.class_eyes.len() as u16;
                    table.class_eyes.push(eye as u16);
                }
            }
            table.eyes.push(gathering.finish(eye));
        }
        // Searches read the gathered rays; the per-face words are not needed.
        table.faces.ray_words = Vec::new();
        let skipped = skipped_in_column(kind);
        table.seeing_rows = (facing_rows.iter().enumerate())
            .map(|(row, faces)| {
                let (ox, oy) = ((row / 9) as i32 - SPAN, (row % 9) as i32 + Y_LOW);
                let kept = if ox == 0 && skipped.contains(&oy) {
                    !(1u16 << SPAN)
                } else {
                    u16::MAX
                };
                std::array::from_fn(|usable| {
                    BitIter(usable as u64).fold(0, |acc, face| acc | faces[face]) & kept
                })
            })
            .collect();
        table
    }

    /// The class-dependent faces worked out for targets of these classes.
    fn for_classes(&self, x: Class, z: Class) -> &FaceSet {
        self.by_class[usize::from(x.0) * Class::count() + usize::from(z.0)].get_or_init(|| {
            let target = Cell::new(x.representative(), CANONICAL, z.representative());
            let mut set = FaceSet::default();
            for &(eye, face) in &self.class_faces {
                set.push(self.kind, target, offset_of(usize::from(eye)), face, true);
            }
            set
        })
    }

    /// The gathered rays of [`RayTable::class_eyes`] for targets of these classes.
    fn eyes_for_classes(&self, x: Class, z: Class) -> &[EyeRays] {
        self.eyes_by_class[usize::from(x.0) * Class::count() + usize::from(z.0)].get_or_init(|| {
            let set = self.for_classes(x, z);
            self.class_eyes
                .iter()
                .map(|&eye| {
                    let eye = usize::from(eye);
                    let mut gathering = Gathering::from_eye(&self.eyes[eye]);
                    for face in BitIter(u64::from(self.facing[eye])) {
                        let index = self.faces.faces[eye * 6 + face].class_index;
                        if index != NOT_CLASS_DEPENDENT {
                            gathering.add_face(set, &set.faces[usize::from(index)], face);
                        }
                    }
                    gathering.finish(eye)
                })
                .collect()
        })
    }
}

/// The faces an eye at a standing offset can see without looking through the
/// target (breaking) or through the block clicked against (placing); the
/// geometric half of `viable_faces`, exact because eyes sit at cell centres and
/// 0.6 above a cell boundary.
fn facing(kind: Interaction, offset: [i32; 3]) -> u8 {
    // The eye's position relative to the target cell, in tenths.
    let eye = [offset[0] * 10 + 5, offset[1] * 10 + 16, offset[2] * 10 + 5];
    let mut faces = 0;
    for axis in 0..3 {
        for side in 0..2u8 {
            let beyond_low = eye[axis] < 0;
            let beyond_high = eye[axis] > 10;
            let outside = if side == 0 { beyond_low } else { beyond_high };
            let ok = match kind {
                // The eye is never inside the target: those offsets are skipped.
                Interaction::Break => outside,
                Interaction::Place => {
                    let mut n = [0; 3];
                    n[axis] = if side == 0 { -1 } else { 1 };
                    let eye_voxel = [offset[0], offset[1] + 1, offset[2]];
                    !outside || eye_voxel == n
                }
            };
            if ok {
                faces |= 1 << (2 * axis as u8 + side);
            }
        }
    }
    faces
}

/// Why a ray's walk cannot be tabulated for every target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tie {
    /// x against z, both exact ties: settled per [`Class`] of the target.
    Xz,
    /// Anything else: the ray is walked in the world's own coordinates.
    Other,
}

/// The voxels the reference's walk enters from `eye` along `d` (see
/// `super::walk_ray`), unless one of its choices is within [`TIE`] of a tie. With
/// `settle_xz`, ties between x and z are settled by this ray's own floats.
fn trace(eye: [f64; 3], d: [f64; 3], settle_xz: bool) -> Result<Vec<[i32; 3]>, Tie> {
    let mut voxel = voxel_of(eye);
    let mut t = [1.0; 3];
    let mut delta = [1.0; 3];
    let mut step = [0; 3];
    for a in 0..3 {
        let s = 1f64.copysign(d[a]);
        let start = -s * eye[a];
        step[a] = s as i32;
        if d[a] != 0.0 {
            t[a] = ((start - floor(start)) / d[a]).abs();
            delta[a] = (1.0 / d[a]).abs();
        }
    }
    let mut out = Vec::new();
    loop {
        let a = if t[0] <= t[1] {
            if t[0] <= t[2] { 0 } else { 2 }
        } else if t[1] <= t[2] {
            1
        } else {
            2
        };
        // An axis the ray does not move along keeps exactly 1.0 everywhere.
        if d[a] != 0.0 && (t[a] - 1.0).abs() < TIE {
            return Err(Tie::Other);
        }
        if t[a] >= 1.0 {
            return Ok(out);
        }
        for b in 0..3 {
            if b != a && (t[b] - t[a]).abs() < TIE {
                let xz = a != 1 && b != 1;
                if !xz {
                    return Err(Tie::Other);
                }
                if !settle_xz {
                    return Err(Tie::Xz);
                }
            }
        }
        voxel[a] += step[a];
        t[a] += delta[a];
        out.push(voxel);
    }
}

/// Rows of a padded grid below the world: enough for the lowest standing offset.
const PAD_BELOW: usize = -Y_LOW as usize;
/// Rows of a padded grid above the world: enough for the cells above the highest
/// standing offset.
const PAD_ABOVE: usize = (Y_HIGH + 1) as usize;

/// Bits of the world's obstacle cells, one `u64` of z bits per (x, y) row, kept up
/// to date with the block ids; what a teleportation search reads its
/// neighbourhood from. The rows are padded with free rows, [`SPAN`] wide on each
/// side in x and as far as the standing offsets reach in y, so that a search
/// reads its whole neighbourhood with no test of where the world ends.
#[derive(Clone, Debug, Default)]
pub struct ObstacleRows {
    size: WorldSize,
    /// Rows per padded x column.
    padded_height: usize,
    rows: Vec<u64>,
    /// Per padded row, its z bits inside the world (none for a padding row).
    inside: Vec<u64>,
    /// The block ids the rows were last brought up to date with by
    /// [`ObstacleRows::sync_blocks`].
    synced: Vec<u8>,
}

impl ObstacleRows {
    /// Whether a world of this size can be served (depth at most 64, every extent
    /// at least 1 and small enough for the table's rounding margin).
    pub fn fits(size: WorldSize) -> bool {
        size.depth <= 64 && size.axes().iter().all(|&n| (1..=MAX_EXTENT).contains(&n))
    }

    /// Brings rows of the non-air blocks up to date with `ids`: only the cells that
    /// changed between air and not are touched.
    pub fn sync_blocks(&mut self, size: WorldSize, ids: &[u8]) {
        const CHUNK: usize = 64;
        if self.size == size && self.synced.len() == ids.len() && !self.rows.is_empty() {
            for (k, (a, b)) in self.synced.chunks(CHUNK).zip(ids.chunks(CHUNK)).enumerate() {
                if a == b {
                    continue;
                }
                for (j, (x, y)) in a.iter().zip(b).enumerate() {
                    if (*x == 0) != (*y == 0) {
                        let i = k * CHUNK + j;
                        let (row, z) = (i / size.depth, i % size.depth);
                        let at =
                            self.row_index((row / size.height) as i32, (row % size.height) as i32);
                        self.rows[at] ^= 1 << z;
                    }
                }
            }
            self.synced.copy_from_slice(ids);
            return;
        }
        self.rebuild(size, |i| ids[i] != 0);
        self.synced.extend_from_slice(ids);
    }

    /// Rebuilds the rows for a world from any obstacle predicate over linear cell
    /// indices (blocks and, for a caller that has them, other players' cells).
    pub fn rebuild(&mut self, size: WorldSize, is_obstacle: impl Fn(usize) -> bool) {
        self.size = size;
        self.synced.clear();
        self.rows.clear();
        self.inside.clear();
        if !Self::fits(size) {
            return;
        }
        prepare_tables(size);
        self.padded_height = size.height + PAD_BELOW + PAD_ABOVE;
        let num_rows = (size.width + 2 * SPAN as usize) * self.padded_height;
        self.rows.resize(num_rows, 0);
        self.inside.resize(num_rows, 0);
        let all_z = u64::MAX >> (64 - size.depth);
        for x in 0..size.width {
            for y in 0..size.height {
                let at = self.row_index(x as i32, y as i32);
                self.inside[at] = all_z;
                let first = (x * size.height + y) * size.depth;
                for z in 0..size.depth {
                    if is_obstacle(first + z) {
                        self.rows[at] |= 1 << z;
                    }
                }
            }
        }
    }

    /// Where the row of `(x, y)` is, for x in `-SPAN..width + SPAN` and y in
    /// `-PAD_BELOW..height + PAD_ABOVE`.
    #[inline(always)]
    fn row_index(&self, x: i32, y: i32) -> usize {
        (x + SPAN) as usize * self.padded_height + (y + PAD_BELOW as i32) as usize
    }

    /// Whether a cell inside the world is an obstacle.
    fn is_obstacle(&self, cell: Cell) -> bool {
        self.rows[self.row_index(cell.x, cell.y)] >> cell.z & 1 != 0
    }

    /// Whether some face neighbour of `cell` other than `except` is free: inside
    /// the world and no obstacle, or above it. A ray's last voxel is entered from
    /// such a cell (or the ray starts in it), so a cell with none cannot be seen.
    fn has_free_neighbour(&self, cell: Cell, except: Cell) -> bool {
        let size = self.size;
        cell.face_neighbours().into_iter().any(|m| {
            m != except
                    && (0..size.width as i32).contains(&m.x)
                    && (0..size.depth as i32).contains(&m.z)
                    && m.y >= 0
                    // Rows above the world are padding: free.
                    && !self.is_obstacle(m)
        })
    }

    /// The rows, if they describe a world of this size.
    fn for_size(&self, size: WorldSize) -> Option<&Self> {
        (self.size == size && !self.rows.is_empty()).then_some(self)
    }
}

/// Builds every part of the ray tables that searches in a world of this size can
/// need (the class-dependent faces of each pair of x and z classes it has), so
/// that no search builds or allocates.
fn prepare_tables(size: WorldSize) {
    let classes = |extent: usize| (0..extent as i32).fold(0u64, |set, c| set | 1 << Class::of(c).0);
    let (xs, zs) = (classes(size.width), classes(size.depth));
    for kind in [Interaction::Place, Interaction::Break] {
        let table = RayTable::get(kind);
        for x in BitIter(xs) {
            for z in BitIter(zs) {
                table.eyes_for_classes(Class(x as u8), Class(z as u8));
            }
        }
    }
}

/// The nine z bits of a row around `z`, bit 0 = `z - 4`; cells outside `0..64`
/// read as 0.
#[inline(always)]
fn window(row: u64, z: i32) -> u64 {
    let shifted = if z >= SPAN {
        row >> (z - SPAN)
    } else {
        row << (SPAN - z)
    };
    shifted & 0x1FF
}

/// One teleportation search's candidates, grouped by standing position: for each
/// standing offset with any, the set of its click points (bit `9 * face + k`).
/// Candidates are numbered in the reference's order.
#[derive(Clone, Debug, Default)]
pub struct CandidateSet {
    /// `None` when the candidates were found without the table and are listed.
    kind: Option<Interaction>,
    target: Cell,
    /// The first `num_groups` entries are in use; the rest are scratch, so that a
    /// search writes every standing offset's entry and keeps those with any.
    groups: Vec<(u16, u64)>,
    num_groups: usize,
    listed: Vec<Candidate>,
    len: usize,
    /// The last search's neighbourhood, kept to save clearing a new one (none
    /// until a search needs one, so that an empty set allocates nothing).
    obstacles: Option<Box<ObstacleBytes>>,
}

impl CandidateSet {
    /// The number of candidates.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is none (the place or break is infeasible).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The candidate with this index, in the reference's order.
    ///
    /// # Panics
    /// If `index >= self.len()`.
    pub fn get(&self, mut index: usize) -> Candidate {
        assert!(index < self.len, "candidate {index} of {}", self.len);
        if self.kind.is_none() {
            return self.listed[index];
        }
        for &(eye, mut points) in &self.groups[..self.num_groups] {
            let n = points.count_ones() as usize;
            if index < n {
                for _ in 0..index {
                    points &= points - 1;
                }
                return self.candidate(eye, points.trailing_zeros() as usize);
            }
            index -= n;
        }
        unreachable!("the groups hold len candidates")
    }

    /// Every candidate, in order.
    pub fn iter(&self) -> impl Iterator<Item = Candidate> + '_ {
        let grouped = self.groups[..self.num_groups]
            .iter()
            .flat_map(move |&(eye, points)| {
                BitIter(points).map(move |point| self.candidate(eye, point))
            });
        self.listed.iter().copied().chain(grouped)
    }

    /// Refills the set with candidates found some other way, in order.
    pub(super) fn fill_listed(&mut self, fill: impl FnOnce(&mut dyn FnMut(Candidate))) {
        self.kind = None;
        self.num_groups = 0;
        self.listed.clear();
        fill(&mut |c| self.listed.push(c));
        self.len = self.listed.len();
    }

    fn candidate(&self, eye: u16, point: usize) -> Candidate {
        let kind = self.kind.expect("a search filled the set");
        candidate_at(kind, self.target, usize::from(eye), point)
    }
}

/// The set bits of a word, lowest first.
struct BitIter(u64);

impl Iterator for BitIter {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        (self.0 != 0).then(|| {
            let i = self.0.trailing_zeros() as usize;
            self.0 &= self.0 - 1;
            i
        })
    }
}

/// The standing offset `(dx, dy, dz)` of a table index.
fn offset_of(eye: usize) -> [i32; 3] {
    let (dx, rest) = (eye / 81, eye % 81);
    [
        dx as i32 - SPAN,
        (rest / 9) as i32 + Y_LOW,
        (rest % 9) as i32 - SPAN,
    ]
}

fn candidate_at(kind: Interaction, target: Cell, eye: usize, point: usize) -> Candidate {
    let [dx, dy, dz] = offset_of(eye);
    let feet = standing_feet(target, dx, dy, dz);
    Candidate {
        viewpoint: eye_of(feet),
        click: click_point(
            kind,
            target,
            (point / POINTS_PER_FACE) as u8,
            point % POINTS_PER_FACE,
        ),
    }
}

/// Runs the teleportation search for `target` with the table, filling `out`, and
/// a piece of `meanwhile` per standing position it visits after its first
/// candidate.
/// Returns `false` (leaving `out` empty) if the world cannot be served: its size
/// does not fit, or its rows are not up to date with its size.
pub(super) fn search_into<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    out: &mut CandidateSet,
    mut meanwhile: impl Meanwhile,
) -> bool {
    out.kind = Some(kind);
    out.target = target;
    out.num_groups = 0;
    out.listed.clear();
    out.len = 0;
    let size = world.size();
    let Some(grid) = world.obstacle_rows().and_then(|r| r.for_size(size)) else {
        return false;
    };
    let table = RayTable::get(kind);

    // Faces with something to click against (placing) or a free outside neighbour
    // (breaking); a break face on the world's border has no click points.
    let mut usable = 0u8;
    let t = target.to_array();
    for axis in 0..3 {
        for side in 0..2u8 {
            let mut n = t;
            n[axis] += if side == 0 { -1 } else { 1 };
            let neighbour = Cell::new(n[0], n[1], n[2]);
            if !size.contains(neighbour) {
                continue;
            }
            let ok = match kind {
                Interaction::Place => !world.is_air(n[0], n[1], n[2]),
                // The walk ends in the neighbour, entering it from one of its
                // own neighbours (never the target, a block) or starting in it.
                Interaction::Break => {
                    !grid.is_obstacle(neighbour) && grid.has_free_neighbour(neighbour, target)
                }
            };
            if ok {
                usable |= 1 << (2 * axis as u8 + side);
            }
        }
    }
    // A ray to a click point inside the target enters it from a free neighbour
    // (the voxel before the last is entered and tested, or is the eye's own free
    // cell; the eye is never in the target itself).
    if usable == 0 || (kind == Interaction::Place && !grid.has_free_neighbour(target, target)) {
        return true;
    }
    let usable_rays =
        BitIter(u64::from(usable)).fold(0u64, |acc, face| acc | 0x1FF << (POINTS_PER_FACE * face));

    // The neighbourhood's obstacles (every row written, from the padded grid: cells
    // outside the world are free), and in the same pass the standing cells
    // (inside, air, with air or the sky above) that see a usable face: per x
    // offset, one set of its 81 standing offsets.
    let obstacles = &mut **out.obstacles.get_or_insert_with(Box::default);
    let seeing = &table.seeing_rows[..];
    let mut columns = [0u128; 9];
    for (c, column) in columns.iter_mut().enumerate() {
        let ox = c as i32 - SPAN;
        let first = grid.row_index(target.x + ox, target.y + Y_LOW);
        let here_rows: &[u64; ROWS_Y] = (grid.rows[first..first + ROWS_Y].try_into())
            .expect("the grid is padded to every standing offset");
        let inside_rows: &[u64; ROWS_Y] = (grid.inside[first..first + ROWS_Y].try_into())
            .expect("the grid is padded to every standing offset");
        let mut below = window(here_rows[0], target.z);
        obstacles.set_row(c * ROWS_Y, below);
        for k in 1..ROWS_Y {
            let here = window(here_rows[k], target.z);
            obstacles.set_row(c * ROWS_Y + k, here);
            // The standing row below: its cells inside and free, with this row
            // free above them.
            let row = c * 9 + k - 1;
            let bits = window(inside_rows[k - 1], target.z)
                & !below
                & !here
                & u64::from(seeing[row][usize::from(usable)]);
            *column |= u128::from(bits) << (9 * (k - 1));
            below = here;
        }
    }
    // All 729 standing offsets as one set, visited a word at a time, so that the
    // loop over them ends a word at a time rather than a row at a time.
    let mut standing = [0u64; NUM_EYES.div_ceil(64) + 1];
    for (c, &column) in columns.iter().enumerate() {
        let (word, shift) = (c * 81 / 64, c * 81 % 64);
        let low = column << shift;
        standing[word] |= low as u64;
        standing[word + 1] |= (low >> 64) as u64;
        if shift != 0 {
            standing[word + 2] |= (column >> (128 - shift)) as u64;
        }
    }

    let class_eyes = table.eyes_for_classes(Class::of(target.x), Class::of(target.z));
    // Locals, so that writing groups cannot alias the table's slices.
    let (eyes, class_slot) = (&table.eyes[..], &table.class_slot[..]);
    let mut groups = std::mem::take(&mut out.groups);
    if groups.len() < NUM_EYES {
        groups.resize(NUM_EYES, (0, 0));
    }
    let mut num_groups = 0;
    for (w, &word) in standing.iter().enumerate() {
        for bit in BitIter(word) {
            if num_groups != 0 {
                meanwhile.run_some();
            }
            let eye = w * 64 + bit;
            let slot = class_slot[eye];
            let rays = if slot == NO_CLASS_FACE {
                &eyes[eye]
            } else {
                &class_eyes[usize::from(slot)]
            };
            let mut points = rays.certain & usable_rays & !rays.blocked(obstacles);
            if rays.walk & usable_rays != 0 {
                points |= walk_rays(world, kind, target, eye, rays.walk & usable_rays);
            }
            // Written whether or not it has any, kept only if it has.
            groups[num_groups] = (eye as u16, points);
            num_groups += usize::from(points != 0);
        }
    }
    // Counted once the loop is done, and only where there are any.
    out.len = (groups[..num_groups].iter())
        .map(|&(_, points)| points.count_ones() as usize)
        .sum();
    out.groups = groups;
    out.num_groups = num_groups;
    true
}

/// The rays among `rays` (bit `9 * face + k`) from standing offset `eye` that
/// reach their click points, walked in the world's own coordinates: for rays the
/// table could not settle (none in the tables built today; kept so that a tie the
/// classes do not cover stays exact).
#[cold]
#[inline(never)]
fn walk_rays<W: SearchWorld>(
    world: &W,
    kind: Interaction,
    target: Cell,
    eye: usize,
    rays: u64,
) -> u64 {
    let [dx, dy, dz] = offset_of(eye);
    let feet = standing_feet(target, dx, dy, dz);
    let eye = Eye::new(eye_of(feet));
    BitIter(rays)
        .filter(|&ray| {
            let (face, k) = (ray / POINTS_PER_FACE, ray % POINTS_PER_FACE);
            reachable(world, &eye, click_point(kind, target, face as u8, k))
        })
        .fold(0, |acc, ray| acc | 1 << ray)
}

/// The index of a standing offset in the table (for tests).
#[cfg(test)]
fn eye_index(offset: [i32; 3]) -> usize {
    ((offset[0] + SPAN) as usize * 9 + (offset[1] - Y_LOW) as usize) * 9
        + (offset[2] + SPAN) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::viewpoint::{ray_in_reach, walk_ray};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn synced_rows_equal_rebuilt_ones() {
        let mut rng = StdRng::seed_from_u64(9);
        let size = WorldSize::new(11, 10, 10);
        let mut ids: Vec<u8> = (0..size.num_cells())
            .map(|_| if rng.random_bool(0.3) { 3 } else { 0 })
            .collect();
        let mut synced = ObstacleRows::default();
        for step in 0..500 {
            // Mostly one or two edits, sometimes many (a reset), sometimes a change
            // of block type only.
            let edits = match step % 50 {
                0 => 200,
                _ => rng.random_range(0..3),
            };
            for _ in 0..edits {
                let i = rng.random_range(0..ids.len());
                ids[i] = if ids[i] == 0 {
                    rng.random_range(1..10)
                } else {
                    rng.random_range(0..3)
                };
            }
            synced.sync_blocks(size, &ids);
            let mut fresh = ObstacleRows::default();
            fresh.rebuild(size, |i| ids[i] != 0);
            assert_eq!(synced.rows, fresh.rows, "step {step}");
        }
    }

    #[test]
    fn offsets_and_indices_agree() {
        for eye in 0..NUM_EYES {
            assert_eq!(eye_index(offset_of(eye)), eye);
        }
        let mut seen = std::collections::HashSet::new();
        for ox in -SPAN..=SPAN {
            for oy in Y_LOW..=Y_HIGH + 1 {
                for oz in -SPAN..=SPAN {
                    assert!(seen.insert(MaskBit::of([ox, oy, oz]).0));
                }
            }
        }
        assert!(seen.iter().all(|&b| usize::from(b) < WORDS * 64));
    }

    #[test]
    fn every_ray_is_tabulated() {
        for kind in [Interaction::Place, Interaction::Break] {
            let table = RayTable::get(kind);
            let count = |set: &FaceSet, f: fn(&FaceRays) -> u16| -> u32 {
                set.faces.iter().map(|r| f(r).count_ones()).sum()
            };
            let certain = count(&table.faces, |r| r.certain);
            assert!(certain > 15_000, "{kind:?}: {certain} tabulated");
            // Every near tie is an exact one between x and z, settled per class.
            assert_eq!(count(&table.faces, |r| r.walk), 0);
            assert!(!table.class_faces.is_empty());
            for x in 0..Class::count() as u8 {
                for z in 0..Class::count() as u8 {
                    let set = table.for_classes(Class(x), Class(z));
                    assert_eq!(count(set, |r| r.walk), 0);
                    assert!(
                        set.faces
                            .iter()
                            .all(|r| r.class_index == NOT_CLASS_DEPENDENT)
                    );
                }
            }
        }
    }

    #[test]
    fn coordinates_of_a_class_have_the_same_click_offsets() {
        // A few dozen classes: per power-of-two range, its ends behave apart.
        assert!(
            (9..=40).contains(&Class::count()),
            "{} classes",
            Class::count()
        );
        for x in 0..=MAX_EXTENT as i32 {
            let r = Class::of(x).representative();
            assert!(r <= x && Class::of(r) == Class::of(x));
            for kind in [Interaction::Place, Interaction::Break] {
                for face in 0..6 {
                    for k in 0..POINTS_PER_FACE {
                        let here = click_point(kind, Cell::new(x, x, x), face, k);
                        let there = click_point(kind, Cell::new(r, r, r), face, k);
                        for a in 0..3 {
                            assert_eq!(here[a] - f64::from(x), there[a] - f64::from(r));
                        }
                    }
                }
            }
        }
    }

    /// An all-air world, for walking rays and recording every voxel they enter.
    struct Air(WorldSize, Vec<u8>);

    impl SearchWorld for Air {
        fn size(&self) -> WorldSize {
            self.0
        }
        fn ids(&self) -> &[u8] {
            &self.1
        }
        fn is_obstacle_player(&self, _: i32, _: i32, _: i32) -> bool {
            false
        }
    }

    #[test]
    fn class_dependent_rays_walk_as_their_class_says() {
        let size = WorldSize::new(MAX_EXTENT, 12, 64);
        let world = Air(size, vec![0; size.num_cells()]);
        let mut rng = StdRng::seed_from_u64(3);
        // Every x with a few z, every z with a few x.
        let mut targets = Vec::new();
        for x in 0..size.width as i32 {
            targets.push(Cell::new(
                x,
                rng.random_range(0..12),
                rng.random_range(0..64),
            ));
        }
        for z in 0..size.depth as i32 {
            targets.push(Cell::new(
                rng.random_range(0..256),
                rng.random_range(0..12),
                z,
            ));
        }
        let mut compared = 0;
        for kind in [Interaction::Place, Interaction::Break] {
            let table = RayTable::get(kind);
            for &target in &targets {
                let set = table.for_classes(Class::of(target.x), Class::of(target.z));
                for (&(eye, face), rays) in table.class_faces.iter().zip(&set.faces) {
                    let [dx, dy, dz] = offset_of(usize::from(eye));
                    let mut n = [0; 3];
                    n[usize::from(face / 2)] = if face % 2 == 0 { -1 } else { 1 };
                    // Standing inside the world, a face with a neighbour there.
                    if !size.contains(target.offset(dx, dy, dz))
                        || !size.contains(target.offset(n[0], n[1], n[2]))
                    {
                        continue;
                    }
                    let feet = standing_feet(target, dx, dy, dz);
                    let eye_info = Eye::new(eye_of(feet));
                    for k in BitIter(u64::from(rays.certain)) {
                        let click = click_point(kind, target, face, k);
                        let d = ray_in_reach(eye_info.pos, click).expect("in reach");
                        let mut walked = Mask::default();
                        walk_ray(&world, &eye_info, d, |i| {
                            let c = size.cell(crate::CellIndex(i as u32));
                            walked.insert(MaskBit::of([
                                c.x - target.x,
                                c.y - target.y,
                                c.z - target.z,
                            ]));
                        })
                        .expect("all air");
                        // The walk's voxels in this world, without those above it.
                        let mut tabulated = Mask::default();
                        let from = rays.words_from as usize;
                        for (j, w) in BitIter(u64::from(rays.words)).enumerate() {
                            tabulated.0[w] = set.ray_words[from + j][k];
                        }
                        let mut above_world = Mask::default();
                        for ox in -SPAN..=SPAN {
                            for oy in Y_LOW..=Y_HIGH + 1 {
                                if target.y + oy >= size.height as i32 {
                                    for oz in -SPAN..=SPAN {
                                        above_world.insert(MaskBit::of([ox, oy, oz]));
                                    }
                                }
                            }
                        }
                        for (t, a) in tabulated.0.iter_mut().zip(&above_world.0) {
                            *t &= !a;
                        }
                        assert_eq!(
                            walked, tabulated,
                            "{kind:?} {target} eye {eye} face {face} point {k}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 100_000, "{compared} rays compared");
    }

    #[test]
    fn free_neighbours_are_inside_or_above_the_world() {
        let size = WorldSize::new(3, 3, 3);
        let mut rows = ObstacleRows::default();
        // Everything solid but the centre.
        let centre = size.index(Cell::new(1, 1, 1)).get();
        rows.rebuild(size, |i| i != centre);
        let none = Cell::new(-9, -9, -9);
        // A corner's neighbours are blocks or outside the world.
        assert!(!rows.has_free_neighbour(Cell::new(0, 0, 0), none));
        // The centre's neighbours are blocks; the blocks beside it see it.
        assert!(!rows.has_free_neighbour(Cell::new(1, 1, 1), none));
        assert!(rows.has_free_neighbour(Cell::new(0, 1, 1), none));
        assert!(!rows.has_free_neighbour(Cell::new(0, 1, 1), Cell::new(1, 1, 1)));
        // Above the top is free; beside the world is not.
        assert!(rows.has_free_neighbour(Cell::new(0, 2, 0), none));
        assert!(!rows.has_free_neighbour(Cell::new(0, 2, 0), Cell::new(0, 3, 0)));
    }

    #[test]
    fn windows_read_outside_cells_as_zero() {
        let row = 0b1011u64;
        assert_eq!(window(row, 4), 0b1011);
        assert_eq!(window(row, 0), 0b1011 << 4);
        assert_eq!(window(row, 6), 0b10);
        assert_eq!(window(u64::MAX, 63), 0x1F);
    }
}
