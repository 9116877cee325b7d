//! The verbs that ask a running operator through its debug socket
//! (`DEBUG_UNIX_SOCKET`, `--debug-socket`): `module list|values|render|
//! status`, `queue list`, `watch list`, `global values|config`. One HTTP/1 GET over the
//! unix socket (hyper's client), the answer printed as a table or as
//! JSON/YAML.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use serde_json::Value as Json;

/// Where `antiopa run` serves its debug API unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/var/run/antiopa/debug.socket";

/// The operator's debug socket.
#[derive(Args, Debug, Clone)]
pub struct SocketArg {
    /// The running operator's debug socket.
    #[arg(long = "debug-socket", env = "DEBUG_UNIX_SOCKET", default_value = DEFAULT_SOCKET)]
    pub debug_socket: PathBuf,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Table,
    Json,
    Yaml,
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// Module name.
    name: String,
    /// Print Secret `data`/`stringData` values (masked as *** otherwise).
    #[arg(long = "show-secrets")]
    show_secrets: bool,
    #[command(flatten)]
    socket: SocketArg,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Module name.
    name: String,
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
    #[command(flatten)]
    socket: SocketArg,
}

#[derive(Subcommand, Debug)]
pub enum QueueCommand {
    /// The running operator's queue: the tasks due and what it does now.
    List(ListArgs),
}

#[derive(Subcommand, Debug)]
pub enum WatchCommand {
    /// The running operator's shared watches: state, objects, restarts.
    List(ListArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
    #[command(flatten)]
    socket: SocketArg,
}

#[derive(Subcommand, Debug)]
pub enum GlobalCommand {
    /// The running operator's global values.
    Values(GlobalArgs),
    /// The running operator's global config values (from its ConfigMap).
    Config(GlobalArgs),
}

#[derive(Args, Debug)]
pub struct GlobalArgs {
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: super::module::Format,
    #[command(flatten)]
    socket: SocketArg,
}

/// GET `path` on the operator's debug socket: the body of a 2xx answer,
/// else an error with the operator's text.
pub fn get(socket: &Path, path: &str) -> Result<String, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let stream = tokio::net::UnixStream::connect(socket).await.map_err(|e| {
            format!(
                "cannot reach the operator's debug socket {}: {e} (is `antiopa run` running? set --debug-socket or DEBUG_UNIX_SOCKET)",
                socket.display()
            )
        })?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| format!("debug socket {}: {e}", socket.display()))?;
        tokio::spawn(conn);
        let req = hyper::Request::get(path)
            .header(hyper::header::HOST, "antiopa")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("debug socket {}: GET {path}: {e}", socket.display()))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("debug socket {}: GET {path}: {e}", socket.display()))?
            .to_bytes();
        let text = String::from_utf8_lossy(&body).into_owned();
        if status.is_success() {
            Ok(text)
        } else {
            Err(format!("the operator answered {status}: {}", text.trim_end()))
        }
    })
}

fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.is_empty() && !text.ends_with('\n') {
        let _ = writeln!(out);
    }
}

fn parse(text: &str) -> Result<Json, String> {
    serde_json::from_str(text).map_err(|e| format!("the operator's answer is not JSON: {e}"))
}

/// Rows under a header, columns padded to their widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for r in std::iter::once(&head).chain(rows) {
        let last = r.len().saturating_sub(1);
        for (i, c) in r.iter().enumerate() {
            if i == last {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.push('\n');
    }
    out
}

fn cell(v: &Json) -> String {
    match v {
        Json::Null => "-".into(),
        Json::String(s) => s.lines().next().unwrap_or("").to_string(),
        other => other.to_string(),
    }
}

/// `antiopa module list` against the operator.
pub fn module_list(socket: &Path, output: Output) -> Result<(), String> {
    match output {
        Output::Json => print(&get(socket, "/module/list.json")?),
        Output::Yaml => print(&get(socket, "/module/list.yaml")?),
        Output::Table => {
            let v = parse(&get(socket, "/module/list.json")?)?;
            print(&module_table(&v));
        }
    }
    Ok(())
}

