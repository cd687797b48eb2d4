//! The work queue, as client-go's rate-limited queue: a key is deduplicated while it waits, never
//! handed to two workers at once (re-added while processing, it waits until `done`), retried with
//! per-item exponential backoff combined with an overall token bucket, and drained at shutdown.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::QueueMetrics;

/// Per-item exponential backoff (client-go's ItemExponentialFailureRateLimiter: 5 ms doubling
/// to 1000 s) combined with an overall token bucket (10 qps, burst 100): the longer wait wins.
#[derive(Debug)]
pub struct RateLimiter {
    base: Duration,
    max: Duration,
    failures: HashMap<String, u32>,
    bucket: TokenBucket,
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
            10.0,
            100,
        )
    }
}

impl RateLimiter {
    pub fn new(base: Duration, max: Duration, qps: f64, burst: u32) -> Self {
        RateLimiter {
            base,
            max,
            failures: HashMap::new(),
            bucket: TokenBucket::new(qps, burst),
        }
    }

    /// How long `key` waits before its next attempt; counts one more failure.
    pub fn when(&mut self, key: &str, now: Instant) -> Duration {
        let n = self.failures.entry(key.to_string()).or_insert(0);
        let exp = 2u64.saturating_pow(*n).min(u64::from(u32::MAX));
        *n = n.saturating_add(1);
        let backoff = self
            .base
            .checked_mul(u32::try_from(exp).unwrap_or(u32::MAX))
            .unwrap_or(self.max)
            .min(self.max);
        backoff.max(self.bucket.reserve(now))
    }

    pub fn forget(&mut self, key: &str) {
        self.failures.remove(key);
    }

    pub fn retries(&self, key: &str) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

/// A token bucket that hands out reservations: the delay until the next token is free.
#[derive(Debug)]
struct TokenBucket {
    per_token: Duration,
    burst: u32,
    /// When the bucket is next empty-to-full neutral: reservations move it forward.
    next_free: Option<Instant>,
}

impl TokenBucket {
    fn new(qps: f64, burst: u32) -> Self {
        TokenBucket {
            per_token: Duration::from_secs_f64(1.0 / qps.max(f64::MIN_POSITIVE)),
            burst,
            next_free: None,
        }
    }

    fn reserve(&mut self, now: Instant) -> Duration {
        // Up to `burst` tokens accumulate: a full bucket hands out `burst` tokens at once.
        let floor = now
            .checked_sub(self.per_token * self.burst.saturating_sub(1))
            .unwrap_or(now);
        let at = self.next_free.map_or(floor, |t| t.max(floor));
        self.next_free = Some(at + self.per_token);
        at.saturating_duration_since(now)
    }
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<String>,
    /// Keys waiting to be processed (in `queue`, or re-added while processing).
    dirty: HashSet<String>,
    processing: HashSet<String>,
    /// When each queued key was added, for the queue-latency metric.
    added_at: HashMap<String, Instant>,
    shutting_down: bool,
}

/// A queue of object keys (`namespace/name`) shared by a controller's workers.
#[derive(Clone, Debug)]
pub struct WorkQueue {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    limiter: Mutex<RateLimiter>,
    notify: Notify,
    metrics: Option<Arc<QueueMetrics>>,
}

impl WorkQueue {
    pub fn new(limiter: RateLimiter, metrics: Option<Arc<QueueMetrics>>) -> Self {
        WorkQueue {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                limiter: Mutex::new(limiter),
                notify: Notify::new(),
                metrics,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn limiter(&self) -> std::sync::MutexGuard<'_, RateLimiter> {
        self.inner
            .limiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a key now. A key already waiting is not added twice; a key being processed is
    /// queued again once its worker calls `done`.
    pub fn add(&self, key: impl Into<String>) {
        let key = key.into();
        let mut s = self.state();
        if s.shutting_down || !s.dirty.insert(key.clone()) {
            return;
        }
        if let Some(m) = &self.inner.metrics {
            m.adds.inc();
        }
        if s.processing.contains(&key) {
            return;
        }
        s.added_at.insert(key.clone(), Instant::now());
        s.queue.push_back(key);
        self.update_depth(&s);
        drop(s);
        self.inner.notify.notify_one();
    }

    /// Adds a key after a delay (a timer task; the key is deduplicated when it arrives).
    pub fn add_after(&self, key: impl Into<String>, delay: Duration) {
        let key = key.into();
        if delay.is_zero() {
            return self.add(key);
        }
        if self.state().shutting_down {
            return;
        }
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.add(key);
        });
    }

    /// Adds a key after its rate limiter's delay (a failed attempt).
    pub fn add_rate_limited(&self, key: impl Into<String>) {
        let key = key.into();
        let delay = self.limiter().when(&key, Instant::now());
        if let Some(m) = &self.inner.metrics {
            m.retries.inc();
        }
        self.add_after(key, delay);
    }

    /// Clears a key's failure history (after a successful attempt).
    pub fn forget(&self, key: &str) {
        self.limiter().forget(key);
    }

