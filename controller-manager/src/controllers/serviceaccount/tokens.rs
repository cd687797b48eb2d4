//! The serviceaccount-token controller (upstream `pkg/controller/serviceaccount/
//! tokens_controller.go`): a `kubernetes.io/service-account-token` Secret gets its `token` (a
//! legacy, non-expiring JWT signed with the service-account key), `ca.crt` and `namespace`; a
//! token Secret whose ServiceAccount is gone is deleted; a deleted token Secret is dropped from its
//! ServiceAccount's `secrets`.

use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};

use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::informer::{Delta, NAMESPACE_INDEX, Store, key_of, split_key};
use crate::{ControllerContext, LegacyTokenClaims, LegacyTokenSigner};

/// The Secret type this controller fills.
pub(super) const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// Upstream's ServiceAccountNameKey / ServiceAccountUIDKey annotations.
pub(super) const SA_NAME_KEY: &str = "kubernetes.io/service-account.name";
pub(super) const SA_UID_KEY: &str = "kubernetes.io/service-account.uid";

/// Queue keys besides a live Secret's `ns/name`: what is left to do once an object is gone
/// (upstream keeps the same facts in its queue keys).
const SECRET_GONE: &str = "secret-gone:";
const ACCOUNT_GONE: &str = "account-gone:";

struct TokensController {
    client: Client,
    signer: LegacyTokenSigner,
    root_ca: Vec<u8>,
    secrets: Arc<Store<Secret>>,
    accounts: Arc<Store<ServiceAccount>>,
}

fn is_token(secret: &Secret) -> bool {
    secret.type_.as_deref() == Some(TOKEN_TYPE)
}

pub(super) fn annotation<'a>(secret: &'a Secret, key: &str) -> &'a str {
    secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map_or("", String::as_str)
}

/// Upstream's IsServiceAccountToken: a token Secret naming `sa` (and its UID, when it names one).
fn is_token_of(secret: &Secret, namespace: &str, name: &str, uid: &str) -> bool {
    let secret_uid = annotation(secret, SA_UID_KEY);
    is_token(secret)
        && secret.metadata.namespace.as_deref() == Some(namespace)
        && annotation(secret, SA_NAME_KEY) == name
        && (secret_uid.is_empty() || secret_uid == uid)
}

pub fn start(ctx: ControllerContext) {
    let Some(signer) = ctx.options.legacy_token_signer.clone() else {
        tracing::info!("serviceaccount-token: no service-account private key; not started");
        return;
    };
    let secrets = ctx.factory.informer::<Secret>();
    let accounts = ctx.factory.informer::<ServiceAccount>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        secrets.add_handler(move |d: &Delta<Secret>| {
            let s = d.object();
            if !is_token(s) {
                return;
            }
            match d {
                Delta::Deleted(_) => queue.add(format!(
                    "{SECRET_GONE}{}/{}/{}",
                    key_of(s.as_ref()),
                    annotation(s, SA_NAME_KEY),
                    annotation(s, SA_UID_KEY)
                )),
                _ => queue.add(key_of(s.as_ref())),
            }
        });
    }
    {
        let queue = queue.clone();
        accounts.add_handler(move |d: &Delta<ServiceAccount>| {
            if let Delta::Deleted(sa) = d {
                queue.add(format!(
                    "{ACCOUNT_GONE}{}/{}",
                    key_of(sa.as_ref()),
                    sa.metadata.uid.as_deref().unwrap_or_default()
                ));
            }
        });
    }
    let reconciler = Arc::new(TokensController {
        client: ctx.client.clone(),
        signer,
        root_ca: ctx
            .options
            .root_ca_pem
            .clone()
            .unwrap_or_default()
            .into_bytes(),
        secrets: secrets.store(),
        accounts: accounts.store(),
    });
    let workers = ctx.workers("serviceaccount-token", 5);
    ctx.run_workers(reconciler, queue, workers);
}

