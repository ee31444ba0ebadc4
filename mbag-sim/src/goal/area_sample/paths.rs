//! Walkable-path preservation for `area_sample`: marking the air cells a player can
//! walk through before rescaling, and turning them back into walkable gaps after.

use crate::goal::GoalError;
use crate::goal::components::{Connectivity, count_components_2d, label};
use crate::goal::fill::fill_placeholders;
use crate::goal::grid::{Grid, flat};
use crate::{BlockId, Blocks};

/// The temporary id of path cells while rescaling.
pub const PATH: u8 = 254;

/// Horizontal padding around the structure for the walkability search.
const PAD: usize = 2;

/// The path cells of `structure` (a mask over its cells, all of them air):
/// the cells a player can stand in that are reachable from outside the structure,
/// thinned until removing any cell would split the path network.
///
/// The structure is padded with two air columns on each horizontal side and two air
/// layers on top. A cell is standable when it and the cell above are air and there is
/// ground one or two cells below; the bottom three layers are standable whenever the
/// cell and the one above are air (the padding is walkable at ground level). The
/// standable component containing padding cell (0, 1, 0) is then thinned: border cells
/// (no path cell in some horizontal direction at the same, upper or lower level),
/// visited from the top layer down and in C order within a layer, are dropped when
/// that keeps the number of 4-connected components of the 3x3 column projection of
/// their neighbourhood and leaves more than one path cell in it.
pub fn find_paths(structure: &Blocks) -> Result<Grid<bool>, GoalError> {
    let size = structure.size();
    let [w, h, d] = size.axes();
    if h < 2 {
        return Err(GoalError::PathSearchTooFlat { height: h });
    }
    let (pw, ph, pd) = (w + 2 * PAD, h + 2, d + 2 * PAD);
    let solid = Grid::from_fn([pw, ph, pd], |x, y, z| {
        (PAD..PAD + w).contains(&x)
            && y < h
            && (PAD..PAD + d).contains(&z)
            && structure.ids()[flat(size, x - PAD, y, z - PAD)] != BlockId::AIR.0
    });
    let air = |x: usize, y: usize, z: usize| !solid.get(x, y, z);
    let can_stand = Grid::from_fn([pw, ph, pd], |x, y, z| {
        if y < 3 {
            return air(x, y, z) && air(x, y + 1, z);
        }
        if y + 1 >= ph {
            return false;
        }
        let on_ground = solid.get(x, y - 1, z) && air(x, y, z) && air(x, y + 1, z);
        let above_ground =
            solid.get(x, y - 2, z) && air(x, y - 1, z) && air(x, y, z) && air(x, y + 1, z);
        on_ground || above_ground
    });
    let (components, _) = label(&can_stand, Connectivity::Six);
    let ground = components.get(0, 1, 0);
    let mut paths = Grid::from_fn([pw, h, pd], |x, y, z| components.get(x, y, z) == ground);

    loop {
        let before = paths.clone();
        thin_once(&mut paths);
        if paths == before {
            break;
        }
    }
    Ok(Grid::from_fn([w, h, d], |x, y, z| {
        paths.get(x + PAD, y, z + PAD)
    }))
}

/// One thinning sweep over the border cells of `paths`.
fn thin_once(paths: &mut Grid<bool>) {
    let [pw, h, pd] = paths.dims();
    let is_border = |paths: &Grid<bool>, x: usize, y: usize, z: usize| {
        let open_towards = |nx: usize, nz: usize| {
            !paths.get(nx, y, nz)
                && (y + 1 >= h || !paths.get(nx, y + 1, nz))
                && (y == 0 || !paths.get(nx, y - 1, nz))
        };
        open_towards(x - 1, z)
            || open_towards(x + 1, z)
            || open_towards(x, z - 1)
            || open_towards(x, z + 1)
    };
    // Border cells are computed from the paths as they were at the start of the sweep;
    // the reference never looks at the outermost columns.
    let mut border = Vec::new();
    for y in (0..h).rev() {
        for x in 1..pw.saturating_sub(1) {
            for z in 1..pd.saturating_sub(1) {
                if paths.get(x, y, z) && is_border(paths, x, y, z) {
                    border.push((x, y, z));
                }
            }
        }
    }
    for (x, y, z) in border {
        let y_lo = y.saturating_sub(1);
        let y_hi = (y + 1).min(h - 1);
        let mut with = [[false; 3]; 3];
        let mut without = [[false; 3]; 3];
        let mut count_without = 0;
        for (i, nx) in (x - 1..=x + 1).enumerate() {
            for (k, nz) in (z - 1..=z + 1).enumerate() {
                for ny in y_lo..=y_hi {
                    if !paths.get(nx, ny, nz) {
                        continue;
                    }
                    with[i][k] = true;
                    if (nx, ny, nz) != (x, y, z) {
                        without[i][k] = true;
                        count_without += 1;
                    }
                }
            }
        }
        if count_components_2d(&without) == count_components_2d(&with) && count_without > 1 {
            paths.set(x, y, z, false);
        }
    }
}

