//! The distributions a study's report needs: Student's t (intervals and
//! one-sided p-values), Fisher's F (ANOVA) and the studentized range (Tukey's
//! HSD), on the regularised incomplete gamma and beta functions.
//!
//! Everything is computed from the definitions with standard numerics (Lanczos'
//! log-gamma, Lentz's continued fractions, Gauss-Legendre quadrature), to about
//! 1e-10 or better where the report reads them; the unit tests compare with
//! published table values.

use std::f64::consts::{PI, SQRT_2};
use std::sync::OnceLock;

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine terms; relative error near 1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the series where it is accurate.
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised lower incomplete gamma function `P(a, x)`.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else if x < a + 1.0 {
        gamma_series(a, x)
    } else {
        1.0 - gamma_continued_fraction(a, x)
    }
}

/// The regularised upper incomplete gamma function `Q(a, x) = 1 - P(a, x)`,
/// accurate in its own right in the upper tail.
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        1.0
    } else if x < a + 1.0 {
        1.0 - gamma_series(a, x)
    } else {
        gamma_continued_fraction(a, x)
    }
}

fn gamma_series(a: f64, x: f64) -> f64 {
    let mut term = 1.0 / a;
    let mut sum = term;
    let mut n = a;
    for _ in 0..1000 {
        n += 1.0;
        term *= x / n;
        sum += term;
        if term.abs() < sum.abs() * 1e-17 {
            break;
        }
    }
    sum * (-x + a * x.ln() - ln_gamma(a)).exp()
}

/// Lentz's floor: a zero denominator of a continued fraction is replaced by
/// this, so that its ratios stay finite.
const TINY: f64 = 1e-300;

/// `v`, or [`TINY`] where `v` is (nearly) zero.
fn floored(v: f64) -> f64 {
    if v.abs() < TINY { TINY } else { v }
}

/// One term `a / (b + ...)` of a continued fraction by Lentz's method: updates
/// the ratios `c` and `d` and returns the factor `d·c` that multiplies the
/// value so far (1 once it has converged).
fn lentz_step(a: f64, b: f64, c: &mut f64, d: &mut f64) -> f64 {
    *d = 1.0 / floored(b + a * *d);
    *c = floored(b + a / *c);
    *d * *c
}

/// `Q(a, x)` by Lentz's method on Legendre's continued fraction.
fn gamma_continued_fraction(a: f64, x: f64) -> f64 {
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..1000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        let delta = lentz_step(an, b, &mut c, &mut d);
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x + a * x.ln() - ln_gamma(a)).exp() * h
}

/// The regularised incomplete beta function `I_x(a, b)`.
pub fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast only on this side of the mean.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of `I_x(a, b)` (Lentz's method): its terms come
/// in pairs, an even and an odd one, both with denominators 1.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / floored(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        h *= lentz_step(even, 1.0, &mut c, &mut d);
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        let delta = lentz_step(odd, 1.0, &mut c, &mut d);
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The standard normal CDF `Φ(z)`, accurate in both tails.
pub fn normal_cdf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    // Φ(z) = erfc(-z/√2)/2, with erfc(y) = Q(1/2, y²) for y ≥ 0.
    let y = z / SQRT_2;
    if z < 0.0 {
        0.5 * gamma_q(0.5, y * y)
    } else {
        1.0 - 0.5 * gamma_q(0.5, y * y)
    }
}

/// The standard normal density.
pub fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// `P(T > t)` for Student's t with `df` degrees of freedom (`df > 0`).
pub fn t_sf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 0.0 } else { 1.0 };
    }
    let tail = 0.5 * beta_inc(0.5 * df, 0.5, df / (df + t * t));
    if t > 0.0 { tail } else { 1.0 - tail }
}

/// `P(T ≤ t)` for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    t_sf(-t, df)
}

/// The `p` quantile of Student's t with `df` degrees of freedom (bisection on
/// [`t_cdf`] to the last bits of the float).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let mut hi = 1.0;
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `P(F > f)` for Fisher's F with `(d1, d2)` degrees of freedom.
pub fn f_sf(f: f64, d1: f64, d2: f64) -> f64 {
    if f.is_nan() || !(d1 > 0.0 && d2 > 0.0) {
        return f64::NAN;
    }
    if f <= 0.0 {
        return 1.0;
    }
    if f.is_infinite() {
        return 0.0;
    }
    beta_inc(0.5 * d2, 0.5 * d1, d2 / (d2 + d1 * f))
}

