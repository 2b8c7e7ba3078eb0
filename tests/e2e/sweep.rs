//! What webhooks alone can miss: a delivery GitHub could not hand to a bot that was down is
//! redelivered by the sweep when the bot starts again (under its own delivery id, processed
//! once), and tickets whose issue or pull request people changed by hand on GitHub follow —
//! at once through the webhook, or through the sweep when that webhook was missed too.

use crate::support;

use support::hive::{AUTO_YML, HIVE_YML, REPO, World, calc, happy_script};
use vibeloop::ticket::TaskState;

/// `(redelivery, status)` of each time GitHub sent delivery `guid`, oldest first.
fn attempts(w: &World, guid: &str) -> Vec<(bool, u16)> {
    w.gh.hook_deliveries()
        .into_iter()
        .filter(|d| d.guid == guid)
        .map(|d| (d.redelivery, d.status_code))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_label_missed_while_the_bot_was_down_is_redelivered_when_it_starts() {
    let mut w = World::start(happy_script(), &calc(AUTO_YML)).await;
    // A delivery the bot did get, before it went down: never asked for again.
    let other = w.gh.add_issue(REPO, "Unrelated", "no hive label here");
    let got = w.gh.label_issue(REPO, other, "bug").await;
    assert_eq!(got.status, 202, "{}", got.text);
    w.handled(&got).await;

    w.bot.kill();
    let missed = w.gh.label_issue(REPO, w.issue, "hive").await;
    assert_eq!(missed.status, 0, "nobody listens while the bot is down");
    assert!(w.ticket().await.is_none());

    w.bot.restart(&w.env).await;
    let t = w.wait_state(TaskState::Completed).await;
    assert_eq!(t.issue_number, w.issue);
    let d = w.handled(&missed).await;
    assert_eq!(d.status, "processed", "{d:?}");
    // Redelivered once, under the same delivery id, and answered; the other left alone.
    assert_eq!(
        attempts(&w, &missed.delivery),
        vec![(false, 0), (true, 202)]
    );
    assert_eq!(attempts(&w, &got.delivery), vec![(false, 202)]);
    assert!(w.bot.log().contains("redelivering a missed webhook"));
    // The redelivered label made one ticket and one pull request, like a delivered one.
    assert_eq!(w.gh.pulls(REPO).len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_the_issue_on_github_stops_the_ticket() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    let sent = w.gh.close_issue(REPO, w.issue, true).await.unwrap();
    assert_eq!(sent.status, 202, "{}", sent.text);
    let stopped = w.wait_state(TaskState::Failed).await;
    assert_eq!(stopped.key, t.key);
    let detail = stopped.detail.unwrap_or_default();
    assert!(
        detail.contains("the issue was closed on GitHub"),
        "{detail}"
    );
    let status = w.status_comment();
    assert!(
        status.contains("the issue was closed on GitHub"),
        "{status}"
    );
    // Its pull request is not merged behind the people's back.
    assert!(w.gh.pulls(REPO).iter().all(|p| !p.merged));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_merged_by_hand_while_the_bot_was_down_completes_its_ticket() {
    let mut w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.expect("a pull request");
    let tags_before = w.gh.tags(REPO).len();

    w.bot.kill();
    let merged = w.gh.merge_by_hand(REPO, pr, false).await;
    w.bot.restart(&w.env).await;

    let done = w.wait_state(TaskState::Completed).await;
    assert_eq!(done.key, t.key);
    assert!(
        w.status_comment().contains(&format!(
            "Pull request #{pr} was merged on GitHub by @maintainer"
        )),
        "{}",
        w.status_comment()
    );
    // The bot did not merge again; it tagged the snapshot on the maintainer's merge commit.
    assert_eq!(w.gh.pulls(REPO).iter().filter(|p| p.merged).count(), 1);
    let tags = w.gh.tags(REPO);
    assert_eq!(tags.len(), tags_before + 2, "{tags:?}");
    assert!(
        tags.contains(&("auto-v0.0.1".to_owned(), merged)),
        "{tags:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_closed_by_hand_stops_its_ticket() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.expect("a pull request");
    let sent = w.gh.close_pull(REPO, pr, true).await.unwrap();
    assert_eq!(sent.status, 202, "{}", sent.text);
    let stopped = w.wait_state(TaskState::Failed).await;
    let detail = stopped.detail.unwrap_or_default();
    assert!(
        detail.contains(&format!("pull request #{pr} was closed on GitHub")),
        "{detail}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn removing_the_label_while_the_bot_was_down_stops_the_ticket_at_the_next_start() {
    let mut w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    w.bot.kill();
    // The webhook fails (nobody listens) and is redelivered at start; either way the ticket stops.
    let sent =
        w.gh.unlabel_issue(REPO, w.issue, "hive", true)
            .await
            .unwrap();
    assert_eq!(sent.status, 0);
    w.bot.restart(&w.env).await;
    let stopped = w.wait_state(TaskState::Failed).await;
    let detail = stopped.detail.unwrap_or_default();
    assert!(detail.contains("the `hive` label was removed"), "{detail}");
    assert!(w.gh.pulls(REPO).iter().all(|p| !p.merged));
}
