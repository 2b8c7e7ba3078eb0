//! Red proof and the Encounter. Red proof: the Breaker's tests, on the base commit, must fail
//! as tests (check run `hive/red-proof`); if not, the Breaker tries again. The Encounter: the
//! Breaker's commit is merged into the Builder's branch (a Builder that changed the same tests
//! cannot merge; one that changed others fails the test lock), and every gate runs on it in the
//! Builder's container, tests read-only; failures go back to the Builder as findings.

use super::ctx::enter_node;
use super::ctx::{Ctx, Step};
use super::ctx::{drop_scratch, git, scratch, sync};
use super::state::{Attempt, Node};
use super::withhold::Pushed;
use crate::gates::baseline::Missing;
use crate::gates::redproof::{self, Verdict};
use crate::github::checks::RETRY;
use crate::hive::job::JobError;
use crate::hive::verify::{Verification, run_gates};
use crate::ids::CommitSha;
use crate::sandbox::CommandOutput;
use crate::ticket::Finding;
use crate::workspace::Merged;
use std::time::Duration;

/// Red proof: the new tests against the base.
pub(super) async fn red_proof(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let base = sync(cx).await?;
    let breaker = cx
        .flow
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
    cx.flow.red_proof = Some(verdict.clone());
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

/// Runs the Breaker's tests on the base in a scratch worktree: the verdict, the output, and a
/// dependency the tests need that the environment lacks (told apart while the checkout is
/// there to say what is the project's own).
async fn prove(
    cx: &mut Ctx<'_, '_>,
    base: &CommitSha,
    breaker: &super::state::Work,
    test_command: &str,
) -> Result<(Verdict, CommandOutput, Option<Missing>), JobError> {
    let wt = scratch(cx, "redproof", Some(base)).await?;
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
        Ok(files) => run_on_base(cx, &wt, test_command, &files).await,
        Err(e) => Err(e),
    };
    drop_scratch(cx, "redproof").await;
    result
}

