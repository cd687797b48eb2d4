//! Resource arithmetic as the scheduler sees it (upstream's framework.Resource): quantities parsed
//! to integers (cpu in millicores, everything else in units, fractions rounded up), a pod's
//! effective request (containers summed, restartable init containers added, the largest init
//! container step, overhead) and a node's allocatable.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Upstream's DefaultMilliCPURequest / DefaultMemoryRequest for scoring containers without
/// requests.
pub const DEFAULT_MILLI_CPU: i64 = 100;
pub const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

/// A quantity string in nano-units (None when it does not parse).
pub fn parse_nanos(s: &str) -> Option<i128> {
    let s = s.trim();
    let (sign, rest) = match s.as_bytes().first()? {
        b'-' => (-1, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (num, suffix) = rest.split_at(end);
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    let mantissa: i128 = digits.parse().ok()?;
    let (exp10, binary): (i64, i128) = match suffix {
        "" => (0, 1),
        "n" => (-9, 1),
        "u" => (-6, 1),
        "m" => (-3, 1),
        "k" => (3, 1),
        "M" => (6, 1),
        "G" => (9, 1),
        "T" => (12, 1),
        "P" => (15, 1),
        "E" => (18, 1),
        "Ki" => (0, 1 << 10),
        "Mi" => (0, 1 << 20),
        "Gi" => (0, 1 << 30),
        "Ti" => (0, 1 << 40),
        "Pi" => (0, 1 << 50),
        "Ei" => (0, 1 << 60),
        e if e.starts_with(['e', 'E']) => (e[1..].parse().ok()?, 1),
        _ => return None,
    };
    let exp = exp10 + 9 - i64::try_from(frac_part.len()).ok()?;
    let v = mantissa.checked_mul(binary)?;
    let nanos = if exp >= 0 {
        v.checked_mul(10i128.checked_pow(u32::try_from(exp).ok()?)?)?
    } else {
        let d = 10i128.checked_pow(u32::try_from(-exp).ok()?)?;
        (v + d - 1) / d
    };
    Some(sign * nanos)
}

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// Millicores (rounded up), as upstream's MilliValue.
pub fn milli_value(q: &Quantity) -> i64 {
    parse_nanos(&q.0).map_or(0, |n| clamp((n + 999_999).div_euclid(1_000_000)))
}

/// Units (rounded up), as upstream's Value.
pub fn value(q: &Quantity) -> i64 {
    parse_nanos(&q.0).map_or(0, |n| clamp((n + 999_999_999).div_euclid(1_000_000_000)))
}

/// A vector of resources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Allowed pod count (allocatable only).
    pub pods: i64,
    /// Extended resources, hugepages and the like.
    pub scalar: BTreeMap<String, i64>,
}

impl Resources {
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Self {
        let mut r = Resources::default();
        r.add_list(list);
        r
    }

    fn slot(&mut self, name: &str) -> &mut i64 {
        match name {
            "cpu" => &mut self.milli_cpu,
            "memory" => &mut self.memory,
            "ephemeral-storage" => &mut self.ephemeral_storage,
            "pods" => &mut self.pods,
            other => self.scalar.entry(other.to_string()).or_default(),
        }
    }

    pub fn add_list(&mut self, list: &BTreeMap<String, Quantity>) {
        for (name, q) in list {
            let v = if name == "cpu" {
                milli_value(q)
            } else {
                value(q)
            };
            let slot = self.slot(name);
            *slot = slot.saturating_add(v);
        }
    }

    pub fn add(&mut self, o: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(o.milli_cpu);
        self.memory = self.memory.saturating_add(o.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_add(o.ephemeral_storage);
        self.pods = self.pods.saturating_add(o.pods);
        for (k, v) in &o.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = e.saturating_add(*v);
        }
    }

    pub fn sub(&mut self, o: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(o.milli_cpu);
        self.memory = self.memory.saturating_sub(o.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_sub(o.ephemeral_storage);
        self.pods = self.pods.saturating_sub(o.pods);
        for (k, v) in &o.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = e.saturating_sub(*v);
        }
    }

    pub fn set_max(&mut self, o: &Resources) {
        self.milli_cpu = self.milli_cpu.max(o.milli_cpu);
        self.memory = self.memory.max(o.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(o.ephemeral_storage);
        self.pods = self.pods.max(o.pods);
        for (k, v) in &o.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }

    /// Nothing requested at all (upstream skips the resource checks then).
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.values().all(|v| *v == 0)
    }
}

fn container_requests(c: &Container, non_zero: bool) -> Resources {
    let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    let mut r = requests.map(Resources::from_list).unwrap_or_default();
    if non_zero {
        if !requests.is_some_and(|l| l.contains_key("cpu")) {
            r.milli_cpu = DEFAULT_MILLI_CPU;
        }
        if !requests.is_some_and(|l| l.contains_key("memory")) {
            r.memory = DEFAULT_MEMORY;
        }
    }
    r
}

/// A pod's effective request (upstream's resourcehelper.PodRequests): app containers and
/// restartable (sidecar) init containers summed; each plain init container runs with the sidecars
/// started before it, and the largest such step counts if bigger; pod overhead on top.
/// `non_zero`: containers missing a cpu / memory request count 100m / 200Mi (for scoring).
pub fn pod_requests(spec: &PodSpec, non_zero: bool) -> Resources {
    let mut reqs = Resources::default();
    for c in &spec.containers {
        reqs.add(&container_requests(c, non_zero));
    }
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for c in spec.init_containers.iter().flatten() {
        let r = container_requests(c, non_zero);
        if c.restart_policy.as_deref() == Some("Always") {
            reqs.add(&r);
            sidecars.add(&r);
            init_max.set_max(&sidecars);
        } else {
            let mut step = r;
            step.add(&sidecars);
            init_max.set_max(&step);
        }
    }
    reqs.set_max(&init_max);
    if let Some(o) = &spec.overhead {
        reqs.add_list(o);
    }
    reqs.scalar.retain(|_, v| *v != 0);
    reqs
}

/// A node's allocatable (pods included).
pub fn allocatable(node: &Node) -> Resources {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .map(Resources::from_list)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ResourceRequirements;

    pub fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    fn c(pairs: &[(&str, &str)]) -> Container {
        Container {
            name: "c".into(),
            resources: (!pairs.is_empty()).then(|| ResourceRequirements {
                requests: Some(list(pairs)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn quantities_parse_like_upstream() {
        let q = |s: &str| Quantity(s.into());
        for (s, milli, val) in [
            ("1", 1000, 1),
            ("100m", 100, 1),
            ("1.5", 1500, 2),
            ("0.1", 100, 1),
            ("1Ki", 1_024_000, 1024),
            ("200Mi", 209_715_200_000, 209_715_200),
            ("1k", 1_000_000, 1000),
            ("1e3", 1_000_000, 1000),
            ("1E", i64::MAX, 1_000_000_000_000_000_000),
            ("1n", 1, 1),
            ("0", 0, 0),
        ] {
            assert_eq!(milli_value(&q(s)), milli, "{s}");
            assert_eq!(value(&q(s)), val, "{s}");
        }
        assert_eq!(parse_nanos("abc"), None);
        assert_eq!(parse_nanos(""), None);
        assert_eq!(parse_nanos("1Zi"), None);
    }

    #[test]
    fn pod_requests_follow_upstreams_rules() {
        // Init containers larger than the app containers win; they run one at a time.
        let spec = PodSpec {
            containers: vec![
                c(&[("cpu", "2"), ("memory", "1G")]),
                c(&[("cpu", "1"), ("memory", "1G")]),
            ],
            init_containers: Some(vec![
                c(&[("cpu", "2"), ("memory", "1G")]),
                c(&[("cpu", "2"), ("memory", "3G")]),
            ]),
            ..Default::default()
        };
        let r = pod_requests(&spec, false);
        assert_eq!((r.milli_cpu, r.memory), (3000, 3_000_000_000));
        let spec = PodSpec {
            containers: vec![c(&[("cpu", "1")])],
            init_containers: Some(vec![c(&[("cpu", "4")])]),
            overhead: Some(list(&[("cpu", "250m"), ("memory", "120Mi")])),
            ..Default::default()
        };
        let r = pod_requests(&spec, false);
        assert_eq!((r.milli_cpu, r.memory), (4250, 120 * 1024 * 1024));
        // Sidecars: they add to the app containers and run beside later init containers.
        let mut sidecar = c(&[("cpu", "1")]);
        sidecar.restart_policy = Some("Always".into());
        let spec = PodSpec {
            containers: vec![c(&[("cpu", "1")])],
            init_containers: Some(vec![sidecar, c(&[("cpu", "3")])]),
            ..Default::default()
        };
        assert_eq!(pod_requests(&spec, false).milli_cpu, 4000);
        // Zero requests: nothing for fit, the defaults for scoring; an explicit 0 stays 0.
        let spec = PodSpec {
            containers: vec![c(&[]), c(&[("cpu", "0")])],
            ..Default::default()
        };
        assert!(pod_requests(&spec, false).is_zero());
        let nz = pod_requests(&spec, true);
        assert_eq!((nz.milli_cpu, nz.memory), (100, 2 * DEFAULT_MEMORY));
        // Extended resources.
        let spec = PodSpec {
            containers: vec![c(&[("example.com/gpu", "2")])],
            ..Default::default()
        };
        assert_eq!(
            pod_requests(&spec, false).scalar.get("example.com/gpu"),
            Some(&2)
        );
    }
}
