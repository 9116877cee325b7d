//! `fake-apiserver` binary: serves the in-memory API server over plain HTTP, prints the bound
//! address (one line on stdout), optionally writes a kubeconfig for it, and runs until killed.
//! With `FAKE_APISERVER_LOG` set, every request's method, URI, `Content-Type`, `Accept` and user
//! agent go to stderr (how helm's protobuf release writes were found). `POST
//! /fake-admin/watches/kill` and `…/freeze` break or freeze every open watch connection.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

/// In-memory Kubernetes API server for tests (plain HTTP).
#[derive(Parser)]
#[command(name = "fake-apiserver")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// Write a kubeconfig pointing at the server to this file.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Complete Jobs (and run-to-completion Pods) as soon as they are written.
    #[arg(long)]
    complete_jobs: bool,
    /// How often bookmark-enabled watches get a BOOKMARK (seconds, fractions allowed).
    #[arg(long, default_value_t = 60.0)]
    bookmark_interval: f64,
    /// Report Deployments, StatefulSets, DaemonSets and ReplicaSets ready.
    #[arg(long)]
    workloads_ready: bool,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let server = fake_apiserver::FakeApiServer::new();
    server.set_complete_jobs(args.complete_jobs);
    server.set_workloads_ready(args.workloads_ready);
    server.set_bookmark_interval(std::time::Duration::from_secs_f64(args.bookmark_interval));
    let (addr, task) = server.serve(&args.listen).await?;
    if let Some(path) = &args.kubeconfig_out {
        server.write_kubeconfig(addr, path)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{addr}")?;
    out.flush()?;
    drop(out);
    let _ = task.await;
    Ok(())
}
