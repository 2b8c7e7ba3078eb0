//! Landing where the base's rules require a merge queue: the bot adds the approved pull request
//! to the queue (never merging it directly), reports its gates on the merge group GitHub makes,
//! and tags what the queue merged; a group the gates fail leaves the queue and the change goes
//! back to the Builder with what failed.

use crate::support;

use super::rulesets::bot_commits;
use support::fake_github::{Rule, Ruleset};
use support::hive::*;
use vibeloop::ticket::TaskState;

/// A ruleset over `main` requiring a merge queue whose groups need `hive/test`.
fn queue_over_main() -> Ruleset {
    Ruleset {
        id: 21,
        name: "queue".into(),
        branches: vec!["main".into()],
        rules: vec![
            Rule::MergeQueue,
            Rule::StatusChecks {
                contexts: vec!["hive/test".into()],
                strict: false,
            },
        ],
    }
}

/// The GraphQL operations the bot sent, by name, in order.
fn graphql_ops(w: &World) -> Vec<String> {
    let ops = ["enqueuePullRequest", "dequeuePullRequest", "isInMergeQueue"];
    w.gh.requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == "/graphql")
        .filter_map(|r| {
            let query = r.body?["query"].as_str()?.to_owned();
            ops.iter()
                .find(|op| query.contains(*op))
                .map(|op| op.to_string())
        })
        .collect()
}

/// A ticket approved and waiting in `main`'s held merge queue: the world and its pull request.
async fn approved_in_a_held_queue() -> (World, u64) {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(REPO, queue_over_main());
    w.gh.hold_queue(REPO);
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    w.bot
        .wait_until("the pull request queued", WAIT, || async {
            (w.gh.queued(REPO) == [pr]).then_some(())
        })
        .await;
    (w, pr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_lands_through_the_merge_queue_signed_and_signed_off_and_is_tagged() {
    // Even where the repository asks for fast-forwards: only the queue moves the base.
    let yml = format!("{HIVE_YML}merge: {{ method: fast-forward }}\n");
    let w = World::start(happy_script(), &calc(&yml)).await;
    w.gh.add_ruleset(REPO, queue_over_main());
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 22,
            name: "signed and signed off".into(),
            branches: vec!["~ALL".into()],
            rules: vec![
                Rule::Signatures,
                Rule::MessagePattern {
                    name: String::new(),
                    pattern: "Signed-off-by: ".into(),
                },
            ],
        },
    );
    let first = w.gh.branch_sha(REPO, "main").unwrap();
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    let prompt = t.detail.unwrap_or_default();
    assert!(
        prompt.contains("landing through the merge queue"),
        "{prompt}"
    );
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    let t = w.wait_state(TaskState::Completed).await;
    // Queued once, merged by the queue: never through the merge API.
    assert_eq!(graphql_ops(&w), ["enqueuePullRequest"]);
    let merges =
        w.gh.requests()
            .into_iter()
            .filter(|r| r.method == "PUT" && r.path.ends_with("/merge"))
            .count();
    assert_eq!(merges, 0);
    assert!(w.gh.queued(REPO).is_empty());
    // What landed is the group the gates passed on, and it is tagged.
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    let p = w.gh.pull(REPO, pr).unwrap();
    assert!(p.merged && p.merge_commit_sha.as_deref() == Some(main.as_str()));
    let gated = w.gh.check_runs(REPO).into_iter().any(|c| {
        c.head_sha == main && c.name == "hive/test" && c.conclusion.as_deref() == Some("success")
    });
    assert!(gated, "hive/test passed on the merge group {main}");
    assert!(
        w.gh.tags(REPO)
            .contains(&("auto-v0.0.1".to_owned(), main.clone())),
        "{:?}",
        w.gh.tags(REPO)
    );
    let detail = t.detail.unwrap_or_default();
    assert!(
        detail.contains("merged by `main`'s merge queue"),
        "{detail}"
    );
    w.assert_on_main(&[("calc.py", CALC_FIXED)]);
    // Every commit the bot made is GitHub's (signed) and signed off.
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    for (branch, oid) in bot_commits(&w, &git, &first) {
        assert!(git.extract_signature(&oid, None).is_ok(), "{branch}: {oid}");
        let commit = git.find_commit(oid).unwrap();
        let message = commit.message().unwrap_or_default();
        assert!(
            message.contains("Signed-off-by: vibeloop[bot]"),
            "{message}"
        );
    }
}

