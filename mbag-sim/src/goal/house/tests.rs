use std::collections::VecDeque;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use super::*;
use crate::NUM_BLOCKS;
use crate::goal::dataset::{DEFAULT_HOUSES_DIR, HouseFiles};
use crate::goal::stats::{GoalStats, Ground, PartShares, StatsSummary};
use crate::goal::{GeneratorConfig, GoalConfig};

/// The structure size of the paper's 11x10x10 world (the env keeps a border).
const PAPER: WorldSize = WorldSize::new(9, 8, 8);

fn house(seed: u64, size: WorldSize) -> Blocks {
    ProceduralHouse::default()
        .generate(size, &mut StdRng::seed_from_u64(seed))
        .unwrap()
}

fn id(b: &Blocks, x: usize, y: usize, z: usize) -> u8 {
    b.ids()[flat(b.size(), x, y, z)]
}

/// Air cells at y >= 1 reachable by face steps from the air around and above the
/// house, in a grid padded by one cell on each side and on top. Returns the
/// reachability of the house's own cells.
fn reachable_from_outside(b: &Blocks) -> Vec<bool> {
    let s = b.size();
    let (w, h, d) = (s.width + 2, s.height + 1, s.depth + 2);
    let open = |x: usize, y: usize, z: usize| {
        let inside = (1..=s.width).contains(&x) && y < s.height && (1..=s.depth).contains(&z);
        !inside || id(b, x - 1, y, z - 1) == 0
    };
    let mut seen = vec![false; w * h * d];
    let index = |x: usize, y: usize, z: usize| (x * h + y) * d + z;
    let mut queue: VecDeque<(usize, usize, usize)> = VecDeque::from([(0, h - 1, 0)]);
    seen[index(0, h - 1, 0)] = true;
    while let Some((x, y, z)) = queue.pop_front() {
        let steps = [
            (x.wrapping_sub(1), y, z),
            (x + 1, y, z),
            (x, y.wrapping_sub(1), z),
            (x, y + 1, z),
            (x, y, z.wrapping_sub(1)),
            (x, y, z + 1),
        ];
        for (nx, ny, nz) in steps {
            // Layer 0 is ground outside and foundation inside: never walked through.
            if nx < w
                && (1..h).contains(&ny)
                && nz < d
                && !seen[index(nx, ny, nz)]
                && open(nx, ny, nz)
            {
                seen[index(nx, ny, nz)] = true;
                queue.push_back((nx, ny, nz));
            }
        }
    }
    let mut out = vec![false; s.num_cells()];
    for x in 0..s.width {
        for y in 0..s.height {
            for z in 0..s.depth {
                out[flat(s, x, y, z)] = seen[index(x + 1, y, z + 1)];
            }
        }
    }
    out
}

/// The door's cells: wall cells at y = 1 and 2 that are air.
fn door_cells(b: &Blocks) -> Vec<(usize, usize)> {
    let s = b.size();
    let mut cells = Vec::new();
    for x in 0..s.width {
        for z in 0..s.depth {
            let on_wall = x == 0 || z == 0 || x == s.width - 1 || z == s.depth - 1;
            if on_wall && id(b, x, 1, z) == 0 && id(b, x, 2, z) == 0 {
                cells.push((x, z));
            }
        }
    }
    cells
}

#[test]
fn fits_every_requested_size() {
    for (seed, size) in (0..300).zip(
        [
            PAPER,
            WorldSize::new(3, 4, 3),
            WorldSize::new(4, 6, 12),
            WorldSize::new(30, 30, 30),
        ]
        .into_iter()
        .cycle(),
    ) {
        let b = house(seed, size);
        let s = b.size();
        assert!(
            s.width <= size.width && s.height <= size.height && s.depth <= size.depth,
            "seed {seed}: {s} in {size}"
        );
        assert!(
            s.width >= 3 && s.height >= 4 && s.depth >= 3,
            "seed {seed}: {s}"
        );
    }
    let err = ProceduralHouse::default()
        .generate(WorldSize::new(9, 3, 9), &mut StdRng::seed_from_u64(0))
        .unwrap_err();
    assert!(matches!(err, GoalError::SizeTooSmall { .. }), "{err}");
}

#[test]
fn same_seed_same_house_and_seeds_differ() {
    assert_eq!(house(7, PAPER), house(7, PAPER));
    let distinct: std::collections::HashSet<Vec<u8>> = (0..50)
        .map(|seed| house(seed, PAPER).ids().to_vec())
        .collect();
    assert!(distinct.len() >= 48, "{} distinct of 50", distinct.len());
}

#[test]
fn only_placeable_blocks_and_a_full_foundation() {
    for seed in 0..200 {
        let b = house(seed, PAPER);
        for &i in b.ids() {
            assert!(i == 0 || BlockId(i).is_placeable(), "seed {seed}: id {i}");
        }
        let s = b.size();
        for x in 0..s.width {
            for z in 0..s.depth {
                assert_ne!(id(&b, x, 0, z), 0, "seed {seed}: foundation hole");
            }
        }
    }
}

