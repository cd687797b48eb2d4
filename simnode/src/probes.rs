//! The simulated kubelet's probes, as pure functions of a container's spec and its start time:
//! upstream's prober workers (`pkg/kubelet/prober/worker.go`) probe every `periodSeconds` from
//! the container's start, skip probes before `initialDelaySeconds`, run readiness and liveness
//! only once the startup probe has passed, and act after `failureThreshold` failures in a row.
//! Simulated probes pass, except the liveness probe of a pod annotated
//! `sim.k1s.io/liveness-fail-after-seconds: N`, which fails from N seconds after each start.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Container, Pod, Probe};

/// Seconds after each (re)start of a container from which its liveness probe fails.
pub const LIVENESS_FAIL_AFTER: &str = "sim.k1s.io/liveness-fail-after-seconds";

/// The exit code of a container killed after a failed liveness probe (SIGKILL's 128 + 9).
pub const KILLED_EXIT_CODE: i32 = 137;

/// The API server's probe defaults.
const DEFAULT_PERIOD: i64 = 10;
const DEFAULT_FAILURE_THRESHOLD: i64 = 3;

fn period(p: &Probe) -> i64 {
    match p.period_seconds {
        Some(n) if n > 0 => i64::from(n),
        _ => DEFAULT_PERIOD,
    }
}

fn initial_delay(p: &Probe) -> i64 {
    i64::from(p.initial_delay_seconds.unwrap_or(0).max(0))
}

fn failure_threshold(p: &Probe) -> i64 {
    match p.failure_threshold {
        Some(n) if n > 0 => i64::from(n),
        _ => DEFAULT_FAILURE_THRESHOLD,
    }
}

/// The first probe tick (start + k × period) at or after `at_least`.
fn first_tick(start: Timestamp, period: i64, at_least: Timestamp) -> Timestamp {
    let wait = at_least.duration_since(start).as_secs().max(0);
    let k = (wait + period - 1) / period;
    start + SignedDuration::from_secs(k * period)
}

/// When the startup probe passes: the container's `started` turns true (at once without one).
pub fn started_at(c: &Container, start: Timestamp) -> Timestamp {
    match &c.startup_probe {
        None => start,
        Some(p) => first_tick(
            start,
            period(p),
            start + SignedDuration::from_secs(initial_delay(p)),
        ),
    }
}

/// When the container turns ready: the first readiness probe after its initial delay, once
/// started (at once without a readiness probe).
pub fn ready_at(c: &Container, start: Timestamp) -> Timestamp {
    let started = started_at(c, start);
    match &c.readiness_probe {
        None => started,
        Some(p) => {
            let delay = start + SignedDuration::from_secs(initial_delay(p));
            first_tick(start, period(p), delay.max(started))
        }
    }
}

/// The pod's `sim.k1s.io/liveness-fail-after-seconds`, when set to a non-negative number.
pub fn liveness_fail_after(pod: &Pod) -> Option<i64> {
    let v: f64 = pod
        .metadata
        .annotations
        .as_ref()?
        .get(LIVENESS_FAIL_AFTER)?
        .trim()
        .parse()
        .ok()?;
    (v.is_finite() && v >= 0.0).then(|| v.ceil() as i64)
}

/// A liveness probe failing enough times to kill the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LivenessKill {
    pub at: Timestamp,
    pub failures: i64,
}

/// When the failing liveness probe kills a container started at `start` (a container without
/// a liveness probe, or of a pod without the annotation, is never killed).
pub fn liveness_kill(pod: &Pod, c: &Container, start: Timestamp) -> Option<LivenessKill> {
    let p = c.liveness_probe.as_ref()?;
    let after = liveness_fail_after(pod)?;
    let period = period(p);
    let from =
        (start + SignedDuration::from_secs(after.max(initial_delay(p)))).max(started_at(c, start));
    let first_failure = first_tick(start, period, from);
    let failures = failure_threshold(p);
    Some(LivenessKill {
        at: first_failure + SignedDuration::from_secs((failures - 1) * period),
        failures,
    })
}

