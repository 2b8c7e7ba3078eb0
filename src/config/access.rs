//! Settings of `vibeloop serve` about who does what: the process's role when several share
//! one database (`--role ingress|worker|all`), and who may open the dashboard, the JSON API and
//! the metrics (a static token, or GitHub sign-in limited to named people).

use clap::Args;
use secrecy::SecretString;

use super::{ConfigError, bad};

/// The flags, flattened into `serve`'s.
#[derive(Debug, Clone, Args)]
pub struct AccessArgs {
    /// What this process does: `ingress` (webhooks, dashboard, metrics), `worker` (runs jobs),
    /// or `all`. Several processes need PostgreSQL.
    #[arg(long, env = "VIBELOOP_ROLE", default_value = "all")]
    pub role: String,
    /// Token that opens the dashboard, `/api/*` and `/metrics` (as `Authorization: Bearer`, or
    /// typed on the sign-in page).
    #[arg(long, env = "VIBELOOP_DASHBOARD_TOKEN", hide_env_values = true)]
    pub dashboard_token: Option<String>,
    /// OAuth client id of the GitHub App, for signing in to the dashboard with GitHub.
    #[arg(long, env = "VIBELOOP_GITHUB_CLIENT_ID")]
    pub github_client_id: Option<String>,
    /// OAuth client secret of the GitHub App.
    #[arg(long, env = "VIBELOOP_GITHUB_CLIENT_SECRET", hide_env_values = true)]
    pub github_client_secret: Option<String>,
    /// GitHub logins allowed to sign in with GitHub (comma-separated).
    #[arg(long, env = "VIBELOOP_DASHBOARD_USERS")]
    pub dashboard_users: Option<String>,
    /// Key that signs the dashboard's sessions (at least 32 characters; the same on every
    /// ingress replica). Unset: a random one kept in the data directory (`session.key`).
    #[arg(long, env = "VIBELOOP_SESSION_KEY", hide_env_values = true)]
    pub session_key: Option<String>,
    /// Session cookies without `Secure`: only when the dashboard is served over plain HTTP on
    /// purpose (a laptop, a test), never behind a public address.
    #[arg(long, env = "VIBELOOP_INSECURE_COOKIES")]
    pub insecure_cookies: Option<String>,
    /// Seconds between two sweeps for missed webhooks and tickets changed on GitHub by hand.
    #[arg(long, env = "VIBELOOP_SWEEP_INTERVAL", default_value = "600")]
    pub sweep_interval: String,
    /// Seconds a worker holds a job without renewing its lease; a worker that dies loses its
    /// jobs to the others after this long, or at once to its own restart on its data directory.
    #[arg(long, env = "VIBELOOP_LEASE_SECONDS", default_value = "60")]
    pub lease_seconds: String,
    /// Seconds between two checks of a live timeline's viewer (still signed in, still allowed
    /// to see the ticket): the stream closes at the first that fails.
    #[arg(long, env = "VIBELOOP_DASHBOARD_RECHECK", default_value = "60")]
    pub dashboard_recheck: String,
}

/// What this process runs (`--role`): not to be confused with an agent's [`crate::ticket::Role`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessRole {
    /// The webhook receiver, the dashboard and the metrics.
    Ingress,
    /// The workers (and health and metrics endpoints for probes).
    Worker,
    All,
}

impl ProcessRole {
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessRole::Ingress => "ingress",
            ProcessRole::Worker => "worker",
            ProcessRole::All => "all",
        }
    }

    pub fn runs_workers(self) -> bool {
        matches!(self, ProcessRole::Worker | ProcessRole::All)
    }

    pub fn takes_webhooks(self) -> bool {
        matches!(self, ProcessRole::Ingress | ProcessRole::All)
    }
}

/// GitHub sign-in for the dashboard.
#[derive(Clone)]
pub struct OAuth {
    pub client_id: String,
    pub client_secret: SecretString,
    /// Logins allowed in, lower-cased.
    pub users: Vec<String>,
}

/// Who may open the dashboard, the API and the metrics.
#[derive(Clone, Default)]
pub struct Access {
    pub token: Option<SecretString>,
    pub oauth: Option<OAuth>,
    /// `VIBELOOP_SESSION_KEY`; `None`: the data directory's.
    pub session_key: Option<SecretString>,
    /// Cookies carry `Secure` (off only with `VIBELOOP_INSECURE_COOKIES`).
    pub secure_cookies: bool,
}

impl Access {
    /// True when nobody can get in (the pages then say which setting opens them).
    pub fn closed(&self) -> bool {
        self.token.is_none() && self.oauth.is_none()
    }
}

