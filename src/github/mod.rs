//! The GitHub App client. [`GitHubApp`] authenticates as the app (octocrab signs the RS256 JWT:
//! `iat` 60 s in the past, `exp` 9 minutes ahead) and mints installation tokens scoped to one
//! repository, cached until 5 minutes before they expire. [`RepoClient`] is the REST facade the
//! hive uses, in [`api`].
//!
//! Retries: octocrab's own retry is off (it resends POSTs at once and ignores `Retry-After`).
//! [`RepoClient::send`] retries a request only when that is safe: any request GitHub refused
//! with a rate limit (it did nothing), and idempotent requests (GET, PATCH, DELETE) after a 5xx
//! or a transport error. A create that failed ambiguously returns [`GitHubError::Ambiguous`]; its
//! caller looks for what it meant to create before trying again.

pub mod api;
pub mod checks;
pub mod ci;
pub mod gitdb;
mod graphql;
pub mod hooks;
pub mod merge;
pub mod pulls;
pub mod queue;
pub mod refs;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::BodyExt as _;
use octocrab::Octocrab;
use octocrab::service::middleware::retry::RetryConfig;
use secrecy::{ExposeSecret as _, SecretString};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};

use crate::config::AppCredentials;
use crate::ids::{InstallationId, RepoName};

/// A token is renewed when it has less than this left.
const TOKEN_RENEW_BEFORE: chrono::TimeDelta = chrono::TimeDelta::minutes(5);
/// Attempts of one request, the first included.
const MAX_ATTEMPTS: u32 = 4;
/// The longest rate-limit wait we sit out in place; longer ones fail the step, to be retried by
/// the job queue.
const MAX_INLINE_WAIT: Duration = Duration::from_secs(60);

/// Errors callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("the app is not installed on {repo} (installation {installation}): {message}")]
    NotInstalled {
        repo: RepoName,
        installation: InstallationId,
        message: String,
    },
    #[error("GitHub rate limit: retry in {0:?}")]
    RateLimited(Duration),
    #[error("GitHub answered {status} to {what}: {message}")]
    Api {
        status: StatusCode,
        what: String,
        message: String,
    },
    /// A create request failed in a way that leaves open whether GitHub did it.
    #[error("GitHub did not confirm {what}: {message}")]
    Ambiguous { what: String, message: String },
    #[error("cannot reach GitHub for {what}: {message}")]
    Transport { what: String, message: String },
    #[error("unexpected answer from GitHub to {what}: {message}")]
    Decode { what: String, message: String },
}

impl GitHubError {
    /// True when trying the same step again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            GitHubError::RateLimited(_)
            | GitHubError::Ambiguous { .. }
            | GitHubError::Transport { .. } => true,
            GitHubError::Api { status, .. } => status.is_server_error(),
            _ => false,
        }
    }
}

/// The app, authenticated with its JWT; hands out per-repository clients.
pub struct GitHubApp {
    app: Octocrab,
    /// One client per repository, shared: octocrab's token cache lives in the instance and is
    /// copied, not shared, when an `Octocrab` is cloned.
    clients: Mutex<HashMap<(InstallationId, RepoName), Arc<Octocrab>>>,
    /// Collaborator permissions looked up lately: `(repo, user) → (permission, when)`.
    permissions: Mutex<HashMap<(RepoName, String), (String, std::time::Instant)>>,
    graphql: Arc<graphql::GraphQl>,
    /// The App's bot user (`<slug>[bot]`), asked of GitHub once.
    bot: tokio::sync::OnceCell<Arc<str>>,
}

impl GitHubApp {
    /// The App's client for the REST API at `api_url` and the GraphQL endpoint `graphql_url`.
    pub fn new(
        creds: &AppCredentials,
        api_url: &url::Url,
        graphql_url: &url::Url,
    ) -> anyhow::Result<Self> {
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(
            creds.private_key_pem.expose_secret().as_bytes(),
        )?;
        let app = Octocrab::builder()
            .base_uri(api_url.as_str())?
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .app(octocrab::models::AppId(creds.app_id), key)
            .build()?;
        Ok(Self {
            app,
            clients: Mutex::new(HashMap::new()),
            permissions: Mutex::new(HashMap::new()),
            graphql: Arc::new(graphql::GraphQl::new(graphql_url.clone())?),
            bot: tokio::sync::OnceCell::new(),
        })
    }

