//! People's pushes and commands while the hive works: a `push` to `feat/T-n` stops the Builder
//! at its next model call and its attempt starts again from their commit; tests a person
//! changes become the Breaker's (proved red again, locked as theirs); an approval and a push
//! that arrive during a step are applied in the order GitHub sent them; `/hive` works in review
//! threads as in comments.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

/// The kinds of the ticket's timeline events.
async fn event_kinds(w: &World) -> Vec<(String, serde_json::Value)> {
    let t = w.ticket().await.expect("ticket");
    let store = w.bot.store().await;
    let events = store.events(t.key).await.unwrap();
    store.close().await;
    events.into_iter().map(|(_, k, v)| (k, v)).collect()
}

/// A person who may push: write permission.
const BOB: &str = "bob";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_stops_the_builder_at_its_next_call_and_the_attempt_starts_from_it() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.set_permission(REPO, BOB, "write");
    w.llm.hold("builder");
    w.label().await;
    w.bot
        .wait_until("the Builder's first call", WAIT, || async {
            (w.llm.waiting() > 0).then_some(())
        })
        .await;
    let readme = "# calc\n";
    let (theirs, sent) =
        w.gh.push_as(
            REPO,
            "feat/T-1",
            &[("README.md", readme)],
            "Start the docs",
            BOB,
        )
        .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let d = w.handled(&sent).await;
    assert_eq!(d.status, "processed", "{:?}", d.detail);
    w.llm.release();
    let pr = w.waiting_for_approval().await.pr_number.unwrap();

    // The first conversation asked once (its next call was the checkpoint that stopped it);
    // the attempt then ran whole from the person's commit: 1 + 2 calls. Without the
    // checkpoint the first conversation would have finished (2 calls) and a refused push
    // would have run it again (2 more).
    assert_eq!(w.llm.requests("builder").len(), 3);
    let events = event_kinds(&w).await;
    let stopped: Vec<_> = events
        .iter()
        .filter(|(k, _)| k == "step_interrupted")
        .collect();
    assert_eq!(stopped.len(), 1, "{events:?}");
    assert!(
        stopped[0].1["why"]
            .as_str()
            .unwrap()
            .contains(&format!("@{BOB} pushed {}", &theirs[..7])),
        "{:?}",
        stopped[0].1
    );
    // Built on their commit, never pushed over it.
    assert!(w.gh.branch_contains(REPO, "feat/T-1", &theirs));

    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.wait_state(TaskState::Completed).await;
    w.assert_on_main(&[("README.md", readme), ("calc.py", CALC_FIXED)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tests_a_person_changes_are_proved_red_again_and_locked_as_theirs() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.set_permission(REPO, BOB, "write");
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    let breaker_tests = w.gh.branch_sha(REPO, "test/T-1").unwrap();
    // Bob adds a case to the Breaker's test file on the pull request's branch, then approves.
    let more =
        format!("{NEW_TESTS}\n    def test_zero(self):\n        self.assertEqual(add(0, 4), 4)\n");
    let (_, sent) =
        w.gh.push_as(
            REPO,
            "feat/T-1",
            &[("test_add_more.py", &more)],
            "One more case",
            BOB,
        )
        .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.wait_state(TaskState::Completed).await;

    // Their version landed, and the test lock did not hold it against the change.
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "test_add_more.py")
            .as_deref(),
        Some(more.as_str())
    );
    // The tests' branch holds their version now, and the red proof ran again on it.
    let tests = w.gh.branch_sha(REPO, "test/T-1").unwrap();
    assert_ne!(tests, breaker_tests);
    assert_eq!(
        w.gh.file_on_branch(REPO, "test/T-1", "test_add_more.py")
            .as_deref(),
        Some(more.as_str())
    );
    let red: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/red-proof")
            .collect();
    assert!(
        red.iter()
            .any(|c| c.head_sha == tests && c.conclusion.as_deref() == Some("success")),
        "{red:?}"
    );
    let status = w.status_comment();
    assert!(
        status.contains("Tests changed by")
            && status.contains("`test_add_more.py`")
            && status.contains("the test lock and the red proof were taken again"),
        "{status}"
    );
    let body = w.gh.pull(REPO, pr).unwrap().body;
    assert!(body.contains("Tests changed by"), "{body}");
}

