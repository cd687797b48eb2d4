//! String formats of CRD schemas (`date-time`, `uuid`, `ipv4`, ...) checked as kube-openapi's
//! strfmt registry checks them; formats it does not know are accepted.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Whether `s` is valid for `format`.
pub fn valid(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => {
            jiff::Timestamp::strptime("%Y-%m-%dT%H:%M:%S%.f%:z", s).is_ok()
                || s.parse::<jiff::Timestamp>().is_ok()
        }
        "date" => jiff::civil::Date::strptime("%Y-%m-%d", s).is_ok(),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => uuid_ok(format, s),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => cidr_ok(s),
        "mac" => mac_ok(s),
        "byte" => base64_ok(s),
        "hostname" => hostname_ok(s),
        "email" => email_ok(s),
        _ => true,
    }
}

fn uuid_ok(format: &str, s: &str) -> bool {
    let Ok(u) = uuid::Uuid::parse_str(s) else {
        return false;
    };
    // strfmt accepts only the hyphenated 36-character form.
    if s.len() != 36 {
        return false;
    }
    match format {
        "uuid3" => u.get_version_num() == 3,
        "uuid4" => u.get_version_num() == 4,
        "uuid5" => u.get_version_num() == 5,
        _ => true,
    }
}

fn cidr_ok(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if ip.parse::<Ipv4Addr>().is_ok() {
        bits <= 32
    } else if ip.parse::<Ipv6Addr>().is_ok() {
        bits <= 128
    } else {
        false
    }
}

fn mac_ok(s: &str) -> bool {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    matches!(parts.len(), 6 | 8 | 20)
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn base64_ok(s: &str) -> bool {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
}

fn hostname_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b >= 0x80)
        })
}

fn email_ok(s: &str) -> bool {
    match s.rsplit_once('@') {
        Some((local, domain)) => !local.is_empty() && hostname_ok(domain) && !s.contains(' '),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn formats_as_strfmt() {
        for (format, value, ok) in [
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+02:00", true),
            ("date-time", "yesterday", false),
            ("date", "2024-01-02", true),
            ("date", "2024-13-02", false),
            ("uuid", "8e2f1b2c-5d1c-4f3a-9c1e-1a2b3c4d5e6f", true),
            ("uuid", "not-a-uuid", false),
            ("uuid4", "8e2f1b2c-5d1c-4f3a-9c1e-1a2b3c4d5e6f", true),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "01:23:45:67:89:ab", true),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad.com", false),
            ("email", "a@example.com", true),
            ("email", "nope", false),
            ("unknown-format", "anything", true),
        ] {
            assert_eq!(valid(format, value), ok, "{format} {value}");
        }
    }
}
