//! Red proof: the Breaker's tests, on the base commit, must fail as tests (check run
//! `hive/red-proof`); if not, the Breaker tries again. Tests people changed are proved red
//! again before they meet the code (`retake_red_proof`). The Encounter is `encounter.rs`.

use super::ctx::enter_node;
use super::ctx::{BASELINE, drop_scratch, git, release_kept, scratch};
use super::ctx::{Ctx, Step};
use super::state::Node;
use crate::gates::baseline::Missing;
use crate::gates::redproof::{self, Verdict};
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::sandbox::{CommandOutput, Sandbox, SandboxSpec, disk};
use crate::ticket::Finding;
use std::time::Duration;

/// Red proof: the new tests against the base.
pub(super) async fn red_proof(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let base = super::ctx::base(cx).await?;
    let breaker = cx
        .flow
        .tests
        .breaker
        .clone()
        .ok_or_else(|| JobError::permanent("red proof without the Breaker's tests"))?;
    let Some(test_command) = cx.env.config.gates.test.clone() else {
        return cx.needs_human(super::plan::NO_TEST_COMMAND).await;
    };
    let (verdict, output, missing) = prove(cx, &base, &breaker, &test_command).await?;
    let sha = breaker.sha.clone();
    let external_id = format!(
        "vibeloop:{}:red-proof:{}",
        cx.run.ticket.id, breaker.attempt
    );
    crate::hive::checks::red_proof(&cx.run.client, &sha, &external_id, &verdict, &output).await?;
    cx.flow.tests.red_proof = Some(verdict.clone());
    let outputs = serde_json::to_value(&verdict).unwrap_or_default();
    if let Some(m) = missing {
        let why = format!("the tests need `{}`, which the environment lacks", m.name);
        cx.checkpoint_failed(Node::RedProof, serde_json::json!({}), outputs, &why)
            .await?;
        return cx.needs_human(&missing_report(&m)).await;
    }
    if verdict.holds() {
        return proof_holds(cx, &base, &breaker, &output, outputs).await;
    }
    send_the_breaker_back(cx, &verdict, &output, outputs).await
}

/// Runs the Breaker's tests on the base: in the baseline's worktree and sandbox when this run
/// kept them, on the same base and with half their disk's room left, else in a scratch
/// worktree. The verdict, the output, and a dependency the tests need that the environment
/// lacks (told apart while the checkout is there to say what is the project's own).
async fn prove(
    cx: &mut Ctx<'_, '_>,
    base: &CommitSha,
    breaker: &super::state::Work,
    test_command: &str,
) -> Result<(Verdict, CommandOutput, Option<Missing>), JobError> {
    // The base's own tests wrote to the disk first: a second run needs room like the first.
    let room = cx.env.config.limits.disk_mb;
    let kept = match cx.kept_base.take() {
        Some(k) if k.base == *base && disk::has_half_room(&k.worktree.path, room) => Some(k),
        other => {
            cx.kept_base = other;
            release_kept(cx).await;
            None
        }
    };
    let (wt, name, started) = match kept {
        Some(k) => (k.worktree, BASELINE, Some((k.sandbox, k.spec))),
        None => (scratch(cx, "redproof", Some(base)).await?, "redproof", None),
    };
    let (b, t) = (base.oid(), breaker.sha.oid());
    let test_set = cx.env.config.test_paths();
    let wt2 = wt.clone();
    let files = git(cx, move |ws, g| {
        let changed: Vec<String> = ws
            .changed_paths(g, b, t)?
            .into_iter()
            .filter(|p| test_set.contains(p))
            .collect();
        ws.copy_paths(g, t, &changed, &wt2)?;
        Ok(changed)
    })
    .await;
    let result = match files {
        Ok(files) => run_on_base(cx, &wt, started, test_command, &files).await,
        Err(e) => {
            if let Some((sandbox, _)) = started {
                sandbox.stop().await;
            }
            Err(e)
        }
    };
    drop_scratch(cx, name).await;
    result
}

