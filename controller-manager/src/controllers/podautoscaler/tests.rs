//! Tests of the HPA's normalization (legacy limits, behaviors, stabilization) and its quantity
//! and duration helpers.

use super::*;

fn t(s: &str) -> jiff::Timestamp {
    s.parse().expect("timestamp")
}

#[test]
fn legacy_rules_bound_the_recommendation() {
    // (current, desired, min, max) -> (replicas, ScalingLimited reason)
    let cases = [
        ((2, 10, 1, 20), (4, "ScaleUpLimit")),
        ((3, 10, 1, 20), (6, "ScaleUpLimit")),
        ((3, 10, 1, 5), (5, "TooManyReplicas")),
        ((5, 0, 2, 10), (2, "TooFewReplicas")),
        ((5, 4, 1, 10), (4, "DesiredWithinRange")),
        ((1, 3, 1, 10), (3, "DesiredWithinRange")),
    ];
    for ((cur, des, min, max), (want, reason)) in cases {
        let (got, r, _) = convert_with_rules(cur, des, min, max);
        assert_eq!((got, r), (want, reason), "{cur} -> {des} in [{min}, {max}]");
    }
}

#[test]
fn behavior_defaults_limit_scale_up_and_down() {
    let now = t("2026-01-01T12:00:00Z");
    let up = scale_up_rules(None);
    let down = scale_down_rules(None, 300);
    assert_eq!(down.stabilization_window_seconds, Some(300));
    assert_eq!(up.stabilization_window_seconds, Some(0));
    // From 1: +4 pods or +100% in 15 s, the larger (Max): 5.
    assert_eq!(
        convert_with_behavior_rate(1, 10, 1, 20, &up, &down, &[], &[], now),
        (
            5,
            "ScaleUpLimit",
            "the desired replica count is increasing faster than the maximum scale rate"
        )
    );
    // From 10: +100% beats +4: 20, capped by max 15.
    assert_eq!(
        convert_with_behavior_rate(10, 40, 1, 15, &up, &down, &[], &[], now).0,
        15
    );
    // A scale-up of 4 within the period counts against it: the period started at 1.
    let recent = [ScaleEvent {
        change: 4,
        at: t("2026-01-01T11:59:55Z"),
        outdated: false,
    }];
    assert_eq!(
        convert_with_behavior_rate(5, 10, 1, 20, &up, &down, &recent, &[], now).0,
        5
    );
    // An old event no longer counts.
    let old = [ScaleEvent {
        change: 4,
        at: t("2026-01-01T11:00:00Z"),
        outdated: false,
    }];
    assert_eq!(
        convert_with_behavior_rate(5, 20, 1, 20, &up, &down, &old, &[], now).0,
        10
    );
    // Scale down: 100% in 15 s, so only min bounds it.
    assert_eq!(
        convert_with_behavior_rate(10, 0, 2, 20, &up, &down, &[], &[], now),
        (
            2,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count"
        )
    );
    // A Disabled scale-down keeps the current size.
    let mut disabled = down.clone();
    disabled.select_policy = Some("Disabled".into());
    assert_eq!(
        convert_with_behavior_rate(10, 2, 1, 20, &up, &disabled, &[], &[], now).0,
        10
    );
    // Min picks the smaller change: +4 pods vs +100% from 10 -> 14.
    let mut min_up = up.clone();
    min_up.select_policy = Some("Min".into());
    assert_eq!(
        convert_with_behavior_rate(10, 40, 1, 100, &min_up, &down, &[], &[], now).0,
        14
    );
}

#[test]
fn stabilization_keeps_the_highest_recent_recommendation() {
    let now = t("2026-01-01T12:00:00Z");
    let window = jiff::SignedDuration::from_secs(300);
    let mut recs = vec![
        Recommendation {
            replicas: 7,
            at: t("2026-01-01T11:59:00Z"),
        },
        Recommendation {
            replicas: 9,
            at: t("2026-01-01T11:50:00Z"),
        },
    ];
    assert_eq!(stabilize(&mut recs, 3, now, window), 7);
    // The old sample's slot is reused for the new one.
    assert_eq!(recs.len(), 2);
    assert!(recs.iter().any(|r| r.replicas == 3 && r.at == now));

    let up = scale_up_rules(None);
    let down = scale_down_rules(None, 300);
    let mut recs = vec![Recommendation {
        replicas: 8,
        at: t("2026-01-01T11:58:00Z"),
    }];
    assert_eq!(
        stabilize_with_behaviors(&mut recs, 8, 2, &up, &down, now),
        (
            8,
            "ScaleDownStabilized",
            "recent recommendations were higher than current one, applying the highest recent recommendation"
        )
    );
    // Scale-up is immediate (window 0).
    assert_eq!(
        stabilize_with_behaviors(&mut recs, 8, 12, &up, &down, now).0,
        12
    );
}

#[test]
fn quantities_and_durations() {
    for (s, milli) in [
        ("250m", 250),
        ("1", 1000),
        ("1.5", 1500),
        ("300000000n", 300),
        ("1n", 1),
        ("32768Ki", 33_554_432_000),
        ("64Mi", 67_108_864_000),
        ("2k", 2_000_000),
        ("1e3", 1_000_000),
    ] {
        assert_eq!(parse_milli(s), Some(milli), "{s}");
    }
    assert_eq!(parse_milli("abc"), None);
    assert_eq!(parse_milli("1Xi"), None);
    for (milli, s) in [
        (250, "250m"),
        (1500, "1500m"),
        (2000, "2"),
        (33_554_432_000, "33554432"),
        (1_000_000, "1k"),
        (0, "0"),
    ] {
        assert_eq!(format_milli(milli), s);
    }
    assert_eq!(parse_go_duration("15s"), Some(Duration::from_secs(15)));
    assert_eq!(parse_go_duration("5m0s"), Some(Duration::from_secs(300)));
    assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
    assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
    assert_eq!(
        parse_go_duration("10.5s"),
        Some(Duration::from_millis(10_500))
    );
    assert_eq!(parse_go_duration("10"), None);
    assert_eq!(parse_go_duration(""), None);
}

#[test]
fn scale_targets_map_to_their_resources() {
    assert_eq!(
        scale_resource("apps/v1", "Deployment").map(|r| r.plural),
        Ok("deployments".to_string())
    );
    assert_eq!(
        scale_resource("v1", "ReplicationController").map(|r| r.plural),
        Ok("replicationcontrollers".to_string())
    );
    assert_eq!(
        scale_resource("apps/v1", "Pod").map(|r| r.plural),
        Err("no matches for kind \"Pod\" in group \"apps\"".to_string())
    );
}
