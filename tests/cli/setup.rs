//! `vibeloop setup` against the fake GitHub, with the test in the browser's and GitHub's place:
//! it reads the setup page's form, then follows GitHub's redirect to `/callback` with a code the
//! fake knows. The credentials must land in a new env file with mode 0600 that `serve` accepts;
//! a forged state, a code GitHub refuses and an existing env file must leave nothing written.

use crate::support;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clap::Parser as _;
use serde_json::{Value, json};
use support::bot::app_public_key;
use support::fake_github::{self, FakeGitHub};
use support::openapi;
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::oneshot;
use vibeloop::app::setup::{self, Registered};
use vibeloop::config::tools::SetupArgs;
use vibeloop::config::{Cli, Command, ServeConfig};

const PUBLIC_URL: &str = "https://bot.acme.test";
const APP_ID: u64 = 99;

struct World {
    dir: tempfile::TempDir,
    gh: FakeGitHub,
    http: reqwest::Client,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: APP_ID,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("gh"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    World {
        dir,
        gh,
        http: reqwest::Client::new(),
    }
}

impl World {
    fn env_file(&self) -> PathBuf {
        self.dir.path().join("vibeloop.env")
    }

    fn args(&self) -> SetupArgs {
        SetupArgs {
            listen: "127.0.0.1:0".into(),
            public_url: PUBLIC_URL.into(),
            org: None,
            name: "vibeloop-test".into(),
            github_url: self.gh.url.clone(),
            github_api_url: self.gh.url.clone(),
            env_file: self.env_file(),
            manifest: None,
        }
    }

    /// Starts the setup server; its address, and the outcome once it stops.
    async fn start(
        &self,
        args: SetupArgs,
    ) -> (
        SocketAddr,
        tokio::task::JoinHandle<anyhow::Result<Registered>>,
    ) {
        let (tx, rx) = oneshot::channel();
        let task = tokio::spawn(async move { setup::serve(&args, tx).await });
        (rx.await.expect("the setup server starts"), task)
    }

    /// The start page's form: where it posts, and the manifest it carries.
    async fn form(&self, addr: SocketAddr) -> (String, Value) {
        let page = self.get(&format!("http://{addr}/")).await;
        assert_eq!(page.0, 200, "{}", page.1);
        let action = attribute(&page.1, "action=\"");
        let manifest = attribute(&page.1, "name=\"manifest\" value=\"");
        assert!(page.1.contains("method=\"post\""), "{}", page.1);
        (action, serde_json::from_str(&manifest).unwrap())
    }

    /// What GitHub's redirect does: the browser opens `/callback`.
    async fn callback(&self, addr: SocketAddr, code: &str, state: &str) -> (u16, String) {
        let url = reqwest::Url::parse_with_params(
            &format!("http://{addr}/callback"),
            [("code", code), ("state", state)],
        )
        .unwrap();
        self.get(url.as_str()).await
    }

