//! `.Capabilities` as `helm template` sees it: Helm v3.17.3's built-in
//! defaults (Kubernetes v1.32.0, the 56 API versions of client-go's scheme
//! plus apiextensions), `--kube-version` and `--api-versions`.
//!
//! The values are those the reference helm binary prints; Helm computes the
//! list from client-go's scheme at start-up, which we cannot, so it is a
//! table here.

use std::any::Any;
use std::rc::Rc;

use crate::engine::{Member, Object, Value};

/// Helm v3.17.3's `chartutil.DefaultVersionSet`, in Helm's order.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1alpha1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1alpha1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// The Kubernetes version `helm template` assumes without `--kube-version`.
pub const DEFAULT_KUBE_VERSION: &str = "v1.32.0";

/// `helm version` of the reference: `.Capabilities.HelmVersion`.
pub const HELM_VERSION: &str = "v3.17.3";
pub const HELM_GIT_COMMIT: &str = "e4da49785aa6e6ee2b86efd5dd9e43400318262b";
pub const HELM_GIT_TREE_STATE: &str = "clean";
pub const HELM_GO_VERSION: &str = "go1.23.7";

/// Helm's `chartutil.KubeVersion`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeVersion {
    pub version: String,
    pub major: String,
    pub minor: String,
}

/// A `--kube-version` that Masterminds/semver's `NewVersion` rejects.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid kube version '{input}': {reason}")]
pub struct KubeVersionError {
    pub input: String,
    pub reason: String,
}

impl KubeVersion {
    /// Helm's `chartutil.ParseKubeVersion`: a lenient semver (`1.29`,
    /// `v1.29.3-rc.1`), normalised to `v<major>.<minor>.<patch>[-pre][+meta]`.
    pub fn parse(input: &str) -> Result<KubeVersion, KubeVersionError> {
        // Masterminds/semver's `NewVersion` (non-strict), the port Sprig's
        // `semver` uses.
        let sv = crate::engine::funcs::sprig::semver::Version::parse(input).map_err(|_| {
            KubeVersionError {
                input: input.to_string(),
                reason: "Invalid Semantic Version".into(),
            }
        })?;
        let mut version = format!("v{}.{}.{}", sv.major, sv.minor, sv.patch);
        if !sv.pre.is_empty() {
            version.push('-');
            version.push_str(&sv.pre);
        }
        if !sv.metadata.is_empty() {
            version.push('+');
            version.push_str(&sv.metadata);
        }
        Ok(KubeVersion {
            version,
            major: sv.major.to_string(),
            minor: sv.minor.to_string(),
        })
    }

    pub fn default_version() -> KubeVersion {
        KubeVersion {
            version: DEFAULT_KUBE_VERSION.into(),
            major: "1".into(),
            minor: "32".into(),
        }
    }
}

