//! PostgreSQL restarted under a running ticket: the bot reaches the database through a TCP
//! proxy this test controls. Cutting it drops every connection and refuses new ones, as a
//! restarting server does; restoring it lets the bot reconnect. The outage outlasts the job's
//! lease: the run that cannot renew it stops before the lease runs out, and the run that takes
//! the job over finishes the ticket alone, with every GitHub side effect once. A webhook sent
//! during the outage gets 503, not a loss.

use crate::support;

use support::cut::Cuttable;
use support::hive::*;
use vibeloop::ticket::TaskState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_mid_ticket_the_ticket_finishes_with_each_side_effect_once() {
    let direct = support::pg::fresh_database().await;
    let mut url = url::Url::parse(&direct).unwrap();
    let upstream = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let mut proxy = Cuttable::tcp(&upstream).await;
    url.set_port(Some(proxy.port())).unwrap();
    let w = World::start_with(
        happy_script(),
        &calc(AUTO_YML),
        vec![
            ("DATABASE_URL".into(), url.to_string()),
            ("VIBELOOP_LEASE_SECONDS".into(), "3".into()),
        ],
    )
    .await;
    w.label().await;
    w.bot
        .wait_until("the Builder's gates to run", WAIT, || async {
            w.gh.check_runs(REPO)
                .iter()
                .any(|c| c.name == "hive/test")
                .then_some(())
        })
        .await;
    proxy.cut();
    // A webhook during the outage is refused with 503, so GitHub keeps it for redelivery.
    let during = w.gh.label_issue(REPO, w.issue, "bug").await;
    assert_eq!(during.status, 503, "{}", during.text);
    // Longer than the lease: the run that cannot renew it stops, rather than go on beside the
    // run that will take the job over.
    w.bot
        .wait_until("the run to give up its lease", WAIT, || async {
            let log = w.bot.log();
            log.contains("lease lost; stopping the job so that one worker runs it")
                .then_some(())
        })
        .await;
    proxy.restore().await;

    let done = w.wait_state(TaskState::Completed).await;
    assert_eq!(done.issue_number, w.issue);
    w.assert_each_side_effect_once();
    let ready = reqwest::get(format!("{}/readyz", w.bot.url)).await.unwrap();
    assert_eq!(ready.status(), 200);
}
