//! The baseline, the first step of a ticket: setup and the test command on the unchanged base,
//! before any model is asked. A base whose tests cannot run (setup fails, a command is missing,
//! a module cannot be imported, the project does not compile, a sandbox limit is hit) stops the
//! ticket at once, as HumanNeeded with the line that shows why and what to change, having spent
//! no tokens. Tests that already fail on the base are recorded in the flow, so the red proof and
//! the gates judge only what the ticket changes; so are the findings lint and typecheck already
//! report there.
//!
//! A baseline is a fact of the base commit and the config read from it: computed once, it is
//! kept (`<data>/facts/<owner>/<name>/baseline-<sha>-<config>.json`) and every later ticket on
//! that base takes it, with no worktree, sandbox or command of its own.

use std::time::Duration;

use super::ctx::{BASELINE, Ctx, KeptBase, drop_scratch, release_kept, scratch};
use super::state::Baseline;
use crate::config::repo::PATH as CONFIG_PATH;
use crate::env::SetupError;
use crate::gates::baseline::{Judgement, diagnose, judge};
use crate::gates::debt::{self, Known};
use crate::gates::expect::Wanted;
use crate::gates::report::code_block;
use crate::gates::test_results::{Observed, Outcome, TestRun};
use crate::hive::job::JobError;
use crate::sandbox::{CommandOutput, Sandbox, SandboxSpec};

/// How many baselines are kept per repository (the newest, by time written).
const KEPT: usize = 16;

/// Runs `test` on the base, or takes the baseline kept for it; `None` when the ticket was
/// handed to a person (the base is broken).
pub(super) async fn baseline(
    cx: &mut Ctx<'_, '_>,
    test: &str,
) -> Result<Option<Baseline>, JobError> {
    let base = super::ctx::base(cx).await?;
    let kept = kept_path(cx, &base, test);
    if let Some(b) = read_kept(&kept).filter(|b| b.sha == base) {
        let data = serde_json::json!({
            "counts": b.counts,
            "failing": b.failing.len(),
            "passing": b.passing.len(),
            "known_findings": b.known_findings.len(),
            "kept": true,
        });
        cx.run.event("baseline", data).await;
        return Ok(Some(b));
    }
    let b = run_baseline(cx, test, &base).await?;
    if let Some(b) = &b {
        keep(&kept, b);
    }
    Ok(b)
}

/// Where the baseline of `base` under this ticket's config and test command is kept.
fn kept_path(cx: &Ctx<'_, '_>, base: &crate::ids::CommitSha, test: &str) -> std::path::PathBuf {
    use sha2::{Digest as _, Sha256};
    let mut h = Sha256::new();
    h.update(format!("{:?}\n{test}", cx.env.config).as_bytes());
    let config = hex::encode(&h.finalize()[..8]);
    cx.run.hive.workspace.facts_path(
        &cx.run.ticket.repo,
        &format!("baseline-{base}-{config}.json"),
    )
}

fn read_kept(path: &std::path::Path) -> Option<Baseline> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Keeps `b` at `path` (written whole, then renamed), and only the newest [`KEPT`] beside it.
/// A failure only costs the next ticket a baseline of its own.
fn keep(path: &std::path::Path, b: &Baseline) {
    let written = (|| -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(path);
        std::fs::create_dir_all(dir)?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(b).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, path)?;
        let mut all: Vec<_> = std::fs::read_dir(dir)?
            .flatten()
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        all.sort();
        for (_, old) in all.iter().rev().skip(KEPT) {
            let _ = std::fs::remove_file(old);
        }
        Ok(())
    })();
    if let Err(e) = written {
        tracing::warn!(error = %e, "cannot keep the baseline for the next ticket");
    }
}

/// Runs `test` on `base` in a worktree of its own. When the tests ran, the worktree and its
/// sandbox are kept for this run's red proof ([`super::ctx::KeptBase`]).
async fn run_baseline(
    cx: &mut Ctx<'_, '_>,
    test: &str,
    base: &crate::ids::CommitSha,
) -> Result<Option<Baseline>, JobError> {
    release_kept(cx).await;
    let wt = scratch(cx, BASELINE, Some(base)).await?;
    let (result, known_findings, started) = match run(cx, &wt, test).await {
        Ok((output, known, started)) => (Ok(output), known, Some(started)),
        Err(e) => (Err(e), vec![], None),
    };
    // Read while the checkout is there: a JUnit report is a file in it.
    let report = cx.env.config.gates.test_report.clone();
    let seen = result
        .as_ref()
        .ok()
        .map(|o| TestRun::observe(o.for_results(), &wt.path, report.as_deref()));
    let outcome = conclude(cx, test, &wt, result, seen, known_findings).await;
    // Kept, or gone before the ticket says it stopped: what a person then sees is all there is.
    match (&outcome, started) {
        (Ok(Ok(_)), Some((sandbox, spec))) => {
            let base = wt.base.clone();
            cx.kept_base = Some(KeptBase {
                base,
                worktree: wt,
                spec,
                sandbox,
            });
        }
        (_, started) => {
            if let Some((sandbox, _)) = started {
                sandbox.stop().await;
            }
            drop_scratch(cx, BASELINE).await;
        }
    }
    match outcome? {
        Ok(b) => Ok(Some(b)),
        Err(why) => {
            cx.needs_human(&why).await?;
            Ok(None)
        }
    }
}

