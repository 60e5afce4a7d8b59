//! When a watch runs: a cron expression in a time zone, or a fixed interval,
//! each with an optional random delay (jitter) added to every run.
//!
//! Cron expressions are [croner]'s: 5 fields, or 6 with seconds first; `L`
//! (last), `W` (nearest weekday) and `#` (nth weekday) are allowed. Daylight
//! saving time is handled as croner does, like Vixie cron: a fixed-time job
//! whose time falls in the spring-forward gap runs once, at the first valid
//! time after the gap; in the autumn overlap it runs once, at the first pass.

use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// A watch's schedule.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "the shared contract's shape; a daemon holds one per watch"
)]
pub enum Schedule {
    /// Runs when the cron expression matches, in time zone `tz`.
    Cron {
        /// The expression as written.
        expr: String,
        /// The parsed expression.
        cron: Cron,
        /// The time zone the expression's fields are read in.
        tz: chrono_tz::Tz,
        /// A random delay in `[0, jitter]` added to every run.
        jitter: Duration,
    },
    /// Runs every `every`, counted from the previous run.
    Every {
        /// The interval, at least one second.
        every: Duration,
        /// A random delay in `[0, jitter]` added to every run.
        jitter: Duration,
    },
}

/// Parses a cron expression the way watch files allow: 5 fields, or 6 with
/// seconds first; no year field. Errors are croner's message, or a field count.
pub fn parse_cron(expr: &str) -> Result<Cron, String> {
    let fields = expr.split_whitespace().count();
    if !(5..=6).contains(&fields) {
        return Err(format!(
            "a cron expression has 5 fields (minute hour day month weekday) or 6 (seconds first), this one has {fields}"
        ));
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(expr)
        .map_err(|e| format!("invalid cron expression: {e}"))
}

impl Schedule {
    /// The next run strictly after `after` (no jitter). Every: `after + every`.
    /// Cron: the next occurrence in the time zone, DST handled as croner does
    /// (gap-day runs happen, like Vixie cron). `None` when there is none
    /// (a pattern that never matches, or a time out of range).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Every { every, .. } => {
                let step = chrono::Duration::from_std(*every).ok()?;
                after.checked_add_signed(step)
            }
            Schedule::Cron { cron, tz, .. } => {
                let local = after.with_timezone(tz);
                cron.find_next_occurrence(&local, false)
                    .ok()
                    .map(|t| t.with_timezone(&Utc))
            }
        }
    }

    /// [`next_after`](Self::next_after) plus a uniform random jitter in `[0, jitter]`.
    pub fn next_with_jitter(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let next = self.next_after(after)?;
        let jitter = self.jitter();
        if jitter.is_zero() {
            return Some(next);
        }
        let max_ms = u64::try_from(jitter.as_millis()).unwrap_or(u64::MAX);
        let delay = rand::random_range(0..=max_ms);
        let delay = chrono::Duration::milliseconds(i64::try_from(delay).ok()?);
        next.checked_add_signed(delay)
    }

    /// The jitter configured for this schedule.
    pub fn jitter(&self) -> Duration {
        match self {
            Schedule::Cron { jitter, .. } | Schedule::Every { jitter, .. } => *jitter,
        }
    }
}

