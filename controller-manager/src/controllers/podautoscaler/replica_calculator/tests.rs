//! Replica calculation facts from upstream's `replica_calculator_test.go` (resource metrics):
//! current replicas, requests, usage levels, readiness and the expected replicas/utilization.

use super::*;

fn t(s: &str) -> jiff::Timestamp {
    s.parse().expect("timestamp")
}

const NOW: &str = "2026-01-01T12:00:00Z";
/// Started long ago (outside the cpu initialization period) and ready since then.
const LONG_AGO: &str = "2026-01-01T10:00:00Z";

#[derive(Clone, Copy)]
enum State {
    Ready,
    /// Ready condition False since it started (never ready).
    Unready,
    /// Started a minute ago, ready just now (within initialization, no full window yet).
    Hot,
    Deleting,
    Pending,
}

struct Case {
    name: &'static str,
    current: i32,
    requests: &'static [i64],
    /// Usage per pod (`None`: no sample).
    levels: &'static [Option<i64>],
    states: &'static [State],
    target: Target,
    expected: Result<(i32, Option<i32>, i64), &'static str>,
}

fn run(c: &Case) -> Result<Recommendation, String> {
    let now = t(NOW);
    let mut pods = Vec::new();
    let mut metrics = BTreeMap::new();
    for (i, req) in c.requests.iter().enumerate() {
        let name = format!("pod-{i}");
        let state = c.states.get(i).copied().unwrap_or(State::Ready);
        let (ready, start) = match state {
            State::Ready | State::Deleting | State::Pending => {
                (Some((true, t(LONG_AGO))), t(LONG_AGO))
            }
            State::Unready => (Some((false, t(LONG_AGO))), t(LONG_AGO)),
            State::Hot => (
                Some((true, t("2026-01-01T11:59:58Z"))),
                t("2026-01-01T11:59:00Z"),
            ),
        };
        pods.push(PodInfo {
            name: name.clone(),
            phase: if matches!(state, State::Pending) {
                "Pending"
            } else {
                "Running"
            }
            .into(),
            deleting: matches!(state, State::Deleting),
            ready,
            start_time: Some(start),
            request: if *req < 0 {
                Err(format!(
                    "missing request for cpu in container app of Pod {name}"
                ))
            } else {
                Ok(*req)
            },
        });
        if let Some(Some(v)) = c.levels.get(i) {
            metrics.insert(
                name,
                PodMetric {
                    value: *v,
                    timestamp: now,
                    window_secs: 30,
                },
            );
        }
    }
    resource_replicas(c.current, c.target, true, &pods, &metrics, now, TOLERANCE)
}

