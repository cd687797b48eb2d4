//! The cronjob controller (upstream `pkg/controller/cronjob`, ControllerV2): at each scheduled
//! time (in `spec.timeZone` or a `CRON_TZ=` prefix, else UTC) a CronJob starts a Job named
//! `<cronjob>-<minutes since the epoch>`, honouring `startingDeadlineSeconds`,
//! `concurrencyPolicy` and `suspend`; it tracks `status.active`, `lastScheduleTime` and
//! `lastSuccessfulTime`, trims finished Jobs beyond the history limits, and requeues itself
//! precisely at the next scheduled time.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use k1s_apimachinery::cron::{self, Schedule};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::controllers::controller_utils::{controller_ref, new_controller_ref};
use crate::events::{EventRecorder, object_reference};
use crate::informer::{Delta, Store, key_of, split_key};

/// The annotation recording a Job's scheduled time.
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// Upstream's nextScheduleDelta: wake a little after the scheduled time.
const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

struct CronJobController {
    client: Client,
    cronjobs: Arc<Store<CronJob>>,
    jobs: Arc<Store<Job>>,
    recorder: EventRecorder,
}

fn cronjob_key_of(job: &Job) -> Option<String> {
    let r = controller_ref(&job.metadata)?;
    (r.kind == "CronJob" && r.api_version.starts_with("batch/")).then(|| {
        format!(
            "{}/{}",
            job.metadata.namespace.as_deref().unwrap_or_default(),
            r.name
        )
    })
}

pub fn start(ctx: ControllerContext) {
    let cronjobs = ctx.factory.informer::<CronJob>();
    let jobs = ctx.factory.informer::<Job>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        cronjobs.add_handler(move |d: &Delta<CronJob>| {
            if !matches!(d, Delta::Deleted(_)) {
                queue.add(key_of(d.object().as_ref()));
            }
        });
    }
    {
        let queue = queue.clone();
        jobs.add_handler(move |d: &Delta<Job>| {
            if let Some(k) = cronjob_key_of(d.object()) {
                queue.add(k);
            }
            if let Delta::Updated { old, .. } = d
                && let Some(k) = cronjob_key_of(old)
            {
                queue.add(k);
            }
        });
    }
    let reconciler = Arc::new(CronJobController {
        client: ctx.client.clone(),
        cronjobs: cronjobs.store(),
        jobs: jobs.store(),
        recorder: ctx.recorder.clone(),
    });
    let workers = ctx.workers("cronjob", 5);
    ctx.run_workers(reconciler, queue, workers);
}

/// A schedule with the time zone it is evaluated in.
#[derive(Debug, Clone)]
pub struct ZonedSchedule {
    schedule: Schedule,
    tz: jiff::tz::TimeZone,
}

