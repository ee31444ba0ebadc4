//! Writes a mission exactly as the reference's `MalmoClient._get_mission_spec_xml`
//! does, whitespace included.
//!
//! The reference builds its XML from Python f-strings, so the indentation below is
//! the indentation of those templates, not a layout of our choosing: it must stay
//! byte for byte as it is (the `mission_*.xml` examples check it). Numbers are
//! written as Python's `str` writes them (`-1`, `0.5`, `1.5`).

use std::fmt::Write as _;

use super::{Boundary, Mission, MissionLayout, Player, PlayerKind, Spectator, WorldReset};
use crate::command::python_float_repr;
use crate::grid::BlockGrid;

/// The `About/Summary` text.
pub(super) const SUMMARY: &str = "Minecraft Building Assistance Game";

/// The flat world: bedrock at y = 0, grass at y = 1, plains biome.
pub(super) const FLAT_WORLD: &str = "3;1*minecraft:bedrock,1*minecraft:grass;minecraft:plains;";

/// The whole document in `layout`.
pub(super) fn mission_xml(mission: &Mission, reset: WorldReset, layout: MissionLayout) -> String {
    let raw = raw_xml(mission, reset);
    match layout {
        MissionLayout::ReferenceRaw => raw,
        // The reference's string starts with "\n        " before `<?xml`; strict
        // parsers refuse anything before the declaration (PROTOCOL.md §3.2).
        MissionLayout::Reference => raw.trim_start().to_owned(),
    }
}

/// `_get_mission_spec_xml`'s string.
fn raw_xml(mission: &Mission, reset: WorldReset) -> String {
    let size = mission.world_size();
    let (w, h, d) = (
        i64::from(size.width()),
        i64::from(size.height()),
        i64::from(size.depth()),
    );
    let mut out = String::with_capacity(4096 + 160 * mission.goal().size().num_cells() / 4);
    let _ = write!(
        out,
        r#"
        <?xml version="1.0" encoding="UTF-8" standalone="no" ?>
        <Mission xmlns="http://ProjectMalmo.microsoft.com" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">

            <About>
                <Summary>{SUMMARY}</Summary>
            </About>

            <ServerSection>
                <ServerInitialConditions>
                    <Time>
                        <StartTime>1000</StartTime>
                        <AllowPassageOfTime>false</AllowPassageOfTime>
                    </Time>
                    <Weather>clear</Weather>
                    <AllowSpawning>false</AllowSpawning>
                </ServerInitialConditions>
                <ServerHandlers>
                    <FlatWorldGenerator
                        forceReset="{reset}"
                        generatorString="{FLAT_WORLD}"
                        destroyAfterUse="true"
                    />
                    <DrawingDecorator>
                        "#,
        reset = reset.as_xml(),
    );
    // The five walls, each on its own template line (empty without walls).
    let walls = wall_cuboids(w, h, d);
    for (k, (block, from, to)) in walls.iter().enumerate() {
        if k > 0 {
            out.push_str("\n                        ");
        }
        if mission.boundary() == Boundary::Walled {
            draw_cuboid(&mut out, block, *from, *to);
        }
    }
    out.push_str("\n                        ");
    draw_blocks(&mut out, mission.goal(), w + 1);
    out.push_str("\n                        ");
    draw_blocks(&mut out, mission.current(), 0);
    let _ = write!(
        out,
        r#"
                    </DrawingDecorator>
                    <BuildBattleDecorator>
                        <PlayerStructureBounds>
                            <min x="0" y="0" z="0" />
                            <max x="{w1}" y="{h1}" z="{d1}" />
                        </PlayerStructureBounds>
                        <GoalStructureBounds>
                            <min x="{gx}" y="0" z="0" />
                            <max x="{gx2}" y="{h1}" z="{d1}" />
                        </GoalStructureBounds>
                    </BuildBattleDecorator>
                </ServerHandlers>
            </ServerSection>

            "#,
        w1 = w - 1,
        h1 = h - 1,
        d1 = d - 1,
        gx = w + 1,
        gx2 = 2 * w,
    );
    // The AgentSections, joined with "\n" as the reference joins them.
    for (index, player) in mission.players().iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        player_section(&mut out, index, player, (w, h, d));
    }
    if let Some(spectator) = mission.spectator() {
        out.push('\n');
        spectator_section(&mut out, spectator);
    }
    out.push_str("\n        </Mission>\n        ");
    out
}

