//! The Encounter: the Breaker's commit is merged into the Builder's branch (a Builder that
//! changed the same tests cannot merge; one that changed others fails the test lock), and every
//! gate runs on it in the Builder's container, tests locked; failures go back to the Builder as
//! findings, until the attempts are spent or stall and a person is asked.

use super::ctx::enter_node;
use super::ctx::{Ctx, Step};
use super::ctx::{git, sync};
use super::state::{Attempt, Node, Work};
use super::withhold::Pushed;
use crate::gates::GateResult;
use crate::github::checks::RETRY;
use crate::hive::job::JobError;
use crate::hive::verify::{Verification, run_gates};
use crate::ids::CommitSha;
use crate::ticket::Finding;
use crate::workspace::{Merged, Worktree};

/// The Encounter: the tests meet the code.
pub(super) async fn encounter(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let base = sync(cx).await?;
    let (breaker, builder) = match (cx.flow.tests.breaker.clone(), cx.flow.code.builder.clone()) {
        (Some(b), Some(c)) => (b, c),
        _ => {
            return Err(JobError::permanent(
                "the Encounter needs both the tests and the code",
            ));
        }
    };
    // People's commits since the Builder's: the tests meet them too.
    let adopted = super::people::adopt_people(cx, &builder.sha).await?;
    if super::proof::retake_red_proof(cx, Node::Encounter).await? {
        return Ok(Step::Next);
    }
    let (wt, head) = match meet(cx, &breaker.sha, &builder.sha, adopted).await? {
        Met::Head(wt, head) => (wt, head),
        Met::Done(step) => return Ok(step),
    };
    super::memory::remember_change(cx, &base, &head).await?;
    // A person approves what they were shown held, at the landing's regate; never here.
    let expect = crate::gates::expect::Expect {
        steering_approved_by: None,
        ..cx.flow.expect(vec![])
    };
    let verification = Verification {
        worktree: &wt,
        base: &base,
        head: &head,
        gates: None,
        run_id: format!(
            "vibeloop:{}:attempt-{}",
            cx.run.ticket.id, cx.flow.code.attempt
        ),
        role: "builder",
        tests: Some(&breaker.sha),
        known_failures: &cx.flow.known_failures(),
        expect: &expect,
    };
    let gates = run_gates(cx.run, &cx.env, verification).await?;
    let h = head.oid();
    let tree = git(cx, move |ws, g| ws.tree_of(g, h)).await?;
    let attempt = Attempt::from_gates(cx.flow.code.attempt, &head, &tree, &gates);
    // An approval given before this attempt was seen does not cover the steering files it
    // holds for a person: they approve again once they have read them.
    if let Some(why) = attempt.held()
        && let Some(by) = cx.flow.review.approved_by.take()
    {
        cx.flow.review.approval_withdrawn = Some(format!(
            "@{by} approved before this attempt, and {why}: approve again once you have read them."
        ));
    }
    cx.run
        .hive
        .store
        .set_head_sha(cx.run.ticket.key, head.as_str())
        .await?;
    cx.run.ticket.head_sha = Some(head.to_string());
    if !attempt.passed() {
        return failed(cx, &head, &tree, &[attempt], findings_of(&gates)).await;
    }
    super::memory::gates_passed(cx, &gates).await?;
    super::people::answer_threads(cx, &head).await?;
    cx.flow.code.attempts.push(attempt);
    cx.flow.code.builder = Some(Work {
        sha: head.clone(),
        ..builder
    });
    cx.flow.next = if cx.flow.review.pr.is_some() {
        Node::Critic
    } else {
        Node::OpenPr
    };
    cx.checkpoint(
        Node::Encounter,
        serde_json::json!({ "head": head.as_str() }),
        serde_json::json!({ "passed": true }),
    )
    .await?;
    cx.publish().await?;
    Ok(Step::Next)
}

/// Where the tests meeting the code leaves the flow.
enum Met {
    /// Merged and pushed: the Builder's worktree, and the head the gates judge.
    Head(Worktree, CommitSha),
    /// The attempt ended there (a conflict on the tests, a push withheld).
    Done(Step),
}

