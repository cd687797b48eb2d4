//! `list`: `--objects` ConfigMaps listed whole, in one call and in pages of `--page-size`
//! (following `continue` tokens), `--list-repeats` times each: time per full list.

use std::sync::Arc;

use http::Method;
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::time::Instant;

use super::{Ctx, ErrorLog, query_escape, secs_since};
use crate::client::ApiError;
use crate::report::{ListReport, ListTiming};
use crate::stats::{LatencySummary, duration_nanos, rate};

const SCENARIO: &str = "list";

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

/// A list decoded as a client must (every item parsed), keeping only the count.
#[derive(Deserialize)]
struct List {
    #[serde(default)]
    items: Vec<IgnoredAny>,
    #[serde(default)]
    metadata: ListMeta,
}

pub(crate) async fn run(ctx: &Arc<Ctx>) -> ListReport {
    let errors = ErrorLog::new();
    let setup = Instant::now();
    let objects = ctx
        .create_many(SCENARIO, SCENARIO, ctx.settings.objects, &errors)
        .await;
    let setup_seconds = secs_since(setup);

    let (unpaged, t1) = measure(ctx, None, &errors).await;
    let (paged, t2) = measure(ctx, Some(ctx.settings.page_size.max(1)), &errors).await;
    for t in [&unpaged, &paged] {
        if t.lists > 0 && t.items_per_list < objects {
            errors.record_msg(format!(
                "a full list returned {} items; {objects} were created",
                t.items_per_list
            ));
        }
    }

    let cleanup_seconds = ctx.delete_scenario_objects(SCENARIO, &errors).await;
    ListReport {
        objects,
        setup_seconds,
        unpaged,
        paged,
        cleanup_seconds,
        timed_out: t1 || t2,
        errors: errors.snapshot(),
    }
}

/// Lists the namespace's ConfigMaps completely `--list-repeats` times. Returns the timing and
/// whether the deadline cut it short.
async fn measure(
    ctx: &Arc<Ctx>,
    page_size: Option<usize>,
    errors: &Arc<ErrorLog>,
) -> (ListTiming, bool) {
    let mut latencies = Vec::new();
    let (mut pages_per_list, mut items_per_list, mut bytes_per_list) = (0, 0, 0);
    let mut timed_out = false;
    for _ in 0..ctx.settings.list_repeats.max(1) {
        if ctx.past_deadline() {
            timed_out = true;
            break;
        }
        let started = Instant::now();
        match list_all(ctx, page_size).await {
            Ok((pages, items, bytes)) => {
                latencies.push(duration_nanos(started.elapsed()));
                (pages_per_list, items_per_list, bytes_per_list) = (pages, items, bytes);
            }
            Err(e) => errors.record("list", &e),
        }
    }
    let latency_ms = LatencySummary::from_nanos(&mut latencies);
    let items_per_sec = latency_ms
        .as_ref()
        .map_or(0.0, |l| rate(items_per_list, l.mean / 1e3));
    let timing = ListTiming {
        page_size,
        lists: latencies.len(),
        pages_per_list,
        items_per_list,
        bytes_per_list,
        items_per_sec,
        latency_ms,
    };
    (timing, timed_out)
}

/// One full list: (pages, items, bytes).
async fn list_all(ctx: &Ctx, page_size: Option<usize>) -> Result<(usize, u64, u64), ApiError> {
    let (mut pages, mut items, mut bytes) = (0, 0u64, 0u64);
    let mut token: Option<String> = None;
    loop {
        let mut path = ctx.configmaps();
        if let Some(limit) = page_size {
            path.push_str(&format!("?limit={limit}"));
            if let Some(t) = &token {
                path.push_str(&format!("&continue={}", query_escape(t)));
            }
        }
        let body = ctx.client.request(0, Method::GET, &path, None).await?;
        let list: List = serde_json::from_slice(&body)
            .map_err(|e| ApiError::Transport(format!("decoding a ConfigMap list: {e}")))?;
        pages += 1;
        items += list.items.len() as u64;
        bytes += body.len() as u64;
        token = list.metadata.continue_token.filter(|t| !t.is_empty());
        if token.is_none() || page_size.is_none() {
            return Ok((pages, items, bytes));
        }
        if ctx.past_deadline() {
            return Err(ApiError::Transport(
                "the run's deadline passed in the middle of a paged list".into(),
            ));
        }
    }
}
