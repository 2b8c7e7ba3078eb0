//! Unreviewed code must not reach the repository's CI with its secrets: the bot scans every
//! commit it would push before pushing it. Played as an attack: a Builder that writes a token
//! into the change. Nothing of that attempt reaches GitHub — no branch, no object — the Builder
//! is told what and where, its next attempt starts from the last pushed commit, and the clean
//! change goes on as usual.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

/// A GitHub token's shape, made at run time (no token's shape in our sources).
fn token() -> String {
    format!(
        "ghp_{}",
        "Zq8Xw2Ve4Ut6Sr0Qp1On3Ml5Kj7Ih9Gf2Ed4C".get(..36).unwrap()
    )
}

/// Every object the fake GitHub's repository holds, as text.
fn every_object(w: &World) -> String {
    let out = std::process::Command::new("git")
        .args(["cat-file", "--batch-all-objects", "--batch", "--unordered"])
        .current_dir(w.gh.bare_path(REPO))
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_that_writes_a_token_pushes_nothing_and_starts_again_from_the_last_push() {
    let leak = format!("TOKEN = \"{}\"\n", token());
    let mut first = vec![support::fake_llm::Step::tool(
        "write_file",
        serde_json::json!({ "path": "settings.py", "content": leak }),
    )];
    first.extend(writes(
        "calc.py",
        CALC_FIXED,
        "add() adds; settings hold the token.",
    ));
    let script = script_with(vec![
        ("builder", first),
        (
            "builder|attempt 2 of",
            writes("calc.py", CALC_FIXED, "add() adds; no settings."),
        ),
    ]);
    let w = World::start(script, &calc(HIVE_YML)).await;
    w.label().await;
    w.wait_state(TaskState::AwaitingVerification).await;

    // Nothing the first attempt wrote ever reached GitHub.
    assert!(
        !every_object(&w).contains(&token()),
        "the token was pushed to GitHub"
    );
    assert_eq!(w.gh.file_on_branch(REPO, "feat/T-1", "settings.py"), None);
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    // The Builder heard what and where, and started again from the base (nothing was pushed
    // before): its second worktree had no settings.py.
    let tasks = tasks_of(&w.llm, "builder");
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(
        tasks[1].contains("settings.py:1:") && tasks[1].contains("looks like a secret"),
        "{}",
        tasks[1]
    );
    assert!(
        !tasks[1].contains(&token()),
        "the finding repeats the token"
    );
    let store = w.bot.store().await;
    let t = w.ticket().await.unwrap();
    let events = store.events(t.key).await.unwrap();
    store.close().await;
    let withheld: Vec<_> = events
        .iter()
        .filter(|(_, kind, _)| kind == "push_withheld")
        .collect();
    assert_eq!(withheld.len(), 1, "{events:?}");
    assert_eq!(withheld[0].2["paths"], serde_json::json!(["settings.py"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_whose_tests_carry_a_token_pushes_nothing_and_writes_them_again() {
    let leaky = format!("TOKEN = \"{}\"\n{NEW_TESTS}", token());
    let script = script_with(vec![
        (
            "breaker",
            writes(
                "test_add_more.py",
                &leaky,
                "A test, with the token it needs.",
            ),
        ),
        (
            "breaker|Your last tests need more work",
            breaker_after(vec![]),
        ),
    ]);
    let w = World::start(script, &calc(HIVE_YML)).await;
    w.label().await;
    w.wait_state(TaskState::AwaitingVerification).await;

    assert!(
        !every_object(&w).contains(&token()),
        "the token was pushed to GitHub"
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "test/T-1", "test_add_more.py")
            .as_deref(),
        Some(NEW_TESTS)
    );
    let tasks = tasks_of(&w.llm, "breaker");
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(
        tasks[1].contains("test_add_more.py:1:") && tasks[1].contains("looks like a secret"),
        "{}",
        tasks[1]
    );
    assert!(
        !tasks[1].contains(&token()),
        "the finding repeats the token"
    );
}
