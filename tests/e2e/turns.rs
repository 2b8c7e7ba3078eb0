//! Taking turns at the workers: with every worker busy, a ticket whose pull request has opened
//! gives its worker to the job that waits for one before its own review and landing.

use crate::support;

use support::hive::{AUTO_YML, INSTALLATION, WAIT, World, calc, happy_script};
use vibeloop::ids::RepoName;
use vibeloop::ticket::TaskState;

const OTHER: &str = "acme/gadgets";

#[tokio::test(flavor = "multi_thread")]
async fn with_every_worker_busy_a_ticket_with_its_pull_request_open_lets_a_waiting_job_go_first() {
    let files = calc(AUTO_YML);
    let one_worker = vec![("VIBELOOP_WORKERS".to_owned(), "1".to_owned())];
    let w = World::start_with(happy_script(), &files, one_worker).await;
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    w.gh.add_repo(INSTALLATION, OTHER, &refs);
    let other_issue = w.gh.add_issue(OTHER, "add() subtracts", "It should add.");

    // The one worker is in the first ticket's Builder when the second issue is labelled: its
    // delivery waits for the worker.
    w.llm.hold("builder");
    w.label().await;
    w.bot
        .wait_until("the Builder's call", WAIT, || async {
            (w.llm.waiting() == 1).then_some(())
        })
        .await;
    assert_eq!(
        w.gh.label_issue(OTHER, other_issue, "hive").await.status,
        202
    );
    let store = w.bot.store().await;
    w.bot
        .wait_until("the delivery to wait a second", WAIT, || async {
            let jobs = store.queued_jobs(100).await.ok()?;
            jobs.iter()
                .any(|j| {
                    j.kind == "delivery"
                        && j.status == "queued"
                        && j.run_after <= vibeloop::now_ms() - 1_000
                })
                .then_some(())
        })
        .await;
    w.llm.release();

    let first = w.wait_state(TaskState::Completed).await;
    let other = RepoName::parse(OTHER).unwrap();
    let second = w
        .bot
        .wait_until("the second ticket", WAIT, || async {
            store
                .ticket_for_issue(&other, other_issue)
                .await
                .ok()
                .flatten()
        })
        .await;
    let events = store.events(first.key).await.unwrap();
    // When each node was done (its checkpoint).
    let done = |node: &str| {
        events
            .iter()
            .find(|(_, k, d)| k == "checkpoint" && d["node"] == node)
            .map(|(at, _, _)| *at)
            .unwrap_or_else(|| panic!("no checkpoint of {node}: {events:?}"))
    };
    let (opened, merged) = (done("open_pr"), done("merge"));
    assert!(
        opened <= second.created_at && second.created_at < merged,
        "the second ticket was opened at {}, not between the first's pull request ({opened}) and its merge ({merged})\n{}",
        second.created_at,
        w.bot.log()
    );
    w.bot
        .wait_until("the second ticket to land", WAIT, || async {
            let t = store.ticket(second.key).await.ok().flatten()?;
            (t.state == TaskState::Completed).then_some(())
        })
        .await;
    store.close().await;
}
