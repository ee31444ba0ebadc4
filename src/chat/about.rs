//! What a message refers to: the assistant's last edit, a block type, a place
//! ("the wall", "there", coordinates), or everything it is doing.
//!
//! [`About::parse`] reads the words; [`Place::cells`] turns a place into cells
//! of a world, given the assistant's last edit and the blocks as they stand.
//! Parts of the house are read off the built structure's bounding box (the
//! blocks above the ground layer): walls are its four side faces, the roof its
//! top layer, the floor its bottom layer, doors the two lowest layers of the
//! walls, windows the walls above them; "the wall" next to the last edit is
//! that edit's face only.

use crate::sim::block::{BlockId, Blocks};
use crate::sim::coords::{Cell, WorldSize};

/// How far a message reaches when it names no block and no place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// The assistant's last edit (a bare "no", "not that", "perfect").
    #[default]
    LastAction,
    /// Everything it is doing ("stop everything", "keep building").
    Everything,
}

/// A coordinate axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// x.
    X,
    /// y (up).
    Y,
    /// z.
    Z,
}

impl Axis {
    fn of(self, cell: Cell) -> i32 {
        match self {
            Self::X => cell.x,
            Self::Y => cell.y,
            Self::Z => cell.z,
        }
    }

    /// The axis's letter.
    pub fn letter(self) -> char {
        match self {
            Self::X => 'x',
            Self::Y => 'y',
            Self::Z => 'z',
        }
    }
}

/// A part of the house people name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The side faces.
    Wall,
    /// The top layer.
    Roof,
    /// The bottom layer.
    Floor,
    /// The two lowest layers of the walls.
    Door,
    /// The walls above the door's layers.
    Window,
}

impl Part {
    /// The part's name, as the assistant says it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Wall => "wall",
            Self::Roof => "roof",
            Self::Floor => "floor",
            Self::Door => "door",
            Self::Window => "window",
        }
    }
}

/// A place a message names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// One cell by its coordinates ("at 3 2 5", "(3, 2, 5)", "x=3 y=2 z=5").
    Cell(Cell),
    /// Every cell with one coordinate ("by x=3").
    Plane(Axis, i32),
    /// Where the assistant last edited ("there", "here", "that spot").
    There,
    /// A part of the house.
    Part(Part),
}

/// What a message refers to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct About {
    /// The reach when no block or place is named.
    pub scope: Scope,
    /// The block type named, if any.
    pub block: Option<BlockId>,
    /// The place named, if any.
    pub place: Option<Place>,
}

/// Words naming a placeable block (plural and everyday forms).
const BLOCK_WORDS: &[(&str, BlockId)] = &[
    ("plank", BlockId::PLANKS),
    ("planks", BlockId::PLANKS),
    ("wood", BlockId::PLANKS),
    ("wooden", BlockId::PLANKS),
    ("log", BlockId::LOG),
    ("logs", BlockId::LOG),
    ("trunk", BlockId::LOG),
    ("glass", BlockId::GLASS),
    ("cobble", BlockId::COBBLESTONE),
    ("cobblestone", BlockId::COBBLESTONE),
    ("cobblestones", BlockId::COBBLESTONE),
    ("stonebrick", BlockId::STONEBRICK),
    ("stonebricks", BlockId::STONEBRICK),
    ("brick", BlockId::STONEBRICK),
    ("bricks", BlockId::STONEBRICK),
    ("stone", BlockId::STONE),
    ("dirt", BlockId::DIRT),
    ("grass", BlockId::DIRT),
    ("soil", BlockId::DIRT),
    ("wool", BlockId::WOOL),
];

const PART_WORDS: &[(&str, Part)] = &[
    ("wall", Part::Wall),
    ("walls", Part::Wall),
    ("side", Part::Wall),
    ("roof", Part::Roof),
    ("ceiling", Part::Roof),
    ("top", Part::Roof),
    ("floor", Part::Floor),
    ("foundation", Part::Floor),
    ("bottom", Part::Floor),
    ("door", Part::Door),
    ("doorway", Part::Door),
    ("entrance", Part::Door),
    ("window", Part::Window),
    ("windows", Part::Window),
];

const THERE_WORDS: &[&str] = &["there", "here", "spot", "theres"];
const EVERYTHING_WORDS: &[&str] = &[
    "everything",
    "anything",
    "all",
    "building",
    "whatever",
    "whole",
    "altogether",
];

