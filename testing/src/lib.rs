//! `k1s-testing`: a whole in-memory Kubernetes control plane inside a Rust test process.
//!
//! [`TestCluster::start`] runs the k1s API server (memory store, a fresh PKI), the
//! controller-manager (garbage collector, namespace deletion, Deployments, Jobs, ...), the
//! scheduler and one simulated node in the test's own tokio runtime, on a free loopback port,
//! in milliseconds. It hands back a [`kube::Client`], the kubeconfig (as a value and as a file
//! for subprocesses such as `kubectl`) and the cluster CA. Dropping the cluster stops everything
//! and removes its files; clusters are independent, so tests run side by side.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k1s_testing::{TestCluster, wait_for};
//! use kube::api::{Api, PostParams};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let cluster = TestCluster::builder().nodes(3).start().await?;
//! let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
//! let cm = serde_json::from_value(serde_json::json!({"metadata": {"name": "c"}}))?;
//! cms.create(&PostParams::default(), &cm).await?;
//! wait_for(&cms, "c", |cm: &ConfigMap| cm.metadata.uid.is_some()).await?;
//! # Ok(()) }
//! ```
//!
//! A complete example, a small kube-rs controller and its test, is
//! `testing/tests/controller_example.rs` in the k1s repository; it runs with `cargo test`.
//!
//! # Time
//!
//! The cluster runs on the wall clock; there is no virtual clock to advance. What makes tests
//! fast instead:
//! - simulated pods run for `sim.k1s.io/run-seconds` (fractions allowed, rounded up to whole
//!   seconds) and then exit with `sim.k1s.io/exit-code` (default 0), so a Job's pod can finish
//!   after 1 s; without the annotation a pod runs until deleted;
//! - controller periods are options: [`Builder::controller_options`] shortens for example the pod
//!   GC period, the node-monitor grace period or the HPA sync period, and
//!   [`Builder::node_options`] the nodes' lease duration (heartbeats every quarter of it);
//! - CronJobs follow their schedule in real time (the smallest step is a minute): a test of what
//!   a schedule starts runs the CronJob now with [`TestCluster::run_cronjob_now`] (as `kubectl
//!   create job --from=cronjob/...`).

mod crds;
mod wait;

use std::path::{Path, PathBuf};
use std::time::Duration;

use k1s_apiserver::auth::UserInfo;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

pub use crds::read_crds;
pub use wait::{DEFAULT_TIMEOUT, wait_for, wait_for_deletion, wait_for_within};

/// What can go wrong starting or using a test cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("starting the cluster: {0}")]
    Start(#[from] k1s::StartError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("{path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: String, after: Duration },
    #[error("waiting for {what}: {message}")]
    Wait { what: String, message: String },
}

/// A running in-memory cluster; dropping it stops it and removes its files.
pub struct TestCluster {
    // Declared first so it drops first: the components stop before their files go.
    plane: k1s::ControlPlane,
    client: kube::Client,
    kubeconfig: Kubeconfig,
    kubeconfig_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCluster")
            .field("url", &self.url())
            .field("kubeconfig", &self.kubeconfig_path)
            .finish()
    }
}

/// Which parts run and how; from [`TestCluster::builder`].
#[derive(Debug)]
pub struct Builder {
    nodes: usize,
    scheduler: bool,
    controllers: Option<Vec<String>>,
    controller_options: k1s_controller_manager::Options,
    node_options: k1s_simnode::Options,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            nodes: 1,
            scheduler: true,
            controllers: Some(vec!["*".into()]),
            // One cluster per test: no second instance to elect against.
            controller_options: k1s_controller_manager::Options {
                leader_elect: false,
                ..Default::default()
            },
            node_options: k1s_simnode::Options::default(),
        }
    }
}

