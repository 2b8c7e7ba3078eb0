//! The few statistics `vibeloop eval` reports: the Wilson score interval of a resolve rate,
//! McNemar's exact test for two runs over the same tasks, and the median. Pure functions over
//! numbers; nothing here knows what a task is.

/// The normal quantile of a two-sided 95 % interval.
pub const Z95: f64 = 1.96;

/// The Wilson score interval of `successes` out of `n` at normal quantile `z` ([`Z95`] for
/// 95 %), as `(low, high)` within `[0, 1]`. With no trials nothing is known: `(0, 1)`.
pub fn wilson(successes: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = (successes as f64 / n).min(1.0);
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// The two-sided exact McNemar p-value for the discordant pairs of two runs over the same
/// tasks: `b` tasks only the first resolved, `c` only the second. Under the null hypothesis
/// each discordant task goes either way with probability ½, so
/// p = min(1, 2 · P(X ≤ min(b, c))) for X ~ Binomial(b + c, ½); 1 when there is no discordant
/// task. Summed in log space, so large counts neither overflow nor turn into NaN.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let m = b + c;
    if m == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // ln(C(m, i) / 2^m) for i = 0..=k, each from the one before.
    let mut logs = Vec::with_capacity(k as usize + 1);
    let mut l = -(m as f64) * std::f64::consts::LN_2;
    logs.push(l);
    for i in 1..=k {
        l += ((m - i + 1) as f64).ln() - (i as f64).ln();
        logs.push(l);
    }
    // k ≤ m / 2, so the terms grow with i: the last is the largest.
    let top = l;
    let sum: f64 = logs.iter().map(|x| (x - top).exp()).sum();
    let tail = top + sum.ln();
    (2.0 * tail.exp()).min(1.0)
}

/// The median of `xs` (the mean of the middle two for an even count); `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn wilson_matches_known_intervals() {
        let (lo, hi) = wilson(8, 10, Z95);
        assert!(
            close(lo, 0.490, 0.001) && close(hi, 0.943, 0.001),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(0, 10, Z95);
        assert!(
            close(lo, 0.0, 1e-12) && close(hi, 0.278, 0.001),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(10, 10, Z95);
        assert!(
            close(lo, 0.722, 0.001) && close(hi, 1.0, 1e-12),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(7, 12, Z95);
        assert!(
            close(lo, 0.320, 0.001) && close(hi, 0.807, 0.001),
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0, Z95), (0.0, 1.0));
    }

    #[test]
    fn mcnemar_exact_matches_the_binomial_tail() {
        assert!(close(mcnemar_exact(0, 5), 0.0625, 1e-12));
        assert!(close(mcnemar_exact(5, 0), 0.0625, 1e-12));
        assert!(close(mcnemar_exact(1, 6), 0.125, 1e-12));
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 1), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // 2 · (1 + 10 + 45) / 1024.
        assert!(close(mcnemar_exact(2, 8), 0.109375, 1e-12));
    }

    #[test]
    fn mcnemar_exact_is_stable_for_large_counts() {
        // 2 · P(X ≤ 450) for X ~ Binomial(1000, ½).
        let p = mcnemar_exact(450, 550);
        assert!(close(p, 0.001_730_536, 1e-9), "{p}");
        assert_eq!(mcnemar_exact(5000, 5000), 1.0);
        let tiny = mcnemar_exact(0, 3000);
        assert!(tiny.is_finite() && (0.0..1e-300).contains(&tiny), "{tiny}");
        let p = mcnemar_exact(4900, 5100);
        assert!(p.is_finite() && p > 0.0 && p < 1.0, "{p}");
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
