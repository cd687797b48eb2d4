//! The simulated kubelet's events, in upstream 1.33's words (`pkg/kubelet/events/event.go`,
//! `images/image_manager.go`, `kuberuntime/kuberuntime_container.go`, `prober/prober.go`):
//! core/v1 Events from `source.component: kubelet`, `source.host: <node>` about the pod with
//! the container's `fieldPath`, written in order through a per-node recorder with client-go's
//! 1,000-event queue, at the kubelet's `eventRecordQPS` 50 / `eventBurst` 100 shared by all the
//! nodes of a process (100 simulated nodes must not write as 100 kubelets would).

use std::collections::HashSet;
use std::sync::Mutex;

use k1s_controller_manager::events::{
    EventLimit, EventRate, EventRecorder, NORMAL, WARNING, object_reference,
};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};

use crate::podstatus::{Happening, digest};

/// The kubelet's defaults (`eventRecordQPS`, `eventBurst`; client-go's `maxQueuedEvents`).
pub const EVENT_QPS: f64 = 50.0;
pub const EVENT_BURST: u32 = 100;
pub const EVENT_QUEUE: usize = 1000;

/// The event budget of a process's simulated nodes.
pub fn event_limit() -> EventLimit {
    EventLimit {
        rate: EventRate::new(EVENT_QPS, EVENT_BURST),
        queue: EVENT_QUEUE,
    }
}

/// One event, ready to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletEvent {
    pub field_path: String,
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
}

fn field_path(container: &str, init: bool) -> String {
    if init {
        format!("spec.initContainers{{{container}}}")
    } else {
        format!("spec.containers{{{container}}}")
    }
}

/// Upstream's `format.Pod`: `name_namespace(uid)`.
pub fn format_pod(pod: &Pod) -> String {
    format!(
        "{}_{}({})",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.uid.as_deref().unwrap_or_default()
    )
}

/// A plausible, stable image size in bytes (the simulation pulls nothing).
fn image_size(image: &str) -> u64 {
    let d = digest(image);
    let n = u64::from_str_radix(&d[..8], 16).unwrap_or(0);
    20_000_000 + n % 180_000_000
}

/// The node's images, as its runtime would keep them once pulled.
#[derive(Debug, Default)]
pub struct Images(Mutex<HashSet<String>>);

impl Images {
    /// Whether the image was on the node, recording it as present from now on.
    fn pull(&self, image: &str) -> bool {
        let mut set = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        !set.insert(crate::podstatus::normalize_image(image))
    }
}

/// The events of one happening, in the order the kubelet records them.
pub fn events_for(pod: &Pod, happening: &Happening, images: &Images) -> Vec<KubeletEvent> {
    let ev = |container: &str, init: bool, type_, reason, message: String| KubeletEvent {
        field_path: field_path(container, init),
        type_,
        reason,
        message,
    };
    match happening {
        Happening::Started {
            container,
            init,
            image,
            pull_policy,
        } => {
            let present = images.pull(image);
            let pull = match pull_policy.as_deref() {
                Some("Always") => true,
                Some("Never") => false,
                _ => !present,
            };
            let mut out = Vec::with_capacity(4);
            if pull {
                out.push(ev(
                    container,
                    *init,
                    NORMAL,
                    "Pulling",
                    format!("Pulling image {image:?}"),
                ));
                out.push(ev(
                    container,
                    *init,
                    NORMAL,
                    "Pulled",
                    format!(
                        "Successfully pulled image {image:?} in 0s (0s including waiting). Image size: {} bytes.",
                        image_size(image)
                    ),
                ));
            } else {
                // Pull policy Never finds every image present: a simulated node has them all.
                out.push(ev(
                    container,
                    *init,
                    NORMAL,
                    "Pulled",
                    format!("Container image {image:?} already present on machine"),
                ));
            }
            out.push(ev(
                container,
                *init,
                NORMAL,
                "Created",
                format!("Created container: {container}"),
            ));
            out.push(ev(
                container,
                *init,
                NORMAL,
                "Started",
                format!("Started container {container}"),
            ));
            out
        }
        Happening::BackOff { container, init } => vec![ev(
            container,
            *init,
            WARNING,
            "BackOff",
            format!(
                "Back-off restarting failed container {container} in pod {}",
                format_pod(pod)
            ),
        )],
        Happening::ConfigError { container, message } => vec![ev(
            container,
            false,
            WARNING,
            "Failed",
            format!("Error: {message}"),
        )],
        Happening::FailedMount { volume, message } => vec![KubeletEvent {
            field_path: String::new(),
            type_: WARNING,
            reason: "FailedMount",
            message: format!("MountVolume.SetUp failed for volume {volume:?} : {message}"),
        }],
        Happening::LivenessFailed {
            container,
            failures,
            output,
            restart,
        } => {
            let unhealthy = ev(
                container,
                false,
                WARNING,
                "Unhealthy",
                format!("Liveness probe failed: {output}"),
            );
            let mut out = vec![unhealthy; usize::try_from(*failures).unwrap_or(1).clamp(1, 10)];
            let mut message = format!("Container {container} failed liveness probe");
            if *restart {
                message.push_str(", will be restarted");
            }
            out.push(ev(container, false, NORMAL, "Killing", message));
            out
        }
    }
}

