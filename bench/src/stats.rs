//! Latency statistics: nearest-rank percentiles over recorded samples, and rates.

use std::time::Duration;

use serde::Serialize;

/// The nearest-rank percentile (`p` in 0..=100) of ascending `sorted` samples: the smallest
/// sample such that at least `p` percent of all samples are less than or equal to it.
/// `None` for no samples.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    // ceil(p/100 * n) as a 1-based rank, clamped to [1, n]; computed in integers where exact.
    let p = p.clamp(0.0, 100.0);
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// Summary of a set of latencies, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: usize,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl LatencySummary {
    /// Summarizes samples in nanoseconds (sorted in place). `None` when there are none.
    pub fn from_nanos(samples: &mut [u64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let ms = |ns: u64| ns as f64 / 1e6;
        let sum: u128 = samples.iter().map(|&s| u128::from(s)).sum();
        let mean = sum as f64 / samples.len() as f64 / 1e6;
        Some(LatencySummary {
            count: samples.len(),
            mean,
            p50: ms(percentile(samples, 50.0)?),
            p90: ms(percentile(samples, 90.0)?),
            p99: ms(percentile(samples, 99.0)?),
            max: ms(*samples.last()?),
        })
    }

    /// Summarizes durations. `None` when there are none.
    pub fn from_durations(samples: &[Duration]) -> Option<Self> {
        let mut nanos: Vec<u64> = samples.iter().map(|d| duration_nanos(*d)).collect();
        Self::from_nanos(&mut nanos)
    }
}

/// A duration in nanoseconds, saturating (u64 nanoseconds cover 584 years).
pub fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `count` per second over `seconds`; 0 when no time passed.
pub fn rate(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 90.0), Some(90));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 99.5), Some(100));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&v, 1.0), Some(1));
        assert_eq!(percentile(&v, 1.5), Some(2));

        // Small sets: the rank rounds up, so p50 of four is the second and p99 is the maximum.
        assert_eq!(percentile(&[10, 20, 30, 40], 50.0), Some(20));
        assert_eq!(percentile(&[10, 20, 30, 40], 51.0), Some(30));
        assert_eq!(percentile(&[10, 20, 30, 40], 99.0), Some(40));
        assert_eq!(percentile(&[7], 50.0), Some(7));
        assert_eq!(percentile(&[7], 0.0), Some(7));
        assert_eq!(percentile::<u64>(&[], 50.0), None);
        // Out-of-range p is clamped rather than indexing out of bounds.
        assert_eq!(percentile(&[1, 2, 3], 250.0), Some(3));
        assert_eq!(percentile(&[1, 2, 3], -5.0), Some(1));
    }

    #[test]
    fn summary_sorts_and_converts_to_milliseconds() {
        // 1..=1000 ms, shuffled deterministically.
        let mut ns: Vec<u64> = (1..=1000u64)
            .map(|i| (i * 7919 % 1000 + 1) * 1_000_000)
            .collect();
        let s = LatencySummary::from_nanos(&mut ns).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50, 500.0);
        assert_eq!(s.p90, 900.0);
        assert_eq!(s.p99, 990.0);
        assert_eq!(s.max, 1000.0);
        assert!((s.mean - 500.5).abs() < 1e-9, "{}", s.mean);
        assert_eq!(LatencySummary::from_nanos(&mut []), None);

        let d = [Duration::from_micros(1500), Duration::from_micros(500)];
        let s = LatencySummary::from_durations(&d).unwrap();
        assert_eq!((s.p50, s.max, s.mean), (0.5, 1.5, 1.0));
    }

    #[test]
    fn rates() {
        assert_eq!(rate(1000, 2.0), 500.0);
        assert_eq!(rate(5, 0.0), 0.0);
        assert_eq!(duration_nanos(Duration::MAX), u64::MAX);
    }
}
