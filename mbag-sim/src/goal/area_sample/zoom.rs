//! Rescaling a label array like `scipy.ndimage.zoom` (scipy 1.13.1, `mode='constant'`,
//! `grid_mode=False`, spline order 0 or 1) applied to each label's one-hot indicator,
//! followed by an argmax over the labels.
//!
//! `area_sample` picks each output cell's id as the argmax of the interpolated
//! indicators, and ties (e.g. two ids at exactly 0.5) are frequent, so the arithmetic
//! follows scipy's `NI_ZoomShift` operation by operation:
//! * output extent `round(n * zoom)` (half to even, as Python's `round`);
//! * per axis the coordinate `k * ((n_in - 1) / (n_out - 1))` (factor 1 when
//!   `n_out == 1`); a coordinate outside `[0, n_in - 1]` makes the whole output cell
//!   the constant 0;
//! * order 1 weights `w0 = 1 - frac`, `w1 = 1 - w0`, the second sample index mirrored
//!   back into range at the upper edge (its weight is then 0);
//! * the value is `sum over the 8 corners, in C order, of ((v * w_x) * w_y) * w_z`.
//!
//! Spline orders above 1 need scipy's prefilter and are not supported.

/// The supported spline orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoomOrder {
    /// Order 0: the nearest sample (halves round up).
    Nearest,
    /// Order 1: linear interpolation.
    Linear,
}

/// The per-axis sampling table: for each output index, `None` (outside: the constant)
/// or the sample indices and their weights.
#[derive(Debug, Clone)]
struct AxisTable {
    samples: Vec<Option<([usize; 2], [f64; 2])>>,
}

/// scipy's `map_coordinate` for `NI_EXTEND_MIRROR`, used on integer sample indices
/// past the upper edge.
fn mirror_index(idx: usize, len: usize) -> usize {
    if idx < len {
        return idx;
    }
    if len <= 1 {
        return 0;
    }
    let sz2 = 2 * len - 2;
    let mut i = idx - sz2 * (idx / sz2);
    if i >= len {
        i = sz2 - i;
    }
    i
}

fn axis_table(n_in: usize, n_out: usize, order: ZoomOrder) -> AxisTable {
    let factor = if n_out > 1 {
        (n_in as f64 - 1.0) / (n_out as f64 - 1.0)
    } else {
        1.0
    };
    let last = n_in as f64 - 1.0;
    let samples = (0..n_out)
        .map(|k| {
            let cc = k as f64 * factor;
            if cc < 0.0 || cc > last {
                return None;
            }
            if order == ZoomOrder::Nearest {
                let start = (cc + 0.5).floor() as usize;
                Some(([mirror_index(start, n_in), 0], [1.0, 0.0]))
            } else {
                let start = cc.floor() as usize;
                let x = cc - cc.floor();
                let w0 = 1.0 - x;
                let w1 = 1.0 - w0;
                Some((
                    [mirror_index(start, n_in), mirror_index(start + 1, n_in)],
                    [w0, w1],
                ))
            }
        })
        .collect();
    AxisTable { samples }
}

/// The output extents `round(n * zoom)` per axis.
pub fn zoomed_dims(dims: [usize; 3], zoom: [f64; 3]) -> [usize; 3] {
    let mut out = [0; 3];
    for a in 0..3 {
        out[a] = (dims[a] as f64 * zoom[a]).round_ties_even().max(0.0) as usize;
    }
    out
}

/// Zooms the label array `values` (C order over `dims`) and returns, per output cell,
/// the label whose interpolated indicator is largest (the lowest label on ties), and
/// the output extents. The labels are the distinct values of `values`.
pub fn zoom_argmax(
    values: &[u8],
    dims: [usize; 3],
    zoom: [f64; 3],
    order: ZoomOrder,
) -> (Vec<u8>, [usize; 3]) {
    let mut present = [false; 256];
    for &v in values {
        present[usize::from(v)] = true;
    }
    let labels: Vec<u8> = (0..=255u8).filter(|&v| present[usize::from(v)]).collect();
    let out_dims = zoomed_dims(dims, zoom);
    let tables: Vec<AxisTable> = (0..3)
        .map(|a| axis_table(dims[a], out_dims[a], order))
        .collect();
    let taps = if order == ZoomOrder::Nearest { 1 } else { 2 };
    let mut out = Vec::with_capacity(out_dims[0] * out_dims[1] * out_dims[2]);
    let mut totals = vec![0.0f64; labels.len()];
    for i in 0..out_dims[0] {
        for j in 0..out_dims[1] {
            for k in 0..out_dims[2] {
                let (Some(sx), Some(sy), Some(sz)) = (
                    tables[0].samples[i],
                    tables[1].samples[j],
                    tables[2].samples[k],
                ) else {
                    // The constant 0 for every label: argmax is the first label.
                    out.push(labels.first().copied().unwrap_or(0));
                    continue;
                };
                totals.iter_mut().for_each(|t| *t = 0.0);
                for fx in 0..taps {
                    for fy in 0..taps {
                        for fz in 0..taps {
                            let v = values[(sx.0[fx] * dims[1] + sy.0[fy]) * dims[2] + sz.0[fz]];
                            let coeff = if order == ZoomOrder::Nearest {
                                1.0
                            } else {
                                sx.1[fx] * sy.1[fy] * sz.1[fz]
                            };
                            // Other labels get 0 * weights = +0.0 added, a no-op.
                            let slot = labels.binary_search(&v).unwrap_or(0);
                            totals[slot] += coeff;
                        }
                    }
                }
                let mut best = 0;
                for (l, &t) in totals.iter().enumerate() {
                    if t > totals[best] {
                        best = l;
                    }
                }
                out.push(labels[best]);
            }
        }
    }
    (out, out_dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_extent_rounds_half_to_even() {
        assert_eq!(zoomed_dims([5, 3, 7], [0.5, 0.5, 0.5]), [2, 2, 4]);
        assert_eq!(zoomed_dims([15, 7, 15], [1.0, 1.2, 0.4]), [15, 8, 6]);
    }

    #[test]
    fn mirror_matches_scipy() {
        assert_eq!(mirror_index(5, 5), 3);
        assert_eq!(mirror_index(2, 2), 0);
        assert_eq!(mirror_index(1, 1), 0);
        assert_eq!(mirror_index(3, 5), 3);
    }

    #[test]
    fn halving_a_line_ties_to_the_lower_label() {
        // 1-D along z: [0, 3, 3, 0] zoomed to 2 cells samples z = 0 and z = 3 exactly.
        let (out, dims) = zoom_argmax(&[0, 3, 3, 0], [1, 1, 4], [1.0, 1.0, 0.5], ZoomOrder::Linear);
        assert_eq!(dims, [1, 1, 2]);
        assert_eq!(out, vec![0, 0]);
        // [0, 3, 5] to 5 cells: coordinates 0, .5, 1, 1.5, 2; the halves are ties
        // between air/cobblestone (air wins) and cobblestone/planks (cobblestone wins).
        let (out, _) = zoom_argmax(
            &[0, 3, 5],
            [1, 1, 3],
            [1.0, 1.0, 5.0 / 3.0],
            ZoomOrder::Linear,
        );
        assert_eq!(out, vec![0, 0, 3, 3, 5]);
    }

    #[test]
    fn nearest_rounds_half_up() {
        let (out, _) = zoom_argmax(
            &[0, 3, 5],
            [1, 1, 3],
            [1.0, 1.0, 5.0 / 3.0],
            ZoomOrder::Nearest,
        );
        assert_eq!(out, vec![0, 3, 3, 5, 5]);
    }
}
