//! `cargo bench --bench render`: CPU time of `antiopa render --output-dir` over a generated tree of
//! 50 modules, apart from the time its hooks take. The target (issue 3): under one second of CPU.
//!
//! It builds nothing: it runs the release build (build it first with
//! `cargo build --release`; `ANTIOPA_BIN` measures another binary). The tree is written to a temporary
//! directory: `BENCH_MODULES` modules (default 50), each a realistic small chart — a helpers file
//! with `define`s, a Deployment (checksum annotation over the rendered ConfigMap, `toYaml`,
//! `range`, `nindent`), a Service, a ConfigMap, a conditional Ingress, a ServiceAccount — with a
//! `values.yaml` section, OpenAPI `config-values.yaml` and `values.yaml` schemas (defaults,
//! `x-extend`, `x-required-for-helm`), one shell `beforeHelm` hook writing a values patch, and a
//! ConfigMap setting part of the config; plus one global `beforeAll` shell hook.
//!
//! Each of `BENCH_RUNS` runs (default 5) spawns antiopa, waits for it to exit without reaping it
//! (`waitid(WNOWAIT)`), and reads its `/proc/<pid>/stat` while it is a zombie: `utime + stime` is
//! antiopa's own CPU; `cutime + cstime` is the CPU of the processes it waited for — the hooks
//! (each run twice: `--config`, then the run) and `enabled` scripts. It prints the medians and
//! whether antiopa's own CPU is under the target.

#[path = "../integration/common/mod.rs"]
mod common;

use nix::sys::wait::{Id, WaitPidFlag, waitid};
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const TARGET_CPU_SECS: f64 = 1.0;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Module names that survive addon-operator's camelCase round trip (`bench-ab` ↔ `benchAb`).
fn module_name(i: usize) -> String {
    let a = (b'a' + (i / 26) as u8) as char;
    let b = (b'a' + (i % 26) as u8) as char;
    format!("bench-{a}{b}")
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in name.chars() {
        if c == '-' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create directory");
    }
    std::fs::write(path, text).expect("write file");
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

const HELPERS: &str = r#"{{- define "bench.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "bench.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.Version | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "bench.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
"#;

fn deployment(key: &str) -> String {
    r#"{{- $v := .Values.KEY }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "bench.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  replicas: {{ $v.replicas }}
  selector:
    matchLabels:
      {{- include "bench.selector" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "bench.selector" . | nindent 8 }}
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
        generated-by-hook: {{ $v.internal.token | quote }}
    spec:
      serviceAccountName: {{ include "bench.fullname" . }}
      containers:
      - name: main
        image: "{{ $v.image.repository }}:{{ $v.image.tag | default .Chart.AppVersion }}"
        args:
        - --log-level={{ $v.logLevel }}
        {{- range $i, $port := $v.ports }}
        - --listen-{{ $port.name }}=:{{ $port.port }}
        {{- end }}
        env:
        {{- range $name, $value := $v.env }}
        - name: {{ $name | upper | replace "-" "_" }}
          value: {{ $value | quote }}
        {{- end }}
        - name: ENABLED_MODULES
          value: {{ .Values.global.enabledModules | join "," | quote }}
        ports:
        {{- range $v.ports }}
        - name: {{ .name }}
          containerPort: {{ .port }}
        {{- end }}
        resources:
          {{- toYaml $v.resources | nindent 10 }}
        {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
        {{- end }}
"#
    .replace("KEY", key)
}

fn service(key: &str) -> String {
    r#"apiVersion: v1
kind: Service
metadata:
  name: {{ include "bench.fullname" . }}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  selector:
    {{- include "bench.selector" . | nindent 4 }}
  ports:
  {{- range .Values.KEY.ports }}
  - name: {{ .name }}
    port: {{ .port }}
    targetPort: {{ .name }}
  {{- end }}
"#
    .replace("KEY", key)
}

fn configmap(key: &str) -> String {
    r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "bench.fullname" . }}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
data:
  {{- range $k, $v := .Values.KEY.settings }}
  {{ $k }}: {{ $v | toString | quote }}
  {{- end }}
  settings.json: |
    {{- .Values.KEY.settings | toPrettyJson | nindent 4 }}
"#
    .replace("KEY", key)
}

