//! Times as semclip writes them for people and clients: a `SystemTime` in,
//! RFC 3339 in UTC out (the API, alerts, status pages), without panicking on
//! a time chrono cannot represent (a damaged row, a far-off clock).

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};

/// A time in UTC; `None` outside chrono's range.
pub fn utc(t: SystemTime) -> Option<DateTime<Utc>> {
    let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (i64::try_from(d.as_secs()).ok()?, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let secs = i64::try_from(d.as_secs()).ok()?;
            match d.subsec_nanos() {
                0 => (-secs, 0),
                n => (-secs - 1, 1_000_000_000 - n),
            }
        }
    };
    DateTime::from_timestamp(secs, nanos)
}

/// A time as RFC 3339 in UTC (`Z`) to `precision`: `2024-05-01T12:00:00Z`
/// with [`SecondsFormat::Secs`], `2024-05-01T12:00:00.250Z` with
/// [`SecondsFormat::Millis`]; `None` outside chrono's range.
pub fn rfc3339(t: SystemTime, precision: SecondsFormat) -> Option<String> {
    utc(t).map(|d| d.to_rfc3339_opts(precision, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_read_in_utc_at_either_precision_and_never_panic() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        assert_eq!(
            rfc3339(t, SecondsFormat::Secs).as_deref(),
            Some("2023-11-14T22:13:20Z")
        );
        assert_eq!(
            rfc3339(t, SecondsFormat::Millis).as_deref(),
            Some("2023-11-14T22:13:20.250Z")
        );
        assert_eq!(
            rfc3339(
                UNIX_EPOCH - Duration::from_millis(500),
                SecondsFormat::Millis
            )
            .as_deref(),
            Some("1969-12-31T23:59:59.500Z")
        );
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 2);
        assert_eq!(rfc3339(far, SecondsFormat::Secs), None);
    }
}
