//! Player inventories: 36 slots of (block id, count), stacks of 64, with the
//! reference's exact slot-filling order (ENV_SPEC section 5.6).

use super::block::{BlockId, NUM_BLOCKS};

/// Number of inventory slots.
pub const NUM_SLOTS: usize = 36;
/// Maximum count of one slot.
pub const STACK_SIZE: i32 = 64;

/// One inventory slot. An emptied slot keeps its (stale) id, as in the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Slot {
    /// Block id of the slot (stale when `count` is 0).
    pub block: BlockId,
    /// How many blocks the slot holds.
    pub count: i32,
}

/// A player's inventory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inventory {
    slots: [Slot; NUM_SLOTS],
}

impl Default for Inventory {
    fn default() -> Self {
        Self {
            slots: [Slot::default(); NUM_SLOTS],
        }
    }
}

impl Inventory {
    /// An inventory from explicit slots.
    pub fn from_slots(slots: [Slot; NUM_SLOTS]) -> Self {
        Self { slots }
    }

    /// The slots in order.
    pub fn slots(&self) -> &[Slot; NUM_SLOTS] {
        &self.slots
    }

    /// Sets one slot (used at reset to give humans a hotbar).
    pub fn set_slot(&mut self, index: usize, slot: Slot) {
        self.slots[index] = slot;
    }

    /// How many blocks of each id the player holds (summed over slots).
    pub fn counts(&self) -> [i32; NUM_BLOCKS] {
        let mut counts = [0; NUM_BLOCKS];
        // Empty slots add nothing: skipping them also saves chaining each add to
        // the store before it (they all share one id).
        for slot in self.slots.iter().filter(|slot| slot.count != 0) {
            if let Some(c) = counts.get_mut(usize::from(slot.block.0)) {
                *c += slot.count;
            }
        }
        counts
    }

    /// How many blocks of one id the player holds.
    pub fn count(&self, block: BlockId) -> i32 {
        self.slots
            .iter()
            .filter(|s| s.block == block)
            .map(|s| s.count)
            .sum()
    }

    /// The number of block types with a non-zero count.
    pub fn num_types_held(&self) -> usize {
        self.counts().iter().filter(|&&c| c != 0).count()
    }

    /// Whether `n` more blocks of `block` fit: room counts slots of that id and empty
    /// slots (whatever their stale id).
    pub fn has_room_for(&self, block: BlockId, n: i32) -> bool {
        let room: i32 = self
            .slots
            .iter()
            .filter(|s| s.block == block || s.count == 0)
            .map(|s| STACK_SIZE - s.count)
            .sum();
        room >= n
    }

    /// Adds `n` blocks if they fit; returns whether they did. Candidate slots are
    /// filled in ascending order, so an empty slot with a lower index is filled before
    /// a partial stack of the same type (a reference quirk).
    pub fn try_give(&mut self, block: BlockId, n: i32) -> bool {
        if !self.has_room_for(block, n) {
            return false;
        }
        let mut left = n;
        for slot in &mut self.slots {
            if left == 0 {
                break;
            }
            if slot.block != block && slot.count != 0 {
                continue;
            }
            slot.block = block;
            let free = STACK_SIZE - slot.count;
            if left <= free {
                slot.count += left;
                left = 0;
            } else {
                left -= free;
                slot.count = STACK_SIZE;
            }
        }
        true
    }

    /// Removes `n` blocks if the player holds that many; returns whether it did.
    pub fn try_take(&mut self, block: BlockId, n: i32) -> bool {
        if self.count(block) < n {
            return false;
        }
        let mut left = n;
        for slot in &mut self.slots {
            if left == 0 {
                break;
            }
            if slot.block != block || slot.count <= 0 {
                continue;
            }
            let taken = left.min(slot.count);
            slot.count -= taken;
            left -= taken;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_empty_slot_fills_before_partial_stack() {
        let mut inv = Inventory::default();
        inv.set_slot(
            1,
            Slot {
                block: BlockId::DIRT,
                count: 10,
            },
        );
        assert!(inv.try_give(BlockId::DIRT, 3));
        assert_eq!(inv.slots()[0].count, 3);
        assert_eq!(inv.slots()[1].count, 10);
        assert!(inv.try_take(BlockId::DIRT, 5));
        // Slot 0 is emptied but keeps its id.
        assert_eq!(
            inv.slots()[0],
            Slot {
                block: BlockId::DIRT,
                count: 0
            }
        );
        assert_eq!(inv.slots()[1].count, 8);
        assert!(!inv.try_take(BlockId::DIRT, 9));
        assert_eq!(inv.count(BlockId::DIRT), 8);
    }

    #[test]
    fn overflow_spills_into_next_slot_and_full_inventory_refuses() {
        let mut inv = Inventory::default();
        assert!(inv.try_give(BlockId::GLASS, 100));
        assert_eq!(inv.slots()[0].count, 64);
        assert_eq!(inv.slots()[1].count, 36);
        assert!(inv.try_give(BlockId::GLASS, 64 * 34 + 28));
        assert!(!inv.try_give(BlockId::GLASS, 1));
        assert!(!inv.has_room_for(BlockId::DIRT, 1));
    }
}
