//! CronJob schedules as upstream reads them (robfig/cron's standard parser): five fields, the
//! `@yearly`…`@hourly` descriptors and `@every <duration>`, parsed by the `croner` crate.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// A parsed schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A cron expression.
    Cron(Box<Cron>),
    /// `@every <duration>`: a fixed interval, in seconds.
    Every(u64),
}

/// Parses a schedule; the error is the message upstream's validation shows.
pub fn parse(schedule: &str) -> Result<Schedule, String> {
    let text = schedule.trim();
    if let Some(rest) = text.strip_prefix("@every ") {
        return parse_go_duration(rest.trim())
            .filter(|s| *s > 0)
            .map(Schedule::Every)
            .ok_or_else(|| format!("failed to parse duration {text}"));
    }
    if !text.starts_with('@') {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(text)
        .map(|c| Schedule::Cron(Box::new(c)))
        .map_err(|e| e.to_string())
}

/// A Go duration (`1h30m`, `90s`, `1.5h`) in whole seconds.
fn parse_go_duration(text: &str) -> Option<u64> {
    let mut total = 0f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    Some(total as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_upstream_accepts() {
        for ok in [
            "*/1 * * * *",
            "0 0 * * 0",
            "@hourly",
            "@daily",
            "@every 1h30m",
            "0 9 * JAN MON-FRI",
        ] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_what_upstream_refuses() {
        assert_eq!(
            parse("bad").expect_err("five fields"),
            "expected exactly 5 fields, found 1: [bad]"
        );
        assert!(parse("0 0 * * * *").is_err(), "seconds are not standard");
        assert!(parse("61 * * * *").is_err());
        assert!(parse("@every nonsense").is_err());
    }
}