/// The Breaker's `tests` merged into the Builder's `code` (or the people's commits `adopted`
/// after it) in the Builder's worktree, and pushed.
async fn meet(
    cx: &mut Ctx<'_, '_>,
    tests: &CommitSha,
    code: &CommitSha,
    adopted: Option<CommitSha>,
) -> Result<Met, JobError> {
    let id = cx.run.ticket.id;
    let lease = adopted.clone().or_else(|| cx.flow.code.pushed.clone());
    let (repo, branch, from) = (
        cx.run.ticket.repo.clone(),
        id.feat_branch(),
        adopted.unwrap_or_else(|| code.clone()),
    );
    let room = cx.env.config.limits.disk_mb;
    let wt = git(cx, move |ws, g| {
        ws.worktree_at(&repo, g, &branch, (from.oid(), room))
    })
    .await?;
    let (wt2, author, tests) = (wt.clone(), cx.author().await?, tests.clone());
    let msg = format!("{id}: the Breaker's tests");
    let merged = git(cx, move |ws, _| {
        ws.merge_into(&wt2, tests.oid(), &msg, &author)
    })
    .await?;
    let sha = match merged {
        Merged::Conflicts(paths) => {
            let findings = paths
                .iter()
                .map(|p| Finding { code: "test_lock".into(), message: format!("{p} was changed by both the Builder and the Breaker; the Breaker's version stands. Leave the tests alone."), path: Some(p.clone()) })
                .collect();
            return Ok(Met::Done(failed(cx, code, "", &[], findings).await?));
        }
        Merged::Clean(sha) => sha,
    };
    let during = "during the Encounter";
    let head = match super::people::push_or_rerun(cx, &sha, lease.as_ref(), during).await? {
        Pushed::Yes(head) => head,
        Pushed::Withheld(found) => {
            let step =
                super::withhold::builder_withheld(cx, Node::Encounter, found, during).await?;
            return Ok(Met::Done(step));
        }
    };
    cx.flow.code.pushed = Some(head.clone());
    Ok(Met::Head(wt, head))
}

/// What the Builder must fix from the gates that failed: the unmet acceptance criteria, the
/// tests that did not pass (each with why), the first annotations, and the command's last
/// lines.
fn findings_of(gates: &[GateResult]) -> Vec<Finding> {
    gates
        .iter()
        .filter(|g| !g.ok())
        .flat_map(|g| {
            let code = format!("gate_{}", g.gate);
            let unmet = (g.gate == crate::gates::acceptance::GATE).then_some(&g.failing);
            let mut f: Vec<Finding> = unmet
                .into_iter()
                .flatten()
                .map(|line| Finding::new("gate_acceptance", format!("hive/acceptance: {line}")))
                .collect();
            f.extend(g.misses.iter().map(|m| Finding::new(&code, m.clone())));
            f.extend(g.annotations.iter().take(20).map(|a| Finding {
                code: code.clone(),
                message: format!("{}:{}: {}", a.path, a.start_line, a.message),
                path: Some(a.path.clone()),
            }));
            if let Some(out) = &g.output {
                let said = format!("hive/{} {}; {}", g.gate, g.describe(), last_lines(g, out));
                f.push(Finding::new(&code, said));
            }
            f
        })
        .collect()
}

/// An attempt failed: what it produced is demoted in memory, and it goes back to the Builder,
/// unless the attempts are spent or stall.
async fn failed(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    tree: &str,
    attempt: &[Attempt],
    findings: Vec<Finding>,
) -> Result<Step, JobError> {
    super::memory::attempt_failed(cx).await?;
    let attempt = attempt.first().cloned().unwrap_or_else(|| Attempt {
        n: cx.flow.code.attempt,
        sha: sha.clone(),
        gates: Vec::new(),
        signature: crate::agent::heal::report(&findings),
        tree: tree.to_owned(),
        verdicts: vec![],
        environment: None,
    });
    let stalled = cx.flow.code.attempts.last().filter(|prev| {
        prev.signature == attempt.signature
            || (!attempt.tree.is_empty() && prev.tree == attempt.tree)
    });
    let stall = stalled.map(|prev| {
        if prev.tree == attempt.tree {
            "the same change twice in a row"
        } else {
            "the same failure twice in a row"
        }
    });
    let failed_gates: Vec<String> = attempt
        .gates
        .iter()
        .filter(|g| !g.passed)
        .map(|g| format!("hive/{} {}", g.gate, g.result))
        .collect();
    let failed = match failed_gates.is_empty() {
        true => findings
            .first()
            .and_then(|f| f.message.lines().next())
            .unwrap_or("the attempt failed")
            .to_owned(),
        false => failed_gates.join("; "),
    };
    cx.flow.code.attempts.push(attempt);
    cx.flow.code.findings = findings;
    let out = serde_json::json!({ "passed": false, "findings": cx.flow.code.findings.len() });
    let inputs = serde_json::json!({ "head": sha.as_str() });
    if let Some(why) =
        stall.or((cx.flow.code.attempt >= cx.flow.code.attempt_limit).then_some("no attempts left"))
    {
        cx.checkpoint_failed(Node::Encounter, inputs, out, &failed)
            .await?;
        offer_retry(cx, sha).await;
        return cx.needs_human(&human_report(cx, why)).await;
    }
    cx.flow.code.attempt += 1;
    cx.flow.next = Node::Code;
    cx.checkpoint_failed(Node::Encounter, inputs, out, &failed)
        .await?;
    cx.publish().await?;
    Ok(Step::Next)
}

