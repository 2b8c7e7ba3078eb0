//! `vibeloop eval run` benchmark: the harness's own cost per task.
//!
//! A Python repository with one bug and its hidden test; `--tasks` tasks (20 by default) of it,
//! run with `--jobs` (4) against the scripted model server (the harness of `tests/`), gates
//! and grading in real containers. Each task's wall time in `results.jsonl` is split into the
//! model's time, the hive's gates, the grading run of the hidden tests and the rest: the
//! harness's clone, process start, report and diff, and the hive's orchestration. The eval
//! process's RSS is read every 100 ms and reported per quarter of the run (flat = no growth
//! with tasks done).
//!
//! `cargo bench --bench eval [-- --tasks 20 --jobs 4]` (see bench/README.md)

#[path = "args.rs"]
mod args;
#[path = "../tests/support/mod.rs"]
mod support;

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use args::arg;
use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, Step};

const MODEL: &str = "fake-model";
const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
const BUGGY: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Me", "-c", "user.email=me@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// The repository and `n` tasks of it: `(repos dir, tasks file)`.
fn task_set(root: &Path, n: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let repos = root.join("repos");
    let repo = repos.join("bench__calc");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    write(
        &repo,
        &[
            ("requirements.txt", ""),
            ("calc.py", BUGGY),
            (
                "tests/test_zero.py",
                "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
            ),
        ],
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "calc"]);
    let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    write(
        &repo,
        &[(
            "tests/test_add.py",
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        )],
    );
    git(&repo, &["add", "-A"]);
    let test_patch = git(&repo, &["diff", "--cached"]);
    git(&repo, &["reset", "-q", "--hard"]);
    let lines: String = (1..=n)
        .map(|i| {
            let task = json!({
                "instance_id": format!("bench__calc-{i}"),
                "repo": "bench/calc",
                "base_commit": base,
                "problem_statement": "Fix add()\n\nadd(2, 3) returns -1: it subtracts.",
                "test_patch": test_patch,
                "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
                "PASS_TO_PASS": ["tests/test_zero.py::test_zero"],
            });
            format!("{task}\n")
        })
        .collect();
    let tasks = root.join("tasks.jsonl");
    std::fs::write(&tasks, lines).unwrap();
    (repos, tasks)
}

fn script() -> Script {
    let writes = |path: &str, content: &str, then: &str| {
        vec![
            Step::tool("write_file", json!({ "path": path, "content": content })),
            Step::say(then),
        ]
    };
    let plan = json!({
        "ticket": { "type": "bugfix", "goal": "add(a, b) returns the sum a + b", "context_refs": ["calc.py"] },
        "plan": {
            "title": "Make add() add",
            "description": "add() subtracts its arguments; it must return their sum.",
            "steps": [{ "input": "calc.py", "output": "add returns a + b", "validation_criteria": "the tests pass" }],
            "dependencies": [],
        },
        "open_questions": [],
    });
    let approve = json!({ "verdict": "approve", "summary": "Correct.", "comments": [] });
    Script::from([
        ("architect".to_owned(), vec![Step::say(&plan.to_string())]),
        (
            "breaker".to_owned(),
            writes(
                "tests/test_add_hive.py",
                "from calc import add\n\n\ndef test_add_hive():\n    assert add(4, 4) == 8\n",
                "A failing test.",
            ),
        ),
        (
            "builder".to_owned(),
            writes("calc.py", FIXED, "add() adds."),
        ),
        ("critic".to_owned(), vec![Step::say(&approve.to_string())]),
    ])
}

