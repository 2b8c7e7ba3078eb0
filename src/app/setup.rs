//! `vibeloop setup`: registers the GitHub App through GitHub's manifest flow. A local page posts
//! the manifest ([`manifest`]) to GitHub; GitHub sends the browser back to `/callback` with a
//! code and the page's `state`; the code is exchanged for the App's credentials
//! ([`conversion`]), which go to a new env file with mode 0600 ([`env_file`]). The server stops
//! once the exchange is done, whether it succeeded or not. Secrets are written to that file
//! only: never printed, logged or shown on a page.

mod conversion;
mod env_file;
mod manifest;
mod page;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use serde::Deserialize;
use tokio::sync::{Mutex, oneshot};
use url::Url;

use crate::config::tools::SetupArgs;

pub use conversion::ConversionError;

/// The App GitHub registered, and where its credentials went.
#[derive(Debug, Clone)]
pub struct Registered {
    pub app_id: u64,
    pub slug: String,
    pub html_url: String,
    pub env_file: PathBuf,
}

impl Registered {
    /// GitHub's page for installing the App on an account's repositories.
    pub fn install_url(&self) -> String {
        format!("{}/installations/new", self.html_url.trim_end_matches('/'))
    }

    /// The shell command that starts the bot with the env file.
    pub fn serve_command(&self) -> String {
        format!(
            "set -a; . {}; set +a; vibeloop serve",
            shell_word(&self.env_file.display().to_string())
        )
    }

    /// What was done and what to do next, as the command prints it.
    pub fn summary(&self) -> String {
        format!(
            "Registered the GitHub App {slug} (id {id}): {html}\n\
             Credentials written to {env} (mode 0600); keep that file private.\n\
             Next: install the App on your repositories at {install}\n\
             then start the bot: {serve}",
            slug = self.slug,
            id = self.app_id,
            html = self.html_url,
            env = self.env_file.display(),
            install = self.install_url(),
            serve = self.serve_command(),
        )
    }
}

/// Runs the command: serves the page until the App is registered, then says what to do next.
pub async fn run(args: &SetupArgs) -> anyhow::Result<()> {
    let (ready_tx, ready_rx) = oneshot::channel();
    let announce = async {
        if let Ok(addr) = ready_rx.await {
            println!(
                "Open http://{addr}/ in a browser to register the GitHub App \"{}\" (Ctrl-C stops).",
                args.name
            );
        }
    };
    let (result, ()) = tokio::join!(serve(args, ready_tx), announce);
    println!("{}", result?.summary());
    Ok(())
}

/// Serves the setup page on `args.listen`, sends the address it is reachable at to `ready`,
/// and returns once GitHub's code has been exchanged: the App, or why it failed.
pub async fn serve(
    args: &SetupArgs,
    ready: oneshot::Sender<SocketAddr>,
) -> anyhow::Result<Registered> {
    let public_url = http_url("--public-url", &args.public_url)?;
    let github_url = http_url("--github-url", &args.github_url)?;
    let api_url = http_url("--github-api-url", &args.github_api_url)?;
    let env_file = std::path::absolute(&args.env_file).with_context(|| {
        format!(
            "--env-file {} is not a usable path",
            args.env_file.display()
        )
    })?;
    if occupied(&env_file) {
        bail!(
            "{} already exists and `vibeloop setup` never overwrites it: move it away or name \
             another file with --env-file",
            env_file.display()
        );
    }
    let template = manifest::template(args.manifest.as_deref())?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {} (--listen)", args.listen))?;
    let addr = reachable(listener.local_addr()?);
    let redirect_url = Url::parse(&format!("http://{addr}/callback"))?;
    let manifest = manifest::fill(template, &args.name, &public_url, &redirect_url);
    let state = hex::encode(rand::random::<[u8; 16]>());
    let action = manifest::new_app_url(&github_url, args.org.as_deref(), &state)?;
    let owner = match &args.org {
        Some(org) => format!("the organisation {org}"),
        None => "your account".to_owned(),
    };
    let (done_tx, done_rx) = oneshot::channel();
    let flow = Arc::new(Flow {
        start_page: page::start(&action, &manifest, &owner, &env_file.display().to_string()),
        state,
        api_url,
        api_url_text: args.github_api_url.trim().to_owned(),
        env_file,
        done: Mutex::new(Some(done_tx)),
    });
    let app = Router::new()
        .route("/", get(start))
        .route("/callback", get(callback))
        .with_state(flow);
    let _ = ready.send(addr);
    let outcome = Arc::new(std::sync::Mutex::new(None));
    let slot = outcome.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            if let Ok(result) = done_rx.await {
                *slot.lock().unwrap() = Some(result);
            }
        })
        .await
        .context("the setup page's server failed")?;
    let result = outcome.lock().unwrap().take();
    result.unwrap_or_else(|| Err(anyhow!("the setup page stopped before GitHub's code came")))
}

