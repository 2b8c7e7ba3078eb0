//! The README's Quick start as a new user runs it: `vibeloop serve` on its defaults, from a
//! directory of their own, with the Docker sandbox.

use crate::support;

use support::hive::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_its_default_relative_data_directory_opens_a_pull_request_with_docker() {
    let w = World::start_in_a_working_directory(
        happy_script(),
        &calc(HIVE_YML),
        vec![("VIBELOOP_SANDBOX".into(), "docker".into())],
    )
    .await;
    w.label().await;

    let pr = w.first_pull().await;
    assert!(pr.body.contains("passed (2 tests)"), "{}", pr.body);
    // The state stayed where the user started the bot, and the gates ran in containers.
    let home = w.dir.path().join("home");
    assert!(home.join(".vibeloop/vibeloop.db").is_file());
    assert!(home.join(".vibeloop/worktrees").is_dir());
    assert!(
        !w.status_comment().contains("Docker"),
        "{}",
        w.status_comment()
    );
    assert!(w.bot.log().contains("sandbox: docker"), "{}", w.bot.log());
}
