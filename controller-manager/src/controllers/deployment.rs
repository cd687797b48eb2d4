//! The deployment controller (upstream `pkg/controller/deployment`): a Deployment rolls its pod
//! template out through ReplicaSets named `<name>-<pod-template-hash>`: RollingUpdate (within
//! maxSurge / maxUnavailable) or Recreate, revisions and their history in annotations,
//! `revisionHistoryLimit` cleanup, pausing, proportional scaling of a resize mid-rollout,
//! adoption and release of ReplicaSets, and the `Progressing` / `Available` / `ReplicaFailure`
//! conditions with `progressDeadlineSeconds`.

pub mod util;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::controllers::controller_utils::{
    claim, compute_hash, controller_ref, new_controller_ref,
};
use crate::controllers::replicaset::error_message;
use crate::controllers::selector_matches;
use crate::events::{EventRecorder, object_reference};
use crate::informer::{Delta, Store, key_of};
use util::*;

struct DeploymentController {
    client: Client,
    deployments: Arc<Store<Deployment>>,
    rss: Arc<Store<ReplicaSet>>,
    pods: Arc<Store<Pod>>,
    recorder: EventRecorder,
}

fn selector_of(d: &Deployment) -> Option<&LabelSelector> {
    d.spec.as_ref().map(|s| &s.selector)
}

fn is_empty_selector(s: Option<&LabelSelector>) -> bool {
    s.is_none_or(|l| {
        l.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && l.match_expressions.as_ref().is_none_or(Vec::is_empty)
    })
}

/// Deployments in the namespace whose selector matches `labels` (for orphaned replica sets).
fn matching_deployments(
    deployments: &Store<Deployment>,
    namespace: &str,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> Vec<String> {
    deployments
        .list_namespace(namespace)
        .into_iter()
        .filter(|d| !is_empty_selector(selector_of(d)) && selector_matches(selector_of(d), labels))
        .map(|d| key_of(d.as_ref()))
        .collect()
}

/// The deployment a controller reference points at, if it exists with that UID.
fn resolve(deployments: &Store<Deployment>, meta: &ObjectMeta) -> Option<String> {
    let r = controller_ref(meta)?;
    if r.kind != "Deployment" {
        return None;
    }
    deployments
        .get_named(meta.namespace.as_deref(), &r.name)
        .filter(|d| d.metadata.uid.as_deref() == Some(r.uid.as_str()))
        .map(|d| key_of(d.as_ref()))
}

pub fn start(ctx: ControllerContext) {
    let deployments = ctx.factory.informer::<Deployment>();
    let rss = ctx.factory.informer::<ReplicaSet>();
    let pods = ctx.factory.informer::<Pod>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        deployments.add_handler(move |d: &Delta<Deployment>| {
            queue.add(key_of(d.object().as_ref()));
        });
    }
    {
        let (queue, ds) = (queue.clone(), deployments.store());
        rss.add_handler(move |d: &Delta<ReplicaSet>| match d {
            Delta::Added(rs) | Delta::Deleted(rs) => {
                if let Some(k) = resolve(&ds, &rs.metadata) {
                    queue.add(k);
                } else if controller_ref(&rs.metadata).is_none() && matches!(d, Delta::Added(_)) {
                    let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
                    for k in matching_deployments(&ds, ns, rs.metadata.labels.as_ref()) {
                        queue.add(k);
                    }
                }
            }
            Delta::Updated { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                let (old_ref, new_ref) =
                    (controller_ref(&old.metadata), controller_ref(&new.metadata));
                if old_ref != new_ref
                    && let Some(k) = resolve(&ds, &old.metadata)
                {
                    queue.add(k);
                }
                if new_ref.is_some() {
                    if let Some(k) = resolve(&ds, &new.metadata) {
                        queue.add(k);
                    }
                    return;
                }
                if old.metadata.labels != new.metadata.labels || old_ref != new_ref {
                    let ns = new.metadata.namespace.as_deref().unwrap_or_default();
                    for k in matching_deployments(&ds, ns, new.metadata.labels.as_ref()) {
                        queue.add(k);
                    }
                }
            }
        });
    }
    {
        // A Recreate rollout waits for old pods to go: look again when one does.
        let (queue, ds, rs_store) = (queue.clone(), deployments.store(), rss.store());
        pods.add_handler(move |d: &Delta<Pod>| {
            let Delta::Deleted(pod) = d else { return };
            let Some(r) = controller_ref(&pod.metadata) else {
                return;
            };
            if r.kind != "ReplicaSet" {
                return;
            }
            let Some(rs) = rs_store.get_named(pod.metadata.namespace.as_deref(), &r.name) else {
                return;
            };
            if let Some(k) = resolve(&ds, &rs.metadata)
                && ds.get(&k).is_some_and(|d| !is_rolling(&d))
            {
                queue.add(k);
            }
        });
    }
    let controller = Arc::new(DeploymentController {
        client: ctx.client.clone(),
        deployments: deployments.store(),
        rss: rss.store(),
        pods: pods.store(),
        recorder: ctx.recorder.clone(),
    });
    let workers = ctx.workers("deployment", 5);
    ctx.run_workers(controller, queue, workers);
}

