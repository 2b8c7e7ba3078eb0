//! The bot killed (SIGKILL) while a gate runs in a container: the container is left behind, and
//! the next start of the bot finds it by its label and removes it.

mod support;

use support::bot::Bot;
use support::hive::*;
use vibeloop::sandbox::Backend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_left_by_a_killed_bot_is_removed_at_the_next_start() {
    // A lint gate that outlives the bot.
    let hive_yml = "gates: { test: \"python3 -m unittest -v\", lint: \"sleep 300\" }\nlimits: { timeout_seconds: 400 }\n";
    let mut w = World::start_with(
        happy_script(),
        &calc(hive_yml),
        vec![("VIBELOOP_SANDBOX".into(), "docker".into())],
    )
    .await;
    w.label().await;

    let Backend::Docker(docker) =
        Backend::detect(&w.env.data_dir, Some(vibeloop::sandbox::Kind::Docker))
            .await
            .unwrap()
            .0
    else {
        unreachable!()
    };
    let (old_id, _) = w
        .bot
        .wait_until("the gate's container", WAIT, || async {
            let running =
                w.gh.check_runs(REPO)
                    .iter()
                    .any(|c| c.name == "hive/lint" && c.status == "in_progress");
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
