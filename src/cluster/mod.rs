//! The connection to a Kubernetes API server: a `kube::Client` built the way
//! kubectl and helm find one (`--kubeconfig`, `--context`, `$KUBECONFIG`,
//! `~/.kube/config`, then the in-cluster service account), a discovery cache
//! from group/version/kind to the REST resource, and a client-side rate
//! limit and request timeout every request of the apply and release code
//! goes through ([`Cluster::request`]).
//!
//! This module knows nothing about charts or releases; `apply` and `release`
//! build on it.

mod discovery;
mod limit;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use discovery::{Discovery, Resolved, split_api_version};
pub use kube;
pub use limit::{RateLimit, TokenBucket};

/// How to reach the cluster; every field optional, as on kubectl's command line.
#[derive(Clone, Debug, Default)]
pub struct ClusterOptions {
    /// A kubeconfig file (`--kubeconfig`); else `$KUBECONFIG`, `~/.kube/config`,
    /// then in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// A context of the kubeconfig (`--context`); else its current-context.
    pub context: Option<String>,
    /// Client-side request limit; `None` gives [`RateLimit::default`].
    pub rate_limit: Option<RateLimit>,
    /// Give up on a single request after this long (kubectl's
    /// `--request-timeout`); `None`: wait as long as the connection lives.
    pub request_timeout: Option<Duration>,
    /// The `User-Agent` of every request (audit logs tell replicas apart by
    /// it); `None`: kube's (none).
    pub user_agent: Option<String>,
}

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("kubernetes cluster unreachable: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    #[error("kubernetes client: {0}")]
    Client(#[from] kube::Error),
}

/// A request that got no answer within the request timeout. It travels
/// inside `kube::Error::Service`, so every caller reports it with the
/// request it was making; [`error_text`] prints it without kube's prefix.
#[derive(Debug, thiserror::Error)]
#[error(
    "request timed out after {} (--request-timeout); the server may still carry it out",
    go_duration(*.0)
)]
pub struct RequestTimeout(pub Duration);

/// A duration as Go's `time.Duration.String` prints it (`1.5s`, `300ms`,
/// `2m0s`), as the flags are given.
pub fn go_duration(d: Duration) -> String {
    crate::gocompat::time::std_duration_string(d)
}

/// Whether an error is a request that timed out (ours, or a server's 504).
pub fn is_timeout(e: &kube::Error) -> bool {
    match e {
        kube::Error::Service(b) => b.downcast_ref::<RequestTimeout>().is_some(),
        kube::Error::Api(s) => s.code == 504,
        _ => false,
    }
}

/// Whether a failed read may succeed when asked again: a timeout, a
/// throttled request (429) or a server error (5xx). Anything else (403,
/// 404, 422, a broken response) will not change by waiting.
pub fn is_transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Service(_) | kube::Error::HyperError(_) => true,
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        _ => false,
    }
}

/// An error as one line for users: the server's own message for API errors
/// (`configmaps "x" not found`, with the code), our timeout text without
/// kube's `ServiceError:` prefix, kube's text otherwise.
pub fn error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => {
            let reason = if s.reason.is_empty() {
                String::new()
            } else {
                format!(" {}", s.reason)
            };
            format!("{} ({}{reason})", s.message, s.code)
        }
        kube::Error::Service(b) => match b.downcast_ref::<RequestTimeout>() {
            Some(t) => t.to_string(),
            None => e.to_string(),
        },
        _ => e.to_string(),
    }
}

/// A client, its discovery cache, its rate limit and request timeout;
/// cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    discovery: Arc<Discovery>,
    limit: Arc<TokenBucket>,
    request_timeout: Option<Duration>,
}