fn other_err(e: impl std::fmt::Display) -> Error {
    Error::Other(e.to_string())
}

/// Sorts replica sets oldest first (ties by name), upstream's ReplicaSetsByCreationTimestamp.
fn by_age(a: &ReplicaSet, b: &ReplicaSet) -> std::cmp::Ordering {
    let t = |r: &ReplicaSet| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
    t(a).cmp(&t(b))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

impl DeploymentController {
    fn rs_api(&self, ns: &str) -> Api<ReplicaSet> {
        Api::namespaced(self.client.clone(), ns)
    }

    fn d_api(&self, d: &Deployment) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), &d.namespace().unwrap_or_default())
    }

    fn event(&self, d: &Deployment, type_: &str, reason: &str, message: &str) {
        self.recorder
            .event(&object_reference(d), type_, reason, message);
    }

    /// Writes the deployment's status, with its annotations (the revision): as upstream's
    /// status strategy, `/status` of a deployment keeps the request's annotations.
    async fn persist(&self, d: &mut Deployment) -> Result<(), Error> {
        let api = self.d_api(d);
        *d = api
            .replace_status(&d.name_any(), &PostParams::default(), d)
            .await?;
        Ok(())
    }

    /// Replica sets the deployment owns after adopting matching orphans and releasing those
    /// that stopped matching.
    async fn claim_replica_sets(&self, d: &Deployment) -> Result<Vec<ReplicaSet>, Error> {
        let ns = d.namespace().unwrap_or_default();
        let owner = new_controller_ref(d);
        let claimed = claim(
            &self.client,
            &d.metadata,
            &owner,
            selector_of(d),
            self.rss.list_namespace(&ns),
        )
        .await?;
        Ok(claimed.into_iter().map(|r| (*r).clone()).collect())
    }

    /// Scales `rs` to `scale` (and refreshes its replicas annotations), recording
    /// ScalingReplicaSet. Returns whether the size changed and the replica set as written.
    async fn scale_rs(
        &self,
        rs: &ReplicaSet,
        scale: i32,
        d: &Deployment,
    ) -> Result<(bool, ReplicaSet), Error> {
        let old = rs_replicas(rs);
        let desired = replicas(d);
        let max = desired + max_surge(d);
        let size_changed = old != scale;
        if !size_changed && !replicas_annotations_need_update(rs, desired, max) {
            return Ok((false, rs.clone()));
        }
        let mut copy = rs.clone();
        set_rs_replicas(&mut copy, scale);
        set_replicas_annotations(&mut copy, desired, max);
        let written = self
            .rs_api(&rs.namespace().unwrap_or_default())
            .replace(&rs.name_any(), &PostParams::default(), &copy)
            .await?;
        if size_changed {
            let op = if old < scale { "up" } else { "down" };
            self.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                &format!(
                    "Scaled {op} replica set {} from {old} to {scale}",
                    written.name_any()
                ),
            );
        }
        Ok((size_changed, written))
    }

    /// Upstream's getAllReplicaSetsAndSyncRevision: the new replica set (created when
    /// `create` and missing) and the old ones; keeps revisions and annotations in step.
    async fn new_and_old(
        &self,
        d: &mut Deployment,
        rs_list: &mut [ReplicaSet],
        create: bool,
    ) -> Result<(Option<ReplicaSet>, Vec<ReplicaSet>), Error> {
        let template = d
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let mut sorted: Vec<ReplicaSet> = rs_list.to_vec();
        sorted.sort_by(by_age);
        let existing = sorted
            .iter()
            .find(|rs| {
                rs.spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .is_some_and(|t| equal_ignore_hash(t, &template))
            })
            .cloned();
        let old: Vec<ReplicaSet> = sorted
            .into_iter()
            .filter(|rs| {
                existing
                    .as_ref()
                    .is_none_or(|e| e.metadata.uid != rs.metadata.uid)
            })
            .collect();
        let new_revision = max_revision(&old) + 1;
        let ns = d.namespace().unwrap_or_default();
        if let Some(existing) = existing {
            let mut copy = existing.clone();
            let annotations_updated = set_new_rs_annotations(d, &mut copy, new_revision, true);
            let min_ready = d.spec.as_ref().and_then(|s| s.min_ready_seconds);
            let spec = copy.spec.get_or_insert_with(Default::default);
            let min_ready_changed = spec.min_ready_seconds.unwrap_or(0) != min_ready.unwrap_or(0);
            if annotations_updated || min_ready_changed {
                spec.min_ready_seconds = min_ready;
                let written = self
                    .rs_api(&ns)
                    .replace(&copy.name_any(), &PostParams::default(), &copy)
                    .await?;
                // Later steps of this sync start from what was written.
                if let Some(slot) = rs_list
                    .iter_mut()
                    .find(|r| r.metadata.uid == written.metadata.uid)
                {
                    *slot = written.clone();
                }
                return Ok((Some(written), old));
            }
            let rev = copy
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(REVISION))
                .cloned()
                .unwrap_or_default();
            let annotations = set_deployment_revision(d, &rev);
            let mut status_changed = false;
            if progress_deadline(d).is_some()
                && get_condition(
                    d.status.as_ref().unwrap_or(&Default::default()),
                    "Progressing",
                )
                .is_none()
            {
                let msg = format!("Found new replica set {:?}", copy.name_any());
                set_condition(
                    d.status.get_or_insert_with(Default::default),
                    new_condition("Progressing", "True", FOUND_NEW_RS_REASON, &msg),
                );
                status_changed = true;
            }
            if annotations || status_changed {
                self.persist(d).await?;
            }
            return Ok((Some(copy), old));
        }
        if !create {
            return Ok((None, old));
        }
        // A new replica set: the template with its hash in the labels, selector and name.
        let collision = d.status.as_ref().and_then(|s| s.collision_count);
        let hash = compute_hash(&template, collision);
        let mut new_template = template.clone();
        new_template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH.into(), hash.clone());
        let mut selector = selector_of(d).cloned().unwrap_or_default();
        selector
            .match_labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH.into(), hash.clone());
        let name = format!("{}-{hash}", d.name_any());
        let mut new_rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                owner_references: Some(vec![new_controller_ref(d)]),
                labels: new_template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.labels.clone()),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: d.spec.as_ref().and_then(|s| s.min_ready_seconds),
                selector,
                template: Some(new_template),
            }),
            status: None,
        };
        let count = {
            let all: Vec<&ReplicaSet> = old.iter().chain(std::iter::once(&new_rs)).collect();
            new_rs_new_replicas(d, &all, &new_rs)
        };
        set_rs_replicas(&mut new_rs, count);
        set_new_rs_annotations(d, &mut new_rs, new_revision, false);
        let mut already_exists = false;
        let created = match self
            .rs_api(&ns)
            .create(&PostParams::default(), &new_rs)
            .await
        {
            Ok(rs) => rs,
            Err(e) if is_conflict(&e) => {
                already_exists = true;
                // The informer may not have seen a replica set this controller created a
                // moment ago: that is no collision, so retry later as upstream does.
                let Some(found) = self.rss.get_named(Some(&ns), &name) else {
                    return Err(Error::Other(format!(
                        "replica set {name:?} exists but is not in the informer yet"
                    )));
                };
                let ours = controller_ref(&found.metadata).map(|r| r.uid.as_str())
                    == d.metadata.uid.as_deref();
                let same = found
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .is_some_and(|t| equal_ignore_hash(t, &template));
                if !(ours && same) {
                    // A hash collision: count it so the next hash differs.
                    let status = d.status.get_or_insert_with(Default::default);
                    status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
                    let _ = self.persist(d).await;
                    return Err(e.into());
                }
                (*found).clone()
            }
            Err(e) => {
                let msg = format!(
                    "Failed to create new replica set {name:?}: {}",
                    error_message(&e)
                );
                if progress_deadline(d).is_some() {
                    set_condition(
                        d.status.get_or_insert_with(Default::default),
                        new_condition("Progressing", "False", FAILED_RS_CREATE_REASON, &msg),
                    );
                    let _ = self.persist(d).await;
                }
                self.event(d, "Warning", FAILED_RS_CREATE_REASON, &msg);
                return Err(e.into());
            }
        };
        if !already_exists && count > 0 {
            self.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                &format!(
                    "Scaled up replica set {} from 0 to {count}",
                    created.name_any()
                ),
            );
        }
        let annotations = set_deployment_revision(d, &new_revision.to_string());
        let mut status_changed = false;
        if !already_exists && progress_deadline(d).is_some() {
            let msg = format!("Created new replica set {:?}", created.name_any());
            set_condition(
                d.status.get_or_insert_with(Default::default),
                new_condition("Progressing", "True", NEW_RS_REASON, &msg),
            );
            status_changed = true;
        }
        if annotations || status_changed {
            self.persist(d).await?;
        }
        Ok((Some(created), old))
    }

    /// Upstream's syncDeploymentStatus: writes the computed status when it differs.
    async fn sync_status(
        &self,
        d: &mut Deployment,
        all: &[&ReplicaSet],
        new_rs: Option<&ReplicaSet>,
    ) -> Result<(), Error> {
        let status = calculate_status(d, all, new_rs);
        if d.status.as_ref() == Some(&status) {
            return Ok(());
        }
        d.status = Some(status);
        self.persist(d).await
    }

    /// Upstream's checkPausedConditions: Progressing Unknown with DeploymentPaused /
    /// DeploymentResumed (never over a timeout).
    async fn check_paused_conditions(&self, d: &mut Deployment) -> Result<(), Error> {
        if progress_deadline(d).is_none() {
            return Ok(());
        }
        let status = d.status.clone().unwrap_or_default();
        let cond = get_condition(&status, "Progressing");
        if cond.is_some_and(|c| c.reason.as_deref() == Some(TIMED_OUT_REASON)) {
            return Ok(());
        }
        let paused_cond = cond.is_some_and(|c| c.reason.as_deref() == Some(PAUSED_REASON));
        let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
        let c = if paused && !paused_cond {
            new_condition(
                "Progressing",
                "Unknown",
                PAUSED_REASON,
                "Deployment is paused",
            )
        } else if !paused && paused_cond {
            new_condition(
                "Progressing",
                "Unknown",
                RESUMED_REASON,
                "Deployment is resumed",
            )
        } else {
            return Ok(());
        };
        set_condition(d.status.get_or_insert_with(Default::default), c);
        self.persist(d).await
    }

    /// Upstream's isScalingEvent: an active replica set's desired-replicas annotation differs
    /// from the deployment's replicas.
    async fn is_scaling_event(
        &self,
        d: &mut Deployment,
        rs_list: &mut [ReplicaSet],
    ) -> Result<bool, Error> {
        let (new_rs, old) = self.new_and_old(d, &mut *rs_list, false).await?;
        let want = replicas(d);
        Ok(old
            .iter()
            .chain(new_rs.as_ref())
            .filter(|rs| rs_replicas(rs) > 0)
            .any(|rs| desired_replicas_annotation(rs).is_some_and(|v| v != want)))
    }

    /// Upstream's sync: scaling (proportional during a rollout) and, when paused, cleanup.
    async fn sync(&self, d: &mut Deployment, rs_list: &mut [ReplicaSet]) -> Result<Action, Error> {
        let (new_rs, old) = self.new_and_old(d, &mut *rs_list, false).await?;
        let (new_rs, old) = self.scale(d, new_rs, old).await?;
        let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
        if paused {
            self.cleanup(d, &old).await?;
        }
        let all: Vec<&ReplicaSet> = old.iter().chain(new_rs.as_ref()).collect();
        self.sync_status(d, &all, new_rs.as_ref()).await?;
        Ok(Action::Done)
    }

    /// Upstream's scale.
    async fn scale(
        &self,
        d: &Deployment,
        new_rs: Option<ReplicaSet>,
        mut old: Vec<ReplicaSet>,
    ) -> Result<(Option<ReplicaSet>, Vec<ReplicaSet>), Error> {
        let want = replicas(d);
        // One active replica set (or none: the newest) takes the whole size.
        old.sort_by(|a, b| by_age(b, a));
        let active: Vec<&ReplicaSet> = old
            .iter()
            .chain(new_rs.as_ref())
            .filter(|r| rs_replicas(r) > 0)
            .collect();
        let target = match active.len() {
            0 => new_rs.as_ref().or(old.first()).map(|r| r.name_any()),
            1 => Some(active[0].name_any()),
            _ => None,
        };
        if new_rs.is_none() && old.is_empty() {
            return Ok((new_rs, old));
        }
        let mut sizes: HashMap<String, i32> = HashMap::new();
        if let Some(name) = target {
            sizes.insert(name, want);
        } else if new_rs.as_ref().is_some_and(|n| {
            rs_replicas(n) == want
                && desired_replicas_annotation(n) == Some(want)
                && rs_available(n) == want
        }) {
            // The new replica set is saturated: old ones go to zero.
            for rs in &active {
                if Some(rs.metadata.uid.clone()) != new_rs.as_ref().map(|n| n.metadata.uid.clone())
                {
                    sizes.insert(rs.name_any(), 0);
                }
            }
        } else if is_rolling(d) {
            let mut active: Vec<&ReplicaSet> = active;
            let current: i32 = active.iter().map(|r| rs_replicas(r)).sum();
            let allowed = if want > 0 { want + max_surge(d) } else { 0 };
            if allowed > current {
                active.sort_by(|a, b| {
                    rs_replicas(b)
                        .cmp(&rs_replicas(a))
                        .then_with(|| by_age(b, a))
                });
            } else if allowed < current {
                active.sort_by(|a, b| {
                    rs_replicas(b)
                        .cmp(&rs_replicas(a))
                        .then_with(|| by_age(a, b))
                });
            }
            for (rs, size) in active.iter().zip(proportional_sizes(d, &active)) {
                sizes.insert(rs.name_any(), size);
            }
        }
        let write = |rs: ReplicaSet| async {
            match sizes.get(&rs.name_any()) {
                Some(size) => self.scale_rs(&rs, *size, d).await.map(|(_, r)| r),
                None => Ok(rs),
            }
        };
        let new_rs = match new_rs {
            Some(n) => Some(write(n).await?),
            None => None,
        };
        let mut out = Vec::with_capacity(old.len());
        for rs in old {
            out.push(write(rs).await?);
        }
        Ok((new_rs, out))
    }

    /// Upstream's cleanupDeployment: beyond revisionHistoryLimit, delete the oldest old
    /// replica sets that are fully scaled down.
    async fn cleanup(&self, d: &Deployment, old: &[ReplicaSet]) -> Result<(), Error> {
        let Some(limit) = d.spec.as_ref().and_then(|s| s.revision_history_limit) else {
            return Ok(());
        };
        let mut alive: Vec<&ReplicaSet> = old
            .iter()
            .filter(|r| r.metadata.deletion_timestamp.is_none())
            .collect();
        let diff = alive.len() as i64 - i64::from(limit);
        if diff <= 0 {
            return Ok(());
        }
        alive.sort_by(|a, b| revision(a).cmp(&revision(b)).then_with(|| by_age(a, b)));
        for rs in alive.into_iter().take(diff as usize) {
            let observed = rs
                .status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .unwrap_or(0);
            if rs_status_replicas(rs) != 0
                || rs_replicas(rs) != 0
                || rs.metadata.generation.unwrap_or(0) > observed
            {
                continue;
            }
            match self
                .rs_api(&rs.namespace().unwrap_or_default())
                .delete(&rs.name_any(), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Upstream's rolloutRolling.
    async fn rollout_rolling(
        &self,
        d: &mut Deployment,
        rs_list: &mut [ReplicaSet],
    ) -> Result<Action, Error> {
        let (new_rs, old) = self.new_and_old(d, &mut *rs_list, true).await?;
        let Some(mut new_rs) = new_rs else {
            return Err(other_err("no new replica set"));
        };
        let mut old = old;
        // Scale up, if we can.
        let want = replicas(d);
        let target = if rs_replicas(&new_rs) > want {
            Some(want)
        } else if rs_replicas(&new_rs) < want {
            let all: Vec<&ReplicaSet> = old.iter().chain(std::iter::once(&new_rs)).collect();
            Some(new_rs_new_replicas(d, &all, &new_rs))
        } else {
            None
        };
        if let Some(t) = target {
            let (scaled, written) = self.scale_rs(&new_rs, t, d).await?;
            new_rs = written;
            if scaled {
                return self.sync_rollout_status(d, &old, Some(&new_rs)).await;
            }
        }
        // Scale down, if we can.
        if self.reconcile_old(d, &mut old, &new_rs).await? {
            return self.sync_rollout_status(d, &old, Some(&new_rs)).await;
        }
        if deployment_complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, &old, Some(&new_rs)).await
    }

    /// Upstream's reconcileOldReplicaSets: scale old replica sets down as far as availability
    /// allows, unhealthy replicas first.
    async fn reconcile_old(
        &self,
        d: &Deployment,
        old: &mut [ReplicaSet],
        new_rs: &ReplicaSet,
    ) -> Result<bool, Error> {
        let old_count: i32 = old.iter().map(rs_replicas).sum();
        if old_count == 0 {
            return Ok(false);
        }
        let all_count = old_count + rs_replicas(new_rs);
        let min_available = replicas(d) - max_unavailable(d);
        let new_unavailable = rs_replicas(new_rs) - rs_available(new_rs);
        let max_scaled_down = all_count - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        old.sort_by(by_age);
        // Clean up unhealthy replicas first, or they block the rollout.
        let mut cleaned = 0;
        for rs in old.iter_mut() {
            if cleaned >= max_scaled_down {
                break;
            }
            let (n, avail) = (rs_replicas(rs), rs_available(rs));
            if n == 0 || n == avail {
                continue;
            }
            let down = (max_scaled_down - cleaned).min(n - avail);
            let (_, written) = self.scale_rs(rs, n - down, d).await?;
            *rs = written;
            cleaned += down;
        }
        // Then scale down healthy ones while availability stays above the minimum.
        let available: i32 = old.iter().map(rs_available).sum::<i32>() + rs_available(new_rs);
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for rs in old.iter_mut() {
                if scaled >= total {
                    break;
                }
                let n = rs_replicas(rs);
                if n == 0 {
                    continue;
                }
                let down = n.min(total - scaled);
                let (_, written) = self.scale_rs(rs, n - down, d).await?;
                *rs = written;
                scaled += down;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    /// Upstream's rolloutRecreate: old replica sets to zero, wait for their pods to go, then
    /// the new one to full size.
    async fn rollout_recreate(
        &self,
        d: &mut Deployment,
        rs_list: &mut [ReplicaSet],
    ) -> Result<Action, Error> {
        let (new_rs, mut old) = self.new_and_old(d, &mut *rs_list, false).await?;
        let mut scaled_down = false;
        for rs in old.iter_mut() {
            if rs_replicas(rs) == 0 {
                continue;
            }
            let (scaled, written) = self.scale_rs(rs, 0, d).await?;
            *rs = written;
            scaled_down |= scaled;
        }
        if scaled_down {
            return self.sync_rollout_status(d, &old, new_rs.as_ref()).await;
        }
        if self.old_pods_running(d, new_rs.as_ref(), &old) {
            return self.sync_rollout_status(d, &old, new_rs.as_ref()).await;
        }
        let (new_rs, old) = match new_rs {
            Some(n) => (n, old),
            None => {
                let (n, o) = self.new_and_old(d, &mut *rs_list, true).await?;
                (n.ok_or_else(|| other_err("no new replica set"))?, o)
            }
        };
        let (_, new_rs) = self.scale_rs(&new_rs, replicas(d), d).await?;
        if deployment_complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, &old, Some(&new_rs)).await
    }

    /// Whether pods of old replica sets still run (upstream's oldPodsRunning).
    fn old_pods_running(
        &self,
        d: &Deployment,
        new_rs: Option<&ReplicaSet>,
        old: &[ReplicaSet],
    ) -> bool {
        if old.iter().map(rs_status_replicas).sum::<i32>() > 0 {
            return true;
        }
        let old_uids: Vec<&str> = old
            .iter()
            .filter_map(|r| r.metadata.uid.as_deref())
            .collect();
        let new_uid = new_rs.and_then(|r| r.metadata.uid.as_deref());
        self.pods
            .list_namespace(&d.namespace().unwrap_or_default())
            .iter()
            .filter(|p| selector_matches(selector_of(d), p.metadata.labels.as_ref()))
            .filter(|p| {
                controller_ref(&p.metadata).is_some_and(|r| {
                    Some(r.uid.as_str()) != new_uid && old_uids.contains(&r.uid.as_str())
                })
            })
            .any(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Failed" | "Succeeded")
                )
            })
    }

    /// Upstream's syncRolloutStatus: the status plus the Progressing condition (progress,
    /// completion, or the deadline passing) and replica failures of the replica sets.
    async fn sync_rollout_status(
        &self,
        d: &mut Deployment,
        old: &[ReplicaSet],
        new_rs: Option<&ReplicaSet>,
    ) -> Result<Action, Error> {
        let all: Vec<&ReplicaSet> = old.iter().chain(new_rs).collect();
        let mut status = calculate_status(d, &all, new_rs);
        let deadline = progress_deadline(d);
        if deadline.is_none() {
            remove_condition(&mut status, "Progressing");
        }
        let current = d
            .status
            .as_ref()
            .and_then(|s| get_condition(s, "Progressing"))
            .cloned();
        let complete_before = status.replicas == status.updated_replicas
            && current
                .as_ref()
                .is_some_and(|c| c.reason.as_deref() == Some(NEW_RS_AVAILABLE_REASON));
        if deadline.is_some() && !complete_before {
            let name = new_rs.map(|r| r.name_any());
            if deployment_complete(d, &status) {
                let msg = match &name {
                    Some(n) => format!("ReplicaSet {n:?} has successfully progressed."),
                    None => format!("Deployment {:?} has successfully progressed.", d.name_any()),
                };
                set_condition(
                    &mut status,
                    new_condition("Progressing", "True", NEW_RS_AVAILABLE_REASON, &msg),
                );
            } else if deployment_progressing(d, &status) {
                let msg = match &name {
                    Some(n) => format!("ReplicaSet {n:?} is progressing."),
                    None => format!("Deployment {:?} is progressing.", d.name_any()),
                };
                let mut c = new_condition("Progressing", "True", RS_UPDATED_REASON, &msg);
                if let Some(cur) = &current {
                    if cur.status == "True" {
                        c.last_transition_time = cur.last_transition_time.clone();
                    }
                    remove_condition(&mut status, "Progressing");
                }
                set_condition(&mut status, c);
            } else if deployment_timed_out(d, &status, jiff::Timestamp::now()) {
                let msg = match &name {
                    Some(n) => format!("ReplicaSet {n:?} has timed out progressing."),
                    None => format!("Deployment {:?} has timed out progressing.", d.name_any()),
                };
                set_condition(
                    &mut status,
                    new_condition("Progressing", "False", TIMED_OUT_REASON, &msg),
                );
            }
        }
        // A replica set's ReplicaFailure becomes the deployment's.
        let failure = new_rs
            .into_iter()
            .chain(old.iter())
            .filter_map(|rs| {
                rs.status
                    .as_ref()?
                    .conditions
                    .as_ref()?
                    .iter()
                    .find(|c| c.type_ == "ReplicaFailure")
                    .cloned()
            })
            .next();
        match failure {
            Some(c) => set_condition(
                &mut status,
                k8s_openapi::api::apps::v1::DeploymentCondition {
                    type_: c.type_,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                    last_update_time: c.last_transition_time.clone(),
                    last_transition_time: c.last_transition_time,
                },
            ),
            None => remove_condition(&mut status, "ReplicaFailure"),
        }
        if d.status.as_ref() == Some(&status) {
            return Ok(self.requeue_stuck(d, &status));
        }
        d.status = Some(status);
        self.persist(d).await?;
        Ok(Action::Done)
    }

    /// Upstream's requeueStuckDeployment: look again when the progress deadline would pass.
    fn requeue_stuck(
        &self,
        d: &Deployment,
        status: &k8s_openapi::api::apps::v1::DeploymentStatus,
    ) -> Action {
        let Some(deadline) = progress_deadline(d) else {
            return Action::Done;
        };
        let Some(cur) = d
            .status
            .as_ref()
            .and_then(|s| get_condition(s, "Progressing"))
        else {
            return Action::Done;
        };
        if deployment_complete(d, status) || cur.reason.as_deref() == Some(TIMED_OUT_REASON) {
            return Action::Done;
        }
        let Some(from) = cur.last_update_time.as_ref() else {
            return Action::Done;
        };
        let due = from.0 + jiff::SignedDuration::from_secs(i64::from(deadline));
        let after = due.duration_since(jiff::Timestamp::now());
        let after = Duration::try_from(after).unwrap_or(Duration::ZERO);
        Action::RequeueAfter(if after < Duration::from_secs(1) {
            Duration::from_secs(1)
        } else {
            after + Duration::from_secs(1)
        })
    }
}