/// Puts a "Retry" button on the failing gates' check runs of this attempt (best effort: the
/// comment's `/hive retry` does the same).
async fn offer_retry(cx: &Ctx<'_, '_>, sha: &CommitSha) {
    let Some(attempt) = cx.flow.code.attempts.last() else {
        return;
    };
    let run_id = format!("vibeloop:{}:attempt-{}", cx.run.ticket.id, attempt.n);
    for g in attempt.gates.iter().filter(|g| !g.passed) {
        let external = format!("{run_id}:{}", g.gate);
        let found = cx.run.client.find_check_run(sha, &external).await;
        if let Ok(Some(run)) = found
            && let Err(e) = cx.run.client.offer_actions(run.id, &[RETRY]).await
        {
            tracing::warn!(error = %e, "cannot offer the Retry button");
        }
    }
}

/// The report a person gets when the Builder's attempts end without a passing change.
fn human_report(cx: &Ctx<'_, '_>, why: &str) -> String {
    let mut s = format!(
        "The Builder stopped after {} attempt(s): {why}.\n\n**Last findings**\n\n",
        cx.flow.code.attempts.len()
    );
    for f in cx.flow.code.findings.iter().take(8) {
        s.push_str(&report_line(&f.code, &f.message));
    }
    s.push_str(
        "\n**What you can do**\n\n- add detail to the issue or `/hive feedback <hint>`, then `/hive retry`;\n\
         - or take over the branch yourself.\n",
    );
    s
}

/// One finding in a person's report: its first line and, where the rest is a command's last
/// lines, the last few of them in a code block (they say why; an empty "last lines:" does not).
fn report_line(code: &str, message: &str) -> String {
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default();
    let mut line = match code.strip_prefix("gate_") {
        Some(gate) => format!("- `hive/{gate}`: {first}\n"),
        None => format!("- {first}\n"),
    };
    let rest: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    if !rest.is_empty() {
        let last = rest[rest.len().saturating_sub(5)..].join("\n");
        for l in crate::gates::report::code_block(&last).lines() {
            line.push_str(&format!("  {l}\n"));
        }
    }
    line
}

/// The end of a failed gate's output for the Builder; when the command printed nothing, that
/// and the gate's notes (setup's failure, the project's build in the sandbox), so no finding
/// ends in an empty "last lines".
fn last_lines(g: &crate::gates::GateResult, out: &crate::sandbox::CommandOutput) -> String {
    let tail = out.tail(25);
    if !tail.trim().is_empty() {
        return format!("last lines:\n{tail}");
    }
    let mut said = format!(
        "`{}` printed nothing",
        g.command.as_deref().unwrap_or("the command")
    );
    for note in &g.notes {
        said.push_str(&format!("\n{note}"));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persons_report_shows_a_commands_last_lines_not_an_empty_heading() {
        let said = report_line(
            "gate_lint",
            "hive/lint failed: exit code 101; last lines:\nwarning: x\n\nerror: could not compile `fnv`\n",
        );
        assert_eq!(
            said,
            "- `hive/lint`: hive/lint failed: exit code 101; last lines:\n  ```text\n  warning: x\n  error: could not compile `fnv`\n  ```\n"
        );
        assert_eq!(report_line("plan", "one line"), "- one line\n");
    }

    #[test]
    fn a_gate_that_printed_nothing_says_so_with_its_notes() {
        let mut g = crate::gates::GateResult::skipped("test", "x");
        g.command = Some("python -m pytest".into());
        g.notes = vec!["The project's own build in this sandbox failed.".into()];
        let silent = crate::sandbox::CommandOutput::exited(1, "\n");
        assert_eq!(
            last_lines(&g, &silent),
            "`python -m pytest` printed nothing\nThe project's own build in this sandbox failed."
        );
        let said = crate::sandbox::CommandOutput::exited(1, "a\nE   boom\n");
        assert_eq!(last_lines(&g, &said), "last lines:\na\nE   boom");
    }
}
