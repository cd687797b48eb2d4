//! A pod's container as a kubelet would set it up, for [`super::Sandbox`]: its environment
//! (the image's, service links, `envFrom`, `env` with `$(VAR)` references, downward-API fields
//! and resources), the files of its volumes (ConfigMap, Secret, downward API, projected,
//! emptyDir; modes, fsGroup ownership, filesystems) and its user. Works on the pod as JSON with
//! [`PodFacts`]: the log endpoint looks up what the pod references; the simulated node, which
//! does not, takes every referenced key to exist.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::files::{EXT4_MAGIC, File, Process, TMPFS_MAGIC, clean};
use super::{Sandbox, container_argv};
use crate::gofmt::quote as go_quote;
use crate::quantity::Quantity;

/// The image environment every container starts from.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What a node knows beyond the pod.
#[derive(Debug, Clone, Default)]
pub struct PodFacts {
    /// The pod's ConfigMaps and Secrets (values as text) by name; `None` when not looked up,
    /// in which case every referenced key is taken to exist, with empty content.
    pub objects: Option<Objects>,
    /// The services whose links the kubelet puts in the environment: the pod namespace's and
    /// `default/kubernetes`.
    pub services: Vec<ServiceLink>,
    /// The node's allocatable `cpu`, `memory` and `ephemeral-storage`: the downward API's value
    /// of a limit the container does not set.
    pub allocatable: BTreeMap<String, Quantity>,
}

/// ConfigMaps and Secrets of the pod's namespace by name; absent ones are missing.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    pub config_maps: BTreeMap<String, BTreeMap<String, String>>,
    pub secrets: BTreeMap<String, BTreeMap<String, String>>,
}

/// A service as its environment variables need it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceLink {
    pub namespace: String,
    pub name: String,
    pub cluster_ip: String,
    /// (name, port, protocol) in the service's order.
    pub ports: Vec<(String, i64, String)>,
}

/// The ConfigMaps and Secrets a pod references, by name.
pub fn referenced_objects(pod: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut config_maps, mut secrets) = (BTreeSet::new(), BTreeSet::new());
    crate::pod_refs::visit_config_map_names(&pod["spec"], |n| {
        config_maps.insert(n.to_string());
    });
    crate::pod_refs::visit_secret_names(&pod["spec"], |n| {
        secrets.insert(n.to_string());
    });
    (config_maps, secrets)
}

fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .filter_map(|f| pod["spec"][f].as_array())
        .flatten()
}

/// One container of a pod, set up as the kubelet would.
pub struct PodSandbox<'a> {
    pod: &'a Value,
    container: &'a Value,
    facts: &'a PodFacts,
    env: Vec<(String, String)>,
}

impl<'a> PodSandbox<'a> {
    /// The sandbox of the named container; `None` when the pod has no such container.
    pub fn new(pod: &'a Value, container: &str, facts: &'a PodFacts) -> Option<Self> {
        let spec = containers(pod).find(|c| c["name"].as_str() == Some(container))?;
        let mut sandbox = PodSandbox {
            pod,
            container: spec,
            facts,
            env: Vec::new(),
        };
        sandbox.env = sandbox.environment();
        Some(sandbox)
    }

