//! Helm's release record and its storage encoding, so real helm and antiopa
//! read each other's releases.
//!
//! The JSON schema is helm v3.17's `pkg/release` (`Release`, `Info`, `Hook`,
//! `HookExecution`) with Go's field order and `omitempty` rules. The chart is
//! kept as raw JSON: helm stores `chart.Chart` (metadata, lock, templates,
//! values, schema, files); antiopa writes metadata and values only (templates
//! and files would push big charts towards the 1 MiB Secret limit, and
//! nothing reads them back: upgrades render the new chart, rollbacks re-apply
//! the stored manifest), and keeps whatever a helm-written record holds.
//!
//! Encoding (`pkg/storage/driver/util.go` `encodeRelease`/`decodeRelease`):
//! `base64.StdEncoding(gzip(json.Marshal(release)))` at best compression.
//! The Secret driver stores that base64 *text* as the bytes of
//! `data.release`, and the API server base64-encodes Secret data again on
//! the wire, so a Secret as JSON holds base64(base64(gzip(json))).

use std::collections::BTreeMap;
use std::io::{Read, Write};

use base64::Engine;
use serde::{Deserialize, Serialize};

/// `release.Status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    #[default]
    Unknown,
    Deployed,
    Uninstalled,
    Superseded,
    Failed,
    Uninstalling,
    PendingInstall,
    PendingUpgrade,
    PendingRollback,
}

impl Status {
    /// The label and JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
        }
    }

    /// `Status.IsPending`.
    pub fn is_pending(self) -> bool {
        matches!(
            self,
            Status::PendingInstall | Status::PendingUpgrade | Status::PendingRollback
        )
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Go's zero `time.Time` as `encoding/json` prints it.
pub const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

fn zero_time() -> String {
    ZERO_TIME.to_string()
}

/// `release.Info`. Times are kept as the RFC 3339 text Go wrote; `omitempty`
/// never omits a struct, so the three times are always present.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Info {
    #[serde(default = "zero_time")]
    pub first_deployed: String,
    #[serde(default = "zero_time")]
    pub last_deployed: String,
    #[serde(default = "zero_time")]
    pub deleted: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "is_unknown")]
    pub status: Status,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<serde_json::Value>,
}

fn is_unknown(s: &Status) -> bool {
    // Go's omitempty drops the empty string, which Status "" is; helm never
    // writes "unknown" into a record.
    *s == Status::Unknown
}

impl Default for Info {
    fn default() -> Self {
        Info {
            first_deployed: zero_time(),
            last_deployed: zero_time(),
            deleted: zero_time(),
            description: String::new(),
            status: Status::Unknown,
            notes: String::new(),
            resources: None,
        }
    }
}

/// `release.HookExecution`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookExecution {
    #[serde(default = "zero_time")]
    pub started_at: String,
    #[serde(default = "zero_time")]
    pub completed_at: String,
    /// `Unknown`, `Running`, `Succeeded`, `Failed`; no omitempty in Go.
    #[serde(default)]
    pub phase: String,
}

impl Default for HookExecution {
    fn default() -> Self {
        HookExecution {
            started_at: zero_time(),
            completed_at: zero_time(),
            phase: String::new(),
        }
    }
}

/// `release.Hook`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Hook {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    #[serde(default)]
    pub last_run: HookExecution,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub weight: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_policies: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_log_policies: Vec<String>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// `release.Release`. `labels` is `json:"-"`: it lives in the Secret's labels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Release {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Info>,
    /// `chart.Chart` as JSON (`metadata`, `lock`, `templates`, `values`,
    /// `schema`, `files`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<serde_json::Value>,
    /// The user-supplied values.
    #[serde(default, skip_serializing_if = "is_empty_map")]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip)]
    pub labels: BTreeMap<String, String>,
}

fn is_empty_map(m: &Option<serde_json::Map<String, serde_json::Value>>) -> bool {
    m.as_ref().is_none_or(|m| m.is_empty())
}

impl Release {
    /// The record's status (`unknown` without an info block).
    pub fn status(&self) -> Status {
        self.info.as_ref().map(|i| i.status).unwrap_or_default()
    }

