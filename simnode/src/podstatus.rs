//! The simulated kubelet's pod status, as a pure function of the pod, its IPs and the time:
//! containers start at once (init containers first, exiting 0), run until `sim.k1s.io/run-seconds`
//! passes (then exit with `sim.k1s.io/exit-code`) or, without it, as long as their command
//! would (`k1s_apimachinery::simulated_command`: `exit 1`, `sleep 5`, `echo hi`; else until stopped), restart as
//! the restart policy says (with the
//! kubelet's crash-loop back-off), and the phase and conditions follow upstream's
//! `pkg/kubelet/status/generate.go` and `getPhase`.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
    ResourceRequirements, VolumeMountStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use k1s_apimachinery::simulated_command;
use k1s_apimachinery::simulated_command::pod::{self as pod_sandbox, PodFacts, PodSandbox};

use crate::probes;

pub const RUN_SECONDS: &str = "sim.k1s.io/run-seconds";
pub const EXIT_CODE: &str = "sim.k1s.io/exit-code";
/// Seconds the containers take to stop once the pod is deleted (default 0: at once; never more
/// than the deletion's grace period).
pub const TERMINATION_SECONDS: &str = "sim.k1s.io/termination-seconds";

/// The pod's `sim.k1s.io/termination-seconds`, 0 when absent or not a whole number.
pub fn termination_seconds(pod: &Pod) -> i64 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TERMINATION_SECONDS))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Upstream's crash-loop back-off: 10 s doubling to 5 min.
const BACKOFF_BASE: i64 = 10;
const BACKOFF_MAX: i64 = 300;

/// Conditions the kubelet owns (upstream `kubetypes.PodConditionByKubelet`).
const KUBELET_CONDITIONS: [&str; 5] = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
];

/// Where the pod runs.
#[derive(Clone, Debug)]
pub struct PodEnv {
    pub host_ip: String,
    /// The pod's IP (the host's for hostNetwork pods).
    pub pod_ip: String,
    /// The ConfigMaps and Secrets the pod needs that are missing.
    pub missing: Missing,
}

/// What the kubelet could not find to set a pod up: a volume's source (its volumes are not
/// mounted, so nothing starts) and containers' env sources (those containers cannot be created).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Missing {
    /// The volume and why it cannot be mounted (`configmap "x" not found`).
    pub volume: Option<(String, String)>,
    /// Per container: why its environment cannot be made.
    pub env: BTreeMap<String, String>,
}

impl Missing {
    pub fn any(&self) -> bool {
        self.volume.is_some() || !self.env.is_empty()
    }
}

/// How soon the kubelet looks again for what a pod is missing.
const MISSING_RETRY_SECONDS: i64 = 2;

/// What the status should be now, when to look again (a container's exit or restart, a probe),
/// and what happened on the way there (the kubelet's events, once the status is written).
#[derive(Debug)]
pub struct Desired {
    pub status: PodStatus,
    pub wake: Option<Timestamp>,
    pub happenings: Vec<Happening>,
}

/// Something the kubelet reports with events (`crate::kubeletevents` words them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Happening {
    /// A container was (re)started: its image made present, the container created and started.
    Started {
        container: String,
        init: bool,
        image: String,
        pull_policy: Option<String>,
    },
    /// A container exited and waits in crash-loop back-off before its restart.
    BackOff { container: String, init: bool },
    /// A container cannot be created from its configuration (`CreateContainerConfigError`).
    ConfigError { container: String, message: String },
    /// A volume cannot be mounted: its ConfigMap or Secret is missing.
    FailedMount { volume: String, message: String },
    /// The liveness probe failed `failures` times in a row: the container is killed.
    LivenessFailed {
        container: String,
        failures: i64,
        output: String,
        restart: bool,
    },
}

fn started_happening(c: &Container, init: bool) -> Happening {
    Happening::Started {
        container: c.name.clone(),
        init,
        image: c.image.clone().unwrap_or_default(),
        pull_policy: c.image_pull_policy.clone(),
    }
}

/// The time truncated to seconds (what the API stores), so repeated computations compare equal.
pub fn now_seconds() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now())
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// How long the pod's containers run, when the annotation says (a non-negative number).
pub fn run_seconds(pod: &Pod) -> Option<i64> {
    let v: f64 = annotation(pod, RUN_SECONDS)?.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| v.ceil() as i64)
}

