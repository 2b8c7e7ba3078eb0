//! The gate pipeline: test → lint → typecheck → build → security on one commit, in one
//! sandbox. Every gate runs even when an earlier one failed, so the Builder gets all findings at
//! once. With a [`Report::Checks`], each gate is a check run `hive/<gate>` created queued,
//! moved in progress when its turn comes, and completed with a summary and annotations.

use std::path::Path;
use std::time::{Duration, Instant};

use super::report::{TestCounts, summary, title};
use super::{GateError, GateResult, ORDER, Status, parsers, security};
use crate::config::repo::{HiveConfig, SecurityGate};
use crate::github::RepoClient;
use crate::github::checks::{CheckOutput, Conclusion};
use crate::ids::CommitSha;
use crate::sandbox::Sandbox;

/// What the pipeline runs on.
pub struct Inputs<'a> {
    /// The repository's config, read from the base branch.
    pub config: &'a HiveConfig,
    /// The sandbox of the worktree holding `head` checked out.
    pub sandbox: &'a Sandbox,
    /// The worktree on the host (paths in tool output may start with it).
    pub worktree: &'a Path,
    /// A git repository holding `base`, `head` and `tests`.
    pub git_dir: &'a Path,
    pub base: &'a CommitSha,
    pub head: &'a CommitSha,
    /// The Breaker's commit, when there is one: its tests are what the test lock compares with.
    pub tests: Option<&'a CommitSha>,
    /// Lines added to every gate's summary (what the ticket spent so far, say).
    pub notes: Vec<String>,
}

/// Where results go besides the return value.
pub enum Report<'a> {
    /// Nowhere (`vibeloop gates`).
    Off,
    /// Check runs on `head`, with external ids `<run_id>:<gate>`.
    Checks {
        client: &'a RepoClient,
        run_id: String,
    },
}

/// Runs the `gates` (all of [`ORDER`] when `None`) and returns their results in order.
///
/// The security gate's policy check reads the Python files before any gate command runs, so a
/// test or build step cannot rewrite them first; it is reported last, in its place.
pub async fn run(
    inputs: &Inputs<'_>,
    gates: Option<&[&str]>,
    report: &Report<'_>,
) -> Result<Vec<GateResult>, GateError> {
    let selected: Vec<&'static str> = ORDER
        .iter()
        .copied()
        .filter(|g| gates.is_none_or(|s| s.contains(g)))
        .collect();
    let mut runs = Vec::new();
    if let Report::Checks { client, run_id } = report {
        for gate in &selected {
            let external_id = format!("{run_id}:{gate}");
            runs.push(Some(
                client
                    .ensure_check_run(&format!("hive/{gate}"), inputs.head, &external_id, "queued")
                    .await?,
            ));
        }
    } else {
        runs.resize(selected.len(), None);
    }
    let mut security = if selected.contains(&"security") {
        match security_gate(inputs).await {
            Ok(r) => Some(r),
            Err(e) => return Err(cancel(report, &runs, e).await),
        }
    } else {
        None
    };
    let mut results = Vec::new();
    for (i, gate) in selected.into_iter().enumerate() {
        let check = runs[i].clone();
        if let (Report::Checks { client, .. }, Some(check)) = (report, &check) {
            client
                .check_run_started(check.id, &format!("hive/{gate}: running"))
                .await?;
        }
        let mut result = match gate {
            "security" => security.take().expect("computed above"),
            _ => match command_gate(inputs, gate).await {
                Ok(r) => r,
                Err(e) => return Err(cancel(report, &runs[i..], e).await),
            },
        };
        result.notes.extend(inputs.notes.iter().cloned());
        if let (Report::Checks { client, .. }, Some(check)) = (report, &check) {
            result.check_run_url = check.html_url.clone();
            let output = CheckOutput {
                title: title(&result),
                summary: summary(&result),
            };
            client
                .complete_check_run(check.id, result.conclusion(), &output, &result.annotations)
                .await?;
        }
        results.push(result);
    }
    Ok(results)
}

