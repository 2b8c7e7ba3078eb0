//! Crashes and lost answers: the bot killed (SIGKILL) in each node of the workflow resumes from
//! its checkpoint and finishes with every side effect made once; answers GitHub loses after
//! doing the work do not make the bot do it twice; a container left by a killed bot is found by
//! its label and removed at the next start.

use crate::support;

use std::time::Duration;

use support::bot::Bot;
use support::fake_github::Fault;
use support::hive::*;
use vibeloop::ticket::TaskState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_left_by_a_killed_bot_is_removed_at_the_next_start() {
    // A build gate that outlives the bot (the baseline runs lint on the base too: not build).
    let hive_yml = "gates: { test: \"python3 -m unittest -v\", build: \"sleep 300\" }\nlimits: { timeout_seconds: 400 }\n";
    let mut w = World::start_with(
        happy_script(),
        &calc(hive_yml),
        vec![("VIBELOOP_SANDBOX".into(), "docker".into())],
    )
    .await;
    w.label().await;

    let docker = w.docker().await;
    let (old_id, _) = w
        .bot
        .wait_until("the gate's container", WAIT, || async {
            let running =
                w.gh.check_runs(REPO)
                    .iter()
                    .any(|c| c.name == "hive/build" && c.status == "in_progress");
            if running {
                docker.containers().await.unwrap().into_iter().next()
            } else {
                None
            }
        })
        .await;
    w.bot.kill();
    assert!(
        docker
            .containers()
            .await
            .unwrap()
            .iter()
            .any(|(id, _)| *id == old_id),
        "the container went with the bot"
    );

    w.bot = Bot::start(&w.env).await;
    w.bot
        .wait_until("the old container to be removed", WAIT, || async {
            (!docker
                .containers()
                .await
                .unwrap()
                .iter()
                .any(|(id, _)| *id == old_id))
            .then_some(())
        })
        .await;
    assert!(
        w.bot
            .log()
            .contains("removed sandboxes left by the last run"),
        "{}",
        w.bot.log()
    );
    w.bot.kill();
    docker.remove_leftovers().await.unwrap();
}

/// True when the ticket's run is in `node` (its stored flow names it next, or for `plan`, the
/// ticket is being prepared).
async fn in_node(w: &World, node: &str) -> bool {
    let Some(t) = w.ticket().await else {
        return false;
    };
    if node == "plan" {
        return t.state == TaskState::Preparing;
    }
    let store = w.bot.store().await;
    let flow = store.flow(t.key).await.ok().flatten();
    store.close().await;
    flow.is_some_and(|f| f["next"] == node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_killed_in_any_node_finishes_the_ticket_with_each_side_effect_once() {
    const NODES: [&str; 12] = [
        "plan",
        "plan_check",
        "code",
        "red_proof",
        "encounter",
        "open_pr",
        "critic",
        "await_approval",
        "rebase",
        "regate",
        "merge",
        "snapshot",
    ];
    let mut landed = Vec::new();
    for node in NODES {
        let mut w = World::start(happy_script(), &calc(AUTO_YML)).await;
        // Slow GitHub down so the kill lands inside the node, not after it.
        w.gh.set_latency(Duration::from_millis(40));
        w.label().await;
        w.bot
            // Nodes without I/O of their own pass in microseconds: kill as soon as the run
            // is in the node or just past it.
            .wait_until(&format!("the run to reach {node}"), WAIT, || async {
                let past = w.checkpoints().await.iter().any(|c| c == node);
                (past || in_node(&w, node).await).then_some(())
            })
            .await;
        w.bot.kill();
        landed.push((node, in_node(&w, node).await));
        w.gh.set_latency(Duration::ZERO);
        w.bot = Bot::start(&w.env).await;
        w.wait_state(TaskState::Completed).await;
        w.assert_each_side_effect_once();
        assert!(
            w.bot.log().contains("resuming jobs interrupted"),
            "{node}: {}",
            w.bot.log()
        );
    }
    println!("killed inside the node (rather than after it): {landed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_answers_to_side_effects_do_not_repeat_them() {
    let w = World::start(happy_script(), &calc(AUTO_YML)).await;
    // GitHub does each of these, then the answer is lost (a 502 after the effect).
    for (method, path) in [
        ("POST", "/issues/1/comments"),
        ("POST", "/pulls"),
        ("POST", "/check-runs"),
        ("POST", "/reviews"),
        // The merge itself: the bot looks before trying again, and finds it merged.
        ("PUT", "/merge"),
        ("POST", "/git/refs"),
    ] {
        w.gh.inject(Fault::new(method, path, 502).after_effect());
    }
    w.label().await;
    w.wait_state(TaskState::Completed).await;
    w.assert_each_side_effect_once();
    let lost = w.gh.requests().iter().filter(|r| r.status == 502).count();
    assert_eq!(lost, 6, "every fault was met");
}