/// The `Killing` events of a pod being deleted: one per running container.
pub fn killing(pod: &Pod) -> Vec<KubeletEvent> {
    let Some(status) = pod.status.as_ref() else {
        return Vec::new();
    };
    let running = |s: &&k8s_openapi::api::core::v1::ContainerStatus| {
        s.state.as_ref().is_some_and(|st| st.running.is_some())
    };
    let init = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(running)
        .map(|s| (s.name.as_str(), true));
    let regular = status
        .container_statuses
        .iter()
        .flatten()
        .filter(running)
        .map(|s| (s.name.as_str(), false));
    // The kubelet stops regular containers first, then sidecars.
    regular
        .chain(init)
        .map(|(name, init)| KubeletEvent {
            field_path: field_path(name, init),
            type_: NORMAL,
            reason: "Killing",
            message: format!("Stopping container {name}"),
        })
        .collect()
}

/// The kubelet's `FailedCreatePodSandBox` when the node's pod CIDR has no address left: the
/// error containerd passes on from the CNI's host-local IPAM, whose range is the CIDR's hosts.
pub fn sandbox_failed(pod: &Pod, cidr: &crate::cidr::Cidr) -> KubeletEvent {
    let size = 1u64 << (32 - u32::from(cidr.prefix.min(32)));
    let host = |offset: u64| std::net::Ipv4Addr::from(cidr.base.wrapping_add(offset as u32));
    let (first, last) = (host(1), host(size.saturating_sub(2)));
    let sandbox = digest(pod.metadata.uid.as_deref().unwrap_or_default());
    KubeletEvent {
        field_path: String::new(),
        type_: WARNING,
        reason: "FailedCreatePodSandBox",
        message: format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup \
             network for sandbox \"{sandbox}\": plugin type=\"host-local\" failed (add): failed \
             to allocate for range 0: no IP addresses available in range set: {first}-{last}"
        ),
    }
}

/// The kubelet refused the pod at admission (upstream's rejectPod: a Warning with the
/// predicate's reason).
pub fn rejected(reason: &'static str, message: &str) -> KubeletEvent {
    KubeletEvent {
        field_path: String::new(),
        type_: WARNING,
        reason,
        message: message.to_string(),
    }
}

/// Records the events about `pod` (a reference with the container's field path, if any).
pub fn record(recorder: &EventRecorder, pod: &Pod, events: Vec<KubeletEvent>) {
    if events.is_empty() {
        return;
    }
    let base = object_reference(pod);
    for e in events {
        let object = ObjectReference {
            field_path: Some(e.field_path).filter(|f| !f.is_empty()),
            ..base.clone()
        };
        recorder.event(&object, e.type_, e.reason, &e.message);
    }
}

