//! Observations in MBAG's terms: what the bridge decoded from one frame (block
//! names, grids in the mod's order, item stacks by name, key bindings, the
//! patched mod's events) read into block ids, cells indexed (x, y, z), inventory
//! slots and typed button changes, which is all the detector needs.

use malmo_bridge::block::Block;
use malmo_bridge::decoded::{DecodedObservation, HumanEvent, Stack};
use malmo_bridge::mod_patch::BlockAction;

use crate::sim::block::BlockId;
use crate::sim::coords::{Cell, WorldSize};
use crate::sim::inventory::{NUM_SLOTS, Slot};

/// An item stack as Minecraft reports it, tools included (the always-have check
/// counts them by Minecraft's item id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemStack {
    /// Minecraft's item id (`planks`, `diamond_pickaxe`, ...).
    pub item: String,
    /// How many.
    pub count: i64,
}

/// A player's inventory as an observation reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedInventory {
    /// Slots 0..=35 as block slots: any non-block item reads as air with count
    /// 0, as in the reference.
    pub slots: [Slot; NUM_SLOTS],
    /// The stack on the mouse cursor, read as the slots are.
    pub held: Slot,
    /// Every stack of slots 0..=35 and the cursor, by item id.
    pub items: Vec<ItemStack>,
}

/// The `world` grid, indexed by the simulator's cells.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldGrid {
    size: WorldSize,
    /// Per cell in the simulator's index order; `None` where the name is no
    /// MBAG block.
    cells: Vec<Option<BlockId>>,
}

impl WorldGrid {
    /// A grid showing `blocks` everywhere (for tests and emulated views).
    pub fn from_blocks(blocks: &crate::sim::block::Blocks) -> Self {
        let size = blocks.size();
        Self {
            size,
            cells: size.cells().map(|c| Some(blocks.get(c))).collect(),
        }
    }

    /// The block at `cell`, `None` where Minecraft showed no MBAG block.
    pub fn get(&self, cell: Cell) -> Option<BlockId> {
        self.cells[self.size.index(cell).0 as usize]
    }

    /// Sets what the grid shows at `cell`.
    pub fn set(&mut self, cell: Cell, block: Option<BlockId>) {
        let i = self.size.index(cell).0 as usize;
        self.cells[i] = block;
    }
}

/// A `world` grid whose length is not the world's cell count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the world grid has {got} cells, a {size} world has {expected}")]
pub struct GridSizeError {
    /// Cells in the observation.
    pub got: usize,
    /// Cells of the world.
    pub expected: usize,
    /// The world size.
    pub size: WorldSize,
}

/// A mouse button a person presses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Button {
    /// Right button: place.
    Use,
    /// Left button: break.
    Attack,
}

/// A button pressed or released, in the order of the observation's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ButtonChange {
    /// Which button.
    pub button: Button,
    /// Pressed (true) or released.
    pub pressed: bool,
}

/// What a block change of the patched mod did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// A block was placed.
    Place,
    /// A block was broken.
    Break,
    /// Anything else (ignored, but its sequence number counts).
    Other,
}

/// A block change the patched mod attributes to a player.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockChange {
    /// The mod's sequence number (increasing).
    pub seq: u64,
    /// The player's Minecraft name.
    pub player: String,
    /// The cell (possibly outside the world).
    pub cell: Cell,
    /// What happened.
    pub kind: ChangeKind,
}

/// One observation in MBAG's terms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observation {
    /// Feet position (a missing coordinate keeps the previous one).
    pub position: [Option<f64>; 3],
    /// The `world` grid, when the observation has one.
    pub world: Option<Result<WorldGrid, GridSizeError>>,
    /// The inventory, when the observation reports one.
    pub inventory: Option<ObservedInventory>,
    /// Where the crosshair hits a block within reach.
    pub block_hit: Option<[f64; 3]>,
    /// A person's use and attack presses and releases, in order.
    pub buttons: Vec<ButtonChange>,
    /// An AI's `use 1` was echoed (AIs press buttons only through commands).
    pub echoed_use: bool,
    /// An AI's `attack 1` was echoed.
    pub echoed_attack: bool,
    /// The patched mod's block changes (empty with the stock mod).
    pub block_changes: Vec<BlockChange>,
    /// How many cells of the world grid hold no MBAG block.
    pub unknown_cells: usize,
}

