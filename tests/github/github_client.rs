//! The GitHub App client against the fake GitHub: the app's JWT, repository-scoped installation
//! tokens and their cache, and retries that never duplicate a side effect.

use crate::support;

use std::time::{Duration, Instant};

use support::bot::{app_key_path, app_public_key};
use support::fake_github::{self, FakeGitHub, Fault};
use vibeloop::config::AppCredentials;
use vibeloop::github::{GitHubApp, GitHubError};
use vibeloop::ids::{InstallationId, RepoName};

const APP_ID: u64 = 99;

async fn setup(token_ttl: Duration) -> (tempfile::TempDir, FakeGitHub, GitHubApp) {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: APP_ID,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("gh"),
        token_ttl,
    })
    .await;
    gh.add_installation(7, "acme");
    gh.add_repo(7, "acme/widgets", &[("README.md", "hi\n")]);
    gh.add_repo(8, "other/thing", &[("README.md", "hi\n")]);
    gh.add_issue("acme/widgets", "An issue", "");
    let creds = AppCredentials {
        app_id: APP_ID,
        private_key_pem: std::fs::read_to_string(app_key_path()).unwrap().into(),
    };
    let app = GitHubApp::new(
        &creds,
        &url::Url::parse(&gh.url).unwrap(),
        &url::Url::parse(&format!("{}/graphql", gh.url)).unwrap(),
    )
    .unwrap();
    (dir, gh, app)
}

/// The client of `acme/widgets`, installation 7.
async fn widgets(app: &GitHubApp) -> vibeloop::github::RepoClient {
    app.repo(InstallationId(7), &repo("acme/widgets"))
        .await
        .unwrap()
}

fn repo(s: &str) -> RepoName {
    RepoName::parse(s).unwrap()
}

fn count(gh: &FakeGitHub, method: &str, suffix: &str) -> usize {
    gh.requests()
        .iter()
        .filter(|r| r.method == method && r.path.ends_with(suffix))
        .count()
}

#[tokio::test]
async fn the_app_jwt_is_rs256_issued_in_the_past_and_short_lived() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    widgets(&app).await;
    // One for the installation token, one for the App's own name (`GET /app`, asked once).
    let claims = gh.jwt_claims();
    assert_eq!(claims.len(), 2);
    widgets(&app).await;
    assert_eq!(
        gh.jwt_claims().len(),
        2,
        "a token or the App's name was asked again"
    );
    let now = chrono::Utc::now().timestamp();
    let (iat, exp) = (
        claims[0]["iat"].as_i64().unwrap(),
        claims[0]["exp"].as_i64().unwrap(),
    );
    assert_eq!(claims[0]["iss"].as_u64(), Some(APP_ID));
    assert!(
        (now - 62..=now - 58).contains(&iat),
        "iat {iat} is not 60 s in the past"
    );
    assert!(exp - iat <= 600, "exp - iat = {}", exp - iat);
    // The token request asked for this repository only.
    let req = gh
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/access_tokens"))
        .unwrap();
    assert_eq!(
        req.body.unwrap()["repositories"],
        serde_json::json!(["widgets"])
    );
}

#[tokio::test]
async fn tokens_are_cached_until_five_minutes_before_expiry() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    for _ in 0..3 {
        widgets(&app).await.token().await.unwrap();
    }
    assert_eq!(
        count(&gh, "POST", "/access_tokens"),
        1,
        "an hour-long token was minted again"
    );

    let (_d, gh, app) = setup(Duration::from_secs(299)).await;
    let client = widgets(&app).await;
    client.token().await.unwrap();
    assert_eq!(
        count(&gh, "POST", "/access_tokens"),
        2,
        "a token with under 5 minutes left was reused"
    );
}

#[tokio::test]
async fn an_expired_token_is_renewed_and_the_call_resent() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    gh.expire_tokens();
    let comments = client.issue_comments(1).await.unwrap();
    assert!(comments.is_empty());
    assert_eq!(count(&gh, "POST", "/access_tokens"), 2);
}

#[tokio::test]
async fn repositories_outside_the_installation_are_refused() {
    let (_d, _gh, app) = setup(Duration::from_secs(3600)).await;
    let err = app
        .repo(InstallationId(7), &repo("other/thing"))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, GitHubError::NotInstalled { .. }), "{err}");
    let err = app
        .repo(InstallationId(12345), &repo("acme/widgets"))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, GitHubError::NotInstalled { .. }), "{err}");
}

