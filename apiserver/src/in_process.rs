//! The in-process entry into the filter chain: a tower `Service` for callers in the same process
//! (the controller-manager's `kube::Client`). Requests skip TCP, TLS and HTTP framing but enter the
//! chain with their identity attached, so authorization, admission and validation apply as for any
//! client.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::future::BoxFuture;

use crate::auth::UserInfo;
use crate::authentication::Identity;
use crate::chain::Chain;

/// What audit records as the source address of in-process requests.
const IN_PROCESS_PEER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// A tower `Service` that serves requests through the chain as one user.
#[derive(Clone)]
pub struct InProcessService {
    chain: Arc<Chain>,
    identity: Arc<Identity>,
    /// Sent as `User-Agent` when a request has none: upstream components name themselves so
    /// (`kube-controller-manager/v1.33.0 ...`), and field managers are named after it.
    user_agent: Option<http::HeaderValue>,
}

impl InProcessService {
    pub(crate) fn new(chain: Arc<Chain>, user: UserInfo) -> InProcessService {
        InProcessService {
            chain,
            identity: Arc::new(Identity::InProcess(user)),
            user_agent: None,
        }
    }
}

impl InProcessService {
    /// The same entry acting as another user.
    pub fn as_user(&self, user: UserInfo) -> InProcessService {
        InProcessService {
            identity: Arc::new(Identity::InProcess(user)),
            ..self.clone()
        }
    }

    /// The same entry with a default `User-Agent` (an invalid header value is ignored).
    pub fn with_user_agent(&self, user_agent: &str) -> InProcessService {
        InProcessService {
            user_agent: http::HeaderValue::from_str(user_agent).ok(),
            ..self.clone()
        }
    }
}

impl std::fmt::Debug for InProcessService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessService")
            .field("identity", &self.identity)
            .finish()
    }
}

impl<B> tower::Service<http::Request<B>> for InProcessService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        if let Some(ua) = &self.user_agent {
            req.headers_mut()
                .entry(http::header::USER_AGENT)
                .or_insert_with(|| ua.clone());
        }
        let chain = self.chain.clone();
        let identity = self.identity.clone();
        Box::pin(async move {
            Ok(chain
                .handle(&identity, IN_PROCESS_PEER, req.map(Body::new))
                .await)
        })
    }
}
