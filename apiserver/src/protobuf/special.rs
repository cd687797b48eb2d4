//! JSON forms of Kubernetes' special types: RFC 3339 times and Go duration strings.

use super::ProtobufError;

/// Days since 1970-01-01 -> (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `seconds` (Unix time) as RFC 3339 in UTC, with `micros` as six fraction digits if given:
/// Go's `time.RFC3339` (meta.v1.Time) and `RFC3339Micro` (meta.v1.MicroTime) layouts.
pub(crate) fn format_time(seconds: i64, micros: Option<u32>) -> Result<String, ProtobufError> {
    let (y, mo, d) = civil_from_days(seconds.div_euclid(86_400));
    if !(0..=9999).contains(&y) {
        return Err(ProtobufError::Malformed(format!(
            "timestamp {seconds} out of range"
        )));
    }
    let s = seconds.rem_euclid(86_400);
    let (h, mi, sec) = (s / 3600, s / 60 % 60, s % 60);
    Ok(match micros {
        Some(us) => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{us:06}Z"),
        None => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}Z"),
    })
}

/// An RFC 3339 timestamp -> (Unix seconds, nanoseconds).
pub(crate) fn parse_time(s: &str) -> Result<(i64, i32), String> {
    let ts: jiff::Timestamp = s.parse().map_err(|e| format!("invalid time {s:?}: {e}"))?;
    Ok((ts.as_second(), ts.subsec_nanosecond()))
}

/// Appends the fraction of `v / 10^prec` without trailing zeros (and without the dot when it is
/// zero), returning `v / 10^prec`; Go's `fmtFrac`.
fn frac(out: &mut String, v: u64, prec: u32) -> u64 {
    let scale = 10u64.pow(prec);
    let f = v % scale;
    if f != 0 {
        let digits = format!("{f:0width$}", width = prec as usize);
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    v / scale
}

/// Nanoseconds as a Go duration string (`time.Duration.String`): `1h2m3s`, `1.5s`, `300ms`, `0s`.
pub(crate) fn format_duration(nanos: i64) -> String {
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if u == 0 {
        return "0s".into();
    }
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        let mut f = String::new();
        let whole = frac(&mut f, u, prec);
        out.push_str(&whole.to_string());
        out.push_str(&f);
        out.push_str(unit);
    } else {
        let mut f = String::new();
        let secs = frac(&mut f, u, 9);
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        if h > 0 {
            out.push_str(&format!("{h}h{m}m"));
        } else if m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&format!("{s}{f}s"));
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// A Go duration string (`time.ParseDuration`) -> nanoseconds.
pub(crate) fn parse_duration(input: &str) -> Result<i64, String> {
    let err = || format!("invalid duration {input:?}");
    let (neg, mut s) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(err());
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let int_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (int, rest) = s.split_at(int_end);
        let (fraction, rest) = match rest.strip_prefix('.') {
            Some(r) => {
                let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
                r.split_at(end)
            }
            None => ("", rest),
        };
        if int.is_empty() && fraction.is_empty() {
            return Err(err());
        }
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let (unit, rest) = rest.split_at(unit_end);
        let mult: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(format!("missing unit in duration {input:?}")),
            _ => return Err(format!("unknown unit {unit:?} in duration {input:?}")),
        };
        let whole: u128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| err())?
        };
        total = total.saturating_add(whole.saturating_mul(mult));
        // Fraction digits beyond nanosecond precision cannot change the result: keep 18.
        let fraction = &fraction[..fraction.len().min(18)];
        if !fraction.is_empty() {
            let f: u128 = fraction.parse().map_err(|_| err())?;
            total = total.saturating_add(f * mult / 10u128.pow(fraction.len() as u32));
        }
        if total > 1u128 << 63 {
            return Err(format!("duration {input:?} out of range"));
        }
        s = rest;
    }
    if neg {
        Ok((-(total as i128)) as i64)
    } else {
        i64::try_from(total).map_err(|_| format!("duration {input:?} out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_like_go() -> Result<(), ProtobufError> {
        assert_eq!(format_time(0, None)?, "1970-01-01T00:00:00Z");
        assert_eq!(format_time(1_795_254_546, None)?, "2026-11-21T09:49:06Z");
        assert_eq!(
            format_time(1_795_254_546, Some(123_456))?,
            "2026-11-21T09:49:06.123456Z"
        );
        assert_eq!(
            format_time(1_795_254_546, Some(0))?,
            "2026-11-21T09:49:06.000000Z"
        );
        assert_eq!(format_time(-1, None)?, "1969-12-31T23:59:59Z");
        assert_eq!(format_time(951_782_400, None)?, "2000-02-29T00:00:00Z");
        assert!(format_time(i64::MAX, None).is_err());
        assert!(format_time(i64::MIN, None).is_err());
        Ok(())
    }

    #[test]
    fn times_parse_rfc3339() {
        assert_eq!(parse_time("2026-11-21T09:49:06Z"), Ok((1_795_254_546, 0)));
        assert_eq!(
            parse_time("2026-11-21T10:49:06+01:00"),
            Ok((1_795_254_546, 0))
        );
        assert_eq!(
            parse_time("2026-11-21T09:49:06.123456Z"),
            Ok((1_795_254_546, 123_456_000))
        );
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("").is_err());
    }

    #[test]
    fn durations_format_like_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (7_200_000_000_000, "2h0m0s"),
            (-90_000_000_000, "-1m30s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (n, s) in cases {
            assert_eq!(format_duration(n), s);
            assert_eq!(parse_duration(s), Ok(n), "{s}");
        }
    }

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_duration("+5s"), Ok(5_000_000_000));
        assert_eq!(parse_duration(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration("1.s"), Ok(1_000_000_000));
        assert_eq!(parse_duration("2us"), Ok(2_000));
        for bad in [
            "",
            "-",
            "5",
            "1x",
            "s",
            ".s",
            "1h2",
            "9999999999999999999h",
            "1..5s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