    /// How many times a key has failed since it was last forgotten.
    pub fn num_requeues(&self, key: &str) -> u32 {
        self.limiter().retries(key)
    }

    /// The next key to process, waiting for one; `None` once shut down and drained.
    pub async fn get(&self) -> Option<String> {
        loop {
            let notified = self.inner.notify.notified();
            {
                let mut s = self.state();
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    if let (Some(m), Some(at)) = (&self.inner.metrics, s.added_at.remove(&key)) {
                        m.queue_latency.observe(at.elapsed().as_secs_f64());
                    }
                    self.update_depth(&s);
                    return Some(key);
                }
                if s.shutting_down {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Marks a key's processing finished; a key re-added meanwhile goes back in the queue.
    pub fn done(&self, key: &str) {
        let mut s = self.state();
        s.processing.remove(key);
        if s.dirty.contains(key) && !s.shutting_down {
            s.added_at.insert(key.to_string(), Instant::now());
            s.queue.push_back(key.to_string());
            self.update_depth(&s);
            drop(s);
            self.inner.notify.notify_one();
        } else if s.shutting_down && s.processing.is_empty() {
            drop(s);
            self.inner.notify.notify_waiters();
        }
    }

    /// Stops accepting keys; workers finish what is queued, then `get` returns `None`.
    pub fn shut_down(&self) {
        self.state().shutting_down = true;
        self.inner.notify.notify_waiters();
    }

    /// Waits until every key handed out has been marked done (after `shut_down`).
    pub async fn drained(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.state().processing.is_empty() {
                return;
            }
            notified.await;
        }
    }

    pub fn len(&self) -> usize {
        self.state().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn update_depth(&self, s: &State) {
        if let Some(m) = &self.inner.metrics {
            m.depth.set(s.queue.len() as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> WorkQueue {
        WorkQueue::new(RateLimiter::default(), None)
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_key_is_not_added_twice() {
        let q = queue();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await.as_deref(), Some("a"));
        assert_eq!(q.get().await.as_deref(), Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_is_never_processed_by_two_workers_at_once() {
        let q = queue();
        q.add("a");
        let first = q.get().await;
        assert_eq!(first.as_deref(), Some("a"));
        // Re-added while processing: not handed out until `done`.
        q.add("a");
        assert!(q.is_empty());
        let second = tokio::time::timeout(Duration::from_millis(50), q.get()).await;
        assert!(
            second.is_err(),
            "the key was handed out while still processing"
        );
        q.done("a");
        assert_eq!(q.get().await.as_deref(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_and_forget_resets() {
        let mut rl = RateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
            1e9,
            1_000_000,
        );
        let now = Instant::now();
        let waits: Vec<_> = (0..5).map(|_| rl.when("k", now)).collect();
        assert_eq!(
            waits,
            [5, 10, 20, 40, 80].map(Duration::from_millis).to_vec()
        );
        for _ in 0..40 {
            rl.when("k", now);
        }
        assert_eq!(
            rl.when("k", now),
            Duration::from_secs(1000),
            "capped at the maximum"
        );
        rl.forget("k");
        assert_eq!(rl.when("k", now), Duration::from_millis(5));
        assert_eq!(rl.when("other", now), Duration::from_millis(5), "per item");
    }

    #[tokio::test(start_paused = true)]
    async fn the_token_bucket_limits_overall_retries_after_the_burst() {
        let mut rl = RateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
            10.0,
            100,
        );
        let now = Instant::now();
        for i in 0..100 {
            assert_eq!(rl.when(&format!("k{i}"), now), Duration::from_millis(5));
        }
        // The 101st distinct key waits for a token: 100 ms at 10 qps.
        assert_eq!(rl.when("k100", now), Duration::from_millis(100));
        assert_eq!(rl.when("k101", now), Duration::from_millis(200));
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_arrive_after_the_backoff() {
        let q = queue();
        q.add_rate_limited("a");
        q.add_rate_limited("a");
        tokio::time::sleep(Duration::from_millis(4)).await;
        assert!(q.is_empty());
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(q.len(), 1, "both retries arrived as one key");
        assert_eq!(q.num_requeues("a"), 2);
        q.forget("a");
        assert_eq!(q.num_requeues("a"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drains_queued_keys_then_ends() {
        let q = queue();
        q.add("a");
        q.add("b");
        q.shut_down();
        q.add("c");
        assert_eq!(q.get().await.as_deref(), Some("a"));
        assert_eq!(q.get().await.as_deref(), Some("b"));
        assert_eq!(q.get().await, None, "added after shutdown: dropped");
        q.done("a");
        q.done("b");
        tokio::time::timeout(Duration::from_secs(1), q.drained())
            .await
            .expect("drained");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_worker_wakes_on_add() {
        let q = queue();
        let worker = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
        tokio::task::yield_now().await;
        q.add("x");
        assert_eq!(worker.await.ok().flatten().as_deref(), Some("x"));
    }
}