/// What a failed probe of this kind reports (the runtime's words for each handler).
pub fn failure_output(p: &Probe, pod_ip: &str) -> String {
    let port = |p: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString| match p {
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => n.to_string(),
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => s.clone(),
    };
    if p.http_get.is_some() {
        "HTTP probe failed with statuscode: 500".into()
    } else if let Some(t) = &p.tcp_socket {
        format!(
            "dial tcp {pod_ip}:{}: connect: connection refused",
            port(&t.port)
        )
    } else if p.grpc.is_some() {
        "service unhealthy (responded with \"NOT_SERVING\")".into()
    } else {
        // An exec probe whose command exits non-zero prints nothing here.
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{HTTPGetAction, TCPSocketAction};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).expect("test value")
    }

    fn probe(delay: Option<i32>, period: Option<i32>, threshold: Option<i32>) -> Probe {
        Probe {
            initial_delay_seconds: delay,
            period_seconds: period,
            failure_threshold: threshold,
            ..Default::default()
        }
    }

    fn pod_with(annotation: Option<&str>) -> Pod {
        let mut p = Pod::default();
        p.metadata.annotations =
            annotation.map(|v| [(LIVENESS_FAIL_AFTER.to_string(), v.to_string())].into());
        p
    }

    #[test]
    fn readiness_waits_for_the_first_probe_after_the_initial_delay() {
        // (readiness probe, startup probe, ready at)
        let cases = [
            (None, None, 0),
            (Some(probe(None, None, None)), None, 0),
            (Some(probe(Some(5), None, None)), None, 10),
            (Some(probe(Some(5), Some(1), None)), None, 5),
            (Some(probe(Some(10), Some(10), None)), None, 10),
            (Some(probe(Some(3), Some(2), None)), None, 4),
            // Readiness is probed only once started.
            (None, Some(probe(Some(7), Some(5), None)), 10),
            (
                Some(probe(Some(2), Some(3), None)),
                Some(probe(Some(4), Some(2), None)),
                6,
            ),
            // A zero or negative period is the default.
            (Some(probe(Some(1), Some(0), None)), None, 10),
        ];
        for (i, (readiness, startup, want)) in cases.into_iter().enumerate() {
            let c = Container {
                readiness_probe: readiness,
                startup_probe: startup,
                ..Default::default()
            };
            assert_eq!(ready_at(&c, t(0)), t(want), "case {i}");
        }
    }

    #[test]
    fn started_waits_for_the_startup_probe() {
        let mut c = Container::default();
        assert_eq!(started_at(&c, t(0)), t(0));
        c.startup_probe = Some(probe(Some(15), Some(10), None));
        assert_eq!(started_at(&c, t(0)), t(20));
    }

    #[test]
    fn liveness_kills_after_failure_threshold_probes() {
        let mut c = Container {
            liveness_probe: Some(probe(None, Some(2), None)),
            ..Default::default()
        };
        assert_eq!(
            liveness_kill(&pod_with(None), &c, t(0)),
            None,
            "no annotation"
        );
        assert_eq!(
            liveness_kill(&pod_with(Some("x")), &c, t(0)),
            None,
            "bad annotation"
        );
        // Fails from 3 s: probes at 4, 6, 8 fail; killed at 8.
        let k = liveness_kill(&pod_with(Some("3")), &c, t(0)).expect("killed");
        assert_eq!((k.at, k.failures), (t(8), 3));
        c.liveness_probe = Some(probe(Some(10), Some(2), Some(1)));
        let k = liveness_kill(&pod_with(Some("0")), &c, t(0)).expect("killed");
        assert_eq!(
            (k.at, k.failures),
            (t(10), 1),
            "not before the initial delay"
        );
        c.liveness_probe = None;
        assert_eq!(
            liveness_kill(&pod_with(Some("0")), &c, t(0)),
            None,
            "no probe"
        );
    }

    #[test]
    fn failure_output_names_the_handler() {
        let mut p = Probe {
            http_get: Some(HTTPGetAction {
                port: IntOrString::Int(80),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            failure_output(&p, "10.244.0.5"),
            "HTTP probe failed with statuscode: 500"
        );
        p.http_get = None;
        p.tcp_socket = Some(TCPSocketAction {
            port: IntOrString::Int(5432),
            ..Default::default()
        });
        assert_eq!(
            failure_output(&p, "10.244.0.5"),
            "dial tcp 10.244.0.5:5432: connect: connection refused"
        );
    }
}
