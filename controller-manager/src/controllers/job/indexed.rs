//! Sets of completion indexes as upstream's indexed_job_utils.go writes them in
//! `status.completedIndexes` / `status.failedIndexes` (sorted, comma-separated, runs of three
//! or more consecutive indexes written as `first-last`), and the per-index failure counts that
//! pods of a Job with `backoffLimitPerIndex` carry in their annotations.

use std::collections::BTreeSet;

/// The annotation (and label) carrying a pod's completion index.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// Failures of earlier pods of the same index that counted towards `backoffLimitPerIndex`.
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// Failures of earlier pods of the same index that a pod failure policy `Ignore` rule matched.
pub const INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";

/// Parses `1,3-5` into its indexes, keeping only those below `completions` (upstream ignores
/// out-of-range and malformed parts).
pub fn parse(text: Option<&str>, completions: i32) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    let Some(text) = text else { return out };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<i32>(), b.trim().parse::<i32>()),
            None => (part.parse::<i32>(), part.parse::<i32>()),
        };
        let (Ok(first), Ok(last)) = (first, last) else {
            continue;
        };
        if first < 0 || last < first {
            continue;
        }
        for ix in first..=last.min(completions.saturating_sub(1)) {
            out.insert(ix);
        }
    }
    out
}

/// Formats indexes as upstream's orderedIntervals.String: `0,2-4,7`; an interval of just two
/// indexes is written `5,6`, not `5-6`.
pub fn format(indexes: &BTreeSet<i32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(first) = iter.next() {
        let mut last = first;
        while iter.peek() == Some(&(last + 1)) {
            last += 1;
            iter.next();
        }
        if first == last {
            parts.push(first.to_string());
        } else if last == first + 1 {
            parts.push(format!("{first},{last}"));
        } else {
            parts.push(format!("{first}-{last}"));
        }
    }
    parts.join(",")
}

/// A pod's completion index from its annotation (`None` if absent or malformed).
pub fn of_pod(pod: &k8s_openapi::api::core::v1::Pod) -> Option<i32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(COMPLETION_INDEX)?
        .parse::<i32>()
        .ok()
        .filter(|i| *i >= 0)
}

/// A non-negative int32 annotation of the pod: 0 when absent, malformed, negative or too big
/// (upstream's parseIndexFailureCountAnnotation, which distrusts values users may have set).
pub fn count_annotation(pod: &k8s_openapi::api::core::v1::Pod, key: &str) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|v| i32::try_from(v).ok())
        .filter(|v| *v >= 0)
        .unwrap_or(0)
}

/// The first `count` indexes below `completions` not in `taken`.
pub fn first_pending(taken: &BTreeSet<i32>, count: usize, completions: i32) -> Vec<i32> {
    (0..completions)
        .filter(|i| !taken.contains(i))
        .take(count)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format_round_trip() {
        let cases: &[(&str, i32, &[i32], &str)] = &[
            ("", 5, &[], ""),
            ("1", 5, &[1], "1"),
            ("1,3-5", 10, &[1, 3, 4, 5], "1,3-5"),
            ("0-1", 5, &[0, 1], "0,1"),
            ("0,1,2", 5, &[0, 1, 2], "0-2"),
            ("3-7", 5, &[3, 4], "3,4"),
            ("1,2,4-5,7-9", 10, &[1, 2, 4, 5, 7, 8, 9], "1,2,4,5,7-9"),
            ("0-2,3-4", 10, &[0, 1, 2, 3, 4], "0-4"),
            ("x,2,5-a,4", 5, &[2, 4], "2,4"),
            ("9", 5, &[], ""),
        ];
        for (text, completions, want, formatted) in cases {
            let got = parse(Some(text), *completions);
            assert_eq!(got.iter().copied().collect::<Vec<_>>(), *want, "{text}");
            assert_eq!(format(&got), *formatted, "{text}");
        }
        assert!(parse(None, 3).is_empty());
    }

    #[test]
    fn failure_counts_distrust_bad_values() {
        let pod = |v: &str| -> k8s_openapi::api::core::v1::Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"annotations": {INDEX_FAILURE_COUNT: v}}
            }))
            .expect("pod")
        };
        // upstream's TestGetIndexFailureCount cases
        for (v, want) in [
            ("3", 3),
            ("0", 0),
            ("-1", 0),
            ("abc", 0),
            ("2147483647", i32::MAX),
            ("2147483648", 0),
        ] {
            assert_eq!(count_annotation(&pod(v), INDEX_FAILURE_COUNT), want, "{v}");
        }
        assert_eq!(count_annotation(&pod("3"), INDEX_IGNORED_FAILURE_COUNT), 0);
    }

    #[test]
    fn pending_indexes_skip_taken_ones() {
        let taken: BTreeSet<i32> = [0, 2].into_iter().collect();
        assert_eq!(first_pending(&taken, 2, 5), vec![1, 3]);
        assert_eq!(first_pending(&taken, 9, 4), vec![1, 3]);
    }
}
