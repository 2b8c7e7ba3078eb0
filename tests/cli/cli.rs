//! The `vibeloop` binary as users run it: settings errors are one line naming the setting,
//! secrets stay out of `--help`, and `serve` runs on its embedded defaults with only the
//! webhook secret set.

use crate::support;

use std::process::Command;
use std::time::Duration;
use support::bot::{Bot, BotEnv};
use support::payloads;

fn vibeloop(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn bad_settings_stop_start_up_with_one_line_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[], "GITHUB_WEBHOOK_SECRET"),
        (
            &[("GITHUB_WEBHOOK_SECRET", "s"), ("GITHUB_APP_ID", "twelve")],
            "GITHUB_APP_ID",
        ),
        (
            &[
                ("GITHUB_WEBHOOK_SECRET", "s"),
                ("GITHUB_APP_ID", "12"),
                ("GITHUB_PRIVATE_KEY_PATH", "/no/such.pem"),
            ],
            "GITHUB_PRIVATE_KEY_PATH",
        ),
        (
            &[
                ("GITHUB_WEBHOOK_SECRET", "s"),
                ("VIBELOOP_LISTEN", "port 80"),
            ],
            "VIBELOOP_LISTEN",
        ),
        (
            &[
                ("GITHUB_WEBHOOK_SECRET", "s"),
                ("GITHUB_API_URL", "api.github.com"),
            ],
            "GITHUB_API_URL",
        ),
        (
            &[
                ("GITHUB_WEBHOOK_SECRET", "s"),
                ("DATABASE_URL", "mysql://x"),
            ],
            "DATABASE_URL",
        ),
    ];
    for (env, setting) in cases {
        let mut env = env.to_vec();
        env.push(("VIBELOOP_DATA_DIR", data));
        let out = vibeloop(&["serve"], &env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{setting}: started");
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(lines.len(), 1, "{setting}: {stderr}");
        assert!(lines[0].contains(setting), "{setting}: {stderr}");
    }
}

#[test]
fn help_never_shows_secret_values() {
    let out = vibeloop(
        &["serve", "--help"],
        &[
            ("GITHUB_WEBHOOK_SECRET", "hunter2-webhook"),
            ("VIBELOOP_LLM_API_KEY", "sk-hunter2"),
            ("GITHUB_PRIVATE_KEY", "-----BEGIN hunter2"),
        ],
    );
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        help.contains("GITHUB_WEBHOOK_SECRET") && help.contains("VIBELOOP_LLM_API_KEY"),
        "{help}"
    );
    assert!(!help.contains("hunter2"), "{help}");
}

#[test]
fn migrate_creates_the_sqlite_database() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested/data");
    let out = vibeloop(
        &["migrate"],
        &[("VIBELOOP_DATA_DIR", data.to_str().unwrap())],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "migrations applied\n");
    assert!(data.join("vibeloop.db").exists());
    // Twice is fine.
    assert!(
        vibeloop(
            &["migrate"],
            &[("VIBELOOP_DATA_DIR", data.to_str().unwrap())]
        )
        .status
        .success()
    );
}

