//! `k1s upgrade plan|apply`: kubeadm's upgrade commands for what k1s upgrades, its data directory.
//!
//! `plan` reads the store's format marker and probes the store's lock; it never opens the store.
//! `apply` backs the store up first (a snapshot read through a read-only opening, so the backup
//! holds the store exactly as the older format had it), then converts it in place to this build's
//! format (a sled store of format 1 or 2 becomes an image store, format 4) and checks that the
//! upgraded store reads back the same keys at the same revision.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

#[derive(clap::Args)]
pub struct UpgradeArgs {
    #[command(subcommand)]
    command: UpgradeCommand,
}

#[derive(clap::Subcommand)]
enum UpgradeCommand {
    /// Check the store format of a stopped server's data directory and say what apply would do.
    Plan {
        /// Default: ~/.k1s
        #[arg(long, env = "K1S_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Back the store up, then upgrade it in place to this build's format.
    Apply {
        /// Default: ~/.k1s
        #[arg(long, env = "K1S_DATA_DIR")]
        data_dir: Option<PathBuf>,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Where to write the backup snapshot. Default: <data-dir>/backup-<time>.snap
        #[arg(long)]
        backup: Option<PathBuf>,
    },
}

/// What the checks found about a data directory's store.
struct Found {
    store_dir: PathBuf,
    format: u32,
}

pub async fn run(args: UpgradeArgs) -> anyhow::Result<()> {
    match args.command {
        UpgradeCommand::Plan { data_dir } => plan(&data_dir_or_default(data_dir)?),
        UpgradeCommand::Apply {
            data_dir,
            yes,
            backup,
        } => apply(&data_dir_or_default(data_dir)?, yes, backup).await,
    }
}

fn data_dir_or_default(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(d) => Ok(d),
        None => crate::default_data_dir(),
    }
}

/// The preflight both commands run: a k1s store this build reads, held by no running server.
fn preflight(data_dir: &Path) -> anyhow::Result<Found> {
    println!("[preflight] Running pre-flight checks.");
    if !data_dir.is_dir() {
        anyhow::bail!(
            "[preflight] the data directory {} does not exist (pass --data-dir)",
            data_dir.display()
        );
    }
    let store_dir = data_dir.join("store");
    let format =
        k1s_storage::store_format(&store_dir).map_err(|e| anyhow::anyhow!("[preflight] {e}"))?;
    if k1s_storage::store_in_use(&store_dir)? {
        anyhow::bail!(
            "[preflight] the store at {} is locked: a running k1s server holds it; stop the \
             server first (upgrade works on a stopped server's data directory)",
            store_dir.display()
        );
    }
    println!(
        "[upgrade/versions] k1s version: v{}",
        env!("CARGO_PKG_VERSION")
    );
    println!(
        "[upgrade/versions] Store format: {format} (at {})",
        store_dir.display()
    );
    println!(
        "[upgrade/versions] This build's store format: {}",
        k1s_storage::FORMAT_VERSION
    );
    Ok(Found { store_dir, format })
}

/// Formats this build serves without a conversion: its own, and format 3 (an image store whose
/// log holds no compressed record yet), which a server marks 4 when it opens it.
fn is_current(format: u32) -> bool {
    format == k1s_storage::FORMAT_VERSION || format == 3
}

fn up_to_date(found: &Found) {
    if found.format == k1s_storage::FORMAT_VERSION {
        println!(
            "[upgrade] The store is up to date: it has this build's format {}; nothing to do.",
            found.format
        );
    } else {
        println!(
            "[upgrade] The store is up to date: this build serves format {} as it is (the server \
             marks it format {} when it opens it); nothing to do.",
            found.format,
            k1s_storage::FORMAT_VERSION
        );
    }
}

fn plan(data_dir: &Path) -> anyhow::Result<()> {
    let found = preflight(data_dir)?;
    if is_current(found.format) {
        up_to_date(&found);
        return Ok(());
    }
    println!("[upgrade] Upgrade available.");
    println!();
    println!("Upgrade the store to this build's format:");
    println!();
    let current = format!("format {}", found.format);
    println!("{:<12}{:<12}TARGET", "COMPONENT", "CURRENT");
    println!(
        "{:<12}{current:<12}format {}",
        "store",
        k1s_storage::FORMAT_VERSION
    );
    println!();
    println!("You can now apply the upgrade by executing the following command:");
    println!();
    println!("\tk1s upgrade apply --data-dir {}", data_dir.display());
    println!();
    println!(
        "It writes a backup snapshot first (default {}), then upgrades the store in place.",
        data_dir.join("backup-<time>.snap").display()
    );
    println!("_____________________________________________________________________");
    Ok(())
}

