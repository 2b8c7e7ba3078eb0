//! Process configuration: the command line and its environment variables (clap), checked into
//! [`ServeConfig`] with one clear error line per bad setting. Repository configuration
//! (`.github/hive.yml`) lives in [`repo`].

pub mod acceptance;
pub mod access;
pub mod ask;
pub mod ci;
pub mod constraints;
pub mod llm;
pub mod paths;
pub mod policy;
pub mod repo;
pub mod retry;
pub mod tools;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use secrecy::SecretString;

/// Command line of the `vibeloop` binary.
#[derive(Debug, Parser)]
#[command(
    name = "vibeloop",
    version,
    about = "Turns labelled GitHub issues into tested pull requests."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the webhook receiver and the workers.
    Serve(Box<ServeArgs>),
    /// Apply the database migrations and exit.
    Migrate(StoreArgs),
    /// Run the repository's gates on a local checkout, as the bot would.
    Gates(GatesArgs),
    /// Register the GitHub App through GitHub's manifest flow and write its credentials.
    Setup(tools::SetupArgs),
    /// Check the configuration, the database, Docker, the model endpoint and the GitHub App.
    Doctor(Box<ServeArgs>),
    /// Run the whole hive on a local repository, without GitHub; nothing is pushed.
    Run(Box<tools::RunArgs>),
    /// Measure how well the hive resolves tasks: mine them from history, run them, compare.
    Eval(Box<tools::EvalArgs>),
}

/// `vibeloop gates`: preview the gates on a local checkout (uncommitted changes included).
#[derive(Debug, Clone, Args)]
pub struct GatesArgs {
    /// The checkout to check.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The base the change is compared with, and where `.github/hive.yml` is read
    /// [default: origin/HEAD, else main, else master]
    #[arg(long)]
    pub base: Option<String>,
    /// `docker` or `local` [default: docker when an engine answers]
    #[arg(long, env = "VIBELOOP_SANDBOX", default_value = "auto")]
    pub sandbox: String,
    /// Only these gates (repeatable): test, lint, typecheck, build, security.
    #[arg(long = "gate")]
    pub gates: Vec<String>,
    /// Print what was detected (ecosystems, devcontainer) and where each setting comes from,
    /// then stop; nothing runs.
    #[arg(long)]
    pub explain: bool,
    /// Where set-up environments are kept between runs [default: ~/.cache/vibeloop/envs]
    #[arg(long, env = "VIBELOOP_ENV_DIR")]
    pub env_dir: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Where Vibeloop keeps its state.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Directory for mirrors, worktrees and the SQLite database.
    #[arg(long, env = "VIBELOOP_DATA_DIR", default_value = "./.vibeloop")]
    pub data_dir: PathBuf,
    /// Database URL: `sqlite://…` or `postgres://…` [default: SQLite file vibeloop.db in the data dir]
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
}

impl StoreArgs {
    /// The database URL to use: the one given, or a SQLite file in the data directory.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) if !url.trim().is_empty() => url.trim().to_owned(),
            _ => format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("vibeloop.db").display()
            ),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address the HTTP server listens on.
    #[arg(long, env = "VIBELOOP_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Numeric id of the GitHub App.
    #[arg(long, env = "GITHUB_APP_ID")]
    pub github_app_id: Option<String>,
    /// File holding the App's private key (PEM).
    #[arg(long, env = "GITHUB_PRIVATE_KEY_PATH")]
    pub github_private_key_path: Option<PathBuf>,
    /// The App's private key itself (PEM), instead of a file.
    #[arg(long, env = "GITHUB_PRIVATE_KEY", hide_env_values = true)]
    pub github_private_key: Option<String>,
    /// Webhook secret; a comma-separated list is accepted while rotating.
    #[arg(long, env = "GITHUB_WEBHOOK_SECRET", hide_env_values = true)]
    pub github_webhook_secret: Option<String>,
    /// Base URL of GitHub's REST API.
    #[arg(long, env = "GITHUB_API_URL", default_value = "https://api.github.com")]
    pub github_api_url: String,
    /// Base URL for git over HTTPS [default: https://github.com for api.github.com, the API
    /// host without `/api/v3` for GitHub Enterprise, else the API URL]
    #[arg(long, env = "GITHUB_GIT_URL")]
    pub github_git_url: Option<String>,
    /// GitHub's GraphQL endpoint [default: beside the API URL: `https://api.github.com/graphql`,
    /// `https://HOST/api/graphql` for GitHub Enterprise's `https://HOST/api/v3`]
    #[arg(long, env = "GITHUB_GRAPHQL_URL")]
    pub github_graphql_url: Option<String>,
    #[command(flatten)]
    pub llm: llm::LlmArgs,
    /// Where gate commands run: `auto` (Docker when an engine answers, else local), `docker` or
    /// `local`.
    #[arg(long, env = "VIBELOOP_SANDBOX", default_value = "auto")]
    pub sandbox: String,
    /// How many jobs (deliveries and tickets) run at once.
    #[arg(long, env = "VIBELOOP_WORKERS", default_value = "4")]
    pub workers: String,
    /// Log format: `text` or `json`.
    #[arg(long, env = "VIBELOOP_LOG_FORMAT", default_value = "text")]
    pub log_format: String,
    #[command(flatten)]
    pub access: access::AccessArgs,
}