    /// `<chart name>-<chart version>`, as `helm list`/`history` print it.
    pub fn chart_label(&self) -> String {
        let md = self.chart.as_ref().and_then(|c| c.get("metadata"));
        let get = |k: &str| {
            md.and_then(|m| m.get(k))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        format!("{}-{}", get("name"), get("version"))
    }

    /// The chart's appVersion.
    pub fn app_version(&self) -> String {
        self.chart
            .as_ref()
            .and_then(|c| c.get("metadata"))
            .and_then(|m| m.get("appVersion"))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    }
}

/// A record that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("release data is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("release data is not gzip: {0}")]
    Gzip(#[source] std::io::Error),
    #[error("release data is not a release: {0}")]
    Json(#[from] serde_json::Error),
}

/// `encodeRelease`: the text helm stores as `data.release`.
pub fn encode(rel: &Release) -> Result<String, CodecError> {
    let json = serde_json::to_vec(rel)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&json).map_err(CodecError::Gzip)?;
    let bytes = gz.finish().map_err(CodecError::Gzip)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// `decodeRelease`: base64, then gunzip when the gzip magic is there (records
/// from before helm compressed them are plain JSON), then JSON.
pub fn decode(data: &[u8]) -> Result<Release, CodecError> {
    let mut b = base64::engine::general_purpose::STANDARD.decode(data)?;
    if b.len() > 3 && b[..3] == [0x1f, 0x8b, 0x08] {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(b.as_slice())
            .read_to_end(&mut out)
            .map_err(CodecError::Gzip)?;
        b = out;
    }
    Ok(serde_json::from_slice(&b)?)
}

/// Go's `time.Time` JSON form (RFC 3339 with nanoseconds, trailing zeros
/// dropped) for a UTC instant.
pub fn go_time(t: chrono::DateTime<chrono::Utc>) -> String {
    let base = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    if nanos == 0 {
        return format!("{base}Z");
    }
    let frac = format!("{nanos:09}");
    format!("{base}.{}Z", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Release {
        Release {
            name: "web".into(),
            info: Some(Info {
                first_deployed: "2026-11-22T02:00:00.5Z".into(),
                last_deployed: "2026-11-22T02:00:00.5Z".into(),
                description: "Install complete".into(),
                status: Status::Deployed,
                ..Info::default()
            }),
            chart: Some(
                serde_json::json!({"metadata": {"name": "web", "version": "1.2.3", "appVersion": "9"}}),
            ),
            config: Some(serde_json::from_str(r#"{"replicas": 2}"#).unwrap()),
            manifest: "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n"
                .into(),
            hooks: vec![],
            version: 3,
            namespace: "apps".into(),
            labels: BTreeMap::new(),
        }
    }

    #[test]
    fn round_trip() {
        let r = sample();
        let text = encode(&r).unwrap();
        assert_eq!(decode(text.as_bytes()).unwrap(), r);
        assert_eq!(r.chart_label(), "web-1.2.3");
        assert_eq!(r.app_version(), "9");
    }

    #[test]
    fn json_has_helms_field_names_and_order() {
        let json = serde_json::to_string(&sample()).unwrap();
        assert!(json.starts_with(r#"{"name":"web","info":{"first_deployed":"2026-11-22T02:00:00.5Z","last_deployed":"2026-11-22T02:00:00.5Z","deleted":"0001-01-01T00:00:00Z","description":"Install complete","status":"deployed"},"chart":"#), "{json}");
        assert!(
            json.ends_with(r#""version":3,"namespace":"apps"}"#),
            "{json}"
        );
    }

    #[test]
    fn plain_json_records_are_read() {
        let plain = base64::engine::general_purpose::STANDARD
            .encode(br#"{"name":"old","info":{"status":"superseded"},"version":1}"#);
        let r = decode(plain.as_bytes()).unwrap();
        assert_eq!(r.status(), Status::Superseded);
        assert_eq!(r.version, 1);
    }

    #[test]
    fn go_time_format() {
        use chrono::TimeZone;
        let t = chrono::Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(go_time(t), "2026-01-02T03:04:05Z");
        let t = t + chrono::Duration::nanoseconds(120_000_000);
        assert_eq!(go_time(t), "2026-01-02T03:04:05.12Z");
    }
}