/// Helm's `chartutil.Capabilities`.
#[derive(Clone, Debug)]
pub struct Capabilities {
    pub kube_version: KubeVersion,
    pub api_versions: Vec<String>,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            kube_version: KubeVersion::default_version(),
            api_versions: DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Capabilities {
    /// What `helm template` uses: the defaults, the `--kube-version` if
    /// given, and `--api-versions` appended to the default set.
    pub fn for_template(
        kube_version: Option<KubeVersion>,
        extra_api_versions: &[String],
    ) -> Capabilities {
        let mut caps = Capabilities::default();
        if let Some(kv) = kube_version {
            caps.kube_version = kv;
        }
        caps.api_versions.extend(extra_api_versions.iter().cloned());
        caps
    }

    /// The template value `.Capabilities` (a `*chartutil.Capabilities`).
    pub fn to_value(&self) -> Value {
        Value::Object(Rc::new(CapabilitiesObject {
            kube: Rc::new(KubeVersionObject(self.kube_version.clone())),
            apis: Rc::new(VersionSetObject(Rc::new(self.api_versions.clone()))),
        }))
    }
}

fn method(f: impl Fn(&[Value]) -> Result<Value, String> + 'static) -> Member {
    Member::Method(Rc::new(f))
}

/// Go's error for a method called with the wrong number of arguments.
pub(crate) fn check_args(name: &str, args: &[Value], want: usize) -> Result<(), String> {
    if args.len() != want {
        return Err(format!(
            "wrong number of args for {name}: want {want} got {}",
            args.len()
        ));
    }
    Ok(())
}

/// A `string` argument of a method, with text/template's conversion error.
pub(crate) fn str_arg(args: &[Value], i: usize) -> Result<&str, String> {
    match args.get(i) {
        Some(Value::Str(s)) => Ok(s),
        Some(Value::Nil) | None => Err("invalid value; expected string".into()),
        Some(other) => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
    }
}

struct CapabilitiesObject {
    kube: Rc<KubeVersionObject>,
    apis: Rc<VersionSetObject>,
}

impl Object for CapabilitiesObject {
    fn type_name(&self) -> &str {
        "*chartutil.Capabilities"
    }
    fn member(&self, name: &str) -> Option<Member> {
        match name {
            "KubeVersion" => Some(Member::Field(Value::Object(self.kube.clone()))),
            "APIVersions" => Some(Member::Field(Value::Object(self.apis.clone()))),
            "HelmVersion" => Some(Member::Field(Value::Object(Rc::new(HelmVersionObject)))),
            _ => None,
        }
    }
    fn fmt_v(&self, out: &mut String) {
        // `%v` of a pointer to a struct: `&{…}`; nested fields print without
        // their String methods (not addressable there).
        out.push_str("&{");
        self.kube.fmt_struct(out);
        out.push(' ');
        self.apis.fmt_v(out);
        out.push(' ');
        HelmVersionObject.fmt_v(out);
        out.push('}');
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("KubeVersion", Value::Object(self.kube.clone())),
            ("APIVersions", Value::Object(self.apis.clone())),
            ("HelmVersion", Value::Object(Rc::new(HelmVersionObject))),
        ])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct KubeVersionObject(KubeVersion);

impl KubeVersionObject {
    fn fmt_struct(&self, out: &mut String) {
        out.push('{');
        out.push_str(&self.0.version);
        out.push(' ');
        out.push_str(&self.0.major);
        out.push(' ');
        out.push_str(&self.0.minor);
        out.push('}');
    }
}

impl Object for KubeVersionObject {
    fn type_name(&self) -> &str {
        "chartutil.KubeVersion"
    }
    fn kind_name(&self) -> &str {
        "struct"
    }
    fn member(&self, name: &str) -> Option<Member> {
        let v = self.0.version.clone();
        match name {
            "Version" => Some(Member::Field(Value::str(&self.0.version))),
            "Major" => Some(Member::Field(Value::str(&self.0.major))),
            "Minor" => Some(Member::Field(Value::str(&self.0.minor))),
            "String" | "GitVersion" => {
                let name = name.to_string();
                Some(method(move |args| {
                    check_args(&name, args, 0)?;
                    Ok(Value::str(&v))
                }))
            }
            _ => None,
        }
    }
    /// Reached through the `*Capabilities` pointer the field is addressable,
    /// so Go's printing uses the pointer-receiver `String` method.
    fn fmt_v(&self, out: &mut String) {
        out.push_str(&self.0.version);
    }
    /// Passed by value to `printf`/`print`/`toString` the struct has no
    /// `String` method: `{v1.32.0 1 32}`.
    fn fmt_arg(&self, out: &mut String) {
        out.push_str(&format!(
            "{{{} {} {}}}",
            self.0.version, self.0.major, self.0.minor
        ));
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("Version", Value::str(&self.0.version)),
            ("Major", Value::str(&self.0.major)),
            ("Minor", Value::str(&self.0.minor)),
        ])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `chartutil.VersionSet`: a `[]string` with a `Has` method.
struct VersionSetObject(Rc<Vec<String>>);

impl Object for VersionSetObject {
    fn type_name(&self) -> &str {
        "chartutil.VersionSet"
    }
    fn kind_name(&self) -> &str {
        "slice"
    }
    fn member(&self, name: &str) -> Option<Member> {
        match name {
            "Has" => {
                let set = self.0.clone();
                Some(method(move |args| {
                    check_args("Has", args, 1)?;
                    let want = str_arg(args, 0)?;
                    Ok(Value::Bool(set.iter().any(|x| x == want)))
                }))
            }
            _ => None,
        }
    }
    fn fmt_v(&self, out: &mut String) {
        out.push('[');
        out.push_str(&self.0.join(" "));
        out.push(']');
    }
    fn truthy(&self) -> bool {
        !self.0.is_empty()
    }
    fn underlying(&self) -> Option<Value> {
        Some(crate::chart::convert::str_list(self.0.iter().cloned()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `version.BuildInfo` of the reference helm.
struct HelmVersionObject;

impl Object for HelmVersionObject {
    fn type_name(&self) -> &str {
        "version.BuildInfo"
    }
    fn kind_name(&self) -> &str {
        "struct"
    }
    fn member(&self, name: &str) -> Option<Member> {
        let v = match name {
            "Version" => HELM_VERSION,
            "GitCommit" => HELM_GIT_COMMIT,
            "GitTreeState" => HELM_GIT_TREE_STATE,
            "GoVersion" => HELM_GO_VERSION,
            _ => return None,
        };
        Some(Member::Field(Value::str(v)))
    }
    fn fmt_v(&self, out: &mut String) {
        out.push_str(&format!(
            "{{{HELM_VERSION} {HELM_GIT_COMMIT} {HELM_GIT_TREE_STATE} {HELM_GO_VERSION}}}"
        ));
    }
    /// `version.BuildInfo`'s `json` tags (all `omitempty`; none is empty).
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("version", Value::str(HELM_VERSION)),
            ("git_commit", Value::str(HELM_GIT_COMMIT)),
            ("git_tree_state", Value::str(HELM_GIT_TREE_STATE)),
            ("go_version", Value::str(HELM_GO_VERSION)),
        ])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(v: &Value, name: &str) -> Value {
        let Value::Object(o) = v else {
            panic!("not an object")
        };
        match o.member(name) {
            Some(Member::Field(f)) => f,
            Some(Member::Method(m)) => m(&[]).unwrap_or_default(),
            None => panic!("no member {name}"),
        }
    }

    fn v(v: &Value) -> String {
        crate::engine::gofmt::to_string_v(v)
    }

    #[test]
    fn defaults_match_helm_v3_17_3() {
        // From `helm template` with `{{ .Capabilities.KubeVersion }} …`.
        let caps = Capabilities::default().to_value();
        let kv = field(&caps, "KubeVersion");
        // `{{ .Capabilities.KubeVersion }}` uses the pointer-receiver
        // String; passed to printf/toString by value it prints the struct.
        let Value::Object(o) = &kv else {
            panic!("KubeVersion is an object")
        };
        let mut printed = String::new();
        o.fmt_v(&mut printed);
        assert_eq!(printed, "v1.32.0");
        assert_eq!(v(&kv), "{v1.32.0 1 32}");
        assert_eq!(v(&field(&kv, "Major")), "1");
        assert_eq!(v(&field(&kv, "Minor")), "32");
        assert_eq!(v(&field(&kv, "GitVersion")), "v1.32.0");
        assert_eq!(
            v(&field(&caps, "HelmVersion")),
            "{v3.17.3 e4da49785aa6e6ee2b86efd5dd9e43400318262b clean go1.23.7}"
        );
        assert_eq!(DEFAULT_API_VERSIONS.len(), 56);
        let apis = field(&caps, "APIVersions");
        assert_eq!(apis.type_name(), "chartutil.VersionSet");
        assert!(v(&apis).starts_with("[v1 admissionregistration.k8s.io/v1 "));
        assert!(v(&apis).ends_with(" apiextensions.k8s.io/v1beta1 apiextensions.k8s.io/v1]"));
        assert_eq!(caps.type_name(), "*chartutil.Capabilities");
    }

    #[test]
    fn has_looks_up_exact_versions_including_extra_ones() {
        let caps =
            Capabilities::for_template(None, &["monitoring.coreos.com/v1".into()]).to_value();
        let apis = field(&caps, "APIVersions");
        let Value::Object(o) = &apis else { panic!() };
        let Some(Member::Method(has)) = o.member("Has") else {
            panic!()
        };
        assert!(matches!(
            has(&[Value::str("monitoring.coreos.com/v1")]),
            Ok(Value::Bool(true))
        ));
        assert!(matches!(
            has(&[Value::str("apps/v1")]),
            Ok(Value::Bool(true))
        ));
        assert!(matches!(
            has(&[Value::str("apps/v2")]),
            Ok(Value::Bool(false))
        ));
        assert!(has(&[]).is_err());
    }

    #[test]
    fn kube_version_flag_is_parsed_like_helm() {
        assert_eq!(
            KubeVersion::parse("1.29"),
            Ok(KubeVersion {
                version: "v1.29.0".into(),
                major: "1".into(),
                minor: "29".into()
            })
        );
        assert_eq!(
            KubeVersion::parse("v1.30.2-rc.1+abc").map(|k| k.version),
            Ok("v1.30.2-rc.1+abc".into())
        );
        // helm: `Error: invalid kube version 'abc': Invalid Semantic Version`
        assert_eq!(
            KubeVersion::parse("abc").map_err(|e| e.to_string()),
            Err("invalid kube version 'abc': Invalid Semantic Version".into())
        );
    }
}
