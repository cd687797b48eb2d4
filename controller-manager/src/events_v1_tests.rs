//! Tests of the events.k8s.io/v1 recorder against a fake sink and a hand-moved clock.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicI64, Ordering};

use super::*;

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Create(Box<Event>),
    Patch(String, String, Value),
}

/// Records calls; answers from a script of errors first (per call), then success.
#[derive(Default)]
struct FakeSink {
    calls: Mutex<Vec<Call>>,
    failures: Mutex<Vec<SinkError>>,
}

impl FakeSink {
    fn calls(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
    fn fail_next(&self, errors: Vec<SinkError>) {
        *self.failures.lock().unwrap() = errors;
    }
    fn answer(&self, call: Call, event: Event) -> Result<Event, SinkError> {
        self.calls.lock().unwrap().push(call);
        let mut f = self.failures.lock().unwrap();
        if f.is_empty() {
            Ok(event)
        } else {
            Err(f.remove(0))
        }
    }
}

impl EventSink for Arc<FakeSink> {
    fn create(&self, event: Event) -> BoxFuture<'static, Result<Event, SinkError>> {
        let r = self.answer(Call::Create(Box::new(event.clone())), event);
        Box::pin(async move { r })
    }
    fn patch(
        &self,
        namespace: String,
        name: String,
        patch: Value,
    ) -> BoxFuture<'static, Result<Event, SinkError>> {
        let r = self.answer(Call::Patch(namespace, name, patch), Event::default());
        Box::pin(async move { r })
    }
}

struct Setup {
    sink: Arc<FakeSink>,
    recorder: EventRecorderV1,
    offset: Arc<AtomicI64>,
}

fn setup() -> Setup {
    let sink = Arc::new(FakeSink::default());
    let offset = Arc::new(AtomicI64::new(0));
    let base: jiff::Timestamp = "2026-11-27T10:00:00Z".parse().unwrap();
    let o = offset.clone();
    let clock: Clock =
        Arc::new(move || base + jiff::SignedDuration::from_secs(o.load(Ordering::SeqCst)));
    let recorder = EventRecorderV1::build(
        Arc::new(sink.clone()),
        "default-scheduler",
        "default-scheduler-host",
        clock,
        Duration::from_secs(10),
    );
    Setup {
        sink,
        recorder,
        offset,
    }
}

fn pod_ref(name: &str, rv: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        resource_version: Some(rv.into()),
        ..Default::default()
    }
}