/// The kubelet's recorder for one node, within the process's budget `limit`.
pub fn recorder(client: kube::Client, node: &str, limit: &EventLimit) -> EventRecorder {
    EventRecorder::limited(client, "kubelet", node, limit.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("web".into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some("u-1".into());
        p
    }

    fn started(policy: Option<&str>) -> Happening {
        Happening::Started {
            container: "nginx".into(),
            init: false,
            image: "nginx".into(),
            pull_policy: policy.map(Into::into),
        }
    }

    fn reasons(events: &[KubeletEvent]) -> Vec<&str> {
        events.iter().map(|e| e.reason).collect()
    }

    #[test]
    fn a_start_pulls_then_finds_the_image_present() {
        let images = Images::default();
        let first = events_for(&pod(), &started(Some("IfNotPresent")), &images);
        assert_eq!(reasons(&first), ["Pulling", "Pulled", "Created", "Started"]);
        assert_eq!(first[0].message, "Pulling image \"nginx\"");
        assert!(
            first[1].message.starts_with(
                "Successfully pulled image \"nginx\" in 0s (0s including waiting). Image size: "
            ),
            "{}",
            first[1].message
        );
        assert_eq!(first[2].message, "Created container: nginx");
        assert_eq!(first[3].message, "Started container nginx");
        assert_eq!(first[3].field_path, "spec.containers{nginx}");
        let again = events_for(&pod(), &started(Some("IfNotPresent")), &images);
        assert_eq!(reasons(&again), ["Pulled", "Created", "Started"]);
        assert_eq!(
            again[0].message,
            "Container image \"nginx\" already present on machine"
        );
        // Always pulls every time; Never never does.
        let always = events_for(&pod(), &started(Some("Always")), &images);
        assert_eq!(
            reasons(&always),
            ["Pulling", "Pulled", "Created", "Started"]
        );
        let never = events_for(&pod(), &started(Some("Never")), &Images::default());
        assert_eq!(reasons(&never), ["Pulled", "Created", "Started"]);
    }

    #[test]
    fn back_off_liveness_and_killing_in_upstream_words() {
        let images = Images::default();
        let e = events_for(
            &pod(),
            &Happening::BackOff {
                container: "init".into(),
                init: true,
            },
            &images,
        );
        assert_eq!(e[0].type_, WARNING);
        assert_eq!(e[0].field_path, "spec.initContainers{init}");
        assert_eq!(
            e[0].message,
            "Back-off restarting failed container init in pod web_default(u-1)"
        );
        let e = events_for(
            &pod(),
            &Happening::LivenessFailed {
                container: "c".into(),
                failures: 3,
                output: "HTTP probe failed with statuscode: 500".into(),
                restart: true,
            },
            &images,
        );
        assert_eq!(
            reasons(&e),
            ["Unhealthy", "Unhealthy", "Unhealthy", "Killing"]
        );
        assert_eq!(
            e[0].message,
            "Liveness probe failed: HTTP probe failed with statuscode: 500"
        );
        assert_eq!(
            e[3].message,
            "Container c failed liveness probe, will be restarted"
        );

        let mut p = pod();
        p.status = Some(k8s_openapi::api::core::v1::PodStatus {
            container_statuses: Some(vec![k8s_openapi::api::core::v1::ContainerStatus {
                name: "c".into(),
                state: Some(k8s_openapi::api::core::v1::ContainerState {
                    running: Some(Default::default()),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let k = killing(&p);
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].message, "Stopping container c");
    }

    #[test]
    fn a_full_pod_cidr_fails_the_sandbox_as_containerd_says() {
        let cidr = crate::cidr::Cidr::parse("10.244.3.0/24").expect("test value");
        let e = sandbox_failed(&pod(), &cidr);
        assert_eq!((e.type_, e.reason), (WARNING, "FailedCreatePodSandBox"));
        assert!(e.field_path.is_empty(), "about the pod, not a container");
        let sandbox = digest("u-1");
        assert_eq!(sandbox.len(), 64);
        assert_eq!(
            e.message,
            format!(
                "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"{sandbox}\": plugin type=\"host-local\" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.244.3.1-10.244.3.254"
            )
        );
    }
}