#[test]
fn upstream_resource_cases() {
    use State::*;
    let cases = [
        Case {
            name: "scale up",
            current: 3,
            requests: &[1000, 1000, 1000],
            levels: &[Some(300), Some(500), Some(700)],
            states: &[],
            target: Target::Utilization(30),
            expected: Ok((5, Some(50), 500)),
        },
        Case {
            name: "scale up, unready pod: less scale",
            current: 3,
            requests: &[1000, 1000, 1000],
            levels: &[Some(300), Some(500), Some(700)],
            states: &[Unready, Ready, Ready],
            target: Target::Utilization(30),
            expected: Ok((4, Some(60), 600)),
        },
        Case {
            name: "scale up, hot cpu pod: less scale",
            current: 3,
            requests: &[1000, 1000, 1000],
            levels: &[Some(300), Some(500), Some(700)],
            states: &[Hot, Ready, Ready],
            target: Target::Utilization(30),
            expected: Ok((4, Some(60), 600)),
        },
        Case {
            name: "scale up, unready pods: no scale",
            current: 3,
            requests: &[1000, 1000, 1000],
            levels: &[Some(400), Some(500), Some(700)],
            states: &[Ready, Unready, Unready],
            target: Target::Utilization(30),
            expected: Ok((3, Some(40), 400)),
        },
        Case {
            name: "scale down",
            current: 5,
            requests: &[1000; 5],
            levels: &[Some(100), Some(300), Some(500), Some(250), Some(250)],
            states: &[],
            target: Target::Utilization(50),
            expected: Ok((3, Some(28), 280)),
        },
        Case {
            name: "scale down ignores unready pods",
            current: 5,
            requests: &[1000; 5],
            levels: &[Some(100), Some(300), Some(500), Some(250), Some(250)],
            states: &[Ready, Ready, Ready, Unready, Unready],
            target: Target::Utilization(50),
            expected: Ok((2, Some(30), 300)),
        },
        Case {
            name: "scale down ignores deleting pods",
            current: 5,
            requests: &[1000; 5],
            levels: &[Some(100), Some(300), Some(500), Some(250), Some(250)],
            states: &[Ready, Ready, Ready, Deleting, Deleting],
            target: Target::Utilization(50),
            expected: Ok((2, Some(30), 300)),
        },
        Case {
            name: "within tolerance",
            current: 3,
            requests: &[900, 1000, 1100],
            levels: &[Some(1010), Some(1030), Some(1020)],
            states: &[],
            target: Target::Utilization(100),
            expected: Ok((3, Some(102), 1020)),
        },
        Case {
            name: "missing metrics on a scale down count at the target",
            current: 4,
            requests: &[1000; 4],
            levels: &[Some(400), Some(95), None, None],
            states: &[],
            target: Target::Utilization(100),
            expected: Ok((3, Some(24), 247)),
        },
        Case {
            name: "missing metrics, exactly on target: no change",
            current: 2,
            requests: &[1000, 1000],
            levels: &[Some(1000), None],
            states: &[],
            target: Target::Utilization(100),
            expected: Ok((2, Some(100), 1000)),
        },
        Case {
            name: "missing metrics, above target: no change after filling zeros",
            current: 2,
            requests: &[1000, 1000],
            levels: &[Some(1900), None],
            states: &[],
            target: Target::Utilization(100),
            expected: Ok((2, Some(190), 1900)),
        },
        Case {
            name: "missing metrics, below target: no change",
            current: 2,
            requests: &[1000, 1000],
            levels: &[Some(600), None],
            states: &[],
            target: Target::Utilization(100),
            expected: Ok((2, Some(60), 600)),
        },
        Case {
            name: "missing metrics and an unready pod: scale up",
            current: 3,
            requests: &[1000; 3],
            levels: &[Some(100), Some(2000), None],
            states: &[Unready, Ready, Ready],
            target: Target::Utilization(50),
            expected: Ok((4, Some(200), 2000)),
        },
        Case {
            name: "pending pods count as unready",
            current: 3,
            requests: &[1000; 3],
            levels: &[Some(300), Some(500), Some(700)],
            states: &[Pending, Ready, Ready],
            target: Target::Utilization(30),
            expected: Ok((4, Some(60), 600)),
        },
        Case {
            name: "no metrics",
            current: 4,
            requests: &[1000; 4],
            levels: &[],
            states: &[],
            target: Target::Utilization(100),
            expected: Err("did not receive metrics for targeted pods (pods might be unready)"),
        },
        Case {
            name: "missing request",
            current: 1,
            requests: &[-1],
            levels: &[Some(100)],
            states: &[],
            target: Target::Utilization(100),
            expected: Err("missing request for cpu in container app of Pod pod-0"),
        },
        Case {
            name: "no pods",
            current: 1,
            requests: &[],
            levels: &[],
            states: &[],
            target: Target::Utilization(100),
            expected: Err("no pods returned by selector while calculating replica count"),
        },
        Case {
            name: "average value: scale up",
            current: 3,
            requests: &[1000; 3],
            levels: &[Some(300), Some(500), Some(700)],
            states: &[],
            target: Target::AverageValue(250),
            expected: Ok((6, None, 500)),
        },
        Case {
            name: "average value: within tolerance",
            current: 3,
            requests: &[1000; 3],
            levels: &[Some(480), Some(500), Some(520)],
            states: &[],
            target: Target::AverageValue(500),
            expected: Ok((3, None, 500)),
        },
        Case {
            name: "average value: scale down",
            current: 4,
            requests: &[1000; 4],
            levels: &[Some(100), Some(100), Some(100), Some(100)],
            states: &[],
            target: Target::AverageValue(200),
            expected: Ok((2, None, 100)),
        },
    ];
    for c in &cases {
        let got = run(c)
            .map(|r| (r.replicas, r.utilization, r.raw))
            .map_err(|e| e.to_string());
        let want = c.expected.map_err(str::to_string);
        assert_eq!(got, want, "{}", c.name);
    }
}
