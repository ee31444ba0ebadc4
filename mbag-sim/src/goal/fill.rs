//! Placeholder filling (ENV_SPEC 12.4).

use crate::{BlockId, Blocks};

use super::grid::flat;

/// Replaces every placeholder ([`BlockId::AUTO`]) cell, in C order, by the most
/// frequent id among its 26 neighbours, ignoring air and placeholders (cells outside
/// the structure count as air). Ties go to the highest id; with no candidate the
/// cell becomes air. Only ids change, states are kept.
///
/// Cells are filled one at a time, so a cell filled earlier counts as its new id for
/// later ones, as in the reference.
///
/// The reference breaks ties through numpy's `argsort` of the counts, which is stable
/// (highest id wins) on CPUs without AVX-512, where the goldens were recorded. With
/// numpy 1.26's AVX-512 sort the reference itself breaks some ties differently (three
/// golden `area_sample` cases then do not reproduce); we follow the goldens.
pub fn fill_placeholders(blocks: &mut Blocks) {
    let size = blocks.size();
    let [w, h, d] = size.axes();
    for x in 0..w {
        for y in 0..h {
            for z in 0..d {
                let i = flat(size, x, y, z);
                if blocks.ids()[i] != BlockId::AUTO.0 {
                    continue;
                }
                let mut counts = [0u32; 256];
                for nx in x.saturating_sub(1)..(x + 2).min(w) {
                    for ny in y.saturating_sub(1)..(y + 2).min(h) {
                        for nz in z.saturating_sub(1)..(z + 2).min(d) {
                            if (nx, ny, nz) != (x, y, z) {
                                counts[usize::from(blocks.ids()[flat(size, nx, ny, nz)])] += 1;
                            }
                        }
                    }
                }
                counts[usize::from(BlockId::AIR.0)] = 0;
                counts[usize::from(BlockId::AUTO.0)] = 0;
                // Highest id among the most frequent: scanning upwards with `>=`.
                let mut best = BlockId::AIR.0;
                let mut best_count = 0;
                for (id, &count) in counts.iter().enumerate() {
                    if count > 0 && count >= best_count {
                        best = id as u8;
                        best_count = count;
                    }
                }
                blocks.ids_mut()[i] = best;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorldSize;
    use crate::goal::grid::from_ids;

    #[test]
    fn majority_then_highest_id_then_air() {
        // 3x1x3 layer: centre placeholder surrounded by 3 stone, 3 planks, 2 air.
        let ids = vec![7, 7, 7, 6, 255, 6, 6, 0, 0];
        let mut blocks = from_ids(WorldSize::new(3, 1, 3), ids);
        fill_placeholders(&mut blocks);
        assert_eq!(blocks.ids()[4], 7, "tie 3-3 goes to the higher id");

        let mut lonely = from_ids(WorldSize::new(1, 1, 1), vec![255]);
        fill_placeholders(&mut lonely);
        assert_eq!(lonely.ids(), &[0]);
    }

    #[test]
    fn earlier_fills_count_for_later_cells() {
        // [cobblestone, auto, auto]: the first placeholder becomes cobblestone, and then
        // so does the second (its only non-air neighbour is the freshly filled one).
        let mut blocks = from_ids(WorldSize::new(3, 1, 1), vec![3, 255, 255]);
        fill_placeholders(&mut blocks);
        assert_eq!(blocks.ids(), &[3, 3, 3]);
    }
}