pub fn exit_code(pod: &Pod) -> i32 {
    annotation(pod, EXIT_CODE)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The image as the runtime reports it (`nginx` → `docker.io/library/nginx:latest`).
pub fn normalize_image(image: &str) -> String {
    let (name, suffix) = match image.find('@') {
        Some(i) => (&image[..i], &image[i..]),
        None => (image, ""),
    };
    let mut parts: Vec<&str> = name.split('/').collect();
    let has_registry = parts.len() > 1
        && (parts[0].contains('.') || parts[0].contains(':') || parts[0] == "localhost");
    let mut out = String::new();
    if !has_registry {
        out.push_str("docker.io/");
        if parts.len() == 1 {
            out.push_str("library/");
        }
    } else {
        out.push_str(parts[0]);
        out.push('/');
        parts.remove(0);
    }
    let path = parts.join("/");
    out.push_str(&path);
    let last = path.rsplit('/').next().unwrap_or_default();
    if suffix.is_empty() && !last.contains(':') {
        out.push_str(":latest");
    }
    out.push_str(suffix);
    out
}

/// A stable fake digest of a string (64 hex digits).
pub fn digest(s: &str) -> String {
    let mut out = String::with_capacity(64);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for round in 0u64..4 {
        for b in s.bytes().chain(round.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

fn image_id(image: &str) -> String {
    let normalized = normalize_image(image);
    if normalized.contains('@') {
        return normalized;
    }
    let repo = match normalized.rfind(':') {
        Some(i) if !normalized[i..].contains('/') => &normalized[..i],
        _ => normalized.as_str(),
    };
    format!("{repo}@sha256:{}", digest(&normalized))
}

fn container_id(pod: &Pod, name: &str, restart: i32) -> String {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    format!("sim://{}", digest(&format!("{uid}/{name}/{restart}")))
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// Delay before restart number `restarts + 1`: the first restart is immediate (no back-off
/// entry yet), then 10 s, 20 s, ... up to 5 min, as the kubelet's back-off.
fn backoff(restarts: i32) -> i64 {
    if restarts <= 0 {
        return 0;
    }
    let shift = (restarts - 1).clamp(0, 10) as u32;
    (BACKOFF_BASE << shift).min(BACKOFF_MAX)
}

fn running(at: Timestamp) -> ContainerState {
    ContainerState {
        running: Some(ContainerStateRunning {
            started_at: Some(Time(at)),
        }),
        ..Default::default()
    }
}

fn terminated(code: i32, started: Timestamp, finished: Timestamp, id: &str) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code,
            message: None,
            reason: Some(if code == 0 { "Completed" } else { "Error" }.into()),
            started_at: Some(Time(started)),
            finished_at: Some(Time(finished)),
            container_id: Some(id.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn fresh_status(pod: &Pod, c: &Container, restarts: i32, state: ContainerState) -> ContainerStatus {
    let is_running = state.running.is_some();
    // The mounts the runtime reports (RecursiveReadOnlyMounts, on in 1.33): a read-only one
    // says its recursive read-only mode, Disabled unless asked for.
    let mounts: Vec<VolumeMountStatus> = c
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| {
            let read_only = m.read_only.unwrap_or(false);
            VolumeMountStatus {
                name: m.name.clone(),
                mount_path: m.mount_path.clone(),
                read_only: read_only.then_some(true),
                recursive_read_only: read_only.then(|| {
                    match m.recursive_read_only.as_deref() {
                        Some("Enabled" | "IfPossible") => "Enabled",
                        _ => "Disabled",
                    }
                    .to_string()
                }),
            }
        })
        .collect();
    ContainerStatus {
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        name: c.name.clone(),
        image: normalize_image(c.image.as_deref().unwrap_or_default()),
        image_id: image_id(c.image.as_deref().unwrap_or_default()),
        container_id: Some(container_id(pod, &c.name, restarts)),
        ready: is_running,
        started: Some(is_running),
        restart_count: restarts,
        state: Some(state),
        last_state: Some(ContainerState::default()),
        ..Default::default()
    }
}

/// How a regular container's life goes on, given its last status.
struct Life<'a> {
    run: Option<i64>,
    code: i32,
    /// The pod's restart policy.
    policy: &'a str,
    pod_ip: &'a str,
    missing: &'a Missing,
}

impl Life<'_> {
    /// Whether a container that exited with `code` restarts.
    fn restarts(&self, code: i32) -> bool {
        match self.policy {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        }
    }
}

/// A running container's `ready` and `started` now; `soon` learns when they change.
fn probed(
    c: &Container,
    s: &mut ContainerStatus,
    start: Timestamp,
    now: Timestamp,
    soon: &mut impl FnMut(Timestamp),
) {
    let started = probes::started_at(c, start);
    let ready = probes::ready_at(c, start);
    s.started = Some(now >= started);
    s.ready = now >= ready;
    for at in [started, ready] {
        if at > now {
            soon(at);
        }
    }
}

/// The waiting reason of a container the kubelet cannot create from its configuration.
const CONFIG_ERROR: &str = "CreateContainerConfigError";
/// The waiting reason of a container whose pod's volumes are not mounted yet.
const CONTAINER_CREATING: &str = "ContainerCreating";

/// Why the kubelet cannot create a container from its configuration, as it words it: a
/// `subPathExpr` naming a variable without a value, an absolute subPath, or one with `..`
/// (kubelet_pods.go makeMounts).
fn config_error(pod: &Pod, c: &Container) -> Option<String> {
    let mounts = c.volume_mounts.as_ref()?;
    if mounts
        .iter()
        .all(|m| m.sub_path_expr.is_none() && m.sub_path.is_none())
    {
        return None;
    }
    let json = serde_json::to_value(pod).ok()?;
    let facts = PodFacts::default();
    let sandbox = PodSandbox::new(&json, &c.name, &facts)?;
    let env = simulated_command::Sandbox::env(&sandbox);
    for m in mounts {
        let sub = match &m.sub_path_expr {
            Some(expr) => match pod_sandbox::expand_sub_path(expr, &env) {
                Ok(sub) => sub,
                Err(missing) => return Some(format!("missing value for {missing}")),
            },
            None => m.sub_path.clone().unwrap_or_default(),
        };
        if sub.starts_with('/') {
            return Some(format!(
                "error SubPath `{sub}` must not be an absolute path"
            ));
        }
        if sub.split('/').any(|part| part == "..") {
            return Some(format!(
                "unable to provision SubPath `{sub}`: must not contain '..'"
            ));
        }
    }
    None
}

/// When a container started at `start` stops by itself, with its exit code: its run time
/// passes (`sim.k1s.io/run-seconds`, else its command's) or its failing liveness probe kills
/// it, whichever is first.
fn end_of_run(pod: &Pod, c: &Container, life: &Life, start: Timestamp) -> Option<RunEnd> {
    // The annotations decide; else the command, when it is one whose end is known.
    let exit = match life.run {
        Some(run) => Some((start + SignedDuration::from_secs(run), life.code, None)),
        None => command_end(pod, c, start),
    };
    let kill = probes::liveness_kill(pod, c, start);
    match (exit, kill) {
        (Some((at, code, message)), Some(k)) if at <= k.at => Some(RunEnd {
            at,
            code,
            kill: None,
            message,
        }),
        (_, Some(k)) => Some(RunEnd {
            at: k.at,
            code: probes::KILLED_EXIT_CODE,
            kill: Some(k),
            message: None,
        }),
        (Some((at, code, message)), None) => Some(RunEnd {
            at,
            code,
            kill: None,
            message,
        }),
        (None, None) => None,
    }
}

/// How a container's run ends: when, its exit code, the liveness kill that ended it and its
/// termination message.
struct RunEnd {
    at: Timestamp,
    code: i32,
    kill: Option<probes::LivenessKill>,
    message: Option<String>,
}

/// How a container's command ends by itself, when that is known: when, its exit code and the
/// termination message the kubelet reports. The node sees the pod only: every file its volumes
/// reference is taken to exist.
fn command_end(
    pod: &Pod,
    c: &Container,
    start: Timestamp,
) -> Option<(Timestamp, i32, Option<String>)> {
    let json = serde_json::to_value(pod).ok()?;
    let facts = PodFacts::default();
    let sandbox = PodSandbox::new(&json, &c.name, &facts)?;
    let argv = sandbox.argv();
    let run = simulated_command::outcome(argv.iter().map(String::as_str), &sandbox)?;
    let seconds = SignedDuration::from_secs(run.ends_after?.ceil() as i64);
    let message = termination_message(c, &run, start);
    Some((start + seconds, run.code, message))
}

/// The kubelet's termination message: the file at `terminationMessagePath` (4 KiB at most),
/// else, with `FallbackToLogsOnError` and a failure, the log's last 80 lines (2 KiB at most).
fn termination_message(
    c: &Container,
    run: &simulated_command::Outcome,
    start: Timestamp,
) -> Option<String> {
    let path = c
        .termination_message_path
        .as_deref()
        .unwrap_or("/dev/termination-log");
    let path = simulated_command::clean_path(path);
    let file = run
        .written
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, content)| truncate(content, 4096, false));
    if let Some(text) = file.filter(|t| !t.is_empty()) {
        return Some(text);
    }
    let fallback = c.termination_message_policy.as_deref() == Some("FallbackToLogsOnError");
    if !fallback || run.code == 0 {
        return None;
    }
    let lines: Vec<String> = run
        .output
        .iter()
        .map(|o| simulated_command::line_text(&o.line, start, o.after_seconds))
        .collect();
    let tail = &lines[lines.len().saturating_sub(80)..];
    let mut log = tail.join("\n");
    if !run.open_last_line && !log.is_empty() {
        log.push('\n');
    }
    Some(truncate(&log, 2048, true)).filter(|t| !t.is_empty())
}

/// At most `max` bytes of `text` on a character boundary: its start, or with `keep_end` its end.
fn truncate(text: &str, max: usize, keep_end: bool) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    if keep_end {
        let mut at = text.len() - max;
        while !text.is_char_boundary(at) {
            at += 1;
        }
        text[at..].to_string()
    } else {
        let mut at = max;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text[..at].to_string()
    }
}