/// The GitHub App's credentials, present only when both the id and the key are given.
#[derive(Clone)]
pub struct AppCredentials {
    pub app_id: u64,
    pub private_key_pem: SecretString,
}

/// Everything `vibeloop serve` needs, checked.
#[derive(Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub app: Option<AppCredentials>,
    pub webhook_secrets: Vec<SecretString>,
    pub github_api_url: url::Url,
    pub github_git_url: url::Url,
    pub github_graphql_url: url::Url,
    pub llm: llm::LlmConfig,
    pub workers: usize,
    /// `None` for auto-detection.
    pub sandbox: Option<SandboxKind>,
    pub json_logs: bool,
    /// What this process runs.
    pub role: access::ProcessRole,
    /// How often the sweep runs (missed webhooks, tickets changed on GitHub).
    pub sweep_interval: std::time::Duration,
    /// How long a job's lease lasts without a heartbeat.
    pub lease: std::time::Duration,
    /// How often a live timeline checks its viewer again.
    pub recheck: std::time::Duration,
    /// Who may open the dashboard, the API and the metrics.
    pub access: access::Access,
    /// Settings that are missing but not fatal; `serve` logs each as a warning.
    pub warnings: Vec<String>,
}

/// A setting that stops start-up; its message is one line naming the setting.
#[derive(Debug, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub problem: String,
}

pub(crate) fn bad(setting: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        setting,
        problem: problem.into(),
    }
}

pub(crate) fn parse_url(setting: &'static str, value: &str) -> Result<url::Url, ConfigError> {
    let url = url::Url::parse(value.trim())
        .map_err(|e| bad(setting, format!("{value:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(
            setting,
            format!("{value:?} must start with http:// or https://"),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(setting, "must not carry credentials in the URL"));
    }
    Ok(url)
}

/// The git host that belongs to an API URL (see `--github-git-url`).
fn default_git_url(api: &url::Url) -> url::Url {
    if api.host_str() == Some("api.github.com") {
        return url::Url::parse("https://github.com").expect("static URL");
    }
    let mut git = api.clone();
    if let Some(stripped) = api.path().trim_end_matches('/').strip_suffix("/api/v3") {
        git.set_path(stripped);
    }
    git
}

/// The GraphQL endpoint that goes with a REST root: `…/graphql` beside `api.github.com`, and
/// `/api/graphql` for an Enterprise Server's `/api/v3` (beside the REST root, not under it).
pub fn default_graphql_url(api: &url::Url) -> url::Url {
    let mut url = api.clone();
    let path = api.path().trim_end_matches('/');
    match path.strip_suffix("/api/v3") {
        Some(host_root) => url.set_path(&format!("{host_root}/api/graphql")),
        None => url.set_path(&format!("{path}/graphql")),
    }
    url
}

impl ServeConfig {
    pub fn from_args(args: &ServeArgs) -> Result<Self, ConfigError> {
        let listen = args.listen.trim().parse().map_err(|_| {
            bad(
                "VIBELOOP_LISTEN",
                format!("{:?} is not an address like 127.0.0.1:3000", args.listen),
            )
        })?;
        let secrets: Vec<SecretString> = args
            .github_webhook_secret
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| SecretString::from(s.to_owned()))
            .collect();
        if secrets.is_empty() {
            return Err(bad(
                "GITHUB_WEBHOOK_SECRET",
                "not set: set it to your GitHub App's webhook secret (a comma-separated list while rotating)",
            ));
        }
        let mut warnings = Vec::new();
        let app = load_app_credentials(args, &mut warnings)?;
        let github_api_url = parse_url("GITHUB_API_URL", &args.github_api_url)?;
        let github_git_url = match &args.github_git_url {
            Some(url) => parse_url("GITHUB_GIT_URL", url)?,
            None => default_git_url(&github_api_url),
        };
        let github_graphql_url = match &args.github_graphql_url {
            Some(url) => parse_url("GITHUB_GRAPHQL_URL", url)?,
            None => default_graphql_url(&github_api_url),
        };
        let workers: usize = args
            .workers
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=256).contains(n))
            .ok_or_else(|| {
                bad(
                    "VIBELOOP_WORKERS",
                    format!("{:?} is not a number from 1 to 256", args.workers),
                )
            })?;
        let sandbox = parse_sandbox(&args.sandbox)?;
        let json_logs = match args.log_format.trim() {
            "text" => false,
            "json" => true,
            other => {
                return Err(bad(
                    "VIBELOOP_LOG_FORMAT",
                    format!("{other:?} is neither text nor json"),
                ));
            }
        };
        Ok(Self {
            listen,
            data_dir: args.store.data_dir.clone(),
            database_url: args.store.database_url(),
            app,
            webhook_secrets: secrets,
            github_api_url,
            github_git_url,
            github_graphql_url,
            llm: args.llm.config()?,
            workers,
            sandbox,
            json_logs,
            role: args.access.role()?,
            sweep_interval: args.access.sweep_interval()?,
            lease: args.access.lease()?,
            recheck: args.access.recheck()?,
            access: args.access.access(&mut warnings)?,
            warnings,
        })
    }
}

