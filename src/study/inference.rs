//! The statistics of a study's report: means with standard errors and t
//! intervals, paired one-sided t-tests, a one-way repeated-measures ANOVA and
//! Tukey's HSD on its error term.
//!
//! A within-subjects study measures every participant in every condition, so
//! conditions are compared on pairs of one participant's sessions (the
//! participant's own skill cancels out): the paired t-test on differences, and
//! the repeated-measures ANOVA, which removes the participants' sum of squares
//! before forming the error term that Tukey's HSD then uses (`q = |m_i −
//! m_j| / √(MS_error / n)`, `k` conditions, `(n − 1)(k − 1)` degrees of freedom).
//!
//! The ANOVA's F test assumes sphericity (every difference of two conditions
//! has the same variance), which a handful of participants cannot vouch for,
//! so the table also carries the Greenhouse-Geisser correction: both degrees
//! of freedom times `ε̂ = tr(S*)² / ((k − 1) Σ S*ᵢⱼ²)`, `S*` the conditions'
//! covariance matrix double-centred (rows and columns summing to zero);
//! `1/(k − 1) ≤ ε̂ ≤ 1`, 1 under sphericity.

use serde::Serialize;

use super::dist::{f_sf, studentized_range_cdf, t_quantile, t_sf};

/// The interval level the report uses (the paper's Appendix C: 90%).
pub const LEVEL: f64 = 0.90;

/// A mean with its standard error and two-sided t interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Values used (NaN values are left out).
    pub n: usize,
    /// The mean (NaN when n = 0).
    pub mean: f64,
    /// The sample standard deviation (NaN when n < 2).
    pub sd: f64,
    /// The standard error `sd / √n` (NaN when n < 2).
    pub se: f64,
    /// The interval's level (0.9 for 90%).
    pub level: f64,
    /// `mean − t((1 + level)/2, n − 1) · se`.
    pub low: f64,
    /// `mean + t((1 + level)/2, n − 1) · se`.
    pub high: f64,
}

impl Estimate {
    /// The mean of the non-NaN `values` with a `level` t interval.
    pub fn of(values: &[f64], level: f64) -> Self {
        let kept: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        let n = kept.len();
        let mean = kept.iter().sum::<f64>() / n as f64;
        let sd = if n < 2 {
            f64::NAN
        } else {
            (kept.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        };
        let se = sd / (n as f64).sqrt();
        let half = if n < 2 {
            f64::NAN
        } else {
            t_quantile(0.5 + level / 2.0, (n - 1) as f64) * se
        };
        Self {
            n,
            mean,
            sd,
            se,
            level,
            low: mean - half,
            high: mean + half,
        }
    }
}

/// A paired t-test of `a` against `b` over the participants with both.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PairedTest {
    /// Pairs used (pairs with a NaN are left out).
    pub n: usize,
    /// The mean of `a − b`.
    pub mean_difference: f64,
    /// The standard deviation of the differences.
    pub sd_difference: f64,
    /// `mean / (sd / √n)` (±infinity when every difference is the same
    /// non-zero value, NaN when all are zero or n < 2).
    pub t: f64,
    /// `n − 1`.
    pub df: usize,
    /// One-sided p-value for "a is greater than b": `P(T ≥ t)`.
    pub p_greater: f64,
    /// One-sided p-value for "a is less than b": `P(T ≤ t)`.
    pub p_less: f64,
}

/// The paired t-test of `a[i]` against `b[i]`.
pub fn paired_t(a: &[f64], b: &[f64]) -> PairedTest {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| x - y)
        .filter(|d| !d.is_nan())
        .collect();
    let n = d.len();
    let e = Estimate::of(&d, LEVEL);
    let t = if n < 2 {
        f64::NAN
    } else if e.sd == 0.0 {
        // Identical differences: certain if non-zero, no evidence if zero.
        if e.mean == 0.0 {
            f64::NAN
        } else {
            e.mean.signum() * f64::INFINITY
        }
    } else {
        e.mean / e.se
    };
    let df = n.saturating_sub(1);
    PairedTest {
        n,
        mean_difference: e.mean,
        sd_difference: e.sd,
        t,
        df,
        p_greater: t_sf(t, df as f64),
        p_less: t_sf(-t, df as f64),
    }
}

