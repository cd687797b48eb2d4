//! `k1s snapshot save|restore|status`: the command-line side of embedded-store snapshots.
//!
//! `save` reads a stopped server's data dir directly; when a running server holds the store's
//! lock (or `--kubeconfig` is given) it asks that server over the admin kubeconfig. Either way
//! the file is written beside FILE, checked end to end, then renamed into place. `restore` and
//! `status` work on files alone.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use futures::{AsyncReadExt, TryStreamExt};

/// Where `--etcd-servers` users are sent instead.
const ETCD_HINT: &str = "k1s snapshots cover the embedded store only; with --etcd-servers the \
     data lives in etcd: use `etcdctl snapshot save FILE` (and `etcdutl snapshot restore FILE \
     --data-dir DIR` to restore)";

#[derive(clap::Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    admin: crate::AdminKubeconfig,
    /// Accepted only to point etcd users to etcd's own snapshot tool.
    #[arg(long, global = true, value_delimiter = ',')]
    etcd_servers: Vec<String>,
    #[command(subcommand)]
    command: SnapshotCommand,
}

#[derive(clap::Subcommand)]
enum SnapshotCommand {
    /// Save a consistent snapshot to FILE: of <data-dir>/store when no server runs on it, else
    /// through the server (system:masters credentials: --kubeconfig or <data-dir>/admin.conf).
    Save { file: PathBuf },
    /// Build <data-dir>/store from FILE for a new server; the data dir must hold no store.
    Restore { file: PathBuf },
    /// Check FILE end to end and print its revision, key count and checksum.
    Status { file: PathBuf },
}

pub async fn run(args: SnapshotArgs) -> anyhow::Result<()> {
    if !args.etcd_servers.is_empty() {
        anyhow::bail!(ETCD_HINT);
    }
    match args.command {
        SnapshotCommand::Save { file } => {
            if args.admin.kubeconfig.is_none() {
                let data_dir = match &args.admin.data_dir {
                    Some(d) => d.clone(),
                    None => crate::default_data_dir()?,
                };
                if let Some(store) = open_stopped(&data_dir.join("store")) {
                    let info = save_direct(store, &file).await?;
                    print_saved("", &file, &info)?;
                    println!("(read {} directly: no server holds it)", data_dir.display());
                    return Ok(());
                }
            }
            save(&args.admin.path()?, &file).await
        }
        SnapshotCommand::Restore { file } => {
            let data_dir = args
                .admin
                .data_dir
                .context("restore needs --data-dir DIR: the new server's data directory")?;
            let info = k1s_storage::snapshot::restore(&file, &data_dir)
                .with_context(|| format!("restoring {}", file.display()))?;
            println!(
                "Restored {} keys at revision {} into {}; start the server with --data-dir {}",
                info.keys,
                info.revision,
                data_dir.join("store").display(),
                data_dir.display()
            );
            Ok(())
        }
        SnapshotCommand::Status { file } => {
            let info = k1s_storage::snapshot::verify(&file)
                .with_context(|| format!("checking {}", file.display()))?;
            let size = std::fs::metadata(&file)?.len();
            println!(
                "revision {}, {} keys, {size} bytes, sha256 {}",
                info.revision, info.keys, info.sha256
            );
            Ok(())
        }
    }
}

/// The store of a stopped server; `None` when there is none or a running server holds it.
fn open_stopped(store_dir: &Path) -> Option<std::sync::Arc<dyn k1s_storage::Store>> {
    // Opening would create a missing store: look for its format marker first.
    if !store_dir.join("FORMAT").exists() {
        return None;
    }
    let mut config =
        k1s_storage::StoreConfig::new(k1s_storage::Backend::Disk(store_dir.to_path_buf()));
    config.compaction.interval = None;
    let store = k1s_storage::LocalStore::open(config).ok()?;
    Some(std::sync::Arc::new(store))
}

async fn save(kubeconfig: &Path, file: &Path) -> anyhow::Result<()> {
    let client = crate::client_from_kubeconfig(kubeconfig).await?;
    let req = http::Request::get(k1s_apiserver::snapshot::PATH).body(Vec::new())?;
    let body = client
        .request_stream(req)
        .await
        .context("asking the server for a snapshot")?;
    let info = write_checked(body, file).await?;
    print_saved("", file, &info)
}

/// Saves a snapshot of a store this process holds to `file` (checked, then renamed into place).
pub(crate) async fn save_direct(
    store: std::sync::Arc<dyn k1s_storage::Store>,
    file: &Path,
) -> anyhow::Result<k1s_storage::SnapshotInfo> {
    let stream = Box::pin(k1s_storage::snapshot::save_stream(store).await?);
    let stream = stream.map_err(std::io::Error::other).into_async_read();
    write_checked(stream, file).await
}

/// The line saying what was saved; `prefix` is empty or a kubeadm-style tag such as
/// `"[upgrade/backup] "`.
pub(crate) fn print_saved(
    prefix: &str,
    file: &Path,
    info: &k1s_storage::SnapshotInfo,
) -> anyhow::Result<()> {
    let size = std::fs::metadata(file)?.len();
    println!(
        "{prefix}Snapshot saved at {}: revision {}, {} keys, {size} bytes, sha256 {}",
        file.display(),
        info.revision,
        info.keys,
        info.sha256
    );
    Ok(())
}

/// Writes a snapshot to `FILE.part`, checks it end to end, then renames it to `file`.
async fn write_checked(
    mut body: impl futures::AsyncRead + Unpin,
    file: &Path,
) -> anyhow::Result<k1s_storage::SnapshotInfo> {
    let name = file
        .file_name()
        .with_context(|| format!("{} is not a file name", file.display()))?;
    let mut part_name = name.to_os_string();
    part_name.push(".part");
    let part = file.with_file_name(part_name);
    let written = async {
        let mut out =
            std::fs::File::create(&part).with_context(|| format!("creating {}", part.display()))?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = body
                .read(&mut buf)
                .await
                .context("the snapshot stream broke off")?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n])?;
        }
        out.sync_all()?;
        k1s_storage::snapshot::verify(&part).context("the received snapshot is incomplete")
    }
    .await;
    let info = match written {
        Ok(info) => info,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    std::fs::rename(&part, file)
        .with_context(|| format!("renaming {} to {}", part.display(), file.display()))?;
    Ok(info)
}
