//! `vibeloop eval mine | run | compare`: the wiring of `crate::eval`. `run` gives each task its
//! own clone at the base commit and its own `vibeloop run` process (the hive headless, approved,
//! with the task's problem statement as the goal; the hidden tests are in no file it sees), so
//! one task's crash or timeout never stops the others; then it grades the Builder's final tree
//! with the hidden tests in the testbed and appends the task's line to `results.jsonl`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::sync::{Mutex, Semaphore};

use crate::config::tools::{
    CompareArgs, EvalArgs, EvalCommand, EvalRunArgs, MineArgs, TestbedArgs,
};
use crate::eval::results::{self, DiffSize, Outcome, RoleSpend, TaskResult, TestVerdict};
use crate::eval::task::{self, Task};
use crate::eval::testbed::{TestRun, Testbed};
use crate::eval::{mine, report};
use crate::sandbox::Backend;

/// Runs `vibeloop eval …`; the process exit code.
pub async fn run(args: &EvalArgs) -> anyhow::Result<u8> {
    match &args.command {
        EvalCommand::Mine(a) => mine_tasks(a).await,
        EvalCommand::Run(a) => run_tasks(a).await,
        EvalCommand::Compare(a) => compare(a),
    }
}

async fn testbed(args: &TestbedArgs, scratch: &Path) -> anyhow::Result<Testbed> {
    let force = crate::config::parse_sandbox(&args.sandbox)?;
    let (backend, fallback) = Backend::detect(scratch, force).await?;
    if let Some(why) = fallback {
        eprintln!("note: tests run as local processes: no Docker engine answered ({why})");
    }
    let envs = match &args.env_dir {
        Some(d) => d.clone(),
        None => super::gates::default_env_dir()?,
    };
    Ok(Testbed::new(backend, &envs)?)
}

async fn mine_tasks(args: &MineArgs) -> anyhow::Result<u8> {
    let repo = args
        .repo
        .canonicalize()
        .with_context(|| format!("--repo {}", args.repo.display()))?;
    let git = git2::Repository::open(&repo)
        .with_context(|| format!("{} is not a git repository", repo.display()))?;
    let since = match &args.since {
        Some(r) => Some(
            git.revparse_single(r)
                .with_context(|| format!("--since {r}: no such commit or branch"))?
                .peel_to_commit()?
                .id(),
        ),
        None => None,
    };
    let name = match &args.name {
        Some(n) => n.clone(),
        None => default_name(&repo),
    };
    let (candidates, skipped) = mine::candidates(&git, since, args.limit)?;
    drop(git);
    eprintln!(
        "{} candidate(s) change tests and code together; {} other commit(s) skipped",
        candidates.len(),
        skipped.len()
    );
    let scratch = tempfile::tempdir()?;
    let bed = testbed(&args.testbed, scratch.path()).await?;
    let timeout = Duration::from_secs(args.timeout_minutes.max(1) * 60);
    let mut lines = String::new();
    let mut kept = 0;
    for c in &candidates {
        let summary = c.message.lines().next().unwrap_or_default();
        let short = &c.commit.to_string()[..12];
        match mine::verify(&bed, &repo, &name, c, timeout).await {
            Ok(t) => {
                kept += 1;
                eprintln!(
                    "kept     {short} {summary}: {} failing → passing, {} passing on both",
                    t.fail_to_pass.len(),
                    t.pass_to_pass.len()
                );
                lines.push_str(&task::to_line(&t));
                lines.push('\n');
            }
            Err(why) => eprintln!("rejected {short} {summary}: {why}"),
        }
    }
    match &args.out {
        Some(path) => std::fs::write(path, &lines)
            .with_context(|| format!("cannot write --out {}", path.display()))?,
        None => print!("{lines}"),
    }
    eprintln!(
        "{kept} task(s) verified of {} candidate(s)",
        candidates.len()
    );
    Ok(if kept > 0 { 0 } else { 1 })
}

