//! The fake GitHub of the test suite, standalone: a REST subset and git smart HTTP over the bare
//! repositories in a directory, with installation tokens checked against the app's public key.
//! Try Vibeloop against it without a real GitHub:
//!
//! ```text
//! cargo run --example fake_github -- --repos /tmp/gh --demo --webhook-url http://127.0.0.1:3000 --webhook-secret s
//! ```
//!
//! Send `POST /_fake/label/{owner}/{repo}/{issue}/{label}` to make it deliver `issues.labeled`.
//! It needs no file of the checkout: the test key pair is compiled in, and `--demo` writes the
//! private key the bot signs with to `<repos>/demo-app.pem`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;

/// The test suite's App key pair (`tests/fixtures/keys/`), public by design.
const DEMO_PUBLIC_KEY: &str = include_str!("../tests/fixtures/keys/app.pub.pem");
const DEMO_PRIVATE_KEY: &str = include_str!("../tests/fixtures/keys/app.pem");

/// A fake GitHub for trying and testing Vibeloop offline.
#[derive(Parser)]
#[command(name = "fake_github")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: std::net::SocketAddr,
    /// Numeric id of the (fake) GitHub App.
    #[arg(long, default_value_t = 1)]
    app_id: u64,
    /// The App's public key (PEM) [default: the test key pair's, compiled in]
    #[arg(long)]
    public_key: Option<PathBuf>,
    /// Directory of bare repositories, as `<owner>/<name>.git`; each is installed (made when
    /// it is missing).
    #[arg(long)]
    repos: PathBuf,
    /// Installation id the repositories belong to.
    #[arg(long, default_value_t = 1)]
    installation: u64,
    /// Create `acme/demo` (a Python project with a failing test) and issue #1 describing the bug.
    #[arg(long)]
    demo: bool,
    /// Where to send webhooks (the bot's base URL).
    #[arg(long)]
    webhook_url: Option<String>,
    /// Secret to sign webhooks with.
    #[arg(long, default_value = "secret")]
    webhook_secret: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let public_key_pem = match &args.public_key {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("--public-key {}", path.display()))?,
        None => DEMO_PUBLIC_KEY.to_owned(),
    };
    std::fs::create_dir_all(&args.repos)
        .with_context(|| format!("--repos {}", args.repos.display()))?;
    let repos = std::fs::canonicalize(&args.repos)
        .with_context(|| format!("--repos {}", args.repos.display()))?;
    let gh = support::fake_github::FakeGitHub::start_on(
        args.listen,
        support::fake_github::Options {
            app_id: args.app_id,
            public_key_pem,
            git_root: repos.clone(),
            token_ttl: Duration::from_secs(3600),
        },
    )
    .await;
    gh.add_installation(args.installation, "acme");
    let mut found = Vec::new();
    for owner in
        std::fs::read_dir(&repos).with_context(|| format!("--repos {}", repos.display()))?
    {
        let owner = owner?.path();
        for repo in std::fs::read_dir(&owner).into_iter().flatten().flatten() {
            let name = repo.file_name().to_string_lossy().into_owned();
            if let Some(name) = name.strip_suffix(".git") {
                let full = format!("{}/{name}", owner.file_name().unwrap().to_string_lossy());
                gh.register_repo(args.installation, &full);
                println!("repository {full}");
                found.push(full);
            }
        }
    }
    if args.demo {
        let key = repos.join("demo-app.pem");
        std::fs::write(&key, DEMO_PRIVATE_KEY).with_context(|| key.display().to_string())?;
        println!(
            "the bot signs as the demo App with GITHUB_APP_ID={} GITHUB_PRIVATE_KEY_PATH={}",
            args.app_id,
            key.display()
        );
    }
    if args.demo && found.iter().any(|r| r == "acme/demo") {
        println!(
            "acme/demo is there from an earlier run; its issues are not (they live in memory)"
        );
    }
    if args.demo && !found.iter().any(|r| r == "acme/demo") {
        gh.add_repo(
            args.installation,
            "acme/demo",
            &[
                ("calc.py", "def add(a, b):\n    return a - b\n"),
                ("test_calc.py", "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"),
                (".github/hive.yml", "gates: { test: \"python3 -m unittest -v\" }\n"),
            ],
        );
        let n = gh.add_issue(
            "acme/demo",
            "add() subtracts",
            "add(2, 3) returns -1 instead of 5.",
        );
        println!("repository acme/demo with issue #{n}");
    }
    if let Some(url) = &args.webhook_url {
        gh.set_webhook(url, &args.webhook_secret);
    }
    println!(
        "fake GitHub on {} (app {}, installation {})",
        gh.url, args.app_id, args.installation
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}