impl ZonedSchedule {
    /// Parses `schedule` (an optional `CRON_TZ=`/`TZ=` prefix) in `time_zone` (else UTC).
    pub fn parse(schedule: &str, time_zone: Option<&str>) -> Result<Self, String> {
        let mut text = schedule.trim();
        let mut zone = time_zone.map(str::to_string);
        for prefix in ["CRON_TZ=", "TZ="] {
            if let Some(rest) = text.strip_prefix(prefix) {
                let (tz, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                zone = Some(tz.to_string());
                text = rest.trim();
            }
        }
        let tz = match zone.as_deref() {
            None | Some("") => jiff::tz::TimeZone::UTC,
            Some(name) => jiff::tz::TimeZone::get(name)
                .map_err(|_| format!("provided bad location {name}: unknown time zone {name}"))?,
        };
        Ok(ZonedSchedule {
            schedule: cron::parse(text)?,
            tz,
        })
    }

    /// The first scheduled time strictly after `t` (robfig/cron's Next: whole seconds).
    pub fn next(&self, t: jiff::Timestamp) -> Option<jiff::Timestamp> {
        let secs = t.as_second();
        match &self.schedule {
            Schedule::Every(every) => {
                jiff::Timestamp::from_second(secs.checked_add(i64::try_from(*every).ok()?)?).ok()
            }
            Schedule::Cron(c) => {
                // Evaluate on the wall clock of the zone (as a naive UTC time), then map the
                // wall-clock answer back to an instant.
                let mut civil = jiff::Timestamp::from_second(secs)
                    .ok()?
                    .to_zoned(self.tz.clone())
                    .datetime();
                for _ in 0..8 {
                    let naive = chrono::NaiveDate::from_ymd_opt(
                        i32::from(civil.year()),
                        u32::try_from(civil.month()).ok()?,
                        u32::try_from(civil.day()).ok()?,
                    )?
                    .and_hms_opt(
                        u32::try_from(civil.hour()).ok()?,
                        u32::try_from(civil.minute()).ok()?,
                        u32::try_from(civil.second()).ok()?,
                    )?;
                    let next = c
                        .find_next_occurrence(&naive.and_utc(), false)
                        .ok()?
                        .naive_utc();
                    use chrono::{Datelike, Timelike};
                    civil = jiff::civil::DateTime::new(
                        i16::try_from(next.year()).ok()?,
                        i8::try_from(next.month()).ok()?,
                        i8::try_from(next.day()).ok()?,
                        i8::try_from(next.hour()).ok()?,
                        i8::try_from(next.minute()).ok()?,
                        0,
                        0,
                    )
                    .ok()?;
                    let at = self.tz.to_ambiguous_timestamp(civil).compatible().ok()?;
                    // A wall-clock time repeated by a DST change may map before `t`.
                    if at > t {
                        return Some(at);
                    }
                }
                None
            }
        }
    }
}

/// Upstream's nextScheduleTimeDuration: how long until just after the schedule following the
/// most recent one since `earliest` (the last schedule time, or creation).
fn wake_after(
    sched: &ZonedSchedule,
    earliest: jiff::Timestamp,
    now: jiff::Timestamp,
) -> Option<Duration> {
    let recent = match most_recent(sched, earliest, now) {
        Ok((recent, _)) => recent.unwrap_or(earliest),
        Err(_) => now,
    };
    let next = sched.next(recent)?;
    let wait = Duration::try_from(next.duration_since(now)).unwrap_or(Duration::ZERO);
    Some(wait + NEXT_SCHEDULE_DELTA)
}

/// RFC 3339 in `tz`, as Go writes it (`Z` for UTC).
fn format_rfc3339(t: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> String {
    let z = t.to_zoned(tz.clone());
    if z.offset().seconds() == 0 {
        z.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

/// Upstream's mostRecentScheduleTime: the latest scheduled time in (earliest, now] and roughly
/// how many were missed. `earliest` is the last schedule time (or creation), raised to
/// `now - startingDeadlineSeconds` when that is later.
pub fn most_recent(
    sched: &ZonedSchedule,
    earliest: jiff::Timestamp,
    now: jiff::Timestamp,
) -> Result<(Option<jiff::Timestamp>, i64), String> {
    let Some(t1) = sched.next(earliest) else {
        return Ok((None, 0));
    };
    if now < t1 {
        return Ok((None, 0));
    }
    let Some(t2) = sched.next(t1) else {
        return Ok((Some(t1), 1));
    };
    if now < t2 {
        return Ok((Some(t1), 1));
    }
    let between = t2.duration_since(t1).as_secs();
    if between < 1 {
        return Err("time difference between two schedules is less than 1 second".into());
    }
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / between + 1;
    // Start two intervals before the estimate and walk forward (irregular schedules).
    let mut t = t1
        .checked_add(jiff::SignedDuration::from_secs((missed - 2) * between))
        .map_err(|e| e.to_string())?;
    let mut recent = None;
    while let Some(n) = sched.next(t) {
        if n > now {
            break;
        }
        recent = Some(n);
        t = n;
    }
    Ok((recent.or(Some(t1)), missed))
}

fn is_finished(job: &Job) -> Option<&'static str> {
    let conds = job.status.as_ref()?.conditions.as_ref()?;
    for c in conds {
        if c.status == "True" {
            if c.type_ == "Complete" {
                return Some("Complete");
            }
            if c.type_ == "Failed" {
                return Some("Failed");
            }
        }
    }
    None
}

fn job_reference(job: &Job) -> ObjectReference {
    object_reference(job)
}

/// Upstream's byJobStartTime: started jobs first, oldest first, then by name.
fn by_start_time(a: &Job, b: &Job) -> std::cmp::Ordering {
    let start = |j: &Job| {
        j.status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0)
    };
    match (start(a), start(b)) {
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (x, y) if x == y => a.name_any().cmp(&b.name_any()),
        (x, y) => x.cmp(&y),
    }
}

impl Reconciler for CronJobController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(cj) = self.cronjobs.get(key) else {
            return Ok(Action::Done);
        };
        let (ns, name) = split_key(key);
        let ns = ns.unwrap_or_default();
        let cj_ref = object_reference(cj.as_ref());
        let uid = cj.metadata.uid.clone();
        let jobs: Vec<Arc<Job>> = self
            .jobs
            .list_namespace(ns)
            .into_iter()
            .filter(|j| controller_ref(&j.metadata).is_some_and(|r| Some(&r.uid) == uid.as_ref()))
            .collect();
        let mut status = cj.status.clone().unwrap_or_default();
        let old_status = status.clone();
        let mut active = status.active.take().unwrap_or_default();
        let job_api: Api<Job> = Api::namespaced(self.client.clone(), ns);

        let children: HashSet<String> =
            jobs.iter().filter_map(|j| j.metadata.uid.clone()).collect();
        // The CronJob as the API has it now, read once when the cache may be behind.
        let mut live: Option<Option<CronJob>> = None;
        for j in &jobs {
            let juid = j.metadata.uid.clone();
            let found = active.iter().any(|r| r.uid == juid);
            match is_finished(j) {
                None if !found => {
                    // Our cached status may predate the write that recorded this job: look at
                    // the CronJob itself before warning, as upstream does.
                    if live.is_none() {
                        let api: Api<CronJob> = Api::namespaced(self.client.clone(), ns);
                        live = Some(api.get_opt(name).await?);
                    }
                    let recorded = live
                        .as_ref()
                        .and_then(|c| c.as_ref()?.status.as_ref()?.active.as_ref())
                        .and_then(|a| a.iter().find(|r| r.uid == juid).cloned());
                    if let Some(reference) = recorded {
                        active.push(reference);
                        continue;
                    }
                    self.recorder.event(
                        &cj_ref,
                        "Warning",
                        "UnexpectedJob",
                        &format!(
                            "Saw a job that the controller did not create or forgot: {}",
                            j.name_any()
                        ),
                    );
                }
                Some(cond) if found => {
                    active.retain(|r| r.uid != juid);
                    self.recorder.event(
                        &cj_ref,
                        "Normal",
                        "SawCompletedJob",
                        &format!("Saw completed job: {}, condition: {cond}", j.name_any()),
                    );
                }
                _ => {}
            }
            if is_finished(j) == Some("Complete")
                && let Some(done) = j.status.as_ref().and_then(|s| s.completion_time.clone())
                && status
                    .last_successful_time
                    .as_ref()
                    .is_none_or(|l| l.0 < done.0)
            {
                status.last_successful_time = Some(done);
            }
        }
        // Active jobs that vanished (checked live) leave the list.
        let mut kept = Vec::new();
        for r in active {
            if r.uid.as_ref().is_some_and(|u| children.contains(u)) {
                kept.push(r);
                continue;
            }
            let jname = r.name.clone().unwrap_or_default();
            match job_api.get_opt(&jname).await? {
                Some(live) if live.metadata.uid == r.uid => kept.push(r),
                _ => {
                    self.recorder.event(
                        &cj_ref,
                        "Normal",
                        "MissingJob",
                        &format!("Active job went missing: {jname}"),
                    );
                }
            }
        }
        let mut active = kept;

        let requeue = if cj.metadata.deletion_timestamp.is_some() {
            None
        } else {
            self.schedule(&cj, &cj_ref, &job_api, &mut active, &mut status)
                .await?
        };

        // History limits.
        let spec = cj.spec.as_ref();
        let limits = [
            (
                "Complete",
                spec.and_then(|s| s.successful_jobs_history_limit),
            ),
            ("Failed", spec.and_then(|s| s.failed_jobs_history_limit)),
        ];
        for (cond, limit) in limits {
            let Some(limit) = limit else { continue };
            let mut finished: Vec<&Arc<Job>> = jobs
                .iter()
                .filter(|j| is_finished(j) == Some(cond))
                .collect();
            let extra = finished
                .len()
                .saturating_sub(usize::try_from(limit).unwrap_or(0));
            if extra == 0 {
                continue;
            }
            finished.sort_by(|a, b| by_start_time(a, b));
            for j in finished.into_iter().take(extra) {
                match job_api
                    .delete(&j.name_any(), &DeleteParams::background())
                    .await
                {
                    Ok(_) => {
                        active.retain(|r| r.uid != j.metadata.uid);
                        self.recorder.event(
                            &cj_ref,
                            "Normal",
                            "SuccessfulDelete",
                            &format!("Deleted job {}", j.name_any()),
                        );
                    }
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        self.recorder.event(
                            &cj_ref,
                            "Warning",
                            "FailedDelete",
                            &format!("Deleted job: {e}"),
                        );
                    }
                }
            }
        }

