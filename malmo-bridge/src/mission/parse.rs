//! Reads a mission document back into a [`MissionDocument`].
//!
//! Reading has two steps. First the values that vary between MBAG missions are
//! read: the world size (from `PlayerStructureBounds`), `forceReset`, the walls,
//! every `DrawBlock`, each AgentSection's name and kind (told apart by its
//! handlers) and whether an AI observes chat. Then the mission those values
//! describe is rendered and compared with the document, element by element, so
//! that everything the reference fixes (summary, time, weather, handlers, grids,
//! placements, bounds) is checked too, and the first difference is reported with
//! its path. Whitespace, attribute order and the order of differently named
//! siblings do not matter: the mod's JAXB echo reorders attributes and the two
//! structure bounds.

use super::{
    Boundary, Mission, MissionDocument, MissionError, Player, PlayerName, Spectator, VideoSize,
    WorldReset,
};
use crate::block::Block;
use crate::grid::{BlockGrid, WorldSize};
use crate::xml::{Element, Node, ReadError};

/// Reads a `<Mission>` element.
pub(super) fn mission_document(root: &Element) -> Result<MissionDocument, MissionError> {
    let mission = Node::root(root, "Mission")?;
    let handlers = mission.child("ServerSection")?.child("ServerHandlers")?;

    let bounds = handlers
        .child("BuildBattleDecorator")?
        .child("PlayerStructureBounds")?
        .child("max")?;
    let extent = |axis: &'static str| -> Result<u32, ReadError> {
        let max: u32 = bounds.parsed_attribute(axis, "a non-negative integer")?;
        Ok(max + 1)
    };
    let size = WorldSize::new(extent("x")?, extent("y")?, extent("z")?)
        .expect("extents of max + 1 are positive");

    let generator = handlers.child("FlatWorldGenerator")?;
    let reset = match generator.attribute("forceReset")?.trim() {
        "true" | "1" => WorldReset::Force,
        "false" | "0" => WorldReset::Keep,
        other => {
            return Err(ReadError::BadValue {
                path: format!("{}@forceReset", generator.path()),
                value: other.to_owned(),
                expected: "a boolean",
            }
            .into());
        }
    };

    let drawing = handlers.child("DrawingDecorator")?;
    let boundary = if drawing.children("DrawCuboid").is_empty() {
        Boundary::Open
    } else {
        Boundary::Walled
    };
    let (goal, current) = read_blocks(&drawing, size)?;

    let (players, spectator) = read_agents(&mission)?;
    let parsed = MissionDocument {
        mission: Mission::new(&goal, &current, players)?
            .with_spectator(spectator)
            .with_boundary(boundary),
        reset,
    };
    // Everything else must be as the reference writes it for these values.
    if let Some(difference) = parsed.to_element().difference(root, "Mission") {
        return Err(difference.into());
    }
    Ok(parsed)
}

/// The goal and current grids: the flat world with every DrawBlock on top. Blocks
/// at `W+1 <= x <= 2W` belong to the goal copy, blocks at `0 <= x < W` to the
/// build area.
fn read_blocks(
    drawing: &Node<'_>,
    size: WorldSize,
) -> Result<(BlockGrid, BlockGrid), MissionError> {
    let mut goal = BlockGrid::flat(size);
    let mut current = BlockGrid::flat(size);
    let mut drawn = vec![false; 2 * size.num_cells()];
    let goal_x = i64::from(size.width()) + 1;
    for draw in drawing.children("DrawBlock") {
        let name = draw.attribute("type")?;
        let block: Block = name.parse().map_err(|_| MissionError::UnknownBlock {
            path: draw.path().to_owned(),
            name: name.to_owned(),
        })?;
        let coordinate = |axis| draw.parsed_attribute::<i64>(axis, "an integer");
        let (x, y, z) = (coordinate("x")?, coordinate("y")?, coordinate("z")?);
        let (grid, area, gx) = if size.contains(x, y, z) {
            (&mut current, 0, x)
        } else if size.contains(x - goal_x, y, z) {
            (&mut goal, 1, x - goal_x)
        } else {
            return Err(MissionError::BlockOutside {
                path: draw.path().to_owned(),
                x,
                y,
                z,
            });
        };
        // Inside the grid, so every coordinate fits in u32.
        let (cx, cy, cz) = (gx as u32, y as u32, z as u32);
        let seen = &mut drawn[area * size.num_cells()
            + (cx as usize * size.height() as usize + cy as usize) * size.depth() as usize
            + cz as usize];
        if std::mem::replace(seen, true) {
            return Err(MissionError::DuplicateBlock {
                path: draw.path().to_owned(),
                x,
                y,
                z,
            });
        }
        grid.set(cx, cy, cz, block);
    }
    Ok((goal, current))
}

/// The players and the spectator, told apart by their handlers.
fn read_agents(mission: &Node<'_>) -> Result<(Vec<Player>, Option<Spectator>), MissionError> {
    let sections = mission.children("AgentSection");
    let mut players = Vec::new();
    let mut spectator = None;
    for (k, section) in sections.iter().enumerate() {
        let handlers = section.child("AgentHandlers")?;
        let has = |name: &str| handlers.element.children.iter().any(|c| c.name == name);
        if has("VideoProducer") {
            if k + 1 != sections.len() {
                return Err(MissionError::SpectatorNotLast {
                    path: section.path().to_owned(),
                });
            }
            let producer = handlers.child("VideoProducer")?;
            let width = producer.parsed_child("Width", "a non-negative integer")?;
            let height = producer.parsed_child("Height", "a non-negative integer")?;
            let video =
                VideoSize::new(width, height).map_err(|source| MissionError::VideoSize {
                    path: producer.path().to_owned(),
                    source,
                })?;
            spectator = Some(Spectator { video });
            continue;
        }
        let name_node = section.child("Name")?;
        let name = PlayerName::new(name_node.text().trim()).map_err(|source| {
            MissionError::PlayerName {
                path: name_node.path().to_owned(),
                source,
            }
        })?;
        let player = if has("ObservationFromHuman") {
            Player::human(name)
        } else if has("ObservationFromGrid") {
            let player = Player::ai(name);
            if has("ObservationFromChat") {
                player.with_chat()
            } else {
                player
            }
        } else {
            return Err(MissionError::UnknownAgent {
                path: section.path().to_owned(),
                found: handlers
                    .element
                    .children
                    .iter()
                    .map(|c| c.name.clone())
                    .collect(),
            });
        };
        players.push(player);
    }
    Ok((players, spectator))
}