impl Reconciler for TokensController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        if let Some(rest) = key.strip_prefix(ACCOUNT_GONE) {
            // namespace/name/uid
            let mut parts = rest.splitn(3, '/');
            let (ns, name, uid) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            return self.account_gone(ns, name, uid).await;
        }
        if let Some(rest) = key.strip_prefix(SECRET_GONE) {
            // namespace/name/account name/account uid
            let mut parts = rest.splitn(4, '/');
            let (ns, secret, sa, sa_uid) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            return self.secret_gone(ns, secret, sa, sa_uid).await;
        }
        let Some(secret) = self.secrets.get(key) else {
            return Ok(Action::Done);
        };
        if !is_token(&secret) || secret.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let (ns, _) = split_key(key);
        let ns = ns.unwrap_or_default();
        let sa_name = annotation(&secret, SA_NAME_KEY);
        match self
            .account(ns, sa_name, annotation(&secret, SA_UID_KEY))
            .await?
        {
            Some(sa) => self.populate(&sa, &secret).await,
            None => {
                tracing::debug!(secret = key, "service account is gone; deleting its token");
                self.delete_token(&secret).await
            }
        }
    }
}

impl TokensController {
    fn secrets_api(&self, ns: &str) -> Api<Secret> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// The ServiceAccount `name` (with `uid`, if given) from the cache, else from the server.
    async fn account(
        &self,
        ns: &str,
        name: &str,
        uid: &str,
    ) -> Result<Option<Arc<ServiceAccount>>, Error> {
        let matches =
            |sa: &ServiceAccount| uid.is_empty() || sa.metadata.uid.as_deref() == Some(uid);
        if let Some(sa) = self
            .accounts
            .get_named(Some(ns), name)
            .filter(|sa| matches(sa))
        {
            return Ok(Some(sa));
        }
        if name.is_empty() {
            return Ok(None);
        }
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), ns);
        match api.get_opt(name).await? {
            Some(sa) if matches(&sa) => Ok(Some(Arc::new(sa))),
            _ => Ok(None),
        }
    }

    /// Deletes the token Secrets that named a deleted ServiceAccount.
    async fn account_gone(&self, ns: &str, name: &str, uid: &str) -> Result<Action, Error> {
        let still_there = self
            .accounts
            .get_named(Some(ns), name)
            .is_some_and(|sa| sa.metadata.uid.as_deref() == Some(uid));
        if still_there {
            return Ok(Action::Done);
        }
        for secret in self.secrets.by_index(NAMESPACE_INDEX, ns) {
            if is_token_of(&secret, ns, name, uid) {
                self.delete_token(&secret).await?;
            }
        }
        Ok(Action::Done)
    }

    /// Drops a deleted token Secret from its ServiceAccount's `secrets`.
    async fn secret_gone(
        &self,
        ns: &str,
        secret: &str,
        sa_name: &str,
        sa_uid: &str,
    ) -> Result<Action, Error> {
        let Some(cached) = self.accounts.get_named(Some(ns), sa_name) else {
            return Ok(Action::Done);
        };
        let references = |sa: &ServiceAccount| {
            sa.secrets
                .iter()
                .flatten()
                .any(|r| r.name.as_deref() == Some(secret))
        };
        if !references(&cached) {
            return Ok(Action::Done);
        }
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), ns);
        let Some(mut live) = api.get_opt(sa_name).await? else {
            return Ok(Action::Done);
        };
        if (!sa_uid.is_empty() && live.metadata.uid.as_deref() != Some(sa_uid))
            || !references(&live)
        {
            return Ok(Action::Done);
        }
        if let Some(list) = live.secrets.as_mut() {
            list.retain(|r| r.name.as_deref() != Some(secret));
        }
        // An empty list is omitted, as upstream's JSON omits it.
        live.secrets = live.secrets.filter(|l| !l.is_empty());
        match api.replace(sa_name, &PostParams::default(), &live).await {
            Ok(_) => Ok(Action::Done),
            Err(e) if is_not_found(&e) => Ok(Action::Done),
            // Changed meanwhile: the retry reads it again.
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes a token Secret, only if it is still the same object.
    async fn delete_token(&self, secret: &Secret) -> Result<Action, Error> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: secret.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        let ns = secret.metadata.namespace.as_deref().unwrap_or_default();
        let name = secret.metadata.name.as_deref().unwrap_or_default();
        match self.secrets_api(ns).delete(name, &params).await {
            Ok(_) => Ok(Action::Done),
            // Gone already, or another object by now.
            Err(e) if is_not_found(&e) || is_conflict(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }

    /// What a token Secret lacks: (ca.crt, namespace, token), as upstream's secretUpdateNeeded.
    fn needs(&self, secret: &Secret) -> (bool, bool, bool) {
        let data = secret.data.as_ref();
        let value = |k: &str| {
            data.and_then(|d| d.get(k))
                .map_or(&[][..], |b| b.0.as_slice())
        };
        (
            !self.root_ca.is_empty() && value("ca.crt") != self.root_ca.as_slice(),
            value("namespace").is_empty(),
            value("token").is_empty(),
        )
    }

    /// Fills the token, `ca.crt` and `namespace` of a token Secret that lacks any of them, on
    /// a fresh copy; a copy newer than the cache waits for its own event.
    async fn populate(&self, sa: &ServiceAccount, cached: &Secret) -> Result<Action, Error> {
        if self.needs(cached) == (false, false, false) {
            return Ok(Action::Done);
        }
        let ns = cached.metadata.namespace.as_deref().unwrap_or_default();
        let name = cached.metadata.name.as_deref().unwrap_or_default();
        let api = self.secrets_api(ns);
        let Some(mut live) = api.get_opt(name).await? else {
            return Ok(Action::Done);
        };
        if live.metadata.resource_version != cached.metadata.resource_version {
            return Ok(Action::Done);
        }
        let (ca, namespace, token) = self.needs(&live);
        if !(ca || namespace || token) {
            return Ok(Action::Done);
        }
        let sa_name = sa.metadata.name.clone().unwrap_or_default();
        let sa_uid = sa.metadata.uid.clone().unwrap_or_default();
        let data = live.data.get_or_insert_with(Default::default);
        if ca {
            data.insert("ca.crt".into(), ByteString(self.root_ca.clone()));
        }
        if namespace {
            data.insert("namespace".into(), ByteString(ns.as_bytes().to_vec()));
        }
        if token {
            let claims = LegacyTokenClaims {
                namespace: ns,
                service_account_name: &sa_name,
                service_account_uid: &sa_uid,
                secret_name: name,
            };
            let jwt = (self.signer.0)(&claims)
                .map_err(|e| Error::Other(format!("signing the token of {ns}/{name}: {e}")))?;
            data.insert("token".into(), ByteString(jwt.into_bytes()));
        }
        let annotations = live
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(SA_NAME_KEY.into(), sa_name);
        annotations.insert(SA_UID_KEY.into(), sa_uid);
        match api.replace(name, &PostParams::default(), &live).await {
            Ok(_) => Ok(Action::Done),
            // Changed or deleted meanwhile: its own event brings it back.
            Err(e) if is_conflict(&e) || is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_secret(name: &str, uid: Option<&str>) -> Secret {
        let mut s = Secret {
            type_: Some(TOKEN_TYPE.into()),
            ..Default::default()
        };
        s.metadata.namespace = Some("ns".into());
        let mut a = std::collections::BTreeMap::new();
        a.insert(SA_NAME_KEY.to_string(), name.to_string());
        if let Some(uid) = uid {
            a.insert(SA_UID_KEY.to_string(), uid.to_string());
        }
        s.metadata.annotations = Some(a);
        s
    }

    #[test]
    fn a_token_belongs_to_the_account_it_names_and_its_uid() {
        assert!(is_token_of(
            &token_secret("builder", None),
            "ns",
            "builder",
            "u1"
        ));
        assert!(is_token_of(
            &token_secret("builder", Some("u1")),
            "ns",
            "builder",
            "u1"
        ));
        assert!(!is_token_of(
            &token_secret("builder", Some("u0")),
            "ns",
            "builder",
            "u1"
        ));
        assert!(!is_token_of(
            &token_secret("other", None),
            "ns",
            "builder",
            "u1"
        ));
        assert!(!is_token_of(
            &token_secret("builder", None),
            "ns2",
            "builder",
            "u1"
        ));
        let mut opaque = token_secret("builder", None);
        opaque.type_ = Some("Opaque".into());
        assert!(!is_token_of(&opaque, "ns", "builder", "u1"));
    }
}
