//! Waiting for a condition on one object, through a watch (no polling).

use std::fmt::Debug;
use std::time::Duration;

use kube::api::Api;
use kube::runtime::wait::await_condition;
use serde::de::DeserializeOwned;

use crate::Error;

/// How long the helpers wait unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Waits (up to [`DEFAULT_TIMEOUT`]) until the object `name` exists and `condition` holds for
/// it; returns the object as it was then.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    condition: impl Fn(&K) -> bool,
) -> Result<K, Error>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    wait_for_within(api, name, DEFAULT_TIMEOUT, condition).await
}

/// [`wait_for`] with a timeout.
pub async fn wait_for_within<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    condition: impl Fn(&K) -> bool,
) -> Result<K, Error>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let what = format!("{} {name}", K::kind(&Default::default()));
    let waited = tokio::time::timeout(
        timeout,
        await_condition(api.clone(), name, |o: Option<&K>| o.is_some_and(&condition)),
    )
    .await;
    match waited {
        Err(_) => Err(Error::Timeout {
            what,
            after: timeout,
        }),
        Ok(Err(e)) => Err(Error::Wait {
            what,
            message: e.to_string(),
        }),
        Ok(Ok(Some(object))) => Ok(object),
        Ok(Ok(None)) => Err(Error::Wait {
            what,
            message: "the object is gone".into(),
        }),
    }
}

/// Waits (up to [`DEFAULT_TIMEOUT`]) until the object `name` does not exist.
pub async fn wait_for_deletion<K>(api: &Api<K>, name: &str) -> Result<(), Error>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let what = format!("{} {name} to be deleted", K::kind(&Default::default()));
    match tokio::time::timeout(
        DEFAULT_TIMEOUT,
        await_condition(api.clone(), name, |o: Option<&K>| o.is_none()),
    )
    .await
    {
        Err(_) => Err(Error::Timeout {
            what,
            after: DEFAULT_TIMEOUT,
        }),
        Ok(Err(e)) => Err(Error::Wait {
            what,
            message: e.to_string(),
        }),
        Ok(Ok(_)) => Ok(()),
    }
}
