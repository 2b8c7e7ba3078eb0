//! The client's view of a repository's own CI, against the fake GitHub: other Apps' check runs
//! (each re-run too) and commit statuses, a check run's annotations, an Actions job's log read
//! from where GitHub redirects — without the installation token — and a job's re-run.

use crate::support;

use std::time::Duration;

use support::bot::{app_key_path, app_public_key};
use support::fake_github::{self, FakeGitHub, JobRun};
use vibeloop::config::AppCredentials;
use vibeloop::github::GitHubApp;
use vibeloop::github::ci::CiState;
use vibeloop::ids::{CommitSha, InstallationId, RepoName};

const REPO: &str = "acme/widgets";

/// The fake GitHub with `acme/widgets` (installation 7) and the App's client for it; webhooks
/// go nowhere.
pub(crate) async fn setup() -> (tempfile::TempDir, FakeGitHub, vibeloop::github::RepoClient) {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: 99,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("gh"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(7, "acme");
    gh.add_repo(7, REPO, &[("README.md", "hi\n")]);
    // Nobody listens: a re-run's webhook goes nowhere.
    gh.set_webhook("http://127.0.0.1:9", "secret");
    let creds = AppCredentials {
        app_id: 99,
        private_key_pem: std::fs::read_to_string(app_key_path()).unwrap().into(),
    };
    let api = url::Url::parse(&gh.url).unwrap();
    let graphql = url::Url::parse(&format!("{}/graphql", gh.url)).unwrap();
    let app = GitHubApp::new(&creds, &api, &graphql).unwrap();
    let client = app
        .repo(InstallationId(7), &RepoName::parse(REPO).unwrap())
        .await
        .unwrap();
    (dir, gh, client)
}

#[tokio::test]
async fn another_ci_is_read_with_its_annotations_and_an_actions_log_without_the_token() {
    let (_d, gh, client) = setup().await;
    let sha = CommitSha::parse(&gh.branch_sha(REPO, "main").unwrap()).unwrap();
    let ours = client
        .ensure_check_run("hive/test", &sha, "vibeloop:T-1:test", "queued")
        .await
        .unwrap();
    let mut log = String::new();
    for i in 0..2000 {
        log.push_str(&format!("line {i}\n"));
    }
    log.push_str("FAILED test_calc.py::test_adds\n");
    let job = gh.store_actions_job(
        REPO,
        sha.as_str(),
        "ci / test",
        JobRun::new("failure", &log).summary("1 failed").annotate(
            "test_calc.py",
            3,
            "AssertionError: 5 != -1",
        ),
    );
    gh.set_status(REPO, sha.as_str(), "ci/legacy", "pending");
    gh.set_status(REPO, sha.as_str(), "ci/legacy", "error");

    let reports = client.ci_reports(&sha).await.unwrap();
    let by_name = |n: &'static str| reports.iter().filter(move |r| r.name == n);
    let mine = by_name("hive/test").next().unwrap();
    assert_eq!(mine.external_id.as_deref(), Some("vibeloop:T-1:test"));
    assert_eq!((mine.id, mine.state), (Some(ours.id), CiState::Pending));
    let actions = by_name("ci / test").next().unwrap();
    assert!(actions.is_actions_job(), "{actions:?}");
    assert_eq!(actions.state, CiState::Failed);
    assert_eq!(actions.summary.as_deref(), Some("1 failed"));
    assert_eq!(
        actions.describe_as("failure"),
        "`ci / test` (GitHub Actions, failure)"
    );
    let legacy: Vec<_> = by_name("ci/legacy").collect();
    assert_eq!(legacy.len(), 1, "the latest status of a context only");
    assert_eq!((legacy[0].id, legacy[0].state), (None, CiState::Failed));

    let annotations = client.check_annotations(job).await.unwrap();
    assert_eq!(annotations.len(), 1);
    assert_eq!(
        (annotations[0].path.as_str(), annotations[0].start_line),
        ("test_calc.py", 3)
    );

    let tail = client.job_log_tail(job, 1000).await.unwrap().unwrap();
    assert_eq!(tail.read, log.len());
    assert!(
        tail.text.ends_with("FAILED test_calc.py::test_adds\n"),
        "{}",
        tail.text
    );
    assert!(
        tail.text.len() <= 1000 && tail.text.starts_with("line "),
        "{}",
        tail.text
    );
    let (_, downloads) = gh.actions_record();
    assert_eq!(
        downloads,
        [(job, false)],
        "the log is fetched without a credential"
    );
    // A job without a log (another App's check run, or an expired one): nothing, no error.
    assert_eq!(client.job_log_tail(ours.id, 1000).await.unwrap(), None);

    // A re-run adds a run of the same name on the same commit; only Actions jobs re-run.
    assert!(client.rerun_job(job).await.unwrap());
    assert!(!client.rerun_job(ours.id).await.unwrap());
    let reports = client.ci_reports(&sha).await.unwrap();
    assert_eq!(reports.iter().filter(|r| r.name == "ci / test").count(), 2);
    support::openapi::assert_requests_valid(&gh.requests());
}
