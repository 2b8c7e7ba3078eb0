//! GitHub's GraphQL endpoint, for the one thing REST cannot do (marking a draft pull request
//! ready for review). It lives at `https://api.github.com/graphql`, and at
//! `https://HOST/api/graphql` on GitHub Enterprise Server, whose REST root is
//! `https://HOST/api/v3` — beside the REST root, not under it, so it is called with its own
//! HTTP client rather than through octocrab (which puts every path under the REST root).
//! The installation token goes in the `Authorization` header only.

use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use serde_json::Value;

use super::GitHubError;

/// Attempts of one query, the first included (the mutations sent are idempotent).
const ATTEMPTS: u32 = 3;

pub struct GraphQl {
    http: reqwest::Client,
    url: url::Url,
}

impl GraphQl {
    pub fn new(url: url::Url) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("vibeloop/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self { http, url })
    }

    /// Runs `query` with `variables`; GraphQL's own `errors` are an error too.
    pub async fn query(
        &self,
        token: &SecretString,
        what: &str,
        query: &str,
        variables: Value,
    ) -> Result<Value, GitHubError> {
        let body = serde_json::json!({ "query": query, "variables": variables });
        let mut attempt = 0;
        loop {
            attempt += 1;
            let sent = self
                .http
                .post(self.url.clone())
                .bearer_auth(token.expose_secret())
                .json(&body)
                .send()
                .await;
            let retry = |e: &GitHubError| attempt < ATTEMPTS && e.is_transient();
            let answer = match sent {
                Ok(r) if r.status().is_success() => {
                    r.json::<Value>().await.map_err(|e| GitHubError::Decode {
                        what: what.to_owned(),
                        message: e.to_string(),
                    })
                }
                Ok(r) => {
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    Err(GitHubError::Api {
                        status,
                        what: what.to_owned(),
                        message: super::error_message(status, text.as_bytes()),
                    })
                }
                Err(e) => Err(GitHubError::Transport {
                    what: what.to_owned(),
                    message: e.without_url().to_string(),
                }),
            };
            match answer {
                Ok(v) => {
                    return match v.get("errors") {
                        Some(errors) => Err(GitHubError::Api {
                            status: http::StatusCode::OK,
                            what: what.to_owned(),
                            message: errors.to_string(),
                        }),
                        None => Ok(v),
                    };
                }
                Err(e) if retry(&e) => {
                    tracing::warn!(what, error = %e, attempt, "GitHub GraphQL failed; retrying");
                    tokio::time::sleep(super::backoff(attempt)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