impl About {
    /// Reads what `text` refers to. The first block word names the block
    /// ("stone bricks" is stonebrick); coordinates beat a named part, which
    /// beats "there".
    pub fn parse(text: &str) -> Self {
        let words = words(text);
        let block = block_in(&words);
        let place = coordinates(&words)
            .or_else(|| {
                words.iter().find_map(|w| {
                    PART_WORDS
                        .iter()
                        .find(|(name, _)| name == w)
                        .map(|&(_, p)| Place::Part(p))
                })
            })
            .or_else(|| {
                words
                    .iter()
                    .any(|w| THERE_WORDS.contains(&w.as_str()))
                    .then_some(Place::There)
            });
        // "at all" and "all good" say nothing about the reach.
        let everything = words.iter().enumerate().any(|(i, w)| {
            EVERYTHING_WORDS.contains(&w.as_str())
                && !(w == "all"
                    && (i > 0 && words[i - 1] == "at"
                        || words
                            .get(i + 1)
                            .is_some_and(|n| n == "good" || n == "right")))
        });
        Self {
            scope: if everything {
                Scope::Everything
            } else {
                Scope::LastAction
            },
            block,
            place,
        }
    }

    /// Whether the message names neither a block nor a place.
    pub fn is_bare(&self) -> bool {
        self.block.is_none() && self.place.is_none()
    }
}

/// Lower-case words, with `=`, `:`, `(`, `)` and `,` as separators and
/// apostrophes dropped, so "x=3" is `x`, `3`.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| {
            c.is_whitespace() || matches!(c, '=' | ':' | '(' | ')' | ',' | '.' | '!' | '?' | ';')
        })
        .map(|w| w.chars().filter(|&c| c != '\'').collect::<String>())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `word` names a placeable block ("glass", "planks", "wood", ...).
pub fn is_block_word(word: &str) -> bool {
    BLOCK_WORDS.iter().any(|(name, _)| *name == word)
}

fn block_in(words: &[String]) -> Option<BlockId> {
    for (i, w) in words.iter().enumerate() {
        if w == "stone" && words.get(i + 1).is_some_and(|n| n.starts_with("brick")) {
            return Some(BlockId::STONEBRICK);
        }
        if let Some(&(_, b)) = BLOCK_WORDS.iter().find(|(name, _)| name == w) {
            return Some(b);
        }
    }
    None
}

/// Coordinates: each axis letter followed by an integer, or three integers in
/// a row (x, y, z).
fn coordinates(words: &[String]) -> Option<Place> {
    let number = |i: usize| words.get(i).and_then(|w| w.parse::<i32>().ok());
    let mut axes: [Option<i32>; 3] = [None; 3];
    for (i, w) in words.iter().enumerate() {
        let slot = match w.as_str() {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            // "x3" written together.
            other => {
                let mut chars = other.chars();
                let (Some(letter), rest) = (chars.next(), chars.as_str()) else {
                    continue;
                };
                let slot = match letter {
                    'x' => 0,
                    'y' => 1,
                    'z' => 2,
                    _ => continue,
                };
                if let Ok(v) = rest.parse::<i32>() {
                    axes[slot] = Some(v);
                }
                continue;
            }
        };
        if let Some(v) = number(i + 1) {
            axes[slot] = Some(v);
        }
    }
    match axes {
        [Some(x), Some(y), Some(z)] => return Some(Place::Cell(Cell { x, y, z })),
        [Some(x), None, None] => return Some(Place::Plane(Axis::X, x)),
        [None, Some(y), None] => return Some(Place::Plane(Axis::Y, y)),
        [None, None, Some(z)] => return Some(Place::Plane(Axis::Z, z)),
        _ => {}
    }
    (0..words.len()).find_map(|i| match (number(i), number(i + 1), number(i + 2)) {
        (Some(x), Some(y), Some(z)) => Some(Place::Cell(Cell { x, y, z })),
        _ => None,
    })
}

/// The bounding box of the blocks above the ground layer (y >= 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    min: Cell,
    max: Cell,
}

impl Extent {
    /// The box grown to hold `cell`.
    fn include(self, cell: Cell) -> Self {
        Self {
            min: Cell {
                x: self.min.x.min(cell.x),
                y: self.min.y.min(cell.y),
                z: self.min.z.min(cell.z),
            },
            max: Cell {
                x: self.max.x.max(cell.x),
                y: self.max.y.max(cell.y),
                z: self.max.z.max(cell.z),
            },
        }
    }
}

fn structure_extent(blocks: &Blocks) -> Option<Extent> {
    blocks
        .size()
        .cells()
        .filter(|&cell| cell.y >= 2 && !blocks.get(cell).is_air())
        .fold(None, |extent: Option<Extent>, cell| {
            Some(extent.map_or(
                Extent {
                    min: cell,
                    max: cell,
                },
                |e| e.include(cell),
            ))
        })
}

