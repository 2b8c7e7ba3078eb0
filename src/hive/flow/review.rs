//! The pull request and the wait for people. `open_pr` opens it as a draft (or updates it
//! after a fix), its description a definition-of-done summary built only from what the bot
//! observed ([`pull_body`]): the gates, the Breaker's tests by name on the base and on the
//! change, and the files the change edits that steer which tests run. The Critic reviews it
//! (`critic.rs`). `await_approval` waits for a person where the repository asks for one.
//!
//! With the pull request open, a ticket gives its worker to tickets that wait for one: the
//! first thing people see of each change comes first, its review and landing behind them.

use super::ctx::enter_node;
use super::ctx::{Ctx, Step};
use super::ctx::{base, git};
use super::state::Node;
use crate::gates::steering::Steer;
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::ticket::TaskState;

/// How long a job is due with no worker taking it before every worker counts as busy (an idle
/// one asks for work every half second).
const BUSY_AFTER_MS: i64 = 1_000;

/// Open PR: a draft until the Critic approves.
pub(super) async fn open_pr(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    cx.book().await?;
    let base = base(cx).await?;
    let head = head_sha(cx)?;
    let (b, h) = (base.oid(), head.oid());
    let files = git(cx, move |ws, g| ws.changed_paths(g, b, h)).await?;
    let steers = steering(cx, &base, &head).await?;
    let body = pull_body(cx, &head, &files, &steers);
    let id = cx.run.ticket.id;
    let title = format!("{id}: {}", cx.run.ticket.title);
    let base_branch = cx.base_branch();
    let pr = match cx.flow.review.pr {
        Some(n) => {
            cx.run.client.update_pull(n, &title, &body).await?;
            n
        }
        None => {
            let pr = cx
                .run
                .client
                .open_pull(&title, &id.feat_branch(), &base_branch, &body, true)
                .await?;
            cx.flow.review.pr_url = pr.html_url.clone();
            pr.number
        }
    };
    cx.flow.review.pr = Some(pr);
    cx.run
        .hive
        .store
        .set_pr_number(cx.run.ticket.key, pr)
        .await?;
    cx.run.ticket.pr_number = Some(pr);
    cx.flow.next = Node::Critic;
    cx.checkpoint(
        Node::OpenPr,
        serde_json::json!({ "head": head.as_str() }),
        serde_json::json!({ "pr": pr }),
    )
    .await?;
    cx.publish().await?;
    let key = cx.run.ticket.key;
    if cx
        .run
        .hive
        .store
        .yield_to_waiting(key, BUSY_AFTER_MS)
        .await?
    {
        tracing::info!("pull request open; the worker goes to the jobs waiting for one");
        return Ok(Step::Stop);
    }
    Ok(Step::Next)
}

/// "The change edits files that steer which tests run: …" (a paragraph), or nothing; it says
/// who approved them once a person did.
fn steering_note(steering: &[Steer], approved_by: Option<&str>) -> String {
    if steering.is_empty() {
        return String::new();
    }
    let files: Vec<String> = steering.iter().map(Steer::describe).collect();
    let verdict = match approved_by {
        _ if !steering.iter().any(Steer::can_forge) => "Review them with care.".to_owned(),
        Some(who) => format!("@{} approved them; the gates ran again with them.", who.replace('`', "'")),
        None => "Such a file can make any test report pass, so the test gate's green is held (\"action required\") until a person reads them and approves with `/hive approve`.".to_owned(),
    };
    format!(
        "\n**Files that steer the tests.** This change edits files that decide which tests run and how: {}. \
         The gates checked that the Breaker's tests and the base's still ran and passed, by name. {verdict}\n",
        files.join(", ")
    )
}

/// The files `base..head` changes that steer the tests.
async fn steering(
    cx: &mut Ctx<'_, '_>,
    base: &CommitSha,
    head: &CommitSha,
) -> Result<Vec<Steer>, JobError> {
    let (b, h) = (base.oid(), head.oid());
    git(cx, move |_, g| {
        Ok(crate::gates::steering::changed(g, b, h)?)
    })
    .await
}

/// The pull request's description.
fn pull_body(cx: &Ctx<'_, '_>, head: &CommitSha, files: &[String], steering: &[Steer]) -> String {
    let t = &cx.run.ticket;
    let f = &cx.flow;
    let mut s = format!(
        "Closes #{}.\n\nVibeloop ticket **{}**",
        t.issue_number, t.id
    );
    if let Some(bp) = &f.plan.blueprint {
        s.push_str(&format!(": {}", bp.plan.title.replace('\n', " ")));
    }
    s.push_str(&format!(
        "\n\n### Definition of done: what the bot observed on `{}`\n\n",
        head.short()
    ));
    s.push_str("| check | result |\n|---|---|\n");
    if let Some(v) = &f.tests.red_proof {
        s.push_str(&format!(
            "| red proof (the new tests on the base) | {} |\n",
            v.describe()
        ));
    }
    if let Some(a) = f.code.attempts.last() {
        for g in &a.gates {
            s.push_str(&format!("| `hive/{}` | {} |\n", g.gate, g.result));
        }
    }
    if let Some(a) = f.code.attempts.last() {
        let table = crate::gates::report::verdict_table(&a.verdicts);
        if !table.is_empty() {
            s.push('\n');
            s.push_str(&table);
        }
    }
    s.push_str(&steering_note(steering, f.review.approved_by.as_deref()));
    if let Some(env) = f.code.attempts.last().and_then(|a| a.environment.as_ref()) {
        s.push_str(&format!("\n**Dependencies:** {env}.\n"));
    }
    s.push_str(&format!(
        "\nAttempts of the Builder: {}.",
        f.code.attempts.len().max(1)
    ));
    if let Some(spent) = cx.run.spent {
        s.push_str(&format!(" Budget spent: {}.", spent.describe()));
    }
    s.push_str(&format!("\n\nFiles changed ({}):\n\n", files.len()));
    for p in files.iter().take(50) {
        s.push_str(&format!("- `{}`\n", p.replace('`', "'")));
    }
    if files.len() > 50 {
        s.push_str(&format!("- … and {} more\n", files.len() - 50));
    }
    if !f.code.people.is_empty() {
        s.push_str(
            "\nCommits by people, part of this change (credited as co-authors when it lands):\n\n",
        );
        for p in &f.code.people {
            s.push_str(&format!(
                "- `{}` {} — {}\n",
                p.sha.short(),
                p.name.replace(['\n', '`', '*', '_', '|', '<', '>'], " "),
                p.summary.replace(['\n', '`', '*', '_', '|', '<', '>'], " ")
            ));
        }
    }
    s.push_str(&crate::hive::status::people_tests(&f.tests.people_tests));
    s.push_str("\nThe tests came first, from the Breaker; the code from the Builder. This pull request stays a draft until the Critic approves.\n");
    s
}