/// Reads a decoded observation of a `size` world into MBAG's terms; its world
/// grid only with `world` (the detector reads one player's,
/// [`reads_world`](crate::daemon::detect::reads_world), so the others' are not
/// converted for nothing).
pub fn read(obs: &DecodedObservation, size: WorldSize, world: bool) -> Observation {
    let mut unknown_cells = 0;
    let grid = obs.grid("world").filter(|_| world);
    let world = grid.map(|grid| {
        if grid.len() != size.num_cells() {
            return Err(GridSizeError {
                got: grid.len(),
                expected: size.num_cells(),
                size,
            });
        }
        // The mod lists y outermost, then z, then x.
        let (w, d) = (size.width, size.depth);
        let cells = size
            .cells()
            .map(|c| {
                let (x, y, z) = (c.x as usize, c.y as usize, c.z as usize);
                let block = grid[(y * d + z) * w + x].map(block_id);
                unknown_cells += usize::from(block.is_none());
                block
            })
            .collect();
        Ok(WorldGrid { size, cells })
    });
    let inventory = (!obs.inventory.is_empty()).then(|| {
        let slots = std::array::from_fn(|i| slot_of(obs.inventory.get(i).and_then(Option::as_ref)));
        ObservedInventory {
            slots,
            held: slot_of(obs.held.as_ref()),
            items: obs
                .inventory
                .iter()
                .take(NUM_SLOTS)
                .flatten()
                .chain(obs.held.as_ref())
                .map(|s| ItemStack {
                    item: s.item.clone(),
                    count: s.size,
                })
                .collect(),
        }
    });
    let block_hit = obs
        .line_of_sight
        .as_ref()
        .filter(|los| los.in_range && los.hit_type == "block")
        .map(|los| [los.x, los.y, los.z]);
    let buttons = obs
        .events
        .iter()
        .filter_map(|e| match e {
            HumanEvent::Key {
                command, pressed, ..
            } => {
                let button = match command.as_str() {
                    "use" => Button::Use,
                    "attack" => Button::Attack,
                    _ => return None,
                };
                Some(ButtonChange {
                    button,
                    pressed: *pressed,
                })
            }
            _ => None,
        })
        .collect();
    let block_changes = obs
        .block_changes
        .iter()
        .map(|c| BlockChange {
            seq: c.seq,
            player: c.player.clone(),
            cell: Cell::new(c.cell[0], c.cell[1], c.cell[2]),
            kind: match c.action {
                BlockAction::Place => ChangeKind::Place,
                BlockAction::Break => ChangeKind::Break,
                BlockAction::Other(_) => ChangeKind::Other,
            },
        })
        .collect();
    Observation {
        position: obs.position,
        world,
        inventory,
        block_hit,
        buttons,
        echoed_use: obs.commands.iter().any(|c| c == "use 1"),
        echoed_attack: obs.commands.iter().any(|c| c == "attack 1"),
        block_changes,
        unknown_cells,
    }
}

/// The simulator's id of a Minecraft block.
pub fn block_id(block: Block) -> BlockId {
    BlockId(block.mbag_id())
}

fn slot_of(stack: Option<&Stack>) -> Slot {
    match stack.and_then(|s| Block::from_observed_name(&s.item)) {
        Some(block) if block != Block::Air => Slot {
            block: block_id(block),
            count: i32::try_from(stack.map_or(0, |s| s.size)).unwrap_or(0),
        },
        // Air and non-block items (tools) are "no block" (§3).
        _ => Slot::default(),
    }
}

