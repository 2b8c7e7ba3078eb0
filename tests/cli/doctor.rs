//! `vibeloop doctor` as users run it (the real binary), against the fake GitHub, the fake model
//! server and this machine's Docker engine: a healthy setup passes every check and exits 0; a
//! broken one says, one line per check, what is wrong and how to fix it, skips what depends on a
//! failed check, exits 1 — and never prints a secret. A data directory on an ext4 without a
//! journal is warned of (on disks the test mounts: root and loop devices).
//!
//! Needs a Docker engine and the runner image (`docker/build-runner-image.sh`), like the sandbox
//! tests; "no Docker" is made deterministic with `DOCKER_HOST=unix:///nonexistent.sock`.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Connection as _;
use support::bot::{app_key_path, app_public_key};
use support::fake_github::{self, FakeGitHub, Rule, Ruleset};
use support::fake_llm::{FakeLlm, Script};

const APP_ID: u64 = 4242;
const WEBHOOK_SECRET: &str = "whsec-doctor-9f8e7d6c5b4a3210";
const LLM_KEY: &str = "sk-doctor-builder-key-0123";
const CRITIC_KEY: &str = "sk-doctor-critic-key-4567";
const HOST_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
const NO_DOCKER: &str = "unix:///nonexistent.sock";

/// What a run printed and how it ended.
struct Doctor {
    code: i32,
    out: String,
}

impl Doctor {
    /// The line of check `name` (not its `!` warnings).
    fn line(&self, name: &str) -> &str {
        let prefix = format!("{name}:");
        self.out
            .lines()
            .find(|l| {
                !l.starts_with('!')
                    && l.split_once(' ')
                        .is_some_and(|(_, rest)| rest.starts_with(&prefix))
            })
            .unwrap_or_else(|| panic!("no line for {name}:\n{}", self.out))
    }

    /// Asserts check `name` shows `symbol` and every one of `needles`.
    fn expect(&self, name: &str, symbol: char, needles: &[&str]) {
        let line = self.line(name);
        assert!(line.starts_with(symbol), "{name}: {line}\n{}", self.out);
        for n in needles {
            assert!(line.contains(n), "{name}: {n:?} missing from {line}");
        }
    }

    fn assert_no_secret(&self, secrets: &[&str]) {
        for s in secrets {
            assert!(!self.out.contains(s), "secret {s:?} printed:\n{}", self.out);
        }
    }
}