/// What the baseline's run says: the baseline, or why a person must step in (setup failed,
/// the tests could not run or did not say which ran).
async fn conclude(
    cx: &mut Ctx<'_, '_>,
    test: &str,
    wt: &crate::workspace::Worktree,
    result: Result<CommandOutput, SetupError>,
    seen: Option<Observed>,
    known_findings: Vec<Known>,
) -> Result<Result<Baseline, String>, JobError> {
    let base = wt.base.clone();
    let branch = cx.base_branch();
    let output = match result {
        Ok(output) => output,
        Err(SetupError::Failed { command, output }) => {
            let network = &cx.run.hive.environments.network;
            let fix = crate::env::hints::setup_hint(&output.output, network)
                .map(|hint| format!("{hint} Then `/hive retry`."))
                .unwrap_or_else(|| format!(
                    "Fix the setup (`setup:` in `{CONFIG_PATH}`; `vibeloop gates --explain` shows where the one in use comes from) \
                     or the dependency manifests, then `/hive retry`."
                ));
            let why = format!(
                "Setup fails on `{branch}` before any change, so no model was asked: `{}` (`{command}`, {}).\n\n{fix}\n\n{}",
                diagnose(&output.output),
                output.describe(),
                code_block(&output.tail(15))
            );
            return Ok(Err(why));
        }
        Err(e) => return Err(e.into()),
    };
    let submodules = empty_submodules(wt, &output.output);
    let why = match judge(&output, seen.and_then(|s| s.run)) {
        Judgement::Ran(run) => {
            let b = Baseline {
                sha: base,
                counts: Some(run.counts),
                passing: run
                    .cases
                    .iter()
                    .filter(|c| c.outcome == Outcome::Passed)
                    .map(|c| Wanted::test(&c.name, c.unit.as_deref()))
                    .collect(),
                failing: run.failing,
                known_findings,
            };
            // Tests failing on the base because the image lacks a program they call.
            let missing = if b.failing.is_empty() {
                vec![]
            } else {
                crate::gates::baseline::missing_programs(&output.output)
            };
            let data = serde_json::json!({
                "counts": b.counts,
                "failing": b.failing.len(),
                "passing": b.passing.len(),
                "missing_programs": missing,
                "known_findings": b.known_findings.len(),
            });
            cx.run.event("baseline", data).await;
            return Ok(Ok(b));
        }
        Judgement::Unnamed(said) => format!(
            "The test command ran on `{branch}` but did not say which tests it ran (`{test}` printed {said}), \
             so the bot could not tell the Breaker's tests passing from not running, and no model was asked.\n\n\
             Make it name each test and its outcome — pytest does (the bot adds `-rA`), as do `python -m unittest -v`, \
             `cargo test`, `go test -v`, `node --test` and `jest --verbose` — or have it write a JUnit XML report and \
             set `gates.test_report` in `{CONFIG_PATH}`, then `/hive retry`.\n\n{}",
            code_block(&output.tail(15))
        ),
        Judgement::Broken(line)
            if output.timed_out || output.oom_killed || output.killed.is_some() =>
        {
            format!(
                "The test command hit a sandbox limit on `{branch}` before any change, so no model was asked: {line} (`{test}`).\n\n\
                 Fix the tests, or raise the limit in `{CONFIG_PATH}` (`limits.timeout_seconds`, `limits.disk_mb`, `limits.memory_mb`, `limits.pids`) if they need more, then `/hive retry`.\n\n{}",
                code_block(&output.tail(15))
            )
        }
        Judgement::Broken(line) => broken(&branch, test, &line, &output, &submodules),
    };
    Ok(Err(why))
}

/// The baseline's sandbox, and the spec it was started for.
type Started = (Sandbox, SandboxSpec);

/// Sets up the environment for the base's worktree (see [`crate::hive::verify::sandbox_spec`])
/// and runs the test command there, with the lint and typecheck commands beside it for what
/// they already report (the repository's findings, set aside later: [`crate::gates::debt`]).
/// The sandbox is left running for the red proof when the test command ran.
async fn run(
    cx: &Ctx<'_, '_>,
    wt: &crate::workspace::Worktree,
    test: &str,
) -> Result<(CommandOutput, Vec<Known>, Started), SetupError> {
    let run = &*cx.run;
    let spec = crate::hive::verify::sandbox_spec(run, &cx.env, wt, BASELINE, false).await?;
    let sandbox = run.hive.sandbox.start(&spec).await?;
    // On the base, the project's own build failing is setup's failure: no change caused it.
    if let Some(failed) = sandbox.prepare_failed().cloned() {
        sandbox.stop().await;
        return Err(SetupError::Failed {
            command: failed.command,
            output: Box::new(failed.output),
        });
    }
    let (output, known) = run_in(cx, &sandbox, wt, test).await;
    match output {
        Ok(output) => Ok((output, known, (sandbox, spec))),
        Err(e) => {
            sandbox.stop().await;
            Err(e.into())
        }
    }
}

