//! Test helper for the crash test: writes to a sled store forever, printing each acknowledged write.
//!
//! Usage: `k1s-storage-crash-writer DIR ROUND`. Lines: `CREATE key rev len doomed`, `COUNT key n rev`,
//! `DELETE key rev`. The parent kills it with SIGKILL and checks every printed write survived.

use std::sync::Arc;

use bytes::Bytes;
use k1s_storage::{Backend, LocalStore, Store, StoreConfig};

/// The value written for a key: its name repeated up to `len` bytes, so content is checkable.
fn value_for(key: &str, len: usize) -> Bytes {
    Bytes::from(
        key.as_bytes()
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect::<Vec<u8>>(),
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: DIR ROUND"))?;
    let round = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: DIR ROUND"))?;
    let mut config = StoreConfig::new(Backend::Disk(dir.into()));
    config.compaction.keep_revisions = 500;
    config.compaction.interval = Some(std::time::Duration::from_millis(50));
    let store: Arc<dyn Store> = Arc::new(LocalStore::open(config)?);
    println!("OPEN {}", store.current_revision());
    let mut tasks = Vec::new();
    for task in 0..8 {
        let store = store.clone();
        let round = round.clone();
        tasks.push(tokio::spawn(async move {
            let counter = format!("/crash/counter/{task}");
            let mut n: u64 = match store.get(&counter).await? {
                Some(kv) => std::str::from_utf8(&kv.value)?.parse()?,
                None => 0,
            };
            for i in 0u64.. {
                // Mostly small values; every 40th is large enough to go to sled's blob files.
                let len = if i % 40 == 39 {
                    200_000
                } else {
                    100 + (i as usize % 900)
                };
                let key = format!("/crash/r{round}/t{task}/k{i}");
                let kv = store.create(&key, value_for(&key, len)).await?;
                // A key about to be deleted may be gone after a crash even before its delete is acked.
                let doomed = i % 5 == 4;
                println!("CREATE {key} {} {len} {doomed}", kv.mod_revision);
                if doomed {
                    let d = store.delete(&key, Some(kv.mod_revision)).await?;
                    println!("DELETE {key} {}", d.revision);
                }
                n += 1;
                let kv = match store.get(&counter).await? {
                    Some(cur) => {
                        store
                            .update(&counter, Bytes::from(n.to_string()), Some(cur.mod_revision))
                            .await?
                    }
                    None => store.create(&counter, Bytes::from(n.to_string())).await?,
                };
                println!("COUNT {counter} {n} {}", kv.mod_revision);
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}
