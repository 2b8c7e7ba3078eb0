//! `vibeloop doctor`: checks an installation the way `vibeloop serve` would use it — the
//! settings, the database, Docker and the runner image, each model endpoint, the GitHub App and
//! the webhook secret, the repositories' workflows that would run the bot's branches with
//! secrets — and prints one line per check: `✓ name: detail`, or
//! `✗ name: what is wrong — how to fix it`. `!` lines are warnings; `-` lines are checks skipped
//! because one they need failed.
//!
//! Each check is a small function returning a [`Check`]; a failing one does not stop the others,
//! the ones that wait on the network run at the same time, each with a deadline. Doctor changes
//! nothing: it creates no database, applies no migration, starts no container. It prints no
//! secret: keys and the webhook secret are only ever sent where they belong.

mod database;
mod docker;
mod github;
mod journal;
pub(crate) mod models;
mod rules;
mod workflows;

use std::fmt;
use std::io::Write as _;

use crate::config::{ServeArgs, ServeConfig};
use crate::llm::routing::Router;

/// What one check found.
pub struct Check {
    pub name: String,
    pub outcome: Outcome,
    /// Problems that do not fail the check, printed as `!` lines after it.
    pub warnings: Vec<String>,
}

pub enum Outcome {
    Pass(String),
    Fail {
        problem: String,
        fix: String,
    },
    /// Not run, because a check it needs failed (or it does not apply).
    Skipped(String),
}

impl Check {
    pub fn pass(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(name, Outcome::Pass(detail.into()))
    }

    pub fn fail(
        name: impl Into<String>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(
            name,
            Outcome::Fail {
                problem: problem.into(),
                fix: fix.into(),
            },
        )
    }

    pub fn skipped(name: impl Into<String>, why: impl Into<String>) -> Self {
        Self::new(name, Outcome::Skipped(why.into()))
    }

    fn new(name: impl Into<String>, outcome: Outcome) -> Self {
        Self {
            name: name.into(),
            outcome,
            warnings: Vec::new(),
        }
    }

    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    pub fn passed(&self) -> bool {
        matches!(self.outcome, Outcome::Pass(_))
    }

    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Fail { .. })
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        match &self.outcome {
            Outcome::Pass(detail) => write!(f, "✓ {name}: {detail}")?,
            Outcome::Fail { problem, fix } => write!(f, "✗ {name}: {problem} — {fix}")?,
            Outcome::Skipped(why) => write!(f, "- {name}: skipped — {why}")?,
        }
        for w in &self.warnings {
            write!(f, "\n! {name}: {w}")?;
        }
        Ok(())
    }
}

/// The set-up environments kept under the data directory: how many, how large, and each one
/// (its repository, key, size, and when it was last used), most recently used first; a warning
/// when the data directory's file system makes new files slow ([`journal`]).
fn environments(data_dir: &std::path::Path) -> Check {
    let settings = crate::env::Settings::new(data_dir);
    let list = settings.envs.list();
    let total: u64 = list.iter().map(|e| e.bytes).sum();
    let mb = |b: u64| format!("{:.0} MB", b as f64 / 1e6);
    let mut detail = format!(
        "{} kept in {} ({}; removed after {} days unused or beyond {} in all)",
        list.len(),
        data_dir.join("envs").display(),
        mb(total),
        settings.retention.max_age.as_secs() / 86_400,
        mb(settings.retention.max_bytes),
    );
    let now = crate::env::cache::now();
    for e in &list {
        let days = now.saturating_sub(e.record.used) as f64 / 86_400.0;
        detail.push_str(&format!(
            "\n    {} {}: {}, used {days:.1} days ago, setup took {:.0} s, image {}",
            e.record.repo,
            e.record.key,
            mb(e.bytes),
            e.record.setup_seconds,
            e.record.image
        ));
    }
    let check = Check::pass("environments", detail);
    match journal::warning(data_dir) {
        Some(w) => check.warn(w),
        None => check,
    }
}

/// Runs the checks and prints them; returns the process exit code: 0 when none failed.
pub async fn run(args: &ServeArgs) -> anyhow::Result<i32> {
    let checks = check_all(args).await;
    let mut out = std::io::stdout().lock();
    for check in &checks {
        writeln!(out, "{check}")?;
    }
    Ok(i32::from(checks.iter().any(Check::failed)))
}

