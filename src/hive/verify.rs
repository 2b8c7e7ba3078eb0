//! The verification stage: the gate pipeline on the Builder's pushed commit, in the sandbox of
//! the Builder's worktree, reported as check runs. The sandbox is removed when the stage ends.

use super::job::JobError;
use super::ticket_run::TicketRun;
use crate::config::repo::HiveConfig;
use crate::env::{Lookup, Resolved, SetupError};
use crate::gates::pipeline::{self, Inputs, RunError};
use crate::gates::{GateError, GateResult};
use crate::github::GitHubError;
use crate::ids::CommitSha;
use crate::sandbox::{SandboxError, SandboxSpec};
use crate::workspace::Worktree;

impl From<GateError> for JobError {
    fn from(e: GateError) -> Self {
        match e {
            GateError::Sandbox(s) => JobError::from(s),
            GateError::Git(g) => JobError::transient(format!("git: {g}")),
        }
    }
}

impl From<RunError<GitHubError>> for JobError {
    fn from(e: RunError<GitHubError>) -> Self {
        match e {
            RunError::Gate(g) => g.into(),
            RunError::Report(g) => g.into(),
        }
    }
}

impl From<SandboxError> for JobError {
    fn from(e: SandboxError) -> Self {
        match e {
            SandboxError::ImageMissing(_)
            | SandboxError::BadMount { .. }
            | SandboxError::MountRefused { .. } => JobError::permanent(e.to_string()),
            _ => JobError::transient(e.to_string()),
        }
    }
}

impl From<SetupError> for JobError {
    fn from(e: SetupError) -> Self {
        match e {
            SetupError::Failed { command, output } => JobError::permanent(format!(
                "setup (`{command}`) failed: {}\n\n{}",
                output.describe(),
                output.tail(20)
            )),
            SetupError::Sandbox(s) => s.into(),
            SetupError::Io(e) => JobError::transient(format!("the environment: {e}")),
        }
    }
}

/// The sandbox a role works in, for a worktree of this ticket, with the repository's
/// environment (set up now if this worktree's manifests need one not made yet); `lock_tests`
/// locks the test paths ([`crate::sandbox::lock`]: what a command does to them is put back).
pub(in crate::hive) async fn sandbox_spec(
    run: &TicketRun<'_>,
    env: &Resolved,
    worktree: &Worktree,
    role: &str,
    lock_tests: bool,
) -> Result<SandboxSpec, SetupError> {
    Ok(prepared(run, env, worktree, role, lock_tests).await?.0)
}

/// [`sandbox_spec`], and how the environment was set up when the worktree's dependency files
/// are not the base's (for the gates' summaries and the pull request).
async fn prepared(
    run: &TicketRun<'_>,
    env: &Resolved,
    worktree: &Worktree,
    role: &str,
    lock_tests: bool,
) -> Result<(SandboxSpec, Option<String>), SetupError> {
    let mut spec = bare_spec(run, &env.config, worktree, role, lock_tests);
    spec.env.extend(version_env(run, &worktree.base).await);
    let maker = run.hive.environments.maker(&run.hive.sandbox);
    let mut how = None;
    let ready = match maker.lookup(env, &spec).await? {
        Lookup::Nothing => None,
        Lookup::Kept(ready) => Some(ready),
        Lookup::Make(pending) if pending.is_base() && !is_clean_base(env, worktree, role) => {
            Some(from_clean_base(run, env, &spec, &maker, pending).await?)
        }
        Lookup::Make(pending) => Some(maker.make(env, &spec, pending, &worktree.path).await?),
    };
    if let Some(ready) = ready {
        if !ready.reused {
            let data = serde_json::json!({ "key": ready.key.as_str(), "seconds": ready.setup_seconds, "role": role, "how": ready.how });
            run.event("env_setup", data).await;
        }
        ready.apply(&mut spec);
        how = ready.how;
    }
    Ok((spec, how))
}

/// The baseline's worktree: a fresh checkout of the base commit the environment was read
/// from, where nothing ran yet. Setup with network may run over it.
fn is_clean_base(env: &Resolved, worktree: &Worktree, role: &str) -> bool {
    role == "baseline" && env.base_commit.as_ref() == Some(&worktree.base)
}

/// The base's environment, set up with network over a clean checkout of the base commit made
/// for it (`vibeloop/env-T-n`) — never over a branch's worktree, whose code (a `build.rs`, a
/// `setup.py`) would run with the network open and end up in what every ticket uses.
async fn from_clean_base(
    run: &TicketRun<'_>,
    env: &Resolved,
    spec: &SandboxSpec,
    maker: &crate::env::Maker<'_>,
    pending: crate::env::Pending,
) -> Result<crate::env::Ready, SetupError> {
    let Some(base) = env.base_commit.clone() else {
        return Err(SetupError::Io(std::io::Error::other(
            "the base commit of the environment is not known, so its setup has nowhere clean to run",
        )));
    };
    let (ws, repo) = (run.hive.workspace.clone(), run.ticket.repo.clone());
    let branch = format!("vibeloop/env-{}", run.ticket.id);
    let io = |e: JobError| SetupError::Io(std::io::Error::other(e.to_string()));
    let room = env.config.limits.disk_mb;
    let clean = super::job::blocking({
        let (ws, repo, branch) = (ws.clone(), repo.clone(), branch.clone());
        move || {
            let git = git2::Repository::open_bare(ws.mirror_path(&repo))?;
            ws.worktree_at(&repo, &git, &branch, (base.oid(), room))
        }
    })
    .await
    .map_err(io)?;
    let made = maker.make(env, spec, pending, &clean.path).await;
    if let Err(e) = super::job::blocking(move || ws.drop_scratch(&repo, &branch)).await {
        tracing::warn!(error = %e, "cannot remove the base's clean checkout");
    }
    made
}