    /// The login of the App's bot user, who writes every comment, issue and review the bot
    /// makes (`<slug>[bot]`, from `GET /app`, asked once).
    pub async fn bot_login(&self) -> Result<Arc<str>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct App {
            slug: String,
        }
        self.bot
            .get_or_try_init(|| async {
                let (bytes, _) =
                    exchange(&self.app, None, Method::GET, "/app", None, Idempotent::Yes).await?;
                let app: App = serde_json::from_slice(&bytes).map_err(|e| GitHubError::Decode {
                    what: "GET /app".into(),
                    message: e.to_string(),
                })?;
                Ok(Arc::from(format!("{}[bot]", app.slug)))
            })
            .await
            .cloned()
    }

    /// A client for one repository of one installation. The token is minted for that repository
    /// only; a repository the installation does not cover is [`GitHubError::NotInstalled`].
    pub async fn repo(
        &self,
        installation: InstallationId,
        repo: &RepoName,
    ) -> Result<RepoClient, GitHubError> {
        let key = (installation, repo.clone());
        let cached = self.clients.lock().expect("lock").get(&key).cloned();
        let crab = match cached {
            Some(crab) => crab,
            None => {
                let crab = self
                    .app
                    .installation_builder(octocrab::models::InstallationId(installation.0))
                    .repositories(vec![repo.name().to_owned()])
                    .build()
                    .map_err(|e| GitHubError::Decode {
                        what: "installation client".into(),
                        message: e.to_string(),
                    })?;
                let crab = Arc::new(crab);
                self.clients.lock().expect("lock").insert(key, crab.clone());
                crab
            }
        };
        let mut client = RepoClient {
            crab,
            repo: repo.clone(),
            installation,
            graphql: self.graphql.clone(),
            bot: Arc::from(""),
        };
        client.token().await?;
        client.bot = self.bot_login().await?;
        Ok(client)
    }
}

impl GitHubApp {
    /// `user`'s permission on the client's repository (`admin`, `write`, `read`, `none`),
    /// cached for `ttl`.
    pub async fn permission(
        &self,
        client: &RepoClient,
        user: &str,
        ttl: std::time::Duration,
    ) -> Result<String, GitHubError> {
        let key = (client.repo.clone(), user.to_owned());
        if let Some((p, at)) = self.permissions.lock().expect("lock").get(&key)
            && at.elapsed() < ttl
        {
            return Ok(p.clone());
        }
        let p = client.permission(user).await?;
        self.permissions
            .lock()
            .expect("lock")
            .insert(key, (p.clone(), std::time::Instant::now()));
        Ok(p)
    }
}

/// The REST facade for one repository, authenticated as an installation.
#[derive(Clone)]
pub struct RepoClient {
    crab: Arc<Octocrab>,
    pub(crate) repo: RepoName,
    installation: InstallationId,
    graphql: Arc<graphql::GraphQl>,
    /// The App's bot user: only what it wrote carries the bot's markers.
    bot: Arc<str>,
}

/// Who wrote a comment, an issue or a review.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct User {
    pub login: String,
}

/// Whether a request may be sent again after an unclear failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotent {
    Yes,
    No,
}

impl RepoClient {
    pub fn repo(&self) -> &RepoName {
        &self.repo
    }

    /// The App's bot user's login.
    pub fn bot(&self) -> &str {
        &self.bot
    }

    /// Whether `user` (a comment's, an issue's, a review's author) is the App's bot user: a
    /// marker in anything else proves nothing.
    pub fn is_bot(&self, user: Option<&User>) -> bool {
        user.is_some_and(|u| u.login.eq_ignore_ascii_case(&self.bot))
    }

    /// The installation token, renewed when it has under 5 minutes left. For git's credential
    /// callback only: it must never reach a URL, argv, a log line or a sandbox.
    pub async fn token(&self) -> Result<SecretString, GitHubError> {
        self.crab
            .installation_token_with_buffer(TOKEN_RENEW_BEFORE)
            .await
            .map_err(|e| self.token_error(e))
    }

    fn token_error(&self, e: octocrab::Error) -> GitHubError {
        match &e {
            octocrab::Error::GitHub { source, .. }
                if matches!(source.status_code.as_u16(), 404 | 422 | 403) =>
            {
                GitHubError::NotInstalled {
                    repo: self.repo.clone(),
                    installation: self.installation,
                    message: source.message.clone(),
                }
            }
            octocrab::Error::GitHub { source, .. } => GitHubError::Api {
                status: source.status_code,
                what: "an installation token".into(),
                message: source.message.clone(),
            },
            other => GitHubError::Transport {
                what: "an installation token".into(),
                message: other.to_string(),
            },
        }
    }

    /// Sends one request to `route` (relative to the API root) and decodes the JSON answer.
    pub async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        route: &str,
        body: Option<&serde_json::Value>,
        idempotent: Idempotent,
    ) -> Result<T, GitHubError> {
        let bytes = self
            .send_raw(method.clone(), route, body, idempotent)
            .await?;
        let bytes = if bytes.is_empty() {
            Bytes::from_static(b"null")
        } else {
            bytes
        };
        serde_json::from_slice(&bytes).map_err(|e| GitHubError::Decode {
            what: format!("{method} {}", strip_query(route)),
            message: e.to_string(),
        })
    }

    async fn send_raw(
        &self,
        method: Method,
        route: &str,
        body: Option<&serde_json::Value>,
        idempotent: Idempotent,
    ) -> Result<Bytes, GitHubError> {
        exchange(&self.crab, Some(self), method, route, body, idempotent)
            .await
            .map(|(bytes, _)| bytes)
    }
}