fn ingress(key: &str) -> String {
    r#"{{- if .Values.KEY.ingress.enabled }}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ include "bench.fullname" . }}
  annotations:
    {{- range $k, $v := .Values.KEY.ingress.annotations }}
    {{ $k }}: {{ $v | quote }}
    {{- end }}
spec:
  rules:
  - host: {{ printf "%s.%s" .Chart.Name .Values.global.domain }}
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: {{ include "bench.fullname" . }}
            port:
              name: http
{{- end }}
"#
    .replace("KEY", key)
}

const SERVICE_ACCOUNT: &str = r#"apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "bench.fullname" . }}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
"#;

fn values_yaml(key: &str, i: usize) -> String {
    let mut s = format!(
        "{key}:\n  image:\n    repository: registry.example.com/{key}\n    tag: v1.{i}.0\n  ports:\n  - name: http\n    port: 8080\n  - name: metrics\n    port: 9090\n  env:\n"
    );
    for e in 0..8 {
        let _ = writeln!(s, "    setting-{e}: value-{i}-{e}");
    }
    s.push_str("  settings:\n");
    for e in 0..12 {
        let _ = writeln!(s, "    key{e}: {}", i * 100 + e);
    }
    s.push_str(
        "  resources:\n    requests: {cpu: 50m, memory: 64Mi}\n    limits: {memory: 128Mi}\n  ingress:\n    enabled: true\n    annotations:\n      nginx.ingress.kubernetes.io/proxy-body-size: 8m\n      example.com/owner: bench\n  nodeSelector:\n    kubernetes.io/os: linux\n",
    );
    s
}

const CONFIG_SCHEMA: &str = r#"type: object
properties:
  replicas:
    type: integer
    minimum: 1
    default: 2
  logLevel:
    type: string
    enum: [debug, info, warn, error]
    default: info
"#;

const VALUES_SCHEMA: &str = r#"x-extend:
  schema: config-values.yaml
type: object
x-required-for-helm: [internal]
properties:
  image:
    type: object
    properties:
      repository: {type: string}
      tag: {type: string}
  ports:
    type: array
    items:
      type: object
      properties:
        name: {type: string}
        port: {type: integer}
  env:
    type: object
    additionalProperties: {type: string}
  settings:
    type: object
    additionalProperties: {type: integer}
  resources:
    type: object
    additionalProperties: true
  ingress:
    type: object
    properties:
      enabled: {type: boolean}
      annotations:
        type: object
        additionalProperties: {type: string}
  nodeSelector:
    type: object
    additionalProperties: {type: string}
  internal:
    type: object
    properties:
      token: {type: string}
"#;

fn hook(key: &str, i: usize) -> String {
    format!(
        "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then\n  echo '{{\"configVersion\":\"v1\",\"beforeHelm\":10}}'\n  exit 0\nfi\necho '[{{\"op\":\"add\",\"path\":\"/{key}/internal\",\"value\":{{\"token\":\"t-{i}\"}}}}]' > \"$VALUES_JSON_PATCH_PATH\"\n"
    )
}

const GLOBAL_HOOK: &str = "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then\n  echo '{\"configVersion\":\"v1\",\"beforeAll\":1}'\n  exit 0\nfi\necho '[{\"op\":\"add\",\"path\":\"/global/domain\",\"value\":\"bench.example.com\"}]' > \"$VALUES_JSON_PATCH_PATH\"\n";

/// Writes the tree; returns the ConfigMap path.
fn generate(root: &Path, count: usize) -> std::path::PathBuf {
    let modules = root.join("modules");
    let mut enabled = String::from("global:\n  domain: example.com\n");
    let mut config = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\ndata:\n  global: |\n    {}\n",
    );
    for i in 0..count {
        let name = module_name(i);
        let key = camel(&name);
        let _ = writeln!(enabled, "{key}Enabled: true");
        if i % 2 == 0 {
            let _ = write!(config, "  {key}: |\n    replicas: 3\n    logLevel: debug\n");
        }
        let dir = modules.join(format!("{:03}-{name}", i + 1));
        write(
            &dir.join("Chart.yaml"),
            &format!("apiVersion: v2\nname: {name}\nversion: 0.1.{i}\nappVersion: \"1.{i}\"\n"),
        );
        write(&dir.join("values.yaml"), &values_yaml(&key, i));
        write(&dir.join("openapi/config-values.yaml"), CONFIG_SCHEMA);
        write(&dir.join("openapi/values.yaml"), VALUES_SCHEMA);
        write(&dir.join("templates/_helpers.tpl"), HELPERS);
        write(&dir.join("templates/deployment.yaml"), &deployment(&key));
        write(&dir.join("templates/service.yaml"), &service(&key));
        write(&dir.join("templates/configmap.yaml"), &configmap(&key));
        write(&dir.join("templates/ingress.yaml"), &ingress(&key));
        write(&dir.join("templates/serviceaccount.yaml"), SERVICE_ACCOUNT);
        let h = dir.join("hooks/prepare.sh");
        write(&h, &hook(&key, i));
        make_executable(&h);
    }
    write(&modules.join("values.yaml"), &enabled);
    let g = root.join("global-hooks/hooks/domain.sh");
    write(&g, GLOBAL_HOOK);
    make_executable(&g);
    let cm = root.join("config.yaml");
    write(&cm, &config);
    cm
}

