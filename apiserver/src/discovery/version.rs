//! `/version`: the Kubernetes version k1s implements (1.33), in upstream's `version.Info` shape.

use serde_json::{Value, json};

/// The Kubernetes major release k1s implements.
pub const KUBERNETES_MAJOR: &str = "1";
/// The Kubernetes minor release k1s implements.
pub const KUBERNETES_MINOR: &str = "33";

/// `gitVersion`: `v1.33.0+k1s-<crate version>`. Semver build metadata (after `+`, as k3s does)
/// keeps the version a plain 1.33 release for every semver comparison clients make (kubectl's
/// skew check, the kubectl version dispatcher, Helm's `kubeVersion`).
pub fn git_version() -> String {
    let ours: String = env!("CARGO_PKG_VERSION")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0+k1s-{ours}")
}

/// The body of `GET /version`.
///
/// Build provenance comes from compile-time environment variables when the release build sets
/// them (`K1S_GIT_COMMIT`, `K1S_GIT_TREE_STATE`, `K1S_BUILD_DATE`, `K1S_RUSTC_VERSION`); otherwise
/// the fields carry upstream's unset defaults (empty strings, the Unix epoch).
pub fn version_info() -> Value {
    let rustc = match option_env!("K1S_RUSTC_VERSION") {
        Some(v) => v.to_string(),
        None => match env!("CARGO_PKG_RUST_VERSION") {
            "" => "rustc".to_string(),
            msrv => format!("rustc >= {msrv}"),
        },
    };
    json!({
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "emulationMajor": KUBERNETES_MAJOR,
        "emulationMinor": KUBERNETES_MINOR,
        "minCompatibilityMajor": KUBERNETES_MAJOR,
        "minCompatibilityMinor": "32",
        "gitVersion": git_version(),
        "gitCommit": option_env!("K1S_GIT_COMMIT").unwrap_or(""),
        "gitTreeState": option_env!("K1S_GIT_TREE_STATE").unwrap_or(""),
        "buildDate": option_env!("K1S_BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z"),
        "goVersion": rustc,
        "compiler": "rustc",
        "platform": platform(),
    })
}

/// `os/arch` with Go's architecture names (`linux/amd64`), which is what clients expect.
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        other => other,
    };
    format!("{}/{arch}", std::env::consts::OS)
}