/// One container's status now; `wake` is lowered to its next change and `happened` learns
/// what the kubelet reports about it.
fn step(
    pod: &Pod,
    c: &Container,
    old: Option<&ContainerStatus>,
    life: &Life,
    now: Timestamp,
    wake: &mut Option<Timestamp>,
    happened: &mut Vec<Happening>,
) -> ContainerStatus {
    let mut soon = |t: Timestamp| {
        if wake.is_none_or(|w| t < w) {
            *wake = Some(t);
        }
    };
    let never_ran =
        old.is_none_or(|o| o.last_state.as_ref().is_none_or(|l| l.terminated.is_none()));
    let running_now = old.is_some_and(|o| {
        o.state
            .as_ref()
            .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
    });
    let blocked = if life.missing.volume.is_some() {
        // Volumes not mounted: the container waits to be created.
        Some((CONTAINER_CREATING, None))
    } else {
        let error = life
            .missing
            .env
            .get(&c.name)
            .cloned()
            .or_else(|| config_error(pod, c));
        error.map(|m| (CONFIG_ERROR, Some(m)))
    };
    if never_ran
        && !running_now
        && let Some((reason, message)) = blocked
    {
        let already = old
            .and_then(|o| o.state.as_ref()?.waiting.clone())
            .is_some_and(|w| w.reason.as_deref() == Some(reason) && w.message == message);
        if let (false, Some(message)) = (already, &message) {
            happened.push(Happening::ConfigError {
                container: c.name.clone(),
                message: message.clone(),
            });
        }
        let waiting = ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message,
            }),
            ..Default::default()
        };
        let mut s = fresh_status(pod, c, 0, waiting);
        s.ready = false;
        s.started = Some(false);
        return s;
    }
    let Some(old) = old.filter(|o| o.state.is_some()) else {
        // A container that exits at once (run-seconds 0) is reported on the next pass.
        if let Some(end) = end_of_run(pod, c, life, now) {
            soon(end.at);
        }
        happened.push(started_happening(c, false));
        let mut s = fresh_status(pod, c, 0, running(now));
        probed(c, &mut s, now, now, &mut soon);
        return s;
    };
    let state = old.state.clone().unwrap_or_default();
    if let Some(r) = &state.running {
        let started = r.started_at.as_ref().map_or(now, |t| t.0);
        let mut s = old.clone();
        let Some(RunEnd {
            at: end,
            code,
            kill,
            message,
        }) = end_of_run(pod, c, life, started)
        else {
            probed(c, &mut s, started, now, &mut soon);
            return s;
        };
        if now < end {
            soon(end);
            probed(c, &mut s, started, now, &mut soon);
            return s;
        }
        let id = old.container_id.clone().unwrap_or_default();
        let mut done = terminated(code, started, end, &id);
        if let Some(t) = done.terminated.as_mut() {
            t.message = message;
        }
        s.ready = false;
        s.started = Some(false);
        let restarts = life.restarts(code);
        if let Some(k) = kill {
            let output = c
                .liveness_probe
                .as_ref()
                .map(|p| probes::failure_output(p, life.pod_ip))
                .unwrap_or_default();
            happened.push(Happening::LivenessFailed {
                container: c.name.clone(),
                failures: k.failures,
                output,
                restart: restarts,
            });
        }
        if restarts {
            let delay = backoff(old.restart_count);
            let restart_at = end + SignedDuration::from_secs(delay);
            s.last_state = Some(done);
            s.state = Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("CrashLoopBackOff".into()),
                    message: Some(format!(
                        "back-off {delay}s restarting failed container={} pod={}_{}({})",
                        c.name,
                        pod.metadata.name.as_deref().unwrap_or_default(),
                        pod.metadata.namespace.as_deref().unwrap_or_default(),
                        pod.metadata.uid.as_deref().unwrap_or_default(),
                    )),
                }),
                ..Default::default()
            });
            if now >= restart_at {
                return step(pod, c, Some(&s), life, now, wake, happened);
            }
            happened.push(Happening::BackOff {
                container: c.name.clone(),
                init: false,
            });
            soon(restart_at);
        } else {
            s.state = Some(done);
        }
        return s;
    }
    if state.waiting.is_some() {
        let finished = old
            .last_state
            .as_ref()
            .and_then(|l| l.terminated.as_ref())
            .and_then(|t| t.finished_at.as_ref())
            .map(|t| t.0);
        let Some(finished) = finished else {
            // Waiting without a previous run (not ours): start it.
            happened.push(started_happening(c, false));
            let mut s = fresh_status(pod, c, old.restart_count, running(now));
            probed(c, &mut s, now, now, &mut soon);
            return s;
        };
        let restart_at = finished + SignedDuration::from_secs(backoff(old.restart_count));
        if now < restart_at {
            soon(restart_at);
            return old.clone();
        }
        let count = old.restart_count + 1;
        let mut s = fresh_status(pod, c, count, running(now));
        s.last_state = old.last_state.clone();
        if let Some(end) = end_of_run(pod, c, life, now) {
            soon(end.at);
        }
        probed(c, &mut s, now, now, &mut soon);
        happened.push(started_happening(c, false));
        return s;
    }
    old.clone()
}

