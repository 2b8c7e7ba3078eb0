//! End to end through every layer: a signed `issues.labeled` webhook reaches the real bot
//! binary, which talks to the fake GitHub (REST and git over HTTP) and the fake model, runs the
//! repository's real test command in a container, and opens a pull request — or says why not.

use crate::support;

use serde_json::json;
use support::fake_llm::{Script, Step};
use support::hive::*;
use support::payloads;
use vibeloop::ticket::TaskState;

fn runs_named(w: &World, name: &str) -> Vec<support::fake_github::CheckRun> {
    w.gh.check_runs(REPO)
        .into_iter()
        .filter(|c| c.name == name)
        .collect()
}

/// The happy script with another Builder.
fn with_builder(steps: Vec<Step>) -> Script {
    let mut s = happy_script();
    s.insert("builder".into(), steps);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labelled_issue_becomes_a_tested_pull_request() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;

    let pr = w.first_pull().await;
    assert_eq!(pr.title, "T-1: add() subtracts");
    assert_eq!(pr.base, "main");
    assert!(
        pr.body.contains(&format!("Closes #{}", w.issue)),
        "{}",
        pr.body
    );
    assert!(pr.body.contains("passed (2 tests)"), "{}", pr.body);

    // The fix and the Breaker's test are on the branch in the real repository, the PR's head is
    // that commit, and main is untouched until someone approves.
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "test_add_more.py")
            .as_deref(),
        Some(NEW_TESTS)
    );
    assert_eq!(
        w.gh.branch_sha(REPO, "feat/T-1").as_deref(),
        Some(pr.head_sha.as_str())
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_BUGGY)
    );

    // hive/test succeeded on the PR head, in one check run.
    let runs = runs_named(&w, "hive/test");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].head_sha, pr.head_sha);
    assert_eq!(runs[0].status, "completed");
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
    assert!(
        runs[0]
            .summary
            .as_deref()
            .unwrap_or("")
            .contains("Ran 2 tests"),
        "{:?}",
        runs[0].summary
    );

    // Every gate is a check run on the PR head, queued, then in progress, then completed;
    // gates without a command are skipped.
    for (gate, conclusion) in [
        ("test", "success"),
        ("lint", "skipped"),
        ("typecheck", "skipped"),
        ("build", "skipped"),
        ("security", "success"),
    ] {
        let runs = runs_named(&w, &format!("hive/{gate}"));
        assert_eq!(runs.len(), 1, "{gate}: {runs:?}");
        assert_eq!(runs[0].head_sha, pr.head_sha, "{gate}");
        assert_eq!(runs[0].conclusion.as_deref(), Some(conclusion), "{gate}");
        assert_eq!(
            runs[0].statuses,
            ["queued", "in_progress", "completed"],
            "{gate}"
        );
    }
    // The red proof is reported on the Breaker's commit.
    let red = runs_named(&w, "hive/red-proof");
    assert_eq!(red.len(), 1, "{red:?}");
    assert_eq!(
        Some(red[0].head_sha.clone()),
        w.gh.branch_sha(REPO, "test/T-1")
    );
    assert_eq!(red[0].conclusion.as_deref(), Some("success"));

    // Exactly one status comment, edited to the state the ticket waits in; one 👀 reaction.
    w.bot
        .wait_until("the ticket to wait for approval", WAIT, || async {
            w.ticket().await.filter(|t| {
                t.state == TaskState::AwaitingVerification
                    && t.detail.as_deref().unwrap_or("").contains("/hive approve")
            })
        })
        .await;
    let comments = w.gh.comments(REPO, w.issue);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].body.contains("<!-- vibeloop:status T-1 -->"));
    assert!(
        comments[0].body.contains(&format!("/pull/{}", pr.number)),
        "{}",
        comments[0].body
    );
    assert_eq!(w.gh.reactions(REPO), vec![(w.issue, "eyes".to_owned())]);

    // The Builder got the issue as data and worked through its tools.
    let requests = w.llm.requests("builder");
    assert_eq!(requests.len(), 2);
    let first_user = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        first_user.contains("add() subtracts") && first_user.contains("<<<ISSUE"),
        "{first_user}"
    );
    assert_eq!(w.llm.exhausted(), 0);

    // No token in the bot's log; every REST call the bot made is one GitHub documents.
    let log = w.bot.log();
    assert!(
        log.contains("sandbox: docker"),
        "the gates did not run in containers:\n{log}"
    );
    assert!(!log.contains("ghs_"), "a token reached the log");
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_tests_mean_no_pull_request_and_a_clear_status() {
    // The Builder "fixes" add() the same wrong way on every attempt.
    let w = World::start(
        with_builder(writes("calc.py", CALC_WRONG, "add() fixed.")),
        &calc(HIVE_YML),
    )
    .await;
    w.label().await;
    w.wait_state(TaskState::HumanNeeded).await;

    let runs = runs_named(&w, "hive/test");
    assert!(
        !runs.is_empty()
            && runs
                .iter()
                .all(|r| r.conclusion.as_deref() == Some("failure")),
        "{runs:?}"
    );
    assert_eq!(
        Some(runs.last().unwrap().head_sha.clone()),
        w.gh.branch_sha(REPO, "feat/T-1")
    );
    assert!(
        w.gh.pulls(REPO).is_empty(),
        "a PR was opened for failing tests"
    );
    // The failure is annotated where it happened, from unittest's own output.
    assert!(
        runs[0]
            .annotations
            .iter()
            .any(|a| a["path"] == "test_calc.py" && a["annotation_level"] == "failure"),
        "{:?}",
        runs[0].annotations
    );
    // Two identical failures in a row: the Builder is stalled, so a person is asked at once.
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        w.gh.labels(REPO, w.issue)
            .contains(&"hive:needs-human".to_owned())
    );

    let comments = w.gh.comments(REPO, w.issue);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = &comments[0].body;
    assert!(body.contains("the same"), "{body}");
    assert!(
        body.contains("AssertionError") || body.contains("test_calc.py"),
        "the findings are missing: {body}"
    );
    assert!(body.contains("/hive retry"), "{body}");
    // Nothing of the ticket is left running.
    let docker = w.docker().await;
    assert_eq!(
        docker.containers().await.unwrap(),
        vec![],
        "containers outlived the ticket"
    );
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_labels_and_uninstalled_repositories_open_no_ticket() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let other = w.gh.label_issue(REPO, w.issue, "bug").await;
    assert_eq!(other.status, 202);
    // A repository the app is not installed on: the installation token request is refused.
    let stranger =
        payloads::issues_labeled("someone/else", Some(INSTALLATION), 1, "x", "y", "hive");
    let stranger = payloads::send(&w.bot.url, SECRET, "issues", &stranger).await;
    assert_eq!(stranger.status, 202);
    // And a payload without an installation at all (a repository webhook, not an App's).
    let bare = payloads::issues_labeled(REPO, None, w.issue, "x", "y", "hive");
    let bare = payloads::send(&w.bot.url, SECRET, "issues", &bare).await;
    // A new action octocrab cannot parse: acknowledged and stored, recorded as unparsed.
    let typed = payloads::example("issues/typed.from-octokit-webhooks.net.payload.json");
    let typed = payloads::send(&w.bot.url, SECRET, "issues", &typed).await;
    assert_eq!(typed.status, 202);

    let store = w.bot.store().await;
    for (sent, status, detail) in [
        (
            &other,
            "ignored",
            "label \"bug\" is neither \"hive\" nor \"hive:plan\"",
        ),
        (&stranger, "rejected", "not installed on someone/else"),
        (&bare, "rejected", "no installation in the payload"),
        (&typed, "unparsed", "unknown variant `typed`"),
    ] {
        let d = w.handled(sent).await;
        assert_eq!(d.status, status, "{d:?}");
        assert!(d.detail.as_deref().unwrap_or("").contains(detail), "{d:?}");
    }
    assert!(store.tickets().await.unwrap().is_empty());
    assert!(w.gh.comments(REPO, w.issue).is_empty());
    assert!(w.llm.requests("architect").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerequested_checks_run_again() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    w.bot
        .wait_until("the Critic's verdict", WAIT, || async {
            w.ticket().await.filter(|t| {
                t.state == TaskState::AwaitingVerification
                    && t.detail.as_deref().unwrap_or("").contains("/hive approve")
            })
        })
        .await;
    let pr = w.gh.pulls(REPO).remove(0);
    let test_run = runs_named(&w, "hive/test").remove(0);

    // "Re-run" on hive/test: that gate alone runs again, as a new check run on the same commit.
    let body = payloads::check_run_rerequested(
        REPO,
        INSTALLATION,
        "hive/test",
        test_run.external_id.as_deref().unwrap(),
        &pr.head_sha,
    );
    assert_eq!(w.gh.send_webhook("check_run", &body).await.status, 202);
    let again = w
        .bot
        .wait_until("hive/test to run again", WAIT, || async {
            let runs = runs_named(&w, "hive/test");
            (runs.len() == 2 && runs[1].status == "completed").then(|| runs[1].clone())
        })
        .await;
    assert_eq!(
        (again.head_sha.as_str(), again.conclusion.as_deref()),
        (pr.head_sha.as_str(), Some("success"))
    );
    assert_ne!(again.external_id, test_run.external_id);
    assert_eq!(
        runs_named(&w, "hive/lint").len(),
        1,
        "only the asked gate ran"
    );

    // "Re-run all checks": every gate again.
    let body = payloads::check_suite_rerequested(REPO, INSTALLATION, &pr.head_sha, "feat/T-1");
    assert_eq!(w.gh.send_webhook("check_suite", &body).await.status, 202);
    w.bot
        .wait_until("every gate to run again", WAIT, || async {
            vibeloop::gates::ORDER
                .iter()
                .all(|gate| {
                    let runs = runs_named(&w, &format!("hive/{gate}"));
                    runs.len() == if *gate == "test" { 3 } else { 2 }
                        && runs.iter().all(|c| c.status == "completed")
                })
                .then_some(())
        })
        .await;
    assert_eq!(
        runs_named(&w, "hive/critic").len(),
        1,
        "the Critic is not a gate"
    );
    // Someone else's check run is not ours to re-run.
    let body = payloads::check_run_rerequested(REPO, INSTALLATION, "ci/build", "", &pr.head_sha);
    let sent = w.gh.send_webhook("check_run", &body).await;
    let d = w.handled(&sent).await;
    assert_eq!(d.status, "ignored", "{d:?}");
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_config_is_reported_on_the_issue() {
    let w = World::start(
        happy_script(),
        &calc("gates:\n  tset: python3 -m unittest\n"),
    )
    .await;
    w.label().await;
    w.wait_state(TaskState::Failed).await;
    let body = &w.gh.comments(REPO, w.issue)[0].body;
    assert!(
        body.contains(".github/hive.yml is invalid")
            && body.contains("tset")
            && body.contains("line 2"),
        "{body}"
    );
    assert!(
        w.llm.requests("architect").is_empty(),
        "an agent ran on a broken config"
    );
    assert!(w.gh.check_runs(REPO).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_cannot_write_the_tests() {
    // The Builder tries to weaken the test instead of fixing the code: its tool refuses.
    let steps = vec![
        Step::tool(
            "write_file",
            json!({ "path": "test_calc.py", "content": "def test_nothing():\n    pass\n" }),
        ),
        Step::tool(
            "write_file",
            json!({ "path": "calc.py", "content": CALC_FIXED }),
        ),
        Step::say("Done."),
    ];
    let w = World::start(with_builder(steps), &calc(HIVE_YML)).await;
    w.label().await;
    w.bot
        .wait_until("a pull request", WAIT, || async {
            w.gh.pulls(REPO).into_iter().next()
        })
        .await;
    let requests = w.llm.requests("builder");
    let refusal = requests[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        refusal.contains("test_calc.py") && refusal.contains("\"error\""),
        "{refusal}"
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "test_calc.py")
            .as_deref(),
        Some(TESTS)
    );
}