/// The red proof's run in `wt`, in the baseline's sandbox when it is `started` and a fresh
/// one for the proof would be the same container, else in a fresh one.
async fn run_on_base(
    cx: &mut Ctx<'_, '_>,
    wt: &crate::workspace::Worktree,
    started: Option<(Sandbox, SandboxSpec)>,
    test_command: &str,
    files: &[String],
) -> Result<(Verdict, CommandOutput, Option<Missing>), JobError> {
    let spec = match super::ctx::sandbox_spec(cx, wt, "redproof", true).await {
        Ok(spec) => spec,
        Err(e) => {
            // A container is removed only when stopped: none is left behind.
            if let Some((sandbox, _)) = started {
                sandbox.stop().await;
            }
            return Err(e);
        }
    };
    let started_at = std::time::Instant::now();
    cx.run
        .event("stage_enter", serde_json::json!({ "stage": "red_proof" }))
        .await;
    let backend = &cx.run.hive.sandbox;
    let reused = match started {
        Some((sandbox, was)) => backend.reuse(sandbox, &was, &spec).await?,
        None => None,
    };
    let in_baseline = reused.is_some();
    let sandbox = match reused {
        Some(sandbox) => sandbox,
        None => backend.start(&spec).await?,
    };
    let plan = serde_json::to_string(&cx.flow.plan.blueprint).unwrap_or_default();
    let known = cx.flow.known_failures();
    let report = cx.env.config.gates.test_report.clone();
    let proving = redproof::Proving {
        known: &known,
        files,
        plan: &plan,
        root: &wt.path,
        report: report.as_deref(),
    };
    let timeout = Duration::from_secs(cx.env.config.limits.timeout_seconds);
    let result = redproof::run(&sandbox, test_command, timeout, &proving).await;
    sandbox.stop().await;
    let millis = started_at.elapsed().as_millis() as u64;
    let data =
        serde_json::json!({ "stage": "red_proof", "millis": millis, "in_baseline": in_baseline });
    cx.run.event("stage_exit", data).await;
    let (verdict, output) = result?;
    // A dependency the tests need and the environment lacks is no fault of the tests' idea.
    // Also when the verdict is Red: Node's runner counts a test file that cannot load its
    // imports as a failed test. A module of the project's own not written yet is a fair Red.
    let missing = (verdict != Verdict::Green)
        .then(|| crate::gates::baseline::missing_dependency(&output.output))
        .flatten()
        .filter(|m| !crate::gates::baseline::is_own(&wt.path, &m.name));
    Ok((verdict, output, missing))
}

/// The proof holds: the tests go to the Reflector, or on to the Encounter.
async fn proof_holds(
    cx: &mut Ctx<'_, '_>,
    base: &CommitSha,
    breaker: &super::state::Work,
    output: &CommandOutput,
    verdict: serde_json::Value,
) -> Result<Step, JobError> {
    let inputs = serde_json::json!({ "tests": breaker.sha });
    if super::reflect::tests_go_back(cx, base).await? {
        cx.flow.next = Node::Code;
        let n = cx.flow.tests.breaker_findings.len();
        let out = serde_json::json!({ "reflector": n });
        let why = format!("the Reflector sends the tests back ({n} finding(s))");
        cx.checkpoint_failed(Node::RedProof, inputs, out, &why)
            .await?;
        return Ok(Step::Next);
    }
    super::memory::remember_tests(cx, &breaker.files, output.for_results()).await?;
    cx.flow.next = Node::Encounter;
    cx.checkpoint(Node::RedProof, inputs, verdict).await?;
    Ok(Step::Next)
}

/// The tests prove nothing: the Breaker tries again, or a person is asked once its attempts
/// are spent.
async fn send_the_breaker_back(
    cx: &mut Ctx<'_, '_>,
    verdict: &Verdict,
    output: &CommandOutput,
    outputs: serde_json::Value,
) -> Result<Step, JobError> {
    // What they left in memory is not to be trusted.
    cx.demote_memory(super::memory::TESTS_STEP).await?;
    cx.flow.tests.breaker_attempts += 1;
    let failed = verdict.describe();
    if cx.flow.tests.breaker_attempts > cx.env.config.retry.max_retries {
        let report = red_proof_report(verdict, cx.flow.tests.breaker_attempts);
        cx.checkpoint_failed(Node::RedProof, serde_json::json!({}), outputs, &failed)
            .await?;
        return cx.needs_human(&report).await;
    }
    let why = match verdict {
        Verdict::Green => "the tests pass on the base: they do not capture the issue".to_owned(),
        other => other.describe(),
    };
    cx.flow.tests.breaker_findings = vec![Finding::new(
        "red_proof",
        format!("{why}\n\nLast lines:\n{}", output.tail(20)),
    )];
    cx.flow.tests.breaker = None;
    cx.flow.next = Node::Code;
    cx.checkpoint_failed(Node::RedProof, serde_json::json!({}), outputs, &failed)
        .await?;
    Ok(Step::Next)
}