async fn run_tasks(args: &EvalRunArgs) -> anyhow::Result<u8> {
    let tasks = task::load(&args.tasks)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot make --out {}", args.out.display()))?;
    let out = args.out.canonicalize()?;
    let earlier = results::read(&out)?;
    if !earlier.is_empty() && !args.resume {
        bail!(
            "{} already holds results of {} task(s): add --resume to go on with the others, or name a new --out",
            out.display(),
            earlier.len()
        );
    }
    let todo: Vec<Task> = tasks
        .iter()
        .filter(|t| !earlier.iter().any(|r| r.instance_id == t.instance_id))
        .cloned()
        .collect();
    println!(
        "{} task(s) in {}; {} to run{}",
        tasks.len(),
        args.tasks.display(),
        todo.len(),
        if earlier.is_empty() {
            String::new()
        } else {
            format!(" ({} done earlier)", earlier.len())
        }
    );
    if let Some(url) = &args.clone_url {
        if !url.contains("{repo}") {
            bail!("--clone-url {url}: it must hold {{repo}}, where each task's owner/name goes");
        }
        clone_missing(&args.repos_dir, url, &todo).await;
    }
    let scratch = tempfile::tempdir()?;
    let bed = Arc::new(testbed(&args.testbed, scratch.path()).await?);
    let jobs = Arc::new(Semaphore::new(args.jobs.max(1)));
    let done = Arc::new(Mutex::new(earlier.clone()));
    let total = tasks.len();
    let mut handles = Vec::new();
    for t in todo {
        let (bed, jobs, done, out, args) = (
            bed.clone(),
            jobs.clone(),
            done.clone(),
            out.clone(),
            args.clone(),
        );
        handles.push(tokio::spawn(async move {
            let _slot = jobs.acquire_owned().await;
            let started = Instant::now();
            let result = match run_one(&args, &bed, &t, &out).await {
                Ok(r) => r,
                Err(e) => TaskResult::error(
                    &t.instance_id,
                    format!("{e:#}"),
                    started.elapsed().as_secs_f64(),
                ),
            };
            let mut all = done.lock().await;
            if let Err(e) = results::append(&out, &result) {
                eprintln!("error: cannot write {}: {e}", results::FILE);
            }
            all.push(result.clone());
            let resolved = all.iter().filter(|r| r.resolved()).count();
            println!(
                "{} {}: {} · {resolved} resolved so far",
                progress(all.len(), total),
                result.instance_id,
                result.outcome.as_str()
            );
        }));
    }
    for h in handles {
        if let Err(e) = h.await {
            eprintln!("error: a task's runner panicked: {e}");
        }
    }
    let all = results::read(&out)?;
    let title = format!("vibeloop eval: {}", args.tasks.display());
    std::fs::write(out.join("report.html"), report::html(&title, &all))?;
    println!("{}", report::summary(&all));
    println!(
        "results: {}  report: {}",
        out.join(results::FILE).display(),
        out.join("report.html").display()
    );
    Ok(0)
}

/// Clones (bare) each repository of `tasks` that `repos_dir` lacks from `url`; a repository
/// that cannot be cloned is said here, and its tasks end as errors naming the missing clone.
async fn clone_missing(repos_dir: &Path, url: &str, tasks: &[Task]) {
    let mut repos: Vec<&Task> = tasks.iter().collect();
    repos.sort_by(|a, b| a.repo.cmp(&b.repo));
    repos.dedup_by(|a, b| a.repo == b.repo);
    for t in repos {
        let dest = repos_dir.join(t.repo_dir_name());
        if dest.exists() {
            continue;
        }
        let from = url.replace("{repo}", &t.repo);
        println!("cloning {} into {}", t.repo, dest.display());
        let cloned = tokio::task::spawn_blocking(move || {
            let partial = dest.with_extension("partial");
            let _ = std::fs::remove_dir_all(&partial);
            std::fs::create_dir_all(dest.parent().unwrap_or(Path::new(".")))
                .map_err(|e| e.to_string())?;
            git2::build::RepoBuilder::new()
                .bare(true)
                .clone(&from, &partial)
                .map_err(|e| e.message().to_owned())?;
            std::fs::rename(&partial, &dest).map_err(|e| e.to_string())
        })
        .await;
        let failed = match cloned {
            Ok(done) => done.err(),
            Err(e) => Some(e.to_string()),
        };
        if let Some(e) = failed {
            eprintln!("error: cannot clone {}: {e}", t.repo);
        }
    }
}

