//! What the text tables, the plots, the flame graph and the benches share: one byte formatter and
//! one markup escaper.

const KIB: f64 = 1024.0;

/// The binary unit a byte count reads best in (below 1 KiB: bytes), as the factor that converts
/// bytes to it and its name.
pub(crate) fn byte_unit(typical: f64) -> (f64, &'static str) {
    let a = typical.abs();
    if a >= KIB * KIB * KIB {
        (1.0 / (KIB * KIB * KIB), "GiB")
    } else if a >= KIB * KIB {
        (1.0 / (KIB * KIB), "MiB")
    } else if a >= KIB {
        (1.0 / KIB, "KiB")
    } else {
        (1.0, "B")
    }
}

/// `12 B`, `1.5 KiB`, `3.2 MiB`: whole bytes, else `decimals` in the unit.
pub(crate) fn human_bytes_with(v: f64, decimals: usize) -> String {
    match byte_unit(v) {
        (_, "B") => format!("{v:.0} B"),
        (factor, unit) => format!("{:.*} {unit}", decimals, v * factor),
    }
}

/// `12 B`, `1.5 KiB`, `3.2 MiB`.
pub(crate) fn human_bytes(v: f64) -> String {
    human_bytes_with(v, 1)
}

/// Text for SVG and HTML, in elements and attributes: `&`, `<`, `>` and `"` escaped.
pub(crate) fn escape_markup(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Bytes per cycle, with a decimal below 10 B and two significant digits below 0.1 B (`0.016 B`,
/// `0.4 B`, `12 B`, `1.5 KiB`).
pub(crate) fn rate(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.1 {
        let decimals = ((1.0 - v.abs().log10().floor()) as usize).min(6);
        format!("{v:.decimals$} B")
    } else if v.abs() < 10.0 {
        format!("{v:.1} B")
    } else {
        human_bytes(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_rate_keeps_two_significant_digits() {
        assert_eq!(
            (rate(0.016_36), rate(0.05), rate(0.0), rate(0.4), rate(12.0)),
            (
                "0.016 B".to_string(),
                "0.050 B".to_string(),
                "0.0 B".to_string(),
                "0.4 B".to_string(),
                "12 B".to_string()
            )
        );
    }

    #[test]
    fn bytes_read_in_their_unit() {
        assert_eq!(human_bytes(12.0), "12 B");
        assert_eq!(human_bytes(-1536.0), "-1.5 KiB");
        assert_eq!(human_bytes(3.25 * KIB * KIB), "3.2 MiB");
        assert_eq!(human_bytes_with(5.0 * KIB * KIB * KIB, 2), "5.00 GiB");
        assert_eq!(byte_unit(100.0), (1.0, "B"));
    }

    #[test]
    fn markup_is_escaped_for_attributes_too() {
        assert_eq!(escape_markup(r#"<a href="x">&</a>"#), "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
    }
}
