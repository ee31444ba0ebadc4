//! Observations in the real JSON shape and key order of the MBAG handlers
//! (PROTOCOL.md §4.2): the `world` and `goal` grids, the flat full inventory with
//! the fork's `held` slot, full stats, chat (humans, and AIs whose section asks
//! for it), recent commands, the ray, human events and system tick rates
//! (humans).
//!
//! Simplified: the mod fills grids, stats and inventory from the integrated
//! server's latest reply, one tick behind the client-side keys; here every key
//! reflects the world as it is when the observation is built. Tick rates are the
//! nominal 20 and 60.

use super::blocks::{Prop, item_properties};
use super::json::ObjectWriter;
use super::ray::RAY_LENGTH;
use super::world::{AgentKind, HumanEvent, INVENTORY_SLOTS, Stack, WORLD_TIME, World};
use crate::mod_patch::{self, ModFlavour};

impl World {
    /// The observation of `role`, and the end of what it reports "since the last
    /// observation" (commands, chat, events). `None` for the spectator, which has
    /// no observation producers.
    pub fn observe(&mut self, role: usize) -> Option<String> {
        if self.players[role].kind == AgentKind::Spectator {
            return None;
        }
        self.players[role].ticks += 1;
        let mut out = String::with_capacity(24 << 10);
        let mut o = ObjectWriter::new(&mut out);
        self.write_grids(&mut o);
        self.write_inventory(role, &mut o);
        self.write_stats(role, &mut o);
        if self.mod_flavour == ModFlavour::Patched {
            self.write_patched_keys(role, &mut o);
        }
        let human = self.players[role].is_human();
        let chat = self.players[role].observes_chat;
        let player = &mut self.players[role];
        if chat {
            for (key, lines) in [
                ("Chat", &mut player.chat),
                ("Title", &mut player.titles),
                ("Subtitle", &mut player.subtitles),
            ] {
                if !lines.is_empty() {
                    o.strings(key, lines.iter().map(String::as_str));
                    lines.clear();
                }
            }
        }
        if !player.echoes.is_empty() {
            o.strings(
                "CommandsSinceLastObservation",
                player.echoes.iter().map(String::as_str),
            );
            player.echoes.clear();
        }
        self.write_line_of_sight(role, &mut o);
        let player = &mut self.players[role];
        if human {
            if !player.events.is_empty() {
                write_events(&player.events, o.key("events"));
                player.events.clear();
            }
            o.double("serverTicksPerSecond", 20.0);
            o.double("clientTicksPerSecond", 20.0);
            o.double("renderTicksPerSecond", 60.0);
        } else {
            // AI players have no human-event producer, so their events are
            // never shown; nor is their chat without the chat producer.
            if !chat {
                player.chat.clear();
                player.titles.clear();
                player.subtitles.clear();
            }
            player.events.clear();
        }
        o.finish();
        Some(out)
    }

    /// `world` over the build area and `goal` over the goal copy, flattened y, then
    /// z, then x.
    fn write_grids(&self, o: &mut ObjectWriter<'_>) {
        let size = self.size();
        let (w, h, d) = (
            size.width() as i32,
            size.height() as i32,
            size.depth() as i32,
        );
        for (name, x0) in [("world", 0), ("goal", w + 1)] {
            let mut names = Vec::with_capacity(size.num_cells());
            for y in 0..h {
                for z in 0..d {
                    for x in x0..x0 + w {
                        names.push(self.block([x, y, z]).name());
                    }
                }
            }
            o.strings(name, names);
        }
    }