impl Setup {
    async fn record(&self, regarding: &ObjectReference, reason: &str, note: &str) {
        let related = pod_ref("preemptor", "9");
        let e = self.recorder.make_event(
            regarding,
            (reason == "Preempted").then_some(&related),
            if reason == "FailedScheduling" {
                WARNING
            } else {
                NORMAL
            },
            reason,
            "Scheduling",
            note,
        );
        self.recorder.inner.record(e).await;
    }
    fn advance(&self, secs: i64) {
        self.offset.fetch_add(secs, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_new_event_is_created_with_upstreams_fields() {
    let s = setup();
    s.record(
        &pod_ref("p", "1"),
        "Preempted",
        "Preempted by pod x on node n",
    )
    .await;
    let calls = s.sink.calls();
    let [Call::Create(e)] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    let v = serde_json::to_value(e).unwrap();
    let name = v["metadata"]["name"].as_str().unwrap();
    let nanos = name.strip_prefix("p.").unwrap();
    assert_eq!(
        i128::from_str_radix(nanos, 16).unwrap(),
        "2026-11-27T10:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_nanosecond()
    );
    assert_eq!(v["metadata"]["namespace"], "ns");
    assert_eq!(v["eventTime"], "2026-11-27T10:00:00.000000Z");
    assert_eq!(v["reportingController"], "default-scheduler");
    assert_eq!(v["reportingInstance"], "default-scheduler-host");
    assert_eq!(v["action"], "Scheduling");
    assert_eq!(v["reason"], "Preempted");
    assert_eq!(v["type"], "Normal");
    assert_eq!(v["note"], "Preempted by pod x on node n");
    assert_eq!(v["regarding"]["name"], "p");
    assert_eq!(v["related"]["name"], "preemptor");
    assert!(v.get("series").is_none());
}

#[tokio::test]
async fn repeats_become_a_series_written_once_then_counted_until_it_ends() {
    let s = setup();
    let p = pod_ref("p", "1");
    s.record(&p, "FailedScheduling", "0/1 nodes").await;
    let Call::Create(first) = s.sink.calls().remove(0) else {
        panic!()
    };
    let name = first.metadata.name.clone().unwrap();
    // The first repeat (even with another note) patches a series of 2 onto the same object.
    s.advance(10);
    s.record(&p, "FailedScheduling", "0/2 nodes").await;
    assert_eq!(
        s.sink.calls(),
        vec![Call::Patch(
            "ns".into(),
            name.clone(),
            json!({"series": {"count": 2, "lastObservedTime": "2026-11-27T10:00:10.000000Z"}})
        )]
    );
    // Later repeats are only counted.
    s.advance(10);
    s.record(&p, "FailedScheduling", "0/2 nodes").await;
    s.record(&p, "FailedScheduling", "0/2 nodes").await;
    assert!(s.sink.calls().is_empty());
    // Another reason, or another object, is another event.
    s.record(&p, "Scheduled", "ok").await;
    s.record(&pod_ref("q", "1"), "FailedScheduling", "0/2 nodes")
        .await;
    assert_eq!(s.sink.calls().len(), 2);
    // Not over yet after 5 minutes.
    s.advance(300);
    s.recorder.inner.finish_series().await;
    assert!(s.sink.calls().is_empty());
    // The refresh writes the running count.
    s.recorder.inner.refresh_series().await;
    assert_eq!(
        s.sink.calls(),
        vec![Call::Patch(
            "ns".into(),
            name.clone(),
            json!({"series": {"count": 4, "lastObservedTime": "2026-11-27T10:00:20.000000Z"}})
        )]
    );
    // Quiet for over 6 minutes: the final count is written, the singletons are dropped, and the
    // next such event is a new object.
    s.advance(61);
    s.recorder.inner.finish_series().await;
    assert_eq!(s.sink.calls().len(), 1);
    assert!(s.recorder.inner.cache().is_empty());
    s.record(&p, "FailedScheduling", "again").await;
    let calls = s.sink.calls();
    let [Call::Create(e)] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    assert_ne!(e.metadata.name.as_deref(), Some(name.as_str()));
}

#[tokio::test(start_paused = true)]
async fn a_series_whose_event_is_gone_is_created_and_failures_retry_as_upstream() {
    let s = setup();
    let p = pod_ref("p", "1");
    s.record(&p, "FailedScheduling", "m").await;
    s.sink.calls();
    // The patch finds nothing (the event expired): the series is created, with its count.
    s.sink.fail_next(vec![SinkError::NotFound]);
    s.record(&p, "FailedScheduling", "m").await;
    let calls = s.sink.calls();
    let [Call::Patch(..), Call::Create(e)] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    assert_eq!(e.series.as_ref().unwrap().count, 2);
    // An unreachable server is tried again (after ~10 s each).
    s.sink.fail_next(vec![
        SinkError::Transport("down".into()),
        SinkError::Transport("down".into()),
    ]);
    let start = tokio::time::Instant::now();
    s.record(&pod_ref("q", "1"), "Scheduled", "ok").await;
    assert_eq!(s.sink.calls().len(), 3);
    assert!(start.elapsed() >= Duration::from_secs(20));
    // A refusal is final.
    s.sink
        .fail_next(vec![SinkError::Rejected("invalid".into())]);
    s.record(&pod_ref("r", "1"), "Scheduled", "ok").await;
    assert_eq!(s.sink.calls().len(), 1);
    // So is AlreadyExists for a new event, but not for a series (the create raced the patch).
    s.sink.fail_next(vec![SinkError::AlreadyExists]);
    s.record(&pod_ref("t", "1"), "Scheduled", "ok").await;
    assert_eq!(s.sink.calls().len(), 1);
    s.sink
        .fail_next(vec![SinkError::NotFound, SinkError::AlreadyExists]);
    s.record(&pod_ref("t", "1"), "Scheduled", "ok").await;
    let calls = s.sink.calls();
    assert!(
        matches!(
            calls.as_slice(),
            [Call::Patch(..), Call::Create(_), Call::Patch(..)]
        ),
        "{calls:?}"
    );
}

#[tokio::test]
async fn only_normal_and_warning_are_recorded() {
    let s = setup();
    s.recorder
        .eventf(&pod_ref("p", "1"), None, "Odd", "R", "A", "n");
    tokio::task::yield_now().await;
    assert!(s.sink.calls().is_empty());
}

#[test]
fn long_notes_are_cut_as_kube_scheduler_does() {
    assert_eq!(truncate_note("short"), "short");
    let long = "é".repeat(600);
    let cut = truncate_note(&long);
    assert!(
        cut.len() <= NOTE_LENGTH_LIMIT && cut.ends_with(" ..."),
        "{}",
        cut.len()
    );
    assert!(cut.len() > NOTE_LENGTH_LIMIT - 6);
}