/// A test the base gains while the change waits in the queue: it passes on the base and fails
/// with the change (`add(2, 2)` is 0 only while `add` subtracts).
const TEST_ZERO: &str = "import unittest\n\nfrom calc import add\n\n\nclass Zero(unittest.TestCase):\n    def test_twice_two(self):\n        self.assertEqual(add(2, 2), 0)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_group_the_gates_fail_leaves_the_queue_and_goes_back_to_the_builder() {
    let (w, pr) = approved_in_a_held_queue().await;
    // The base moves under the queue; its group is made on it.
    let test = [("test_zero.py", TEST_ZERO)];
    w.gh.push_commit(REPO, "main", &test, "Pin add(2, 2)");
    w.gh.release_queue(REPO).await;
    let task = w
        .bot
        .wait_until("the Builder's second attempt", WAIT, || async {
            tasks_of(&w.llm, "builder").get(1).cloned()
        })
        .await;
    assert!(task.contains("test_zero"), "{task}");
    // The gates failed on the group, and the bot took it out of the queue.
    let group_failed = w.gh.check_runs(REPO).into_iter().any(|c| {
        c.name == "hive/test"
            && c.conclusion.as_deref() == Some("failure")
            && c.external_id
                .as_deref()
                .is_some_and(|id| id.contains(":group-"))
    });
    assert!(group_failed, "{:?}", w.gh.check_runs(REPO));
    assert_eq!(
        graphql_ops(&w),
        ["enqueuePullRequest", "dequeuePullRequest"]
    );
    assert!(w.gh.queued(REPO).is_empty());
    assert!(w.checkpoints().await.iter().any(|c| c == "queue"));
    // Nothing landed.
    assert!(!w.gh.pull(REPO, pr).unwrap().merged);
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_BUGGY)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_a_person_takes_out_of_the_queue_waits_and_retry_queues_it_again() {
    let (w, pr) = approved_in_a_held_queue().await;
    let queued = || async { (w.gh.queued(REPO) == [pr]).then_some(()) };
    w.gh.dequeue_by_hand(REPO, pr, MAINTAINER).await;
    let t = w.wait_state(TaskState::HumanNeeded).await;
    let why = t.detail.unwrap_or_default();
    assert!(
        why.contains("out of `main`'s merge queue: @maintainer removed it")
            && why.contains("`/hive retry`"),
        "{why}"
    );
    w.say("/hive retry").await;
    w.bot.wait_until("queued again", WAIT, queued).await;
    assert_eq!(
        graphql_ops(&w),
        ["enqueuePullRequest", "enqueuePullRequest"]
    );
    assert!(!w.gh.pull(REPO, pr).unwrap().merged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_the_queue_finds_in_conflict_is_rebased_not_handed_to_a_person() {
    let (w, pr) = approved_in_a_held_queue().await;
    // Someone lands another change to the same line: the queue cannot make the group.
    let theirs = [("calc.py", "def add(a, b):\n    return b - a\n")];
    w.gh.push_commit(REPO, "main", &theirs, "Swap add's operands");
    w.gh.release_queue(REPO).await;
    // GitHub says MERGE_CONFLICT; the bot rebases onto main and meets the conflict itself.
    let flow = w
        .bot
        .wait_until("the rebase to meet the conflict", WAIT, || async {
            let t = w.ticket().await?;
            let store = w.bot.store().await;
            let flow = vibeloop::hive::flow::load(&store, t.key).await.ok();
            store.close().await;
            flow.filter(|f| f.land.conflict.is_some())
        })
        .await;
    assert_eq!(flow.land.relands, 1, "one rebase for the queue's conflict");
    assert!(flow.land.queue.is_none());
    let t = w.ticket().await.unwrap();
    let detail = t.detail.unwrap_or_default();
    assert!(!detail.contains("out of `main`'s merge queue"), "{detail}");
    // Out of the queue by GitHub, not by the bot; nothing landed.
    assert_eq!(graphql_ops(&w), ["enqueuePullRequest"]);
    assert!(w.gh.queued(REPO).is_empty());
    assert!(!w.gh.pull(REPO, pr).unwrap().merged);
}
