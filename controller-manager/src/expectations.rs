//! Expectations, as upstream's ControllerExpectations: a controller that has just asked for N
//! creates or deletions does not act on the same owner again until its informer has observed
//! them (or the expectations expire after 5 minutes), so a lagging cache never causes double
//! creates or deletes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Upstream's ExpectationsTimeout.
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone, Copy)]
struct Expectation {
    adds: i64,
    dels: i64,
    set_at: Instant,
}

/// Pending creates and deletes per controller key.
#[derive(Debug, Default)]
pub struct Expectations {
    entries: Mutex<HashMap<String, Expectation>>,
}

impl Expectations {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Expectation>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the controller may act on `key`: nothing pending, everything observed, or the
    /// expectations have expired.
    pub fn satisfied(&self, key: &str) -> bool {
        match self.entries().get(key) {
            None => true,
            Some(e) => (e.adds <= 0 && e.dels <= 0) || e.set_at.elapsed() > EXPECTATIONS_TIMEOUT,
        }
    }

    /// Records that `adds` creates and `dels` deletions are about to be issued for `key`.
    pub fn expect(&self, key: &str, adds: i64, dels: i64) {
        self.entries().insert(
            key.to_string(),
            Expectation {
                adds,
                dels,
                set_at: Instant::now(),
            },
        );
    }

    pub fn expect_creations(&self, key: &str, adds: i64) {
        self.expect(key, adds, 0);
    }

    pub fn expect_deletions(&self, key: &str, dels: i64) {
        self.expect(key, 0, dels);
    }

    /// An informer saw one of the expected objects appear (or a create failed: lower it too).
    pub fn creation_observed(&self, key: &str) {
        if let Some(e) = self.entries().get_mut(key) {
            e.adds -= 1;
        }
    }

    /// An informer saw one of the expected objects go (or a delete failed: lower it too).
    pub fn deletion_observed(&self, key: &str) {
        if let Some(e) = self.entries().get_mut(key) {
            e.dels -= 1;
        }
    }

    /// Forgets `key` (its owner was deleted).
    pub fn delete(&self, key: &str) {
        self.entries().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn unsatisfied_until_every_expected_event_is_observed() {
        let e = Expectations::default();
        assert!(e.satisfied("ns/rs"), "no expectations: act");
        e.expect_creations("ns/rs", 2);
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
        e.expect_deletions("ns/rs", 1);
        assert!(!e.satisfied("ns/rs"));
        e.deletion_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn expectations_expire_after_five_minutes() {
        let e = Expectations::default();
        e.expect_creations("k", 3);
        tokio::time::advance(Duration::from_secs(299)).await;
        assert!(!e.satisfied("k"));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(
            e.satisfied("k"),
            "a lost watch event must not block the controller forever"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn observing_more_than_expected_stays_satisfied_and_delete_forgets() {
        let e = Expectations::default();
        e.expect_creations("k", 1);
        e.creation_observed("k");
        e.creation_observed("k");
        assert!(e.satisfied("k"));
        e.expect_creations("k", 1);
        e.delete("k");
        assert!(e.satisfied("k"));
    }
}