/// Upstream's SetDeploymentRevision.
fn set_deployment_revision(d: &mut Deployment, rev: &str) -> bool {
    let ann = d.metadata.annotations.get_or_insert_with(Default::default);
    if ann.get(REVISION).map(String::as_str) == Some(rev) {
        return false;
    }
    ann.insert(REVISION.into(), rev.into());
    true
}

impl Reconciler for DeploymentController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(cached) = self.deployments.get(key) else {
            return Ok(Action::Done);
        };
        let mut d = (*cached).clone();
        if is_empty_selector(selector_of(&d)) {
            self.event(
                &d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            );
            let st = d.status.get_or_insert_with(Default::default);
            if st.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
                st.observed_generation = d.metadata.generation;
                self.persist(&mut d).await?;
            }
            return Ok(Action::Done);
        }
        let mut rs_list = self.claim_replica_sets(&d).await?;
        let rs_list = rs_list.as_mut_slice();
        if d.metadata.deletion_timestamp.is_some() {
            let (new_rs, old) = self.new_and_old(&mut d, rs_list, false).await?;
            let all: Vec<&ReplicaSet> = old.iter().chain(new_rs.as_ref()).collect();
            self.sync_status(&mut d, &all, new_rs.as_ref()).await?;
            return Ok(Action::Done);
        }
        self.check_paused_conditions(&mut d).await?;
        if d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false) {
            return self.sync(&mut d, rs_list).await;
        }
        if self.is_scaling_event(&mut d, rs_list).await? {
            return self.sync(&mut d, rs_list).await;
        }
        if is_rolling(&d) {
            self.rollout_rolling(&mut d, rs_list).await
        } else {
            self.rollout_recreate(&mut d, rs_list).await
        }
    }
}
