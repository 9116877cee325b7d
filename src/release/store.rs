//! Release records in Secrets, as helm's Secret storage driver keeps them
//! (`pkg/storage/driver/secrets.go`): one Secret per revision named
//! `sh.helm.release.v1.<name>.v<version>`, type `helm.sh/release.v1`,
//! labels `name`, `owner=helm`, `status`, `version` and `createdAt` (on
//! create) or `modifiedAt` (on update), the encoded release in
//! `data.release`. Custom labels (`moduleChecksum`) sit beside them, as
//! helm's release labels do.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

use super::codec::{self, Release};
use crate::cluster::{Cluster, is_not_found};

/// Secret type of helm 3 release records.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";

/// Kubernetes' `MaxSecretSize`: the sum of the data keys and values.
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;

/// Labels helm manages itself (`pkg/storage/driver/labels.go`
/// `systemLabels`); the rest of a Secret's labels are the release's labels.
const SYSTEM_LABELS: &[&str] = &[
    "name",
    "owner",
    "status",
    "version",
    "createdAt",
    "modifiedAt",
];

/// Annotation naming the process that holds a pending record (`host/pid`):
/// lets a later run see that the holder died.
pub const HOLDER_ANNOTATION: &str = "antiopa.flant.com/operation-holder";

/// Annotation with a random id per record creation, so a retried create
/// can recognise its own earlier attempt.
pub const OPERATION_ANNOTATION: &str = "antiopa.flant.com/operation-id";

/// Storage errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("release {name:?} revision {version}: {source}")]
    Encode {
        name: String,
        version: i64,
        #[source]
        source: codec::CodecError,
    },
    #[error(
        "release {name:?} revision {version} is {size} bytes encoded, over the {MAX_SECRET_SIZE}-byte limit of a Secret; the rendered manifest is too large to record (split the chart or trim its values)"
    )]
    TooLarge {
        name: String,
        version: i64,
        size: usize,
    },
    #[error("{what} release secret {key:?}: {}", crate::cluster::error_text(.source))]
    Api {
        what: &'static str,
        key: String,
        #[source]
        source: kube::Error,
    },
}

/// One stored revision: the release, its Secret's labels and annotations.
#[derive(Clone, Debug)]
pub struct Stored {
    pub release: Release,
    pub secret_labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// What [`Store::history`] read.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// The readable revisions, oldest first.
    pub records: Vec<Stored>,
    /// One warning line per record that could not be read (skipped).
    pub skipped: Vec<String>,
}

/// `sh.helm.release.v1.<name>.v<version>`.
pub fn secret_name(name: &str, version: i64) -> String {
    format!("sh.helm.release.v1.{name}.v{version}")
}

/// Release records of one namespace.
pub struct Store {
    cluster: Cluster,
    namespace: String,
    api: Api<Secret>,
}

