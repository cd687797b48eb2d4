//! Address plans of simulated nodes: one `/24` pod CIDR per node carved from the cluster CIDR
//! (the first not used by another node), node InternalIPs in 172.18.0.0/16 derived from the
//! CIDR's index, and pod IPs handed out from the node's CIDR (`.1` is the node's bridge).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// An IPv4 range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub base: u32,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (ip, prefix) = s
            .trim()
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (want a.b.c.d/n)"))?;
        let ip: Ipv4Addr = ip.parse().map_err(|e| format!("{s:?}: {e}"))?;
        let prefix: u8 = prefix.parse().map_err(|e| format!("{s:?}: {e}"))?;
        if prefix > 32 {
            return Err(format!("{s:?}: prefix over 32"));
        }
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix)
        };
        Ok(Cidr {
            base: u32::from(ip) & mask,
            prefix,
        })
    }

    /// The `/24`s of this range (itself when it is narrower).
    pub fn subnet_count(&self) -> u32 {
        if self.prefix >= 24 {
            1
        } else {
            1 << (24 - self.prefix)
        }
    }

    pub fn subnet(&self, index: u32) -> Cidr {
        if self.prefix >= 24 {
            return *self;
        }
        Cidr {
            base: self.base + (index << 8),
            prefix: 24,
        }
    }

    /// The subnet's index in the cluster range, when `other` is one of its `/24`s.
    pub fn index_of(&self, other: &Cidr) -> Option<u32> {
        if self.prefix >= 24 {
            return (other == self).then_some(0);
        }
        let mask = u32::MAX << (32 - self.prefix);
        (other.prefix == 24 && other.base & mask == self.base)
            .then(|| (other.base - self.base) >> 8)
    }

    /// Host addresses pods get: `.2` up to the last before broadcast.
    pub fn pod_ip(&self, n: u32) -> Option<Ipv4Addr> {
        let size = 1u64 << (32 - self.prefix.min(32));
        let offset = u64::from(n) + 2;
        (offset < size.saturating_sub(1)).then(|| Ipv4Addr::from(self.base + offset as u32))
    }

    pub fn pod_ip_count(&self) -> u32 {
        let size = 1u64 << (32 - self.prefix.min(32));
        size.saturating_sub(3) as u32
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

/// The first subnet index not in `used`, when one is left.
pub fn first_free(cluster: &Cidr, used: &BTreeSet<u32>) -> Option<u32> {
    (0..cluster.subnet_count()).find(|i| !used.contains(i))
}

/// A node's InternalIP, from its subnet index (172.18.0.2 for the first).
pub fn node_ip(index: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(172, 18, 0, 0)) + 2 + (index & 0xffff))
}

/// Pod IPs in use on one node, handed out lowest first.
#[derive(Debug, Default)]
pub struct IpPool {
    used: BTreeSet<u32>,
}

impl IpPool {
    /// Marks an address (from a pod that already has it) as taken.
    pub fn take(&mut self, cidr: &Cidr, ip: &str) -> bool {
        let Ok(ip) = ip.parse::<Ipv4Addr>() else {
            return false;
        };
        let n = u32::from(ip).wrapping_sub(cidr.base).wrapping_sub(2);
        if n >= cidr.pod_ip_count() {
            return false;
        }
        self.used.insert(n)
    }

    pub fn allocate(&mut self, cidr: &Cidr) -> Option<Ipv4Addr> {
        let n = (0..cidr.pod_ip_count()).find(|n| !self.used.contains(n))?;
        self.used.insert(n);
        cidr.pod_ip(n)
    }

    pub fn release(&mut self, cidr: &Cidr, ip: &str) {
        if let Ok(ip) = ip.parse::<Ipv4Addr>() {
            let n = u32::from(ip).wrapping_sub(cidr.base).wrapping_sub(2);
            self.used.remove(&n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_carves_subnets() {
        let c = Cidr::parse("10.244.0.0/16").unwrap();
        assert_eq!(c.subnet_count(), 256);
        assert_eq!(c.subnet(0).to_string(), "10.244.0.0/24");
        assert_eq!(c.subnet(3).to_string(), "10.244.3.0/24");
        assert_eq!(c.index_of(&Cidr::parse("10.244.7.0/24").unwrap()), Some(7));
        assert_eq!(c.index_of(&Cidr::parse("10.245.7.0/24").unwrap()), None);
        assert_eq!(c.index_of(&Cidr::parse("10.244.0.0/23").unwrap()), None);
        // Host bits are dropped, as upstream's ParseCIDR does for the network.
        assert_eq!(Cidr::parse("10.244.1.7/16").unwrap(), c);
        for bad in ["10.244.0.0", "10.244.0.0/33", "x/8", "10.244.0/16"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        let narrow = Cidr::parse("10.1.2.0/25").unwrap();
        assert_eq!(narrow.subnet_count(), 1);
        assert_eq!(narrow.subnet(0), narrow);
    }

    #[test]
    fn first_free_skips_used_subnets() {
        let c = Cidr::parse("10.244.0.0/22").unwrap();
        let used: BTreeSet<u32> = [0, 1, 3].into();
        assert_eq!(first_free(&c, &used), Some(2));
        let full: BTreeSet<u32> = [0, 1, 2, 3].into();
        assert_eq!(first_free(&c, &full), None);
        assert_eq!(first_free(&c, &BTreeSet::new()), Some(0));
    }

    #[test]
    fn pod_ips_are_unique_and_reused_after_release() {
        let c = Cidr::parse("10.244.5.0/24").unwrap();
        let mut pool = IpPool::default();
        assert!(pool.take(&c, "10.244.5.2"));
        assert!(!pool.take(&c, "10.244.6.2"), "outside the node's range");
        assert_eq!(pool.allocate(&c).unwrap().to_string(), "10.244.5.3");
        pool.release(&c, "10.244.5.2");
        assert_eq!(pool.allocate(&c).unwrap().to_string(), "10.244.5.2");
        let mut n = 2;
        while pool.allocate(&c).is_some() {
            n += 1;
        }
        assert_eq!(n, 253, ".2 to .254");
        assert_eq!(node_ip(0).to_string(), "172.18.0.2");
        assert_eq!(node_ip(300).to_string(), "172.18.1.46");
    }
}