/// One REST exchange with retries: reads and other safe requests are retried on transport
/// errors and 5xx; a POST whose outcome is unknown is [`GitHubError::Ambiguous`] (the caller
/// looks before trying again); rate limits are waited out when short. `repo`, when given,
/// has its installation token renewed before each attempt. Returns the body and headers.
async fn exchange(
    crab: &Octocrab,
    repo: Option<&RepoClient>,
    method: Method,
    route: &str,
    body: Option<&serde_json::Value>,
    idempotent: Idempotent,
) -> Result<(Bytes, HeaderMap), GitHubError> {
    let what = format!("{method} {}", strip_query(route));
    let mut attempt = 0;
    loop {
        attempt += 1;
        let last = attempt >= MAX_ATTEMPTS;
        if let Some(repo) = repo {
            repo.token().await?;
        }
        let result = match method {
            Method::GET => crab._get(route).await,
            Method::POST => crab._post(route, body).await,
            Method::PATCH => crab._patch(route, body).await,
            Method::DELETE => crab._delete(route, body).await,
            Method::PUT => crab._put(route, body).await,
            _ => unreachable!("no other method is used"),
        };
        let response = match result {
            Ok(r) => r,
            Err(e) => {
                let message = e.to_string();
                if idempotent == Idempotent::Yes && !last {
                    warn!(%what, %message, attempt, "GitHub unreachable; retrying");
                    tokio::time::sleep(backoff(attempt)).await;
                    continue;
                }
                return Err(match idempotent {
                    Idempotent::No => GitHubError::Ambiguous { what, message },
                    Idempotent::Yes => GitHubError::Transport { what, message },
                });
            }
        };
        let (parts, body_stream) = response.into_parts();
        let bytes = body_stream.collect().await.map(|c| c.to_bytes());
        let status = parts.status;
        debug!(%what, %status, attempt, "GitHub answered");
        if status.is_success() {
            return bytes
                .map(|b| (b, parts.headers))
                .map_err(|e| GitHubError::Transport {
                    what,
                    message: e.to_string(),
                });
        }
        let message = error_message(status, bytes.as_deref().unwrap_or_default());
        if let Some(wait) = rate_limit_wait(status, &parts.headers) {
            // A rate-limited request was not carried out: sending it again is safe.
            if last || wait > MAX_INLINE_WAIT {
                return Err(GitHubError::RateLimited(wait));
            }
            warn!(%what, ?wait, "GitHub rate limit; waiting as asked");
            tokio::time::sleep(wait).await;
            continue;
        }
        if status.is_server_error() {
            if idempotent == Idempotent::Yes && !last {
                warn!(%what, %status, attempt, "GitHub server error; retrying");
                tokio::time::sleep(backoff(attempt)).await;
                continue;
            }
            if idempotent == Idempotent::No {
                return Err(GitHubError::Ambiguous { what, message });
            }
        }
        return Err(GitHubError::Api {
            status,
            what,
            message,
        });
    }
}

fn strip_query(route: &str) -> &str {
    route.split('?').next().unwrap_or(route)
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(250 * 2u64.pow(attempt.min(6)))
}

/// How long GitHub asks us to wait, when the answer is a rate limit (primary or secondary).
fn rate_limit_wait(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::FORBIDDEN {
        return None;
    }
    let num = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<i64>().ok();
    if let Some(secs) = num("retry-after") {
        return Some(Duration::from_secs(secs.clamp(0, 3600) as u64));
    }
    if num("x-ratelimit-remaining") == Some(0) {
        let reset = num("x-ratelimit-reset").unwrap_or(0);
        let wait = (reset - chrono::Utc::now().timestamp()).clamp(1, 3600);
        return Some(Duration::from_secs(wait as u64));
    }
    // A 429 without headers is still a rate limit; a bare 403 is a refusal.
    (status == StatusCode::TOO_MANY_REQUESTS).then_some(Duration::from_secs(60))
}

fn error_message(status: StatusCode, body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Body {
        message: Option<String>,
    }
    let message = serde_json::from_slice::<Body>(body)
        .ok()
        .and_then(|b| b.message);
    let mut m = message.unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
    m.truncate(300);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_are_read_from_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(rate_limit_wait(StatusCode::BAD_GATEWAY, &h), None);
        assert_eq!(rate_limit_wait(StatusCode::FORBIDDEN, &h), None);
        assert_eq!(
            rate_limit_wait(StatusCode::TOO_MANY_REQUESTS, &h),
            Some(Duration::from_secs(60))
        );
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(
            rate_limit_wait(StatusCode::FORBIDDEN, &h),
            Some(Duration::from_secs(3))
        );
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-remaining", "0".parse().unwrap());
        h.insert(
            "x-ratelimit-reset",
            (chrono::Utc::now().timestamp() + 30)
                .to_string()
                .parse()
                .unwrap(),
        );
        let wait = rate_limit_wait(StatusCode::FORBIDDEN, &h).unwrap();
        assert!((29..=30).contains(&wait.as_secs()), "{wait:?}");
    }

    #[test]
    fn error_messages_come_from_the_body() {
        assert_eq!(
            error_message(StatusCode::NOT_FOUND, br#"{"message":"Not Found"}"#),
            "Not Found"
        );
        assert_eq!(
            error_message(StatusCode::BAD_GATEWAY, b"<html>"),
            "Bad Gateway"
        );
    }
}