/// The sandbox failed under a gate (its engine went away, say): the gate's check run and those
/// still queued are completed as cancelled, saying why, so none stays "in progress" on GitHub.
/// The job is retried and the gates run again. Returns `e`.
async fn cancel(
    report: &Report<'_>,
    runs: &[Option<crate::github::checks::CheckRun>],
    e: GateError,
) -> GateError {
    let Report::Checks { client, .. } = report else {
        return e;
    };
    let output = CheckOutput {
        title: "Not run: the sandbox failed".into(),
        summary: format!(
            "The sandbox could not run this gate ({e}). Vibeloop retries on its own; the gates run again."
        ),
    };
    for check in runs.iter().flatten() {
        if let Err(err) = client
            .complete_check_run(check.id, Conclusion::Cancelled, &output, &[])
            .await
        {
            tracing::warn!(check_run = check.id, error = %err, "cannot mark the check run cancelled");
        }
    }
    e
}

async fn command_gate(inputs: &Inputs<'_>, gate: &'static str) -> Result<GateResult, GateError> {
    let command = inputs
        .config
        .gates
        .commands()
        .find(|(g, _)| *g == gate)
        .map(|(_, c)| c.to_owned());
    let Some(command) = command else {
        return Ok(GateResult::skipped(
            gate,
            &format!("No `gates.{gate}` command in .github/hive.yml."),
        ));
    };
    let timeout = Duration::from_secs(inputs.config.limits.timeout_seconds);
    let output = inputs.sandbox.exec(&command, timeout).await?;
    let roots = [
        inputs.sandbox.root(),
        format!("{}/", inputs.worktree.display()),
    ];
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    Ok(GateResult {
        gate,
        status: Status::of(&output),
        counts: TestCounts::parse(&output.output),
        annotations: parsers::parse(gate, &output.output, &roots),
        notes: vec![],
        duration: output.duration,
        command: Some(command),
        output: Some(output),
        check_run_url: None,
    })
}

/// The built-in security gate: test lock and secret scan (git2, in this process, on the
/// commits themselves), then the Python policy check (in the sandbox, with Python's own parser).
async fn security_gate(inputs: &Inputs<'_>) -> Result<GateResult, GateError> {
    if inputs.config.gates.security == SecurityGate::Off {
        return Ok(GateResult::skipped(
            "security",
            "The security gate is off (`gates.security: off`).",
        ));
    }
    let started = Instant::now();
    let (git_dir, config) = (inputs.git_dir.to_owned(), inputs.config.clone());
    let oid = |sha: &CommitSha| git2::Oid::from_str(sha.as_str());
    let (base, head, tests) = (
        oid(inputs.base)?,
        oid(inputs.head)?,
        inputs.tests.map(oid).transpose()?,
    );
    let (tree, python) = tokio::task::spawn_blocking(move || {
        let repo = git2::Repository::open(&git_dir)?;
        let tree = security::check_tree(&repo, base, head, tests, &config)?;
        let python = security::policy::changed_python_files(&repo, base, head)?;
        Ok::<_, git2::Error>((tree, python))
    })
    .await
    .map_err(|e| git2::Error::from_str(&format!("security check panicked: {e}")))??;
    let mut annotations = tree.annotations();
    annotations.extend(python.unnamed.iter().cloned());
    let mut notes = vec![tree.summary()];
    let mut incomplete = false;
    let policy = &inputs.config.policy;
    if policy.banned_calls.is_empty() && policy.banned_imports.is_empty() {
        notes.push(
            "policy: nothing banned in `policy.banned_calls` or `policy.banned_imports`".into(),
        );
    } else if python.files.is_empty() {
        notes.push("policy: no Python file changed".into());
    } else {
        let (mut checked, mut found) = (0, 0);
        for cmd in security::policy::policy_commands(
            &python.files,
            &policy.banned_calls,
            &policy.banned_imports,
        ) {
            let out = inputs.sandbox.exec(&cmd, Duration::from_secs(300)).await?;
            match security::policy::policy_result(&out) {
                Ok(run) => {
                    checked += run.files_checked;
                    found += run.findings.len();
                    annotations.extend(run.annotations());
                }
                Err(e) => {
                    // A check that did not finish is a failed gate, never a silent pass.
                    notes.push(format!("policy: {e}"));
                    incomplete = true;
                }
            }
        }
        notes.push(format!(
            "policy: {checked} changed Python file(s) checked, {found} finding(s)"
        ));
    }
    Ok(GateResult {
        gate: "security",
        status: if annotations.is_empty() && !incomplete {
            Status::Passed
        } else {
            Status::Failed
        },
        command: None,
        output: None,
        counts: None,
        annotations,
        notes,
        duration: started.elapsed(),
        check_run_url: None,
    })
}