impl Cluster {
    /// Build a client from the options, using kube's config inference when no
    /// file or context is given (kubeconfig, then in-cluster).
    pub async fn connect(opts: &ClusterOptions) -> Result<Cluster, ClusterError> {
        let kopts = kube::config::KubeConfigOptions {
            context: opts.context.clone(),
            ..Default::default()
        };
        let config = match (&opts.kubeconfig, &opts.context) {
            (Some(path), _) => {
                let kerr = |source| ClusterError::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                };
                let kc = kube::config::Kubeconfig::read_from(path).map_err(kerr)?;
                kube::Config::from_custom_kubeconfig(kc, &kopts)
                    .await
                    .map_err(kerr)?
            }
            (None, Some(_)) => kube::Config::from_kubeconfig(&kopts)
                .await
                .map_err(|source| ClusterError::Kubeconfig {
                    path: "(default)".into(),
                    source,
                })?,
            (None, None) => kube::Config::infer().await?,
        };
        let mut config = config;
        if let Some(ua) = &opts.user_agent
            && let Ok(v) = http::HeaderValue::from_str(ua)
        {
            config.headers.push((http::header::USER_AGENT, v));
        }
        let client = client_with_bounded_retries(config)?;
        Ok(
            Cluster::from_client(client, opts.rate_limit.unwrap_or_default())
                .with_request_timeout(opts.request_timeout),
        )
    }

    /// Wrap an existing client (tests hand in one talking to a fake server).
    /// It is used as it is: no retries are added.
    pub fn from_client(client: kube::Client, limit: RateLimit) -> Cluster {
        Cluster {
            client,
            discovery: Arc::new(Discovery::default()),
            limit: Arc::new(TokenBucket::new(limit)),
            request_timeout: None,
        }
    }

    /// The same cluster with a per-request timeout (`None` or zero: none).
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Cluster {
        self.request_timeout = timeout.filter(|d| !d.is_zero());
        self
    }

    /// The per-request timeout, if any.
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// Make one request: wait for a rate-limit token, then run `call`,
    /// giving up after the request timeout with a [`RequestTimeout`] error.
    /// The timeout covers the whole request (sending, the server's work and
    /// reading the body), as kubectl's `--request-timeout` does; the
    /// throttling wait before it does not count.
    pub async fn request<T, F>(&self, call: F) -> Result<T, kube::Error>
    where
        F: Future<Output = Result<T, kube::Error>>,
    {
        self.throttle().await;
        match self.request_timeout {
            None => call.await,
            Some(d) => match tokio::time::timeout(d, call).await {
                Ok(r) => r,
                Err(_) => Err(kube::Error::Service(Box::new(RequestTimeout(d)))),
            },
        }
    }

    /// The client, for building `kube::Api`s. Call [`Cluster::throttle`]
    /// before each request made with it.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The namespace of the kubeconfig context (or the pod's).
    pub fn default_namespace(&self) -> &str {
        self.client.default_namespace()
    }

    /// Wait for a request token.
    pub async fn throttle(&self) {
        self.limit.acquire().await;
    }

    /// The discovery cache.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// Resolve `apiVersion` + `kind` to its REST resource, asking the server
    /// (through the rate limit) for that group/version when it is not cached
    /// or does not list the kind yet.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Resolved>, kube::Error> {
        if let Some(r) = self.discovery.cached(api_version, kind) {
            return Ok(Some(r));
        }
        if self.discovery.fresh(api_version) {
            return Ok(None);
        }
        self.request(self.discovery.refresh(&self.client, api_version))
            .await?;
        Ok(self.discovery.cached(api_version, kind))
    }
}

/// kube's client from a config, with its retry of 429/503/504 answers
/// bounded: kube's default policy retries every request up to 15 times
/// with backoff growing to minutes, which hides a failing server for that
/// long. Here: at most 3 retries, 100 ms doubling up to 1 s, or the
/// server's `Retry-After` when longer (client-go honours it too). All
/// requests antiopa makes survive a repeat — server-side apply, PUT and
/// DELETE are idempotent, and a repeated record create recognises its own
/// first attempt (release records carry an operation id) — and the
/// retries of one request stay within its `--request-timeout`.
fn client_with_bounded_retries(mut config: kube::Config) -> Result<kube::Client, ClusterError> {
    use kube::client::ClientBuilder;
    use kube::client::retry::RetryPolicy;
    config.default_retry = false;
    let policy = RetryPolicy::new(Duration::from_millis(100), Duration::from_secs(1), 3, true)
        .map_err(|e| ClusterError::Client(kube::Error::Service(Box::new(e))))?;
    Ok(ClientBuilder::try_from(config)?
        // tower's Retry needs a cloneable service: the buffer is one.
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&tower::retry::RetryLayer::new(policy))
        .build())
}

/// The HTTP status of a kube API error, if it was one.
pub fn api_status(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// True for a 404 from the server.
pub fn is_not_found(e: &kube::Error) -> bool {
    api_status(e) == Some(404)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_does() {
        assert_eq!(go_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(go_duration(Duration::from_secs(1)), "1s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(120)), "2m0s");
        assert_eq!(go_duration(Duration::from_secs(3725)), "1h2m5s");
    }
}