#[tokio::test]
async fn serve_runs_with_only_the_webhook_secret_and_keeps_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let bot = Bot::start(&BotEnv {
        data_dir: dir.path().join("data"),
        github_api_url: "https://api.github.com".into(),
        llm_url: "http://127.0.0.1:11434/v1".into(),
        webhook_secret: "only-this".into(),
        app_id: None,
        extra: vec![],
        cwd: None,
    })
    .await;
    let body = payloads::issues_labeled("acme/widgets", Some(7), 1, "t", "b", "hive");
    let sent = payloads::send(&bot.url, "only-this", "issues", &body).await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let log = bot.log();
    assert!(log.contains("GITHUB_APP_ID is not set"), "{log}");
    assert!(log.contains("no ticket runs until"), "{log}");
    // Stored and queued for when the App's credentials are set: nothing is lost.
    let store = bot.store().await;
    let d = store.delivery(&sent.delivery).await.unwrap().unwrap();
    assert_eq!(d.status, "queued");
    let ready = reqwest::get(format!("{}/readyz", bot.url)).await.unwrap();
    assert_eq!(ready.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line_with_the_delivery_span() {
    let dir = tempfile::tempdir().unwrap();
    let bot = Bot::start(&BotEnv {
        data_dir: dir.path().join("data"),
        github_api_url: "https://api.github.com".into(),
        llm_url: "http://127.0.0.1:11434/v1".into(),
        webhook_secret: "json-logs-secret".into(),
        app_id: None,
        extra: vec![("VIBELOOP_LOG_FORMAT".into(), "json".into())],
        cwd: None,
    })
    .await;
    let body = payloads::issues_labeled("acme/widgets", Some(7), 1, "t", "b", "hive");
    let sent = payloads::send(&bot.url, "json-logs-secret", "issues", &body).await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let line = bot
        .wait_until(
            "the delivery's log line",
            Duration::from_secs(30),
            || async {
                bot.log()
                    .lines()
                    .find(|l| l.contains("delivery queued"))
                    .map(str::to_owned)
            },
        )
        .await;
    let log = bot.log();
    for l in log.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{l}");
    }
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["span"]["name"], "delivery", "{line}");
    assert_eq!(v["span"]["id"], sent.delivery.as_str(), "{line}");
    assert!(!log.contains("json-logs-secret"), "the secret was logged");
}

/// The README's "try it without GitHub": the fakes as standalone programs, the demo repository,
/// the demo script, the bot — and a pull request at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_demo_runs_with_the_standalone_fakes() {
    let dir = tempfile::tempdir().unwrap();
    let (gh_port, llm_port) = (support::free_port(), support::free_port());
    let built = support::built_example;
    let example = |name: &str, args: &[String]| {
        let mut c = Command::new(built(name));
        c.args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        support::KillOnDrop(c.spawn().unwrap())
    };
    let help = Command::new(built("fake_github"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--webhook-url"));
    let env = BotEnv {
        data_dir: dir.path().join("data"),
        github_api_url: format!("http://127.0.0.1:{gh_port}"),
        llm_url: format!("http://127.0.0.1:{llm_port}/v1"),
        webhook_secret: "change-me".into(),
        app_id: Some(1),
        extra: vec![],
        cwd: None,
    };
    let bot = Bot::start(&env).await;
    let _gh = example(
        "fake_github",
        &[
            "--listen".into(),
            format!("127.0.0.1:{gh_port}"),
            "--repos".into(),
            dir.path().join("gh").display().to_string(),
            "--demo".into(),
            "--webhook-url".into(),
            bot.url.clone(),
            "--webhook-secret".into(),
            "change-me".into(),
        ],
    );
    let _llm = example(
        "fake_llm",
        &[
            "--listen".into(),
            format!("127.0.0.1:{llm_port}"),
            "--script".into(),
            "examples/demo-script.json".into(),
        ],
    );
    let http = reqwest::Client::new();
    let label = format!("http://127.0.0.1:{gh_port}/_fake/label/acme/demo/1/hive");
    bot.wait_until(
        "the fake GitHub to take the label",
        Duration::from_secs(120),
        || support::answers_ok(http.post(&label)),
    )
    .await;
    let state = format!("http://127.0.0.1:{gh_port}/_fake/state");
    let pulls = bot
        .wait_until(
            "the demo's pull request",
            Duration::from_secs(120),
            || async {
                let v: serde_json::Value = http.get(&state).send().await.ok()?.json().await.ok()?;
                let pulls = v["acme/demo"]["pulls"].as_array()?.clone();
                (!pulls.is_empty()).then_some(pulls)
            },
        )
        .await;
    assert_eq!(pulls[0]["head"], "feat/T-1", "{pulls:?}");
}
