//! The Builder's shell against the full test gate, on a real Rust workspace: two crates from
//! crates.io (percent-encoding 2.3.2 and form_urlencoded 1.2.2, pinned by checksum, fetched once
//! and cached like the tests' fixtures; neither needs another crate, so it builds offline) in
//! the Rust runner image, with no network. A workspace whose suite takes minutes needs its
//! dependencies fetched into an environment first (regex-syntax's optional `arbitrary` already
//! does): not done here. One attempt's verification, from a clean build each time, as the agent's tools
//! run it: `shell` running one crate's one test, against `run_command test` running the
//! workspace's whole suite. Prints medians; asserts nothing.
//!
//! `cargo bench --profile dev --bench shell [-- --runs 3]`

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "args.rs"]
mod args;
use args::arg;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::registry::{Crate, commit_and_tag, copy_dir, write};
use vibeloop::agent::Toolbox;
use vibeloop::agent::tools::{CommandRunner, WriteScope};
use vibeloop::sandbox::{Backend, SandboxSpec};

const CRATES: [(Crate, &str); 2] = [
    (
        Crate {
            name: "percent-encoding",
            version: "2.3.2",
            sha256: "9b4f627cb1b25917193a259e49bdad08f671f8d9708acfd5fe0a8c1455d87220",
        },
        "percent-encoding",
    ),
    (
        Crate {
            name: "form_urlencoded",
            version: "1.2.2",
            sha256: "cb4cb245038516f5f85277875cdaa4f7d2c9a0fa0468de06ed190163b1581fcf",
        },
        "form_urlencoded",
    ),
];

/// Cargo writes its home under the container's `/tmp`; nothing is fetched.
const CARGO: &str = "CARGO_HOME=/tmp/cargo cargo";

fn workspace(root: &Path) {
    for (krate, into) in &CRATES {
        let (_kept, unpacked) = krate.unpacked(&["Cargo.lock"]);
        copy_dir(&unpacked, &root.join(into));
    }
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"percent-encoding\", \"form_urlencoded\"]\nresolver = \"2\"\n\n[patch.crates-io]\npercent-encoding = { path = \"percent-encoding\" }\n",
    );
    write(root, ".gitignore", "/target\n");
    commit_and_tag(root, "0.1.0");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn timed(tb: &mut Toolbox, tool: &str, args: serde_json::Value) -> Duration {
    let started = Instant::now();
    let out = tb
        .call(tool, &args.to_string())
        .await
        .expect("the tool runs");
    let took = started.elapsed();
    let status = out.lines().next().unwrap_or_default().to_owned();
    assert!(
        status.contains("exit code 0"),
        "{tool} {args}: {status}\n{}",
        &out[out.len().saturating_sub(3000)..]
    );
    took
}

#[tokio::main]
async fn main() {
    let runs: usize = arg("--runs", 3);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    workspace(&root);
    let (backend, fallback) = Backend::detect(dir.path(), None).await.expect("a backend");
    if let Some(why) = fallback {
        eprintln!("bench/shell: no Docker engine ({why}); the figures are for local processes");
    }
    let mut spec = SandboxSpec::probe("vibeloop-runner:rust", &root, "bench-shell", false);
    spec.cpus = 2.0;
    spec.memory_mb = 4096;
    spec.pids = 1024;
    spec.disk_mb = 8192;
    let sandbox = Arc::new(backend.start(&spec).await.expect("the sandbox starts"));
    let runner = CommandRunner {
        sandbox: sandbox.clone(),
        commands: vec![("test".into(), format!("{CARGO} test --offline --workspace"))],
        timeout: Duration::from_secs(1800),
        shell: true,
        worktree: None,
    };
    let mut tb = Toolbox::new(root.clone(), WriteScope::Except(vec![])).with_commands(runner);
    let one = format!("{CARGO} test --offline -p percent-encoding --lib -- percent_encode_byte");
    let clean = json!({ "command": "rm -rf target" });
    let (mut shell, mut gate) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        tb.call("shell", &clean.to_string()).await.unwrap();
        shell.push(timed(&mut tb, "shell", json!({ "command": one })).await);
        tb.call("shell", &clean.to_string()).await.unwrap();
        gate.push(timed(&mut tb, "run_command", json!({ "name": "test" })).await);
    }
    drop(tb);
    if let Ok(s) = Arc::try_unwrap(sandbox) {
        s.stop().await;
    }
    let (s, g) = (median(shell), median(gate));
    println!("| Builder attempt, clean build, medians of {runs} | time |");
    println!("|---|---|");
    println!(
        "| `shell`: one test of one crate (`{one}`) | {:.1} s |",
        s.as_secs_f64()
    );
    println!(
        "| `run_command test`: the workspace's whole suite (2 crates, unit and doc tests) | {:.1} s |",
        g.as_secs_f64()
    );
    println!("| ratio | {:.1}× |", g.as_secs_f64() / s.as_secs_f64());
}