/// Turns the path cells of a rescaled structure back into walkable gaps, then fills
/// the placeholders this creates (ids only).
///
/// Path cells at y = 0 move up to y = 1. Then, from the lowest layer up (cells moved
/// up come after the original ones of layer 1): air below a path cell becomes a
/// placeholder, the path cell and the cell above become air, and so does the cell two
/// above when a horizontal neighbour one level up was a path cell (before this pass).
pub fn recreate_paths(structure: &mut Blocks) -> Result<(), GoalError> {
    let size = structure.size();
    let [w, h, d] = size.axes();
    let mut locations: Vec<(usize, usize, usize)> = Vec::new();
    for x in 0..w {
        for y in 0..h {
            for z in 0..d {
                if structure.ids()[flat(size, x, y, z)] == PATH {
                    locations.push((x, y, z));
                }
            }
        }
    }
    let grounded: Vec<(usize, usize, usize)> = locations
        .iter()
        .copied()
        .filter(|&(_, y, _)| y == 0)
        .collect();
    for (x, _, z) in grounded {
        if h < 2 {
            return Err(GoalError::PathOutOfBounds { x, z, size });
        }
        structure.ids_mut()[flat(size, x, 0, z)] = BlockId::AIR.0;
        structure.ids_mut()[flat(size, x, 1, z)] = PATH;
        if let Some(pos) = locations.iter().position(|&l| l == (x, 0, z)) {
            locations.remove(pos);
        }
        if !locations.contains(&(x, 1, z)) {
            locations.push((x, 1, z));
        }
    }
    locations.sort_by_key(|&(_, y, _)| y);

    let before = structure.ids().to_vec();
    let was_path = |x: usize, y: usize, z: usize| before[flat(size, x, y, z)] == PATH;
    for (x, y, z) in locations {
        let ids = structure.ids_mut();
        if y >= 1 && ids[flat(size, x, y - 1, z)] == BlockId::AIR.0 {
            ids[flat(size, x, y - 1, z)] = BlockId::AUTO.0;
        }
        ids[flat(size, x, y, z)] = BlockId::AIR.0;
        if y + 1 < h {
            ids[flat(size, x, y + 1, z)] = BlockId::AIR.0;
            let next_to_path = (x >= 1 && was_path(x - 1, y + 1, z))
                || (x + 1 < w && was_path(x + 1, y + 1, z))
                || (z >= 1 && was_path(x, y + 1, z - 1))
                || (z + 1 < d && was_path(x, y + 1, z + 1));
            if y + 2 < h && next_to_path {
                ids[flat(size, x, y + 2, z)] = BlockId::AIR.0;
            }
        }
    }
    fill_placeholders(structure);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorldSize;
    use crate::goal::grid::from_ids;

    #[test]
    fn open_ground_is_thinned_to_a_connected_path() {
        // A 5x3x5 structure: a full floor at y = 0, air above. Every air cell of layer 1
        // and 2 is standable and reachable; thinning keeps a connected subset.
        let size = WorldSize::new(5, 3, 5);
        let ids = (0..75)
            .map(|i| if (i / 5) % 3 == 0 { 3 } else { 0 })
            .collect();
        let structure = from_ids(size, ids);
        let paths = find_paths(&structure).unwrap();
        assert_eq!(paths.dims(), [5, 3, 5]);
        for x in 0..5 {
            for z in 0..5 {
                assert!(!paths.get(x, 0, z), "solid cells are never paths");
            }
        }
        assert!(find_paths(&from_ids(WorldSize::new(2, 1, 2), vec![3; 4])).is_err());
    }

    #[test]
    fn recreated_paths_become_gaps_with_support() {
        // 1x4x1 column: [stone, path, stone, stone] -> the path and the cell above
        // become air; below was not air so nothing is filled.
        let mut s = from_ids(WorldSize::new(1, 4, 1), vec![7, PATH, 7, 7]);
        recreate_paths(&mut s).unwrap();
        assert_eq!(s.ids(), &[7, 0, 0, 7]);
        // A path on the ground moves up and the vacated ground cell is refilled from
        // its neighbours (here: none but air -> air, then the stone on the side).
        let mut s = from_ids(WorldSize::new(2, 3, 1), vec![PATH, 0, 0, 7, 7, 7]);
        recreate_paths(&mut s).unwrap();
        assert_eq!(s.ids(), &[7, 0, 0, 7, 7, 7]);
        let mut flat_one = from_ids(WorldSize::new(1, 1, 1), vec![PATH]);
        assert!(matches!(
            recreate_paths(&mut flat_one),
            Err(GoalError::PathOutOfBounds { .. })
        ));
    }
}
