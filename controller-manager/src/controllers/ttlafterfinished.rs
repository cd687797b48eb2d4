//! The ttl-after-finished controller (upstream `pkg/controller/ttlafterfinished`): a finished Job
//! (`Complete` or `Failed`) with `ttlSecondsAfterFinished` is deleted, in the foreground, once
//! that many seconds have passed since it finished; a fresh read confirms it before deleting.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::Client;
use kube::api::{Api, DeleteParams, Preconditions};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::informer::{Delta, Store, key_of, split_key};

struct TtlAfterFinished {
    client: Client,
    jobs: Arc<Store<Job>>,
}

pub fn start(ctx: ControllerContext) {
    let jobs = ctx.factory.informer::<Job>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        jobs.add_handler(move |d: &Delta<Job>| {
            let job = d.object();
            let has_ttl = job
                .spec
                .as_ref()
                .is_some_and(|s| s.ttl_seconds_after_finished.is_some());
            if !matches!(d, Delta::Deleted(_)) && has_ttl && finish_time(job).is_some() {
                queue.add(key_of(job.as_ref()));
            }
        });
    }
    let reconciler = Arc::new(TtlAfterFinished {
        client: ctx.client.clone(),
        jobs: jobs.store(),
    });
    let workers = ctx.workers("ttl-after-finished", 5);
    ctx.run_workers(reconciler, queue, workers);
}

/// When the job finished: the `lastTransitionTime` of its true `Complete` or `Failed`
/// condition, as upstream.
fn finish_time(job: &Job) -> Option<jiff::Timestamp> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

/// How long until the job expires (zero or less: expired), if it has a TTL and finished.
fn time_left(job: &Job, now: jiff::Timestamp) -> Option<jiff::SignedDuration> {
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    let finished = finish_time(job)?;
    let expires = finished
        .checked_add(jiff::SignedDuration::from_secs(i64::from(ttl)))
        .ok()?;
    Some(expires.duration_since(now))
}

impl Reconciler for TtlAfterFinished {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(job) = self.jobs.get(key) else {
            return Ok(Action::Done);
        };
        if job.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let Some(left) = time_left(&job, jiff::Timestamp::now()) else {
            return Ok(Action::Done);
        };
        if left.is_positive() {
            let wait = Duration::try_from(left).unwrap_or(Duration::from_secs(1));
            return Ok(Action::RequeueAfter(wait));
        }
        // The cache may lag: read the job again and check it is still the one that expired.
        let (namespace, name) = split_key(key);
        let api: Api<Job> = Api::namespaced(self.client.clone(), namespace.unwrap_or_default());
        let Some(fresh) = api.get_opt(name).await? else {
            return Ok(Action::Done);
        };
        match time_left(&fresh, jiff::Timestamp::now()) {
            Some(l) if !l.is_positive() => {}
            Some(l) => {
                let wait = Duration::try_from(l).unwrap_or(Duration::from_secs(1));
                return Ok(Action::RequeueAfter(wait));
            }
            None => return Ok(Action::Done),
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: fresh.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::foreground()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(Action::Done),
            Err(e) if is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{JobCondition, JobSpec, JobStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn job(ttl: Option<i32>, condition: Option<(&str, &str)>, at: jiff::Timestamp) -> Job {
        Job {
            spec: Some(JobSpec {
                ttl_seconds_after_finished: ttl,
                ..Default::default()
            }),
            status: Some(JobStatus {
                conditions: condition.map(|(t, s)| {
                    vec![JobCondition {
                        type_: t.into(),
                        status: s.into(),
                        last_transition_time: Some(Time(at)),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn expiry_counts_from_the_finish_condition() {
        let t0: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let later = |s: i64| {
            t0.checked_add(jiff::SignedDuration::from_secs(s))
                .expect("time")
        };
        let done = job(Some(10), Some(("Complete", "True")), t0);
        assert_eq!(
            time_left(&done, later(4)),
            Some(jiff::SignedDuration::from_secs(6))
        );
        assert!(!time_left(&done, later(10)).expect("ttl").is_positive());
        let failed = job(Some(0), Some(("Failed", "True")), t0);
        assert!(!time_left(&failed, t0).expect("ttl").is_positive());
        assert_eq!(
            time_left(&job(None, Some(("Complete", "True")), t0), later(99)),
            None
        );
        assert_eq!(
            time_left(&job(Some(5), Some(("Complete", "False")), t0), later(99)),
            None
        );
        assert_eq!(time_left(&job(Some(5), None, t0), later(99)), None);
    }
}