async fn run_on_base(
    cx: &mut Ctx<'_, '_>,
    wt: &crate::workspace::Worktree,
    test_command: &str,
    files: &[String],
) -> Result<(Verdict, CommandOutput, Option<Missing>), JobError> {
    let spec = super::ctx::sandbox_spec(cx, wt, "redproof", true).await?;
    let started = std::time::Instant::now();
    cx.run
        .event("stage_enter", serde_json::json!({ "stage": "red_proof" }))
        .await;
    let sandbox = cx.run.hive.sandbox.start(&spec).await?;
    let plan = serde_json::to_string(&cx.flow.blueprint).unwrap_or_default();
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
    let millis = started.elapsed().as_millis() as u64;
    cx.run
        .event(
            "stage_exit",
            serde_json::json!({ "stage": "red_proof", "millis": millis }),
        )
        .await;
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
        let n = cx.flow.breaker_findings.len();
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
    cx.flow.breaker_attempts += 1;
    let failed = verdict.describe();
    if cx.flow.breaker_attempts > cx.env.config.retry.max_retries {
        let report = red_proof_report(verdict, cx.flow.breaker_attempts);
        cx.checkpoint_failed(Node::RedProof, serde_json::json!({}), outputs, &failed)
            .await?;
        return cx.needs_human(&report).await;
    }
    let why = match verdict {
        Verdict::Green => "the tests pass on the base: they do not capture the issue".to_owned(),
        other => other.describe(),
    };
    cx.flow.breaker_findings = vec![Finding::new(
        "red_proof",
        format!("{why}\n\nLast lines:\n{}", output.tail(20)),
    )];
    cx.flow.breaker = None;
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

/// The Encounter: the tests meet the code.
pub(super) async fn encounter(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let base = sync(cx).await?;
    let (breaker, builder) = match (cx.flow.breaker.clone(), cx.flow.builder.clone()) {
        (Some(b), Some(c)) => (b, c),
        _ => {
            return Err(JobError::permanent(
                "the Encounter needs both the tests and the code",
            ));
        }
    };
    let id = cx.run.ticket.id;
    // People's commits since the Builder's: the tests meet them too.
    let adopted = super::people::adopt_people(cx, &builder.sha).await?;
    if retake_red_proof(cx, Node::Encounter).await? {
        return Ok(Step::Next);
    }
    let lease = adopted.clone().or_else(|| cx.flow.pushed.clone());
    let (repo, branch, from) = (
        cx.run.ticket.repo.clone(),
        id.feat_branch(),
        adopted.unwrap_or_else(|| builder.sha.clone()),
    );
    let room = cx.env.config.limits.disk_mb;
    let wt = git(cx, move |ws, g| {
        ws.worktree_at(&repo, g, &branch, (from.oid(), room))
    })
    .await?;
    let (wt2, author, tests) = (wt.clone(), cx.author().await?, breaker.sha.clone());
    let msg = format!("{id}: the Breaker's tests");
    let merged = git(cx, move |ws, _| {
        ws.merge_into(&wt2, tests.oid(), &msg, &author)
    })
    .await?;
    let findings_of_conflict = |paths: &[String]| -> Vec<Finding> {
        paths
            .iter()
            .map(|p| Finding { code: "test_lock".into(), message: format!("{p} was changed by both the Builder and the Breaker; the Breaker's version stands. Leave the tests alone."), path: Some(p.clone()) })
            .collect()
    };
    let head = match merged {
        Merged::Conflicts(paths) => {
            let findings = findings_of_conflict(&paths);
            return failed(cx, &builder.sha, "", &[], findings).await;
        }
        Merged::Clean(sha) => {
            let during = "during the Encounter";
            let sha = match super::people::push_or_rerun(cx, &sha, lease.as_ref(), during).await? {
                Pushed::Yes(head) => head,
                Pushed::Withheld(found) => {
                    return super::withhold::builder_withheld(cx, Node::Encounter, found, during)
                        .await;
                }
            };
            cx.flow.pushed = Some(sha.clone());
            sha
        }
    };
    super::memory::remember_change(cx, &base, &head).await?;
    let tests_sha = breaker.sha.clone();
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
        run_id: format!("vibeloop:{id}:attempt-{}", cx.flow.attempt),
        role: "builder",
        tests: Some(&tests_sha),
        known_failures: &cx.flow.known_failures(),
        expect: &expect,
    };
    let gates = run_gates(cx.run, &cx.env, verification).await?;
    let h = head.oid();
    let tree = git(cx, move |ws, g| ws.tree_of(g, h)).await?;
    let attempt = Attempt::from_gates(cx.flow.attempt, &head, &tree, &gates);
    // An approval given before this attempt was seen does not cover the steering files it
    // holds for a person: they approve again once they have read them.
    if let Some(why) = attempt.held()
        && let Some(by) = cx.flow.approved_by.take()
    {
        cx.flow.approval_withdrawn = Some(format!(
            "@{by} approved before this attempt, and {why}: approve again once you have read them."
        ));
    }
    cx.run
        .hive
        .store
        .set_head_sha(cx.run.ticket.key, head.as_str())
        .await?;
    cx.run.ticket.head_sha = Some(head.to_string());
    if attempt.passed() {
        super::memory::gates_passed(cx, &gates).await?;
        super::people::answer_threads(cx, &head).await?;
        cx.flow.attempts.push(attempt);
        cx.flow.builder = Some(super::state::Work {
            sha: head.clone(),
            ..builder
        });
        cx.flow.next = if cx.flow.pr.is_some() {
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
        return Ok(Step::Next);
    }
    let findings = gates
        .iter()
        .filter(|g| !g.ok())
        .flat_map(|g| {
            // The unmet acceptance criteria, each with its measure and threshold.
            let unmet = (g.gate == crate::gates::acceptance::GATE).then_some(&g.failing);
            let mut f: Vec<Finding> = unmet
                .into_iter()
                .flatten()
                .map(|line| Finding::new("gate_acceptance", format!("hive/acceptance: {line}")))
                .collect();
            // Tests the change is judged by that did not pass, each with why.
            f.extend(
                g.misses
                    .iter()
                    .map(|m| Finding::new(&format!("gate_{}", g.gate), m.clone())),
            );
            f.extend(g.annotations.iter().take(20).map(|a| Finding {
                code: format!("gate_{}", g.gate),
                message: format!("{}:{}: {}", a.path, a.start_line, a.message),
                path: Some(a.path.clone()),
            }));
            if let Some(out) = &g.output {
                f.push(Finding::new(
                    &format!("gate_{}", g.gate),
                    format!("hive/{} {}; {}", g.gate, g.describe(), last_lines(g, out)),
                ));
            }
            f
        })
        .collect();
    failed(cx, &head, &tree, &[attempt], findings).await
}

/// People changed the Breaker's tests (adopted as its own, the red proof cleared): they are
/// proved red again before they meet the code. True when the flow goes to the red proof.
pub(super) async fn retake_red_proof(cx: &mut Ctx<'_, '_>, node: Node) -> Result<bool, JobError> {
    if cx.flow.red_proof.is_some() || cx.flow.breaker.is_none() {
        return Ok(false);
    }
    cx.flow.next = Node::RedProof;
    let tests = cx.flow.breaker.as_ref().map(|b| b.sha.to_string());
    cx.checkpoint(
        node,
        serde_json::json!({ "tests": tests }),
        serde_json::json!({ "next": "red_proof", "why": "people changed the tests" }),
    )
    .await?;
    Ok(true)
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
        n: cx.flow.attempt,
        sha: sha.clone(),
        gates: Vec::new(),
        signature: crate::agent::heal::report(&findings),
        tree: tree.to_owned(),
        verdicts: vec![],
        environment: None,
    });
    let stalled = cx.flow.attempts.last().filter(|prev| {
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
    cx.flow.attempts.push(attempt);
    cx.flow.findings = findings;
    let out = serde_json::json!({ "passed": false, "findings": cx.flow.findings.len() });
    let inputs = serde_json::json!({ "head": sha.as_str() });
    if let Some(why) =
        stall.or((cx.flow.attempt >= cx.flow.attempt_limit).then_some("no attempts left"))
    {
        cx.checkpoint_failed(Node::Encounter, inputs, out, &failed)
            .await?;
        offer_retry(cx, sha).await;
        return cx.needs_human(&human_report(cx, why)).await;
    }
    cx.flow.attempt += 1;
    cx.flow.next = Node::Code;
    cx.checkpoint_failed(Node::Encounter, inputs, out, &failed)
        .await?;
    cx.publish().await?;
    Ok(Step::Next)
}

/// Puts a "Retry" button on the failing gates' check runs of this attempt (best effort: the
/// comment's `/hive retry` does the same).
async fn offer_retry(cx: &Ctx<'_, '_>, sha: &CommitSha) {
    let Some(attempt) = cx.flow.attempts.last() else {
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
        cx.flow.attempts.len()
    );
    for f in cx.flow.findings.iter().take(8) {
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
