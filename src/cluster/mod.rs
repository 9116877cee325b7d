//! The connection to a Kubernetes API server: a `kube::Client` built the way
//! kubectl and helm find one (`--kubeconfig`, `--context`, `$KUBECONFIG`,
//! `~/.kube/config`, then the in-cluster service account), a discovery cache
//! from group/version/kind to the REST resource, and a client-side rate
//! limit every request of the apply and release code goes through.
//!
//! This module knows nothing about charts or releases; `apply` and `release`
//! build on it.

mod discovery;
mod limit;

use std::path::PathBuf;
use std::sync::Arc;

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

/// A client, its discovery cache and its rate limit; cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    discovery: Arc<Discovery>,
    limit: Arc<TokenBucket>,
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
        let client = kube::Client::try_from(config)?;
        Ok(Cluster::from_client(
            client,
            opts.rate_limit.unwrap_or_default(),
        ))
    }

    /// Wrap an existing client (tests hand in one talking to a fake server).
    pub fn from_client(client: kube::Client, limit: RateLimit) -> Cluster {
        Cluster {
            client,
            discovery: Arc::new(Discovery::default()),
            limit: Arc::new(TokenBucket::new(limit)),
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
        self.throttle().await;
        self.discovery.refresh(&self.client, api_version).await?;
        Ok(self.discovery.cached(api_version, kind))
    }
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
