//! Facts of a base kept for every ticket on it (issue 43): the baseline — the tests, lint and
//! typecheck on the unchanged base — is computed once per base commit and config, and a
//! second ticket on that base takes it, with the same verdicts, and runs nothing for it.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

/// The `baseline` event of ticket `key`.
async fn baseline_event(w: &World, key: vibeloop::ids::TicketKey) -> serde_json::Value {
    let store = w.bot.store().await;
    let events = store.events(key).await.unwrap();
    store.close().await;
    events
        .into_iter()
        .find(|(_, kind, _)| kind == "baseline")
        .map(|(_, _, d)| d)
        .expect("a baseline event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ticket_on_the_same_base_takes_the_first_ones_baseline() {
    let (script, files) = mul_world(HIVE_YML);
    let w = World::start(script, &files).await;
    w.label().await;
    let first = w.waiting_for_approval().await;
    let second = w.gh.add_issue(REPO, MUL_ISSUE.0, MUL_ISSUE.1);
    let labelled = w.gh.label_issue(REPO, second, "hive").await;
    assert_eq!(labelled.status, 202);
    let store = w.bot.store().await;
    let t2 = w
        .bot
        .wait_until("the second ticket's pull request", WAIT, || async {
            let all = store.tickets().await.ok()?;
            all.into_iter()
                .find(|t| t.key != first.key && t.state == TaskState::AwaitingVerification)
        })
        .await;
    store.close().await;
    // Both on the unchanged main: the first ran the baseline, the second took it.
    let (a, b) = (
        baseline_event(&w, first.key).await,
        baseline_event(&w, t2.key).await,
    );
    assert_eq!(a.get("kept"), None, "{a}");
    assert_eq!(b["kept"], true, "{b}");
    for field in ["counts", "failing", "passing", "known_findings"] {
        assert_eq!(a[field], b[field], "{field}: {a} vs {b}");
    }
    // The verdicts stand: the second change is proved red and then green as the first was.
    let passed: Vec<_> = w
        .gh
        .check_runs(REPO)
        .into_iter()
        .filter(|c| c.name == "hive/test" && Some(c.head_sha.as_str()) == t2.head_sha.as_deref())
        .map(|c| c.conclusion.unwrap_or_default())
        .collect();
    assert_eq!(passed, ["success"]);
}
