//! The built-in security gate of the pipeline: the test lock, the secret scan and the banned
//! calls and imports, all on the commits themselves, in this process.

use std::time::Instant;

use super::{GateError, GateResult, Inputs, Status, on_git};
use crate::config::repo::SecurityGate;
use crate::gates::security;
use crate::gates::steering::Steer;
use crate::ids::CommitSha;

/// The built-in security gate: test lock and secret scan (git2, on the commits themselves)
/// with the banned-calls check of Python, Rust, JavaScript/TypeScript and Go (tree-sitter, on
/// the change's files as git has them), all in this process: nothing the change's own code
/// did in a worktree can hide a finding.
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
    let (tree, banned, (python, checked)) =
        on_git(inputs, "the security check", move |repo, base, head| {
            let tree = security::check_tree(repo, base, head, tests, &config)?;
            let banned = security::banned::check(repo, base, head, &config.policy)?;
            let python = security::policy::changed_python_files(repo, base, head)?;
            let policy = &config.policy;
            let checked = if policy.banned_calls.is_empty() && policy.banned_imports.is_empty() {
                None
            } else {
                let (calls, imports) = (&policy.banned_calls, &policy.banned_imports);
                Some(security::policy::check(
                    repo,
                    head,
                    &python.files,
                    calls,
                    imports,
                )?)
            };
            Ok((tree, banned, (python, checked)))
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
    match checked {
        None => notes.push(
            "policy: nothing banned in `policy.banned_calls` or `policy.banned_imports`".into(),
        ),
        Some(_) if python.files.is_empty() => notes.push("policy: no Python file changed".into()),
        Some(run) => {
            notes.push(format!(
                "policy: {} changed Python file(s) checked (as committed), {} finding(s)",
                run.files_checked,
                run.findings.len()
            ));
            annotations.extend(run.annotations());
        }
    }
    Ok(GateResult {
        gate: "security",
        status: if annotations.is_empty() {
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
