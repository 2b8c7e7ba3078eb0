//! The GitHub App check: with the App's JWT (signed as [`crate::github::GitHubApp`] signs it),
//! `GET /app` must answer with the App, and `GET /app/installations` says where it is installed.

use std::time::Duration;

use octocrab::{Octocrab, Page};
use secrecy::ExposeSecret as _;
use serde_json::Value;

use super::{Check, NO_CONFIG, Parsed, root_cause, shown};
use crate::config::{AppCredentials, ServeArgs};

const NAME: &str = "GitHub App";
const WITHIN: Duration = Duration::from_secs(10);
/// Accounts named in the line; the rest are counted.
const SHOW_ACCOUNTS: usize = 5;

pub(super) async fn check(parsed: Option<&Parsed>, args: &ServeArgs) -> Check {
    let Some(parsed) = parsed else {
        return Check::skipped(NAME, NO_CONFIG);
    };
    let Some(creds) = &parsed.config.app else {
        return Check::fail(
            NAME,
            "no App credentials, so no ticket runs",
            "run `vibeloop setup` to register an App, or set GITHUB_APP_ID and GITHUB_PRIVATE_KEY_PATH for an existing one",
        );
    };
    let key_setting = match &args.github_private_key {
        Some(pem) if !pem.trim().is_empty() => "GITHUB_PRIVATE_KEY",
        _ => "GITHUB_PRIVATE_KEY_PATH",
    };
    let api = &parsed.config.github_api_url;
    let crab = match client(creds, api) {
        Ok(c) => c,
        Err(e) => {
            return Check::fail(
                NAME,
                format!("cannot make a GitHub client: {e:#}"),
                format!("check GITHUB_API_URL and {key_setting}"),
            );
        }
    };
    let app = match within(crab.get::<Value, _, ()>("/app", None)).await {
        Ok(app) => app,
        Err(e) => return refused(&e, "GET /app", &shown(api), creds.app_id, key_setting),
    };
    let slug = app["slug"].as_str().unwrap_or("(no slug)").to_owned();
    let installed = within(async {
        let first: Page<Value> = crab
            .get("/app/installations", Some(&[("per_page", "100")]))
            .await?;
        crab.all_pages(first).await
    })
    .await;
    let installations = match installed {
        Ok(list) => list,
        Err(e) => {
            return refused(
                &e,
                "GET /app/installations",
                &shown(api),
                creds.app_id,
                key_setting,
            );
        }
    };
    let accounts: Vec<&str> = installations
        .iter()
        .filter_map(|i| i["account"]["login"].as_str())
        .collect();
    let detail = format!(
        "{slug} (App {}) at {}; installed on {}",
        creds.app_id,
        shown(api),
        installed_on(&accounts)
    );
    let check = Check::pass(NAME, detail);
    if accounts.is_empty() {
        let link = match app["html_url"].as_str() {
            Some(page) => format!("{}/installations/new", page.trim_end_matches('/')),
            None => "the App's public page".to_owned(),
        };
        return check.warn(format!(
            "installed nowhere yet: install it on a repository from {link}"
        ));
    }
    check
}

/// An App client the way `GitHubApp::new` makes one, retries off.
pub(super) fn client(creds: &AppCredentials, api: &url::Url) -> anyhow::Result<Octocrab> {
    let key =
        jsonwebtoken::EncodingKey::from_rsa_pem(creds.private_key_pem.expose_secret().as_bytes())?;
    Ok(Octocrab::builder()
        .base_uri(api.as_str())?
        .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
        .set_connect_timeout(Some(WITHIN))
        .set_read_timeout(Some(WITHIN))
        .app(octocrab::models::AppId(creds.app_id), key)
        .build()?)
}

/// The App's client for a check that reads installed repositories (`name`), or why that check
/// is skipped.
pub(super) fn app_client(
    parsed: Option<&Parsed>,
    github_passed: bool,
    name: &str,
) -> Result<Octocrab, Check> {
    let Some(parsed) = parsed else {
        return Err(Check::skipped(name, NO_CONFIG));
    };
    let Some(creds) = &parsed.config.app else {
        return Err(Check::skipped(name, "no App credentials"));
    };
    if !github_passed {
        return Err(Check::skipped(name, "the GitHub App check failed"));
    }
    client(creds, &parsed.config.github_api_url)
        .map_err(|e| Check::skipped(name, format!("no GitHub client: {e:#}")))
}

