//! The scheduling queue (upstream's internal/queue PriorityQueue): an active queue ordered by pod
//! priority then time queued; a backoff queue (1 s doubling per attempt up to 10 s); and the
//! unschedulable pods, moved back when the cluster changes in a way that may help them, and
//! flushed after `UNSCHEDULABLE_MAX` in any case. A cluster change seen while a pod was being
//! scheduled sends it to backoff rather than to the unschedulable pods (upstream's move request
//! cycle), so no event is lost.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::helpers::priority;

pub const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long a pod stays unschedulable before it is retried anyway (upstream: 5 min).
pub const UNSCHEDULABLE_MAX: Duration = Duration::from_secs(60);

/// A pod handed out for one scheduling attempt.
#[derive(Clone, Debug)]
pub struct QueuedPod {
    pub pod: Arc<Pod>,
    pub key: String,
    pub attempts: u32,
    /// The move-request cycle when it was popped.
    cycle: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Where {
    Active,
    Backoff(Instant),
    Unschedulable(Instant),
    InFlight,
}

#[derive(Debug)]
struct Entry {
    pod: Arc<Pod>,
    attempts: u32,
    at: Where,
    /// Identifies this entry's current place in the active heap.
    seq: u64,
    queued_at: Instant,
    last_failure: Option<Instant>,
}

#[derive(Debug, PartialEq, Eq)]
struct ActiveKey {
    priority: i32,
    queued_at: Instant,
    seq: u64,
    key: String,
}

impl Ord for ActiveKey {
    fn cmp(&self, o: &Self) -> Ordering {
        self.priority
            .cmp(&o.priority)
            .then_with(|| o.queued_at.cmp(&self.queued_at))
            .then_with(|| o.seq.cmp(&self.seq))
    }
}
impl PartialOrd for ActiveKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    active: BinaryHeap<ActiveKey>,
    backoff: BinaryHeap<Reverse<(Instant, String)>>,
    move_cycle: u64,
    seq: u64,
}

impl Inner {
    fn activate(&mut self, key: &str) {
        self.seq += 1;
        let seq = self.seq;
        if let Some(e) = self.entries.get_mut(key) {
            e.at = Where::Active;
            e.seq = seq;
            self.active.push(ActiveKey {
                priority: priority(&e.pod),
                queued_at: e.queued_at,
                seq,
                key: key.to_string(),
            });
        }
    }

    fn backoff_until(e: &Entry) -> Option<Instant> {
        let last = e.last_failure?;
        let shift = e.attempts.saturating_sub(1).min(8);
        let d = INITIAL_BACKOFF.saturating_mul(1 << shift).min(MAX_BACKOFF);
        Some(last + d)
    }

    /// To backoff if still backing off, else to active.
    fn requeue(&mut self, key: &str, now: Instant) -> bool {
        let Some(e) = self.entries.get_mut(key) else {
            return false;
        };
        match Self::backoff_until(e).filter(|t| *t > now) {
            Some(t) => {
                e.at = Where::Backoff(t);
                self.backoff.push(Reverse((t, key.to_string())));
                false
            }
            None => {
                self.activate(key);
                true
            }
        }
    }
}

/// The queue; one consumer (the scheduling loop).
#[derive(Debug, Default)]
pub struct SchedulingQueue {
    inner: Mutex<Inner>,
    notify: Notify,
}

impl SchedulingQueue {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A pending pod seen (added or updated). `changed`: its spec, labels or annotations changed,
    /// which may make an unschedulable pod schedulable.
    pub fn add_or_update(&self, key: &str, pod: Arc<Pod>, changed: bool) {
        let mut q = self.lock();
        let now = Instant::now();
        let woke = match q.entries.get_mut(key) {
            Some(e) => {
                e.pod = pod;
                matches!(e.at, Where::Unschedulable(_)) && changed && q.requeue(key, now)
            }
            None => {
                q.entries.insert(
                    key.to_string(),
                    Entry {
                        pod,
                        attempts: 0,
                        at: Where::Active,
                        seq: 0,
                        queued_at: now,
                        last_failure: None,
                    },
                );
                q.activate(key);
                true
            }
        };
        drop(q);
        if woke {
            self.notify.notify_one();
        }
    }