    /// The argv the runtime runs (see [`container_argv`]), `$(VAR)` references expanded from the
    /// container's environment.
    pub fn argv(&self) -> Vec<String> {
        let words = |k: &str| -> Vec<String> {
            self.container[k]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|w| expand(w, &self.env))
                .collect()
        };
        let image = self.container["image"].as_str().unwrap_or_default();
        container_argv(image, &words("command"), &words("args"))
    }

    /// The kubelet's environment: the image's `PATH` and `HOSTNAME`, service links, `envFrom`
    /// then `env` (later names replace earlier ones), and `HOME`.
    fn environment(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = Vec::new();
        let set = |env: &mut Vec<(String, String)>, k: String, v: String| match env
            .iter_mut()
            .find(|(name, _)| *name == k)
        {
            Some(slot) => slot.1 = v,
            None => env.push((k, v)),
        };
        set(&mut env, "PATH".into(), DEFAULT_PATH.into());
        set(&mut env, "HOSTNAME".into(), self.hostname());
        for (k, v) in self.service_env() {
            set(&mut env, k, v);
        }
        for from in self.container["envFrom"].as_array().into_iter().flatten() {
            let prefix = from["prefix"].as_str().unwrap_or("");
            let data = if from["configMapRef"].is_object() {
                self.data("configMap", from["configMapRef"]["name"].as_str())
            } else {
                self.data("secret", from["secretRef"]["name"].as_str())
            };
            for (k, v) in data.into_iter().flatten() {
                set(&mut env, format!("{prefix}{k}"), v);
            }
        }
        for e in self.container["env"].as_array().into_iter().flatten() {
            let Some(name) = e["name"].as_str() else {
                continue;
            };
            let from = &e["valueFrom"];
            let value = if let Some(v) = e["value"].as_str() {
                Some(expand(v, &env))
            } else if let Some(path) = from["fieldRef"]["fieldPath"].as_str() {
                self.field(path)
            } else if from["resourceFieldRef"].is_object() {
                self.resource(&from["resourceFieldRef"])
            } else if let Some(r) = from["configMapKeyRef"].as_object() {
                self.key("configMap", r)
            } else if let Some(r) = from["secretKeyRef"].as_object() {
                self.key("secret", r)
            } else {
                Some(String::new())
            };
            if let Some(v) = value {
                set(&mut env, name.to_string(), v);
            }
        }
        if !env.iter().any(|(k, _)| k == "HOME") {
            let home = if self.process().uid == 0 {
                "/root"
            } else {
                "/"
            };
            env.push(("HOME".into(), home.into()));
        }
        env
    }

    fn hostname(&self) -> String {
        let spec = &self.pod["spec"];
        let name = spec["hostname"]
            .as_str()
            .or_else(|| self.pod["metadata"]["name"].as_str())
            .unwrap_or_default();
        // The kubelet keeps the first 63 characters, without a trailing `-` or `.`.
        let mut host: String = name.chars().take(63).collect();
        while host.ends_with(['-', '.']) {
            host.pop();
        }
        host
    }

    /// `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT[_<PORT>]` and the Docker-link variables of
    /// every linked service with a cluster IP (envvars.FromServices).
    fn service_env(&self) -> Vec<(String, String)> {
        let ns = self.pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let links = self.pod["spec"]["enableServiceLinks"]
            .as_bool()
            .unwrap_or(true);
        let mut chosen: BTreeMap<&str, &ServiceLink> = BTreeMap::new();
        for s in &self.facts.services {
            if s.cluster_ip.is_empty() || s.cluster_ip == "None" {
                continue;
            }
            if s.namespace == "default" && s.name == "kubernetes" {
                chosen.entry(&s.name).or_insert(s);
            } else if s.namespace == ns && links {
                chosen.insert(&s.name, s);
            }
        }
        let upper = |s: &str| s.to_uppercase().replace('-', "_");
        let mut out = Vec::new();
        for s in chosen.values() {
            let name = upper(&s.name);
            let host = if s.cluster_ip.contains(':') {
                format!("[{}]", s.cluster_ip)
            } else {
                s.cluster_ip.clone()
            };
            out.push((format!("{name}_SERVICE_HOST"), s.cluster_ip.clone()));
            let Some((_, first, first_proto)) = s.ports.first() else {
                continue;
            };
            out.push((format!("{name}_SERVICE_PORT"), first.to_string()));
            for (port_name, port, _) in &s.ports {
                if !port_name.is_empty() {
                    out.push((
                        format!("{name}_SERVICE_PORT_{}", upper(port_name)),
                        port.to_string(),
                    ));
                }
            }
            let url = |proto: &str, port: i64| format!("{}://{host}:{port}", proto.to_lowercase());
            out.push((format!("{name}_PORT"), url(first_proto, *first)));
            for (_, port, proto) in &s.ports {
                let prefix = format!("{name}_PORT_{port}_{}", proto.to_uppercase());
                out.push((prefix.clone(), url(proto, *port)));
                out.push((format!("{prefix}_PROTO"), proto.to_lowercase()));
                out.push((format!("{prefix}_PORT"), port.to_string()));
                out.push((format!("{prefix}_ADDR"), s.cluster_ip.clone()));
            }
        }
        out
    }

    /// A ConfigMap's or Secret's data: `Some(None)` when it is missing, `None` when unknown.
    fn data(&self, kind: &str, name: Option<&str>) -> Option<BTreeMap<String, String>> {
        let objects = self.facts.objects.as_ref()?;
        let map = if kind == "configMap" {
            &objects.config_maps
        } else {
            &objects.secrets
        };
        map.get(name.unwrap_or_default()).cloned()
    }

    /// A `configMapKeyRef`/`secretKeyRef` value; unknown objects give an empty value.
    fn key(&self, kind: &str, r: &serde_json::Map<String, Value>) -> Option<String> {
        if self.facts.objects.is_none() {
            return Some(String::new());
        }
        let name = r.get("name").and_then(Value::as_str);
        let key = r.get("key").and_then(Value::as_str).unwrap_or_default();
        self.data(kind, name)?.remove(key)
    }

    /// A downward-API `fieldRef` of the pod.
    pub fn field(&self, path: &str) -> Option<String> {
        let meta = &self.pod["metadata"];
        let map = |m: &Value| -> BTreeMap<String, String> {
            m.as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        };
        let keyed = |prefix: &str, m: &Value| {
            let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
            Some(m[key].as_str().unwrap_or_default().to_string())
        };
        let pointer = match path {
            "metadata.name" => "/metadata/name",
            "metadata.namespace" => "/metadata/namespace",
            "metadata.uid" => "/metadata/uid",
            "spec.nodeName" => "/spec/nodeName",
            "spec.serviceAccountName" => "/spec/serviceAccountName",
            "status.hostIP" => "/status/hostIP",
            "status.podIP" => "/status/podIP",
            "metadata.labels" => return Some(format_map(&map(&meta["labels"]))),
            "metadata.annotations" => return Some(format_map(&self.annotations())),
            "status.hostIPs" | "status.podIPs" => {
                let list = if path == "status.hostIPs" {
                    "hostIPs"
                } else {
                    "podIPs"
                };
                let ips: Vec<&str> = self.pod["status"][list]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i["ip"].as_str())
                    .collect();
                return Some(ips.join(","));
            }
            _ => {
                return keyed("metadata.labels['", &meta["labels"])
                    .or_else(|| keyed("metadata.annotations['", &meta["annotations"]));
            }
        };
        Some(
            self.pod
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        )
    }

    /// The pod's annotations as the kubelet holds them: with its `config.source` and
    /// `config.seen`.
    fn annotations(&self) -> BTreeMap<String, String> {
        let meta = &self.pod["metadata"];
        let mut m: BTreeMap<String, String> = meta["annotations"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        m.entry("kubernetes.io/config.source".into())
            .or_insert_with(|| "api".into());
        if let Some(seen) = meta["creationTimestamp"].as_str() {
            m.entry("kubernetes.io/config.seen".into())
                .or_insert_with(|| seen.to_string());
        }
        m
    }

    /// A downward-API `resourceFieldRef`: the container's request or limit over the divisor,
    /// rounded up; an unset limit is the node's allocatable.
    fn resource(&self, r: &Value) -> Option<String> {
        let container = match r["containerName"].as_str().filter(|c| !c.is_empty()) {
            Some(name) => containers(self.pod).find(|c| c["name"].as_str() == Some(name))?,
            None => self.container,
        };
        let (kind, resource) = r["resource"].as_str()?.split_once('.')?;
        let set = container["resources"][kind][resource]
            .as_str()
            .and_then(Quantity::parse);
        let value = match (set, kind) {
            (Some(q), _) => q,
            (None, "limits") => self.facts.allocatable.get(resource).cloned()?,
            (None, _) => Quantity::zero(),
        };
        let divisor = r["divisor"]
            .as_str()
            .and_then(Quantity::parse)
            .filter(|d| !d.is_zero())
            .unwrap_or_else(|| Quantity::from_int(1));
        let ratio = if resource == "cpu" {
            div_ceil(value.milli_value(), divisor.milli_value())
        } else {
            div_ceil(value.value(), divisor.value())
        };
        Some(ratio.to_string())
    }

    /// The volume mount holding a path, the volume, and the path inside the volume.
    fn mount_of(&self, path: &str) -> Option<(&Value, &Value, String)> {
        let mut best: Option<(&Value, usize)> = None;
        for m in self.container["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let at = clean(m["mountPath"].as_str().unwrap_or_default());
            let inside = path == at || at == "/" || path.starts_with(&format!("{at}/"));
            if inside && best.is_none_or(|(_, len)| at.len() > len) {
                best = Some((m, at.len()));
            }
        }
        let (mount, len) = best?;
        let name = mount["name"].as_str()?;
        let volume = self.pod["spec"]["volumes"]
            .as_array()?
            .iter()
            .find(|v| v["name"].as_str() == Some(name))?;
        let rest = path[len.min(path.len())..].trim_start_matches('/');
        let sub = mount["subPath"].as_str().unwrap_or_default();
        let inner = [sub, rest]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("/");
        Some((mount, volume, inner))
    }

    /// The files a volume holds (paths relative to its root, with mode and content), and its
    /// filesystem; `None` for kinds whose files are not known (emptyDir, hostPath, claims).
    fn volume_files(&self, volume: &Value) -> Option<Vec<(String, u32, String)>> {
        let default_mode = |source: &Value| source["defaultMode"].as_u64().unwrap_or(0o644) as u32;
        if let Some(source) = volume.get("configMap").or_else(|| volume.get("secret")) {
            let kind = if volume.get("configMap").is_some() {
                "configMap"
            } else {
                "secret"
            };
            let name = source["name"]
                .as_str()
                .or_else(|| source["secretName"].as_str());
            return Some(self.object_files(kind, name, source, default_mode(source)));
        }
        if let Some(source) = volume.get("downwardAPI") {
            return Some(self.downward_files(&source["items"], default_mode(source)));
        }
        if let Some(source) = volume.get("projected") {
            let mode = default_mode(source);
            let mut files = Vec::new();
            for s in source["sources"].as_array().into_iter().flatten() {
                if let Some(cm) = s.get("configMap") {
                    files.extend(self.object_files("configMap", cm["name"].as_str(), cm, mode));
                } else if let Some(secret) = s.get("secret") {
                    files.extend(self.object_files(
                        "secret",
                        secret["name"].as_str(),
                        secret,
                        mode,
                    ));
                } else if let Some(d) = s.get("downwardAPI") {
                    files.extend(self.downward_files(&d["items"], mode));
                } else if let Some(t) = s.get("serviceAccountToken") {
                    // The token itself is the kubelet's to request; its file is there.
                    let path = t["path"].as_str().unwrap_or("token");
                    files.push((path.to_string(), 0o600.min(mode), String::new()));
                }
            }
            return Some(files);
        }
        None
    }

    /// A ConfigMap's or Secret's keys as files (`items` pick and rename them).
    fn object_files(
        &self,
        kind: &str,
        name: Option<&str>,
        source: &Value,
        default_mode: u32,
    ) -> Vec<(String, u32, String)> {
        let data = self.data(kind, name);
        let items = source["items"].as_array();
        match items {
            Some(items) => items
                .iter()
                .filter_map(|i| {
                    let key = i["key"].as_str()?;
                    let content = match &data {
                        Some(d) => d.get(key)?.clone(),
                        None if self.facts.objects.is_none() => String::new(),
                        None => return None,
                    };
                    let mode = i["mode"].as_u64().map_or(default_mode, |m| m as u32);
                    Some((i["path"].as_str()?.to_string(), mode, content))
                })
                .collect(),
            None => data
                .into_iter()
                .flatten()
                .map(|(k, v)| (k, default_mode, v))
                .collect(),
        }
    }

    fn downward_files(&self, items: &Value, default_mode: u32) -> Vec<(String, u32, String)> {
        items
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| {
                let content = if let Some(f) = i["fieldRef"]["fieldPath"].as_str() {
                    self.field(f)?
                } else {
                    self.resource(&i["resourceFieldRef"])?
                };
                let mode = i["mode"].as_u64().map_or(default_mode, |m| m as u32);
                Some((i["path"].as_str()?.to_string(), mode, content))
            })
            .collect()
    }

    /// The subPaths (subPathExpr expanded) that mounts of a volume use, in every container.
    fn sub_paths(&self, volume: &str) -> Vec<String> {
        containers(self.pod)
            .flat_map(|c| c["volumeMounts"].as_array().into_iter().flatten())
            .filter(|m| m["name"].as_str() == Some(volume))
            .filter_map(|m| {
                let sub = match m["subPathExpr"].as_str() {
                    Some(e) => expand(e, &self.env),
                    None => m["subPath"].as_str()?.to_string(),
                };
                let sub = clean(&sub);
                (sub != "/").then(|| sub.trim_start_matches('/').to_string())
            })
            .collect()
    }

    /// Files the kubelet and the kernel give every container: `/etc/hosts`, `/etc/hostname`,
    /// the pod's sysctls under `/proc/sys`, `/proc/self/status`.
    fn system_file(&self, path: &str) -> Option<File> {
        let content = match path {
            "/etc/hosts" => self.hosts_file(),
            "/etc/hostname" => format!("{}\n", self.hostname()),
            "/proc/self/status" => {
                let sc = |f: &str| {
                    let c = &self.container["securityContext"][f];
                    if c.is_null() {
                        &self.pod["spec"]["securityContext"][f]
                    } else {
                        c
                    }
                };
                let filtered = matches!(
                    sc("seccompProfile")["type"].as_str(),
                    Some("RuntimeDefault" | "Localhost")
                );
                let nnp = self.process().no_new_privs;
                format!(
                    "NoNewPrivs:\t{}\nSeccomp:\t{}\n",
                    u8::from(nnp),
                    if filtered { 2 } else { 0 }
                )
            }
            _ => {
                let name = path.strip_prefix("/proc/sys/")?.replace('/', ".");
                let sysctl = self.pod["spec"]["securityContext"]["sysctls"]
                    .as_array()?
                    .iter()
                    .find(|s| {
                        s["name"].as_str().map(|n| n.replace('/', ".")) == Some(name.clone())
                    })?;
                format!("{}\n", sysctl["value"].as_str().unwrap_or_default())
            }
        };
        Some(File {
            content: Some(content),
            mode: 0o644,
            fs_type: EXT4_MAGIC,
            uid: 0,
            gid: 0,
        })
    }

    /// The kubelet's managed `/etc/hosts`: localhost entries, the pod's own name (its FQDN first
    /// when it has a subdomain), then its hostAliases.
    fn hosts_file(&self) -> String {
        let mut out = String::from(
            "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n\
             ::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n\
             fe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
        );
        let ip = self.pod["status"]["podIP"].as_str().unwrap_or_default();
        let host = self.hostname();
        if !ip.is_empty() {
            match self.pod["spec"]["subdomain"]
                .as_str()
                .filter(|s| !s.is_empty())
            {
                Some(sub) => {
                    let ns = self.pod["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "{ip}\t{host}.{sub}.{ns}.svc.cluster.local\t{host}\n"
                    ));
                }
                None => out.push_str(&format!("{ip}\t{host}\n")),
            }
        }
        let aliases = self.pod["spec"]["hostAliases"].as_array();
        if let Some(aliases) = aliases.filter(|a| !a.is_empty()) {
            out.push_str("\n# Entries added by HostAliases.\n");
            for a in aliases {
                let names: Vec<&str> = a["hostnames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                out.push_str(&format!(
                    "{}\t{}\n",
                    a["ip"].as_str().unwrap_or_default(),
                    names.join("\t")
                ));
            }
        }
        out
    }

    fn fs_group(&self) -> Option<u64> {
        self.pod["spec"]["securityContext"]["fsGroup"].as_u64()
    }

    fn security(&self, field: &str) -> Option<u64> {
        self.container["securityContext"][field]
            .as_u64()
            .or_else(|| self.pod["spec"]["securityContext"][field].as_u64())
    }
}

