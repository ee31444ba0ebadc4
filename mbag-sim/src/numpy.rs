//! numpy's summation order, so that sums the reference takes with numpy (normalising
//! distributions, seam-carving costs, partial-credit similarities, mean metrics)
//! come out bit-identical here.

/// numpy's reduction iterator hands the add loop at most this many elements at a
/// time (its buffer size), even for contiguous arrays.
const NUMPY_BUFSIZE: usize = 8192;

/// Sums a contiguous float64 array in the order numpy's `add.reduce` does: pairwise
/// within runs of 8192 elements, runs added left to right onto 0.
///
/// The reference normalises with such sums; using the same order makes our flat
/// probabilities bit-identical to the recorded ones rather than merely close.
pub fn sum(a: &[f64]) -> f64 {
    sum_of(a.len(), |i| a[i])
}

/// [`sum`] of the `len` values `value(0), value(1), ...`, without storing them
/// (each is asked for once, in an order of numpy's choosing).
pub fn sum_of(len: usize, value: impl Fn(usize) -> f64) -> f64 {
    let mut total = 0.0;
    let mut start = 0;
    while start < len {
        let run = NUMPY_BUFSIZE.min(len - start);
        total += pairwise_of(start, run, &value);
        start += run;
    }
    total
}

/// numpy's pairwise summation of one run: an 8-way unrolled loop for at most 128
/// elements, else the two halves (split at a multiple of 8) summed recursively.
pub fn pairwise_sum(a: &[f64]) -> f64 {
    pairwise_of(0, a.len(), &|i| a[i])
}

/// [`pairwise_sum`] of `value(start..start + n)`.
fn pairwise_of(start: usize, n: usize, value: &impl Fn(usize) -> f64) -> f64 {
    const BLOCK: usize = 128;
    let a = |i: usize| value(start + i);
    if n < 8 {
        // numpy starts from -0.0 here so that all-negative-zero input keeps its sign;
        // for probabilities that never matters, but it is free to mirror.
        (0..n).fold(-0.0, |s, i| s + a(i))
    } else if n <= BLOCK {
        let mut r: [f64; 8] = std::array::from_fn(a);
        let mut i = 8;
        while i < n - n % 8 {
            for (j, lane) in r.iter_mut().enumerate() {
                *lane += a(i + j);
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for k in i..n {
            res += a(k);
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_of(start, n2, value) + pairwise_of(start + n2, n - n2, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_sum_uses_numpys_order() {
        // Below 8 elements: left to right.
        assert_eq!(pairwise_sum(&[0.1, 0.2, 0.3]), (0.1 + 0.2) + 0.3);
        assert_eq!(pairwise_sum(&[]), 0.0);
        // 8..=128: eight lanes, combined as a tree, then the tail.
        let a: Vec<f64> = (0..19).map(|i| 1.0 / f64::from(i + 3)).collect();
        let r: [f64; 8] = std::array::from_fn(|j| a[j] + a[j + 8]);
        let tree = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        assert_eq!(pairwise_sum(&a), (tree + a[16]) + a[17] + a[18]);
        // Above 128: split at an 8-aligned half.
        let b: Vec<f64> = (0..300).map(|i| 1.0 / f64::from(i + 1)).collect();
        assert_eq!(
            pairwise_sum(&b),
            pairwise_sum(&b[..144]) + pairwise_sum(&b[144..])
        );
        assert!((pairwise_sum(&b) - b.iter().sum::<f64>()).abs() < 1e-12);
        // Whole arrays: runs of 8192 added onto 0 (the goldens' RandomAgent
        // probabilities are only bit-exact with this chunking).
        let c: Vec<f64> = (0..20_000).map(|i| 1.0 / f64::from(i + 7)).collect();
        let runs = ((0.0 + pairwise_sum(&c[..8192])) + pairwise_sum(&c[8192..16_384]))
            + pairwise_sum(&c[16_384..]);
        assert_eq!(sum(&c), runs);
        assert_eq!(sum(&b), pairwise_sum(&b));
        assert!(sum(&[-0.0]).is_sign_positive());
        assert_eq!(sum_of(c.len(), |i| c[i]), runs);
    }

    #[test]
    fn ten_tenths_make_one_as_in_numpy() {
        // Sequentially 0.1 ten times is 0.9999999999999999; numpy's 8-way unrolled
        // pairwise sum gives exactly 1.0 (checked with numpy 1.26).
        assert_eq!(sum(&[0.1; 10]), 1.0);
    }
}