    /// The pod is bound, deleted or no longer ours.
    pub fn remove(&self, key: &str) {
        self.lock().entries.remove(key);
    }

    /// The next pod to schedule (waits for one).
    pub async fn pop(&self) -> QueuedPod {
        loop {
            let notified = self.notify.notified();
            if let Some(p) = self.try_pop() {
                return p;
            }
            notified.await;
        }
    }

    pub fn try_pop(&self) -> Option<QueuedPod> {
        let mut q = self.lock();
        while let Some(top) = q.active.pop() {
            let cycle = q.move_cycle;
            let Some(e) = q.entries.get_mut(&top.key) else {
                continue;
            };
            if e.at != Where::Active || e.seq != top.seq {
                continue;
            }
            e.at = Where::InFlight;
            e.attempts += 1;
            return Some(QueuedPod {
                pod: e.pod.clone(),
                key: top.key,
                attempts: e.attempts,
                cycle,
            });
        }
        None
    }

    /// The attempt found no node: unschedulable until the cluster changes (or to backoff when it
    /// already changed during the attempt).
    pub fn unschedulable(&self, p: &QueuedPod) {
        let mut q = self.lock();
        let now = Instant::now();
        let moved = q.move_cycle > p.cycle;
        let Some(e) = q.entries.get_mut(&p.key) else {
            return;
        };
        if e.at != Where::InFlight {
            return;
        }
        e.last_failure = Some(now);
        if moved {
            let woke = q.requeue(&p.key, now);
            drop(q);
            if woke {
                self.notify.notify_one();
            }
        } else {
            e.at = Where::Unschedulable(now);
        }
    }

    /// The attempt failed for another reason (an API error): retry after backoff.
    /// An entry dropped meanwhile (its attempt was cut short while the pod was assumed) is
    /// queued again, so a pod whose bind failed is never lost.
    pub fn retry(&self, p: &QueuedPod) {
        let mut q = self.lock();
        let now = Instant::now();
        match q.entries.get_mut(&p.key) {
            Some(e) if e.at == Where::InFlight => e.last_failure = Some(now),
            Some(_) => return,
            None => {
                q.entries.insert(
                    p.key.clone(),
                    Entry {
                        pod: p.pod.clone(),
                        attempts: p.attempts,
                        at: Where::InFlight,
                        seq: 0,
                        queued_at: now,
                        last_failure: Some(now),
                    },
                );
            }
        }
        q.requeue(&p.key, now);
    }

    /// The attempt ended without a verdict (pod gone or bound): forget it.
    pub fn done(&self, key: &str) {
        let mut q = self.lock();
        if q.entries.get(key).is_some_and(|e| e.at == Where::InFlight) {
            q.entries.remove(key);
        }
    }

