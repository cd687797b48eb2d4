//! `k1s snapshot save|restore|status`: the command-line side of embedded-store snapshots.
//!
//! `save` asks the running server (it holds the store's lock) for a snapshot over the admin
//! kubeconfig, writes it beside FILE, checks it end to end, then renames it into place.
//! `restore` and `status` work on files alone.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use futures::AsyncReadExt;

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
    /// Save a consistent snapshot of a running server's store to FILE (system:masters
    /// credentials: the admin kubeconfig of --kubeconfig or <data-dir>/admin.conf).
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
        SnapshotCommand::Save { file } => save(&args.admin.path()?, &file).await,
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

async fn save(kubeconfig: &Path, file: &Path) -> anyhow::Result<()> {
    let client = crate::client_from_kubeconfig(kubeconfig).await?;
    let req = http::Request::get(k1s_apiserver::snapshot::PATH).body(Vec::new())?;
    let mut body = client
        .request_stream(req)
        .await
        .context("asking the server for a snapshot")?;
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
    let size = std::fs::metadata(file)?.len();
    println!(
        "Snapshot saved at {}: revision {}, {} keys, {size} bytes, sha256 {}",
        file.display(),
        info.revision,
        info.keys,
        info.sha256
    );
    Ok(())
}