impl std::fmt::Display for Schedule {
    /// `cron "0 9 * * MON-FRI" in Europe/Moscow` or `every 5m`, plus `, jitter 30s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Schedule::Cron { expr, tz, .. } => write!(f, "cron \"{expr}\" in {tz}")?,
            Schedule::Every { every, .. } => {
                write!(f, "every {}", humantime::format_duration(*every))?
            }
        }
        let jitter = self.jitter();
        if !jitter.is_zero() {
            write!(f, ", jitter {}", humantime::format_duration(jitter))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use chrono_tz::Europe::Berlin;

    fn cron(expr: &str, tz: chrono_tz::Tz) -> Schedule {
        Schedule::Cron {
            expr: expr.into(),
            cron: parse_cron(expr).unwrap(),
            tz,
            jitter: Duration::ZERO,
        }
    }

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    /// The runs after `from`, as local Berlin times.
    fn runs(s: &Schedule, from: DateTime<Utc>, n: usize) -> Vec<String> {
        let mut t = from;
        let mut out = Vec::new();
        for _ in 0..n {
            t = s.next_after(t).unwrap();
            out.push(t.with_timezone(&Berlin).to_rfc3339());
        }
        out
    }

    #[test]
    fn spring_gap_runs_once_right_after_the_gap() {
        // 2026-03-29: Berlin jumps from 02:00 CET to 03:00 CEST; 02:30 does not exist.
        let s = cron("30 2 * * *", Berlin);
        assert_eq!(
            runs(&s, utc(2026, 3, 27, 12, 0, 0), 3),
            [
                "2026-03-28T02:30:00+01:00",
                "2026-03-29T03:00:00+02:00",
                "2026-03-30T02:30:00+02:00",
            ]
        );
    }

    #[test]
    fn autumn_overlap_runs_once() {
        // 2026-10-25: Berlin falls back from 03:00 CEST to 02:00 CET; 02:30 happens twice.
        let s = cron("30 2 * * *", Berlin);
        assert_eq!(
            runs(&s, utc(2026, 10, 23, 12, 0, 0), 3),
            [
                "2026-10-24T02:30:00+02:00",
                "2026-10-25T02:30:00+02:00",
                "2026-10-26T02:30:00+01:00",
            ]
        );
    }

    #[test]
    fn last_day_nearest_weekday_and_nth_weekday() {
        let s = cron("0 12 L * *", chrono_tz::UTC);
        assert_eq!(
            s.next_after(utc(2026, 2, 3, 0, 0, 0)),
            Some(utc(2026, 2, 28, 12, 0, 0))
        );
        // The weekday nearest the 15th of August 2026 (a Saturday) is Friday the 14th.
        let s = cron("0 9 15W * *", chrono_tz::UTC);
        assert_eq!(
            s.next_after(utc(2026, 8, 1, 0, 0, 0)),
            Some(utc(2026, 8, 14, 9, 0, 0))
        );
        // The second Tuesday of March 2026 is the 10th.
        let s = cron("0 8 * * TUE#2", chrono_tz::UTC);
        assert_eq!(
            s.next_after(utc(2026, 3, 1, 0, 0, 0)),
            Some(utc(2026, 3, 10, 8, 0, 0))
        );
        // The last Friday of January 2026 is the 30th.
        let s = cron("0 17 * * FRIL", chrono_tz::UTC);
        assert_eq!(
            s.next_after(utc(2026, 1, 1, 0, 0, 0)),
            Some(utc(2026, 1, 30, 17, 0, 0))
        );
    }

    #[test]
    fn seconds_field_and_time_zone() {
        let s = cron("*/30 * * * * *", chrono_tz::Europe::Moscow);
        assert_eq!(
            s.next_after(utc(2026, 1, 1, 0, 0, 0)),
            Some(utc(2026, 1, 1, 0, 0, 30))
        );
        assert_eq!(
            s.next_after(utc(2026, 1, 1, 0, 0, 29)),
            Some(utc(2026, 1, 1, 0, 0, 30))
        );
        // 09:00 in Moscow (UTC+3) is 06:00 UTC; strictly after: not the same instant.
        let s = cron("0 9 * * MON-FRI", chrono_tz::Europe::Moscow);
        assert_eq!(
            s.next_after(utc(2026, 1, 5, 6, 0, 0)),
            Some(utc(2026, 1, 6, 6, 0, 0))
        );
    }

    #[test]
    fn field_counts() {
        assert!(parse_cron("0 9 * * *").is_ok());
        assert!(parse_cron("0 0 9 * * *").is_ok());
        let e = parse_cron("0 0 9 * * * 2030").unwrap_err();
        assert!(e.contains("this one has 7"), "{e}");
        assert!(parse_cron("0 9 * *").is_err());
        assert!(parse_cron("0 25 * * *").is_err());
        assert!(parse_cron("0 9 * * XYZ").is_err());
    }

    #[test]
    fn every_adds_the_interval() {
        let s = Schedule::Every {
            every: Duration::from_secs(90),
            jitter: Duration::ZERO,
        };
        assert_eq!(
            s.next_after(utc(2026, 1, 1, 0, 0, 0)),
            Some(utc(2026, 1, 1, 0, 1, 30))
        );
        assert_eq!(s.to_string(), "every 1m 30s");
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let s = Schedule::Every {
            every: Duration::from_secs(10),
            jitter: Duration::from_secs(5),
        };
        let from = utc(2026, 1, 1, 0, 0, 0);
        let base = utc(2026, 1, 1, 0, 0, 10);
        let mut seen_late = false;
        for _ in 0..500 {
            let t = s.next_with_jitter(from).unwrap();
            assert!(t >= base && t <= base + chrono::Duration::seconds(5), "{t}");
            seen_late |= t > base + chrono::Duration::seconds(2);
        }
        assert!(seen_late, "jitter never went past 2s in 500 draws");
        let s = cron("0 * * * *", chrono_tz::UTC);
        assert_eq!(s.next_with_jitter(from), Some(utc(2026, 1, 1, 1, 0, 0)));
    }
}