/// What the kubelet reports of a container's resources (InPlacePodVerticalScaling): the
/// requests it allocated, and the cpu and memory requests and limits applied. A simulated
/// node applies a resize (`pods/resize`) at once, so both follow the spec.
fn report_resources(c: &Container, s: &mut ContainerStatus) {
    let spec = c.resources.clone().unwrap_or_default();
    let cpu_and_memory = |list: Option<BTreeMap<String, Quantity>>| {
        let list: BTreeMap<String, Quantity> = list
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k == "cpu" || k == "memory")
            .collect();
        (!list.is_empty()).then_some(list)
    };
    let applied = ResourceRequirements {
        limits: cpu_and_memory(spec.limits),
        requests: cpu_and_memory(spec.requests.clone()),
        ..Default::default()
    };
    s.allocated_resources = spec.requests.filter(|r| !r.is_empty());
    s.resources = (applied.limits.is_some() || applied.requests.is_some()).then_some(applied);
}

fn find<'a>(list: Option<&'a Vec<ContainerStatus>>, name: &str) -> Option<&'a ContainerStatus> {
    list?.iter().find(|s| s.name == name)
}

fn is_waiting(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.waiting.is_some())
}

fn is_terminated(s: &ContainerStatus) -> Option<i32> {
    s.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code)
}

