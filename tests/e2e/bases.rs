//! Tickets on another base branch than the default: asked for in the issue (`base:`) or with
//! `/hive base` while the ticket plans. The pull request, the landing and the snapshot tags
//! (a series of that base's own) follow it; a base the App cannot read starts nothing.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

const BRANCH: &str = "release/1.x";

/// A maintenance branch: `main` and a file of its own.
fn maintenance(w: &World) {
    w.gh.push_commit(REPO, BRANCH, &[("NOTES.md", "1.x only\n")], "1.x notes");
}

/// Labels the issue with `body` as its text; the comment that says the label started nothing.
async fn label_refused(w: &World, body: &str) -> String {
    w.gh.edit_issue(REPO, w.issue, "add() subtracts", body)
        .await;
    w.label().await;
    w.bot
        .wait_until("the refusal", WAIT, || async {
            w.gh.comments(REPO, w.issue)
                .into_iter()
                .find(|c| c.body.contains("starts nothing"))
                .map(|c| c.body)
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_that_asks_for_a_base_lands_there_under_that_bases_own_tags() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    maintenance(&w);
    let body = "`add(2, 3)` returns -1 on 1.x too.\n\nbase: release/1.x\n";
    w.gh.edit_issue(REPO, w.issue, "add() subtracts", body)
        .await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    assert_eq!(w.gh.pull(REPO, pr).unwrap().base, BRANCH);
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    let t = w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, BRANCH, "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, BRANCH, "NOTES.md").as_deref(),
        Some("1.x only\n")
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_BUGGY),
        "main is not touched"
    );
    let head = w.gh.branch_sha(REPO, BRANCH).unwrap();
    let tags = w.gh.tags(REPO);
    let at = |name: &str| tags.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone());
    assert_eq!(
        at("auto-release-1.x-v0.0.1"),
        Some(head.clone()),
        "{tags:?}"
    );
    assert_eq!(at("LATEST_STABLE-release-1.x"), Some(head), "{tags:?}");
    assert!(
        at("auto-v0.0.1").is_none() && at("LATEST_STABLE").is_none(),
        "{tags:?}"
    );
    assert!(t.detail.unwrap().contains("auto-release-1.x-v0.0.1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_the_app_cannot_read_starts_nothing_and_says_why() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let body = "Broken on 9.x.\n\nbase: release/9.x\n";
    let said = label_refused(&w, body).await;
    assert!(
        said.contains("has no branch `release/9.x` that the App can read")
            && said.contains("Fix `base:` in the issue"),
        "{said}"
    );
    assert!(w.ticket().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_name_of_any_length_is_refused_in_a_few_words() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let body = format!("base: `{}`\n", "x<".repeat(3000));
    let said = label_refused(&w, &body).await;
    assert!(said.contains("is no branch name"), "{said}");
    assert!(said.len() < 600, "{} bytes: {said}", said.len());
    assert!(w.ticket().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hive_base_moves_a_ticket_that_plans_and_is_refused_once_code_is_written() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    maintenance(&w);
    let sent = w.gh.label_issue(REPO, w.issue, "hive:plan").await;
    assert_eq!(sent.status, 202);
    w.wait_state(TaskState::Blocked).await;
    let architect = w.llm.requests("architect").len();
    // A branch that does not exist is refused, naming it; nothing changes.
    let id = w.say("/hive base release/9.x").await;
    let reply = w.reply_to(id).await;
    assert!(reply.contains("no branch `release/9.x`"), "{reply}");
    let id = w.say("/hive base release/1.x").await;
    let reply = w.reply_to(id).await;
    assert!(reply.contains("will land on `release/1.x`"), "{reply}");
    // It plans again, on that branch.
    w.bot
        .wait_until("the plan on the new base", WAIT, || async {
            let t = w.ticket().await?;
            (w.llm.requests("architect").len() > architect && t.state == TaskState::Blocked)
                .then_some(())
        })
        .await;
    let id = w.say("/hive approve").await;
    w.reply_to(id).await;
    let t = w.waiting_for_approval().await;
    assert_eq!(t.chosen_base.as_deref(), Some(BRANCH));
    let pr = w.gh.pull(REPO, t.pr_number.unwrap()).unwrap();
    assert_eq!(pr.base, BRANCH);
    // The Builder's branch starts from release/1.x: it has that branch's own file.
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "NOTES.md").as_deref(),
        Some("1.x only\n")
    );
    // With the code written, the base stays.
    let id = w.say("/hive base main").await;
    let reply = w.reply_to(id).await;
    assert!(reply.contains("past its plan"), "{reply}");
}