/// One run's measurements, in seconds.
struct Sample {
    own_cpu: f64,
    hooks_cpu: f64,
    wall: f64,
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// utime, stime, cutime, cstime of a (zombie) process, in clock ticks.
fn proc_times(pid: u32) -> Result<[u64; 4], String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("cannot read /proc/{pid}/stat: {e}"))?;
    // Fields after the command name (which may contain spaces) start at field 3.
    let rest = stat
        .rsplit_once(") ")
        .map(|(_, r)| r)
        .ok_or("bad /proc stat")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| -> Result<u64, String> {
        f.get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad /proc stat field {}", i + 3))
    };
    // utime is field 14, i.e. index 11 here.
    Ok([get(11)?, get(12)?, get(13)?, get(14)?])
}

fn measure(
    bin: &Path,
    root: &Path,
    config: &Path,
    out: &Path,
    tick: f64,
) -> Result<Sample, String> {
    let _ = std::fs::remove_dir_all(out);
    let start = Instant::now();
    let child = Command::new(bin)
        .arg("render")
        .arg("--modules-dir")
        .arg(root.join("modules"))
        .arg("--global-hooks-dir")
        .arg(root.join("global-hooks"))
        .arg("--config")
        .arg(config)
        .arg("-n")
        .arg("bench")
        .arg("--output-dir")
        .arg(out)
        .env("ADDON_OPERATOR_TMP_DIR", root.join("tmp"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let pid = child.id();
    // Wait for the exit but leave the zombie, so /proc still has its times.
    waitid(
        Id::Pid(nix::unistd::Pid::from_raw(pid as i32)),
        WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
    )
    .map_err(|e| format!("waitid: {e}"))?;
    let wall = start.elapsed().as_secs_f64();
    let times = proc_times(pid);
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "antiopa render failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let [ut, st, cut, cst] = times?;
    Ok(Sample {
        own_cpu: (ut + st) as f64 / tick,
        hooks_cpu: (cut + cst) as f64 / tick,
        wall,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not used.
    let bin = common::release_bin();
    if !bin.exists() {
        eprintln!(
            "{} not found: build it first with `cargo build --release` (or set ANTIOPA_BIN)",
            bin.display()
        );
        std::process::exit(1);
    }
    let count = env_usize("BENCH_MODULES", 50);
    let runs = env_usize("BENCH_RUNS", 5).max(1);
    let tmp = tempfile::tempdir().expect("temporary directory");
    let root = tmp.path();
    let config = generate(root, count);
    std::fs::create_dir_all(root.join("tmp")).expect("tmp dir");
    let out = root.join("out");
    let tick = clock_ticks();

    // One warm-up run, which also checks the output.
    if let Err(e) = measure(&bin, root, &config, &out, tick) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let files = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
    if files != count {
        eprintln!(
            "expected {count} rendered modules in {}, found {files}",
            out.display()
        );
        std::process::exit(1);
    }

    let mut samples = Vec::new();
    for _ in 0..runs {
        match measure(&bin, root, &config, &out, tick) {
            Ok(s) => samples.push(s),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
    let own = median(samples.iter().map(|s| s.own_cpu).collect());
    let hooks = median(samples.iter().map(|s| s.hooks_cpu).collect());
    let wall = median(samples.iter().map(|s| s.wall).collect());
    println!(
        "antiopa render --output-dir: {count} modules ({} hook runs), median of {runs} runs",
        2 * (count + 1)
    );
    println!("  antiopa's own CPU (user+sys, without hooks): {own:.3} s");
    println!("  hook processes' CPU (user+sys):              {hooks:.3} s");
    println!("  wall time:                                   {wall:.3} s");
    let met = own < TARGET_CPU_SECS;
    println!(
        "target: own CPU < {TARGET_CPU_SECS:.1} s — {}",
        if met { "met" } else { "NOT met" }
    );
}