#[tokio::test]
async fn a_create_that_failed_after_taking_effect_is_not_repeated() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    gh.inject(Fault::new("POST", "/issues/1/comments", 502).after_effect());
    let marker = "<!-- vibeloop:status T-1 -->";
    let id = client
        .upsert_marked_comment(1, marker, None, &format!("{marker}\nhello"))
        .await
        .unwrap();
    let comments = gh.comments("acme/widgets", 1);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(comments[0].id, id);
    // Later updates edit the same comment.
    client
        .upsert_marked_comment(1, marker, Some(id), &format!("{marker}\nbye"))
        .await
        .unwrap();
    let comments = gh.comments("acme/widgets", 1);
    assert_eq!(
        (comments.len(), comments[0].body.ends_with("bye")),
        (1, true)
    );
}

#[tokio::test]
async fn a_create_refused_by_a_5xx_is_retried_once_confirmed_absent() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    gh.inject(Fault::new("POST", "/issues/1/comments", 500));
    let marker = "<!-- m -->";
    client
        .upsert_marked_comment(1, marker, None, marker)
        .await
        .unwrap();
    assert_eq!(gh.comments("acme/widgets", 1).len(), 1);
    assert_eq!(count(&gh, "POST", "/issues/1/comments"), 2);
    // It looked before each try.
    assert_eq!(count(&gh, "GET", "/issues/1/comments"), 2);
}

#[tokio::test]
async fn safe_reads_are_retried_and_rate_limits_honour_retry_after() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    gh.inject(Fault::new("GET", "/issues/1/comments", 503).times(2));
    client.issue_comments(1).await.unwrap();
    assert_eq!(count(&gh, "GET", "/issues/1/comments"), 3);

    gh.inject(Fault::new("POST", "/issues/1/comments", 429).retry_after(1));
    let started = Instant::now();
    let c = client.create_comment(1, "once").await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(
        gh.comments("acme/widgets", 1)
            .iter()
            .filter(|x| x.id == c.id)
            .count(),
        1
    );
    assert_eq!(count(&gh, "POST", "/issues/1/comments"), 2);

    // A secondary rate limit: 403 with Retry-After is a wait, not a refusal.
    gh.inject(Fault::new("GET", "/issues/1/comments", 403).retry_after(1));
    let started = Instant::now();
    client.issue_comments(1).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(count(&gh, "GET", "/issues/1/comments"), 5);
}

#[tokio::test]
async fn refusals_are_not_retried() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    gh.inject(Fault::new("POST", "/issues/1/comments", 403));
    let err = client.create_comment(1, "x").await.unwrap_err();
    assert!(
        matches!(err, GitHubError::Api { status, .. } if status == 403),
        "{err}"
    );
    assert_eq!(count(&gh, "POST", "/issues/1/comments"), 1);
    // A 5xx on a create is reported as ambiguous, not blindly sent again.
    gh.inject(Fault::new("POST", "/issues/1/comments", 502));
    let err = client.create_comment(1, "x").await.unwrap_err();
    assert!(matches!(err, GitHubError::Ambiguous { .. }), "{err}");
    assert_eq!(count(&gh, "POST", "/issues/1/comments"), 2);
}

#[tokio::test]
async fn check_runs_and_pull_requests_are_found_before_being_made() {
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    let sha =
        vibeloop::ids::CommitSha::parse(&gh.branch_sha("acme/widgets", "main").unwrap()).unwrap();
    gh.inject(Fault::new("POST", "/check-runs", 502).after_effect());
    let a = client
        .ensure_check_run("hive/test", &sha, "vibeloop:T-1:test", "queued")
        .await
        .unwrap();
    let b = client
        .ensure_check_run("hive/test", &sha, "vibeloop:T-1:test", "queued")
        .await
        .unwrap();
    assert_eq!(a.id, b.id);
    assert_eq!(gh.check_runs("acme/widgets").len(), 1);

    let git = git2::Repository::open_bare(gh.bare_path("acme/widgets")).unwrap();
    support::repos::commit_files(&git, "feat/T-1", &[("x.txt", "x")], "x");
    gh.inject(Fault::new("POST", "/pulls", 502).after_effect());
    let p = client
        .open_pull("T-1: x", "feat/T-1", "main", "Closes #1.", false)
        .await
        .unwrap();
    let q = client
        .open_pull("T-1: x", "feat/T-1", "main", "Closes #1.", false)
        .await
        .unwrap();
    assert_eq!(p.number, q.number);
    assert_eq!(gh.pulls("acme/widgets").len(), 1);
}

