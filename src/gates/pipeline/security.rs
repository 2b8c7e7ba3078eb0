//! The built-in security gate of the pipeline: the test lock, the secret scan and the banned
//! calls on the commits themselves, and the Python policy check in a fresh sandbox.

use std::time::{Duration, Instant};

use super::{GateError, GateResult, Inputs, Status, on_git};
use crate::config::repo::SecurityGate;
use crate::gates::security;
use crate::gates::steering::Steer;
use crate::ids::CommitSha;

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

/// The built-in security gate: test lock and secret scan (git2, in this process, on the
/// commits themselves) with the banned-calls check of Rust, JavaScript/TypeScript and Go
/// (tree-sitter, in this process), then the Python policy check (Python's own parser, in a
/// fresh sandbox over the change's files as git has them).
pub(super) async fn security_gate(
    inputs: &Inputs<'_>,
    steering: &[Steer],
) -> Result<GateResult, GateError> {
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