/// Nodes and weights of the `n`-point Gauss-Legendre rule on [-1, 1], by
/// Newton's method on the Legendre polynomial from Chebyshev guesses.
fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut nodes = vec![0.0; n];
    let mut weights = vec![0.0; n];
    for i in 0..n.div_ceil(2) {
        let mut x = (PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        let mut derivative = 0.0;
        for _ in 0..100 {
            // P_n(x) and P_{n-1}(x) by the three-term recurrence.
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=n {
                let k = k as f64;
                let p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            let (pn, pn1) = if n == 1 { (x, 1.0) } else { (p1, p0) };
            derivative = n as f64 * (x * pn - pn1) / (x * x - 1.0);
            let step = pn / derivative;
            x -= step;
            if step.abs() < 1e-16 {
                break;
            }
        }
        let w = 2.0 / ((1.0 - x * x) * derivative * derivative);
        nodes[i] = -x;
        nodes[n - 1 - i] = x;
        weights[i] = w;
        weights[n - 1 - i] = w;
    }
    (nodes, weights)
}

/// The 20-point rule, computed once.
fn rule() -> &'static (Vec<f64>, Vec<f64>) {
    static RULE: OnceLock<(Vec<f64>, Vec<f64>)> = OnceLock::new();
    RULE.get_or_init(|| gauss_legendre(20))
}

/// `∫ f` over `[a, b]` by the 20-point rule on `panels` equal panels.
fn integrate(a: f64, b: f64, panels: usize, f: impl Fn(f64) -> f64) -> f64 {
    let (nodes, weights) = rule();
    let width = (b - a) / panels as f64;
    let mut total = 0.0;
    for p in 0..panels {
        let mid = a + (p as f64 + 0.5) * width;
        let half = 0.5 * width;
        let mut sum = 0.0;
        for (x, w) in nodes.iter().zip(weights) {
            sum += w * f(mid + half * x);
        }
        total += sum * half;
    }
    total
}

/// `P(R ≤ w)` for the range `R` of `k` independent standard normal variables:
/// `k ∫ φ(z) (Φ(z) − Φ(z − w))^(k−1) dz`.
pub fn normal_range_cdf(w: f64, k: u32) -> f64 {
    if w <= 0.0 {
        return 0.0;
    }
    if w.is_infinite() {
        return 1.0;
    }
    // The largest of the k lies in [-9, 9 + w] but for < 1e-18 of the mass.
    let k_f = f64::from(k);
    let value = integrate(-9.0, 9.0, 24, |z| {
        normal_pdf(z) * (normal_cdf(z) - normal_cdf(z - w)).powf(k_f - 1.0)
    }) * k_f;
    value.clamp(0.0, 1.0)
}