impl Place {
    /// The cells of a world of `size` this place covers, given the last edit's
    /// cell and the world's blocks (for parts of the house). Empty when the
    /// place cannot be resolved (no last edit for "there", coordinates outside
    /// the world, nothing built yet for a part).
    pub fn cells(self, size: WorldSize, last: Option<Cell>, blocks: &Blocks) -> Vec<Cell> {
        match self {
            Self::Cell(c) => [c].into_iter().filter(|&c| size.contains(c)).collect(),
            Self::Plane(axis, at) => size.cells().filter(|&c| axis.of(c) == at).collect(),
            Self::There => last.into_iter().filter(|&c| size.contains(c)).collect(),
            Self::Part(part) => {
                // With a last edit on the built box, its layer of the box
                // counts too (the house grows as it is built).
                let Some(mut e) = structure_extent(blocks) else {
                    return last.into_iter().collect();
                };
                if let Some(l) = last {
                    e = e.include(l);
                }
                let inside = |c: Cell| {
                    (e.min.x..=e.max.x).contains(&c.x)
                        && (e.min.y..=e.max.y).contains(&c.y)
                        && (e.min.z..=e.max.z).contains(&c.z)
                };
                let on_side =
                    |c: Cell| c.x == e.min.x || c.x == e.max.x || c.z == e.min.z || c.z == e.max.z;
                // "The wall" beside the last edit is that edit's own face.
                let face = last.filter(|&l| on_side(l)).map(|l| {
                    if l.x == e.min.x || l.x == e.max.x {
                        (Axis::X, l.x)
                    } else {
                        (Axis::Z, l.z)
                    }
                });
                let in_wall = |c: Cell| match face {
                    Some((axis, at)) => axis.of(c) == at,
                    None => on_side(c),
                };
                size.cells()
                    .filter(|&c| inside(c))
                    .filter(|&c| match part {
                        Part::Wall => in_wall(c),
                        Part::Roof => c.y == e.max.y,
                        Part::Floor => c.y == e.min.y,
                        Part::Door => in_wall(c) && c.y < e.min.y + 2,
                        Part::Window => in_wall(c) && c.y >= e.min.y + 2 && c.y < e.max.y,
                    })
                    .collect()
            }
        }
    }
}

/// Where a cell is, in words: its part of the house when the built box makes
/// it a wall, the roof or the floor, and its coordinates.
pub fn describe_cell(cell: Cell, blocks: &Blocks) -> String {
    let coords = format!("({}, {}, {})", cell.x, cell.y, cell.z);
    let Some(e) = structure_extent(blocks) else {
        return format!("at {coords}");
    };
    if cell.y > e.max.y {
        return format!("on the roof at {coords}");
    }
    if cell.x == e.min.x || cell.x == e.max.x {
        return format!("at the wall by x={} {coords}", cell.x);
    }
    if cell.z == e.min.z || cell.z == e.max.z {
        return format!("at the wall by z={} {coords}", cell.z);
    }
    if cell.y == e.min.y && cell.y == 2 {
        return format!("on the floor at {coords}");
    }
    format!("at {coords}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn about(text: &str) -> About {
        About::parse(text)
    }

    #[test]
    fn blocks_places_and_reach_are_read() {
        assert_eq!(about("no"), About::default());
        assert_eq!(about("no glass there").block, Some(BlockId::GLASS));
        assert_eq!(about("no glass there").place, Some(Place::There));
        assert_eq!(
            about("stone bricks please").block,
            Some(BlockId::STONEBRICK)
        );
        assert_eq!(about("not stone").block, Some(BlockId::STONE));
        assert_eq!(
            about("don't put anything at (3, 2, 5)").place,
            Some(Place::Cell(Cell { x: 3, y: 2, z: 5 }))
        );
        assert_eq!(
            about("no planks at x=3 y=4 z=1").place,
            Some(Place::Cell(Cell { x: 3, y: 4, z: 1 }))
        );
        assert_eq!(
            about("leave the wall by x=3").place,
            Some(Place::Plane(Axis::X, 3))
        );
        assert_eq!(
            about("wrong, not the roof").place,
            Some(Place::Part(Part::Roof))
        );
        assert_eq!(about("stop everything").scope, Scope::Everything);
        assert_eq!(about("stop building").scope, Scope::Everything);
        assert_eq!(about("no glass at all").scope, Scope::LastAction);
        assert_eq!(about("all good").scope, Scope::LastAction);
    }

    #[test]
    fn parts_resolve_on_the_built_box() {
        let size = WorldSize::new(6, 6, 6);
        let mut blocks = Blocks::initial_world(size);
        for x in 1..=4 {
            for z in 1..=4 {
                for y in 2..=4 {
                    blocks.set(Cell { x, y, z }, BlockId::PLANKS);
                }
            }
        }
        let roof = Place::Part(Part::Roof).cells(size, None, &blocks);
        assert_eq!(roof.len(), 16);
        assert!(roof.iter().all(|c| c.y == 4));
        // Beside a last edit on the x = 1 face, "the wall" is that face.
        let wall = Place::Part(Part::Wall).cells(size, Some(Cell { x: 1, y: 3, z: 2 }), &blocks);
        assert_eq!(wall.len(), 12);
        assert!(wall.iter().all(|c| c.x == 1));
        assert_eq!(Place::There.cells(size, None, &blocks), vec![]);
        assert_eq!(
            Place::Cell(Cell { x: 9, y: 0, z: 0 }).cells(size, None, &blocks),
            vec![]
        );
        assert!(describe_cell(Cell { x: 1, y: 3, z: 2 }, &blocks).contains("wall by x=1"));
    }
}