    async fn get(&self, url: &str) -> (u16, String) {
        let r = self.http.get(url).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    fn conversions(&self) -> Vec<fake_github::Recorded> {
        self.gh
            .requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/app-manifests/"))
            .collect()
    }
}

/// The value of the double-quoted attribute that starts right after `prefix`, unescaped.
fn attribute(html: &str, prefix: &str) -> String {
    let start = html
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix} in {html}"))
        + prefix.len();
    let raw = &html[start..start + html[start..].find('"').unwrap()];
    raw.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn state_of(action: &str) -> String {
    let url = reqwest::Url::parse(action).unwrap();
    let state = url.query_pairs().find(|(k, _)| k == "state").unwrap().1;
    state.into_owned()
}

/// What `set -a; . FILE; set +a` puts in `var`.
fn sourced(env_file: &Path, var: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", r#"set -a; . "$1"; set +a; printenv "$2""#, "sh"])
        .arg(env_file)
        .arg(var)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{var} is not set by {}",
        env_file.display()
    );
    let mut value = String::from_utf8(out.stdout).unwrap();
    value.pop(); // printenv's newline
    value
}

async fn outcome(
    task: tokio::task::JoinHandle<anyhow::Result<Registered>>,
) -> anyhow::Result<Registered> {
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the setup server stops after the exchange")
        .unwrap()
}

#[tokio::test]
async fn registers_the_app_and_writes_its_credentials_to_a_private_env_file() {
    let w = world().await;
    let app = w.gh.add_manifest_code("abc123");
    let (addr, task) = w.start(w.args()).await;

    let (action, manifest) = w.form(addr).await;
    let state = state_of(&action);
    assert_eq!(
        action,
        format!("{}/settings/apps/new?state={state}", w.gh.url)
    );
    assert!(
        state.len() >= 32,
        "state {state:?} is too short to be unguessable"
    );
    assert_eq!(manifest["name"], "vibeloop-test");
    assert_eq!(manifest["url"], PUBLIC_URL);
    assert_eq!(
        manifest["hook_attributes"],
        json!({ "url": format!("{PUBLIC_URL}/webhook"), "active": true })
    );
    assert_eq!(manifest["redirect_url"], format!("http://{addr}/callback"));
    assert_eq!(
        manifest["default_permissions"],
        json!({ "contents": "write", "issues": "write", "pull_requests": "write",
                "checks": "write", "actions": "write", "statuses": "read", "merge_queues": "write",
                "metadata": "read" })
    );
    // `installation` and `installation_repositories` reach every App without subscribing, and
    // GitHub refuses a manifest that lists them ("Default events unsupported").
    assert_eq!(
        manifest["default_events"],
        json!([
            "issues",
            "issue_comment",
            "pull_request",
            "pull_request_review",
            "pull_request_review_comment",
            "push",
            "check_run",
            "check_suite",
            "status",
            "merge_group"
        ])
    );

    let (status, page) = w.callback(addr, "abc123", &state).await;
    assert_eq!(status, 200, "{page}");
    let env_file = w.env_file();
    assert!(page.contains(&env_file.display().to_string()), "{page}");
    assert!(page.contains(&format!(
        "{}/installations/new",
        app["html_url"].as_str().unwrap()
    )));
    assert!(page.contains("vibeloop serve"), "{page}");
    for secret in ["client_secret", "webhook_secret", "pem"] {
        let value = app[secret].as_str().unwrap().trim();
        assert!(!page.contains(value), "the page shows the {secret}");
    }

    let registered = outcome(task).await.unwrap();
    assert_eq!(registered.app_id, APP_ID);
    assert_eq!(registered.slug, app["slug"].as_str().unwrap());
    assert_eq!(registered.env_file, env_file);

    let mode = std::fs::metadata(&env_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "mode {mode:o}");
    assert_eq!(sourced(&env_file, "GITHUB_APP_ID"), APP_ID.to_string());
    assert_eq!(sourced(&env_file, "GITHUB_API_URL"), w.gh.url);
    assert_eq!(
        sourced(&env_file, "GITHUB_WEBHOOK_SECRET"),
        app["webhook_secret"]
    );
    assert_eq!(
        sourced(&env_file, "GITHUB_PRIVATE_KEY"),
        app["pem"].as_str().unwrap().trim_end()
    );
    assert_eq!(
        sourced(&env_file, "VIBELOOP_GITHUB_CLIENT_ID"),
        app["client_id"]
    );
    assert_eq!(
        sourced(&env_file, "VIBELOOP_GITHUB_CLIENT_SECRET"),
        app["client_secret"]
    );
    // The App's owner (a person here) may sign in to the dashboard.
    assert_eq!(
        sourced(&env_file, "VIBELOOP_DASHBOARD_USERS"),
        app["owner"]["login"]
    );

    // `serve` takes what was written.
    let mut argv = vec!["vibeloop".to_owned(), "serve".into()];
    for (flag, var) in [
        ("--github-app-id", "GITHUB_APP_ID"),
        ("--github-private-key", "GITHUB_PRIVATE_KEY"),
        ("--github-webhook-secret", "GITHUB_WEBHOOK_SECRET"),
        ("--github-api-url", "GITHUB_API_URL"),
        ("--github-client-id", "VIBELOOP_GITHUB_CLIENT_ID"),
        ("--github-client-secret", "VIBELOOP_GITHUB_CLIENT_SECRET"),
        ("--dashboard-users", "VIBELOOP_DASHBOARD_USERS"),
    ] {
        argv.push(format!("{flag}={}", sourced(&env_file, var)));
    }
    let cli = Cli::try_parse_from(argv).unwrap();
    let Command::Serve(args) = cli.command else {
        unreachable!()
    };
    let config = ServeConfig::from_args(&args).unwrap();
    assert_eq!(config.app.expect("App credentials").app_id, APP_ID);

    let conversions = w.conversions();
    assert_eq!(conversions.len(), 1, "{conversions:?}");
    assert_eq!(conversions[0].method, "POST");
    assert_eq!(conversions[0].path, "/app-manifests/abc123/conversions");
    assert_eq!(conversions[0].status, 201);
    openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test]
async fn a_callback_with_a_wrong_state_is_refused_and_writes_nothing() {
    let w = world().await;
    w.gh.add_manifest_code("abc123");
    let (addr, task) = w.start(w.args()).await;
    let (action, _) = w.form(addr).await;
    let state = state_of(&action);

    let mut altered = state.clone().into_bytes();
    altered[0] = if altered[0] == b'0' { b'1' } else { b'0' };
    let altered = String::from_utf8(altered).unwrap();
    for wrong in ["", "forged", &altered] {
        let (status, page) = w.callback(addr, "abc123", wrong).await;
        assert_eq!(status, 400, "state {wrong:?}: {page}");
        assert!(page.contains("did not come from this setup"), "{page}");
    }
    let (status, _) = w.get(&format!("http://{addr}/callback?code=abc123")).await;
    assert_eq!(status, 400, "a callback without state");
    assert!(!w.env_file().exists());
    assert!(w.conversions().is_empty(), "the code was exchanged");

    // A forged link does not end the setup: GitHub's own redirect still completes it.
    let (status, page) = w.callback(addr, "abc123", &state).await;
    assert_eq!(status, 200, "{page}");
    outcome(task).await.unwrap();
    assert!(w.env_file().exists());
}

#[tokio::test]
async fn a_code_github_refuses_is_shown_and_ends_the_setup_without_writing() {
    let w = world().await;
    let (addr, task) = w.start(w.args()).await;
    let state = state_of(&w.form(addr).await.0);

    let (status, page) = w.callback(addr, "unknown-code", &state).await;
    assert_eq!(status, 502, "{page}");
    assert!(
        page.contains("GitHub refused the code (HTTP 404: Not Found)"),
        "{page}"
    );
    assert!(page.contains("vibeloop setup"), "{page}");
    let err = format!("{:#}", outcome(task).await.unwrap_err());
    assert!(
        err.contains("GitHub refused the code (HTTP 404: Not Found)"),
        "{err}"
    );
    assert!(!w.env_file().exists());
    assert_eq!(w.conversions()[0].status, 404);
    openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test]
async fn an_unreachable_api_is_shown_and_ends_the_setup_without_writing() {
    let w = world().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let args = SetupArgs {
        github_api_url: format!("http://{closed}"),
        ..w.args()
    };
    let (addr, task) = w.start(args).await;
    let state = state_of(&w.form(addr).await.0);

    let (status, page) = w.callback(addr, "abc123", &state).await;
    assert_eq!(status, 502, "{page}");
    let expected = format!("cannot reach GitHub&#39;s API at http://{closed}/");
    assert!(page.contains(&expected), "{page}");
    assert!(!page.contains("abc123"), "the page shows the code: {page}");
    let err = format!("{:#}", outcome(task).await.unwrap_err());
    assert!(
        err.contains("cannot reach GitHub's API") && !err.contains("abc123"),
        "{err}"
    );
    assert!(!w.env_file().exists());
}

#[tokio::test]
async fn an_existing_env_file_is_never_overwritten() {
    let w = world().await;
    w.gh.add_manifest_code("abc123");
    let env_file = w.env_file();

    // There before the setup starts: it does not start.
    std::fs::write(&env_file, "KEEP=1\n").unwrap();
    let (tx, rx) = oneshot::channel();
    let err = setup::serve(&w.args(), tx).await.unwrap_err().to_string();
    assert!(err.contains(&env_file.display().to_string()), "{err}");
    assert!(
        err.contains("never overwrites") && err.contains("--env-file"),
        "{err}"
    );
    assert!(rx.await.is_err(), "the server started");

    // Appearing while the user is on GitHub: the code is kept for after the file is moved.
    std::fs::remove_file(&env_file).unwrap();
    let (addr, task) = w.start(w.args()).await;
    let state = state_of(&w.form(addr).await.0);
    std::fs::write(&env_file, "KEEP=1\n").unwrap();
    let (status, page) = w.callback(addr, "abc123", &state).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains(&env_file.display().to_string()), "{page}");
    assert!(page.contains("reload this page"), "{page}");
    assert_eq!(std::fs::read_to_string(&env_file).unwrap(), "KEEP=1\n");
    assert!(w.conversions().is_empty(), "the code was used");