    fn write_inventory(&self, role: usize, o: &mut ObjectWriter<'_>) {
        let player = &self.players[role];
        let slot = |o: &mut ObjectWriter<'_>, label: &str, stack: &Stack| {
            o.int(
                &format!("InventorySlot_{label}_size"),
                i64::from(stack.size),
            );
            if !stack.is_empty() {
                for (key, value) in item_properties(&stack.item) {
                    o.str(&format!("InventorySlot_{label}_{key}"), value);
                }
            }
            o.str(&format!("InventorySlot_{label}_item"), stack.item_name());
        };
        for (i, stack) in player.inventory.iter().enumerate().take(INVENTORY_SLOTS) {
            slot(o, &i.to_string(), stack);
        }
        slot(o, "held", &player.held);
        o.key("inventoriesAvailable")
            .push_str(r#"[{"name":"inventory","size":41}]"#);
        o.int("currentItemIndex", player.selected as i64);
    }

    fn write_stats(&self, role: usize, o: &mut ObjectWriter<'_>) {
        let p = &self.players[role];
        o.int("DistanceTravelled", p.travelled as i64);
        o.int("TimeAlive", p.ticks);
        for key in ["MobsKilled", "PlayersKilled", "DamageTaken", "DamageDealt"] {
            o.int(key, 0);
        }
        o.float("Life", 20.0);
        o.int("Score", 0);
        o.int("Food", 20);
        o.int("XP", 0);
        o.bool("IsAlive", true);
        o.int("Air", 300);
        o.str("Name", &p.name);
        o.double("XPos", p.pos[0]);
        o.double("YPos", p.pos[1]);
        o.double("ZPos", p.pos[2]);
        o.float("Pitch", p.pitch);
        o.float("Yaw", p.yaw);
        o.int("WorldTime", WORLD_TIME);
        o.int("TotalTime", p.ticks);
    }

    /// What `mod-patch/` adds after the stats: the version, and the block changes
    /// this player has not been told about yet (present only when there are some).
    fn write_patched_keys(&mut self, role: usize, o: &mut ObjectWriter<'_>) {
        o.str(mod_patch::VERSION_KEY, mod_patch::PATCHED_MOD_VERSION);
        let seen = self.players[role].changes_seen;
        let mut fresh = self.block_log.iter().filter(|c| c.seq > seen).peekable();
        if fresh.peek().is_none() {
            return;
        }
        let out = o.key(mod_patch::BLOCK_CHANGES_KEY);
        out.push('[');
        let mut last = seen;
        for (i, change) in fresh.enumerate() {
            if i > 0 {
                out.push(',');
            }
            let mut c = ObjectWriter::new(out);
            c.int("seq", change.seq as i64);
            c.int("tick", change.tick);
            c.str("player", &change.player);
            c.str("action", &String::from(change.action.clone()));
            c.int("x", i64::from(change.cell[0]));
            c.int("y", i64::from(change.cell[1]));
            c.int("z", i64::from(change.cell[2]));
            c.str("type", &change.block);
            c.finish();
            last = change.seq;
        }
        out.push(']');
        self.players[role].changes_seen = last;
    }

    fn write_line_of_sight(&self, role: usize, o: &mut ObjectWriter<'_>) {
        let Some(hit) = self.ray(role, RAY_LENGTH) else {
            return;
        };
        let block = self.block(hit.cell);
        // The mod computes the distance as a float.
        let distance = f64::from(hit.distance as f32);
        let in_range = distance <= self.players[role].mode.reach();
        let out = o.key("LineOfSight");
        let mut los = ObjectWriter::new(out);
        los.str("hitType", "block");
        los.double("x", hit.point[0]);
        los.double("y", hit.point[1]);
        los.double("z", hit.point[2]);
        los.str("type", block.name());
        for (key, value) in block.ray_properties() {
            match value {
                Prop::Bool(b) => los.bool(key, *b),
                Prop::Str(s) => los.str(key, s),
            }
        }
        los.bool("inRange", in_range);
        los.double("distance", distance);
        los.finish();
    }
}

