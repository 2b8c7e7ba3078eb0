//! Sandbox benchmark: container start time; exec overhead against running the same ~1 s test
//! run natively; worktree creation on the mirror against a fresh clone, on a generated
//! repository of 10,000 files; how much a command filling the disk writes before the disk
//! guard kills it. Prints a table (see bench/README.md).
//!
//! `cargo bench --bench sandbox [-- --files 10000 --runs 5]`

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "args.rs"]
mod args;
use args::arg;
use std::path::Path;
use std::time::{Duration, Instant};

use secrecy::SecretString;
use vibeloop::ids::RepoName;
use vibeloop::sandbox::local::{LocalCommand, run as run_local};
use vibeloop::sandbox::{Backend, Kind, SandboxSpec};
use vibeloop::workspace::Workspace;

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn spec(worktree: &Path, n: usize) -> SandboxSpec {
    SandboxSpec {
        repo: "bench/sandbox".into(),
        ticket: format!("T-{n}"),
        role: "bench".into(),
        worktree: worktree.to_owned(),
        read_only: vec![],
        locked: vec![],
        image: "vibeloop-runner:python".into(),
        network: false,
        cpus: 2.0,
        memory_mb: 1024,
        pids: 512,
        disk_mb: 1024,
        cache: None,
        cache_writable: false,
        ca_bundle: None,
        env: vec![],
        prepare: None,
    }
}

/// A unittest suite that burns about `target` of CPU on this machine, calibrated by timing a
/// shorter run of the same loop.
async fn calibrated_tests(dir: &Path, target: Duration) -> String {
    let write = |iters: u64| {
        std::fs::write(
            dir.join("test_burn.py"),
            format!("import unittest\n\nclass Burn(unittest.TestCase):\n    def test_burn(self):\n        n = 0\n        for i in range({iters}):\n            n += i * i\n        self.assertTrue(n >= 0)\n"),
        )
        .unwrap();
    };
    let cmd = "python3 -m unittest -q test_burn";
    // Two probe sizes give the fixed start-up cost and the cost per iteration.
    let mut timed = Vec::new();
    for probe in [500_000u64, 2_500_000] {
        write(probe);
        let out = run_local(&LocalCommand::new(cmd, dir, Duration::from_secs(120)))
            .await
            .unwrap();
        assert!(out.success(), "{}", out.output);
        timed.push((probe as f64, out.duration.as_secs_f64()));
    }
    let per_iter = ((timed[1].1 - timed[0].1) / (timed[1].0 - timed[0].0)).max(1e-9);
    let fixed = (timed[0].1 - per_iter * timed[0].0).max(0.0);
    let iters = ((target.as_secs_f64() - fixed).max(0.1) / per_iter) as u64;
    write(iters);
    cmd.into()
}

