//! Copying a whole store into another (sled to etcd and back): how a single-box cluster grows.
//!
//! The copy reads one consistent snapshot of the source, page by page, and creates every key in
//! the target. The target assigns its own revisions (neither sled nor etcd can be told which
//! revision a write gets), so the keys' order and values are kept but `resourceVersion`s start
//! over: clients relist, as after an etcd restore.

use crate::{Error, ListOptions, Result, Store};

/// Keys read per page of the source snapshot.
const PAGE: usize = 500;

/// Copies every key under `prefix` from `from` into `to`, which must hold none under it.
/// Returns how many keys were copied.
pub async fn copy_all(from: &dyn Store, to: &dyn Store, prefix: &str) -> Result<u64> {
    let existing = to.count(prefix).await?;
    if existing > 0 {
        return Err(Error::Engine(format!(
            "the target already holds {existing} keys under {prefix:?}; migrate into an empty store"
        )));
    }
    let mut copied = 0u64;
    let mut opts = ListOptions {
        limit: PAGE,
        revision: Some(from.fresh_revision().await?),
        ..Default::default()
    };
    loop {
        let page = from.list(prefix, opts).await?;
        for kv in page.items {
            to.create(&kv.key, kv.value).await?;
            copied += 1;
        }
        match page.continue_token {
            Some(token) => {
                opts = ListOptions {
                    limit: PAGE,
                    continue_token: Some(token),
                    revision: None,
                }
            }
            None => return Ok(copied),
        }
    }
}