fn condition(
    type_: &str,
    status: bool,
    reason: Option<&str>,
    message: Option<String>,
) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.map(Into::into),
        message,
        ..Default::default()
    }
}

/// The status the simulated kubelet reports for `pod` now (the pod is not being deleted). A
/// pod active longer than its `activeDeadlineSeconds` is stopped and Failed with reason
/// `DeadlineExceeded`, as the kubelet's activeDeadlineHandler does.
pub fn desired(pod: &Pod, env: &PodEnv, now: Timestamp) -> Desired {
    let mut d = live(pod, env, now);
    let deadline = pod.spec.as_ref().and_then(|s| s.active_deadline_seconds);
    let started = d.status.start_time.as_ref().map(|t| t.0);
    let (Some(deadline), Some(started)) = (deadline, started) else {
        return d;
    };
    if d.status.phase.as_deref() != Some("Running") {
        return d;
    }
    let due = started + SignedDuration::from_secs(deadline);
    if now < due {
        d.wake = Some(d.wake.map_or(due, |w| w.min(due)));
        return d;
    }
    stop_containers(&mut d.status, now);
    d.status.phase = Some("Failed".into());
    d.status.reason = Some("DeadlineExceeded".into());
    d.status.message = Some("Pod was active on the node longer than the specified deadline".into());
    flip_conditions(&mut d.status, "PodFailed", now);
    d.wake = None;
    d
}

