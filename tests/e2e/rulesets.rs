//! Landing where rulesets hold the branches (GitHub's rules in force for a branch, beside or
//! instead of classic protection): the bot says which rules hold the landing, and a push the
//! rules refuse stops the ticket at once with GitHub's own words, never tried again.

use crate::support;

use support::fake_github::{Rule, Ruleset};
use support::hive::*;
use vibeloop::ticket::TaskState;

/// The bot's pushes (`git-receive-pack` requests).
fn pushes(w: &World) -> usize {
    w.gh.requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/git-receive-pack"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_a_ruleset_refuses_stops_the_ticket_at_once_naming_the_rule() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 7,
            name: "signed everywhere".into(),
            branches: vec!["~ALL".into()],
            rules: vec![Rule::Signatures],
        },
    );
    w.label().await;
    let t = w.wait_state(TaskState::Failed).await;
    let status = w.status_comment();
    assert!(
        status.contains("GH013") && status.contains("Commits must have verified signatures."),
        "{status}"
    );
    assert!(status.contains("bypass list"), "{status}");
    // Refused once per branch, not tried again: the Breaker's and the Builder's first pushes.
    let n = pushes(&w);
    assert!((1..=2).contains(&n), "{n} pushes; {t:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_landing_waits_for_what_the_rulesets_over_the_base_ask_and_says_so() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 9,
            name: "main".into(),
            branches: vec!["main".into()],
            rules: vec![
                Rule::PullRequest { approvals: 2 },
                Rule::StatusChecks {
                    contexts: vec!["hive/test".into()],
                    strict: false,
                },
                Rule::LinearHistory,
            ],
        },
    );
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    // What the rulesets ask is said before anyone tries.
    let prompt = t.detail.unwrap_or_default();
    assert!(
        prompt.contains(
            "`main` needs 2 approving reviews from people with write access, `hive/test` passing \
             and a linear history (rulesets: 9 of acme/widgets)"
        ),
        "{prompt}"
    );
    // One approval: GitHub, under the ruleset, refuses the merge, and the bot waits for more.
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    let detail = w
        .bot
        .wait_until("the landing to wait", WAIT, || async {
            let t = w.ticket().await?;
            let d = t.detail.unwrap_or_default();
            d.starts_with("Waiting to merge").then_some(d)
        })
        .await;
    assert!(detail.contains("2 approving reviews"), "{detail}");
    assert!(w.gh.pull(REPO, pr).is_some_and(|p| !p.merged));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_that_requires_a_merge_queue_is_never_merged_directly() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 11,
            name: "queue".into(),
            branches: vec!["main".into()],
            rules: vec![Rule::MergeQueue],
        },
    );
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    assert!(
        t.detail
            .unwrap_or_default()
            .contains("`main` needs landing through the merge queue"),
        "{}",
        w.status_comment()
    );
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    let t = w.wait_state(TaskState::HumanNeeded).await;
    let why = t.detail.unwrap_or_default();
    assert!(
        why.contains("`main` requires a merge queue") && why.contains("add it to the queue"),
        "{why}"
    );
    let merges =
        w.gh.requests()
            .into_iter()
            .filter(|r| r.method == "PUT" && r.path.ends_with("/merge"))
            .count();
    assert_eq!(merges, 0);
}
