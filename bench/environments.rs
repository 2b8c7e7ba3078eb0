//! Environments: what the sandbox as a trust boundary costs a second ticket's test gate. For a
//! Rust crate (with a crates.io dependency) and a Python package (with a PyPI dependency), the
//! environment is set up once; then, each on a fresh checkout of the same files, the test gate
//! runs as it did before (the environment mounted read-write and shared, as found) and as it
//! runs now (found only after its tree hash is checked, and mounted read-only under a writable
//! layer of the sandbox's own). Prints medians and their ratio; asserts nothing.
//!
//! `cargo bench --profile dev --bench environments [-- --runs 5]`
//! Needs Docker with `vibeloop-runner:rust` and `:python`, and the registries (set
//! `VIBELOOP_SANDBOX_CA_BUNDLE` on a network that re-signs TLS).

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "args.rs"]
mod args;
use args::arg;

use std::path::Path;
use std::time::{Duration, Instant};

use vibeloop::config::repo::HiveConfig;
use vibeloop::env::tree::Tree;
use vibeloop::sandbox::{Backend, Kind, SandboxSpec};

const RUST: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        "[package]\nname = \"fmtnum\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n",
    ),
    (
        "src/lib.rs",
        "pub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows() {\n        assert_eq!(super::show(42), \"42\");\n    }\n}\n",
    ),
];

const PYTHON: &[(&str, &str)] = &[
    (
        "pyproject.toml",
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"widthy\"\nversion = \"0.1.0\"\ndependencies = [\"wcwidth>=0.2\"]\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\n",
    ),
    (
        "src/widthy/__init__.py",
        "from wcwidth import wcswidth\n\n\ndef width(s):\n    return wcswidth(s)\n",
    ),
    (
        "tests/test_width.py",
        "from widthy import width\n\n\ndef test_ascii():\n    assert width(\"abc\") == 3\n",
    ),
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A checkout of `files` in a new directory under `parent`.
fn checkout(parent: &Path, n: usize, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = parent.join(format!("wt-{n}"));
    for (p, t) in files {
        let at = dir.join(p);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, t).unwrap();
    }
    dir
}

async fn gate(backend: &Backend, spec: &SandboxSpec, command: &str) -> Duration {
    let started = Instant::now();
    let sandbox = backend.start(spec).await.expect("the sandbox starts");
    let out = sandbox
        .exec(command, Duration::from_secs(600))
        .await
        .expect("the test command runs");
    sandbox.stop().await;
    assert!(out.success(), "{}", out.tail(30));
    started.elapsed()
}

async fn bench(name: &str, files: &[(&str, &str)], runs: usize) {
    let data = tempfile::tempdir().unwrap();
    let (backend, _) = Backend::detect(data.path(), Some(Kind::Docker))
        .await
        .expect("a Docker engine answers");
    let repo = data.path().join("repo.git");
    support::repos::seed_bare(&repo, "main", files);
    let git = git2::Repository::open_bare(&repo).unwrap();
    let head = git.revparse_single("main").unwrap().id();
    let resolved =
        vibeloop::env::resolve(HiveConfig::default(), &Tree::of_commit(&git, head).unwrap());
    let command = resolved.config.gates.test.clone().expect("a test command");
    let settings = vibeloop::env::Settings::new(data.path());
    let maker = settings.maker(&backend);
    let spec_of = |wt: &Path, n: usize| {
        SandboxSpec::from_config(
            &resolved.config,
            wt,
            ("bench/env", &format!("T-{n}"), "gates"),
            &[],
        )
    };
    // The first ticket sets it up.
    let first = checkout(data.path(), 0, files);
    let setup = Instant::now();
    let ready = maker
        .prepare(&resolved, &spec_of(&first, 0))
        .await
        .expect("setup works")
        .expect("an environment");
    let setup = setup.elapsed();

    // Now: found after its tree hash is checked, read-only under a layer of its own.
    let mut now = Vec::new();
    for n in 1..=runs {
        let wt = checkout(data.path(), n, files);
        let started = Instant::now();
        let mut spec = spec_of(&wt, n);
        let found = maker.prepare(&resolved, &spec).await.unwrap().unwrap();
        assert!(found.reused, "the environment is reused");
        found.apply(&mut spec);
        gate(&backend, &spec, &command).await;
        now.push(started.elapsed());
    }
    // Before: as found, mounted read-write and shared (what every run wrote stayed).
    let mut before = Vec::new();
    for n in runs + 1..=2 * runs {
        let wt = checkout(data.path(), n, files);
        let started = Instant::now();
        let mut spec = spec_of(&wt, n);
        ready.apply(&mut spec);
        spec.cache_writable = true;
        gate(&backend, &spec, &command).await;
        before.push(started.elapsed());
    }
    let hash = Instant::now();
    let _ = vibeloop::env::cache::tree_hash(&ready.dir);
    let hash = hash.elapsed();
    let (b, a) = (median(before), median(now));
    println!(
        "| {name} | {:.1} s | {:.2} s | {:.2} s | {:.0} ms | {:.2}× |",
        setup.as_secs_f64(),
        b.as_secs_f64(),
        a.as_secs_f64(),
        hash.as_secs_f64() * 1000.0,
        a.as_secs_f64() / b.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let runs: usize = arg("--runs", 5);
    println!("Second ticket's test gate, medians of {runs} (the environment set up once first):\n");
    println!(
        "| project | setup (once) | before: shared, read-write | now: hashed, layered | tree hash | now / before |"
    );
    println!("|---|---|---|---|---|---|");
    bench("Rust crate (itoa)", RUST, runs).await;
    bench("Python package (wcwidth, pytest)", PYTHON, runs).await;
}