/// `auto`, `docker` or `local` (`VIBELOOP_SANDBOX`, `--sandbox`).
/// Which sandbox backend runs commands: containers, or local processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxKind {
    Docker,
    Local,
}

impl SandboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::Docker => "docker",
            SandboxKind::Local => "local",
        }
    }
}

pub fn parse_sandbox(value: &str) -> Result<Option<SandboxKind>, ConfigError> {
    match value.trim() {
        "auto" => Ok(None),
        "docker" => Ok(Some(SandboxKind::Docker)),
        "local" => Ok(Some(SandboxKind::Local)),
        other => Err(bad(
            "VIBELOOP_SANDBOX",
            format!("{other:?} is not auto, docker or local"),
        )),
    }
}

fn load_app_credentials(
    args: &ServeArgs,
    warnings: &mut Vec<String>,
) -> Result<Option<AppCredentials>, ConfigError> {
    let app_id = match args.github_app_id.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(id) => Some(id.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
            bad(
                "GITHUB_APP_ID",
                format!("{id:?} is not the numeric id of a GitHub App"),
            )
        })?),
    };
    let pem = match (&args.github_private_key, &args.github_private_key_path) {
        (Some(pem), _) if !pem.trim().is_empty() => Some(("GITHUB_PRIVATE_KEY", pem.clone())),
        (_, Some(path)) => Some(("GITHUB_PRIVATE_KEY_PATH", read_key_file(path)?)),
        _ => None,
    };
    if let Some((setting, pem)) = &pem {
        jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes())
            .map_err(|_| bad(setting, "is not an RSA private key in PEM form"))?;
    }
    match (app_id, pem) {
        (Some(app_id), Some((_, pem))) => Ok(Some(AppCredentials {
            app_id,
            private_key_pem: SecretString::from(pem),
        })),
        (id, key) => {
            if id.is_none() {
                warnings.push("GITHUB_APP_ID is not set".into());
            }
            if key.is_none() {
                warnings
                    .push("neither GITHUB_PRIVATE_KEY_PATH nor GITHUB_PRIVATE_KEY is set".into());
            }
            warnings.push(
                "webhooks are verified and stored, but no ticket runs until the App's id and key are set"
                    .into(),
            );
            Ok(None)
        }
    }
}

