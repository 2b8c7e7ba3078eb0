//! The gate pipeline: test → lint → typecheck → build → security on one commit, in one
//! sandbox, then the acceptance criteria when the repository sets any. Every gate runs even when an earlier one failed, so the Builder gets all findings at
//! once. It returns results and tells a [`Reporter`] how the gates go (the hive posts them as
//! check runs); it knows nothing of GitHub.

use std::future::Future;
use std::time::{Duration, Instant};

pub use super::Inputs;
use super::expect::{Expect, TestVerdict};
use super::results::TestRun;
use super::steering::Steer;
use super::{GateError, GateResult, ORDER, Status, acceptance, parsers, security};
use crate::config::repo::SecurityGate;
use crate::ids::CommitSha;

/// Who hears how the gates go while they run. The hive posts each gate as a check run
/// `hive/<gate>` (queued, in progress, completed); `vibeloop gates` hears nothing ([`Silent`]).
/// The pipeline itself only runs commands and returns results.
pub trait Reporter {
    type Error;
    /// `gates` are about to run, in this order.
    fn queued(&mut self, gates: &[&'static str]) -> impl Future<Output = Result<(), Self::Error>>;
    /// `gate`'s turn has come.
    fn started(&mut self, gate: &'static str) -> impl Future<Output = Result<(), Self::Error>>;
    /// `result` is in; the reporter may note where it shows it (`check_run_url`).
    fn finished(
        &mut self,
        result: &mut GateResult,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    /// The sandbox failed under the gates (`why`): nothing queued or running will finish.
    fn abandoned(&mut self, why: &str) -> impl Future<Output = ()>;
}

/// The reporter that hears nothing.
pub struct Silent;

impl Reporter for Silent {
    type Error = std::convert::Infallible;
    async fn queued(&mut self, _: &[&'static str]) -> Result<(), Self::Error> {
        Ok(())
    }
    async fn started(&mut self, _: &'static str) -> Result<(), Self::Error> {
        Ok(())
    }
    async fn finished(&mut self, _: &mut GateResult) -> Result<(), Self::Error> {
        Ok(())
    }
    async fn abandoned(&mut self, _: &str) {}
}

/// Why a pipeline run stopped before every gate had a result.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E> {
    /// The gates could not run (the sandbox, git).
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The reporter failed (GitHub, for the hive's check runs).
    #[error("reporting the gates failed: {0}")]
    Report(E),
}

/// Runs the `gates` (all of [`ORDER`] when `None`) and returns their results in order, telling
/// `reporter` as they go.
///
/// The security gate's policy check reads the Python files before any gate command runs, so a
/// test or build step cannot rewrite them first; it is reported last, in its place.
pub async fn run<R: Reporter>(
    inputs: &Inputs<'_>,
    gates: Option<&[&str]>,
    reporter: &mut R,
) -> Result<Vec<GateResult>, RunError<R::Error>> {
    let mut selected: Vec<&'static str> = ORDER
        .iter()
        .copied()
        .filter(|g| gates.is_none_or(|s| s.contains(g)))
        .collect();
    if inputs.config.acceptance.is_on() && gates.is_none_or(|s| s.contains(&acceptance::GATE)) {
        selected.push(acceptance::GATE);
    }
    reporter.queued(&selected).await.map_err(RunError::Report)?;
    let steering = match steering_of(inputs).await {
        Ok(s) => s,
        Err(e) => return Err(abandon(reporter, e).await),
    };
    let expect = Expect {
        steering: steering.clone(),
        ..inputs.expect.clone()
    };
    let mut security = if selected.contains(&"security") {
        match security_gate(inputs, &steering).await {
            Ok(r) => Some(r),
            Err(e) => return Err(abandon(reporter, e).await),
        }
    } else {
        None
    };
    let mut results = Vec::new();
    for gate in selected {
        reporter.started(gate).await.map_err(RunError::Report)?;
        let ran = match gate {
            "security" => Ok(security.take().expect("computed above")),
            acceptance::GATE => acceptance::run(inputs, &results).await,
            "lint" => match command_gate(inputs, gate, &expect).await {
                Ok(r) => with_complexity(inputs, r).await,
                Err(e) => Err(e),
            },
            _ => command_gate(inputs, gate, &expect).await,
        };
        let mut result = match ran {
            Ok(r) => r,
            Err(e) => return Err(abandon(reporter, e).await),
        };
        result.notes.extend(inputs.notes.iter().cloned());
        reporter
            .finished(&mut result)
            .await
            .map_err(RunError::Report)?;
        results.push(result);
    }
    Ok(results)
}

/// The environment's setup failed for this commit's dependency files, so no gate could run: the
/// test gate fails with setup's output (the tests cannot run; whoever changed the manifests
/// reads why) and the others are skipped, each reported as [`run`] would.
pub async fn setup_failed<R: Reporter>(
    command: &str,
    mut output: crate::sandbox::CommandOutput,
    gates: Option<&[&str]>,
    reporter: &mut R,
) -> Result<Vec<GateResult>, R::Error> {
    let selected: Vec<&'static str> = ORDER
        .iter()
        .copied()
        .filter(|g| gates.is_none_or(|s| s.contains(g)))
        .collect();
    reporter.queued(&selected).await?;
    let why = format!(
        "Setup (`{command}`) failed for this commit's dependency files ({}), so no gate could run. \
         It worked for the base: look at what the change did to the manifests or lockfiles.",
        output.describe()
    );
    // Last, so that whoever reads the output's tail reads this too.
    output.output.push_str(&format!("\n[vibeloop] {why}\n"));
    let mut results = Vec::new();
    for gate in selected {
        reporter.started(gate).await?;
        let mut result = if gate == "test" {
            GateResult {
                gate,
                status: Status::Failed,
                command: Some(command.to_owned()),
                counts: None,
                failing: vec![],
                annotations: vec![],
                notes: vec![why.clone()],
                duration: output.duration,
                output: Some(output.clone()),
                check_run_url: None,
                verdicts: vec![],
                misses: vec![],
                held: None,
            }
        } else {
            GateResult::skipped(gate, "Not run: setup failed (see hive/test).")
        };
        reporter.finished(&mut result).await?;
        results.push(result);
    }
    Ok(results)
}

/// The sandbox failed under a gate (its engine went away, say): the reporter hears it, so that
/// nothing it shows stays "in progress". Returns `e`.
async fn abandon<R: Reporter>(reporter: &mut R, e: GateError) -> RunError<R::Error> {
    reporter.abandoned(&e.to_string()).await;
    RunError::Gate(e)
}

/// `check` over the repository and the change's `base` and `head`, on a blocking thread (git2
/// blocks); `what` names it should it panic.
async fn on_git<T: Send + 'static>(
    inputs: &Inputs<'_>,
    what: &'static str,
    check: impl FnOnce(&git2::Repository, git2::Oid, git2::Oid) -> Result<T, git2::Error>
    + Send
    + 'static,
) -> Result<T, GateError> {
    let git_dir = inputs.git_dir.to_owned();
    let (base, head) = (
        git2::Oid::from_str(inputs.base.as_str())?,
        git2::Oid::from_str(inputs.head.as_str())?,
    );
    let found = tokio::task::spawn_blocking(move || {
        let repo = git2::Repository::open(&git_dir)?;
        check(&repo, base, head)
    })
    .await
    .map_err(|e| git2::Error::from_str(&format!("{what} panicked: {e}")))??;
    Ok(found)
}

/// The files `base..head` changes that steer which tests run.
async fn steering_of(inputs: &Inputs<'_>) -> Result<Vec<Steer>, GateError> {
    on_git(inputs, "the steering check", super::steering::changed).await
}

async fn command_gate(
    inputs: &Inputs<'_>,
    gate: &'static str,
    expect: &Expect,
) -> Result<GateResult, GateError> {
    let command = inputs
        .config
        .gates
        .commands()
        .find(|(g, _)| *g == gate)
        .map(|(_, c)| c.to_owned());
    let Some(command) = command else {
        let why = match inputs.config.gates.left_out.get(gate) {
            Some(why) => format!("Not run: {why}."),
            None => {
                format!("No `gates.{gate}` command: none in .github/hive.yml, none detected.")
            }
        };
        return Ok(GateResult::skipped(gate, &why));
    };
    let timeout = Duration::from_secs(inputs.config.limits.timeout_seconds);
    let output = if gate == "test" {
        let keep = super::results::keeps;
        inputs.sandbox.exec_keeping(&command, timeout, keep).await?
    } else {
        inputs.sandbox.exec(&command, timeout).await?
    };
    let roots = [
        inputs.sandbox.root(),
        format!("{}/", inputs.worktree.display()),
    ];
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    let judged = if gate == "test" {
        judge_tests(inputs, expect, &output)
    } else {
        Judged {
            status: Status::of(&output),
            ..Judged::default()
        }
    };
    let Judged {
        mut status,
        counts,
        failing,
        mut notes,
        verdicts,
        mut misses,
    } = judged;
    if let Some(failed) = inputs.sandbox.prepare_failed().filter(|_| gate == "test") {
        notes.insert(0, failed.note());
    }
    if let Some(said) = super::aside::locked_changed(gate, &output.put_back) {
        if said.starts_with(super::LOCK_REFUSED) {
            status = Status::Failed;
            misses.push(said.clone());
        }
        notes.push(said);
    }
    let annotations = parsers::parse(gate, &output.output, &roots);
    if let Some(note) =
        super::aside::set_aside(gate, status, (&output, &roots), &annotations, expect)
    {
        status = Status::Passed;
        notes.push(note);
    }
    let held = match (gate, status) {
        ("test", Status::Passed) => {
            let who = expect.steering_approved_by.as_deref();
            super::steering::hold(&expect.steering, who, &mut notes)
        }
        _ => None,
    };
    Ok(GateResult {
        gate,
        status,
        counts,
        failing,
        annotations,
        notes,
        duration: output.duration,
        command: Some(command),
        output: Some(output),
        check_run_url: None,
        verdicts,
        misses,
        held,
    })
}

/// How the test gate judged its run.
#[derive(Default)]
struct Judged {
    status: Status,
    counts: Option<super::results::TestCounts>,
    failing: Vec<String>,
    notes: Vec<String>,
    verdicts: Vec<TestVerdict>,
    misses: Vec<String>,
}

/// The test gate's verdict: the command's exit status, excused where only the base's known
/// failures fail, and failed where a test the change is judged by (the Breaker's, or one that
/// passed on the base) is not seen passing by name.
fn judge_tests(
    inputs: &Inputs<'_>,
    expect: &Expect,
    output: &crate::sandbox::CommandOutput,
) -> Judged {
    let report = inputs.config.gates.test_report.as_deref();
    let seen = TestRun::observe(output.for_results(), inputs.worktree, report);
    let mut notes = seen.notes;
    let run = seen.run;
    let mut status = Status::of(output);
    if status == Status::Failed
        && output.exit_code.is_some()
        && let Some(r) = &run
        && r.only_known(inputs.known_failures)
    {
        status = Status::Passed;
        notes.push(format!(
            "{} test(s) fail here as they did on the base before any change, so they do not hold the change back: {}",
            r.failing.len(),
            r.failing.join(", ")
        ));
    }
    let mut failing = run.as_ref().map(|r| r.failing.clone()).unwrap_or_default();
    let mut misses = Vec::new();
    if expect.is_empty() {
        if status == Status::Passed && run.as_ref().is_none_or(|r| !r.names_its_tests()) {
            notes.push(
                "The test command named no test, so nothing here says which tests ran.".into(),
            );
        }
    } else if matches!(status, Status::Passed | Status::Failed) {
        let unmet = expect.check(run.as_ref(), &output.describe());
        if !unmet.is_empty() {
            status = Status::Failed;
            misses = expect.report(&unmet);
            failing.extend(unmet.iter().map(|u| u.test.clone()));
            failing.dedup();
        }
    }
    Judged {
        status,
        counts: run.as_ref().map(|r| r.counts),
        failing,
        notes,
        verdicts: expect.verdicts(run.as_ref(), &output.describe()),
        misses,
    }
}

/// What the Python policy check found.
struct PolicyChecked {
    annotations: Vec<crate::annotation::Annotation>,
    notes: Vec<String>,
    /// A check that did not finish: a failed gate, never a silent pass.
    incomplete: bool,
}

/// The Python policy check over `files` as `head` has them: written from the commit's blobs
/// into a directory of their own beside the worktree, and checked in a fresh sandbox of the
/// gates' image (no network, no environment), so nothing the change's own code did in the
/// worktree — setup, a test run deleting or rewriting a file — hides a finding.
async fn policy_check(inputs: &Inputs<'_>, files: &[String]) -> Result<PolicyChecked, GateError> {
    let policy = &inputs.config.policy;
    let beside = inputs.worktree.parent().unwrap_or(inputs.worktree);
    let dir = tempfile::Builder::new()
        .prefix(".policy-")
        .tempdir_in(beside)
        .map_err(crate::sandbox::SandboxError::Io)?;
    let (git_dir, head, out, wanted) = (
        inputs.git_dir.to_owned(),
        git2::Oid::from_str(inputs.head.as_str())?,
        dir.path().to_owned(),
        files.to_vec(),
    );
    tokio::task::spawn_blocking(move || {
        let repo = git2::Repository::open(&git_dir)?;
        security::policy::write_blobs(&repo, head, &wanted, &out)
    })
    .await
    .map_err(|e| git2::Error::from_str(&format!("policy files panicked: {e}")))??;
    let spec = crate::sandbox::SandboxSpec {
        role: format!("{}-policy", inputs.spec.role),
        worktree: dir.path().to_owned(),
        read_only: vec![],
        locked: vec![],
        network: false,
        cache: None,
        ca_bundle: None,
        env: vec![],
        prepare: None,
        ..inputs.spec.clone()
    };
    let sandbox = inputs.backend.start(&spec).await?;
    let mut checked = PolicyChecked {
        annotations: vec![],
        notes: vec![],
        incomplete: false,
    };
    let (mut n, mut found) = (0, 0);
    for cmd in
        security::policy::policy_commands(files, &policy.banned_calls, &policy.banned_imports)
    {
        let out = match sandbox.exec(&cmd, Duration::from_secs(300)).await {
            Ok(out) => out,
            Err(e) => {
                sandbox.stop().await;
                return Err(e.into());
            }
        };
        match security::policy::policy_result(&out) {
            Ok(run) => {
                n += run.files_checked;
                found += run.findings.len();
                checked.annotations.extend(run.annotations());
            }
            Err(e) => {
                checked.notes.push(format!("policy: {e}"));
                checked.incomplete = true;
            }
        }
    }
    sandbox.stop().await;
    checked.notes.push(format!(
        "policy: {n} changed Python file(s) checked (as committed, in a fresh sandbox), {found} finding(s)"
    ));
    Ok(checked)
}

/// The lint gate with the cyclomatic complexity of the functions the change touches, when
/// `policy.complexity_limit` (or the ticket's) sets a limit: each function above it is a
/// finding and fails the gate, with or without a lint command.
async fn with_complexity(
    inputs: &Inputs<'_>,
    mut result: GateResult,
) -> Result<GateResult, GateError> {
    let Some(limit) = inputs.config.policy.complexity_limit else {
        return Ok(result);
    };
    let found = on_git(inputs, "the complexity check", move |repo, base, head| {
        super::complexity::check(repo, base, head, limit)
    })
    .await?;
    if found.is_empty() {
        result.notes.push(format!(
            "Complexity: no function the change touches is above {limit}."
        ));
        return Ok(result);
    }
    result.notes.push(format!(
        "Complexity: {} function(s) the change touches are above the limit of {limit}.",
        found.len()
    ));
    result.status = Status::Failed;
    result.annotations.extend(found);
    Ok(result)
}

/// The built-in security gate: test lock and secret scan (git2, in this process, on the
/// commits themselves) with the banned-calls check of Rust, JavaScript/TypeScript and Go
/// (tree-sitter, in this process), then the Python policy check (Python's own parser, in a
/// fresh sandbox over the change's files as git has them).
async fn security_gate(inputs: &Inputs<'_>, steering: &[Steer]) -> Result<GateResult, GateError> {
    if inputs.config.gates.security == SecurityGate::Off {
        return Ok(GateResult::skipped(
            "security",
            "The security gate is off (`gates.security: off`).",
        ));
    }
    let started = Instant::now();
    let config = inputs.config.clone();
    let tests = inputs
        .tests
        .map(|sha: &CommitSha| git2::Oid::from_str(sha.as_str()))
        .transpose()?;
    let (tree, banned, python) = on_git(inputs, "the security check", move |repo, base, head| {
        let tree = security::check_tree(repo, base, head, tests, &config)?;
        let banned = security::banned::check(repo, base, head, &config.policy)?;
        let python = security::policy::changed_python_files(repo, base, head)?;
        Ok((tree, banned, python))
    })
    .await?;
    let mut annotations = tree.annotations();
    annotations.extend(banned.annotations());
    annotations.extend(python.unnamed.iter().cloned());
    let mut notes = vec![tree.summary()];
    if !steering.is_empty() {
        let files: Vec<String> = steering.iter().map(Steer::describe).collect();
        notes.push(format!(
            "test lock: the change edits files that steer which tests run and how: {} (the test gate checks the tests still run, by name, and holds its green for a person)",
            files.join(", ")
        ));
    }
    notes.extend(banned.summary());
    let mut incomplete = false;
    let policy = &inputs.config.policy;
    if policy.banned_calls.is_empty() && policy.banned_imports.is_empty() {
        notes.push(
            "policy: nothing banned in `policy.banned_calls` or `policy.banned_imports`".into(),
        );
    } else if python.files.is_empty() {
        notes.push("policy: no Python file changed".into());
    } else {
        match policy_check(inputs, &python.files).await {
            Ok(checked) => {
                annotations.extend(checked.annotations);
                notes.extend(checked.notes);
                incomplete |= checked.incomplete;
            }
            Err(e) => {
                notes.push(format!("policy: could not run ({e})"));
                incomplete = true;
            }
        }
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
        failing: vec![],
        annotations,
        notes,
        duration: started.elapsed(),
        check_run_url: None,
        verdicts: vec![],
        misses: vec![],
        held: None,
    })
}