#[tokio::main]
async fn main() {
    let files = arg("--files", 10_000);
    let runs = arg("--runs", 5);
    let tmp = tempfile::tempdir().unwrap();
    let (backend, _) = Backend::detect(tmp.path(), Some(Kind::Docker))
        .await
        .expect("a Docker engine answers");

    // 1. Container start.
    let wt = tmp.path().join("wt");
    std::fs::create_dir_all(&wt).unwrap();
    let mut starts = Vec::new();
    for n in 0..runs {
        let t = Instant::now();
        let sb = backend.start(&spec(&wt, n)).await.unwrap();
        starts.push(t.elapsed());
        sb.stop().await;
    }

    // 2. Exec overhead on a ~1 s test run.
    let cmd = calibrated_tests(&wt, Duration::from_secs(1)).await;
    let sb = backend.start(&spec(&wt, 99)).await.unwrap();
    let (mut native, mut inside) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let out = run_local(&LocalCommand::new(&cmd, &wt, Duration::from_secs(120)))
            .await
            .unwrap();
        assert!(out.success(), "{}", out.output);
        native.push(t.elapsed());
        let t = Instant::now();
        let out = sb.exec(&cmd, Duration::from_secs(120)).await.unwrap();
        assert!(out.success(), "{}", out.output);
        inside.push(t.elapsed());
    }
    sb.stop().await;

    // 3. Worktree on the mirror vs a fresh clone, 10,000 files.
    let gh = support::fake_github::FakeGitHub::start(support::fake_github::Options {
        app_id: 1,
        public_key_pem: std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/keys/app.pub.pem"
        ))
        .unwrap(),
        git_root: tmp.path().join("gh"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(1, "bench");
    let contents: Vec<(String, String)> = (0..files)
        .map(|i| {
            (
                format!("pkg{}/mod{}/file{i}.py", i % 50, i % 7),
                format!("# file {i}\nVALUE = {i}\n\ndef f():\n    return VALUE * 2\n"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = contents
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    gh.add_repo(1, "bench/big", &refs);
    let token = SecretString::from(gh.mint_token(1));
    let ws = Workspace::new(&tmp.path().join("data"), &url::Url::parse(&gh.url).unwrap());
    let repo = RepoName::parse("bench/big").unwrap();
    let (ws2, repo2, token2, clone_url) = (
        ws.clone(),
        repo.clone(),
        token.clone(),
        format!("{}/bench/big.git", gh.url),
    );
    let (mirror, worktrees, clones) = tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        let git = ws2.sync_mirror(&repo2, &token2).unwrap();
        let mirror = t.elapsed();
        let (mut worktrees, mut clones) = (Vec::new(), Vec::new());
        for n in 0..runs {
            let t = Instant::now();
            ws2.fresh_worktree(&repo2, &git, &format!("feat/T-{n}"), ("main", 2048))
                .unwrap();
            worktrees.push(t.elapsed());
        }
        for n in 0..runs {
            let dir = tempfile::tempdir().unwrap();
            let t = Instant::now();
            let mut cb = git2::RemoteCallbacks::new();
            let tok = secrecy::ExposeSecret::expose_secret(&token2).to_owned();
            cb.credentials(move |_, _, _| git2::Cred::userpass_plaintext("x-access-token", &tok));
            let mut fo = git2::FetchOptions::new();
            fo.remote_callbacks(cb);
            git2::build::RepoBuilder::new()
                .fetch_options(fo)
                .clone(&clone_url, &dir.path().join(format!("c{n}")))
                .unwrap();
            clones.push(t.elapsed());
        }
        (mirror, worktrees, clones)
    })
    .await
    .unwrap();

    // 4. The disk guard: a command writing 4 MiB files without end, under a 64 MiB limit.
    const LIMIT_MB: u64 = 64;
    let fill = "python3 -c \"\nimport itertools\nfor i in itertools.count():\n    \
        open(f'fill-{i}.bin', 'wb').write(bytes(4 << 20))\n\"";
    let (mut written, mut killed_in) = (Vec::new(), Vec::new());
    for n in 0..runs {
        let dir = tmp.path().join(format!("fill{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = spec(&dir, 200 + n);
        s.disk_mb = LIMIT_MB;
        let sb = backend.start(&s).await.unwrap();
        let t = Instant::now();
        let out = sb.exec(fill, Duration::from_secs(120)).await.unwrap();
        killed_in.push(t.elapsed());
        assert!(out.killed.is_some(), "the guard did not stop it: {out:?}");
        sb.stop().await;
        let bytes: u64 = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
            .sum();
        written.push(bytes >> 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    let start = median(starts);
    let (native, inside) = (median(native), median(inside));
    let (wt_t, clone_t) = (median(worktrees), median(clones));
    println!(
        "sandbox: {} cores; Docker backend; median of {runs} runs",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    );
    println!();
    println!("| measure | value | target |");
    println!("|---|---|---|");
    println!("| container start | {} | ≤ 500 ms |", ms(start));
    println!(
        "| ~1 s test run: native / in container | {} / {} = {:.2}× | ≤ 1.2× |",
        ms(native),
        ms(inside),
        inside.as_secs_f64() / native.as_secs_f64()
    );
    println!(
        "| {files} files: worktree / clone over HTTP | {} / {} = {:.0}% | ≤ 10% |",
        ms(wt_t),
        ms(clone_t),
        100.0 * wt_t.as_secs_f64() / clone_t.as_secs_f64()
    );
    println!(
        "| {files} files: first mirror fetch (once per repository) | {} | — |",
        ms(mirror)
    );
    println!(
        "| disk guard, {LIMIT_MB} MiB limit: written when killed | {} MiB after {} | ≤ {} MiB (limit + the 256 MiB reserve) |",
        median(written),
        ms(median(killed_in)),
        LIMIT_MB + 256
    );
}