/// Every check, in the order they are printed.
pub async fn check_all(args: &ServeArgs) -> Vec<Check> {
    let (config, parsed) = config(args);
    // An unreadable VIBELOOP_SANDBOX is the config check's to report; Docker is checked anyway.
    let sandbox = crate::config::parse_sandbox(&args.sandbox).ok().flatten();
    let sandboxes = async {
        let (docker, image) = docker::check(&args.store.data_dir, sandbox).await;
        let network = if image.passed() {
            docker::setup_network(&args.store.data_dir).await
        } else {
            Check::skipped("setup network", "no runner image to start")
        };
        (docker, image, network)
    };
    let (database, (docker, image, network), models, github) = tokio::join!(
        database::check(&args.store),
        sandboxes,
        models::check(parsed.as_ref()),
        github::check(parsed.as_ref(), args),
    );
    let mut checks = vec![
        config,
        database,
        docker,
        image,
        network,
        environments(&args.store.data_dir),
    ];
    checks.extend(models);
    let (workflows, rules) = tokio::join!(
        workflows::check(parsed.as_ref(), github.passed()),
        rules::check(parsed.as_ref(), github.passed()),
    );
    checks.push(github);
    checks.push(workflows);
    checks.push(rules);
    checks.push(webhook_secret(args));
    checks
}

/// The settings, as `serve` reads them.
struct Parsed {
    config: ServeConfig,
    router: Router,
}

/// Why the checks that need the settings did not run.
const NO_CONFIG: &str = "the settings do not parse (see config above)";

fn config(args: &ServeArgs) -> (Check, Option<Parsed>) {
    const NAME: &str = "config";
    // `serve` refuses a missing webhook secret before anything else; the webhook secret check
    // reports it, so it must not hide the other settings here.
    let mut probe = args.clone();
    if webhook_secrets(args).is_empty() {
        probe.github_webhook_secret = Some("unset".into());
    }
    let config = match ServeConfig::from_args(&probe) {
        Ok(c) => c,
        Err(e) => {
            let fix = format!(
                "correct {} (`vibeloop doctor --help` lists every setting)",
                e.setting
            );
            return (Check::fail(NAME, e.to_string(), fix), None);
        }
    };
    let default = config.llm.default.clone();
    let router = match &config.llm.models_file {
        Some((path, text)) => match Router::from_file(default, text, |v| std::env::var(v).ok()) {
            Ok(r) => r,
            Err(e) => {
                let fix = format!("correct {}", path.display());
                return (Check::fail(NAME, e.to_string(), fix), None);
            }
        },
        None => Router::single(default),
    };
    let mut detail = format!(
        "settings parse (listen {}, {} workers, sandbox {}",
        config.listen,
        config.workers,
        config.sandbox.map_or("auto", |k| k.as_str()),
    );
    if let Some((path, _)) = &config.llm.models_file {
        detail.push_str(&format!(", models from {}", path.display()));
    }
    detail.push(')');
    let mut check = Check::pass(NAME, detail);
    check.warnings = config.warnings.clone();
    (check, Some(Parsed { config, router }))
}

/// The webhook secrets given (a comma-separated list while rotating), as `serve` splits them.
fn webhook_secrets(args: &ServeArgs) -> Vec<&str> {
    args.github_webhook_secret
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Shorter secrets are easier to guess than GitHub's advice allows.
const SHORT_SECRET: usize = 16;

fn webhook_secret(args: &ServeArgs) -> Check {
    const NAME: &str = "webhook secret";
    let secrets = webhook_secrets(args);
    let check = match secrets.len() {
        0 => {
            return Check::fail(
                NAME,
                "GITHUB_WEBHOOK_SECRET is not set, so serve will not start",
                "set it to the webhook secret of the App's settings (`vibeloop setup` makes one)",
            );
        }
        1 => Check::pass(NAME, "set"),
        n => Check::pass(NAME, format!("{n} set (rotating)")),
    };
    if secrets.iter().any(|s| s.chars().count() < SHORT_SECRET) {
        check.warn(format!(
            "shorter than {SHORT_SECRET} characters: a long random one (`openssl rand -hex 32`) is safer"
        ))
    } else {
        check
    }
}

/// A URL as it may be shown: no credentials, no query.
fn shown(url: &url::Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.as_str().trim_end_matches('/').to_owned()
}

/// The innermost cause of an error ("Connection refused (os error 111)"), which says most.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut e = e;
    while let Some(source) = e.source() {
        e = source;
    }
    e.to_string()
}