/// The repositories the App is installed on (the first `max` over all installations), each
/// as GitHub lists it, with a client of its installation.
pub(super) async fn installed_repos(
    crab: &Octocrab,
    max: usize,
) -> anyhow::Result<Vec<(Octocrab, Value)>> {
    let installations: Vec<Value> = crab
        .get("/app/installations", Some(&[("per_page", "100")]))
        .await?;
    let mut repos = Vec::new();
    for inst in installations {
        let Some(id) = inst["id"].as_u64() else {
            continue;
        };
        let client = crab.installation(octocrab::models::InstallationId(id))?;
        let list: Value = client
            .get("/installation/repositories", Some(&[("per_page", "100")]))
            .await?;
        for repo in list["repositories"].as_array().into_iter().flatten() {
            if repos.len() == max {
                return Ok(repos);
            }
            if repo["full_name"].is_string() {
                repos.push((client.clone(), repo.clone()));
            }
        }
    }
    Ok(repos)
}

/// `f`, failing as a timeout after twice [`WITHIN`] (a connection and an answer).
async fn within<T>(
    f: impl Future<Output = octocrab::Result<T>>,
) -> Result<T, Option<octocrab::Error>> {
    match tokio::time::timeout(WITHIN * 2, f).await {
        Ok(r) => r.map_err(Some),
        Err(_) => Err(None),
    }
}

/// The check for a request GitHub did not answer with success; `None` is a timeout.
fn refused(
    e: &Option<octocrab::Error>,
    what: &str,
    api: &str,
    app_id: u64,
    key_setting: &str,
) -> Check {
    let Some(e) = e else {
        return Check::fail(
            NAME,
            format!(
                "{api} did not answer {what} within {}s",
                (WITHIN * 2).as_secs()
            ),
            "check GITHUB_API_URL and this machine's network",
        );
    };
    let octocrab::Error::GitHub { source, .. } = e else {
        return Check::fail(
            NAME,
            format!("cannot reach {api} ({})", root_cause(e)),
            "check GITHUB_API_URL and this machine's network",
        );
    };
    let status = source.status_code.as_u16();
    let message: String = source.message.chars().take(200).collect();
    match status {
        401 => {
            let mut fix = format!(
                "GITHUB_APP_ID ({app_id}) or the key in {key_setting} is wrong: compare them with the App's settings page, where a new key can be generated"
            );
            if message.contains("('exp')") || message.contains("('iat')") {
                fix.push_str("; and check this machine's clock");
            }
            Check::fail(
                NAME,
                format!("GitHub refused the App's token (401: {message})"),
                fix,
            )
        }
        404 => Check::fail(
            NAME,
            format!("{api} answered 404 to {what}"),
            "check GITHUB_API_URL (GitHub Enterprise: https://HOST/api/v3)",
        ),
        _ => Check::fail(
            NAME,
            format!("GitHub answered {status} to {what}: {message}"),
            "try again later; if it lasts, check GITHUB_API_URL",
        ),
    }
}

/// `2 accounts (acme, bob)`, naming the first few.
fn installed_on(accounts: &[&str]) -> String {
    let n = accounts.len();
    if n == 0 {
        return "no account".into();
    }
    let mut named = accounts
        .iter()
        .take(SHOW_ACCOUNTS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if n > SHOW_ACCOUNTS {
        named.push_str(&format!(" and {} more", n - SHOW_ACCOUNTS));
    }
    format!("{n} account{} ({named})", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installations_are_counted_and_named() {
        assert_eq!(installed_on(&[]), "no account");
        assert_eq!(installed_on(&["acme"]), "1 account (acme)");
        let many = ["a", "b", "c", "d", "e", "f", "g"];
        assert_eq!(installed_on(&many), "7 accounts (a, b, c, d, e and 2 more)");
    }
}