/// One task: its clone at the base commit, the hive in a process of its own, the grade.
async fn run_one(
    args: &EvalRunArgs,
    bed: &Testbed,
    t: &Task,
    out: &Path,
) -> anyhow::Result<TaskResult> {
    let started = Instant::now();
    let rel = format!("tasks/{}", t.instance_id);
    let dir = out.join(&rel);
    if dir.exists() {
        // A run cut off earlier: start it again from nothing.
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let (work, base) = checkout_base(args, t, &dir)?;
    let run = run_hive(args, t, &dir, &work).await?;
    let mut result = TaskResult::error(&t.instance_id, "", started.elapsed().as_secs_f64());
    result.timeline_path = Some(format!("{rel}/timeline.txt"));
    if !read_run(&run, &mut result) {
        return Ok(result);
    }
    let (Some(head), Some(bare)) = (run["head"].as_str(), run["bare"].as_str()) else {
        result.detail = "the run ended without a change".into();
        return Ok(result);
    };
    let head = git2::Oid::from_str(head)?;
    let bare = PathBuf::from(bare);
    result.diff = Some(write_diff(&bare, base, head, &dir.join("diff.patch"))?);
    result.diff_path = Some(format!("{rel}/diff.patch"));
    let timeout = Duration::from_secs(args.timeout_minutes.max(1) * 60);
    let grading = Instant::now();
    let graded = bed
        .run(&bare, head, Some(&t.test_patch), base, true, timeout)
        .await;
    result.grade_seconds = grading.elapsed().as_secs_f64();
    match graded {
        Ok(tests) => grade(t, &tests, &mut result),
        Err(e) => {
            result.outcome = Outcome::TestsFail;
            result.detail = format!("the hidden tests could not run: {e}");
        }
    }
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// A clone of the task's repository in `dir/repo`, checked out at its base commit on the
/// branch `eval-base`.
fn checkout_base(args: &EvalRunArgs, t: &Task, dir: &Path) -> anyhow::Result<(PathBuf, git2::Oid)> {
    let src = args.repos_dir.join(t.repo_dir_name());
    if !src.join(".git").exists() && !src.join("HEAD").exists() {
        bail!(
            "no clone of {} in --repos-dir {} (expected {}): clone it there, or give --clone-url",
            t.repo,
            args.repos_dir.display(),
            src.display()
        );
    }
    let work = dir.join("repo");
    let base = git2::Oid::from_str(&t.base_commit)?;
    let git = git2::Repository::clone(&src.to_string_lossy(), &work)
        .with_context(|| format!("cannot clone {}", src.display()))?;
    let commit = git
        .find_commit(base)
        .with_context(|| format!("base_commit {} is not in {}", t.base_commit, t.repo))?;
    git.branch("eval-base", &commit, true)?;
    git.set_head("refs/heads/eval-base")?;
    git.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))?;
    Ok((work, base))
}