/// Runs `test`, and lint and typecheck beside it, in the baseline's `sandbox`: the test's
/// output, and the findings the others report.
async fn run_in(
    cx: &Ctx<'_, '_>,
    sandbox: &Sandbox,
    wt: &crate::workspace::Worktree,
    test: &str,
) -> (
    Result<CommandOutput, crate::sandbox::SandboxError>,
    Vec<Known>,
) {
    let timeout = Duration::from_secs(cx.env.config.limits.timeout_seconds);
    // Only the report this run writes counts, never one the base committed.
    if let Some(rel) = cx.env.config.gates.test_report.as_deref()
        && let Err(e) = TestRun::clear_report(&wt.path, rel)
    {
        return (Err(crate::sandbox::SandboxError::Io(e)), vec![]);
    }
    let keep = crate::gates::test_results::keeps;
    let found: Vec<(&'static str, &str)> = cx
        .env
        .config
        .gates
        .commands()
        .filter(|(gate, _)| matches!(*gate, "lint" | "typecheck"))
        .collect();
    // The findings lint and typecheck report beside the tests; each killed where the others
    // may have starved it runs again alone.
    let mut scripts = vec![(test, Some(keep as crate::sandbox::Keep))];
    scripts.extend(found.iter().map(|&(_, c)| (c, None)));
    let (output, others) = if found.is_empty() {
        (sandbox.exec_keeping(test, timeout, keep).await, vec![])
    } else {
        match sandbox.exec_beside(&scripts, timeout).await {
            Ok(outs) => {
                let starved = CommandOutput::starved(&outs, timeout);
                let mut ran = Vec::new();
                for (&(script, keep), (out, starved)) in
                    scripts.iter().zip(outs.into_iter().zip(starved))
                {
                    ran.push(match (starved, keep) {
                        (None, _) => Ok(out),
                        (Some(_), Some(keep)) => sandbox.exec_keeping(script, timeout, keep).await,
                        (Some(_), None) => sandbox.exec(script, timeout).await,
                    });
                }
                let test = ran.remove(0);
                (test, ran)
            }
            Err(e) => (Err(e), vec![]),
        }
    };
    let mut known = Vec::new();
    let roots = [sandbox.root(), format!("{}/", wt.path.display())];
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    for ((gate, _), out) in found.iter().zip(others) {
        match out {
            Ok(out) if !out.success() => {
                let findings = crate::gates::annotate::parse(gate, &out.output, &roots);
                let seen = debt::known(gate, &findings);
                if seen.is_empty() && !out.timed_out && !out.oom_killed {
                    known.push(debt::unparsed(gate, out.exit_code, &out.output, &roots));
                }
                known.extend(seen);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(gate, error = %e, "the base's findings could not be read"),
        }
    }
    (output, known)
}

/// Why a person must step in when the test command fails on the base before any change: the
/// submodules the output names (`submodules`), which the bot does not check out, or else the
/// setup or test command to fix.
fn broken(
    branch: &str,
    test: &str,
    line: &str,
    output: &CommandOutput,
    submodules: &[String],
) -> String {
    let fix = if submodules.is_empty() {
        format!(
            "Add a `setup:` to `{CONFIG_PATH}` that installs what the tests need, or fix `gates.test` \
             (`vibeloop gates --explain` shows what runs now), then `/hive retry`."
        )
    } else {
        let named: Vec<String> = submodules.iter().map(|p| format!("`{p}`")).collect();
        let are = if named.len() == 1 {
            "is a git submodule"
        } else {
            "are git submodules"
        };
        format!(
            "{} {are}, and the bot does not check submodules out: its sandboxes see an empty directory there. \
             Commit the files the tests read into the repository (or have the tests skip when they are absent), \
             then `/hive retry`.",
            named.join(", ")
        )
    };
    format!(
        "The test command fails on `{branch}` before any change, so no model was asked: `{line}` (`{test}`, {}).\n\n{fix}\n\n{}",
        output.describe(),
        code_block(&output.tail(15))
    )
}

/// The submodules of the base (`tests/toml-test`) that the tests' `output` names: the bot does
/// not check them out, which is then why the tests cannot run.
fn empty_submodules(wt: &crate::workspace::Worktree, output: &str) -> Vec<String> {
    let all = wt.submodules().unwrap_or_default();
    all.into_iter()
        .filter(|p| output.contains(&format!("{p}/")) || output.contains(&format!("{p}'")))
        .collect()
}
