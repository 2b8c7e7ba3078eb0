//! The Docker engine goes away in the middle of a gate and comes back: the bot talks to the
//! engine through a proxy socket this test controls (`DOCKER_HOST`). Cutting it drops every
//! connection (the running `exec` included) and refuses new ones; restoring it lets them through
//! again. The ticket must recover — gates run again once the engine answers — and every GitHub
//! side effect still happens once.

use crate::support;

use std::path::Path;

use support::cut::Cuttable;
use support::hive::*;
use vibeloop::ticket::TaskState;

const ENGINE: &str = "/var/run/docker.sock";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_lost_mid_gate_and_back_the_ticket_recovers_with_each_side_effect_once() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("docker.sock");
    let mut proxy = Cuttable::unix(&socket, Path::new(ENGINE)).await;
    // The test gate takes a while, so the cut lands inside it.
    let yml = "gates: { test: \"sleep 2; python3 -m unittest -v\" }\nreview: { require_human_approval: false }\n";
    let w = World::start_with(
        happy_script(),
        &calc(yml),
        vec![
            ("DOCKER_HOST".into(), format!("unix://{}", socket.display())),
            ("VIBELOOP_SANDBOX".into(), "docker".into()),
        ],
    )
    .await;
    w.label().await;
    w.bot
        .wait_until("the test gate to run", WAIT, || async {
            w.gh.check_runs(REPO)
                .iter()
                .any(|c| c.name == "hive/test" && c.status == "in_progress")
                .then_some(())
        })
        .await;
    proxy.cut();
    // The engine stays away until the bot has noticed.
    w.bot
        .wait_until("the bot to notice the engine is gone", WAIT, || async {
            w.bot.log().contains("will retry").then_some(())
        })
        .await;
    proxy.restore().await;

    let done = w.wait_state(TaskState::Completed).await;
    assert_eq!(done.issue_number, w.issue);
    w.assert_each_side_effect_once();
    let test_runs: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/test")
            .collect();
    assert!(
        test_runs.iter().all(|c| c.status == "completed"),
        "a check run was left in progress: {test_runs:?}"
    );
    // The cut gate says what happened; the gates ran again and passed.
    assert!(
        test_runs
            .iter()
            .any(|c| c.conclusion.as_deref() == Some("cancelled")
                && c.summary
                    .as_deref()
                    .unwrap_or("")
                    .contains("The sandbox could not run this gate")),
        "{test_runs:?}"
    );
    assert!(
        test_runs
            .iter()
            .any(|c| c.conclusion.as_deref() == Some("success")),
        "{test_runs:?}"
    );
    proxy.cut();
}
