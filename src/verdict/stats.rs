//! The arithmetic the verdict rests on: quantiles, least squares, robust scales.

/// The standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The upper `alpha` quantile of Student's t with `df` degrees of freedom (`df` need not be an
/// integer), by Hill's algorithm (CACM 396, 1970): `P(T > t) = alpha`. Below 1 degree of freedom
/// it is taken at 1.
pub(crate) fn t_upper(alpha: f64, df: f64) -> f64 {
    let alpha = alpha.clamp(1e-300, 0.5);
    let n = df.max(1.0);
    if n > 1e6 {
        return -normal_quantile(alpha);
    }
    // Hill's algorithm takes the two-tailed probability.
    let p = 2.0 * alpha;
    let half_pi = std::f64::consts::FRAC_PI_2;
    if (n - 1.0).abs() < 1e-12 {
        return 1.0 / (p * half_pi).tan();
    }
    if (n - 2.0).abs() < 1e-12 {
        return (2.0 / (p * (2.0 - p)) - 2.0).sqrt();
    }
    let a = 1.0 / (n - 0.5);
    let b = 48.0 / (a * a);
    let mut c = ((20700.0 * a / b - 98.0) * a - 16.0) * a + 96.36;
    let d = ((94.5 / (b + c) - 3.0) / b + 1.0) * (a * half_pi).sqrt() * n;
    let x = d * p;
    let mut y = x.powf(2.0 / n);
    if y > 0.05 + a {
        let x = -normal_quantile(p / 2.0);
        y = x * x;
        if n < 5.0 {
            c += 0.3 * (n - 4.5) * (x + 0.6);
        }
        c += (((0.05 * d * x - 5.0) * x - 7.0) * x - 2.0) * x + b;
        y = (((((0.4 * y + 6.3) * y + 36.0) * y + 94.5) / c - y - 3.0) / b + 1.0) * x;
        y = a * y * y;
        y = y.exp_m1();
    } else {
        y = ((1.0 / (((n + 6.0) / (n * y) - 0.089 * d - 0.822) * (n + 2.0) * 3.0) + 0.5 / (n + 4.0)) * y - 1.0)
            * (n + 1.0)
            / (n + 2.0)
            + 1.0 / y;
    }
    (n * y).sqrt()
}

/// A least-squares line through points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Line {
    pub(crate) slope: f64,
    pub(crate) mean_x: f64,
    pub(crate) mean_y: f64,
    /// Sum of squared deviations of x.
    pub(crate) sxx: f64,
}

impl Line {
    /// The least-squares line, `None` with fewer than 2 points or no spread in x.
    pub(crate) fn fit(x: &[f64], y: &[f64]) -> Option<Line> {
        let n = x.len();
        if n < 2 || y.len() != n {
            return None;
        }
        let mean_x = x.iter().sum::<f64>() / n as f64;
        let mean_y = y.iter().sum::<f64>() / n as f64;
        let sxx: f64 = x.iter().map(|v| (v - mean_x).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mean_x) * (b - mean_y)).sum();
        Some(Line { slope: sxy / sxx, mean_x, mean_y, sxx })
    }

    pub(crate) fn residual(&self, x: f64, y: f64) -> f64 {
        y - self.mean_y - self.slope * (x - self.mean_x)
    }
}

/// The median of `v` (which it sorts); 0 for an empty slice.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A robust variance: the squared median absolute deviation, scaled to the variance for normal
/// data. 0 when more than half the values are equal, as in a series that is flat but for a few
/// jumps.
pub(crate) fn robust_variance(v: &[f64]) -> f64 {
    let mut w = v.to_vec();
    let m = median(&mut w);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    (1.4826 * median(&mut dev)).powi(2)
}

/// `sum_i sum_j c_i c_j |k_i - k_j|` for weights `c` at integer positions `k` (increasing), in
/// one pass: the variance of the contrast `sum c_i y_i` is `-s2/2` times this when `y` is a
/// random walk with step variance `s2` and the weights sum to zero.
pub(crate) fn lag_weighted_sum(c: &[f64], k: &[f64]) -> f64 {
    let (mut sum_c, mut sum_kc, mut total) = (0.0, 0.0, 0.0);
    for (ci, ki) in c.iter().zip(k) {
        // Pairs (j, i) with j before i: c_i c_j (k_i - k_j).
        total += ci * (ki * sum_c - sum_kc);
        sum_c += ci;
        sum_kc += ki * ci;
    }
    2.0 * total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-5);
        assert!((normal_quantile(0.995) - 2.575829).abs() < 1e-5);
        assert!(normal_quantile(0.5).abs() < 1e-9);
    }

    #[test]
    fn t_quantiles_match_reference_values() {
        // scipy.stats.t.ppf
        let cases = [
            (0.025, 10.0, 2.228138851986274),
            (0.001, 5.0, 5.893429531356009),
            (0.0001, 8.0, 6.441999821020496),
            (0.005, 2.0, 9.924843200918287),
            (0.00001, 20.0, 5.542838633160813),
            (0.000001, 3.0, 103.29946777942898),
            (0.1, 1.0, 3.0776835371752544),
            (0.01, 7.5, 2.943099323406721),
            (0.0001, 100.0, 3.861599790950091),
            (0.0005, 2.6, 16.84799697210759),
        ];
        for (alpha, df, want) in cases {
            let got = t_upper(alpha, df);
            assert!((got - want).abs() / want < 2e-3, "t({alpha}, {df}) = {got}, want {want}");
        }
    }

    #[test]
    fn lag_sums_in_one_pass() {
        let c = [0.3, -0.1, 0.5, -0.7];
        let k = [0.0f64, 1.0, 3.0, 4.0];
        let mut direct = 0.0;
        for i in 0..4 {
            for j in 0..4 {
                direct += c[i] * c[j] * (k[i] - k[j]).abs();
            }
        }
        assert!((lag_weighted_sum(&c, &k) - direct).abs() < 1e-12);
    }

    #[test]
    fn robust_variance_ignores_rare_jumps() {
        let mut v = vec![0.0; 40];
        v[7] = 32768.0;
        assert_eq!(robust_variance(&v), 0.0);
        let w: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 1000) as f64).collect();
        assert!(robust_variance(&w) > 0.0);
    }
}