/// What the handlers share.
struct Flow {
    start_page: String,
    /// Sent to GitHub with the manifest; a callback must bring it back.
    state: String,
    api_url: Url,
    /// `--github-api-url` as given, for the env file.
    api_url_text: String,
    env_file: PathBuf,
    /// Taken by the callback that exchanges the code; held while it does, so there is one.
    done: Mutex<Option<oneshot::Sender<anyhow::Result<Registered>>>>,
}

type Page = (StatusCode, Html<String>);

async fn start(State(flow): State<Arc<Flow>>) -> Html<String> {
    Html(flow.start_page.clone())
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
}

/// GitHub's redirect after the App was created: `?code=…&state=…`.
async fn callback(State(flow): State<Arc<Flow>>, Query(q): Query<CallbackQuery>) -> Page {
    let problem = |status, title, message: &str| (status, Html(page::problem(title, message)));
    let state_ok = q
        .state
        .as_deref()
        .is_some_and(|s| same(s.as_bytes(), flow.state.as_bytes()));
    if !state_ok {
        return problem(
            StatusCode::BAD_REQUEST,
            "This link did not come from this setup",
            "Its state does not match the one this setup sent to GitHub, so nothing was done. \
             Open this server's first page (/) and create the App from there.",
        );
    }
    let Some(code) = q.code.filter(|c| !c.is_empty()) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "GitHub sent no code",
            "The address has no code, so there is nothing to exchange. Open this server's first \
             page (/) and create the App from there.",
        );
    };
    let mut done = flow.done.lock().await;
    if done.is_none() {
        return problem(
            StatusCode::GONE,
            "This setup has finished",
            "GitHub's code was already exchanged; see the terminal that runs `vibeloop setup`.",
        );
    }
    if occupied(&flow.env_file) {
        let message = format!(
            "{} appeared after this setup started, and `vibeloop setup` never overwrites it. \
             GitHub's code has not been used yet: move the file away, then reload this page.",
            flow.env_file.display()
        );
        return problem(
            StatusCode::CONFLICT,
            "The env file already exists",
            &message,
        );
    }
    let result = finish(&flow, &code).await;
    let page = match &result {
        Ok(registered) => (StatusCode::OK, Html(page::done(registered))),
        Err(e) => {
            let status = if e.is::<ConversionError>() {
                StatusCode::BAD_GATEWAY
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            problem(
                status,
                "The App's credentials were not saved",
                &format!("{e:#}"),
            )
        }
    };
    if let Some(tx) = done.take() {
        let _ = tx.send(result);
    }
    page
}

/// Exchanges the code and writes the env file.
async fn finish(flow: &Flow, code: &str) -> anyhow::Result<Registered> {
    let app = conversion::exchange(&flow.api_url, code).await?;
    let registered = Registered {
        app_id: app.id,
        slug: app.slug.clone(),
        html_url: app.html_url.clone(),
        env_file: flow.env_file.clone(),
    };
    env_file::render(&app, &flow.api_url_text)
        .and_then(|text| env_file::write_new(&flow.env_file, &text))
        .map_err(|e| {
            anyhow!(
                "{e:#}. GitHub registered the App {} ({}), but its credentials are lost: delete \
                 the App in its settings on GitHub, then run `vibeloop setup` again",
                registered.slug,
                registered.html_url
            )
        })?;
    Ok(registered)
}

/// Parses an http(s) URL given with `flag`.
fn http_url(flag: &str, value: &str) -> anyhow::Result<Url> {
    match Url::parse(value.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(url),
        _ => bail!("{flag} {value:?} is not an http(s) URL such as https://example.com"),
    }
}

/// Whether anything, even a dangling symlink, is at `path`.
fn occupied(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The address a local browser reaches the server at (loopback for a wildcard listen address).
fn reachable(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    addr
}

/// Compares in time that does not depend on where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    a.len() == b.len() && std::hint::black_box(diff) == 0
}

/// `s` as one shell word.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/+@:,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_comparison_needs_every_byte() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }

    #[test]
    fn the_serve_command_quotes_odd_paths() {
        assert_eq!(shell_word("/srv/bot/.env"), "/srv/bot/.env");
        assert_eq!(shell_word("/my bot/it's.env"), r"'/my bot/it'\''s.env'");
    }
}