/// `value` (the setting `name`) as a number of seconds within `range`.
fn seconds(
    value: &str,
    name: &'static str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<std::time::Duration, ConfigError> {
    match value.trim().parse::<u64>() {
        Ok(secs) if range.contains(&secs) => Ok(std::time::Duration::from_secs(secs)),
        _ => Err(bad(
            name,
            format!(
                "{value:?} is not a number of seconds from {} to {}",
                range.start(),
                range.end()
            ),
        )),
    }
}

fn some(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

impl AccessArgs {
    pub fn role(&self) -> Result<ProcessRole, ConfigError> {
        match self.role.trim() {
            "ingress" => Ok(ProcessRole::Ingress),
            "worker" => Ok(ProcessRole::Worker),
            "all" => Ok(ProcessRole::All),
            other => Err(bad(
                "VIBELOOP_ROLE",
                format!("{other:?} is not ingress, worker or all"),
            )),
        }
    }

    /// How often the sweep runs.
    pub fn sweep_interval(&self) -> Result<std::time::Duration, ConfigError> {
        seconds(&self.sweep_interval, "VIBELOOP_SWEEP_INTERVAL", 10..=86_400)
    }

    /// How often a live timeline checks its viewer again.
    pub fn recheck(&self) -> Result<std::time::Duration, ConfigError> {
        seconds(
            &self.dashboard_recheck,
            "VIBELOOP_DASHBOARD_RECHECK",
            1..=3600,
        )
    }

    /// How long a job's lease lasts without a heartbeat.
    pub fn lease(&self) -> Result<std::time::Duration, ConfigError> {
        seconds(&self.lease_seconds, "VIBELOOP_LEASE_SECONDS", 3..=3600)
    }

    /// The access settings; `warnings` gets a line when the dashboard stays closed.
    pub fn access(&self, warnings: &mut Vec<String>) -> Result<Access, ConfigError> {
        let token = some(&self.dashboard_token);
        if token.as_ref().is_some_and(|t| t.len() < 16) {
            return Err(bad(
                "VIBELOOP_DASHBOARD_TOKEN",
                "is shorter than 16 characters; use a long random one (e.g. openssl rand -hex 24)",
            ));
        }
        let oauth = match (
            some(&self.github_client_id),
            some(&self.github_client_secret),
        ) {
            (Some(client_id), Some(secret)) => {
                let users: Vec<String> = some(&self.dashboard_users)
                    .unwrap_or_default()
                    .split(',')
                    .map(|u| u.trim().trim_start_matches('@').to_lowercase())
                    .filter(|u| !u.is_empty())
                    .collect();
                if users.is_empty() {
                    return Err(bad(
                        "VIBELOOP_DASHBOARD_USERS",
                        "not set: name the GitHub logins that may sign in (comma-separated), or remove VIBELOOP_GITHUB_CLIENT_ID",
                    ));
                }
                Some(OAuth {
                    client_id,
                    client_secret: SecretString::from(secret),
                    users,
                })
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(bad(
                    "VIBELOOP_GITHUB_CLIENT_SECRET",
                    "not set, but VIBELOOP_GITHUB_CLIENT_ID is: GitHub sign-in needs both",
                ));
            }
            (None, Some(_)) => {
                return Err(bad(
                    "VIBELOOP_GITHUB_CLIENT_ID",
                    "not set, but VIBELOOP_GITHUB_CLIENT_SECRET is: GitHub sign-in needs both",
                ));
            }
        };
        let session_key = some(&self.session_key);
        if session_key.as_ref().is_some_and(|k| k.len() < 32) {
            return Err(bad(
                "VIBELOOP_SESSION_KEY",
                "is shorter than 32 characters; use a long random one (e.g. openssl rand -hex 32)",
            ));
        }
        let insecure = match some(&self.insecure_cookies)
            .map(|v| v.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("0" | "false" | "no") => false,
            Some("1" | "true" | "yes") => true,
            Some(v) => {
                return Err(bad(
                    "VIBELOOP_INSECURE_COOKIES",
                    format!("{v:?} is neither true nor false"),
                ));
            }
        };
        let access = Access {
            token: token.map(SecretString::from),
            oauth,
            session_key: session_key.map(SecretString::from),
            secure_cookies: !insecure,
        };
        if access.closed() {
            warnings.push(
                "VIBELOOP_DASHBOARD_TOKEN is not set (nor GitHub sign-in): the dashboard, /api and /metrics stay closed".into(),
            );
        }
        Ok(access)
    }
}
