//! IP address and CIDR validation with upstream's strict rules and messages (apimachinery's
//! `IsValidIP` / `IsValidCIDR`, used by fields newer than strict IP validation: IPAddress names,
//! ServiceCIDR `spec.cidrs`), and a small parsed CIDR type for range checks.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const BAD_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const BAD_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// Parses an IPv4 address the way Go's old `net.ParseIP` did: octets may carry leading zeros
/// (read as decimal). Only used to tell "leading 0s" apart from plain garbage.
fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for o in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = part.parse().ok()?;
    }
    parts.next().is_none().then(|| Ipv4Addr::from(octets))
}

/// Whether `s` is an address only a sloppy parser accepts (IPv4 octets or an IPv6 tail with
/// leading zeros).
fn sloppy_only_ip(s: &str) -> bool {
    if parse_ipv4_sloppy(s).is_some() {
        return true;
    }
    // An IPv6 address ending in a dotted IPv4 part with leading zeros.
    match s.rfind(':') {
        Some(i) if s.contains('.') => {
            parse_ipv4_sloppy(&s[i + 1..]).is_some()
                && format!("{}0.0.0.0", &s[..=i]).parse::<Ipv6Addr>().is_ok()
        }
        _ => false,
    }
}

fn is_4in6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Upstream's `IsValidIP`: the error details for `value`, empty when it is a valid IP address
/// in canonical form.
pub fn ip_errors(value: &str) -> Vec<String> {
    let ip = match value.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) if sloppy_only_ip(value) => return vec!["must not have leading 0s".into()],
        Err(_) => return vec![BAD_IP.into()],
    };
    if is_4in6(&ip) {
        return vec!["must not be an IPv4-mapped IPv6 address".into()];
    }
    let canonical = ip.to_string();
    if canonical != value {
        return vec![format!("must be in canonical form (\"{canonical}\")")];
    }
    Vec::new()
}

/// Upstream's `IsValidIPForLegacyField` with strict validation (fields older than strict IP
/// validation, such as a Service's `externalIPs`): as [`ip_errors`], but a non-canonical IPv6
/// form is accepted (it draws a warning instead).
pub fn legacy_ip_errors(value: &str) -> Vec<String> {
    let mut errs = ip_errors(value);
    errs.retain(|e| !e.starts_with("must be in canonical form"));
    errs
}