    std::fs::rename(&env_file, w.dir.path().join("old.env")).unwrap();
    let (status, page) = w.callback(addr, "abc123", &state).await;
    assert_eq!(status, 200, "{page}");
    outcome(task).await.unwrap();
    assert_eq!(sourced(&env_file, "GITHUB_APP_ID"), APP_ID.to_string());
}

#[tokio::test]
async fn an_organisation_app_is_created_under_the_organisation() {
    let w = world().await;
    let args = SetupArgs {
        org: Some("acme".into()),
        ..w.args()
    };
    let (addr, _task) = w.start(args).await;
    let (action, _) = w.form(addr).await;
    let state = state_of(&action);
    assert_eq!(
        action,
        format!(
            "{}/organizations/acme/settings/apps/new?state={state}",
            w.gh.url
        )
    );
}

/// Runs the binary's `vibeloop setup` through one callback; its exit status, stdout and stderr.
async fn run_binary(w: &World, code: &str) -> (std::process::ExitStatus, String, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .args([
            "setup",
            "--listen",
            "127.0.0.1:0",
            "--public-url",
            PUBLIC_URL,
        ])
        .args(["--github-url", &w.gh.url, "--github-api-url", &w.gh.url])
        .arg("--env-file")
        .arg(w.env_file())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().expect("the address line");
    let page_url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    let addr: SocketAddr = page_url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let state = state_of(&w.form(addr).await.0);
    w.callback(addr, code, &state).await;
    let mut rest = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        rest.push_str(&line);
        rest.push('\n');
    }
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("setup exits after the callback")
        .unwrap();
    (
        out.status,
        rest,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_binary_prints_what_it_wrote_and_the_next_step_but_no_secret() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .args(["setup", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    assert!(
        text.contains("--public-url") && text.contains("--env-file"),
        "{text}"
    );

    let w = world().await;
    let app = w.gh.add_manifest_code("abc123");
    let (status, stdout, stderr) = run_binary(&w, "abc123").await;
    assert!(status.success(), "{stdout}{stderr}");
    let html_url = app["html_url"].as_str().unwrap();
    assert!(
        stdout.contains(&format!("(id {APP_ID}): {html_url}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&w.env_file().display().to_string()),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{html_url}/installations/new")),
        "{stdout}"
    );
    assert!(stdout.contains("vibeloop serve"), "{stdout}");
    for secret in ["client_secret", "webhook_secret", "pem"] {
        let value = app[secret].as_str().unwrap().trim();
        assert!(
            !stdout.contains(value) && !stderr.contains(value),
            "{secret} printed"
        );
    }

    // A refused code: said on stderr, and the exit status is a failure.
    std::fs::remove_file(w.env_file()).unwrap();
    let (status, _, stderr) = run_binary(&w, "abc123").await;
    assert!(!status.success());
    assert!(
        stderr.contains("error: GitHub refused the code (HTTP 404"),
        "{stderr}"
    );
    assert!(!w.env_file().exists());
}