impl Sandbox for PodSandbox<'_> {
    fn env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }

    fn file(&self, path: &str) -> Option<File> {
        let path = clean(path);
        let Some((_, volume, inner)) = self.mount_of(&path) else {
            return self.system_file(&path);
        };
        let fs_group = self.fs_group();
        let memory = volume["emptyDir"]["medium"].as_str() == Some("Memory")
            || ["secret", "downwardAPI", "projected"]
                .iter()
                .any(|k| volume.get(*k).is_some());
        let fs_type = if memory { TMPFS_MAGIC } else { EXT4_MAGIC };
        // Directories are the kubelet's: world-writable and sticky, setgid to the fsGroup.
        let dir = File {
            content: None,
            mode: 0o1777 | fs_group.map_or(0, |_| 0o2000),
            fs_type,
            uid: 0,
            gid: fs_group.unwrap_or(0),
        };
        if inner.is_empty() {
            return Some(dir);
        }
        let Some(files) = self.volume_files(volume) else {
            // emptyDir, hostPath, claims: the kubelet makes the subPaths mounted from it; other
            // files are unknown.
            let made = self.sub_paths(volume["name"].as_str().unwrap_or_default());
            return made
                .iter()
                .any(|s| *s == inner || s.starts_with(&format!("{inner}/")))
                .then_some(dir);
        };
        if let Some((_, mode, content)) = files
            .iter()
            .find(|(p, _, _)| clean(p) == format!("/{inner}"))
        {
            // Read-only volumes with an fsGroup: group-readable by it (the kubelet's roMask).
            let mode = if fs_group.is_some() {
                mode | 0o440
            } else {
                *mode
            };
            return Some(File {
                content: Some(content.clone()),
                mode: mode & 0o7777,
                fs_type,
                uid: 0,
                gid: fs_group.unwrap_or(0),
            });
        }
        let prefix = format!("/{inner}/");
        if files.iter().any(|(p, _, _)| clean(p).starts_with(&prefix)) {
            return Some(dir);
        }
        // Not looked up (the simulated node): any other path is taken to be one of its keys.
        self.facts.objects.is_none().then_some(File {
            content: Some(String::new()),
            mode: 0o644,
            ..dir
        })
    }

    fn process(&self) -> Process {
        let mut supplemental: Vec<u64> = self.pod["spec"]["securityContext"]["supplementalGroups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .collect();
        if let Some(g) = self.fs_group() {
            supplemental.push(g);
        }
        let sc = &self.container["securityContext"];
        Process {
            uid: self.security("runAsUser").unwrap_or(0),
            gid: self.security("runAsGroup").unwrap_or(0),
            supplemental,
            privileged: sc["privileged"].as_bool() == Some(true),
            no_new_privs: sc["allowPrivilegeEscalation"].as_bool() == Some(false),
        }
    }

    fn writable(&self, path: &str) -> Result<(), &'static str> {
        const READ_ONLY: &str = "Read-only file system";
        let message_path = self.container["terminationMessagePath"]
            .as_str()
            .unwrap_or("/dev/termination-log");
        if path == clean(message_path) {
            return Ok(());
        }
        match self.mount_of(path) {
            Some((mount, volume, _)) => {
                let projected = ["configMap", "secret", "downwardAPI", "projected"]
                    .iter()
                    .any(|k| volume.get(*k).is_some());
                if mount["readOnly"].as_bool() == Some(true) || projected {
                    Err(READ_ONLY)
                } else {
                    Ok(())
                }
            }
            None if self.container["securityContext"]["readOnlyRootFilesystem"].as_bool()
                == Some(true) =>
            {
                Err(READ_ONLY)
            }
            None => Ok(()),
        }
    }
}

