//! Landing under real branch protection, end to end: a base that requires pull requests, an
//! approving review and the `hive/test` check. The bot lands through the pull request's own
//! merge (`PUT …/pulls/{n}/merge`), waits for a missing review or check and lands when it
//! arrives, rebases again when a strict rule finds the base moved, completes and tags a pull
//! request a person merged, and honours an approval sent the moment the pull request opens.

use crate::support;

use std::time::Duration;

use support::fake_github::{Fault, Protection};
use support::hive::*;
use vibeloop::ticket::{MemoryStability, TaskState};

/// `main` as most real repositories protect it.
fn protect(w: &World, strict: bool) {
    w.gh.protect(
        REPO,
        "main",
        Protection::like_main(1, &["hive/test"], strict),
    );
}

/// The bot's merge requests, as `(merge_method, sha)`.
fn merges(w: &World) -> Vec<(String, String)> {
    w.gh.requests()
        .into_iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/merge"))
        .map(|r| {
            let b = r.body.unwrap_or_default();
            let text = |k: &str| b[k].as_str().unwrap_or_default().to_owned();
            (text("merge_method"), text("sha"))
        })
        .collect()
}

/// Waits until the ticket's status says it waits to merge.
async fn waiting_to_merge(w: &World) -> String {
    w.bot
        .wait_until("the landing to wait", WAIT, || async {
            let t = w.ticket().await?;
            let d = t.detail.unwrap_or_default();
            (t.state == TaskState::AwaitingVerification && d.starts_with("Waiting to merge"))
                .then_some(d)
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approving_review_lands_it_through_the_pull_request_and_tags_the_merge() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    protect(&w, false);
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    // What GitHub will want is said before anyone tries.
    let prompt = t.detail.unwrap_or_default();
    assert!(
        prompt.contains(
            "`main` needs 1 approving review from someone with write access and `hive/test` passing"
        ) && prompt.contains("approve the pull request with a review"),
        "{prompt}"
    );
    let (_, sent) =
        w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
            .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let done = w.wait_state(TaskState::Completed).await;

    let main = w.gh.branch_sha(REPO, "main").unwrap();
    let pull = w.gh.pull(REPO, pr).unwrap();
    assert!(pull.merged && pull.state == "closed", "{pull:?}");
    assert_eq!(pull.merge_commit_sha.as_deref(), Some(main.as_str()));
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    // Landed with `rebase`, the default, on exactly the commit the gates checked: GitHub
    // committed it anew on main, so main is not that commit, but has its tree.
    let head = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    assert_eq!(merges(&w), [("rebase".to_owned(), head.clone())]);
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let tree = |sha: &str| {
        git.find_commit(git2::Oid::from_str(sha).unwrap())
            .unwrap()
            .tree_id()
    };
    assert_ne!(main, head);
    assert_eq!(tree(&main), tree(&head));
    let passed: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.head_sha == head && c.name == "hive/test")
            .map(|c| c.conclusion.unwrap_or_default())
            .collect();
    assert_eq!(passed, ["success"]);
    // The base did not move: the rebased commit has the tree the Encounter's gates passed
    // on, so their verdicts are its check runs, each saying so, and no gate ran again.
    let encounter =
        w.gh.check_runs(REPO)
            .into_iter()
            .find(|c| c.name == "hive/test" && c.head_sha != head)
            .map(|c| c.head_sha)
            .expect("the Encounter's test run");
    assert_eq!(tree(&encounter), tree(&head));
    let on_head: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.head_sha == head && c.name.starts_with("hive/"))
            .collect();
    assert!(!on_head.is_empty());
    for c in &on_head {
        let summary = c.summary.clone().unwrap_or_default();
        assert!(
            summary.contains("changed no file")
                && summary.contains(&encounter)
                && summary.contains("It was not run again."),
            "{}: {summary}",
            c.name
        );
    }
    let store = w.bot.store().await;
    let events = store.events(done.key).await.unwrap();
    store.close().await;
    let regate_gates = events
        .iter()
        .filter(|(_, kind, d)| {
            kind == "gate" && d["run"].as_str().is_some_and(|r| r.contains(":regate-"))
        })
        .count();
    assert_eq!(regate_gates, 0, "a gate ran again on the same tree");
    assert!(
        events
            .iter()
            .any(|(_, kind, d)| kind == "regate_carried" && d["from"] == encounter.as_str())
    );
    // The snapshot is the commit GitHub's merge made.
    let tags = w.gh.tags(REPO);
    assert!(
        tags.contains(&("auto-v0.0.1".to_owned(), main.clone())),
        "{tags:?}"
    );
    assert!(
        tags.contains(&("LATEST_STABLE".to_owned(), main.clone())),
        "{tags:?}"
    );
    assert!(done.detail.unwrap().contains("auto-v0.0.1"));
    let store = w.bot.store().await;
    let memory = store.ticket_memory(done.key).await.unwrap();
    store.close().await;
    assert!(
        !memory.is_empty()
            && memory
                .iter()
                .all(|m| m.stability == MemoryStability::Canonical),
        "{memory:?}"
    );
    // The bot never tried to move the protected branch itself.
    assert!(
        !w.gh
            .requests()
            .iter()
            .any(|r| r.method == "PATCH" && r.path.ends_with("/git/refs/heads/main")),
    );
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squash_makes_one_commit_named_after_the_pull_request() {
    let yml = format!("{HIVE_YML}merge: {{ method: squash }}\n");
    let w = World::start(happy_script(), &calc(&yml)).await;
    protect(&w, false);
    let base = w.gh.branch_sha(REPO, "main").unwrap();
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.wait_state(TaskState::Completed).await;
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let c = git
        .find_commit(git2::Oid::from_str(&main).unwrap())
        .unwrap();
    assert_eq!(
        c.parent_ids().collect::<Vec<_>>(),
        [git2::Oid::from_str(&base).unwrap()]
    );
    let message = c.message().unwrap_or_default();
    assert!(
        message.starts_with(&format!("T-1: add() subtracts (#{pr})"))
            && message.contains(&format!("Closes #{}.", w.issue)),
        "{message}"
    );
    assert_eq!(merges(&w)[0].0, "squash");
    assert!(w.gh.pull(REPO, pr).unwrap().merged);
    assert!(w.gh.tags(REPO).contains(&("auto-v0.0.1".to_owned(), main)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_review_is_waited_for_and_a_writers_review_lands_it() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    protect(&w, false);
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    // `/hive approve` satisfies the bot, not GitHub: it needs a review.
    w.say("/hive approve").await;
    let waiting = waiting_to_merge(&w).await;
    assert!(
        waiting.contains("At least 1 approving review is required")
            && waiting.contains("`main` needs 1 approving review from someone with write access")
            && waiting.contains(
                "An approving review from someone with write access lets the bot land it."
            ),
        "{waiting}"
    );
    assert!(w.status_comment().contains("Waiting to merge"));
    assert!(
        !w.gh
            .labels(REPO, w.issue)
            .contains(&"hive:needs-human".to_owned())
    );
    // A reader's approval counts for neither the bot nor GitHub.
    w.gh.set_permission(REPO, "reader", "read");
    let (_, sent) = w.gh.review_pull(REPO, pr, "reader", "approved", "").await;
    let handled = w.handled(&sent).await;
    assert!(
        handled.detail.unwrap_or_default().contains("refused"),
        "the reader's review was not refused"
    );
    assert_eq!(
        w.ticket().await.unwrap().state,
        TaskState::AwaitingVerification
    );
    assert!(!w.gh.pull(REPO, pr).unwrap().merged);
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.wait_state(TaskState::Completed).await;
    assert!(w.gh.pull(REPO, pr).unwrap().merged);
    assert_eq!(merges(&w).len(), 2, "one refused, one landed");
    assert_eq!(
        tasks_of(&w.llm, "builder").len(),
        1,
        "waiting rebuilt nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_that_moves_during_the_wait_is_rebased_regated_and_landed() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    protect(&w, true);
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    w.say("/hive approve").await;
    waiting_to_merge(&w).await;
    let first = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    w.gh.push_commit(REPO, "main", &[("README.md", "# widgets\n")], "Docs");
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "README.md").as_deref(),
        Some("# widgets\n")
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    // Refused for the review, refused as out of date, landed after the second rebase.
    let second = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    assert_ne!(first, second);
    let m = merges(&w);
    assert_eq!(
        m.iter().map(|(_, sha)| sha.as_str()).collect::<Vec<_>>(),
        [first.as_str(), first.as_str(), second.as_str()]
    );
    let regated: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/test" && c.head_sha == second)
            .map(|c| c.conclusion.unwrap_or_default())
            .collect();
    assert_eq!(regated, ["success"]);
    // The base moved: the gates ran again on the new tree, not carried over.
    let ran =
        w.gh.check_runs(REPO)
            .into_iter()
            .find(|c| c.name == "hive/test" && c.head_sha == second)
            .and_then(|c| c.summary)
            .unwrap_or_default();
    assert!(!ran.contains("It was not run again."), "{ran}");
    assert!(w.gh.pull(REPO, pr).unwrap().merged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_of_another_ci_are_waited_for_and_their_events_land_it() {
    let w = World::start(happy_script(), &calc(AUTO_YML)).await;
    // No pull request rule: the Critic's approval is enough, but two other CIs must pass.
    w.gh.protect(
        REPO,
        "main",
        Protection::checks(&["hive/test", "hive/security", "ci/external", "ci/legacy"]),
    );
    w.label().await;
    let ci_waits = |what: &'static str| {
        let w = &w;
        async move {
            w.bot
                .wait_until("the landing to wait for the CI", WAIT, || async {
                    let d = w.ticket().await?.detail.unwrap_or_default();
                    d.contains(what).then_some(d)
                })
                .await
        }
    };
    let waiting =
        ci_waits("waits for `ci/external` (not reported yet), `ci/legacy` (not reported yet)")
            .await;
    assert!(
        waiting.contains("The bot lands it once they pass."),
        "{waiting}"
    );
    let pr = w.ticket().await.unwrap().pr_number.unwrap();
    let head = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    // One passes as a check run of another App, the other as a commit status.
    let sent =
        w.gh.complete_check(REPO, &head, "ci/external", "success")
            .await;
    let handled = w.handled(&sent).await;
    assert!(
        handled
            .detail
            .unwrap_or_default()
            .contains("tries to merge again"),
        "the check's completion did not wake the ticket"
    );
    ci_waits("waits for `ci/legacy` (not reported yet)").await;
    assert!(!w.gh.pull(REPO, pr).unwrap().merged);
    let sent = w.gh.post_status(REPO, &head, "ci/legacy", "success").await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(
        tasks_of(&w.llm, "builder").len(),
        1,
        "waiting for checks rebuilt nothing"
    );
    // No merge was tried before the CI passed.
    assert_eq!(merges(&w).len(), 1, "{:?}", merges(&w));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_merged_by_hand_is_tagged_and_completed() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    protect(&w, false);
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    let merged = w.gh.merge_by_hand(REPO, pr, true).await;
    let done = w.wait_state(TaskState::Completed).await;
    let detail = done.detail.unwrap_or_default();
    assert!(
        detail.contains(&format!(
            "Pull request #{pr} was merged on GitHub by @{MAINTAINER}"
        )) && detail.contains("auto-v0.0.1"),
        "{detail}"
    );
    let tags = w.gh.tags(REPO);
    assert!(
        tags.contains(&("auto-v0.0.1".to_owned(), merged.clone())),
        "{tags:?}"
    );
    assert!(
        tags.contains(&("LATEST_STABLE".to_owned(), merged)),
        "{tags:?}"
    );
    assert!(merges(&w).is_empty(), "the bot merged nothing itself");
    let store = w.bot.store().await;
    let memory = store.ticket_memory(done.key).await.unwrap();
    store.close().await;
    assert!(
        memory
            .iter()
            .all(|m| m.stability == MemoryStability::Canonical)
    );
    assert!(
        w.status_comment()
            .contains("was merged on GitHub by @maintainer")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_the_moment_the_pull_request_opens_is_honoured() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    // GitHub opens the pull request, and answers the bot 4 s later: for those seconds the pull
    // request exists and the bot has not stored its number.
    w.gh.inject(Fault::late("POST", "/pulls", Duration::from_secs(4)));
    w.label().await;
    let pr = w
        .bot
        .wait_until("the pull request", WAIT, || async {
            w.gh.pulls(REPO).into_iter().next()
        })
        .await;
    assert_eq!(w.ticket().await.unwrap().pr_number, None);
    let (id, sent) =
        w.gh.comment_on(REPO, pr.number, MAINTAINER, "/hive approve")
            .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let marker = format!("<!-- vibeloop:reply comment:{id}#");
    let reply = w
        .bot
        .wait_until("the bot's reply", WAIT, || async {
            w.gh.comments(REPO, pr.number)
                .into_iter()
                .find(|c| c.body.contains(&marker))
                .map(|c| c.body)
        })
        .await;
    assert!(reply.contains("approved: T-1 goes on."), "{reply}");
    // Held until the Critic approved, then applied: no second approval was asked for.
    w.wait_state(TaskState::Completed).await;
    assert!(w.gh.pull(REPO, pr.number).unwrap().merged);
}