/// The module list as a table; a WAITING FOR column when a module waits,
/// and which replica this is under leader election.
fn module_table(v: &Json) -> String {
    let modules: Vec<&Json> = v["modules"].as_array().into_iter().flatten().collect();
    let waiting = modules.iter().any(|m| !m["waitingFor"].is_null());
    let rows: Vec<Vec<String>> = modules
        .iter()
        .map(|m| {
            let error = cell(&m["lastError"]);
            let mut row = vec![
                cell(&m["order"]),
                cell(&m["name"]),
                if m["enabled"] == Json::Bool(true) {
                    "enabled".into()
                } else {
                    "disabled".into()
                },
                cell(&m["phase"]),
                cell(&m["revision"]),
            ];
            if waiting {
                row.push(cell(&m["waitingFor"]));
            }
            row.push(if error == "-" {
                cell(&m["reason"])
            } else {
                error
            });
            row
        })
        .collect();
    let mut header = vec!["ORDER", "NAME", "STATE", "PHASE", "REVISION"];
    if waiting {
        header.push("WAITING FOR");
    }
    header.push("REASON/ERROR");
    let mut out = table(&header, &rows);
    if let Some(l) = v["leader"].as_object() {
        let role = if l.get("leading") == Some(&Json::Bool(true)) {
            "leader"
        } else {
            "standby"
        };
        out.push_str(&format!(
            "\nThis replica ({}) is the {role}.\n",
            l.get("identity").map(cell).unwrap_or_default()
        ));
    }
    out
}

/// `antiopa module values NAME` against the operator.
pub fn module_values(
    socket: &Path,
    name: &str,
    global: bool,
    format: super::module::Format,
) -> Result<(), String> {
    let ext = match format {
        super::module::Format::Yaml => "yaml",
        super::module::Format::Json => "json",
    };
    let q = if global { "?global=true" } else { "" };
    print(&get(
        socket,
        &format!("/module/{}/values.{ext}{q}", encode(name)),
    )?);
    Ok(())
}

pub fn module_render(a: &RenderArgs) -> Result<(), String> {
    let q = if a.show_secrets {
        "?show-secrets=true"
    } else {
        ""
    };
    print(&get(
        &a.socket.debug_socket,
        &format!("/module/{}/render{q}", encode(&a.name)),
    )?);
    Ok(())
}

pub fn module_status(a: &StatusArgs) -> Result<(), String> {
    let socket = &a.socket.debug_socket;
    let path = |ext: &str| format!("/module/{}/status.{ext}", encode(&a.name));
    match a.output {
        Output::Json => print(&get(socket, &path("json"))?),
        Output::Yaml => print(&get(socket, &path("yaml"))?),
        Output::Table => {
            let v = parse(&get(socket, &path("json"))?)?;
            print(&status_table(&a.name, &v));
        }
    }
    Ok(())
}