#[test]
fn door_leads_in_from_outside_and_walls_enclose_the_rest() {
    for seed in 0..200 {
        let mut b = house(seed, PAPER);
        let s = b.size();
        let doors = door_cells(&b);
        assert_eq!(doors.len(), 1, "seed {seed}: door cells {doors:?}");
        let (dx, dz) = doors[0];
        let corner = (dx == 0 || dx == s.width - 1) && (dz == 0 || dz == s.depth - 1);
        assert!(!corner, "seed {seed}: door at a corner");
        // The ground-level cell just inside the door, and every other ground-level
        // interior cell (the ground floor is one room), can be walked to.
        let reach = reachable_from_outside(&b);
        for x in 1..s.width - 1 {
            for z in 1..s.depth - 1 {
                assert!(
                    reach[flat(s, x, 1, z)],
                    "seed {seed}: ({x}, 1, {z}) unreachable"
                );
            }
        }
        // Closing the door seals the inside: the walls, windows and roof have no gap.
        let (i1, i2) = (flat(s, dx, 1, dz), flat(s, dx, 2, dz));
        b.ids_mut()[i1] = BlockId::PLANKS.0;
        b.ids_mut()[i2] = BlockId::PLANKS.0;
        let reach = reachable_from_outside(&b);
        for x in 1..s.width - 1 {
            for z in 1..s.depth - 1 {
                assert!(!reach[flat(s, x, 1, z)], "seed {seed}: ({x}, 1, {z}) open");
            }
        }
    }
}

#[test]
fn a_roof_covers_every_column() {
    for seed in 0..200 {
        let b = house(seed, PAPER);
        let s = b.size();
        for x in 0..s.width {
            for z in 0..s.depth {
                // Above the door's height, something covers each column.
                assert!(
                    (3..s.height).any(|y| id(&b, x, y, z) != 0),
                    "seed {seed}: column ({x}, {z}) open to the sky"
                );
            }
        }
        let top = (0..s.width)
            .flat_map(|x| (0..s.depth).map(move |z| (x, z)))
            .filter(|&(x, z)| id(&b, x, s.height - 1, z) != 0)
            .count();
        assert!(top > 0, "seed {seed}: empty top layer");
    }
}

#[test]
fn every_roof_kind_and_a_second_storey_appear() {
    let only = |roof: RoofWeights| ProceduralHouseConfig {
        roof,
        ..ProceduralHouseConfig::default()
    };
    let zero = RoofWeights {
        flat: 0.0,
        gabled: 0.0,
        pyramid: 0.0,
    };
    let flat_roof = only(RoofWeights { flat: 1.0, ..zero });
    let b = ProceduralHouse::new(flat_roof)
        .generate(PAPER, &mut StdRng::seed_from_u64(3))
        .unwrap();
    let s = b.size();
    let top = (0..s.width * s.depth)
        .filter(|i| id(&b, i / s.depth, s.height - 1, i % s.depth) != 0)
        .count();
    assert_eq!(top, s.width * s.depth, "a flat roof covers the footprint");
    for roof in [
        RoofWeights {
            gabled: 1.0,
            ..zero
        },
        RoofWeights {
            pyramid: 1.0,
            ..zero
        },
    ] {
        // A stepped roof's top layer is smaller than its footprint.
        let b = ProceduralHouse::new(only(roof))
            .generate(WorldSize::new(9, 30, 8), &mut StdRng::seed_from_u64(3))
            .unwrap();
        let s = b.size();
        let top = (0..s.width * s.depth)
            .filter(|i| id(&b, i / s.depth, s.height - 1, i % s.depth) != 0)
            .count();
        assert!(top < s.width * s.depth, "{roof:?}: top layer {top}");
    }
    let tall = (0..50)
        .filter(|&seed| house(seed, WorldSize::new(9, 12, 8)).size().height >= 9)
        .count();
    assert!(tall > 5, "{tall} two-storey houses of 50");
}

#[test]
fn fill_ratio_stays_in_the_range_of_real_houses() {
    // The held-out houses as goals fill 40% to 76% of their bounding boxes; each
    // generated house must be within 0.15 of that range.
    let real: Vec<f64> = held_out_goals()
        .iter()
        .map(|goal| GoalStats::of(goal, Ground::Layer0Dirt).fill_ratio)
        .collect();
    let lo = real.iter().copied().fold(f64::INFINITY, f64::min) - 0.15;
    let hi = real.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 0.15;
    for seed in 0..200 {
        let s = GoalStats::of(&house(seed, PAPER), Ground::None);
        assert!(
            (lo..=hi).contains(&s.fill_ratio),
            "seed {seed}: fill ratio {} outside [{lo:.3}, {hi:.3}]",
            s.fill_ratio
        );
    }
}