impl Store {
    pub fn new(cluster: &Cluster, namespace: &str) -> Store {
        Store {
            cluster: cluster.clone(),
            namespace: namespace.to_string(),
            api: Api::namespaced(cluster.client().clone(), namespace),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Every readable revision of `name`, oldest first (`Secrets.Query` with
    /// `owner=helm,name=<name>`; undecodable records are skipped, as helm
    /// does, each with a warning for the caller to show).
    pub async fn history(&self, name: &str) -> Result<History, StoreError> {
        let lp = ListParams::default().labels(&format!("owner=helm,name={name}"));
        let list = self
            .cluster
            .request(self.api.list(&lp))
            .await
            .map_err(|source| StoreError::Api {
                what: "list",
                key: format!("owner=helm,name={name}"),
                source,
            })?;
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        for s in list.items {
            let key = s.metadata.name.clone().unwrap_or_default();
            let Some(data) = s.data.as_ref().and_then(|d| d.get("release")) else {
                skipped.push(format!(
                    "warning: release secret {key:?} has no data.release; skipped"
                ));
                continue;
            };
            match codec::decode(&data.0) {
                Ok(mut rel) => {
                    let labels = s.metadata.labels.clone().unwrap_or_default();
                    rel.labels = labels
                        .iter()
                        .filter(|(k, _)| !SYSTEM_LABELS.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    out.push(Stored {
                        release: rel,
                        secret_labels: labels,
                        annotations: s.metadata.annotations.clone().unwrap_or_default(),
                    });
                }
                Err(e) => skipped.push(format!("warning: release secret {key:?}: {e}; skipped")),
            }
        }
        out.sort_by_key(|s| s.release.version);
        Ok(History {
            records: out,
            skipped,
        })
    }

    /// Names of the releases whose records carry the label `selector`.
    pub async fn names(&self, selector: &str) -> Result<BTreeSet<String>, StoreError> {
        let key = format!("owner=helm,{selector}");
        let lp = ListParams::default().labels(&key);
        let list = self
            .cluster
            .request(self.api.list_metadata(&lp))
            .await
            .map_err(|source| StoreError::Api {
                what: "list",
                key,
                source,
            })?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|s| s.metadata.labels.and_then(|mut l| l.remove("name")))
            .collect())
    }

    fn secret(
        &self,
        rel: &Release,
        time_label: &str,
        holder: Option<&str>,
    ) -> Result<Secret, StoreError> {
        let data = codec::encode(rel).map_err(|source| StoreError::Encode {
            name: rel.name.clone(),
            version: rel.version,
            source,
        })?;
        let size = "release".len() + data.len();
        if size > MAX_SECRET_SIZE {
            return Err(StoreError::TooLarge {
                name: rel.name.clone(),
                version: rel.version,
                size,
            });
        }
        let mut labels = rel.labels.clone();
        labels.insert(
            time_label.into(),
            chrono::Utc::now().timestamp().to_string(),
        );
        labels.insert("name".into(), rel.name.clone());
        labels.insert("owner".into(), "helm".into());
        labels.insert("status".into(), rel.status().as_str().into());
        labels.insert("version".into(), rel.version.to_string());
        let annotations =
            holder.map(|h| BTreeMap::from([(HOLDER_ANNOTATION.to_string(), h.to_string())]));
        Ok(Secret {
            metadata: ObjectMeta {
                name: Some(secret_name(&rel.name, rel.version)),
                namespace: Some(self.namespace.clone()),
                labels: Some(labels),
                annotations,
                ..Default::default()
            },
            type_: Some(SECRET_TYPE.into()),
            data: Some(BTreeMap::from([(
                "release".to_string(),
                ByteString(data.into_bytes()),
            )])),
            ..Default::default()
        })
    }

    /// Check that a record fits in a Secret, without writing it.
    pub fn check_size(&self, rel: &Release) -> Result<(), StoreError> {
        self.secret(rel, "createdAt", None).map(|_| ())
    }

    /// `Secrets.Create`: a new revision; an existing one is an error (two
    /// operations raced for the same revision) — unless it is this very
    /// write: kube's client retries a POST answered 429/503/504, and when
    /// the first attempt was carried out after all, the retry meets our own
    /// record. An operation id annotation tells the two apart.
    pub async fn create(&self, rel: &Release, holder: Option<&str>) -> Result<(), StoreError> {
        let mut s = self.secret(rel, "createdAt", holder)?;
        let op = uuid::Uuid::new_v4().to_string();
        s.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(OPERATION_ANNOTATION.into(), op.clone());
        let key = secret_name(&rel.name, rel.version);
        let err = match self
            .cluster
            .request(self.api.create(&PostParams::default(), &s))
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if crate::cluster::api_status(&err) == Some(409)
            && let Ok(Some(existing)) = self.cluster.request(self.api.get_opt(&key)).await
            && existing
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(OPERATION_ANNOTATION))
                == Some(&op)
        {
            return Ok(());
        }
        Err(StoreError::Api {
            what: "create",
            key,
            source: err,
        })
    }

    /// `Secrets.Update`: replace a revision whole (helm's unconditional
    /// Update; the holder annotation goes with a finished record).
    pub async fn update(&self, rel: &Release, holder: Option<&str>) -> Result<(), StoreError> {
        let s = self.secret(rel, "modifiedAt", holder)?;
        let key = secret_name(&rel.name, rel.version);
        self.cluster
            .request(self.api.replace(&key, &PostParams::default(), &s))
            .await
            .map_err(|source| StoreError::Api {
                what: "update",
                key,
                source,
            })?;
        Ok(())
    }

    /// Delete a revision; a missing one is fine.
    pub async fn delete(&self, name: &str, version: i64) -> Result<(), StoreError> {
        let key = secret_name(name, version);
        match self
            .cluster
            .request(self.api.delete(&key, &DeleteParams::default()))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(source) => Err(StoreError::Api {
                what: "delete",
                key,
                source,
            }),
        }
    }
}