#[tokio::test]
async fn annotations_go_in_batches_of_fifty() {
    use vibeloop::annotation::{Annotation, Level};
    use vibeloop::github::checks::{CheckOutput, Conclusion};
    let (_d, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    let sha =
        vibeloop::ids::CommitSha::parse(&gh.branch_sha("acme/widgets", "main").unwrap()).unwrap();
    let run = client
        .ensure_check_run("hive/lint", &sha, "vibeloop:T-1:lint", "queued")
        .await
        .unwrap();
    client
        .check_run_started(run.id, "hive/lint: running")
        .await
        .unwrap();
    let annotations: Vec<Annotation> = (1..=120)
        .map(|i| Annotation::new("src/a.py", i, Level::Warning, format!("finding {i}")))
        .collect();
    let output = CheckOutput {
        title: "hive/lint failed".into(),
        summary: "120 findings".into(),
    };
    client
        .complete_check_run(run.id, Conclusion::Failure, &output, &annotations)
        .await
        .unwrap();

    let stored = gh.check_runs("acme/widgets");
    assert_eq!(stored[0].annotations.len(), 120);
    assert_eq!(stored[0].annotations[119]["message"], "finding 120");
    assert_eq!(stored[0].statuses, ["queued", "in_progress", "completed"]);
    assert_eq!(stored[0].conclusion.as_deref(), Some("failure"));
    // Three updates carried them (50 + 50 + 20), after the one that started the run.
    assert_eq!(count(&gh, "PATCH", &format!("/check-runs/{}", run.id)), 4);
    support::openapi::assert_requests_valid(&gh.requests());
}

#[tokio::test]
async fn a_jwt_signed_with_a_key_github_does_not_know_gets_no_token() {
    let (_d, gh, _app) = setup(Duration::from_secs(3600)).await;
    let key =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys/stranger.pem");
    let creds = AppCredentials {
        app_id: APP_ID,
        private_key_pem: std::fs::read_to_string(key).unwrap().into(),
    };
    let stranger = GitHubApp::new(
        &creds,
        &url::Url::parse(&gh.url).unwrap(),
        &url::Url::parse(&format!("{}/graphql", gh.url)).unwrap(),
    )
    .unwrap();
    let err = stranger
        .repo(InstallationId(7), &repo("acme/widgets"))
        .await
        .err()
        .expect("refused");
    assert!(
        !err.is_transient(),
        "a bad key is not worth retrying: {err}"
    );
    let statuses: Vec<u16> = gh
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/access_tokens"))
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [401]);
}

/// GitHub Enterprise Server: the REST root is `https://HOST/api/v3` and GraphQL lives at
/// `https://HOST/api/graphql`, beside it. A front server puts the fake GitHub at those two
/// places (as a GHES host would) and records which paths the client asked for.
#[tokio::test]
async fn on_enterprise_server_graphql_is_asked_at_api_graphql() {
    use axum::body::{Body, Bytes};
    use axum::http::{HeaderMap, Method, Uri};
    let (_dir, gh, _) = setup(Duration::from_secs(3600)).await;
    gh.push_commit("acme/widgets", "feature", &[("a.txt", "a\n")], "A");
    let pr = gh.open_pull("acme/widgets", "alice", "feature", "main", "A draft");
    gh.state().repos.get_mut("acme/widgets").unwrap().pulls[0].draft = true;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (upstream, log) = (gh.url.clone(), seen.clone());
    let front = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let (upstream, log) = (upstream.clone(), log.clone());
            async move {
                let path = uri.path().to_owned();
                log.lock().unwrap().push(path.clone());
                let inner = match (path.strip_prefix("/api/v3"), path.as_str()) {
                    (Some(rest), _) => rest.to_owned(),
                    (None, "/api/graphql") => "/graphql".to_owned(),
                    _ => {
                        return axum::http::Response::builder()
                            .status(404)
                            .body(Body::empty())
                            .unwrap();
                    }
                };
                let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
                let mut req =
                    reqwest::Client::new().request(method, format!("{upstream}{inner}{query}"));
                for (k, v) in headers.iter().filter(|(k, _)| *k != "host") {
                    req = req.header(k, v);
                }
                let answer = req.body(body).send().await.unwrap();
                let status = answer.status();
                let bytes = answer.bytes().await.unwrap();
                axum::http::Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(bytes))
                    .unwrap()
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, front).await.unwrap() });

    let api = url::Url::parse(&format!("{host}/api/v3")).unwrap();
    let graphql = vibeloop::config::default_graphql_url(&api);
    assert_eq!(graphql.as_str(), format!("{host}/api/graphql"));
    let creds = AppCredentials {
        app_id: APP_ID,
        private_key_pem: std::fs::read_to_string(app_key_path()).unwrap().into(),
    };
    let app = GitHubApp::new(&creds, &api, &graphql).unwrap();
    let client = widgets(&app).await;
    client.mark_ready(pr).await.unwrap();
    assert!(!gh.pull("acme/widgets", pr).unwrap().draft);
    let paths = seen.lock().unwrap().clone();
    assert!(paths.contains(&"/api/graphql".to_owned()), "{paths:?}");
    assert!(
        !paths.iter().any(|p| p.ends_with("/api/v3/graphql")),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .all(|p| p.starts_with("/api/v3/") || p == "/api/graphql"),
        "{paths:?}"
    );
}