/// `vibeloop run` on the task's goal in a process of its own, within the time limit; its
/// JSON report.
async fn run_hive(
    args: &EvalRunArgs,
    t: &Task,
    dir: &Path,
    work: &Path,
) -> anyhow::Result<serde_json::Value> {
    let goal = dir.join("goal.md");
    std::fs::write(&goal, t.goal())?;
    let report_path = dir.join("run.json");
    let timeline = std::fs::File::create(dir.join("timeline.txt"))?;
    let stderr = std::fs::File::create(dir.join("stderr.txt"))?;
    let exe = std::env::current_exe()?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("run")
        .args(["--approve", "--base", "eval-base", "--repo"])
        .arg(work)
        .arg("--goal-file")
        .arg(&goal)
        .arg("--data-dir")
        .arg(dir.join("run"))
        .arg("--json-report")
        .arg(&report_path)
        .args(["--timeout-minutes", &args.timeout_minutes.to_string()])
        .args(["--sandbox", &args.testbed.sandbox])
        .stdout(timeline)
        .stderr(stderr)
        .kill_on_drop(true);
    if let Some(f) = &args.models_file {
        cmd.arg("--models-file").arg(f);
    }
    if let Some(d) = &args.prompts_dir {
        cmd.arg("--prompts-dir").arg(d);
    }
    let limit = Duration::from_secs(args.timeout_minutes.max(1) * 60 + 120);
    let status = match tokio::time::timeout(limit, cmd.status()).await {
        Ok(s) => s?,
        Err(_) => bail!(
            "the run took longer than {} minutes and was stopped",
            limit.as_secs() / 60
        ),
    };
    let Ok(text) = std::fs::read_to_string(&report_path) else {
        let tail = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(5).collect();
        bail!(
            "the run ended ({status}) without a report: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    };
    Ok(serde_json::from_str(&text)?)
}

/// What the run's report says into `result`: its spend, and how it ended. `false` when it
/// ended without a change to grade (a person needed, questions, an error).
fn read_run(run: &serde_json::Value, result: &mut TaskResult) -> bool {
    result.attempts = run["attempts"].as_u64().unwrap_or(0) as u32;
    result.run_seconds = run["seconds"].as_f64().unwrap_or(0.0);
    result.model_seconds = run["model_seconds"].as_f64().unwrap_or(0.0);
    result.gate_seconds = run["gate_seconds"].as_f64().unwrap_or(0.0);
    if let Some(roles) = run["roles"].as_object() {
        for (role, s) in roles {
            let spend = RoleSpend {
                tokens: s["tokens"].as_u64().unwrap_or(0),
                usd: s["usd"].as_f64().unwrap_or(0.0),
                calls: s["calls"].as_u64().unwrap_or(0),
            };
            result.roles.insert(role.clone(), spend);
        }
    }
    let detail = run["detail"].as_str().unwrap_or_default().trim().to_owned();
    match run["ending"].as_str().unwrap_or_default() {
        "completed" | "waiting" => return true,
        "human_needed" => {
            result.outcome = Outcome::HumanNeeded;
            result.detail = first_line(&detail);
        }
        "blocked" => {
            result.outcome = Outcome::Blocked;
            let questions: Vec<&str> = run["questions"]
                .as_array()
                .map(|q| q.iter().filter_map(|q| q.as_str()).collect())
                .unwrap_or_default();
            result.detail = questions.first().map(|q| first_line(q)).unwrap_or(detail);
        }
        other => result.detail = format!("the run ended {other}: {}", first_line(&detail)),
    }
    false
}

/// The hidden tests' verdicts into `result`: resolved when every one passes.
fn grade(t: &Task, tests: &TestRun, result: &mut TaskResult) {
    let verdicts = |names: &[String]| -> Vec<TestVerdict> {
        names
            .iter()
            .map(|n| TestVerdict {
                name: n.clone(),
                passed: tests.passed(n),
            })
            .collect()
    };
    result.fail_to_pass = verdicts(&t.fail_to_pass);
    result.pass_to_pass = verdicts(&t.pass_to_pass);
    let failing: Vec<&str> = result
        .fail_to_pass
        .iter()
        .chain(&result.pass_to_pass)
        .filter(|v| !v.passed)
        .map(|v| v.name.as_str())
        .collect();
    if failing.is_empty() {
        result.outcome = Outcome::Resolved;
        result.detail = format!(
            "{} hidden test(s) pass",
            result.fail_to_pass.len() + result.pass_to_pass.len()
        );
    } else {
        result.outcome = Outcome::TestsFail;
        let shown: Vec<&str> = failing.iter().take(5).copied().collect();
        result.detail = format!(
            "{} hidden test(s) fail: {}",
            failing.len(),
            shown.join(", ")
        );
    }
}

/// `[######--------------] 6/20`: a bar 20 wide of `done` tasks out of `total`.
fn progress(done: usize, total: usize) -> String {
    let filled = (done * 20).checked_div(total).unwrap_or(20).min(20);
    format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        "-".repeat(20 - filled)
    )
}

/// The task set's name of the clone at `repo`: `owner/name` from a directory named as
/// `--repos-dir` wants it (`owner__name`), else `local/<directory>`.
fn default_name(repo: &Path) -> String {
    let dir = repo.file_name().and_then(|n| n.to_str()).unwrap_or("repo");
    match dir.split_once("__") {
        Some((owner, name)) if !owner.is_empty() && !name.is_empty() => format!("{owner}/{name}"),
        _ => format!("local/{dir}"),
    }
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    line.chars().take(300).collect()
}

/// The change from `base` to `head` in `bare`, written to `path`; its size.
fn write_diff(
    bare: &Path,
    base: git2::Oid,
    head: git2::Oid,
    path: &Path,
) -> anyhow::Result<DiffSize> {
    let git = git2::Repository::open(bare)?;
    let old = git.find_commit(base)?.tree()?;
    let new = git.find_commit(head)?.tree()?;
    let diff = git.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let stats = diff.stats()?;
    std::fs::write(path, mine::unified(&diff)?)?;
    Ok(DiffSize {
        files: stats.files_changed(),
        added: stats.insertions(),
        removed: stats.deletions(),
    })
}

fn compare(args: &CompareArgs) -> anyhow::Result<u8> {
    let read = |dir: &Path| -> anyhow::Result<Vec<TaskResult>> {
        let r = results::read(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        if r.is_empty() {
            bail!("{} holds no {}", dir.display(), results::FILE);
        }
        Ok(r)
    };
    let (a, b) = (read(&args.a)?, read(&args.b)?);
    let c = crate::eval::compare::compare(&a, &b)?;
    print!("{c}");
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_bar_fills_with_the_tasks_done() {
        assert_eq!(progress(0, 20), "[--------------------] 0/20");
        assert_eq!(progress(6, 20), "[######--------------] 6/20");
        assert_eq!(progress(3, 3), "[####################] 3/3");
        assert_eq!(progress(0, 0), "[####################] 0/0");
    }

    #[test]
    fn a_clone_named_as_repos_dir_wants_gives_its_owner_and_name() {
        assert_eq!(default_name(Path::new("/r/acme__widgets")), "acme/widgets");
        assert_eq!(default_name(Path::new("/r/calc")), "local/calc");
        assert_eq!(default_name(Path::new("/r/__calc")), "local/__calc");
    }
}
