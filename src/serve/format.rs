//! How the status pages write counts and values for people: takes numbers,
//! gives short strings (`3 values`, `301.5`). Shared by the pages
//! ([`super::pages`], [`super::explore`]) and their charts
//! ([`super::chart`]), which must not import each other both ways.

/// `1 watch`, `2 watches`.
pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A formatted decimal without trailing zeros (or point), and `-0` as `0`.
pub(super) fn trimmed(s: &str) -> String {
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    };
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// A value for people: about 6 significant digits, no trailing zeros.
pub(super) fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let abs = v.abs();
    if abs != 0.0 && !(1e-4..1e15).contains(&abs) {
        return format!("{v:e}");
    }
    let digits = if abs == 0.0 {
        0
    } else {
        abs.log10().floor() as i32
    };
    let decimals = usize::try_from((5 - digits).clamp(0, 6)).unwrap_or(0);
    trimmed(&format!("{v:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_for_people() {
        assert_eq!(fmt_value(301.5), "301.5");
        assert_eq!(fmt_value(300.0), "300");
        assert_eq!(fmt_value(0.1 + 0.2), "0.3");
        assert_eq!(fmt_value(-2.5), "-2.5");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(1_234_567.0), "1234567");
        assert_eq!(fmt_value(1e20), "1e20");
    }

    #[test]
    fn counts_for_people() {
        assert_eq!(plural(1, "value", "values"), "1 value");
        assert_eq!(plural(0, "value", "values"), "0 values");
        assert_eq!(plural(3, "watch", "watches"), "3 watches");
    }
}