/// Runs `vibeloop doctor` with only `env` (and PATH, and the test's DOCKER_HOST unless `env`
/// sets one). Async, so the fakes in this process keep answering meanwhile.
async fn doctor(env: &[(&str, &str)]) -> Doctor {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"));
    cmd.arg("doctor")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    if let Ok(host) = std::env::var("DOCKER_HOST") {
        cmd.env("DOCKER_HOST", host);
    }
    cmd.envs(env.iter().copied());
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("doctor finishes within a minute")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "doctor wrote to stderr: {stderr}");
    Doctor {
        code: out.status.code().expect("exited"),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

fn migrate(data: &Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .arg("migrate")
        .env_clear()
        .env("VIBELOOP_DATA_DIR", data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn github(dir: &Path) -> FakeGitHub {
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: APP_ID,
        public_key_pem: app_public_key(),
        git_root: dir.join("gh"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(7, "acme");
    gh.add_installation(8, "bob");
    gh
}

/// A model server serving `qwen-test` (OpenAI API) and `claude-test` (Anthropic API) to
/// [`LLM_KEY`] holders only.
async fn models() -> FakeLlm {
    let llm = FakeLlm::start(Script::new()).await;
    llm.set_models(&["qwen-test", "claude-test"]);
    llm.require_key(LLM_KEY);
    llm
}

/// A models file sending the Critic to `base` over Anthropic's API, its key in
/// `DOCTOR_CRITIC_KEY`.
fn models_file(dir: &Path, base: &str) -> PathBuf {
    let path = dir.join("models.yml");
    std::fs::write(
        &path,
        format!(
            "roles:\n  critic: {{ provider: anthropic, base_url: '{base}', api_key_env: DOCTOR_CRITIC_KEY, model: claude-test }}\n"
        ),
    )
    .unwrap();
    path
}

fn key_text(path: &Path) -> String {
    let pem = std::fs::read_to_string(path).unwrap();
    // A line from the middle of the key: base64 of its secret part.
    pem.lines().nth(5).unwrap().to_owned()
}

#[tokio::test]
async fn a_healthy_setup_passes_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    migrate(&data);
    let gh = github(dir.path()).await;
    // One repository deploys with a secret on every push (the bot's branches too); its tests
    // run everywhere without secrets, and another repository keeps the bot's branches out.
    let deploy = "on:\n  push:\njobs:\n  d:\n    runs-on: ubuntu-latest\n    steps:\n      - run: ./deploy\n        env: { KEY: \"${{ secrets.DEPLOY_KEY }}\" }\n";
    let tests =
        "on: [push]\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n";
    let kept_out = deploy.replace(
        "  push:\n",
        "  push:\n    branches-ignore: [\"feat/T-*\", \"test/T-*\"]\n",
    );
    gh.add_repo(
        7,
        "acme/site",
        &[
            (".github/workflows/deploy.yml", deploy),
            (".github/workflows/tests.yml", tests),
        ],
    );
    gh.add_repo(
        8,
        "bob/tool",
        &[(".github/workflows/deploy.yml", &kept_out)],
    );
    // acme's rulesets: signed commits everywhere, two reviews on main.
    gh.add_ruleset(
        "acme/site",
        Ruleset {
            id: 3,
            name: "signed".into(),
            branches: vec!["~ALL".into()],
            rules: vec![Rule::Signatures],
        },
    );
    gh.add_ruleset(
        "acme/site",
        Ruleset {
            id: 4,
            name: "main".into(),
            branches: vec!["main".into()],
            rules: vec![Rule::PullRequest { approvals: 2 }],
        },
    );
    let llm = models().await;
    let models = models_file(dir.path(), &llm.url);
    let key = app_key_path();
    let d = doctor(&[
        ("VIBELOOP_DATA_DIR", data.to_str().unwrap()),
        ("GITHUB_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("GITHUB_APP_ID", &APP_ID.to_string()),
        ("GITHUB_PRIVATE_KEY_PATH", key.to_str().unwrap()),
        ("GITHUB_API_URL", &gh.url),
        ("VIBELOOP_LLM_BASE_URL", &llm.url),
        ("VIBELOOP_LLM_API_KEY", LLM_KEY),
        ("VIBELOOP_LLM_MODEL", "qwen-test"),
        ("VIBELOOP_MODELS_FILE", models.to_str().unwrap()),
        ("DOCTOR_CRITIC_KEY", LLM_KEY),
        // The host's bundle verifies whatever the host reaches, re-signed or not.
        ("VIBELOOP_SANDBOX_CA_BUNDLE", HOST_BUNDLE),
    ])
    .await;
    assert_eq!(d.code, 0, "{}", d.out);
    let checks: Vec<&str> = d.out.lines().filter(|l| !l.starts_with('!')).collect();
    assert!(checks.iter().all(|l| l.starts_with('✓')), "{}", d.out);
    let names = [
        "config",
        "database",
        "docker",
        "runner image",
        "setup network",
        "environments",
        "model endpoint (architect, breaker, builder, reflector)",
        "model endpoint (critic)",
        "GitHub App",
        "CI on the bot's branches",
        "Branch rules",
        "webhook secret",
    ];
    assert_eq!(checks.len(), names.len(), "{}", d.out);
    for (line, name) in checks.iter().zip(names) {
        assert!(line.starts_with(&format!("✓ {name}:")), "{name}: {line}");
    }
    d.expect("database", '✓', &["none pending"]);
    // The engine's storage driver is named; one that serves image files from user space is a
    // warning with the fix.
    let driver = std::process::Command::new("docker")
        .args(["info", "--format", "{{.Driver}}"])
        .output()
        .expect("docker info");
    let driver = String::from_utf8_lossy(&driver.stdout).trim().to_owned();
    d.expect("docker", '✓', &[&format!("images stored with {driver}")]);
    let warned = d.out.lines().any(|l| {
        l.starts_with('!')
            && l.contains("stores images with fuse-overlayfs")
            && l.contains("use overlay2")
    });
    assert_eq!(warned, driver == "fuse-overlayfs", "{}", d.out);
    d.expect("runner image", '✓', &["vibeloop-runner:python"]);
    d.expect(
        "setup network",
        '✓',
        &[
            "a setup sandbox downloads from the package index",
            HOST_BUNDLE,
        ],
    );
    d.expect(
        "environments",
        '✓',
        &["0 kept in", "removed after 14 days unused"],
    );
    d.expect(
        "model endpoint (architect, breaker, builder, reflector)",
        '✓',
        &["serves qwen-test"],
    );
    d.expect(
        "model endpoint (critic)",
        '✓',
        &["anthropic", "claude-test"],
    );
    d.expect("GitHub App", '✓', &["vibeloop", "2 accounts (acme, bob)"]);
    d.expect(
        "CI on the bot's branches",
        '✓',
        &["2 repositories read", "1 workflow(s)"],
    );
    let warned: Vec<&str> = d
        .out
        .lines()
        .filter(|l| l.starts_with("! CI on the bot's branches:"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", d.out);
    assert!(
        warned[0].contains("acme/site .github/workflows/deploy.yml")
            && warned[0].contains("DEPLOY_KEY")
            && warned[0].contains("branches-ignore"),
        "{}",
        warned[0]
    );
    // What the rulesets ask of each default branch, and a warning where they hold the bot's.
    d.expect(
        "Branch rules",
        '✓',
        &["2 repositories read; acme/site `main` asks 2 approving reviews from people with write access and signed commits (rulesets: 3 of acme/site, 4 of acme/site)"],
    );
    let warned: Vec<&str> = d
        .out
        .lines()
        .filter(|l| l.starts_with("! Branch rules:"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", d.out);
    assert!(
        warned[0].contains(
            "acme/site: rulesets over the bot's branches (`feat/T-1`) ask signed commits"
        ) && warned[0].contains("bypass list"),
        "{}",
        warned[0]
    );
    d.assert_no_secret(&[WEBHOOK_SECRET, LLM_KEY, &key_text(&key)]);
    // GitHub saw the App's JWT on both App routes.
    let asked: Vec<(String, u16)> = gh
        .requests()
        .into_iter()
        .map(|r| (r.path, r.status))
        .collect();
    assert!(asked.contains(&("/app".into(), 200)), "{asked:?}");
    assert!(
        asked.contains(&("/app/installations".into(), 200)),
        "{asked:?}"
    );
}

#[tokio::test]
async fn a_broken_setup_says_what_to_fix_and_prints_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let gh = github(dir.path()).await;
    let llm = models().await;
    let models = models_file(dir.path(), &llm.url);
    let stranger =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys/stranger.pem");
    let nowhere = format!("http://127.0.0.1:{}/v1", support::free_port());
    let d = doctor(&[
        ("VIBELOOP_DATA_DIR", data.to_str().unwrap()),
        ("GITHUB_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("GITHUB_APP_ID", &APP_ID.to_string()),
        ("GITHUB_PRIVATE_KEY_PATH", stranger.to_str().unwrap()),
        ("GITHUB_API_URL", &gh.url),
        ("VIBELOOP_LLM_BASE_URL", &nowhere),
        ("VIBELOOP_LLM_API_KEY", LLM_KEY),
        ("VIBELOOP_LLM_MODEL", "qwen-test"),
        ("VIBELOOP_MODELS_FILE", models.to_str().unwrap()),
        ("DOCTOR_CRITIC_KEY", CRITIC_KEY),
        ("DOCKER_HOST", NO_DOCKER),
    ])
    .await;
    assert_eq!(d.code, 1, "{}", d.out);
    d.expect("config", '✓', &[]);
    d.expect(
        "database",
        '✗',
        &["no database yet", "— `vibeloop migrate` creates it"],
    );
    assert!(!data.exists(), "doctor created the data directory");
    d.expect(
        "docker",
        '✗',
        &[
            NO_DOCKER,
            "serve will not start",
            "VIBELOOP_SANDBOX=local",
            "— install Docker",
        ],
    );
    d.expect("runner image", '-', &["skipped", "no Docker engine"]);
    d.expect(
        "model endpoint (architect, breaker, builder, reflector)",
        '✗',
        &[
            &format!("nothing answers at {nowhere}"),
            "— start the model server, or set VIBELOOP_LLM_BASE_URL",
        ],
    );
    d.expect(
        "model endpoint (critic)",
        '✗',
        &[
            "refused the key (401)",
            "— set DOCTOR_CRITIC_KEY to a valid key",
        ],
    );
    d.expect(
        "GitHub App",
        '✗',
        &[
            "401",
            "— GITHUB_APP_ID (4242) or the key in GITHUB_PRIVATE_KEY_PATH is wrong",
        ],
    );
    d.expect("webhook secret", '✓', &[]);
    d.assert_no_secret(&[WEBHOOK_SECRET, LLM_KEY, CRITIC_KEY, &key_text(&stranger)]);
}

#[tokio::test]
async fn pending_migrations_an_unlisted_model_and_no_app_are_reported_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    migrate(&data);
    let db = data.join("vibeloop.db");
    let forget_last = format!("sqlite://{}", db.display());
    let mut conn = sqlx::SqliteConnection::connect(&forget_last).await.unwrap();
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 5")
        .execute(&mut conn)
        .await
        .unwrap();
    let llm = models().await;
    let d = doctor(&[
        ("VIBELOOP_DATA_DIR", data.to_str().unwrap()),
        ("GITHUB_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("VIBELOOP_LLM_BASE_URL", &llm.url),
        ("VIBELOOP_LLM_API_KEY", LLM_KEY),
        ("VIBELOOP_LLM_MODEL", "qwen-missing"),
        ("DOCKER_HOST", NO_DOCKER),
    ])
    .await;
    assert_eq!(d.code, 1, "{}", d.out);
    d.expect("config", '✓', &[]);
    assert!(
        d.out.contains("! config: GITHUB_APP_ID is not set"),
        "{}",
        d.out
    );
    d.expect(
        "database",
        '✗',
        &[
            "1 migration pending (0005_requeue)",
            "— run `vibeloop migrate`",
        ],
    );
    d.expect(
        "model endpoint",
        '✗',
        &[
            "does not serve qwen-missing",
            "qwen-test",
            "— set VIBELOOP_LLM_MODEL",
        ],
    );
    d.expect(
        "GitHub App",
        '✗',
        &[
            "GITHUB_APP_ID",
            "GITHUB_PRIVATE_KEY_PATH",
            "`vibeloop setup`",
        ],
    );
    // Reported, not applied.
    let pending: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE version = 5")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(pending, 0, "doctor applied a migration");
    d.assert_no_secret(&[WEBHOOK_SECRET, LLM_KEY]);
}

#[tokio::test]
async fn unreadable_settings_skip_the_checks_that_need_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = doctor(&[
        ("VIBELOOP_DATA_DIR", dir.path().to_str().unwrap()),
        ("VIBELOOP_WORKERS", "0"),
        ("DOCKER_HOST", NO_DOCKER),
    ])
    .await;
    assert_eq!(d.code, 1, "{}", d.out);
    d.expect(
        "config",
        '✗',
        &["VIBELOOP_WORKERS", "— correct VIBELOOP_WORKERS"],
    );
    d.expect("model endpoint", '-', &["skipped", "settings do not parse"]);
    d.expect("GitHub App", '-', &["skipped", "settings do not parse"]);
    d.expect("database", '✗', &["no database yet"]);
    d.expect(
        "webhook secret",
        '✗',
        &["GITHUB_WEBHOOK_SECRET is not set", "— set it"],
    );
}

/// A setup sandbox's download from the package index, with a CA bundle that trusts nothing the
/// index is signed with, and without one: doctor names the setting and whether the host's
/// bundle fixes it.
#[tokio::test]
async fn the_setup_network_check_says_whether_the_ca_bundle_is_needed() {
    let dir = tempfile::tempdir().unwrap();
    let (key, cert) = (dir.path().join("k.pem"), dir.path().join("c.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=vibeloop-test-nobody"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let data = dir.path().join("data");
    let cert_text = cert.to_str().unwrap();
    let d = doctor(&[
        ("VIBELOOP_DATA_DIR", data.to_str().unwrap()),
        ("VIBELOOP_SANDBOX_CA_BUNDLE", cert_text),
    ])
    .await;
    d.expect(
        "setup network",
        '✗',
        &[
            "cannot verify the package index",
            &format!("though VIBELOOP_SANDBOX_CA_BUNDLE={cert_text} is given"),
        ],
    );
    // Without a bundle: either this network leaves TLS alone, or doctor says that the host's
    // bundle fixes it (the healthy setup above shows that it does).
    let d = doctor(&[("VIBELOOP_DATA_DIR", data.to_str().unwrap())]).await;
    let line = d
        .out
        .lines()
        .find(|l| l.contains("setup network"))
        .unwrap_or_else(|| panic!("no setup network line:\n{}", d.out));
    let leaves_tls_alone = line.starts_with("✓ setup network: a setup sandbox downloads");
    let names_the_fix = line.starts_with("✗ setup network: this network re-signs TLS")
        && d.out
            .contains(&format!("set VIBELOOP_SANDBOX_CA_BUNDLE={HOST_BUNDLE}"));
    assert!(leaves_tls_alone || names_the_fix, "{}", d.out);
}

/// A file system of its own for a test, loop-mounted (root and loop devices, as the sandbox's
/// disk tests need); unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn ext4(dir: &Path, name: &str, journal: bool) -> Self {
        let (image, point) = (dir.join(format!("{name}.img")), dir.join(name));
        std::fs::create_dir_all(&point).unwrap();
        std::fs::File::create(&image)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let features = if journal {
            "has_journal"
        } else {
            "^has_journal"
        };
        let run = |cmd: &mut std::process::Command| {
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{cmd:?}: {out:?}");
        };
        run(std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-O", features])
            .arg(&image));
        run(std::process::Command::new("mount")
            .args(["-o", "loop"])
            .arg(&image)
            .arg(&point));
        Self(point)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A data directory on an ext4 without a journal, where every new file gets slow once files
/// are deleted, is warned of with the fix; one with a journal is not.
#[tokio::test]
async fn a_data_directory_on_an_ext4_without_a_journal_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    for journal in [false, true] {
        let disk = Mounted::ext4(dir.path(), &format!("journal-{journal}"), journal);
        let data = disk.0.join("data");
        let d = doctor(&[
            ("VIBELOOP_DATA_DIR", data.to_str().unwrap()),
            ("DOCKER_HOST", NO_DOCKER),
        ])
        .await;
        let warned = d.out.lines().find(|l| l.contains("without a journal"));
        if journal {
            assert_eq!(warned, None, "{}", d.out);
            continue;
        }
        let line = warned.unwrap_or_else(|| panic!("no warning:\n{}", d.out));
        assert!(
            line.starts_with("! environments: the data directory is on /dev/loop")
                && line.contains(&format!("({})", disk.0.display()))
                && line.contains("tune2fs -O has_journal /dev/loop"),
            "{line}"
        );
    }
}