    /// The cluster changed: unschedulable pods for which `may_help` holds are retried.
    pub fn move_unschedulable(&self, may_help: impl Fn(&Pod) -> bool) {
        let mut q = self.lock();
        q.move_cycle += 1;
        let now = Instant::now();
        let keys: Vec<String> = q
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.at, Where::Unschedulable(_)) && may_help(&e.pod))
            .map(|(k, _)| k.clone())
            .collect();
        let mut woke = false;
        for k in keys {
            woke |= q.requeue(&k, now);
        }
        drop(q);
        if woke {
            self.notify.notify_one();
        }
    }

    /// Moves pods whose backoff is over to active, and pods unschedulable for longer than
    /// `UNSCHEDULABLE_MAX` back to the queue.
    pub fn flush(&self) {
        let mut q = self.lock();
        let now = Instant::now();
        let mut woke = false;
        while let Some(Reverse((t, _))) = q.backoff.peek() {
            if *t > now {
                break;
            }
            let Some(Reverse((t, key))) = q.backoff.pop() else {
                break;
            };
            if q.entries
                .get(&key)
                .is_some_and(|e| e.at == Where::Backoff(t))
            {
                q.activate(&key);
                woke = true;
            }
        }
        let stale: Vec<String> = q
            .entries
            .iter()
            .filter(|(_, e)| {
                matches!(e.at, Where::Unschedulable(since) if now.duration_since(since) >= UNSCHEDULABLE_MAX)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            woke |= q.requeue(&k, now);
        }
        drop(q);
        if woke {
            self.notify.notify_one();
        }
    }

    /// (active, backoff, unschedulable, in flight) counts.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let q = self.lock();
        let mut c = (0, 0, 0, 0);
        for e in q.entries.values() {
            match e.at {
                Where::Active => c.0 += 1,
                Where::Backoff(_) => c.1 += 1,
                Where::Unschedulable(_) => c.2 += 1,
                Where::InFlight => c.3 += 1,
            }
        }
        c
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, prio: i32) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns"},
                "spec": {"priority": prio, "containers": []}}))
            .unwrap(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn priority_then_fifo_then_backoff_and_moves() {
        let q = SchedulingQueue::default();
        q.add_or_update("ns/a", pod("a", 0), true);
        tokio::time::advance(Duration::from_millis(1)).await;
        q.add_or_update("ns/b", pod("b", 0), true);
        q.add_or_update("ns/c", pod("c", 10), true);
        let order: Vec<String> = (0..3).map(|_| q.try_pop().unwrap().key).collect();
        assert_eq!(order, ["ns/c", "ns/a", "ns/b"]);
        // c is unschedulable; nothing moves it until the cluster changes.
        let c = QueuedPod {
            pod: pod("c", 10),
            key: "ns/c".into(),
            attempts: 1,
            cycle: 0,
        };
        q.unschedulable(&c);
        q.flush();
        assert!(q.try_pop().is_none());
        assert_eq!(q.counts().2, 1);
        // A change while it is backing off (1 s after the first attempt) parks it in backoff.
        q.move_unschedulable(|_| true);
        assert!(q.try_pop().is_none());
        tokio::time::advance(Duration::from_secs(1)).await;
        q.flush();
        let c = q.try_pop().unwrap();
        assert_eq!((c.key.as_str(), c.attempts), ("ns/c", 2));
        // A change during the attempt sends it to backoff (2 s now), not to unschedulable.
        q.move_unschedulable(|_| true);
        q.unschedulable(&c);
        assert_eq!(q.counts().1, 1);
        tokio::time::advance(Duration::from_millis(1500)).await;
        q.flush();
        assert!(q.try_pop().is_none());
        tokio::time::advance(Duration::from_millis(600)).await;
        q.flush();
        let c = q.try_pop().unwrap();
        q.unschedulable(&c);
        // Flushed after UNSCHEDULABLE_MAX in any case.
        tokio::time::advance(UNSCHEDULABLE_MAX).await;
        q.flush();
        assert_eq!(q.try_pop().unwrap().attempts, 4);
        for k in ["ns/a", "ns/b", "ns/c"] {
            q.done(k);
        }
        assert_eq!(q.counts(), (0, 0, 0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_bind_is_retried_even_after_its_entry_was_dropped() {
        let q = SchedulingQueue::default();
        q.add_or_update("ns/a", pod("a", 0), true);
        let a = q.try_pop().unwrap();
        // The attempt was cut short (the pod was assumed), then the bind failed.
        q.done("ns/a");
        assert_eq!(q.counts(), (0, 0, 0, 0));
        q.retry(&a);
        tokio::time::advance(Duration::from_secs(2)).await;
        q.flush();
        assert_eq!(q.try_pop().unwrap().attempts, 2);
    }

    #[test]
    fn backoff_doubles_up_to_ten_seconds() {
        let now = Instant::now();
        let e = |attempts| Entry {
            pod: pod("a", 0),
            attempts,
            at: Where::InFlight,
            seq: 0,
            queued_at: now,
            last_failure: Some(now),
        };
        let d: Vec<u64> = (1..=6)
            .map(|a| (Inner::backoff_until(&e(a)).unwrap() - now).as_secs())
            .collect();
        assert_eq!(d, [1, 2, 4, 8, 10, 10]);
    }
}