async fn apply(data_dir: &Path, yes: bool, backup: Option<PathBuf>) -> anyhow::Result<()> {
    let found = preflight(data_dir)?;
    if is_current(found.format) {
        up_to_date(&found);
        return Ok(());
    }
    let backup = backup.unwrap_or_else(|| {
        let now = jiff::Timestamp::now().strftime("%Y-%m-%d-%H-%M-%S");
        data_dir.join(format!("backup-{now}.snap"))
    });
    if backup.exists() {
        anyhow::bail!(
            "[upgrade/backup] {} already exists; name another file with --backup",
            backup.display()
        );
    }
    println!(
        "[upgrade/versions] You have chosen to upgrade the store from format {} to format {}",
        found.format,
        k1s_storage::FORMAT_VERSION
    );
    if !yes && !crate::confirm("[upgrade] Are you sure you want to proceed?")? {
        anyhow::bail!("aborted upgrade operation");
    }

    println!(
        "[upgrade/backup] Writing a backup of the store to {}",
        backup.display()
    );
    let saved = {
        let mut config =
            k1s_storage::StoreConfig::new(k1s_storage::Backend::Disk(found.store_dir.clone()));
        config.compaction.interval = None;
        let store = k1s_storage::LocalStore::open_read_only(config)
            .context("[upgrade/backup] opening the store for reading")?;
        let result = crate::snapshot::save_direct(Arc::new(store.clone()), &backup).await;
        store.close();
        result.context("[upgrade/backup] writing the backup; the store is unchanged")?
    };
    crate::snapshot::print_saved("[upgrade/backup] ", &backup, &saved)?;

    let restore_hint = || {
        format!(
            "[upgrade] the store was backed up before the upgrade: to go back, move {} aside and \
             run `k1s snapshot restore {} --data-dir {}`",
            found.store_dir.display(),
            backup.display(),
            data_dir.display()
        )
    };
    println!(
        "[upgrade/store] Upgrading the store at {} in place: format {} to format {}",
        found.store_dir.display(),
        found.format,
        k1s_storage::FORMAT_VERSION
    );
    let verified = upgrade_and_verify(&found.store_dir, &saved)
        .await
        .with_context(restore_hint)?;
    println!(
        "[upgrade/store] The store opens at format {} and reads back all {} keys at revision {}",
        k1s_storage::FORMAT_VERSION,
        verified,
        saved.revision
    );
    println!();
    println!(
        "[upgrade] SUCCESS! The store at {} was upgraded to format {}.",
        found.store_dir.display(),
        k1s_storage::FORMAT_VERSION
    );
    println!();
    println!(
        "[upgrade] Start the server with --data-dir {}; the backup stays at {} until you remove it.",
        data_dir.display(),
        backup.display()
    );
    Ok(())
}

/// Converts the store to this build's format in place and opens it, then reads every key back
/// and compares the count and revision with the backup. Returns the count.
async fn upgrade_and_verify(
    store_dir: &Path,
    backup: &k1s_storage::SnapshotInfo,
) -> anyhow::Result<u64> {
    use k1s_storage::Store as _;
    let mut config = k1s_storage::StoreConfig::new(k1s_storage::Backend::Disk(store_dir.into()));
    config.compaction.interval = None;
    k1s_storage::upgrade_store(&config).context("converting the store to the image engine")?;
    let store = k1s_storage::LocalStore::open(config).context("opening the upgraded store")?;
    let checked = async {
        let format = k1s_storage::store_format(store_dir)?;
        if format != k1s_storage::FORMAT_VERSION {
            anyhow::bail!("the store still has format {format} after opening it");
        }
        let revision = store.current_revision();
        if revision != backup.revision {
            anyhow::bail!(
                "the upgraded store is at revision {revision}, the backup at {}",
                backup.revision
            );
        }
        // Reading every value back decodes it: a damaged record fails here, not in the server.
        let mut keys = 0u64;
        let mut opts = k1s_storage::ListOptions {
            limit: 500,
            revision: Some(revision),
            ..Default::default()
        };
        loop {
            let page = store.list("/", opts).await?;
            keys += page.items.len() as u64;
            match page.continue_token {
                Some(token) => {
                    opts = k1s_storage::ListOptions {
                        limit: 500,
                        continue_token: Some(token),
                        revision: None,
                    }
                }
                None => break,
            }
        }
        if keys != backup.keys {
            anyhow::bail!(
                "the upgraded store reads back {keys} keys, the backup holds {}",
                backup.keys
            );
        }
        Ok(keys)
    }
    .await;
    store.close();
    checked
}
