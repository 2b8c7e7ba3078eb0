//! The whole hive end to end: the real bot binary, the fake GitHub (REST and git), the fake
//! model server, real containers. Each test is one story a maintainer would tell.

mod support;

use support::hive::*;
use vibeloop::ticket::TaskState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labelled_issue_is_planned_tested_built_reviewed_merged_and_tagged() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    let t = w.wait_state(TaskState::AwaitingVerification).await;
    let pr = w
        .bot
        .wait_until("the pull request", WAIT, || async {
            w.gh.pulls(REPO).into_iter().next()
        })
        .await;
    assert_eq!(t.pr_number, Some(pr.number));
    w.bot
        .wait_until("the approval prompt", WAIT, || async {
            w.ticket()
                .await
                .filter(|t| t.detail.as_deref().unwrap_or("").contains("/hive approve"))
        })
        .await;
    let id = w.say("/hive approve").await;
    assert!(w.reply_to(id).await.contains("approved"));
    let done = w.wait_state(TaskState::Completed).await;
    println!("{:?}", w.checkpoints().await);
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "test_add_more.py")
            .as_deref(),
        Some(NEW_TESTS)
    );
    let tags = w.gh.tags(REPO);
    assert!(
        tags.contains(&("auto-v0.0.1".to_owned(), main.clone())),
        "{tags:?}"
    );
    assert!(
        tags.contains(&("LATEST_STABLE".to_owned(), main.clone())),
        "{tags:?}"
    );
    assert!(done.detail.unwrap().contains("auto-v0.0.1"));
    let pr = w.gh.pull(REPO, pr.number).unwrap();
    assert!(pr.merged && !pr.draft, "{pr:?}");
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_that_changes_a_test_fails_the_test_lock() {
    // The local sandbox cannot mount the tests read-only, so a repository script the Builder
    // runs can rewrite one. The test lock on hive/security still catches it.
    const BUILD: &str = "open('test_calc.py', 'w').write('def test_nothing():\\n    pass\\n')\n";
    let hive_yml = "gates: { test: \"python3 -m unittest -v\", build: \"python3 build.py\" }\n";
    let mut files = calc(hive_yml);
    files.push(("build.py", BUILD.into()));
    let mut script = happy_script();
    script.insert(
        "builder".into(),
        vec![
            support::fake_llm::Step::tool("run_command", serde_json::json!({ "name": "build" })),
            support::fake_llm::Step::tool(
                "write_file",
                serde_json::json!({ "path": "calc.py", "content": CALC_FIXED }),
            ),
            support::fake_llm::Step::say("Fixed."),
        ],
    );
    let w = World::start_with(
        script,
        &files,
        vec![("VIBELOOP_SANDBOX".into(), "local".into())],
    )
    .await;
    w.label().await;
    w.wait_state(TaskState::HumanNeeded).await;
    let security: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/security")
            .collect();
    assert!(!security.is_empty());
    assert_eq!(security[0].conclusion.as_deref(), Some("failure"));
    let on_test = security[0]
        .annotations
        .iter()
        .find(|a| a["path"] == "test_calc.py")
        .expect("an annotation on the test");
    assert_eq!(on_test["title"], "test lock");
    assert!(w.gh.pulls(REPO).is_empty());
    let body = w.status_comment();
    assert!(
        body.contains("test_calc.py") && body.contains("hive/security"),
        "{body}"
    );
}
