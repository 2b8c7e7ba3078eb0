//! The last step of GitHub's manifest flow: exchanging the temporary code for the new App's
//! id and credentials (`POST /app-manifests/{code}/conversions`, no authentication).

use std::time::Duration;

use serde::Deserialize;
use url::Url;

use super::manifest::below;

/// What GitHub answers for a code: the App and its secrets. No `Debug`: it holds secrets.
#[derive(Deserialize)]
pub struct Conversion {
    pub id: u64,
    pub slug: String,
    pub html_url: String,
    pub client_id: String,
    pub client_secret: String,
    /// GitHub's schema allows `null`, for an App without a webhook; [`super::manifest::fill`]
    /// always gives it one.
    pub webhook_secret: String,
    pub pem: String,
    /// The account that owns the App: a user, an organisation or an enterprise.
    pub owner: Option<Owner>,
}

#[derive(Deserialize)]
pub struct Owner {
    /// `login` for users and organisations (an enterprise has `slug` instead).
    pub login: Option<String>,
    /// `User` or `Organization`; absent for an enterprise.
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

impl Conversion {
    /// The login of the person who owns the App, when a person does.
    pub fn owner_user(&self) -> Option<&str> {
        let owner = self.owner.as_ref()?;
        (owner.kind.as_deref() == Some("User"))
            .then_some(owner.login.as_deref())
            .flatten()
    }
}

/// Why the exchange failed. Messages carry neither the code nor any secret.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    #[error(
        "GitHub refused the code (HTTP {status}: {message}). A code works once and for an hour \
         only: run `vibeloop setup` again (delete the App on GitHub first if it was created)"
    )]
    Refused { status: u16, message: String },
    #[error("cannot reach GitHub's API at {api}: {source}. Check --github-api-url and the network")]
    Unreachable {
        api: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("GitHub's answer to the code is not an App with credentials: {0}")]
    Unexpected(String),
}

/// Exchanges `code` at `api_url` for the App's credentials.
pub async fn exchange(api_url: &Url, code: &str) -> Result<Conversion, ConversionError> {
    let mut url = below(api_url, "app-manifests");
    url.path_segments_mut()
        .expect("http(s) URLs have a path")
        .extend([code, "conversions"]);
    let unreachable = |e: reqwest::Error| ConversionError::Unreachable {
        api: api_url.to_string(),
        source: e.without_url(),
    };
    let client = reqwest::Client::builder()
        .user_agent(concat!("vibeloop-setup/", env!("CARGO_PKG_VERSION")))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(unreachable)?;
    let response = client
        .post(url)
        .header("accept", "application/vnd.github+json")
        .header("x-github-api-version", "2022-11-28")
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    let body = response.bytes().await.map_err(unreachable)?;
    if !status.is_success() {
        let message = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("no reason").to_owned());
        return Err(ConversionError::Refused {
            status: status.as_u16(),
            message,
        });
    }
    serde_json::from_slice(&body).map_err(|e| {
        // "missing field `pem`" names a field; other messages may quote a value, maybe a secret.
        let e = e.to_string();
        ConversionError::Unexpected(if e.starts_with("missing field") {
            e
        } else {
            "a field is null or of the wrong type".to_owned()
        })
    })
}