#[test]
fn config_parses_and_names_bad_keys() {
    let c = GeneratorConfig::from_json(
        "procedural_house",
        &json!({"width": [4, 6], "roof": {"flat": 0, "gabled": 1},
            "wall_materials": {"wool": 1}}),
    )
    .unwrap();
    let GeneratorConfig::ProceduralHouse(c) = c else {
        panic!("{c:?}")
    };
    assert_eq!(c.width, Span::new(4, 6));
    assert_eq!(c.roof.pyramid, RoofWeights::default().pyramid);
    let b = ProceduralHouse::new(c)
        .generate(PAPER, &mut StdRng::seed_from_u64(1))
        .unwrap();
    assert!((4..=6).contains(&b.size().width));
    assert!(b.ids().contains(&BlockId::WOOL.0));
    for (config, needle) in [
        (json!({"colour": 1}), "colour"),
        (json!({"roof": {"dome": 1}}), "dome"),
        (json!({"width": [6, 4]}), "min <= max"),
        (json!({"width": [2, 4]}), "width"),
        (json!({"storey_height": [1, 3]}), "storey_height"),
        (json!({"window_prob": 1.5}), "window_prob"),
        (json!({"roof_materials": {"bedrock": 1}}), "bedrock"),
        (
            json!({"roof": {"flat": 0, "gabled": 0, "pyramid": 0}}),
            "roof",
        ),
    ] {
        let err = GeneratorConfig::from_json("procedural_house", &config).unwrap_err();
        assert!(err.to_string().contains(needle), "{config}: {err}");
    }
}

/// Each shared house as a goal of the paper's world: through the held-out chain
/// once (placement, its only random step, does not change the statistics).
fn held_out_goals() -> Vec<Blocks> {
    let dir = &crate::from_project_root(DEFAULT_HOUSES_DIR);
    let houses = HouseFiles::load(dir).unwrap();
    let mut rng = StdRng::seed_from_u64(0);
    houses
        .houses()
        .iter()
        .map(|house| {
            let mut chain = GoalConfig::held_out(dir);
            chain.generator = GeneratorConfig::SetGoal(vec![house.blocks.clone()]);
            chain.build().unwrap().generate(PAPER, &mut rng).unwrap()
        })
        .collect()
}

#[test]
fn default_tables_match_the_shared_houses() {
    let parts: Vec<PartShares> = held_out_goals()
        .iter()
        .map(|goal| PartShares::of(goal, Ground::Layer0Dirt))
        .collect();
    let measured = PartShares::mean(&parts);
    // Each table is its part's shares less the blocks placed by other rules.
    let check =
        |name: &str, shares: [f64; NUM_BLOCKS], left_out: BlockId, table: &[(BlockId, f64)]| {
            let kept = 1.0 - shares[usize::from(left_out.0)];
            let table = materials::table(table);
            for (b, share) in shares.iter().enumerate().skip(2) {
                let block = BlockId(b as u8);
                if block == left_out {
                    continue;
                }
                let want = share / kept;
                let have = table.probability(block);
                assert!(
                    (want - have).abs() < 0.01,
                    "{name} {block}: measured {want:.3}, table {have:.3}"
                );
            }
        };
    check(
        "foundation",
        measured.bottom,
        BlockId::DIRT,
        &materials::FOUNDATION,
    );
    check("walls", measured.walls, BlockId::GLASS, &materials::WALLS);
    check("roof", measured.top, BlockId::GLASS, &materials::ROOF);
}

/// Mean statistics of `count` goals of `config` in the paper's world.
fn summary(config: &GoalConfig, count: usize, seed: u64) -> StatsSummary {
    let mut generator = config.build().unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let stats: Vec<GoalStats> = (0..count)
        .map(|_| {
            GoalStats::of(
                &generator.generate(PAPER, &mut rng).unwrap(),
                Ground::Layer0Dirt,
            )
        })
        .collect();
    StatsSummary::of(&stats)
}

#[test]
fn generated_houses_resemble_the_held_out_houses() {
    let real: Vec<GoalStats> = held_out_goals()
        .iter()
        .map(|goal| GoalStats::of(goal, Ground::Layer0Dirt))
        .collect();
    let real = StatsSummary::of(&real);
    let generated = summary(
        &GoalConfig::procedural_houses(ProceduralHouseConfig::default()),
        300,
        0,
    );
    for b in 2..NUM_BLOCKS {
        let (r, g) = (real.shares[b], generated.shares[b]);
        assert!(
            (r - g).abs() < 0.08,
            "{}: held out {r:.3}, generated {g:.3}",
            BlockId(b as u8)
        );
    }
    assert!(
        (real.fill_ratio - generated.fill_ratio).abs() < 0.1,
        "fill ratio: held out {:.3}, generated {:.3}",
        real.fill_ratio,
        generated.fill_ratio
    );
}
