//! The Builder's shell against the full test gate, on a real Rust workspace whose suite takes
//! minutes: regex 1.13.2 with regex-syntax 0.8.12 as a member (crates from crates.io, pinned by
//! checksum, fetched once and cached like the tests' fixtures, laid out as the regex repository
//! is), its dependencies fetched by this machine's cargo into an environment mounted at
//! `/cache`, then built and tested offline in the Rust runner image (the package leaves out
//! the integration tests' `fuzz` module; an empty one stands in). After a warm-up build,
//! each run is one Builder attempt's verification after an edit (`src/lib.rs` touched), as the
//! agent's tools run it: `shell` running one test, against `run_command test` running the
//! workspace's whole suite (unit, integration and about 250 doc tests). Prints medians;
//! asserts nothing.
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
use vibeloop::sandbox::{Backend, Deferred, SandboxSpec};

const REGEX: Crate = Crate {
    name: "regex",
    version: "1.13.2",
    sha256: "9807af0e638c12e753aa1b4e601791bf2a8f71274023c8bbeec12fc149950857",
};
const REGEX_SYNTAX: Crate = Crate {
    name: "regex-syntax",
    version: "0.8.12",
    sha256: "d902046e6a28a1e4c3cab97258a0ce11e994903f01c2d97a9447a0b3df85f4f6",
};

/// Cargo's home is the environment, mounted at `/cache`; nothing is fetched in the sandbox.
const CARGO: &str = "CARGO_HOME=/cache/cargo cargo";
/// The one test the Builder runs.
const ONE: &str = "test --offline -p regex --test integration -- misc::capture_names";

/// The regex repository's layout: regex at the root (with its `testdata/`), regex-syntax a
/// member the root patches in.
fn workspace(root: &Path) {
    let (_kept, regex) = REGEX.unpacked(&[]);
    copy_dir(&regex, root);
    let (_kept, syntax) = REGEX_SYNTAX.unpacked(&["Cargo.lock"]);
    copy_dir(&syntax, &root.join("regex-syntax"));
    // The package leaves out the integration tests' `fuzz` module (its data is binary): an
    // empty one stands in, as in a checkout whose fuzz regressions are elsewhere.
    write(root, "tests/fuzz/mod.rs", "");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    write(
        root,
        "Cargo.toml",
        &format!(
            "{manifest}\n[workspace]\nmembers = [\".\", \"regex-syntax\"]\n\n[patch.crates-io]\nregex-syntax = {{ path = \"regex-syntax\" }}\n"
        ),
    );
    write(root, ".gitignore", "/target\n");
    commit_and_tag(root, "0.1.0");
}

/// The workspace's dependencies, fetched by this machine's cargo (its registry or mirror, its
/// config copied) into `<env>/cargo`, which the sandbox mounts at `/cache`.
fn fetch(root: &Path, env: &Path) {
    let home = env.join("cargo");
    std::fs::create_dir_all(&home).unwrap();
    let host = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo")
        });
    for config in ["config.toml", "config"] {
        if host.join(config).exists() {
            std::fs::copy(host.join(config), home.join(config)).unwrap();
        }
    }
    let out = std::process::Command::new("cargo")
        .arg("fetch")
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .env("CARGO_HOME", &home)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo fetch: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The sandbox's user writes there (it unpacks the sources it builds).
    let _ = std::process::Command::new("chmod")
        .arg("-R")
        .arg("a+rwX")
        .arg(env)
        .status();
    let _ = std::process::Command::new("chmod")
        .arg("-R")
        .arg("a+rwX")
        .arg(root)
        .status();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// How long `tool` took; its output must say each of `shows` (that it rebuilt after the
/// edit, that it ran what it should).
async fn timed(tb: &mut Toolbox, tool: &str, args: serde_json::Value, shows: &[&str]) -> Duration {
    let started = Instant::now();
    let out = tb
        .call(tool, &args.to_string())
        .await
        .expect("the tool runs");
    let took = started.elapsed();
    let status = out.lines().next().unwrap_or_default().to_owned();
    let tail = &out[out.len().saturating_sub(3000)..];
    assert!(
        status.contains("exit code 0"),
        "{tool} {args}: {status}\n{tail}"
    );
    for s in shows {
        assert!(out.contains(s), "{tool} {args}: {s:?} not in\n{tail}");
    }
    took
}

#[tokio::main]
async fn main() {
    let runs: usize = arg("--runs", 3);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let env = dir.path().join("env");
    workspace(&root);
    fetch(&root, &env);
    let (backend, fallback) = Backend::detect(dir.path(), None).await.expect("a backend");
    if let Some(why) = fallback {
        eprintln!("bench/shell: no Docker engine ({why}); the figures are for local processes");
    }
    let mut spec = SandboxSpec::probe("vibeloop-runner:rust", &root, "bench-shell", false);
    spec.cpus = 2.0;
    spec.memory_mb = 6144;
    spec.pids = 1024;
    spec.disk_mb = 16384;
    spec.cache = Some(env.clone());
    spec.cache_writable = true;
    // Started by the warm-up build, the first command.
    let sandbox = Arc::new(Deferred::new(backend, spec));
    let runner = CommandRunner {
        sandbox: sandbox.clone(),
        commands: vec![("test".into(), format!("{CARGO} test --offline --workspace"))],
        timeout: Duration::from_secs(3600),
        shell: true,
        worktree: None,
    };
    let mut tb = Toolbox::new(root.clone(), WriteScope::Except(vec![])).with_commands(runner);
    let one = format!("{CARGO} {ONE}");
    let warm = json!({ "command": format!("{CARGO} test --offline --workspace --no-run") });
    let started = Instant::now();
    timed(&mut tb, "shell", warm, &[]).await;
    eprintln!(
        "bench/shell: warm-up build {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let edit = json!({ "command": "touch src/lib.rs" });
    let (mut shell, mut gate) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        tb.call("shell", &edit.to_string()).await.unwrap();
        let rebuilt = "Compiling regex v1.13.2";
        let ran = ["test misc::capture_names ... ok", "1 passed", rebuilt];
        shell.push(timed(&mut tb, "shell", json!({ "command": one }), &ran).await);
        tb.call("shell", &edit.to_string()).await.unwrap();
        // Its output ends with regex-syntax's doc tests (a tail is what the tool keeps).
        let all = [
            "regex-syntax/src/lib.rs - (line 39) ... ok",
            "test result: ok.",
        ];
        gate.push(timed(&mut tb, "run_command", json!({ "name": "test" }), &all).await);
    }
    drop(tb);
    if let Ok(s) = Arc::try_unwrap(sandbox) {
        s.stop().await;
    }
    let (s, g) = (median(shell), median(gate));
    println!("| Builder attempt after an edit, warm build, medians of {runs} | time |");
    println!("|---|---|");
    println!(
        "| `shell`: one test (`cargo {ONE}`) | {:.1} s |",
        s.as_secs_f64()
    );
    println!(
        "| `run_command test`: the workspace's whole suite (regex + regex-syntax: unit, integration, doc tests) | {:.1} s |",
        g.as_secs_f64()
    );
    println!("| ratio | {:.1}× |", g.as_secs_f64() / s.as_secs_f64());
}