fn write_events(events: &[HumanEvent], out: &mut String) {
    out.push('[');
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut o = ObjectWriter::new(out);
        o.int("time", WORLD_TIME);
        match event {
            HumanEvent::Key { command, pressed } => {
                o.str("type", "key");
                o.str("command", command);
                o.bool("pressed", *pressed);
            }
            HumanEvent::Mouse { dx, dy } => {
                o.str("type", "mouse");
                o.int("deltaX", *dx);
                o.int("deltaY", *dy);
                o.int("deltaZ", 0);
            }
        }
        o.finish();
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mission::MissionDocument;
    use crate::observation::Observation;

    #[test]
    fn keys_come_in_the_handlers_order_with_the_synthetic_examples_shape() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/malmo/examples");
        let xml = std::fs::read_to_string(format!(
            "{dir}/mission_2p_assistant_human_11x10x10.role0.xml"
        ))
        .unwrap();
        let mission = MissionDocument::parse(&xml).unwrap().mission;
        let mut world = World::from_mission(&mission);
        for (role, file) in [(0, "observation_assistant"), (1, "observation_human")] {
            let text = world.observe(role).unwrap();
            let ours: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&text).unwrap();
            let example = std::fs::read_to_string(format!("{dir}/{file}.synthetic.json")).unwrap();
            let theirs: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&example).unwrap();
            let keys = |m: &serde_json::Map<_, _>| m.keys().cloned().collect::<Vec<String>>();
            assert_eq!(keys(&ours), keys(&theirs), "{file}");
            for key in ["world", "goal", "inventoriesAvailable", "Yaw"] {
                assert_eq!(ours[key], theirs[key], "{file}: {key}");
            }
            // The synthetic example rounds the eye height (the real mod's eye is
            // 1.62 as a Java float, as in the real recording) and its distance is
            // a placeholder: the wall at x = 11 is 11 - XPos away.
            let mut sight = theirs["LineOfSight"].clone();
            sight["y"] = serde_json::json!(3.6200000047683716);
            let x = theirs["XPos"].as_f64().unwrap();
            sight["distance"] = serde_json::json!(11.0 - x);
            assert_eq!(ours["LineOfSight"], sight, "{file}");
            assert!(text.contains(r#""Life":20.0,"#) && text.contains(r#""Yaw":270.0,"#));
            Observation::parse(text.as_bytes()).unwrap();
        }
    }

    #[test]
    fn an_ai_observes_chat_only_when_its_section_asks_for_it() {
        use crate::grid::{BlockGrid, WorldSize};
        use crate::mission::{Mission, Player, PlayerName};

        let flat = BlockGrid::flat(WorldSize::new(3, 4, 3).unwrap());
        let name = |s: &str| PlayerName::new(s).unwrap();
        for chat in [false, true] {
            let assistant = Player::ai(name("assistant"));
            let assistant = if chat {
                assistant.with_chat()
            } else {
                assistant
            };
            let players = vec![Player::human(name("human")), assistant];
            let mut world = World::from_mission(&Mission::new(&flat, &flat, players).unwrap());
            world.chat(0, "no, not there");
            world.chat(1, "sorry");
            let said = serde_json::json!(["<human> no, not there", "<assistant> sorry"]);
            let chat_of = |text: &str| {
                serde_json::from_str::<serde_json::Value>(text).unwrap()["Chat"].clone()
            };
            let human = world.observe(0).unwrap();
            assert_eq!(chat_of(&human), said, "{human}");
            let ai = world.observe(1).unwrap();
            let at = |key: &str| ai.find(&format!("\"{key}\":"));
            if chat {
                // Where the human's section has the producer: after the stats,
                // before the ray (when it hits anything).
                let chat_at = at("Chat").expect("a Chat key");
                assert!(at("TotalTime").unwrap() < chat_at, "{ai}");
                assert!(at("LineOfSight").is_none_or(|ray| chat_at < ray), "{ai}");
                assert_eq!(chat_of(&ai), said, "{ai}");
            } else {
                assert_eq!(at("Chat"), None, "{ai}");
            }
            // Lines are reported once either way.
            assert!(!world.observe(1).unwrap().contains("Chat"));
        }
    }
}