/// The project's version at `commit` for the tools that take it from git tags, which cannot
/// read the bot's git from a sandbox: setuptools-scm and hatch-vcs, pbr, and
/// poetry-dynamic-versioning, each told by its own variable. Not part of the environment's
/// key: every commit has its own.
async fn version_env(run: &TicketRun<'_>, commit: &crate::ids::CommitSha) -> Vec<(String, String)> {
    let (ws, repo, oid) = (
        run.hive.workspace.clone(),
        run.ticket.repo.clone(),
        commit.oid(),
    );
    let version = super::job::blocking(move || {
        let git = git2::Repository::open_bare(ws.mirror_path(&repo))?;
        Ok(crate::workspace::version_at(&git, oid))
    })
    .await
    .unwrap_or_else(|_| "0.0.0".into());
    crate::env::version_env(&version)
}

/// The sandbox of `role` without the repository's environment.
pub(in crate::hive) fn bare_spec(
    run: &TicketRun<'_>,
    config: &HiveConfig,
    worktree: &Worktree,
    role: &str,
    lock_tests: bool,
) -> SandboxSpec {
    let tests = if lock_tests {
        config.policy.test_paths.clone()
    } else {
        vec![]
    };
    let (repo, ticket) = (run.ticket.repo.to_string(), run.ticket.id.to_string());
    SandboxSpec::from_config(config, &worktree.path, (&repo, &ticket, role), &tests)
}

/// What to verify.
pub(super) struct Verification<'a> {
    /// The worktree holding `head` checked out.
    pub worktree: &'a Worktree,
    /// Where the change starts (the merge base with the base branch).
    pub base: &'a CommitSha,
    pub head: &'a CommitSha,
    /// Only these gates; all when `None`.
    pub gates: Option<&'a [&'a str]>,
    /// Names this run's check runs (`<run_id>:<gate>`).
    pub run_id: String,
    /// The sandbox's role label.
    pub role: &'a str,
    /// The Breaker's commit, when its tests are part of the change (the test lock's reference).
    pub tests: Option<&'a CommitSha>,
    /// Tests that failed on the base before any change.
    pub known_failures: &'a [String],
    /// The tests the test gate must see passing, by name.
    pub expect: &'a crate::gates::expect::Expect,
}

/// Runs the gates in a fresh sandbox of the worktree, reports each as a check run, and records
/// the results on the ticket's timeline. The sandbox is removed when the gates end.
pub(super) async fn run_gates(
    run: &TicketRun<'_>,
    env: &Resolved,
    v: Verification<'_>,
) -> Result<Vec<GateResult>, JobError> {
    let config = &env.config;
    let (spec, how) = match prepared(run, env, v.worktree, v.role, true).await {
        Ok(prepared) => prepared,
        // The base's setup worked (the baseline), so this commit's dependency files broke it:
        // a failed gate for whoever changed them, not a stopped ticket.
        Err(SetupError::Failed { command, output }) => {
            let mut report = super::checks::CheckRuns::new(&run.client, v.head, v.run_id.clone());
            let results = pipeline::setup_failed(&command, *output, v.gates, &mut report).await?;
            record(run, &v.run_id, &results).await;
            return Ok(results);
        }
        Err(e) => return Err(e.into()),
    };
    let started = std::time::Instant::now();
    let sandbox = run.hive.sandbox.start(&spec).await?;
    run.event("stage_enter", serde_json::json!({ "stage": "gates", "run": v.run_id, "sandbox": sandbox.kind().as_str() })).await;
    let git_dir = run.hive.workspace.mirror_path(&run.ticket.repo);
    let inputs = Inputs {
        config,
        sandbox: &sandbox,
        worktree: &v.worktree.path,
        git_dir: &git_dir,
        base: v.base,
        head: v.head,
        tests: v.tests,
        notes: how
            .map(|h| format!("{}{h}.", crate::gates::ENVIRONMENT_NOTE))
            .into_iter()
            .chain(
                run.spent
                    .map(|s| format!("Budget spent so far: {}", s.describe())),
            )
            .collect(),
        known_failures: v.known_failures,
        expect: v.expect,
    };
    let mut report = super::checks::CheckRuns::new(&run.client, v.head, v.run_id.clone());
    let results = pipeline::run(&inputs, v.gates, &mut report).await;
    sandbox.stop().await;
    let results = results?;
    record(run, &v.run_id, &results).await;
    run.event(
        "stage_exit",
        serde_json::json!({ "stage": "gates", "run": v.run_id, "millis": started.elapsed().as_millis() as u64 }),
    )
    .await;
    Ok(results)
}

/// Each gate's result on the ticket's timeline and in the metrics.
async fn record(run: &TicketRun<'_>, run_id: &str, results: &[GateResult]) {
    for r in results {
        crate::metrics::gate_finished(r.gate, r.status.as_str(), r.duration);
        let data = serde_json::json!({ "gate": r.gate, "status": r.status, "result": r.describe(), "findings": r.annotations.len(), "run": run_id });
        run.event("gate", data).await;
    }
}
