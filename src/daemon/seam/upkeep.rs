//! What MBAG keeps up in Minecraft's inventories: the AI's block slots with
//! infinite blocks, and the items every player must always have (§5.3).

use std::time::Duration;

use malmo_bridge::block::Block;
use malmo_bridge::command::Command;

use super::commands::{self, Instruction, Item};
use crate::daemon::detect::PlayerView;
use crate::sim::block::BlockId;
use crate::sim::config::Config;

/// With infinite blocks, the AI keeps block k in slot k (k = 2..=9). Returns the
/// commands that restore that from its observed inventory
/// (`_ensure_inventory_is_correctly_organized`): a swap when the block is
/// elsewhere, a `/give` when it is gone (the caller re-checks after the next
/// observation, as the reference loops).
pub fn ai_inventory_repairs(config: &Config, agent: usize, view: &PlayerView) -> Vec<Instruction> {
    let mut slots: Vec<BlockId> = view.inventory.iter().map(|s| s.block).collect();
    let name = commands::player_name(config, agent);
    let mut out = Vec::new();
    for block in Block::PLACEABLE {
        let k = usize::from(block.mbag_id());
        let id = BlockId(block.mbag_id());
        if slots[k] == id {
            continue;
        }
        // Expected while the set-up fills the slots; the caller warns when a
        // placement finds them out of order.
        log::debug!(
            "inventory discrepancy at slot {k}: expected {id} but received {} from Malmo",
            slots[k]
        );
        match slots.iter().position(|&b| b == id) {
            Some(from) => {
                out.push(Instruction::Send {
                    agent,
                    command: Command::SwapInventoryItems(k as u8, from as u8),
                });
                slots.swap(k, from);
            }
            None => out.push(Instruction::Send {
                agent,
                command: Command::Chat(format!("/give {name} {} 1", block.name())),
            }),
        }
    }
    out
}

/// The always-have check (§5.3): items whose total count by name in a player's
/// latest observation falls below the required count, re-given once missing for
/// [`MissingItems::GRACE`].
#[derive(Clone, Debug, Default)]
pub struct MissingItems {
    /// Per player, the missing items and since when (time since any fixed origin).
    since: Vec<Vec<(Duration, Item)>>,
}

impl MissingItems {
    /// How long an item may be missing before it is given again (a block being
    /// placed or dragged is briefly missing).
    pub const GRACE: Duration = Duration::from_millis(100);

    /// A tracker for `num_players` players.
    pub fn new(num_players: usize) -> Self {
        Self {
            since: vec![Vec::new(); num_players],
        }
    }

    /// Checks player `p`'s latest observed items at time `now` against `required`
    /// and returns the `/give` commands due.
    pub fn check(
        &mut self,
        config: &Config,
        p: usize,
        view: &PlayerView,
        required: &[Item],
        now: Duration,
    ) -> Vec<Instruction> {
        let mut missing: Vec<Item> = Vec::new();
        for item in required {
            let have: i64 = view
                .items
                .iter()
                .filter(|s| s.item == item.id)
                .map(|s| s.count)
                .sum();
            if have < item.count {
                missing.push(item.clone());
            }
        }
        let old = std::mem::take(&mut self.since[p]);
        let mut due = Vec::new();
        for (t, item) in old {
            if let Some(i) = missing.iter().position(|m| m.id == item.id) {
                missing.remove(i);
                if now.saturating_sub(t) >= Self::GRACE {
                    due.push(item);
                } else {
                    self.since[p].push((t, item));
                }
            }
        }
        self.since[p].extend(missing.into_iter().map(|m| (now, m)));
        let name = commands::player_name(config, p);
        due.iter()
            .map(|item| Instruction::Send {
                agent: p,
                command: commands::give_item(&name, item),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::detect::{DetectorConfig, MalmoState};
    use crate::daemon::divergence::tests::config;
    use crate::daemon::seam::observation::ItemStack;
    use crate::sim::block::Blocks;
    use crate::sim::coords::PlayerPos;
    use crate::sim::inventory::Slot;

    fn malmo(cfg: &Config) -> MalmoState {
        let positions = [PlayerPos::new(0.5, 2.0, 0.5), PlayerPos::new(1.5, 2.0, 0.5)];
        MalmoState::new(
            &DetectorConfig::from_config(cfg),
            Blocks::initial_world(cfg.world_size),
            &positions,
        )
    }

    #[test]
    fn ai_slots_are_reordered_or_given() {
        let cfg = config(true);
        let mut malmo = malmo(&cfg);
        let view = &mut malmo.players[1];
        view.inventory.swap(3, 7);
        view.inventory[9] = Slot::default();
        let got: Vec<String> = ai_inventory_repairs(&cfg, 1, view)
            .iter()
            .map(|i| match i {
                Instruction::Send { command, .. } => command.to_string(),
                Instruction::Sleep(_) => String::new(),
            })
            .collect();
        assert_eq!(
            got,
            ["swapInventoryItems 3 7", "chat /give player_1 wool 1"]
        );
    }

    #[test]
    fn missing_items_are_given_after_the_grace_period() {
        let cfg = config(true);
        let malmo = malmo(&cfg);
        let mut view = malmo.players[0].clone();
        let required = vec![Item::block(Block::Planks)];
        let mut missing = MissingItems::new(2);
        let ms = Duration::from_millis;
        assert!(missing.check(&cfg, 0, &view, &required, ms(0)).is_empty());
        assert!(missing.check(&cfg, 0, &view, &required, ms(50)).is_empty());
        let due = missing.check(&cfg, 0, &view, &required, ms(120));
        assert_eq!(
            due,
            vec![Instruction::Send {
                agent: 0,
                command: Command::Chat("/give human planks 1 0".into()),
            }]
        );
        // Back in the inventory (or on the cursor): nothing more.
        view.items = vec![ItemStack {
            item: "planks".into(),
            count: 1,
        }];
        assert!(missing.check(&cfg, 0, &view, &required, ms(300)).is_empty());
    }
}
