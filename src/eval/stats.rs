//! Means and 95% confidence intervals for evaluation summaries.
//!
//! Means use Student's t interval (`mean ± t(0.975, n-1) · s/√n`, `s` the sample
//! standard deviation): evaluations often run a handful of episodes, where the
//! normal approximation is too narrow. Rates use the Wilson score interval, which
//! stays inside [0, 1] and is not degenerate at 0% or 100%.

use serde::Serialize;

/// The two-sided 95% normal quantile.
pub const Z_975: f64 = 1.959_963_984_540_054;

/// `t(0.975, df)` for df = 1..=30 (standard tables, 7 decimals).
const T_975: [f64; 30] = [
    12.706_204_7,
    4.302_652_7,
    3.182_446_3,
    2.776_445_1,
    2.570_581_8,
    2.446_911_9,
    2.364_624_3,
    2.306_004_1,
    2.262_157_2,
    2.228_138_9,
    2.200_985_2,
    2.178_812_8,
    2.160_368_7,
    2.144_786_7,
    2.131_449_5,
    2.119_905_3,
    2.109_815_6,
    2.100_922_0,
    2.093_024_1,
    2.085_963_4,
    2.079_613_8,
    2.073_873_1,
    2.068_657_6,
    2.063_898_6,
    2.059_538_6,
    2.055_529_4,
    2.051_830_5,
    2.048_407_1,
    2.045_229_6,
    2.042_272_5,
];

/// The 97.5% quantile of Student's t with `df` degrees of freedom (NaN for df = 0).
///
/// A table up to 30, then the Cornish-Fisher expansion around the normal quantile,
/// which is within 1e-6 of the exact value there and closer beyond.
pub fn t_975(df: u64) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T_975[df as usize - 1],
        _ => {
            let z = Z_975;
            let v = df as f64;
            let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
            z + (z3 + z) / (4.0 * v)
                + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
                + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v.powi(3))
                + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z)
                    / (92160.0 * v.powi(4))
        }
    }
}

/// The mean of a metric over episodes with its 95% t interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MeanCi {
    /// Values used (NaN values are skipped).
    pub n: u64,
    /// Values skipped because they were NaN (e.g. a goal equal to the start world).
    pub skipped: u64,
    /// The mean (NaN when n = 0).
    pub mean: f64,
    /// The sample standard deviation (NaN when n < 2).
    pub std: f64,
    /// Half the interval's width (NaN when n < 2).
    pub half_width: f64,
    /// `mean - half_width`.
    pub low: f64,
    /// `mean + half_width`.
    pub high: f64,
}

impl MeanCi {
    /// The mean and 95% interval of the non-NaN `values`.
    ///
    /// The mean is `np.nanmean`'s, bit for bit (the reference's
    /// `calculate_mean_metrics` averages with it): the values with each NaN
    /// replaced by 0 in place, summed in numpy's pairwise order, divided by the
    /// number of non-NaN values.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut filled = Vec::new();
        let mut kept = Vec::new();
        let mut skipped = 0;
        for v in values {
            if v.is_nan() {
                skipped += 1;
                filled.push(0.0);
            } else {
                kept.push(v);
                filled.push(v);
            }
        }
        let n = kept.len() as u64;
        let mean = crate::sim::numpy::sum(&filled) / n as f64;
        let std = if n < 2 {
            f64::NAN
        } else {
            (kept.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        };
        let half_width = if n < 2 {
            f64::NAN
        } else {
            t_975(n - 1) * std / (n as f64).sqrt()
        };
        Self {
            n,
            skipped,
            mean,
            std,
            half_width,
            low: mean - half_width,
            high: mean + half_width,
        }
    }
}

/// A rate (successes out of trials) with its 95% Wilson score interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateCi {
    /// Successes.
    pub successes: u64,
    /// Trials.
    pub n: u64,
    /// `successes / n` (NaN when n = 0).
    pub rate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

impl RateCi {
    /// The Wilson interval of `successes` out of `n`.
    pub fn wilson(successes: u64, n: u64) -> Self {
        let nf = n as f64;
        let p = successes as f64 / nf;
        let z2 = Z_975 * Z_975;
        let denom = 1.0 + z2 / nf;
        let center = (p + z2 / (2.0 * nf)) / denom;
        let half = Z_975 * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
        Self {
            successes,
            n,
            rate: p,
            low: center - half,
            high: center + half,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_interval_of_one_to_four() {
        // mean 2.5, s = sqrt(5/3), t(0.975, 3) = 3.1824463: ± 3.1824463 * s / 2.
        let ci = MeanCi::of([1.0, 2.0, f64::NAN, 3.0, 4.0]);
        assert_eq!((ci.n, ci.skipped), (4, 1));
        assert_eq!(ci.mean, 2.5);
        assert!(close(ci.std, 1.290_994_448_7, 1e-9));
        assert!(close(ci.half_width, 2.054_260_3, 1e-6), "{ci:?}");
        assert!(close(ci.low, 0.445_739_7, 1e-6) && close(ci.high, 4.554_260_3, 1e-6));
        let one = MeanCi::of([7.0]);
        assert_eq!(one.mean, 7.0);
        assert!(one.half_width.is_nan());
        assert!(MeanCi::of([]).mean.is_nan());
    }

    #[test]
    fn means_are_numpys_nanmean() {
        // np.nanmean([0.1] * 5 + [nan] + [0.1] * 5) is 0.1: the NaN counts as 0 in
        // its place of the pairwise sum. Left to right it would be
        // 0.9999999999999999 / 10 = 0.09999999999999999.
        let mut values = vec![0.1; 10];
        values.insert(5, f64::NAN);
        let ci = MeanCi::of(values);
        assert_eq!((ci.n, ci.skipped), (10, 1));
        assert_eq!(ci.mean, 0.1);
    }

    #[test]
    fn t_quantiles_join_the_expansion_smoothly() {
        // The expansion at the table's end agrees with the table.
        let v = 30.0;
        let z = Z_975;
        let expansion = z
            + (z.powi(3) + z) / (4.0 * v)
            + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v);
        assert!(close(expansion, t_975(30), 1e-4));
        assert!(t_975(31) < t_975(30) && t_975(31) > 2.039 && t_975(31) < 2.040);
        assert!(close(t_975(1000), 1.962_339, 1e-5));
        assert!(t_975(0).is_nan());
    }

    #[test]
    fn wilson_interval_of_eight_in_ten() {
        let ci = RateCi::wilson(8, 10);
        assert_eq!(ci.rate, 0.8);
        assert!(close(ci.low, 0.490_162_5, 1e-6), "{ci:?}");
        assert!(close(ci.high, 0.943_317_8, 1e-6), "{ci:?}");
        let all = RateCi::wilson(5, 5);
        assert_eq!(all.rate, 1.0);
        assert!(all.high <= 1.0 + 1e-12 && all.low < 1.0 && all.low > 0.5);
        let none = RateCi::wilson(0, 5);
        assert!(none.low.abs() < 1e-12 && none.high > 0.0);
    }
}