/// The downward API's text of a map: `key="value"` lines (Go-quoted), sorted, no final new line.
pub fn format_map(m: &BTreeMap<String, String>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn div_ceil(a: i128, b: i128) -> i128 {
    if b == 0 {
        return 0;
    }
    let q = a / b;
    if (a % b != 0) && ((a < 0) == (b < 0)) {
        q + 1
    } else {
        q
    }
}

/// A `subPathExpr` expanded as the kubelet does: every referenced variable must have a
/// non-empty value, else the error names the missing ones (sorted, comma-separated).
pub fn expand_sub_path(expr: &str, env: &[(String, String)]) -> Result<String, String> {
    let mut missing = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("$(") {
        let after = &rest[at + 2..];
        let Some((name, tail)) = after.split_once(')') else {
            break;
        };
        if env
            .iter()
            .find(|(k, _)| k == name)
            .is_none_or(|(_, v)| v.is_empty())
        {
            missing.insert(name.to_string());
        }
        rest = tail;
    }
    if missing.is_empty() {
        Ok(expand(expr, env))
    } else {
        Err(missing.into_iter().collect::<Vec<_>>().join(", "))
    }
}

/// The kubelet's `$(VAR)` expansion: a defined variable is replaced, `$$` is a `$`, anything
/// else is kept as written.
pub fn expand(text: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some((name, tail)) = after.strip_prefix('(').and_then(|r| r.split_once(')')) {
            match env.iter().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = tail;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