        status.active = (!active.is_empty()).then_some(active);
        if serde_json::to_value(&status).ok() != serde_json::to_value(&old_status).ok() {
            let mut updated = cj.as_ref().clone();
            updated.status = Some(status);
            let api: Api<CronJob> = Api::namespaced(self.client.clone(), ns);
            api.replace_status(name, &PostParams::default(), &updated)
                .await?;
        }
        Ok(requeue.map_or(Action::Done, Action::RequeueAfter))
    }
}

impl CronJobController {
    /// Starts the job due now, if any; returns when to look again.
    async fn schedule(
        &self,
        cj: &CronJob,
        cj_ref: &ObjectReference,
        job_api: &Api<Job>,
        active: &mut Vec<ObjectReference>,
        status: &mut k8s_openapi::api::batch::v1::CronJobStatus,
    ) -> Result<Option<Duration>, Error> {
        let Some(spec) = cj.spec.as_ref() else {
            return Ok(None);
        };
        if let Some(tz) = spec.time_zone.as_deref()
            && jiff::tz::TimeZone::get(tz).is_err()
        {
            self.recorder.event(
                cj_ref,
                "Warning",
                "UnknownTimeZone",
                &format!("invalid timeZone: {tz:?}: unknown time zone {tz}"),
            );
            return Ok(None);
        }
        if spec.suspend == Some(true) {
            return Ok(None);
        }
        let sched = match ZonedSchedule::parse(&spec.schedule, spec.time_zone.as_deref()) {
            Ok(s) => s,
            Err(e) => {
                self.recorder.event(
                    cj_ref,
                    "Warning",
                    "UnparseableSchedule",
                    &format!("unparseable schedule: {:?} : {e}", spec.schedule),
                );
                return Ok(None);
            }
        };
        let now = jiff::Timestamp::now();
        let created = cj.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
        let last = status.last_schedule_time.as_ref().map(|t| t.0);
        let base = last.unwrap_or(created);
        let next_wake = |now: jiff::Timestamp| wake_after(&sched, base, now);
        let mut earliest = base;
        if let Some(deadline) = spec.starting_deadline_seconds {
            let bound = now
                .checked_sub(jiff::SignedDuration::from_secs(deadline))
                .unwrap_or(now);
            earliest = earliest.max(bound);
        }
        let (scheduled, missed) = match most_recent(&sched, earliest, now) {
            Ok(r) => r,
            Err(e) => {
                self.recorder.event(
                    cj_ref,
                    "Warning",
                    "InvalidSchedule",
                    &format!("invalid schedule: {} : {e}", spec.schedule),
                );
                return Ok(None);
            }
        };
        let Some(scheduled) = scheduled.filter(|s| *s <= now) else {
            return Ok(next_wake(now));
        };
        if missed > 100 {
            self.recorder.event(
                cj_ref,
                "Warning",
                "TooManyMissedTimes",
                &format!("too many missed start times: {missed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew"),
            );
        }
        if let Some(deadline) = spec.starting_deadline_seconds
            && scheduled
                .checked_add(jiff::SignedDuration::from_secs(deadline))
                .is_ok_and(|end| end < now)
        {
            let when = scheduled
                .to_zoned(jiff::tz::TimeZone::UTC)
                .strftime("%a, %d %b %Y %H:%M:%S +0000")
                .to_string();
            self.recorder.event(
                cj_ref,
                "Warning",
                "MissSchedule",
                &format!("Missed scheduled time to start a job: {when}"),
            );
            return Ok(next_wake(now));
        }
        let job_name = format!("{}-{}", cj.name_any(), scheduled.as_second() / 60);
        // Once started, the next wake counts from this schedule.
        let next_wake = |now: jiff::Timestamp| wake_after(&sched, scheduled, now);
        if active
            .iter()
            .any(|r| r.name.as_deref() == Some(job_name.as_str()))
            || last == Some(scheduled)
        {
            return Ok(next_wake(now));
        }
        let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
        if policy == "Forbid" && !active.is_empty() {
            self.recorder.event(
                cj_ref,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            );
            return Ok(next_wake(now));
        }
        if policy == "Replace" {
            for r in std::mem::take(active) {
                let jname = r.name.clone().unwrap_or_default();
                match job_api.delete(&jname, &DeleteParams::background()).await {
                    Ok(_) => self.recorder.event(
                        cj_ref,
                        "Normal",
                        "SuccessfulDelete",
                        &format!("Deleted job {jname}"),
                    ),
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        self.recorder.event(
                            cj_ref,
                            "Warning",
                            "FailedDelete",
                            &format!("Deleted job: {e}"),
                        );
                        active.push(r);
                        return Err(e.into());
                    }
                }
            }
        }
        let template = spec.job_template.clone();
        let tmeta = template.metadata.unwrap_or_default();
        let mut annotations = tmeta.annotations.unwrap_or_default();
        let annotation_tz = match spec.time_zone.as_deref() {
            Some(tz) => jiff::tz::TimeZone::get(tz).unwrap_or(jiff::tz::TimeZone::UTC),
            None => jiff::tz::TimeZone::UTC,
        };
        annotations.insert(
            SCHEDULED_TIMESTAMP.into(),
            format_rfc3339(scheduled, &annotation_tz),
        );
        let job = Job {
            metadata: ObjectMeta {
                name: Some(job_name.clone()),
                namespace: cj.metadata.namespace.clone(),
                labels: tmeta.labels,
                annotations: Some(annotations),
                owner_references: Some(vec![new_controller_ref(cj)]),
                ..Default::default()
            },
            spec: template.spec,
            status: None,
        };
        let created = match job_api.create(&PostParams::default(), &job).await {
            Ok(j) => j,
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Created by someone else (or by us before a crash): it is accounted for.
                return Ok(next_wake(now));
            }
            Err(e) => {
                self.recorder.event(
                    cj_ref,
                    "Warning",
                    "FailedCreate",
                    &format!("Error creating job: {e}"),
                );
                return Err(e.into());
            }
        };
        self.recorder.event(
            cj_ref,
            "Normal",
            "SuccessfulCreate",
            &format!("Created job {}", created.name_any()),
        );
        active.push(job_reference(&created));
        status.last_schedule_time = Some(Time(scheduled));
        Ok(next_wake(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn next_times_in_utc_and_zones() {
        let every_minute = ZonedSchedule::parse("*/1 * * * *", None).expect("parse");
        assert_eq!(
            every_minute.next(ts("2026-03-01T10:00:30.5Z")),
            Some(ts("2026-03-01T10:01:00Z"))
        );
        assert_eq!(
            every_minute.next(ts("2026-03-01T10:01:00Z")),
            Some(ts("2026-03-01T10:02:00Z"))
        );
        // 09:00 in New York is 14:00 UTC in winter, 13:00 UTC in summer.
        let ny = ZonedSchedule::parse("0 9 * * *", Some("America/New_York")).expect("parse");
        assert_eq!(
            ny.next(ts("2026-01-10T00:00:00Z")),
            Some(ts("2026-01-10T14:00:00Z"))
        );
        assert_eq!(
            ny.next(ts("2026-07-10T00:00:00Z")),
            Some(ts("2026-07-10T13:00:00Z"))
        );
        let prefixed = ZonedSchedule::parse("CRON_TZ=Asia/Tokyo 30 0 * * *", None).expect("parse");
        assert_eq!(
            prefixed.next(ts("2026-01-10T00:00:00Z")),
            Some(ts("2026-01-10T15:30:00Z"))
        );
        let every = ZonedSchedule::parse("@every 90s", None).expect("parse");
        assert_eq!(
            every.next(ts("2026-01-10T00:00:00.7Z")),
            Some(ts("2026-01-10T00:01:30Z"))
        );
        assert!(ZonedSchedule::parse("0 9 * * *", Some("Mars/Olympus")).is_err());
        assert!(ZonedSchedule::parse("bad", None).is_err());
        // Daylight saving: 02:30 does not exist on 2026-03-08 in New York; it runs at 03:30
        // EDT (07:30 UTC), as Go's time.Date normalises.
        let gap = ZonedSchedule::parse("30 2 * * *", Some("America/New_York")).expect("parse");
        assert_eq!(
            gap.next(ts("2026-03-08T05:00:00Z")),
            Some(ts("2026-03-08T07:30:00Z"))
        );
    }

    #[test]
    fn most_recent_and_missed_counts() {
        let s = ZonedSchedule::parse("*/1 * * * *", None).expect("parse");
        let t0 = ts("2026-03-01T10:00:00Z");
        // Nothing due yet.
        assert_eq!(
            most_recent(&s, t0, ts("2026-03-01T10:00:59Z")),
            Ok((None, 0))
        );
        // One due.
        assert_eq!(
            most_recent(&s, t0, ts("2026-03-01T10:01:10Z")),
            Ok((Some(ts("2026-03-01T10:01:00Z")), 1))
        );
        // Five missed: the latest is returned.
        assert_eq!(
            most_recent(&s, t0, ts("2026-03-01T10:05:10Z")),
            Ok((Some(ts("2026-03-01T10:05:00Z")), 5))
        );
        // Hours of minutes missed: over 100.
        let (recent, missed) = most_recent(&s, t0, ts("2026-03-01T12:00:30Z")).expect("ok");
        assert_eq!(recent, Some(ts("2026-03-01T12:00:00Z")));
        assert_eq!(missed, 120);
        // Irregular schedule: every 4 hours from 6 to 16, weekdays (2026-03-02 is a Monday).
        let irregular = ZonedSchedule::parse("30 6-16/4 * * 1-5", None).expect("parse");
        let (recent, _) = most_recent(
            &irregular,
            ts("2026-03-02T00:00:00Z"),
            ts("2026-03-03T15:00:00Z"),
        )
        .expect("ok");
        assert_eq!(recent, Some(ts("2026-03-03T14:30:00Z")));
        // In a zone.
        let tokyo = ZonedSchedule::parse("0 0 * * *", Some("Asia/Tokyo")).expect("parse");
        assert_eq!(
            most_recent(
                &tokyo,
                ts("2026-03-01T00:00:00Z"),
                ts("2026-03-02T16:00:00Z")
            ),
            Ok((Some(ts("2026-03-02T15:00:00Z")), 2))
        );
    }

    #[test]
    fn scheduled_timestamps_are_rfc3339_in_the_zone() {
        let t = ts("2026-01-10T14:00:00Z");
        assert_eq!(
            format_rfc3339(t, &jiff::tz::TimeZone::UTC),
            "2026-01-10T14:00:00Z"
        );
        let ny = jiff::tz::TimeZone::get("America/New_York").expect("tz");
        assert_eq!(format_rfc3339(t, &ny), "2026-01-10T09:00:00-05:00");
    }
}
