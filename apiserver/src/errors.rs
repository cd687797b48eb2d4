//! The one place where storage errors become API `Status` errors.

use k1s_apimachinery::status::Reason;
use k1s_apimachinery::{ApiError, GroupResource};
use k1s_storage::Error as StoreError;

/// Maps a storage failure on `name` of `gr` to the error upstream's API server returns.
pub fn from_store(err: StoreError, gr: &GroupResource, name: &str) -> ApiError {
    match err {
        StoreError::NotFound { .. } => ApiError::not_found(gr, name),
        StoreError::AlreadyExists { .. } => ApiError::already_exists(gr, name),
        StoreError::Conflict { .. } => ApiError::conflict_modified(gr, name),
        StoreError::Compacted {
            requested,
            compacted,
        } => ApiError::too_old_resource_version(requested.0, compacted.0 + 1),
        // Upstream's Expired with a token that goes on from the same key at the latest
        // revision (handleCompactedErrorForPaging).
        StoreError::ContinueExpired { resume, .. } => ApiError::new(
            410,
            Reason::Expired,
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter, or use the continue token \
             in this response to retrieve the remainder of the results. Continuing with the \
             provided token results in an inconsistent list - objects that were created, \
             modified, or deleted between the time the first chunk was returned and now may \
             show up in the list.",
        )
        .with_continue(resume),
        StoreError::InvalidContinue(msg) => {
            ApiError::bad_request(format!("continue key is not valid: {msg}"))
        }
        StoreError::FutureRevision { requested, current } => ApiError::timeout(
            format!("Too large resource version: {requested}, current: {current}"),
            1,
        ),
        StoreError::WatcherTooSlow { last_delivered } => ApiError::expired(format!(
            "watch fell behind at resource version {last_delivered}; start a new watch"
        )),
        StoreError::ValueTooLarge { .. } => ApiError::request_entity_too_large(err.to_string()),
        StoreError::InvalidKey(_) | StoreError::Unsupported(_) => {
            ApiError::bad_request(err.to_string())
        }
        StoreError::Corrupt(_) | StoreError::Format(_) | StoreError::Engine(_) => {
            tracing::error!(error = %err, "storage failure");
            ApiError::internal(err)
        }
        StoreError::Closed => ApiError::service_unavailable("the server is shutting down"),
    }
}