/// The status of a pod whose containers go on living (no deletion, no deadline).
fn live(pod: &Pod, env: &PodEnv, now: Timestamp) -> Desired {
    let spec = pod.spec.clone().unwrap_or_default();
    let old = pod.status.clone().unwrap_or_default();
    let policy = spec.restart_policy.as_deref().unwrap_or("Always");
    let run = run_seconds(pod);
    let code = exit_code(pod);
    let life = Life {
        run,
        code,
        policy,
        pod_ip: &env.pod_ip,
        missing: &env.missing,
    };
    let mut wake = None;
    let mut happenings = Vec::new();
    let started_at = old.start_time.as_ref().map_or(now, |t| t.0);

    // Init containers ran (and exited 0) when the pod started; sidecars keep running.
    let mut init_statuses = Vec::new();
    for c in spec.init_containers.iter().flatten() {
        let prev = find(old.init_container_statuses.as_ref(), &c.name);
        if prev.is_none_or(is_waiting) && env.missing.volume.is_none() {
            happenings.push(started_happening(c, true));
        }
        let s = match prev {
            Some(p) if !is_waiting(p) => p.clone(),
            _ if env.missing.volume.is_some() => {
                let waiting = ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some("PodInitializing".into()),
                        message: None,
                    }),
                    ..Default::default()
                };
                let mut s = fresh_status(pod, c, 0, waiting);
                s.ready = false;
                s.started = Some(false);
                s
            }
            Some(p) => p.clone(),
            None if is_sidecar(c) => fresh_status(pod, c, 0, running(started_at)),
            None => {
                let mut s = fresh_status(pod, c, 0, ContainerState::default());
                let id = s.container_id.clone().unwrap_or_default();
                s.state = Some(terminated(0, started_at, started_at, &id));
                s.ready = false;
                s.started = Some(false);
                s
            }
        };
        init_statuses.push(s);
    }
    let mut statuses = Vec::new();
    for c in &spec.containers {
        let prev = find(old.container_statuses.as_ref(), &c.name);
        let mut s = step(pod, c, prev, &life, now, &mut wake, &mut happenings);
        report_resources(c, &mut s);
        statuses.push(s);
    }
    for (c, s) in spec
        .init_containers
        .iter()
        .flatten()
        .zip(init_statuses.iter_mut())
        .filter(|(c, _)| is_sidecar(c))
    {
        report_resources(c, s);
    }
    // Ephemeral containers (`kubectl debug`) start when they are added, and never count as
    // ready. Their spec shares the Container fields it has.
    let mut ephemeral_statuses = Vec::new();
    for e in spec.ephemeral_containers.iter().flatten() {
        let status = match find(old.ephemeral_container_statuses.as_ref(), &e.name) {
            Some(p) => p.clone(),
            None => {
                let Ok(c) = serde_json::to_value(e).and_then(serde_json::from_value::<Container>)
                else {
                    continue;
                };
                happenings.push(started_happening(&c, false));
                let mut s = fresh_status(pod, &c, 0, running(now));
                s.ready = false;
                s
            }
        };
        ephemeral_statuses.push(status);
    }
    let all_stopped = !statuses.is_empty() && statuses.iter().all(|s| is_terminated(s).is_some());
    let none_created = statuses.iter().any(|s| {
        let reason = s
            .state
            .as_ref()
            .and_then(|st| st.waiting.as_ref())
            .and_then(|w| w.reason.as_deref());
        matches!(reason, Some(CONFIG_ERROR | CONTAINER_CREATING))
    }) && statuses.iter().all(is_waiting);
    if env.missing.any() {
        // The kubelet looks for what is missing again.
        let again = now + SignedDuration::from_secs(MISSING_RETRY_SECONDS);
        wake = Some(wake.map_or(again, |w: Timestamp| w.min(again)));
    }
    if let Some((volume, message)) = &env.missing.volume {
        let first = old.container_statuses.as_ref().is_none_or(|l| {
            !l.iter().any(|s| {
                s.state
                    .as_ref()
                    .and_then(|st| st.waiting.as_ref())
                    .and_then(|w| w.reason.as_deref())
                    == Some(CONTAINER_CREATING)
            })
        });
        if first {
            happenings.push(Happening::FailedMount {
                volume: volume.clone(),
                message: message.clone(),
            });
        }
    }
    let phase = if none_created {
        "Pending"
    } else if all_stopped {
        if statuses.iter().all(|s| is_terminated(s) == Some(0)) {
            "Succeeded"
        } else {
            "Failed"
        }
    } else {
        "Running"
    };
    let terminal = matches!(phase, "Succeeded" | "Failed");
    if terminal {
        // The kubelet stops sidecars once the main containers are done.
        let finished = statuses
            .iter()
            .filter_map(|s| s.state.as_ref()?.terminated.as_ref()?.finished_at.clone())
            .map(|t| t.0)
            .max()
            .unwrap_or(now);
        for s in init_statuses.iter_mut() {
            if let Some(r) = s.state.as_ref().and_then(|st| st.running.as_ref()) {
                let started = r.started_at.as_ref().map_or(finished, |t| t.0);
                let id = s.container_id.clone().unwrap_or_default();
                s.state = Some(terminated(0, started, finished, &id));
                s.ready = false;
                s.started = Some(false);
            }
        }
        wake = None;
    }

    // Conditions, in the kubelet's order; others' conditions are kept ahead of them.
    let mut conditions: Vec<PodCondition> = Vec::new();
    let unmounted = env.missing.volume.is_some();
    conditions.push(condition(
        "PodReadyToStartContainers",
        !terminal && !unmounted,
        None,
        None,
    ));
    let uninitialized: Vec<&str> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    conditions.push(if phase == "Succeeded" {
        condition("Initialized", true, Some("PodCompleted"), None)
    } else if unmounted && !uninitialized.is_empty() {
        condition(
            "Initialized",
            false,
            Some("ContainersNotInitialized"),
            Some(format!(
                "containers with incomplete status: [{}]",
                uninitialized.join(" ")
            )),
        )
    } else {
        condition("Initialized", true, None, None)
    });
    let unready: Vec<&str> = spec
        .init_containers
        .iter()
        .flatten()
        .zip(&init_statuses)
        .filter(|(c, s)| is_sidecar(c) && !s.ready)
        .map(|(c, _)| c.name.as_str())
        .chain(
            statuses
                .iter()
                .filter(|s| !s.ready)
                .map(|s| s.name.as_str()),
        )
        .collect();
    let containers_ready = match phase {
        "Succeeded" => condition("ContainersReady", false, Some("PodCompleted"), None),
        "Failed" => condition("ContainersReady", false, Some("PodFailed"), None),
        _ if !unready.is_empty() => condition(
            "ContainersReady",
            false,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        ),
        _ => condition("ContainersReady", true, None, None),
    };
    let ready = if containers_ready.status != "True" {
        PodCondition {
            type_: "Ready".into(),
            ..containers_ready.clone()
        }
    } else {
        let mut msgs = Vec::new();
        for gate in spec.readiness_gates.iter().flatten() {
            let t = &gate.condition_type;
            match old.conditions.iter().flatten().find(|c| &c.type_ == t) {
                None => msgs.push(format!(
                    "corresponding condition of pod readiness gate {t:?} does not exist."
                )),
                Some(c) if c.status != "True" => msgs.push(format!(
                    "the status of pod readiness gate {t:?} is not \"True\", but {}",
                    c.status
                )),
                Some(_) => {}
            }
        }
        if msgs.is_empty() {
            condition("Ready", true, None, None)
        } else {
            condition(
                "Ready",
                false,
                Some("ReadinessGatesNotReady"),
                Some(msgs.join(", ")),
            )
        }
    };
    conditions.push(ready);
    conditions.push(containers_ready);
    conditions.push(condition("PodScheduled", true, None, None));
    // Transition times: kept while the status stays, now when it changes.
    for c in &mut conditions {
        let prev = old.conditions.iter().flatten().find(|o| o.type_ == c.type_);
        c.last_transition_time = match prev {
            Some(p) if p.status == c.status => p.last_transition_time.clone().or(Some(Time(now))),
            _ => Some(Time(now)),
        };
    }
    let mut all: Vec<PodCondition> = old
        .conditions
        .iter()
        .flatten()
        .filter(|c| !KUBELET_CONDITIONS.contains(&c.type_.as_str()))
        .cloned()
        .collect();
    all.extend(conditions);

    let status = PodStatus {
        phase: Some(phase.into()),
        conditions: Some(all),
        host_ip: Some(env.host_ip.clone()),
        host_ips: Some(vec![HostIP {
            ip: env.host_ip.clone(),
        }]),
        pod_ip: Some(env.pod_ip.clone()),
        pod_ips: Some(vec![PodIP {
            ip: env.pod_ip.clone(),
        }]),
        start_time: Some(Time(started_at)),
        qos_class: old
            .qos_class
            .clone()
            .or_else(|| Some(qos_class(pod).into())),
        init_container_statuses: (!init_statuses.is_empty()).then_some(init_statuses),
        container_statuses: Some(statuses),
        ephemeral_container_statuses: (!ephemeral_statuses.is_empty())
            .then_some(ephemeral_statuses),
        ..old
    };
    Desired {
        status,
        wake,
        happenings,
    }
}