/// `P(Q ≤ q)` for the studentized range of `k` means with `df` error degrees
/// of freedom (Tukey's HSD): the normal range at `q·s` averaged over
/// `s = sqrt(χ²_df / df)`.
pub fn studentized_range_cdf(q: f64, k: u32, df: f64) -> f64 {
    if q.is_nan() || k < 2 || df.is_nan() || df < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        return 0.0;
    }
    if q.is_infinite() {
        return 1.0;
    }
    if df > 1e7 {
        return normal_range_cdf(q, k);
    }
    // The density of s: df^(df/2) s^(df-1) e^(-df s²/2) / (Γ(df/2) 2^(df/2-1)),
    // all but 1e-20 of it within 10/√df of 1 (and above 0).
    let ln_norm = 0.5 * df * df.ln() - ln_gamma(0.5 * df) - (0.5 * df - 1.0) * 2f64.ln();
    let spread = 10.0 / df.sqrt();
    let (lo, hi) = ((1.0 - spread).max(0.0), 1.0 + spread);
    let density = |s: f64| {
        if s <= 0.0 {
            return 0.0;
        }
        (ln_norm + (df - 1.0) * s.ln() - 0.5 * df * s * s).exp()
    };
    let value = integrate(lo, hi, 48, |s| density(s) * normal_range_cdf(q * s, k));
    value.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn log_gamma_of_integers_and_halves() {
        assert!(close(ln_gamma(1.0), 0.0, 1e-14));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-13));
        assert!(close(ln_gamma(0.5), PI.sqrt().ln(), 1e-14));
        assert!(close(
            ln_gamma(10.5),
            1_133_278.388_948_441_4f64.ln(),
            1e-12
        ));
    }

    #[test]
    fn normal_cdf_matches_tables() {
        assert!(close(normal_cdf(0.0), 0.5, 1e-15));
        assert!(close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-14));
        assert!(close(normal_cdf(-1.644_853_626_951_472_2), 0.05, 1e-14));
        // Deep tail, relative accuracy: Φ(-8) = 6.220960574271784e-16.
        assert!(close(
            normal_cdf(-8.0) / 6.220_960_574_271_74e-16,
            1.0,
            1e-10
        ));
    }

    #[test]
    fn t_distribution_matches_tables() {
        // t(0.95, df) and t(0.975, df): standard tables to 3 decimals, here to
        // more (SciPy's t.ppf).
        for (df, q95, q975) in [
            (1.0, 6.313_751_514_675_037, 12.706_204_736_174_694),
            (3.0, 2.353_363_434_801_823, 3.182_446_305_283_708),
            (6.0, 1.943_180_280_515_304, 2.446_911_851_144_979),
            (15.0, 1.753_050_355_692_572, 2.131_449_545_559_776),
            (30.0, 1.697_260_886_593_957, 2.042_272_456_301_238),
        ] {
            assert!(close(t_quantile(0.95, df), q95, 1e-9), "df {df}");
            assert!(close(t_quantile(0.975, df), q975, 1e-9), "df {df}");
            assert!(close(t_sf(q95, df), 0.05, 1e-12), "df {df}");
            assert!(close(t_cdf(-q975, df), 0.025, 1e-12), "df {df}");
        }
        // df = 1 is Cauchy: P(T > 1) = 1/4; df = 2 has a closed form:
        // P(T > t) = (1 - t/√(2 + t²))/2.
        assert!(close(t_sf(1.0, 1.0), 0.25, 1e-14));
        let t = 1.7;
        assert!(close(
            t_sf(t, 2.0),
            0.5 * (1.0 - t / (2.0 + t * t).sqrt()),
            1e-14
        ));
        assert!(close(t_quantile(0.05, 3.0), -2.353_363_434_801_823, 1e-9));
        assert!(t_quantile(0.95, 0.0).is_nan());
    }

    #[test]
    fn f_distribution_matches_tables() {
        // F(0.95; d1, d2): standard tables to 2 decimals, here to more (SciPy).
        for (d1, d2, crit) in [
            (1.0, 10.0, 4.964_602_743_730_711),
            (2.0, 6.0, 5.143_252_849_784_718),
            (3.0, 12.0, 3.490_294_819_497_605),
            (4.0, 20.0, 2.866_081_402_015_658),
        ] {
            assert!(close(f_sf(crit, d1, d2), 0.05, 1e-10), "F({d1}, {d2})");
        }
        // F(1, d) is t² with d degrees of freedom.
        assert!(close(
            f_sf(2.5 * 2.5, 1.0, 7.0),
            2.0 * t_sf(2.5, 7.0),
            1e-13
        ));
        // F(2, d2) has a closed form: P(F > f) = (1 + 2f/d2)^(-d2/2).
        assert!(close(
            f_sf(3.0, 2.0, 8.0),
            (1.0 + 6.0 / 8.0f64).powf(-4.0),
            1e-13
        ));
    }

    #[test]
    fn gauss_legendre_integrates_polynomials_exactly() {
        let (x, w) = gauss_legendre(20);
        assert!(close(w.iter().sum::<f64>(), 2.0, 1e-14));
        // ∫ x^38 over [-1, 1] = 2/39: degree 2n - 2 is still exact.
        let integral: f64 = x.iter().zip(&w).map(|(x, w)| w * x.powi(38)).sum();
        assert!(close(integral, 2.0 / 39.0, 1e-14));
    }

    #[test]
    fn normal_range_of_two_is_a_scaled_half_normal() {
        // The range of two standard normals is |Z|·√2: P(R ≤ w) = 2Φ(w/√2) − 1.
        for w in [0.3, 1.0, 2.772, 5.0] {
            let want = 2.0 * normal_cdf(w / SQRT_2) - 1.0;
            assert!(close(normal_range_cdf(w, 2), want, 1e-12), "w {w}");
        }
    }

    #[test]
    fn studentized_range_matches_tables() {
        // q(0.95; k, df): Harter's (1960) tables to 3 decimals (3.151, 4.339,
        // 3.773, 3.958, 3.977), here to more (SciPy's studentized_range.ppf).
        for (k, df, crit) in [
            (2, 10.0, 3.151_064_183_329_372),
            (3, 6.0, 4.339_195_476_520_279),
            (3, 12.0, 3.772_928_965_726_967),
            (4, 20.0, 3.958_293_560_945_385),
            (5, 60.0, 3.977_418_221_605_432),
        ] {
            let p = studentized_range_cdf(crit, k, df);
            assert!(close(p, 0.95, 2e-7), "k {k}, df {df}: {p}");
        }
        // Two means: Q = √2·|T|, so P(Q ≤ q) = 1 − 2·P(T > q/√2).
        let q = 3.0;
        let want = 1.0 - 2.0 * t_sf(q / SQRT_2, 9.0);
        assert!(close(studentized_range_cdf(q, 2, 9.0), want, 1e-9));
        assert_eq!(studentized_range_cdf(0.0, 3, 6.0), 0.0);
    }
}