#[cfg(test)]
mod tests {
    use malmo_bridge::decoded::DecodedGrid;
    use malmo_bridge::mod_patch::BlockChange as ModChange;
    use malmo_bridge::observation::LineOfSight;

    use super::*;

    const SIZE: WorldSize = WorldSize::new(2, 2, 3);

    #[test]
    fn grids_are_read_into_cells_indexed_x_y_z() {
        // Mod order: y outermost, then z, then x; mark (1, 0, 2) and (0, 1, 0).
        let mut cells = vec![Some(Block::Air); SIZE.num_cells()];
        let (w, d) = (SIZE.width, SIZE.depth);
        cells[2 * w + 1] = Some(Block::Planks);
        cells[d * w] = Some(Block::Glass);
        cells[w * d + w] = None;
        let obs = DecodedObservation {
            grids: vec![DecodedGrid {
                name: "world".into(),
                cells,
            }],
            ..Default::default()
        };
        assert!(read(&obs, SIZE, false).world.is_none());
        let read = read(&obs, SIZE, true);
        let world = read.world.expect("a grid").expect("the right size");
        assert_eq!(world.get(Cell::new(1, 0, 2)), Some(block_id(Block::Planks)));
        assert_eq!(world.get(Cell::new(0, 1, 0)), Some(block_id(Block::Glass)));
        assert_eq!(world.get(Cell::new(0, 1, 1)), None);
        assert_eq!(world.get(Cell::new(0, 0, 0)), Some(BlockId::AIR));
        assert_eq!(read.unknown_cells, 1);
    }

    #[test]
    fn a_grid_of_the_wrong_length_is_an_error_naming_both_sizes() {
        let obs = DecodedObservation {
            grids: vec![DecodedGrid {
                name: "world".into(),
                cells: vec![Some(Block::Air); 5],
            }],
            ..Default::default()
        };
        let err = read(&obs, SIZE, true).world.expect("a grid").unwrap_err();
        assert_eq!((err.got, err.expected), (5, 12));
    }

    #[test]
    fn stacks_buttons_sight_and_mod_events_are_typed() {
        let mut obs = DecodedObservation {
            inventory: vec![None; malmo_bridge::decoded::INVENTORY_SLOTS],
            held: Some(Stack {
                item: "diamond_pickaxe".into(),
                size: 1,
            }),
            events: vec![
                HumanEvent::Key {
                    time: 1000,
                    command: "attack".into(),
                    pressed: true,
                },
                HumanEvent::Key {
                    time: 1000,
                    command: "forward".into(),
                    pressed: true,
                },
            ],
            line_of_sight: Some(LineOfSight {
                hit_type: "block".into(),
                x: 1.5,
                y: 2.0,
                z: 0.5,
                in_range: true,
                ..Default::default()
            }),
            commands: vec!["use 1".into()],
            block_changes: vec![ModChange {
                seq: 7,
                tick: 1000,
                player: "player_1".into(),
                action: BlockAction::Break,
                cell: [1, 2, 0],
                block: "planks".into(),
                extra: Default::default(),
            }],
            ..Default::default()
        };
        obs.inventory[3] = Some(Stack {
            item: "planks".into(),
            size: 5,
        });
        let read = read(&obs, SIZE, false);
        let inv = read.inventory.expect("reported");
        assert_eq!(inv.slots[3].block, block_id(Block::Planks));
        assert_eq!(inv.slots[3].count, 5);
        // A tool is no block, but it is an item.
        assert_eq!(inv.held, Slot::default());
        assert_eq!(inv.items.len(), 2);
        assert_eq!(
            read.buttons,
            [ButtonChange {
                button: Button::Attack,
                pressed: true
            }]
        );
        assert_eq!(read.block_hit, Some([1.5, 2.0, 0.5]));
        assert!(read.echoed_use && !read.echoed_attack);
        assert_eq!(read.block_changes[0].cell, Cell::new(1, 2, 0));
        assert_eq!(read.block_changes[0].kind, ChangeKind::Break);
    }
}
