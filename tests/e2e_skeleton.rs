//! End to end through every layer: a signed `issues.labeled` webhook reaches the real bot
//! binary, which talks to the fake GitHub (REST and git over HTTP) and the fake model, runs the
//! repository's real test command, and opens a pull request — or says why not.

mod support;

use std::time::Duration;

use serde_json::json;
use support::bot::{Bot, BotEnv, app_public_key};
use support::fake_github::{self, FakeGitHub};
use support::fake_llm::{FakeLlm, Script, Step};
use support::payloads;
use vibeloop::ticket::TaskState;

const REPO: &str = "acme/widgets";
const INSTALLATION: u64 = 7;
const APP_ID: u64 = 4242;
const SECRET: &str = "webhook-secret-for-tests";
const WAIT: Duration = Duration::from_secs(90);

const CALC_BUGGY: &str = "def add(a, b):\n    return a - b\n";
const CALC_FIXED: &str = "def add(a, b):\n    return a + b\n";
const CALC_WRONG: &str = "def add(a, b):\n    return a * b\n";
const TESTS: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_adds(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
const HIVE_YML: &str = "gates: { test: \"python3 -m unittest -v\" }\n";

struct World {
    _dir: tempfile::TempDir,
    gh: FakeGitHub,
    llm: FakeLlm,
    bot: Bot,
    issue: u64,
}

fn builder_script(content: &str) -> Script {
    let steps = vec![
        Step::tool("list_files", json!({})),
        Step::tool("read_file", json!({ "path": "calc.py" })),
        Step::tool(
            "write_file",
            json!({ "path": "calc.py", "content": content }),
        ),
        Step::say("add() now adds."),
    ];
    Script::from([("builder".to_owned(), steps)])
}

async fn world(script: Script) -> World {
    world_with(script, HIVE_YML).await
}

async fn world_with(script: Script, hive_yml: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: APP_ID,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("github"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(INSTALLATION, "acme");
    gh.add_repo(
        INSTALLATION,
        REPO,
        &[
            ("calc.py", CALC_BUGGY),
            ("test_calc.py", TESTS),
            (".github/hive.yml", hive_yml),
        ],
    );
    let issue = gh.add_issue(
        REPO,
        "add() subtracts",
        "`add(2, 3)` returns -1; it should return 5.",
    );
    let llm = FakeLlm::start(script).await;
    let bot = Bot::start(&BotEnv {
        data_dir: dir.path().join("data"),
        github_api_url: gh.url.clone(),
        llm_url: llm.url.clone(),
        webhook_secret: SECRET.into(),
        app_id: Some(APP_ID),
        extra: vec![],
    })
    .await;
    gh.set_webhook(&bot.url, SECRET);
    World {
        _dir: dir,
        gh,
        llm,
        bot,
        issue,
    }
}

impl World {
    async fn label(&self, label: &str) -> payloads::Sent {
        self.gh.label_issue(REPO, self.issue, label).await
    }

    async fn ticket_state(&self) -> Option<TaskState> {
        let store = self.bot.store().await;
        let repo = vibeloop::ids::RepoName::parse(REPO).unwrap();
        let t = store.ticket_for_issue(&repo, self.issue).await.unwrap();
        store.close().await;
        t.map(|t| t.state)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labelled_issue_becomes_a_tested_pull_request() {
    let w = world(builder_script(CALC_FIXED)).await;
    let sent = w.label("hive").await;
    assert_eq!(sent.status, 202, "{}", sent.text);

    let pr = w
        .bot
        .wait_until("a pull request from feat/T-1", WAIT, || async {
            w.gh.pulls(REPO).into_iter().find(|p| p.head == "feat/T-1")
        })
        .await;
    assert_eq!(pr.title, "T-1: add() subtracts");
    assert_eq!(pr.base, "main");
    assert!(
        pr.body.contains(&format!("Closes #{}", w.issue)),
        "{}",
        pr.body
    );
    assert!(pr.body.contains("passed (2 tests)"), "{}", pr.body);

    // The fix is on the branch in the real repository, and the PR's head is that commit.
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "calc.py").as_deref(),
        Some(CALC_FIXED)
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
    let runs: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/test")
            .collect();
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
    let all = w.gh.check_runs(REPO);
    for (gate, conclusion) in [
        ("test", "success"),
        ("lint", "skipped"),
        ("typecheck", "skipped"),
        ("build", "skipped"),
        ("security", "success"),
    ] {
        let runs: Vec<_> = all
            .iter()
            .filter(|c| c.name == format!("hive/{gate}"))
            .collect();
        assert_eq!(runs.len(), 1, "{gate}: {runs:?}");
        assert_eq!(runs[0].head_sha, pr.head_sha, "{gate}");
        assert_eq!(runs[0].conclusion.as_deref(), Some(conclusion), "{gate}");
        assert_eq!(
            runs[0].statuses,
            ["queued", "in_progress", "completed"],
            "{gate}"
        );
    }

    // Exactly one status comment, edited to the final state; one 👀 reaction.
    let state = w
        .bot
        .wait_until("the ticket awaiting review", WAIT, || async {
            w.ticket_state()
                .await
                .filter(|s| *s == TaskState::AwaitingVerification)
        })
        .await;
    assert_eq!(state, TaskState::AwaitingVerification);
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
    assert_eq!(requests.len(), 4);
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
    let w = world(builder_script(CALC_WRONG)).await;
    assert_eq!(w.label("hive").await.status, 202);

    w.bot
        .wait_until("the ticket to fail", WAIT, || async {
            w.ticket_state().await.filter(|s| *s == TaskState::Failed)
        })
        .await;
    let runs: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/test")
            .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    assert_eq!(
        Some(runs[0].head_sha.clone()),
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

    let comments = w.gh.comments(REPO, w.issue);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = &comments[0].body;
    assert!(body.contains("`hive/test` failed: exit code 1"), "{body}");
    assert!(body.contains("no pull request was opened"), "{body}");
    assert!(
        body.contains("AssertionError"),
        "the output tail is missing: {body}"
    );
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_labels_and_uninstalled_repositories_open_no_ticket() {
    let w = world(builder_script(CALC_FIXED)).await;
    let other = w.label("bug").await;
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
        (&other, "ignored", "label \"bug\" is not \"hive\""),
        (&stranger, "rejected", "not installed on someone/else"),
        (&bare, "rejected", "no installation in the payload"),
        (&typed, "unparsed", "unknown variant `typed`"),
    ] {
        let d = w
            .bot
            .wait_until(
                &format!("delivery {} processed", sent.delivery),
                WAIT,
                || async {
                    store
                        .delivery(&sent.delivery)
                        .await
                        .unwrap()
                        .filter(|d| d.status != "queued")
                },
            )
            .await;
        assert_eq!(d.status, status, "{d:?}");
        assert!(d.detail.as_deref().unwrap_or("").contains(detail), "{d:?}");
    }
    assert!(store.tickets().await.unwrap().is_empty());
    assert!(w.gh.comments(REPO, w.issue).is_empty());
    assert!(w.llm.requests("builder").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerequested_checks_run_again() {
    let w = world(builder_script(CALC_FIXED)).await;
    assert_eq!(w.label("hive").await.status, 202);
    let pr = w
        .bot
        .wait_until("a pull request", WAIT, || async {
            w.gh.pulls(REPO).into_iter().next()
        })
        .await;
    let runs_named = |name: &str| {
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == name)
            .collect::<Vec<_>>()
    };
    let test_run = runs_named("hive/test").remove(0);

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
            let runs = runs_named("hive/test");
            (runs.len() == 2 && runs[1].status == "completed").then(|| runs[1].clone())
        })
        .await;
    assert_eq!(
        (again.head_sha.as_str(), again.conclusion.as_deref()),
        (pr.head_sha.as_str(), Some("success"))
    );
    assert_ne!(again.external_id, test_run.external_id);
    assert_eq!(runs_named("hive/lint").len(), 1, "only the asked gate ran");

    // "Re-run all checks": every gate again.
    let body = payloads::check_suite_rerequested(REPO, INSTALLATION, &pr.head_sha, "feat/T-1");
    assert_eq!(w.gh.send_webhook("check_suite", &body).await.status, 202);
    w.bot
        .wait_until("every gate to run again", WAIT, || async {
            let all = w.gh.check_runs(REPO);
            (all.len() == 11 && all.iter().all(|c| c.status == "completed")).then_some(())
        })
        .await;
    for gate in vibeloop::gates::ORDER {
        assert_eq!(
            runs_named(&format!("hive/{gate}")).len(),
            if gate == "test" { 3 } else { 2 },
            "{gate}"
        );
    }
    // Someone else's check run is not ours to re-run.
    let body = payloads::check_run_rerequested(REPO, INSTALLATION, "ci/build", "", &pr.head_sha);
    let sent = w.gh.send_webhook("check_run", &body).await;
    let store = w.bot.store().await;
    let d = w
        .bot
        .wait_until("the foreign re-run to be handled", WAIT, || async {
            store
                .delivery(&sent.delivery)
                .await
                .unwrap()
                .filter(|d| d.status != "queued")
        })
        .await;
    assert_eq!(d.status, "ignored", "{d:?}");
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_that_edits_the_tests_fails_the_test_lock() {
    let steps = vec![
        Step::tool(
            "write_file",
            json!({ "path": "calc.py", "content": CALC_WRONG }),
        ),
        // Make the tests pass by weakening them: exactly what the lock is for.
        Step::tool(
            "write_file",
            json!({ "path": "test_calc.py", "content": "def test_nothing():\n    pass\n" }),
        ),
        Step::say("Done."),
    ];
    let w = world(Script::from([("builder".to_owned(), steps)])).await;
    assert_eq!(w.label("hive").await.status, 202);
    w.bot
        .wait_until("the ticket to fail", WAIT, || async {
            w.ticket_state().await.filter(|s| *s == TaskState::Failed)
        })
        .await;
    let security: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/security")
            .collect();
    assert_eq!(security.len(), 1);
    assert_eq!(security[0].conclusion.as_deref(), Some("failure"));
    let on_test = security[0]
        .annotations
        .iter()
        .find(|a| a["path"] == "test_calc.py")
        .expect("an annotation on the test");
    assert_eq!(on_test["title"], "test lock");
    assert!(w.gh.pulls(REPO).is_empty());
    let body = &w.gh.comments(REPO, w.issue)[0].body;
    assert!(body.contains("`hive/security` failed"), "{body}");
    assert!(body.contains("test_calc.py"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_config_is_reported_on_the_issue() {
    let w = world_with(
        builder_script(CALC_FIXED),
        "gates:\n  tset: python3 -m unittest\n",
    )
    .await;
    assert_eq!(w.label("hive").await.status, 202);
    w.bot
        .wait_until("the ticket to fail", WAIT, || async {
            w.ticket_state().await.filter(|s| *s == TaskState::Failed)
        })
        .await;
    let body = &w.gh.comments(REPO, w.issue)[0].body;
    assert!(
        body.contains(".github/hive.yml is invalid")
            && body.contains("tset")
            && body.contains("line 2"),
        "{body}"
    );
    assert!(
        w.llm.requests("builder").is_empty(),
        "the Builder ran on a broken config"
    );
    assert!(w.gh.check_runs(REPO).is_empty());
}