/// `/hive approve` and Bob's push, both while the Critic works: applied in the order they were
/// sent. `push_first` decides that order.
async fn approve_and_push(push_first: bool) -> World {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.set_permission(REPO, BOB, "write");
    w.llm.hold("critic");
    w.label().await;
    w.bot
        .wait_until("the Critic's call", WAIT, || async {
            (w.llm.waiting() > 0).then_some(())
        })
        .await;
    let push = async {
        let (_, sent) =
            w.gh.push_as(REPO, "feat/T-1", &[("README.md", "# calc\n")], "Docs", BOB)
                .await;
        assert_eq!(sent.status, 202, "{}", sent.text);
        w.handled(&sent).await;
    };
    let approve = async {
        let id = w.say("/hive approve").await;
        w.reply_to(id).await;
    };
    if push_first {
        push.await;
        approve.await;
    } else {
        approve.await;
        push.await;
    }
    w.llm.release();
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_after_an_approval_withdraws_it_and_says_so() {
    let w = approve_and_push(false).await;
    let t = w
        .bot
        .wait_until("the approval to be asked again", WAIT, || async {
            w.ticket().await.filter(|t| {
                t.state == TaskState::AwaitingVerification
                    && t.detail
                        .as_deref()
                        .unwrap_or("")
                        .contains("The Critic approves.")
            })
        })
        .await;
    let detail = t.detail.unwrap_or_default();
    assert!(
        detail.contains(&format!("@{BOB} pushed"))
            && detail.contains(&format!("after @{MAINTAINER} approved")),
        "{detail}"
    );
    assert!(!w.gh.pull(REPO, t.pr_number.unwrap()).unwrap().merged);
    // Approved again, it lands with Bob's commit.
    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "README.md").as_deref(),
        Some("# calc\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_after_a_push_lands_the_push() {
    let w = approve_and_push(true).await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "README.md").as_deref(),
        Some("# calc\n")
    );
    let events = event_kinds(&w).await;
    assert!(
        !events.iter().any(|(k, _)| k == "approval_withdrawn"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hive_commands_work_in_review_threads() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.set_permission(REPO, "reader", "read");
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();

    // A reader may not approve: refused in the thread, nothing happens.
    let (first, sent) =
        w.gh.comment_on_line(REPO, pr, "reader", "calc.py", 2, "/hive approve", None)
            .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let reply = |to: u64| {
        let w = &w;
        async move {
            let marker = format!("<!-- vibeloop:reply review-comment:{to}#");
            w.bot
                .wait_until("the reply in the thread", WAIT, || async {
                    w.gh.review_comments(REPO, pr)
                        .into_iter()
                        .find(|c| c.body.contains(&marker))
                })
                .await
        }
    };
    let refused = reply(first).await;
    assert_eq!(
        refused.in_reply_to,
        Some(first),
        "a reply in the same thread"
    );
    assert!(
        refused
            .body
            .contains("@reader `/hive approve` needs write permission"),
        "{}",
        refused.body
    );
    assert_eq!(w.gh.review_comment_reactions(REPO, first), ["-1"]);
    assert_eq!(
        w.ticket().await.unwrap().state,
        TaskState::AwaitingVerification
    );

    // The maintainer answers in the thread: a reply to a reply goes to the thread's first
    // comment, and the approval lands the change.
    let (second, _) =
        w.gh.comment_on_line(
            REPO,
            pr,
            MAINTAINER,
            "calc.py",
            2,
            "/hive approve",
            Some(first),
        )
        .await;
    let approved = reply(second).await;
    assert_eq!(approved.in_reply_to, Some(first));
    assert!(
        approved.body.contains("approved: T-1 goes on."),
        "{}",
        approved.body
    );
    assert_eq!(w.gh.review_comment_reactions(REPO, second), ["+1"]);
    w.wait_state(TaskState::Completed).await;
    // One reply per command, both in the thread; nothing said on the issue but the status.
    let replies: Vec<_> =
        w.gh.review_comments(REPO, pr)
            .into_iter()
            .filter(|c| c.body.contains("<!-- vibeloop:reply review-comment:"))
            .collect();
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert!(replies.iter().all(|c| c.in_reply_to == Some(first)));
    assert_eq!(
        w.gh.comments(REPO, w.issue).len(),
        1,
        "only the status comment"
    );
}