impl Builder {
    /// Simulated nodes `k1s-node-0` .. (default 1; 0 for none).
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n;
        self
    }

    /// Run the scheduler (default on).
    pub fn scheduler(mut self, on: bool) -> Self {
        self.scheduler = on;
        self
    }

    /// Run the controller-manager (default on, every controller).
    pub fn controller_manager(mut self, on: bool) -> Self {
        self.controllers = on.then(|| vec!["*".into()]);
        self
    }

    /// Which controllers run, as kube-controller-manager's `--controllers` (`*`, `name`,
    /// `-name`): `["garbage-collector-controller"]` runs only the garbage collector.
    pub fn controllers<S: Into<String>>(mut self, spec: impl IntoIterator<Item = S>) -> Self {
        self.controllers = Some(spec.into_iter().map(Into::into).collect());
        self
    }

    /// Adjusts the controller-manager's options (periods, workers, thresholds).
    pub fn controller_options(
        mut self,
        f: impl FnOnce(&mut k1s_controller_manager::Options),
    ) -> Self {
        f(&mut self.controller_options);
        self
    }

    /// Adjusts the simulated nodes' shape (capacity, lease duration); names come from `nodes`.
    pub fn node_options(mut self, f: impl FnOnce(&mut k1s_simnode::Options)) -> Self {
        f(&mut self.node_options);
        self
    }

    /// Starts the cluster in the current tokio runtime; returns once the API serves.
    pub async fn start(self) -> Result<TestCluster, Error> {
        let dir = tempfile::Builder::new().prefix("k1s-testing-").tempdir()?;
        let kubeconfig_path = dir.path().join("kubeconfig");
        let loopback = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        let server = k1s_apiserver::server::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            bind_address: loopback,
            secure_port: 0,
            ephemeral: true,
            advertise_address: Some(loopback),
            kubeconfig_path: Some(kubeconfig_path.clone()),
            // No 429s for a test's bursts.
            max_requests_inflight: 0,
            max_mutating_requests_inflight: 0,
            ..Default::default()
        };
        let controller_manager = self.controllers.map(|controllers| {
            let mut o = self.controller_options;
            o.controllers = controllers;
            o
        });
        let nodes = k1s_simnode::Options {
            names: (0..self.nodes).map(|i| format!("k1s-node-{i}")).collect(),
            ..self.node_options
        };
        let plane = k1s::ControlPlane::start(k1s::ControlPlaneOptions {
            server,
            controller_manager,
            scheduler: self.scheduler.then(|| k1s_scheduler::Options {
                leader_elect: false,
                ..Default::default()
            }),
            nodes: Some(nodes),
        })
        .await?;
        let kubeconfig = Kubeconfig::read_from(&kubeconfig_path)
            .map_err(|e| Error::Kubeconfig(e.to_string()))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &KubeConfigOptions::default())
                .await
                .map_err(|e| Error::Kubeconfig(e.to_string()))?;
        let client = kube::Client::try_from(config)?;
        Ok(TestCluster {
            plane,
            client,
            kubeconfig,
            kubeconfig_path,
            _dir: dir,
        })
    }
}

impl TestCluster {
    /// Starts a cluster with everything on: controllers, scheduler, one simulated node.
    pub async fn start() -> Result<TestCluster, Error> {
        Builder::default().start().await
    }

