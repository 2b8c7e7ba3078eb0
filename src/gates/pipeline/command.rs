//! The command gates of the pipeline: each gate's command run in the change's sandbox — test,
//! lint and typecheck side by side — and judged from what it printed.

use std::time::Duration;

use super::{GateError, GateResult, Inputs, Status, on_git};
use crate::gates::annotate;
use crate::gates::expect::{Expect, TestVerdict};
use crate::gates::test_results::TestRun;

/// The gates that run at once, beside the tests, in one sandbox: a linter and a type checker
/// read the change. The build waits for them: what it writes could change what the tests import.
pub(super) const BESIDE: [&str; 3] = ["test", "lint", "typecheck"];

/// Runs the command gates of `gates` (of [`BESIDE`]) at once and judges each as
/// [`command_gate`] does; results in the order of `gates`. Where running together could have
/// changed a verdict, it runs again alone and its result says so: every gate when a command
/// changed the locked tests (none can be told from another), else each gate killed where the
/// others shared its limits ([`crate::sandbox::CommandOutput::starved`]).
pub(super) async fn gates_beside(
    inputs: &Inputs<'_>,
    gates: &[&'static str],
    expect: &Expect,
) -> Result<Vec<GateResult>, GateError> {
    let commands: Vec<(&'static str, Option<String>)> = gates
        .iter()
        .map(|&g| (g, gate_command(inputs, g)))
        .collect();
    let to_run: Vec<(&'static str, &str)> = commands
        .iter()
        .filter_map(|(g, c)| Some((*g, c.as_deref()?)))
        .collect();
    if to_run.iter().any(|&(g, _)| g == "test") {
        clear_test_report(inputs)?;
    }
    let mut outputs = std::collections::HashMap::new();
    // Why a gate ran again on its own, for its result.
    let mut again = std::collections::HashMap::new();
    if to_run.len() > 1 {
        let scripts: Vec<(&str, Option<crate::sandbox::Keep>)> = to_run
            .iter()
            .map(|&(g, c)| {
                (
                    c,
                    (g == "test").then_some(crate::gates::test_results::keeps as _),
                )
            })
            .collect();
        let mut outs = inputs
            .sandbox
            .exec_beside(&scripts, timeout(inputs))
            .await?;
        let starved = crate::sandbox::CommandOutput::starved(&outs, timeout(inputs));
        let steered = outs
            .iter()
            .find(|o| crate::gates::aside::steers_tests(&o.put_back))
            .map(|o| o.put_back.join(", "));
        for (((gate, _), mut out), starved) in to_run.iter().zip(outs.drain(..)).zip(starved) {
            let why = match (&steered, starved) {
                // Nothing tells which of them did it: each runs again.
                (Some(files), _) => format!("one of them changed the locked tests ({files})"),
                (None, Some(why)) => format!("`{gate}` {why}"),
                (None, None) => {
                    // Only files a test run leaves were put back: the test gate's note.
                    if *gate != "test" {
                        out.put_back.clear();
                    }
                    outputs.insert(*gate, out);
                    continue;
                }
            };
            again.insert(*gate, why);
        }
    }
    let mut results = Vec::new();
    for (gate, command) in commands {
        let mut result = match (command, outputs.remove(gate)) {
            (Some(command), Some(output)) => judge_gate(inputs, gate, expect, command, output),
            _ => command_gate(inputs, gate, expect).await?,
        };
        if gate == "lint" {
            result = with_complexity(inputs, result).await?;
        }
        if let Some(why) = again.get(gate) {
            result.notes.push(format!(
                "The gates ran side by side and {why}, so this one ran again on its own: this is its own run."
            ));
        }
        results.push(result);
    }
    Ok(results)
}

fn timeout(inputs: &Inputs<'_>) -> Duration {
    Duration::from_secs(inputs.config.limits.timeout_seconds)
}

/// The command `gate` runs, if any.
fn gate_command(inputs: &Inputs<'_>, gate: &str) -> Option<String> {
    inputs
        .config
        .gates
        .commands()
        .find(|(g, _)| *g == gate)
        .map(|(_, c)| c.to_owned())
}

/// Runs `gate`'s command alone and judges it; skipped when it has none.
pub(super) async fn command_gate(
    inputs: &Inputs<'_>,
    gate: &'static str,
    expect: &Expect,
) -> Result<GateResult, GateError> {
    let Some(command) = gate_command(inputs, gate) else {
        let why = match inputs.config.gates.left_out.get(gate) {
            Some(why) => format!("Not run: {why}."),
            None => {
                format!("No `gates.{gate}` command: none in .github/hive.yml, none detected.")
            }
        };
        return Ok(GateResult::skipped(gate, &why));
    };
    let output = if gate == "test" {
        clear_test_report(inputs)?;
        let keep = crate::gates::test_results::keeps;
        inputs
            .sandbox
            .exec_keeping(&command, timeout(inputs), keep)
            .await?
    } else {
        inputs.sandbox.exec(&command, timeout(inputs)).await?
    };
    Ok(judge_gate(inputs, gate, expect, command, output))
}

/// Removes the JUnit report (`gates.test_report`) before a test run, so the gate reads only
/// what that run wrote: never a report the change committed, nor one an earlier run left.
fn clear_test_report(inputs: &Inputs<'_>) -> Result<(), GateError> {
    if let Some(rel) = inputs.config.gates.test_report.as_deref() {
        TestRun::clear_report(inputs.worktree, rel).map_err(crate::sandbox::SandboxError::Io)?;
    }
    Ok(())
}

/// The result of `gate` from what its `command` printed.
fn judge_gate(
    inputs: &Inputs<'_>,
    gate: &'static str,
    expect: &Expect,
    command: String,
    output: crate::sandbox::CommandOutput,
) -> GateResult {
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
    if let Some(said) = crate::gates::aside::locked_changed(gate, &output.put_back) {
        if said.starts_with(crate::gates::LOCK_REFUSED) {
            status = Status::Failed;
            misses.push(said.clone());
        }
        notes.push(said);
    }
    let annotations = annotate::parse(gate, &output.output, &roots);
    if let Some(note) =
        crate::gates::aside::set_aside(gate, status, (&output, &roots), &annotations, expect)
    {
        status = Status::Passed;
        notes.push(note);
    }
    let held = match (gate, status) {
        ("test", Status::Passed) => {
            let who = expect.steering_approved_by.as_deref();
            crate::gates::steering::hold(&expect.steering, who, &mut notes)
        }
        _ => None,
    };
    GateResult {
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
    }
}

/// How the test gate judged its run.
#[derive(Default)]
struct Judged {
    status: Status,
    counts: Option<crate::gates::test_results::TestCounts>,
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
        crate::gates::complexity::check(repo, base, head, limit)
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