/// A module's status as `LABEL: value` lines; drift and waiting when set.
fn status_table(name: &str, v: &Json) -> String {
    let mut out = format!("{:<15}{name}\n", "NAME:");
    let mut line = |label: &str, val: String| out.push_str(&format!("{label:<15}{val}\n"));
    for (k, label) in [
        ("phase", "PHASE:"),
        ("waiting_for", "WAITING FOR:"),
        ("enabled_reason", "REASON:"),
        ("revision", "REVISION:"),
        ("release_state", "RELEASE:"),
        ("runs", "RUNS:"),
        ("failures", "FAILURES:"),
        ("last_run", "LAST RUN:"),
        ("last_error", "LAST ERROR:"),
    ] {
        if k == "waiting_for" && v[k].is_null() {
            continue;
        }
        let val = match (k, &v[k]) {
            ("last_run", Json::Object(d)) => format!(
                "{:.3}s",
                d.get("secs").and_then(Json::as_f64).unwrap_or(0.0)
                    + d.get("nanos").and_then(Json::as_f64).unwrap_or(0.0) / 1e9
            ),
            (_, Json::String(s)) => s.clone(),
            (_, other) => cell(other),
        };
        line(label, val);
    }
    match &v["drift"] {
        Json::Object(d) => {
            let get = |k: &str| d.get(k).map(cell).unwrap_or_else(|| "-".into());
            line(
                "DRIFT:",
                format!(
                    "mode {}, {} objects watched, {} detected, {} restored{}",
                    get("mode"),
                    get("objects"),
                    get("detected"),
                    get("restored"),
                    if d.get("suspended") == Some(&Json::Bool(true)) {
                        ", suspended until the next successful run"
                    } else {
                        ""
                    }
                ),
            );
            if let Some(Json::Object(stopped)) = d.get("stopped") {
                for (obj, why) in stopped {
                    line("DRIFT STOPPED:", format!("{obj}: {}", cell(why)));
                }
            }
            if let Some(last) = d.get("last").filter(|l| !l.is_null()) {
                line("LAST DRIFT:", cell(last));
            }
        }
        _ => line("DRIFT:", "not watched".into()),
    }
    out
}

pub fn run_queue(cmd: QueueCommand) -> i32 {
    let QueueCommand::List(a) = cmd;
    let ext = match a.output {
        Output::Table => "text",
        Output::Json => "json",
        Output::Yaml => "yaml",
    };
    finish(get(&a.socket.debug_socket, &format!("/queue/list.{ext}")).map(|t| print(&t)))
}

pub fn run_watch(cmd: WatchCommand) -> i32 {
    let WatchCommand::List(a) = cmd;
    let socket = &a.socket.debug_socket;
    finish(match a.output {
        Output::Json => get(socket, "/watch/list.json").map(|t| print(&t)),
        Output::Yaml => get(socket, "/watch/list.yaml").map(|t| print(&t)),
        Output::Table => get(socket, "/watch/list.json")
            .and_then(|t| parse(&t))
            .map(|v| print(&watch_table(&v))),
    })
}

/// The watches as a table, the totals under it.
fn watch_table(v: &Json) -> String {
    let rows: Vec<Vec<String>> = v["watches"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            let ns = w["namespaces"]
                .as_array()
                .map(|a| a.iter().map(cell).collect::<Vec<_>>().join(","))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "*".into());
            let last = w["lastEventSecondsAgo"]
                .as_f64()
                .map(|s| format!("{s:.0}s"))
                .unwrap_or_else(|| "-".into());
            vec![
                cell(&w["kind"]),
                ns,
                cell(&w["state"]),
                cell(&w["objects"]),
                cell(&w["restarts"]),
                cell(&w["relists"]),
                last,
                cell(&w["lastError"]),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "KIND",
            "NAMESPACES",
            "STATE",
            "OBJECTS",
            "RESTARTS",
            "RELISTS",
            "LAST EVENT",
            "ERROR",
        ],
        &rows,
    );
    out.push_str(&format!(
        "\n{} watches, {} dead; {} restarts, {} relists since start\n",
        rows.len(),
        cell(&v["dead"]),
        cell(&v["restartsTotal"]),
        cell(&v["relistsTotal"]),
    ));
    out
}

pub fn run_global(cmd: GlobalCommand) -> i32 {
    let (what, a) = match cmd {
        GlobalCommand::Values(a) => ("values", a),
        GlobalCommand::Config(a) => ("config", a),
    };
    let ext = match a.output {
        super::module::Format::Yaml => "yaml",
        super::module::Format::Json => "json",
    };
    finish(get(&a.socket.debug_socket, &format!("/global/{what}.{ext}")).map(|t| print(&t)))
}

pub fn finish(r: Result<(), String>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "Error: {e}");
            1
        }
    }
}

/// A module name as one path segment (names are kebab-case; anything
/// else is percent-encoded so it cannot change the route).
fn encode(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