    /// Chooses what runs before starting.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A client of the cluster admin (`kubernetes-admin`, group `system:masters`) over HTTPS.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A client acting as `user` in `groups` (plus `system:authenticated`), for RBAC tests. It
    /// enters the server in process (no TCP or TLS), then is authorized like any client.
    pub fn client_as(&self, user: &str, groups: &[&str]) -> kube::Client {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".into());
        }
        kube::Client::new(
            self.plane
                .server()
                .in_process_service(UserInfo::new(user, groups)),
            "default",
        )
    }

    /// The admin kubeconfig.
    pub fn kubeconfig(&self) -> &Kubeconfig {
        &self.kubeconfig
    }

    /// The admin kubeconfig as a file (for `kubectl --kubeconfig` and other subprocesses); it
    /// lives as long as the cluster.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.plane.server().server_url
    }

    /// The cluster CA certificate (PEM): it signed the serving and client certificates.
    pub fn ca_pem(&self) -> &str {
        &self.plane.server().ca_pem
    }

    /// Installs CustomResourceDefinitions, e.g. `cluster.install_crds([Foo::crd()])` for a
    /// `#[derive(CustomResource)]` type (`kube::CustomResourceExt`), and waits until discovery
    /// serves every served version of each.
    pub async fn install_crds(
        &self,
        crds: impl IntoIterator<Item = CustomResourceDefinition>,
    ) -> Result<(), Error> {
        let crds = self.create_crds(crds).await?;
        crds::wait_all_served(&self.client, &crds).await
    }

    /// Installs every CustomResourceDefinition in the `.yaml`, `.yml` and `.json` files of `dir`
    /// (see [`read_crds`]) and waits until they are served. Returns how many were installed.
    pub async fn install_crds_from_dir(&self, dir: impl AsRef<Path>) -> Result<usize, Error> {
        let crds = read_crds(dir.as_ref())?;
        let n = crds.len();
        self.install_crds(crds).await?;
        Ok(n)
    }

    /// Creates CustomResourceDefinitions (one that exists is updated to this spec) without
    /// waiting for them to be served; returns them as stored.
    pub async fn create_crds(
        &self,
        crds: impl IntoIterator<Item = CustomResourceDefinition>,
    ) -> Result<Vec<CustomResourceDefinition>, Error> {
        crds::create(&self.client, crds.into_iter().collect()).await
    }

    /// Waits (up to [`DEFAULT_TIMEOUT`]) until discovery lists `plural` in `group/version`
    /// (`group` empty for the core group).
    pub async fn wait_served(&self, group: &str, version: &str, plural: &str) -> Result<(), Error> {
        self.wait_served_within(group, version, plural, DEFAULT_TIMEOUT)
            .await
    }

    /// [`TestCluster::wait_served`] with a timeout.
    pub async fn wait_served_within(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        timeout: Duration,
    ) -> Result<(), Error> {
        crds::wait_served(&self.client, group, version, plural, timeout).await
    }

    /// The core/v1 Events about `obj` (by its uid), oldest first.
    pub async fn events_for<K: kube::Resource>(&self, obj: &K) -> Result<Vec<Event>, Error> {
        let meta = obj.meta();
        let selector = match &meta.uid {
            Some(uid) => format!("involvedObject.uid={uid}"),
            None => format!(
                "involvedObject.name={},involvedObject.namespace={}",
                meta.name.as_deref().unwrap_or_default(),
                meta.namespace.as_deref().unwrap_or_default()
            ),
        };
        let api: Api<Event> = Api::all(self.client.clone());
        let mut events = api
            .list(&ListParams::default().fields(&selector))
            .await?
            .items;
        events.sort_by_key(|e| {
            e.last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or(e.event_time.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
        });
        Ok(events)
    }

    /// Starts a run of a CronJob now, as `kubectl create job NAME --from=cronjob/CRONJOB` does:
    /// a Job named `job_name` from the CronJob's `jobTemplate`, annotated
    /// `cronjob.kubernetes.io/instantiate: manual` and controlled by the CronJob (so the CronJob
    /// controller counts it among its active Jobs). The clock-free way to test what a schedule
    /// would start.
    pub async fn run_cronjob_now(&self, cronjob: &CronJob, job_name: &str) -> Result<Job, Error> {
        let namespace = cronjob.metadata.namespace.as_deref().unwrap_or("default");
        let template = cronjob
            .spec
            .as_ref()
            .map(|s| s.job_template.clone())
            .unwrap_or_default();
        let template_meta = template.metadata.unwrap_or_default();
        let mut annotations = template_meta.annotations.unwrap_or_default();
        annotations.insert("cronjob.kubernetes.io/instantiate".into(), "manual".into());
        let job = Job {
            metadata: ObjectMeta {
                name: Some(job_name.into()),
                namespace: Some(namespace.into()),
                annotations: Some(annotations),
                labels: template_meta.labels,
                // As kubectl: no blockOwnerDeletion, which would need cronjobs/finalizers rights.
                owner_references: Some(vec![OwnerReference {
                    api_version: "batch/v1".into(),
                    kind: "CronJob".into(),
                    name: cronjob.metadata.name.clone().unwrap_or_default(),
                    uid: cronjob.metadata.uid.clone().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]),
                ..Default::default()
            },
            spec: template.spec,
            status: None,
        };
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), namespace);
        Ok(jobs.create(&PostParams::default(), &job).await?)
    }

    /// Stops gracefully (controllers first, then the server), waiting for it.
    pub async fn shutdown(self) {
        let TestCluster { plane, _dir, .. } = self;
        plane.shutdown().await;
    }
}