/// `text` with every occurrence of `secret` masked, for answers that might echo a key.
fn redact(text: &str, secret: Option<&str>) -> String {
    let mut text: String = text.chars().take(200).collect();
    if let Some(s) = secret.filter(|s| s.len() >= 4) {
        text = text.replace(s, "[redacted]");
    }
    text.trim().to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn kept_environments_are_listed_with_their_repository_and_size() {
        let data = tempfile::tempdir().unwrap();
        let envs = crate::env::Envs::in_data_dir(data.path());
        let scratch = envs.scratch("acme/app").unwrap();
        std::fs::write(scratch.path().join("blob"), vec![1u8; 2_000_000]).unwrap();
        let key = crate::env::EnvKey::new("vibeloop-runner:rust", "cargo fetch", &[], &[]);
        let now = crate::env::cache::now();
        let record = crate::env::cache::Record {
            key: key.clone(),
            repo: "acme/app".into(),
            image: "vibeloop-runner:rust".into(),
            setup: "cargo fetch".into(),
            inputs: vec![],
            created: now,
            used: now,
            setup_seconds: 12.0,
            tree: String::new(),
            how: None,
        };
        envs.keep(scratch, &record).unwrap();
        let line = environments(data.path()).to_string();
        assert!(line.starts_with("✓ environments: 1 kept in"), "{line}");
        assert!(
            line.contains(&format!("acme/app {key}: 2 MB, used 0.0 days ago, setup took 12 s, image vibeloop-runner:rust")),
            "{line}"
        );
    }

    use super::*;
    use clap::Parser as _;

    fn args(argv: &[&str]) -> ServeArgs {
        let mut full = vec!["vibeloop", "doctor"];
        full.extend_from_slice(argv);
        match crate::config::Cli::try_parse_from(full).unwrap().command {
            crate::config::Command::Doctor(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn lines_show_the_outcome_and_the_fix() {
        let c = Check::fail("docker", "no engine", "install Docker").warn("careful");
        assert_eq!(
            c.to_string(),
            "✗ docker: no engine — install Docker\n! docker: careful"
        );
        assert_eq!(Check::pass("x", "fine").to_string(), "✓ x: fine");
        assert_eq!(
            Check::skipped("x", "no engine").to_string(),
            "- x: skipped — no engine"
        );
        assert!(!Check::skipped("x", "y").failed());
    }

    #[test]
    fn a_missing_webhook_secret_does_not_hide_other_settings() {
        let (c, parsed) = config(&ServeArgs {
            github_webhook_secret: None,
            ..args(&[])
        });
        assert!(!c.failed(), "{c}");
        assert!(parsed.is_some());
        let unset = ServeArgs {
            github_webhook_secret: None,
            ..args(&[])
        };
        assert!(webhook_secret(&unset).failed());
        let (c, parsed) = config(&args(&["--workers", "0"]));
        assert!(c.to_string().contains("VIBELOOP_WORKERS"), "{c}");
        assert!(parsed.is_none());
    }

    #[test]
    fn webhook_secrets_are_counted_never_shown() {
        let c = webhook_secret(&args(&["--github-webhook-secret", "hunter2a, hunter2b"]));
        let text = c.to_string();
        assert!(text.starts_with("✓ webhook secret: 2 set"), "{text}");
        assert!(text.contains("! webhook secret: shorter than"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn shown_urls_carry_no_credentials() {
        let u = url::Url::parse("https://user:pw@example.com/v1/?key=abc").unwrap();
        assert_eq!(shown(&u), "https://example.com/v1");
        assert_eq!(
            redact("bad key sk-12345 given", Some("sk-12345")),
            "bad key [redacted] given"
        );
    }
}
