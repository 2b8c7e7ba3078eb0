//! Regate: the rebased commit gated before it lands, its check runs the ones branch
//! protection reads. Every gate runs again, unless the rebase changed nothing: a commit whose
//! tree is the very tree the last attempt's gates passed on (the base did not move) gets their
//! verdicts as its check runs, each saying where they come from — the same files give the
//! same verdicts, and nothing runs twice for them.

use super::ctx::{Ctx, Step};
use super::ctx::{base, enter_node, git};
use super::state::{Attempt, Node};
use crate::github::checks::{CheckOutput, Conclusion};
use crate::hive::job::JobError;
use crate::hive::verify::{Verification, run_gates};
use crate::ids::CommitSha;
use crate::ticket::Finding;

/// The external id of a regate's check runs: one series per rebase.
fn run_id(cx: &Ctx<'_, '_>) -> String {
    format!(
        "vibeloop:{}:regate-{}",
        cx.run.ticket.id,
        cx.flow.land.requeues + cx.flow.code.attempt
    )
}

/// The last attempt, when its gates passed (none held for a person) on the tree `sha` has.
pub(super) async fn gated_as(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
) -> Result<Option<Attempt>, JobError> {
    let Some(last) = cx.flow.code.attempts.last().cloned() else {
        return Ok(None);
    };
    if last.gates.is_empty() || !last.passed() || last.held().is_some() || last.tree.is_empty() {
        return Ok(None);
    }
    let s = sha.oid();
    let tree = git(cx, move |ws, g| ws.tree_of(g, s)).await?;
    Ok((tree == last.tree).then_some(last))
}

/// Reports the verdicts of `gated`'s gates as check runs on `sha`, whose tree they passed
/// on, and goes on to the repository's own CI.
async fn carry_over(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    gated: &Attempt,
) -> Result<Step, JobError> {
    let base = cx.base_branch();
    let why = format!("The rebase onto `{base}` changed no file");
    report_carried(cx, sha, gated, &run_id(cx), &why).await?;
    cx.flow.next = Node::Ci;
    cx.checkpoint(
        Node::Regate,
        serde_json::json!({ "sha": sha.as_str() }),
        serde_json::json!({ "passed": true, "carried_from": gated.sha.as_str() }),
    )
    .await?;
    Ok(Step::Next)
}

/// Reports the verdicts of `gated`'s gates as check runs on `sha` (series `run_id`), whose
/// tree they passed on; `why` says how `sha` came to have it.
pub(super) async fn report_carried(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    gated: &Attempt,
    run_id: &str,
    why: &str,
) -> Result<(), JobError> {
    let short = &gated.sha.as_str()[..7];
    for line in &gated.gates {
        let name = format!("hive/{}", line.gate);
        let external_id = format!("{run_id}:{}", line.gate);
        let client = &cx.run.client;
        let run = client
            .ensure_check_run(&name, sha, &external_id, "queued")
            .await?;
        let conclusion = if line.skipped {
            Conclusion::Skipped
        } else {
            Conclusion::Success
        };
        let output = CheckOutput {
            title: format!("{}: as on {short}, the same files", line.result),
            summary: format!(
                "{why}: this commit's tree is the one gated on {} (attempt {}), where `{name}` {}. It was not run again.",
                gated.sha, gated.n, line.result
            ),
        };
        client
            .complete_check_run(run.id, conclusion, &output, &[])
            .await?;
    }
    cx.run
        .event(
            "regate_carried",
            serde_json::json!({ "sha": sha.as_str(), "from": gated.sha.as_str() }),
        )
        .await;
    Ok(())
}

/// The files the base changed since the baseline was taken on it: their tests may be gone or
/// renamed, so the test gate does not miss them.
pub(super) async fn changed_on_the_base(
    cx: &mut Ctx<'_, '_>,
    base: &crate::ids::CommitSha,
) -> Result<Vec<String>, JobError> {
    let Some(old) = cx.flow.plan.baseline.as_ref().map(|b| b.sha.clone()) else {
        return Ok(vec![]);
    };
    if old == *base {
        return Ok(vec![]);
    }
    let (from, to) = (old.oid(), base.oid());
    git(cx, move |ws, g| ws.changed_paths(g, from, to)).await
}

/// Regate: every gate again on the rebased commit, or their verdicts carried over when its
/// tree is the one the last attempt's gates passed on.
pub(super) async fn regate(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let base = base(cx).await?;
    let sha = cx
        .flow
        .land
        .rebased
        .clone()
        .ok_or_else(|| JobError::permanent("regate without a rebased commit"))?;
    if let Some(gated) = gated_as(cx, &sha).await? {
        return carry_over(cx, &sha, &gated).await;
    }
    let tests = cx.flow.tests.breaker.as_ref().map(|b| b.sha.clone());
    let excused = changed_on_the_base(cx, &base).await?;
    let expect = cx.flow.expect(excused);
    let wt = super::ctx::scratch(cx, "regate", Some(&sha)).await?;
    let v = Verification {
        worktree: &wt,
        base: &base,
        head: &sha,
        gates: None,
        run_id: run_id(cx),
        role: "regate",
        tests: tests.as_ref(),
        known_failures: &cx.flow.known_failures(),
        expect: &expect,
    };
    let gates = run_gates(cx.run, &cx.env, v).await;
    super::ctx::drop_scratch(cx, "regate").await;
    let gates = gates?;
    // Held with nobody's approval (the rebase brought a file that steers the tests): a person
    // must look first, as at the Encounter.
    if let Some(why) = gates.iter().find_map(|g| g.held.clone()) {
        let last = cx.flow.code.attempts.last_mut();
        if let Some(line) = last.and_then(|a| a.gates.iter_mut().find(|g| g.gate == "test")) {
            line.held = Some(why);
        }
        cx.flow.next = Node::AwaitApproval;
        cx.checkpoint(
            Node::Regate,
            serde_json::json!({ "sha": sha.as_str() }),
            serde_json::json!({ "passed": true, "held": true }),
        )
        .await?;
        return Ok(Step::Next);
    }
    if gates.iter().all(|g| g.ok()) {
        cx.flow.next = Node::Ci;
        cx.checkpoint(
            Node::Regate,
            serde_json::json!({ "sha": sha.as_str() }),
            serde_json::json!({ "passed": true }),
        )
        .await?;
        return Ok(Step::Next);
    }
    cx.flow.code.findings = gates
        .iter()
        .filter(|g| !g.ok())
        .map(|g| {
            Finding::new(
                &format!("gate_{}", g.gate),
                format!("after the rebase, hive/{} {}", g.gate, g.describe()),
            )
        })
        .collect();
    super::memory::attempt_failed(cx).await?;
    let failed: Vec<String> = gates
        .iter()
        .filter(|g| !g.ok())
        .map(|g| format!("hive/{} {}", g.gate, g.describe()))
        .collect();
    cx.checkpoint_failed(
        Node::Regate,
        serde_json::json!({ "sha": sha.as_str() }),
        serde_json::json!({ "passed": false }),
        &failed.join("; "),
    )
    .await?;
    if cx.flow.code.attempt >= cx.flow.code.attempt_limit {
        return cx.needs_human("The gates fail after rebasing onto the current base, and no attempts are left. Look at the check runs of the pull request, then `/hive retry`.").await;
    }
    cx.flow.code.builder = cx.flow.code.builder.take().map(|w| super::state::Work {
        sha: sha.clone(),
        ..w
    });
    cx.flow.code.attempt += 1;
    cx.flow.review.approved_by = None;
    cx.flow.next = Node::Code;
    Ok(Step::Next)
}