/// Writes the pull request's description again (after people's commits joined the change).
pub(super) async fn refresh_body(cx: &mut Ctx<'_, '_>, head: &CommitSha) -> Result<(), JobError> {
    let Some(pr) = cx.flow.review.pr else {
        return Ok(());
    };
    let base = base(cx).await?;
    let (b, h) = (base.oid(), head.oid());
    let files = git(cx, move |ws, g| ws.changed_paths(g, b, h)).await?;
    let steers = steering(cx, &base, head).await?;
    let body = pull_body(cx, head, &files, &steers);
    let title = format!("{}: {}", cx.run.ticket.id, cx.run.ticket.title);
    cx.run.client.update_pull(pr, &title, &body).await?;
    Ok(())
}

pub(super) fn head_sha(cx: &Ctx<'_, '_>) -> Result<CommitSha, JobError> {
    cx.flow
        .code
        .builder
        .as_ref()
        .map(|w| w.sha.clone())
        .ok_or_else(|| JobError::permanent("no Builder commit to review"))
}

/// Await approval: a person's, where the repository asks for one. A change whose green is held (it edits files that steer the tests) waits for a person
/// even where the repository needs none, and their approval is shown on the pull request.
pub(super) async fn await_approval(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    let held = cx
        .flow
        .code
        .attempts
        .last()
        .and_then(|a| a.held())
        .map(str::to_owned);
    let needed = cx.env.config.review.require_human_approval || held.is_some();
    if !needed || cx.flow.review.approved_by.is_some() {
        cx.flow.next = Node::Rebase;
        let by = cx
            .flow
            .review
            .approved_by
            .clone()
            .unwrap_or_else(|| "the Critic".into());
        if let Some(why) = &held {
            let data = serde_json::json!({ "approved_by": by, "held": why });
            cx.run.event("steering_approved", data).await;
            let head = head_sha(cx)?;
            refresh_body(cx, &head).await?;
        }
        cx.checkpoint(
            Node::AwaitApproval,
            serde_json::json!({}),
            serde_json::json!({ "approved_by": by }),
        )
        .await?;
        return Ok(Step::Next);
    }
    if let Some(why) = held {
        let detail = format!(
            "The gates passed, but {why}. Such a file can make any test report pass, so the green does not count yet: read it on the pull request, then someone with write permission comments `/hive approve` to land the change, or `/hive feedback` to have it done without."
        );
        let detail = match &cx.flow.review.approval_withdrawn {
            Some(withdrawn) => format!("{withdrawn} {detail}"),
            None => detail,
        };
        cx.settle(TaskState::AwaitingVerification, detail).await?;
        return Ok(Step::Stop);
    }
    // Said in advance when the base's protection is readable: what GitHub will want.
    let base = cx.base_branch();
    let rule = match cx.run.client.branch_rule(&base).await {
        Ok(rule) => rule,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the base branch's protection");
            None
        }
    };
    const ASK: &str = "To merge, someone with write permission comments `/hive approve` or approves the pull request.";
    let detail = match rule.as_ref().map(|r| (r.required_approvals, r.describe())) {
        Some((n, Some(needs))) if n > 0 => format!(
            "The Critic approves. `{base}` needs {needs}: approve the pull request with a review (someone with write access), and the bot merges it."
        ),
        Some((_, Some(needs))) => format!("The Critic approves. `{base}` needs {needs}. {ASK}"),
        _ => format!("The Critic approves. {ASK}"),
    };
    let detail = match &cx.flow.review.approval_withdrawn {
        Some(why) => format!("{why} {detail}"),
        None => detail,
    };
    cx.settle(TaskState::AwaitingVerification, detail).await?;
    Ok(Step::Stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pull_request_says_held_only_for_files_that_can_forge_a_pass() {
        let steer = |path: &str, how: &str| Steer {
            path: path.into(),
            how: how.into(),
        };
        let unit_tests = steering_note(&[steer("src/lib.rs", "adds `cfg(test)`")], None);
        assert!(
            !unit_tests.contains("held") && unit_tests.contains("with care"),
            "{unit_tests}"
        );
        let conftest = [steer("conftest.py", "added")];
        assert!(steering_note(&conftest, None).contains("is held (\"action required\")"));
        assert!(steering_note(&conftest, Some("alice")).contains("@alice approved them"));
        assert_eq!(steering_note(&[], Some("alice")), "");
    }
}