/// The status once the kubelet has stopped every container of a pod being deleted: containers
/// exit 0 (they honour SIGTERM), and the phase is terminal (upstream's `getPhase` with
/// `podIsTerminal`).
pub fn stopped(pod: &Pod, env: &PodEnv, now: Timestamp) -> PodStatus {
    let mut status = live(pod, env, now).status;
    stop_containers(&mut status, now);
    let statuses = status.container_statuses.clone().unwrap_or_default();
    let failed = statuses
        .iter()
        .any(|s| is_terminated(s).is_none_or(|c| c != 0));
    let phase = if failed { "Failed" } else { "Succeeded" };
    status.phase = Some(phase.into());
    let reason = if failed { "PodFailed" } else { "PodCompleted" };
    flip_conditions(&mut status, reason, now);
    status
}

/// Every running container stops at `now`, exiting 0 (simulated containers honour SIGTERM); one
/// waiting to restart keeps its last termination.
fn stop_containers(status: &mut PodStatus, now: Timestamp) {
    for s in status
        .container_statuses
        .iter_mut()
        .flatten()
        .chain(status.init_container_statuses.iter_mut().flatten())
    {
        let Some(r) = s.state.as_ref().and_then(|st| st.running.clone()) else {
            if s.state.as_ref().is_some_and(|st| st.waiting.is_some())
                && let Some(last) = s.last_state.clone().filter(|l| l.terminated.is_some())
            {
                s.state = Some(last);
            }
            continue;
        };
        let started = r.started_at.map_or(now, |t| t.0);
        let id = s.container_id.clone().unwrap_or_default();
        s.state = Some(terminated(0, started, now, &id));
        s.ready = false;
        s.started = Some(false);
    }
}