fn read_key_file(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| {
        bad(
            "GITHUB_PRIVATE_KEY_PATH",
            format!("cannot read {}: {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> ServeArgs {
        let mut argv = vec!["vibeloop", "serve"];
        argv.extend_from_slice(extra);
        // Environment variables of the developer's shell must not leak into these tests.
        let cli = Cli::try_parse_from(argv).expect("parses");
        match cli.command {
            Command::Serve(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn webhook_secret_is_required_and_may_be_a_list() {
        let err = ServeConfig::from_args(&ServeArgs {
            github_webhook_secret: None,
            ..args(&[])
        })
        .err()
        .expect("refused");
        assert!(
            err.to_string()
                .starts_with("GITHUB_WEBHOOK_SECRET: not set"),
            "{err}"
        );
        let c = ServeConfig::from_args(&args(&["--github-webhook-secret", "old, new ,"])).unwrap();
        assert_eq!(c.webhook_secrets.len(), 2);
        assert!(c.app.is_none());
        assert!(c.warnings.iter().any(|w| w.contains("GITHUB_APP_ID")));
    }

    #[test]
    fn malformed_settings_name_the_setting() {
        let cases: &[(&[&str], &str)] = &[
            (&["--listen", "nowhere"], "VIBELOOP_LISTEN"),
            (&["--github-app-id", "abc"], "GITHUB_APP_ID"),
            (&["--github-private-key", "not a key"], "GITHUB_PRIVATE_KEY"),
            (
                &["--github-private-key-path", "/nonexistent/key.pem"],
                "GITHUB_PRIVATE_KEY_PATH",
            ),
            (&["--github-api-url", "ftp://x"], "GITHUB_API_URL"),
            (&["--llm-base-url", "::"], "VIBELOOP_LLM_BASE_URL"),
            (&["--workers", "0"], "VIBELOOP_WORKERS"),
            (&["--log-format", "xml"], "VIBELOOP_LOG_FORMAT"),
            (&["--sandbox", "vm"], "VIBELOOP_SANDBOX"),
            (&["--llm-provider", "gemini"], "VIBELOOP_LLM_PROVIDER"),
            (
                &["--models-file", "/no/such/models.yml"],
                "VIBELOOP_MODELS_FILE",
            ),
            (&["--prompts-dir", "/no/such/dir"], "VIBELOOP_PROMPTS_DIR"),
        ];
        for (extra, setting) in cases {
            let mut argv = vec!["--github-webhook-secret", "s"];
            argv.extend_from_slice(extra);
            let err = ServeConfig::from_args(&args(&argv)).err().expect("refused");
            assert_eq!(err.setting, *setting, "{err}");
            assert!(!err.to_string().contains('\n'));
        }
    }

    #[test]
    fn git_url_follows_the_api_url() {
        let git = |api: &str| default_git_url(&url::Url::parse(api).unwrap()).to_string();
        assert_eq!(git("https://api.github.com"), "https://github.com/");
        assert_eq!(git("https://ghe.example/api/v3"), "https://ghe.example/");
        assert_eq!(git("http://127.0.0.1:9000"), "http://127.0.0.1:9000/");
    }

    #[test]
    fn graphql_sits_beside_the_rest_root() {
        let g = |api: &str| default_graphql_url(&url::Url::parse(api).unwrap()).to_string();
        assert_eq!(
            g("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            g("https://ghe.example/api/v3"),
            "https://ghe.example/api/graphql"
        );
        assert_eq!(
            g("https://ghe.example/api/v3/"),
            "https://ghe.example/api/graphql"
        );
        assert_eq!(g("http://127.0.0.1:9000"), "http://127.0.0.1:9000/graphql");
        let a = args(&[
            "--github-webhook-secret",
            "s",
            "--github-graphql-url",
            "https://ghe.example/graphql-proxy",
        ]);
        let c = ServeConfig::from_args(&a).unwrap();
        assert_eq!(
            c.github_graphql_url.as_str(),
            "https://ghe.example/graphql-proxy"
        );
    }

    #[test]
    fn database_defaults_to_sqlite_in_the_data_dir() {
        let a = args(&["--data-dir", "/tmp/vl"]);
        assert_eq!(
            a.store.database_url(),
            "sqlite:///tmp/vl/vibeloop.db?mode=rwc"
        );
    }
}

#[cfg(test)]
mod documented {
    use clap::CommandFactory as _;

    /// Every flag of `vibeloop serve` and its environment variable are in docs/configuration.md's
    /// table of settings, read from the command line's own definition.
    #[test]
    fn every_flag_of_serve_is_documented() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
        )
        .unwrap();
        let table = doc
            .split("| flag | environment | default | meaning |")
            .nth(1)
            .unwrap();
        let rows: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        let named = |word: &str| {
            rows.iter().any(|row| {
                let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
                cells[..2].iter().any(|c| c.contains(&format!("`{word}`")))
            })
        };
        let cli = super::Cli::command();
        let serve = cli.find_subcommand("serve").unwrap();
        let mut missing = vec![];
        let mut seen = 0;
        for arg in serve.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            seen += 1;
            if !named(&format!("--{long}")) {
                missing.push(format!("--{long}"));
            }
            if let Some(env) = arg.get_env().and_then(|e| e.to_str())
                && !named(env)
            {
                missing.push(env.to_owned());
            }
        }
        assert!(seen > 20, "{seen} flags");
        assert!(
            missing.is_empty(),
            "flags of `vibeloop serve` missing from docs/configuration.md: {missing:?}"
        );
    }
}
