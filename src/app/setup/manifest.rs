//! The App manifest `vibeloop setup` sends to GitHub: the built-in `app-manifest/manifest.json`
//! (or `--manifest`) with this installation's name and URLs filled in, and the address of
//! GitHub's "new App" page the form posts it to.

use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use url::Url;

/// `app-manifest/manifest.json`, built into the binary so `vibeloop setup` runs anywhere.
pub const BUILT_IN: &str = include_str!("../../../app-manifest/manifest.json");

/// Where the bot's webhook receiver listens, below its public URL.
pub const WEBHOOK_PATH: &str = "webhook";
/// Where GitHub sends a user back after signing in with the App (the dashboard's login).
pub const LOGIN_CALLBACK_PATH: &str = "login/github/callback";

/// Reads the manifest template: `path`, or the built-in one.
pub fn template(path: Option<&Path>) -> anyhow::Result<Value> {
    let (text, origin) = match path {
        Some(p) => (
            std::fs::read_to_string(p)
                .with_context(|| format!("cannot read the manifest {}", p.display()))?,
            p.display().to_string(),
        ),
        None => (BUILT_IN.to_owned(), "the built-in manifest".to_owned()),
    };
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("{origin} is not valid JSON"))?;
    if !value.is_object() {
        bail!("{origin} is not a JSON object: a GitHub App manifest is one");
    }
    Ok(value)
}

/// `base` joined with `path` (a `/`-separated path below it).
pub fn below(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.path_segments_mut()
        .expect("http(s) URLs have a path")
        .pop_if_empty()
        .extend(path.split('/'));
    url
}

/// The manifest with the App's `name`, homepage (`public_url`), webhook
/// (`<public_url>/webhook`), OAuth callback and the page GitHub sends the browser back to
/// (`redirect_url`) filled in.
pub fn fill(mut manifest: Value, name: &str, public_url: &Url, redirect_url: &Url) -> Value {
    let active = manifest["hook_attributes"]["active"]
        .as_bool()
        .unwrap_or(true);
    manifest["name"] = json!(name);
    manifest["url"] = json!(public_url.as_str().trim_end_matches('/'));
    manifest["hook_attributes"] = json!({
        "url": below(public_url, WEBHOOK_PATH).as_str(),
        "active": active,
    });
    manifest["redirect_url"] = json!(redirect_url.as_str());
    manifest["callback_urls"] = json!([below(public_url, LOGIN_CALLBACK_PATH).as_str()]);
    manifest
}

/// GitHub's "register a new App" page that the manifest is posted to, for the user's account
/// or for `org`, carrying `state` (GitHub hands it back unchanged with the code).
pub fn new_app_url(github_url: &Url, org: Option<&str>, state: &str) -> anyhow::Result<Url> {
    let path = match org {
        Some(org) => {
            let valid =
                !org.is_empty() && org.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            if !valid {
                bail!("--org {org:?} is not an organisation's login (letters, digits and hyphens)");
            }
            format!("organizations/{org}/settings/apps/new")
        }
        None => "settings/apps/new".to_owned(),
    };
    let mut url = below(github_url, &path);
    url.query_pairs_mut().append_pair("state", state);
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn fill_points_the_webhook_and_the_redirect_at_this_installation() {
        let m = fill(
            template(None).unwrap(),
            "acme-bot",
            &url("https://bot.acme.dev/hooks/"),
            &url("http://127.0.0.1:3001/callback"),
        );
        assert_eq!(m["name"], "acme-bot");
        assert_eq!(m["url"], "https://bot.acme.dev/hooks");
        assert_eq!(
            m["hook_attributes"],
            json!({ "url": "https://bot.acme.dev/hooks/webhook", "active": true })
        );
        assert_eq!(m["redirect_url"], "http://127.0.0.1:3001/callback");
        assert_eq!(
            m["callback_urls"],
            json!(["https://bot.acme.dev/hooks/login/github/callback"])
        );
    }

    #[test]
    fn the_form_posts_to_the_account_or_the_organisation() {
        let gh = url("https://github.com");
        assert_eq!(
            new_app_url(&gh, None, "s1").unwrap().as_str(),
            "https://github.com/settings/apps/new?state=s1"
        );
        assert_eq!(
            new_app_url(&url("https://ghe.acme.dev/"), Some("acme-eng"), "s2")
                .unwrap()
                .as_str(),
            "https://ghe.acme.dev/organizations/acme-eng/settings/apps/new?state=s2"
        );
        let err = new_app_url(&gh, Some("acme/../x"), "s").unwrap_err();
        assert!(err.to_string().contains("--org"), "{err}");
    }
}