/// A subnet: its first address and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n` or `x::/n` (strict: no leading zeros), masking bits past the prefix.
    pub fn parse(value: &str) -> Option<(Cidr, IpAddr)> {
        let (ip, len) = value.split_once('/')?;
        let ip: IpAddr = ip.parse().ok()?;
        if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if len.len() > 1 && len.starts_with('0') {
            return None;
        }
        let prefix: u8 = len.parse().ok()?;
        if prefix > bits(&ip) {
            return None;
        }
        Some((
            Cidr {
                addr: mask(ip, prefix),
                prefix,
            },
            ip,
        ))
    }

    pub fn is_ipv4(&self) -> bool {
        self.addr.is_ipv4()
    }

    pub fn contains(&self, ip: &IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(*ip, self.prefix) == self.addr
    }

    /// Whether `other` lies inside this subnet (equal subnets included).
    pub fn contains_cidr(&self, other: &Cidr) -> bool {
        self.prefix <= other.prefix && self.contains(&other.addr)
    }

    /// Addresses in the subnet (saturating at `u128::MAX`).
    pub fn size(&self) -> u128 {
        let host_bits = u32::from(bits(&self.addr) - self.prefix);
        1u128.checked_shl(host_bits).unwrap_or(u128::MAX)
    }

    /// The address `offset` places past the first one (wrapping within the family).
    pub fn nth(&self, offset: u128) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a).wrapping_add(offset as u32))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a).wrapping_add(offset))),
        }
    }

    /// How far `ip` is from the first address (`ip` must be in the subnet).
    pub fn offset_of(&self, ip: &IpAddr) -> u128 {
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => u128::from(u32::from(*b).wrapping_sub(u32::from(a))),
            (IpAddr::V6(a), IpAddr::V6(b)) => u128::from(*b).wrapping_sub(u128::from(a)),
            _ => 0,
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn bits(ip: &IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

/// Whether a sloppy parser (leading zeros in the address or the prefix length) takes `value`.
fn sloppy_only_cidr(value: &str) -> bool {
    let Some((ip, len)) = value.split_once('/') else {
        return false;
    };
    let family_bits = match ip.parse::<IpAddr>() {
        Ok(ip) => u32::from(bits(&ip)),
        Err(_) if parse_ipv4_sloppy(ip).is_some() => 32,
        Err(_) if sloppy_only_ip(ip) => 128,
        Err(_) => return false,
    };
    !len.is_empty()
        && len.bytes().all(|b| b.is_ascii_digit())
        && len
            .trim_start_matches('0')
            .parse::<u32>()
            .map_or(len.bytes().all(|b| b == b'0'), |n| n <= family_bits)
}

/// Upstream's `IsValidCIDR`: the error details for `value`, empty when it is a subnet in
/// canonical form (`192.168.1.0/24`, no bits set past the prefix).
pub fn cidr_errors(value: &str) -> Vec<String> {
    let Some((cidr, ip)) = Cidr::parse(value) else {
        return if sloppy_only_cidr(value) {
            vec!["must not have leading 0s in IP or prefix length".into()]
        } else {
            vec![BAD_CIDR.into()]
        };
    };
    if is_4in6(&ip) {
        return vec!["must not have an IPv4-mapped IPv6 address".into()];
    }
    if ip != cidr.addr {
        return vec!["must not have bits set beyond the prefix length".into()];
    }
    let canonical = cidr.to_string();
    if canonical != value {
        return vec![format!("must be in canonical form (\"{canonical}\")")];
    }
    Vec::new()
}

/// Upstream's `IsValidCIDRForLegacyField` with strict validation: as [`cidr_errors`], but a
/// non-canonical IPv6 form is accepted.
pub fn legacy_cidr_errors(value: &str) -> Vec<String> {
    let mut errs = cidr_errors(value);
    errs.retain(|e| !e.starts_with("must be in canonical form"));
    errs
}

/// Upstream's `ValidateIPAddressName`: an IPAddress is named by its address in canonical form.
pub fn name_is_ip_address(name: &str, _prefix: bool) -> Vec<String> {
    ip_errors(name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ip_addresses_as_upstream() {
        // Cases from upstream's ip_test.go (IsValidIP).
        for ok in [
            "1.2.3.4",
            "0.0.0.0",
            "255.255.255.255",
            "2001:db8::1",
            "::",
            "::1",
        ] {
            assert!(ip_errors(ok).is_empty(), "{ok}");
        }
        assert_eq!(ip_errors(""), [BAD_IP]);
        assert_eq!(ip_errors("1.2.3"), [BAD_IP]);
        assert_eq!(ip_errors("1.2.3.4/32"), [BAD_IP]);
        assert_eq!(ip_errors("256.0.0.1"), [BAD_IP]);
        assert_eq!(ip_errors("010.002.003.004"), ["must not have leading 0s"]);
        assert_eq!(
            ip_errors("::ffff:1.2.3.4"),
            ["must not be an IPv4-mapped IPv6 address"]
        );
        assert_eq!(
            ip_errors("2001:DB8::1"),
            ["must be in canonical form (\"2001:db8::1\")"]
        );
        assert_eq!(
            ip_errors("2001:db8:0:0:0:0:0:1"),
            ["must be in canonical form (\"2001:db8::1\")"]
        );
    }

    #[test]
    fn cidrs_as_upstream() {
        for ok in [
            "10.96.0.0/12",
            "0.0.0.0/0",
            "1.2.3.4/32",
            "2001:db8::/64",
            "::/0",
        ] {
            assert!(cidr_errors(ok).is_empty(), "{ok}");
        }
        for bad in [
            "",
            "10.0.0.0",
            "10.0.0.0/33",
            "2001:db8::/129",
            "a/b",
            "10.0.0.0/",
        ] {
            assert_eq!(cidr_errors(bad), [BAD_CIDR], "{bad}");
        }
        assert_eq!(
            cidr_errors("010.0.0.0/8"),
            ["must not have leading 0s in IP or prefix length"]
        );
        assert_eq!(
            cidr_errors("10.0.0.0/08"),
            ["must not have leading 0s in IP or prefix length"]
        );
        assert_eq!(
            cidr_errors("10.0.0.1/24"),
            ["must not have bits set beyond the prefix length"]
        );
        assert_eq!(
            cidr_errors("::ffff:10.0.0.0/104"),
            ["must not have an IPv4-mapped IPv6 address"]
        );
        assert_eq!(
            cidr_errors("2001:DB8::/64"),
            ["must be in canonical form (\"2001:db8::/64\")"]
        );
    }

    #[test]
    fn cidr_arithmetic() {
        let (c, _) = Cidr::parse("10.96.0.0/12").unwrap();
        assert_eq!(c.size(), 1 << 20);
        assert_eq!(c.nth(1).to_string(), "10.96.0.1");
        assert!(c.contains(&"10.111.255.255".parse().unwrap()));
        assert!(!c.contains(&"10.112.0.0".parse().unwrap()));
        assert!(!c.contains(&"2001:db8::1".parse().unwrap()));
        let (inner, _) = Cidr::parse("10.100.1.0/24").unwrap();
        assert!(c.contains_cidr(&inner) && c.contains_cidr(&c) && !inner.contains_cidr(&c));
        assert_eq!(c.offset_of(&"10.96.1.0".parse().unwrap()), 256);
        let (v6, _) = Cidr::parse("fd00::/108").unwrap();
        assert_eq!(v6.size(), 1 << 20);
        assert_eq!(v6.nth(10).to_string(), "fd00::a");
        let (all, _) = Cidr::parse("::/0").unwrap();
        assert_eq!(all.size(), u128::MAX);
    }
}