/// What the person reads when the Breaker's tests need a dependency the environment lacks.
fn missing_report(m: &Missing) -> String {
    format!(
        "The Breaker's tests need `{name}`, which the environment does not have, so they could \
         not run:\n\n    {line}\n\nThe Breaker was not sent back: that is the environment, not \
         the tests. Add `{name}` to the project's test dependencies (or install it in `setup:` \
         in `.github/hive.yml`), then `/hive retry breaker`; or `/hive feedback` the Breaker to \
         do without it.",
        name = m.name,
        line = m.line,
    )
}

/// What the person asked to step in reads when the Breaker's attempts ran out.
fn red_proof_report(verdict: &Verdict, attempts: u32) -> String {
    let tries = match attempts {
        1 => "1 attempt".to_owned(),
        n => format!("{n} attempts"),
    };
    let hit_a_limit = matches!(verdict, Verdict::Broken { reason }
        if reason.starts_with("killed") || reason.starts_with("timed out"));
    if hit_a_limit {
        format!(
            "Red proof {} after {tries} of the Breaker: the test command hit a sandbox limit.\n\n\
             Fix the test that does this (see the `hive/red-proof` check run), or raise `limits` in \
             `.github/hive.yml`, then `/hive retry breaker`.",
            verdict.describe()
        )
    } else if matches!(verdict, Verdict::Broken { .. }) {
        format!(
            "Red proof {} after {tries} of the Breaker: its tests could not run on the base, so \
             they prove nothing.\n\nThe `hive/red-proof` check run shows why; tell the Breaker \
             what to change with `/hive feedback <hint>`, then `/hive retry breaker`.",
            verdict.describe()
        )
    } else {
        format!(
            "Red proof {} after {tries} of the Breaker: tests that do not fail on the base prove \
             nothing.\n\nAdd detail to the issue (what exactly goes wrong), then `/hive retry breaker`.",
            verdict.describe()
        )
    }
}

/// People changed the Breaker's tests (adopted as its own, the red proof cleared): they are
/// proved red again before they meet the code. True when the flow goes to the red proof.
pub(super) async fn retake_red_proof(cx: &mut Ctx<'_, '_>, node: Node) -> Result<bool, JobError> {
    if cx.flow.tests.red_proof.is_some() || cx.flow.tests.breaker.is_none() {
        return Ok(false);
    }
    cx.flow.next = Node::RedProof;
    let tests = cx.flow.tests.breaker.as_ref().map(|b| b.sha.to_string());
    cx.checkpoint(
        node,
        serde_json::json!({ "tests": tests }),
        serde_json::json!({ "next": "red_proof", "why": "people changed the tests" }),
    )
    .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_gives_the_fix_that_fits_the_failure() {
        let green = red_proof_report(&Verdict::Green, 4);
        assert!(
            green.contains("after 4 attempts") && green.contains("Add detail to the issue"),
            "{green}"
        );
        let broken = Verdict::Broken {
            reason: "1 error(s) while collecting or setting up tests".into(),
        };
        let broken = red_proof_report(&broken, 1);
        assert!(
            broken.contains("could not run on the base") && broken.contains("/hive feedback"),
            "{broken}"
        );
        let limit = Verdict::Broken {
            reason: "timed out after 600 s".into(),
        };
        let limit = red_proof_report(&limit, 2);
        assert!(
            limit.contains("hit a sandbox limit") && limit.contains("raise `limits`"),
            "{limit}"
        );
        let missing = crate::gates::baseline::Missing {
            name: "hypothesis".into(),
            line: "E   No module named 'hypothesis'".into(),
        };
        let missing = missing_report(&missing);
        assert!(
            missing.starts_with("The Breaker's tests need `hypothesis`")
                && missing.contains("\n\n    E   No module named 'hypothesis'\n\n"),
            "{missing}"
        );
    }
}