/// `VmRSS` of a process in MiB.
fn rss(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = arg("--tasks", 20);
    let jobs: usize = arg("--jobs", 4);
    let root = tempfile::tempdir().unwrap();
    let (repos, tasks) = task_set(root.path(), n);
    let envs = root.path().join("envs");
    let out = root.path().join("out");
    let llm = FakeLlm::start(script()).await;
    llm.set_models(&[MODEL]);

    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .args(["eval", "run"])
        .arg(&tasks)
        .arg("--out")
        .arg(&out)
        .args(["--jobs", &jobs.to_string(), "--sandbox", "docker"])
        .arg("--repos-dir")
        .arg(&repos)
        .arg("--env-dir")
        .arg(&envs)
        .env("VIBELOOP_SANDBOX_CA_BUNDLE", CA_BUNDLE)
        .env("VIBELOOP_LLM_MODEL", MODEL)
        .env("VIBELOOP_LLM_BASE_URL", &llm.url)
        .stdout(Stdio::piped())
        .spawn()
        .expect("vibeloop runs");
    let pid = child.id();
    // (tasks done, RSS MiB) read every 100 ms.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sampler = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut samples = Vec::new();
            loop {
                let r = rss(pid);
                if r == 0.0 {
                    return samples;
                }
                samples.push((done.load(std::sync::atomic::Ordering::Relaxed), r));
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
    };
    let stdout = child.stdout.take().unwrap();
    let reader = {
        let done = done.clone();
        tokio::task::spawn_blocking(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if line.starts_with('[') {
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                eprintln!("  {line}");
            }
        })
    };
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap();
    let wall = started.elapsed().as_secs_f64();
    reader.await.unwrap();
    let samples = sampler.await.unwrap();
    assert!(status.unwrap().success(), "vibeloop eval run failed");

    let results: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    let col = |k: &str| results.iter().map(|r| f(r, k)).collect::<Vec<_>>();
    // The harness's own time: the task's wall time but the hive's run and the grading.
    let harness: Vec<f64> = results
        .iter()
        .map(|r| (f(r, "seconds") - f(r, "run_seconds") - f(r, "grade_seconds")).max(0.0))
        .collect();
    // The hive's own, inside its run: neither model nor gates.
    let hive: Vec<f64> = results
        .iter()
        .map(|r| (f(r, "run_seconds") - f(r, "model_seconds") - f(r, "gate_seconds")).max(0.0))
        .collect();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for r in &results {
        let key = format!(
            "{}: {}",
            r["outcome"].as_str().unwrap_or("?"),
            r["detail"].as_str().unwrap_or("")
        );
        *outcomes.entry(key).or_default() += 1;
    }
    let resolved = results
        .iter()
        .filter(|r| r["outcome"] == "resolved")
        .count();

    println!("\n## eval run: {n} tasks, --jobs {jobs}\n");
    println!(
        "{resolved} of {} resolved; wall {wall:.1} s ({:.1} tasks/min)\n",
        results.len(),
        results.len() as f64 / wall * 60.0
    );
    println!("| per task (s) | median | p90 | max |");
    println!("|---|---|---|---|");
    for (name, v) in [
        ("wall", col("seconds")),
        ("the hive's run (`vibeloop run`)", col("run_seconds")),
        ("· model (scripted)", col("model_seconds")),
        ("· gates", col("gate_seconds")),
        ("· the hive's own (the rest of its run)", hive),
        ("grading (hidden tests)", col("grade_seconds")),
        (
            "**harness overhead** (clone, start, diff, results)",
            harness,
        ),
    ] {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} |",
            quantile(&v, 0.5),
            quantile(&v, 0.9),
            quantile(&v, 1.0)
        );
    }
    println!("\n| outcome | tasks |\n|---|---|");
    for (k, n) in &outcomes {
        println!("| {k} | {n} |");
    }
    println!("\n| tasks done | eval process RSS (MiB, peak in that quarter) |");
    println!("|---|---|");
    for q in 0..4 {
        let (lo, hi) = (n * q / 4, n * (q + 1) / 4);
        let peak = samples
            .iter()
            .filter(|(d, _)| *d >= lo && (*d < hi || (q == 3 && *d <= hi)))
            .map(|(_, r)| *r)
            .fold(0.0, f64::max);
        println!("| {lo}–{hi} | {peak:.1} |");
    }
}