/// A one-way repeated-measures ANOVA (participants × conditions).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Anova {
    /// Participants with a value in every condition (the only ones used).
    pub subjects: usize,
    /// Conditions.
    pub conditions: usize,
    /// Per condition, the mean over the subjects used.
    pub means: Vec<f64>,
    /// Between-conditions sum of squares.
    pub ss_conditions: f64,
    /// Between-participants sum of squares (removed from the error).
    pub ss_subjects: f64,
    /// The residual (participant × condition) sum of squares.
    pub ss_error: f64,
    /// `k − 1`.
    pub df_conditions: usize,
    /// `(n − 1)(k − 1)`.
    pub df_error: usize,
    /// `ss_conditions / df_conditions`.
    pub ms_conditions: f64,
    /// `ss_error / df_error`.
    pub ms_error: f64,
    /// `ms_conditions / ms_error`.
    pub f: f64,
    /// `P(F ≥ f)`.
    pub p: f64,
    /// The Greenhouse-Geisser estimate of sphericity, `1/(k − 1) ≤ ε ≤ 1`.
    pub gg_epsilon: f64,
    /// `P(F ≥ f)` with both degrees of freedom multiplied by `gg_epsilon`.
    pub p_gg: f64,
}

/// The repeated-measures ANOVA of `rows` (one per participant, one value per
/// condition); rows with a NaN are left out. `None` with fewer than two
/// complete rows or two conditions.
pub fn rm_anova(rows: &[Vec<f64>]) -> Option<Anova> {
    let k = rows.first()?.len();
    let complete: Vec<&Vec<f64>> = rows
        .iter()
        .filter(|r| r.len() == k && r.iter().all(|v| !v.is_nan()))
        .collect();
    let n = complete.len();
    if n < 2 || k < 2 {
        return None;
    }
    let (nf, kf) = (n as f64, k as f64);
    let grand = complete.iter().flat_map(|r| r.iter()).sum::<f64>() / (nf * kf);
    let means: Vec<f64> = (0..k)
        .map(|j| complete.iter().map(|r| r[j]).sum::<f64>() / nf)
        .collect();
    let ss_conditions = nf * means.iter().map(|m| (m - grand).powi(2)).sum::<f64>();
    let ss_subjects = kf
        * complete
            .iter()
            .map(|r| (r.iter().sum::<f64>() / kf - grand).powi(2))
            .sum::<f64>();
    let ss_total: f64 = complete
        .iter()
        .flat_map(|r| r.iter())
        .map(|v| (v - grand).powi(2))
        .sum();
    // Rounding may leave a perfect fit a hair below zero.
    let ss_error = (ss_total - ss_conditions - ss_subjects).max(0.0);
    let df_conditions = k - 1;
    let df_error = (n - 1) * (k - 1);
    let ms_conditions = ss_conditions / df_conditions as f64;
    let ms_error = ss_error / df_error as f64;
    let f = ms_conditions / ms_error;
    let gg_epsilon = greenhouse_geisser(&complete, &means);
    Some(Anova {
        subjects: n,
        conditions: k,
        means,
        ss_conditions,
        ss_subjects,
        ss_error,
        df_conditions,
        df_error,
        ms_conditions,
        ms_error,
        f,
        p: f_sf(f, df_conditions as f64, df_error as f64),
        gg_epsilon,
        p_gg: f_sf(
            f,
            gg_epsilon * df_conditions as f64,
            gg_epsilon * df_error as f64,
        ),
    })
}

/// The Greenhouse-Geisser epsilon of complete `rows` whose column means are
/// `means`: from the conditions' sample covariance matrix `S`, double-centred
/// (`S*ᵢⱼ = Sᵢⱼ − S̄ᵢ. − S̄.ⱼ + S̄..`), `tr(S*)² / ((k − 1) Σ S*ᵢⱼ²)`. The
/// covariance's `1/(n − 1)` cancels in the ratio, so cross-products suffice.
fn greenhouse_geisser(rows: &[&Vec<f64>], means: &[f64]) -> f64 {
    let k = means.len();
    let mut s = vec![0.0; k * k];
    for r in rows {
        for i in 0..k {
            for j in 0..k {
                s[i * k + j] += (r[i] - means[i]) * (r[j] - means[j]);
            }
        }
    }
    let kf = k as f64;
    // S is symmetric, so its row means are its column means.
    let row: Vec<f64> = (0..k)
        .map(|i| s[i * k..(i + 1) * k].iter().sum::<f64>() / kf)
        .collect();
    let all = row.iter().sum::<f64>() / kf;
    let (mut trace, mut squares) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            let c = s[i * k + j] - row[i] - row[j] + all;
            squares += c * c;
            if i == j {
                trace += c;
            }
        }
    }
    if squares == 0.0 {
        // Every participant differs from the means by a constant: no error
        // variance at all, so nothing departs from sphericity to correct.
        return 1.0;
    }
    trace * trace / ((kf - 1.0) * squares)
}

/// One pair of Tukey's HSD.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TukeyPair {
    /// The first condition's index.
    pub a: usize,
    /// The second condition's index.
    pub b: usize,
    /// `mean_a − mean_b`.
    pub difference: f64,
    /// The studentized range statistic `|difference| / √(MS_error / n)`.
    pub q: f64,
    /// The family-wise adjusted p-value `P(Q ≥ q)` for `k` means.
    pub p: f64,
}

