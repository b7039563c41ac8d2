//! Axis ticks a person reads at a glance: round steps (1, 2 or 5 times a power of ten), in the
//! unit the labels use (bytes in B, KiB, MiB or GiB; counts in whole numbers), the axis widened to
//! the ticks around the data.

/// What an axis counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Bytes: steps in one unit (B, KiB, MiB, GiB), labels in that unit.
    Bytes,
    /// Whole things (handles, files, cycles): whole steps, whole labels.
    Count,
}

/// An axis: its range (the ticks' ends, the data inside) and its ticks, each with its label.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    /// The lower end.
    pub min: f64,
    /// The upper end.
    pub max: f64,
    /// The ticks, from `min` to `max`, with their labels.
    pub ticks: Vec<(f64, String)>,
}

const UNITS: [(f64, &str); 4] =
    [(1.0, "B"), (1024.0, "KiB"), (1024.0 * 1024.0, "MiB"), (1024.0 * 1024.0 * 1024.0, "GiB")];

/// The smallest of 1, 2 and 5 times a power of ten that is at least `x` (`x` > 0).
fn round_up_125(x: f64) -> f64 {
    let power = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * power).find(|s| *s >= x * (1.0 - 1e-9)).unwrap_or(10.0 * power)
}

/// About `target` ticks (at least two) covering `lo..=hi`.
pub(crate) fn axis(lo: f64, hi: f64, target: usize, scale: Scale) -> Axis {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo.min(hi), lo.max(hi)) } else { (0.0, 1.0) };
    let raw = ((hi - lo) / target.max(1) as f64).max(f64::MIN_POSITIVE);
    let (mut unit, mut name) = match scale {
        Scale::Count => (1.0, ""),
        // The largest unit the step is at least one of.
        Scale::Bytes => UNITS.into_iter().rev().find(|(u, _)| raw >= *u).unwrap_or(UNITS[0]),
    };
    // Whole steps of the unit: a tick is never at a fraction of a byte or of a handle.
    let mut per_unit = round_up_125(raw / unit).max(1.0);
    if scale == Scale::Bytes && per_unit >= 1000.0 {
        // 1000 KiB is a step of the next unit: 1 MiB.
        if let Some(next) = UNITS.iter().find(|(u, _)| *u > unit) {
            (unit, name, per_unit) = (next.0, next.1, 1.0);
        }
    }
    let step = per_unit * unit;
    let first = (lo / step).floor();
    let mut last = (hi / step).ceil();
    if last <= first {
        last = first + 1.0;
    }
    let ticks = (first as i64..=last as i64)
        .map(|i| {
            let v = i as f64 * step;
            let n = i as f64 * step / unit;
            let label = match scale {
                Scale::Count => format!("{n:.0}"),
                Scale::Bytes => format!("{n:.0} {name}"),
            };
            (v, label)
        })
        .collect();
    Axis { min: first * step, max: last * step, ticks }
}

/// The ticks inside `lo..=hi` only, the range left as it is: for an axis whose ends are the data's
/// own (the first and the last cycle).
pub(crate) fn ticks_within(lo: f64, hi: f64, target: usize, scale: Scale) -> Vec<(f64, String)> {
    axis(lo, hi, target, scale).ticks.into_iter().filter(|(v, _)| *v >= lo - 1e-9 && *v <= hi + 1e-9).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(a: &Axis) -> Vec<&str> {
        a.ticks.iter().map(|(_, l)| l.as_str()).collect()
    }

    #[test]
    fn byte_ticks_are_round_in_their_unit() {
        // The plot of docs/check-plot.png: -82 KiB to 820 KiB had ticks at -82.0, 368.9, 819.8 KiB.
        let a = axis(-82.0 * 1024.0, 819.8 * 1024.0, 5, Scale::Bytes);
        assert_eq!(labels(&a), ["-200 KiB", "0 KiB", "200 KiB", "400 KiB", "600 KiB", "800 KiB", "1000 KiB"]);
        assert_eq!((a.min, a.max), (-200.0 * 1024.0, 1000.0 * 1024.0));
        let a = axis(0.0, 3.3 * 1024.0 * 1024.0, 4, Scale::Bytes);
        assert_eq!(labels(&a), ["0 MiB", "1 MiB", "2 MiB", "3 MiB", "4 MiB"]);
        let a = axis(10.0, 95.0, 4, Scale::Bytes);
        assert_eq!(labels(&a), ["0 B", "50 B", "100 B"]);
    }

    #[test]
    fn count_ticks_are_whole_numbers() {
        // Handle counts of 0 or 1 had ticks at -1.1, -0.6, 0.6, 1.1.
        let a = axis(0.0, 1.0, 4, Scale::Count);
        assert_eq!(labels(&a), ["0", "1"]);
        let a = axis(0.0, 0.0, 4, Scale::Count);
        assert_eq!(labels(&a), ["0", "1"], "a flat line still gets an axis");
        let a = axis(3.0, 47.0, 5, Scale::Count);
        assert_eq!(labels(&a), ["0", "10", "20", "30", "40", "50"]);
        // Cycles 1 to 149: ticks inside, at round cycles, not at 149.
        let t: Vec<String> = ticks_within(1.0, 149.0, 5, Scale::Count).into_iter().map(|(_, l)| l).collect();
        assert_eq!(t, ["50", "100"]);
        let t: Vec<f64> = ticks_within(0.0, 200.0, 5, Scale::Count).into_iter().map(|(v, _)| v).collect();
        assert_eq!(t, [0.0, 50.0, 100.0, 150.0, 200.0]);
    }

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        for (x, step) in [(0.3, 0.5), (1.0, 1.0), (1.01, 2.0), (2.5, 5.0), (7.0, 10.0), (130.0, 200.0)] {
            assert!((round_up_125(x) - step).abs() < 1e-9, "{x}: {}", round_up_125(x));
        }
        let bad = axis(f64::NAN, 1.0, 4, Scale::Count);
        assert_eq!(labels(&bad), ["0", "1"], "no data gives a unit axis, not a panic");
    }
}