/// A terminal pod's conditions: not ready (with `reason`), no sandbox.
fn flip_conditions(status: &mut PodStatus, reason: &str, now: Timestamp) {
    for c in status.conditions.iter_mut().flatten() {
        let flip = match c.type_.as_str() {
            "Ready" | "ContainersReady" => Some((false, Some(reason))),
            "PodReadyToStartContainers" => Some((false, None)),
            _ => None,
        };
        if let Some((value, reason)) = flip {
            let value = if value { "True" } else { "False" };
            if c.status != value {
                c.last_transition_time = Some(Time(now));
            }
            c.status = value.into();
            c.reason = reason.map(Into::into);
            c.message = None;
        }
    }
}

/// Upstream's QoS class from requests and limits of every container.
pub fn qos_class(pod: &Pod) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else {
        return "BestEffort";
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        let res = c.resources.clone().unwrap_or_default();
        let req = res.requests.unwrap_or_default();
        let lim = res.limits.unwrap_or_default();
        let nonzero = |q: &Quantity| !q.0.trim_start_matches(['0', '.']).is_empty();
        any |= ["cpu", "memory"]
            .iter()
            .any(|k| req.get(*k).is_some_and(nonzero) || lim.get(*k).is_some_and(nonzero));
        for k in ["cpu", "memory"] {
            match (req.get(k), lim.get(k)) {
                (_, None) => guaranteed = false,
                (Some(r), Some(l)) if r.0 != l.0 => guaranteed = false,
                _ => {}
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests;
