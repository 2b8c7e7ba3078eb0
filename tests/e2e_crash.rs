//! The bot killed (SIGKILL) while a gate runs in a container: the container is left behind, and
//! the next start of the bot finds it by its label and removes it.

mod support;

use std::time::Duration;

use serde_json::json;
use support::bot::{Bot, BotEnv, app_public_key};
use support::fake_github::{self, FakeGitHub};
use support::fake_llm::{FakeLlm, Script, Step};
use vibeloop::sandbox::Backend;

const REPO: &str = "acme/slow";
const SECRET: &str = "s3cret";
const WAIT: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_left_by_a_killed_bot_is_removed_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: 11,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("gh"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(3, "acme");
    // A test gate that outlives the bot.
    let hive_yml = "gates: { test: \"sleep 300\" }\nlimits: { timeout_seconds: 400 }\n";
    gh.add_repo(
        3,
        REPO,
        &[("app.py", "x = 1\n"), (".github/hive.yml", hive_yml)],
    );
    let issue = gh.add_issue(REPO, "Make x two", "x should be 2.");
    let steps = vec![
        Step::tool(
            "write_file",
            json!({ "path": "app.py", "content": "x = 2\n" }),
        ),
        Step::say("x is 2."),
    ];
    let llm = FakeLlm::start(Script::from([("builder".to_owned(), steps)])).await;
    let env = BotEnv {
        data_dir: dir.path().join("data"),
        github_api_url: gh.url.clone(),
        llm_url: llm.url.clone(),
        webhook_secret: SECRET.into(),
        app_id: Some(11),
        extra: vec![("VIBELOOP_SANDBOX".into(), "docker".into())],
    };
    let mut bot = Bot::start(&env).await;
    gh.set_webhook(&bot.url, SECRET);
    assert_eq!(gh.label_issue(REPO, issue, "hive").await.status, 202);

    let Backend::Docker(docker) =
        Backend::detect(&env.data_dir, Some(vibeloop::sandbox::Kind::Docker))
            .await
            .unwrap()
            .0
    else {
        unreachable!()
    };
    let (old_id, _) = bot
        .wait_until("the gate's container", WAIT, || async {
            let running = gh
                .check_runs(REPO)
                .iter()
                .any(|c| c.name == "hive/test" && c.status == "in_progress");
            if running {
                docker.containers().await.unwrap().into_iter().next()
            } else {
                None
            }
        })
        .await;
    bot.kill();
    assert!(
        docker
            .containers()
            .await
            .unwrap()
            .iter()
            .any(|(id, _)| *id == old_id),
        "the container went with the bot"
    );

    let bot = Bot::start(&env).await;
    bot.wait_until("the old container to be removed", WAIT, || async {
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
        bot.log().contains("removed sandboxes left by the last run"),
        "{}",
        bot.log()
    );
    drop(bot);
    docker.remove_leftovers().await.unwrap();
}