/// Tukey's HSD of every pair of the ANOVA's conditions, on its error term.
pub fn tukey_hsd(anova: &Anova) -> Vec<TukeyPair> {
    let k = anova.conditions;
    let se = (anova.ms_error / anova.subjects as f64).sqrt();
    let mut pairs = Vec::new();
    for a in 0..k {
        for b in a + 1..k {
            let difference = anova.means[a] - anova.means[b];
            let q = difference.abs() / se;
            let p = if q.is_nan() {
                f64::NAN
            } else {
                1.0 - studentized_range_cdf(q, k as u32, anova.df_error as f64)
            };
            pairs.push(TukeyPair {
                a,
                b,
                difference,
                q,
                p,
            });
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn estimate_is_mean_se_and_a_90_percent_t_interval() {
        // mean 0.5, sd 0.29439203, se = sd/2, t(0.95, 3) = 2.35336343:
        // half-width 0.34640572.
        let e = Estimate::of(&[0.2, 0.5, f64::NAN, 0.9, 0.4], LEVEL);
        assert_eq!(e.n, 4);
        assert!(close(e.mean, 0.5, 1e-15));
        assert!(close(e.sd, 0.294_392_028_877_595, 1e-12));
        assert!(close(e.se, 0.147_196_014_438_797, 1e-12));
        assert!(close(e.high - e.mean, 0.346_405_718_128_827, 1e-9), "{e:?}");
        assert!(close(e.mean - e.low, 0.346_405_718_128_827, 1e-9));
        let one = Estimate::of(&[3.0], LEVEL);
        assert_eq!(one.mean, 3.0);
        assert!(one.se.is_nan() && one.low.is_nan());
    }

    #[test]
    fn paired_t_test_worked_example() {
        // Differences 2, 1, 3, 0: mean 1.5, sd √(5/3) = 1.29099, se 0.645497,
        // t = 2.323790, df 3; P(T ≥ t) = 0.0513640 (SciPy's ttest_rel with
        // alternative="greater" gives the same).
        let test = paired_t(&[5.0, 7.0, 9.0, 6.0], &[3.0, 6.0, 6.0, 6.0]);
        assert_eq!((test.n, test.df), (4, 3));
        assert!(close(test.mean_difference, 1.5, 1e-15));
        assert!(close(test.t, 2.323_790_007_724_45, 1e-12));
        assert!(
            close(test.p_greater, 0.051_364_039_429_199_5, 1e-10),
            "{test:?}"
        );
        assert!(close(test.p_less, 1.0 - 0.051_364_039_429_199_5, 1e-10));
        // A NaN (a missing session) drops its pair.
        let test = paired_t(&[8.0, 9.0, 7.0, 8.0, f64::NAN], &[4.0, 3.0, 5.0, 4.0, 1.0]);
        assert_eq!(test.n, 4);
        assert!(close(test.t, 4.898_979_485_566_356, 1e-12));
        assert!(close(test.p_greater, 0.008_138_301_729_714_277, 1e-10));
        // Identical differences: certain, and no difference: no test.
        let same = paired_t(&[2.0, 3.0], &[1.0, 2.0]);
        assert_eq!(
            (same.t, same.p_greater, same.p_less),
            (f64::INFINITY, 0.0, 1.0)
        );
        assert!(paired_t(&[1.0, 2.0], &[1.0, 2.0]).p_greater.is_nan());
    }

    /// Four participants, three conditions; worked by hand in the test below.
    fn study() -> Vec<Vec<f64>> {
        vec![
            vec![4.0, 6.0, 8.0],
            vec![3.0, 5.0, 9.0],
            vec![5.0, 7.0, 7.0],
            vec![4.0, 6.0, 8.0],
        ]
    }

    #[test]
    fn repeated_measures_anova_worked_example() {
        // Grand mean 6; condition means 4, 6, 8: SS_conditions = 4·(4 + 0 + 4)
        // = 32. Participant means 6, 17/3, 19/3, 6: SS_subjects = 3·(2/9) =
        // 2/3. SS_total = 38, so SS_error = 16/3. df 2 and 6: MS 16 and 8/9,
        // F = 18, and for d1 = 2, P(F ≥ f) = (1 + 2f/d2)^(-d2/2) = 7^-3.
        let mut rows = study();
        rows.push(vec![1.0, f64::NAN, 2.0]);
        let a = rm_anova(&rows).unwrap();
        assert_eq!((a.subjects, a.conditions), (4, 3));
        assert_eq!(a.means, vec![4.0, 6.0, 8.0]);
        assert!(close(a.ss_conditions, 32.0, 1e-12));
        assert!(close(a.ss_subjects, 2.0 / 3.0, 1e-12));
        assert!(close(a.ss_error, 16.0 / 3.0, 1e-12));
        assert_eq!((a.df_conditions, a.df_error), (2, 6));
        assert!(close(a.f, 18.0, 1e-12));
        assert!(close(a.p, 7f64.powi(-3), 1e-13), "{a:?}");
        assert!(rm_anova(&[vec![1.0, 2.0]]).is_none());
    }

    #[test]
    fn greenhouse_geisser_worked_examples() {
        // study(): deviations from the condition means (4, 6, 8) are 0, (-1,
        // -1, 1), (1, 1, -1) and 0, so the cross-product matrix is 2·M with
        // M = [[1, 1, -1], [1, 1, -1], [-1, -1, 1]]. M's row (= column) means
        // are 1/3, 1/3, -1/3 and its grand mean 1/9; double-centred, M* =
        // (4/9)·v·vᵀ with v = (1, 1, -2): rank one, the worst case. tr(M*) =
        // 24/9, Σ M*ᵢⱼ² = 576/81 = tr², so ε = tr² / (2·Σ) = 1/2 = 1/(k − 1).
        // F = 18 on (2ε, 6ε) = (1, 3) degrees of freedom is T² with T ~
        // t(3), whose CDF is 1/2 + (1/π)(u/(1 + u²) + atan u), u = t/√3:
        // at t = √18, u = √6, so p = 1 − (2/π)(√6/7 + atan √6) = 0.0246.
        let a = rm_anova(&study()).unwrap();
        assert!(close(a.gg_epsilon, 0.5, 1e-12), "{a:?}");
        let u = 6f64.sqrt();
        let p = 1.0 - 2.0 / std::f64::consts::PI * (u / 7.0 + u.atan());
        assert!(close(a.p_gg, p, 1e-10), "{} vs {p}", a.p_gg);
        assert!(a.p_gg > a.p);

        // Deviations e1, e2, e3 and (-1, -1, -1) from the means (4, 6, 8):
        // cross-products I + J (J all ones), compound symmetry. Double-
        // centred it is I − J/3: trace 2, Σ squares 3·(4/9) + 6·(1/9) = 2,
        // ε = 4 / (2·2) = 1, and the corrected p is the uncorrected one.
        let spherical = vec![
            vec![5.0, 6.0, 8.0],
            vec![4.0, 7.0, 8.0],
            vec![4.0, 6.0, 9.0],
            vec![3.0, 5.0, 7.0],
        ];
        let a = rm_anova(&spherical).unwrap();
        assert!(close(a.gg_epsilon, 1.0, 1e-12), "{a:?}");
        assert!(close(a.p_gg, a.p, 1e-12));

        // Two conditions: one difference, so sphericity holds by definition.
        let a = rm_anova(&[vec![1.0, 3.0], vec![2.0, 2.5], vec![4.0, 7.0]]).unwrap();
        assert!(close(a.gg_epsilon, 1.0, 1e-12), "{a:?}");
        assert!(close(a.p_gg, a.p, 1e-12));

        // Any data: within the bounds.
        let mut x = 7u64;
        let mut next = || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) as f64 / (1u64 << 31) as f64
        };
        for k in 3..7 {
            let rows: Vec<Vec<f64>> = (0..k + 2)
                .map(|_| (0..k).map(|j| j as f64 + 3.0 * next()).collect())
                .collect();
            let e = rm_anova(&rows).unwrap().gg_epsilon;
            let low = 1.0 / (k as f64 - 1.0);
            assert!((low..=1.0).contains(&e), "k {k}: {e}");
        }
    }

    #[test]
    fn tukey_hsd_worked_example() {
        // √(MS_error / n) = √(2/9): differences 2 and 4 give q = 4.2426 and
        // 8.4853. With k = 3, df = 6 the 5% critical q is 4.339 (tables), so
        // the first pairs are not significant at 5% and the extreme one is:
        // P(Q ≥ q) = 0.0543979 and 0.0023370 (SciPy's studentized_range.sf).
        let a = rm_anova(&study()).unwrap();
        let pairs = tukey_hsd(&a);
        assert_eq!(
            pairs.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(),
            [(0, 1), (0, 2), (1, 2)]
        );
        assert!(close(pairs[0].difference, -2.0, 1e-12));
        assert!(close(pairs[0].q, 4.242_640_687_119_285, 1e-9));
        assert!(close(pairs[1].q, 8.485_281_374_238_57, 1e-9));
        assert!(
            close(pairs[0].p, 0.054_397_896_298_897_46, 1e-7),
            "{pairs:?}"
        );
        assert!(close(pairs[2].p, 0.054_397_896_298_897_46, 1e-7));
        assert!(
            close(pairs[1].p, 0.002_337_008_260_707_263, 1e-7),
            "{pairs:?}"
        );
    }
}