/// The walls of `restrict_players`: (block, corner, corner) in the reference's order.
fn wall_cuboids(w: i64, h: i64, d: i64) -> [(&'static str, [i64; 3], [i64; 3]); 5] {
    [
        // Between the build area and the goal copy.
        ("bedrock", [w, 2, -1], [w, h, d]),
        // West, north and south sides, and the ceiling.
        ("barrier", [-1, 2, -1], [-1, h, d]),
        ("barrier", [-1, 2, -1], [w, h, -1]),
        ("barrier", [-1, 2, d], [w, h, d]),
        ("barrier", [-1, h + 1, -1], [w, h + 1, d]),
    ]
}

/// The reference's `_draw_wall` when `restrict_players` is set.
fn draw_cuboid(out: &mut String, block: &str, from: [i64; 3], to: [i64; 3]) {
    let _ = write!(
        out,
        r#"
                <DrawCuboid
                    type="{block}"
                    x1="{}"
                    y1="{}"
                    z1="{}"
                    x2="{}"
                    y2="{}"
                    z2="{}"
                />
            "#,
        from[0], from[1], from[2], to[0], to[1], to[2],
    );
}

/// The reference's `_blocks_to_drawing_decorator_xml`: one DrawBlock per drawn
/// cell in C order, shifted by `x_offset`, the tags joined with "\n".
fn draw_blocks(out: &mut String, blocks: &BlockGrid, x_offset: i64) {
    let mut first = true;
    for (x, y, z, block) in blocks.cells() {
        if !BlockGrid::is_drawn(y, block) {
            continue;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        let _ = write!(
            out,
            r#"
                <DrawBlock
                    type="{block}"
                    x="{}"
                    y="{y}"
                    z="{z}"
                />
                "#,
            i64::from(x) + x_offset,
        );
    }
}

/// The reference's `_get_agent_section_xml` for player `index`.
fn player_section(out: &mut String, index: usize, player: &Player, (w, h, d): (i64, i64, i64)) {
    let human = player.kind == PlayerKind::Human;
    let _ = write!(
        out,
        r#"
            <AgentSection mode="Creative">
                <Name>{name}</Name>
                <AgentStart>
                    <Placement x="{x}" y="2" z="0.5" yaw="270"/>
                    <Inventory>
                        
                    </Inventory>
                </AgentStart>
                <AgentHandlers>
                    <ObservationFromGrid>
                        <Grid name="world" absoluteCoords="true">
                            <min x="0" y="0" z="0" />
                            <max x="{w1}" y="{h1}" z="{d1}" />
                        </Grid>
                        <Grid name="goal" absoluteCoords="true">
                            <min x="{gx}" y="0" z="0" />
                            <max x="{gx2}" y="{h1}" z="{d1}" />
                        </Grid>
                    </ObservationFromGrid>
                    <ObservationFromFullInventory />
                    <ObservationFromFullStats />"#,
        name = player.name,
        x = python_float_repr(0.5 + index as f64),
        w1 = w - 1,
        h1 = h - 1,
        d1 = d - 1,
        gx = w + 1,
        gx2 = 2 * w,
    );
    // The human template has a blank line before each group of human-only
    // producers; the AI template has neither the lines nor the producers. An AI
    // that observes chat (not in the reference) gets the producer where the
    // human template has it, without the blank line.
    if human {
        out.push_str("\n\n                    <ObservationFromChat />");
    } else if player.observes_chat() {
        out.push_str("\n                    <ObservationFromChat />");
    }
    out.push_str(
        r#"
                    <ObservationFromRecentCommands />
                    <ObservationFromRay />"#,
    );
    if human {
        out.push_str(
            r#"

                    <ObservationFromHuman />
                    <ObservationFromSystem />"#,
        );
    }
    out.push_str(
        r#"
                    <AbsoluteMovementCommands />
                    <DiscreteMovementCommands>
                        <ModifierList type="deny-list">
                            <command>jump</command>
                        </ModifierList>
                    </DiscreteMovementCommands>
                    <InventoryCommands />
                    <HumanLevelCommands>
                        <ModifierList type="allow-list">
                            <command>jump</command>
                        </ModifierList>
                    </HumanLevelCommands>
                    <ChatCommands />
                    <MissionQuitCommands />
                </AgentHandlers>
            </AgentSection>
            "#,
    );
}

/// The reference's `_get_spectator_agent_section_xml`.
fn spectator_section(out: &mut String, spectator: Spectator) {
    let _ = write!(
        out,
        r#"
        <AgentSection mode="Creative">
            <Name>{name}</Name>
            <AgentStart>
                <Placement x="-2" y="2" z="-2" yaw="0" pitch="0" />
            </AgentStart>
            <AgentHandlers>
                <VideoProducer>
                    <Width>{width}</Width>
                    <Height>{height}</Height>
                </VideoProducer>
                <AbsoluteMovementCommands />
                <HumanLevelCommands>
                    <ModifierList type="allow-list">
                        <command>jump</command>
                    </ModifierList>
                </HumanLevelCommands>
                <ChatCommands />
            </AgentHandlers>
        </AgentSection>
        "#,
        name = Spectator::NAME,
        width = spectator.video.width(),
        height = spectator.video.height(),
    );
}