#[tokio::test]
async fn commits_made_through_the_git_database_are_the_apps_and_verified() {
    use vibeloop::github::gitdb::TreeChange;
    use vibeloop::ids::CommitSha;
    let (_dir, gh, app) = setup(Duration::from_secs(3600)).await;
    let client = widgets(&app).await;
    let main = CommitSha::parse(&gh.branch_sha("acme/widgets", "main").unwrap()).unwrap();
    let git = git2::Repository::open_bare(gh.bare_path("acme/widgets")).unwrap();
    let base = git.find_commit(main.oid()).unwrap().tree_id().to_string();
    // A script with its mode, a file in a new directory, and the README removed.
    let script = client.create_blob(b"#!/bin/sh\necho hi\n").await.unwrap();
    let again = client.create_blob(b"#!/bin/sh\necho hi\n").await.unwrap();
    assert_eq!(script, again, "a blob is its content");
    let nested = client.create_blob(&[0, 159, 146, 150]).await.unwrap();
    let changes = [
        TreeChange {
            path: "run.sh".into(),
            mode: "100755",
            sha: Some(script),
        },
        TreeChange {
            path: "data/raw/x.bin".into(),
            mode: "100644",
            sha: Some(nested),
        },
        TreeChange {
            path: "README.md".into(),
            mode: "100644",
            sha: None,
        },
    ];
    let tree = client.create_tree(Some(&base), &changes).await.unwrap();
    let made = client
        .create_commit(
            "T-1: add run.sh\n\nSigned-off-by: x <x@example.com>",
            &tree,
            &[&main],
        )
        .await
        .unwrap();
    assert!(made.verified, "GitHub signs what the App commits as itself");
    let commit = git.find_commit(made.sha.oid()).unwrap();
    assert_eq!(commit.parent_ids().collect::<Vec<_>>(), [main.oid()]);
    assert_eq!(commit.author().name(), Some("vibeloop[bot]"));
    assert!(
        commit
            .message()
            .unwrap()
            .ends_with("Signed-off-by: x <x@example.com>")
    );
    let t = commit.tree().unwrap();
    assert!(t.get_path(std::path::Path::new("README.md")).is_err());
    let run = t.get_path(std::path::Path::new("run.sh")).unwrap();
    assert_eq!(run.filemode(), 0o100755);
    let bin = t.get_path(std::path::Path::new("data/raw/x.bin")).unwrap();
    assert_eq!(
        git.find_blob(bin.id()).unwrap().content(),
        [0, 159, 146, 150]
    );
    // The commit's API answer says so too, as GitHub's does.
    let url = format!(
        "{}/repos/acme/widgets/commits/{}",
        gh.url,
        made.sha.as_str()
    );
    let token = client.token().await.unwrap();
    let v: serde_json::Value = reqwest::Client::new()
        .get(url)
        .bearer_auth(secrecy::ExposeSecret::expose_secret(&token))
        .header("user-agent", "test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["commit"]["verification"]["verified"], true, "{v}");
    support::openapi::assert_requests_valid(&gh.requests());
}
