//! The dashboard `vibeloop serve` shows: server-rendered pages (the tickets, a ticket with its
//! live timeline, the hive's global state), their JSON twins under `/api/`, interventions (the
//! seed's Oracle), and `/metrics` for Prometheus. Everything here needs a sign-in ([`auth`]);
//! only `/healthz`, `/readyz` and `/webhook` (the webhook room's) are open.
//!
//! * [`auth`]: tokens, sessions, GitHub sign-in checks; [`login`]: the sign-in pages and flow;
//! * [`html`]: the frame of every page (layout, headers, error pages); [`pages`]: the list,
//!   addresses, the state page; [`ticket_page`]: a ticket;
//!   [`home`]: the home page's pictures; [`charts`]: inline SVG; [`story`]: the timeline in
//!   sentences; [`markdown`]: our Markdown as safe HTML; [`style`]: the stylesheet and script;
//! * [`api`]: JSON, the server-sent timeline, interventions;
//! * [`sight`]: what each signed-in person may see (the operator all; others the repositories
//!   GitHub gives them read on). `/metrics` counts every repository's tickets: the operator's.

pub mod api;
pub mod auth;
pub mod charts;
pub mod home;
pub mod html;
pub mod live;
pub mod login;
pub mod markdown;
pub mod pages;
pub mod sight;
pub mod story;
pub mod style;
pub mod ticket_page;

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::commands::Person;
use crate::config::access::Access;
use crate::github::GitHubApp;
use crate::store::Store;

/// What the dashboard's routes share.
#[derive(Clone)]
pub struct Dashboard {
    pub store: Store,
    pub access: Arc<Access>,
    pub keys: auth::Keys,
    /// GitHub's web address (sign-in) and REST API (the signed-in user).
    pub github_url: url::Url,
    pub github_api_url: url::Url,
    /// The App, when this process has its credentials: a signed-in person's permission on a
    /// repository is asked through it.
    pub github: Option<Arc<GitHubApp>>,
    /// The sandboxes' backend, when this process runs workers: its containers are listed in
    /// the global state.
    pub sandbox: Option<crate::sandbox::Backend>,
    /// Where this process keeps worktrees (listed in the global state).
    pub data_dir: PathBuf,
    pub http: reqwest::Client,
    /// Wrong dashboard tokens of the last minute, per client address.
    pub login_throttle: Arc<login::Throttle>,
    /// How often a live timeline checks its viewer again.
    pub recheck: std::time::Duration,
}

/// The dashboard's routes, to merge with the webhook's.
pub fn router(dashboard: Dashboard) -> Router {
    let signed_in = Router::new()
        .route("/", get(pages::tickets))
        .route("/tickets/{key}", get(pages::ticket))
        .route("/tickets/{key}/{name}/{id}", get(pages::ticket_at))
        .route("/tickets/{key}/events", get(live::timeline))
        .route("/tickets/{key}/intervene", post(pages::intervene))
        .route("/state", get(pages::state))
        .route("/api/state", get(api::state))
        .route("/api/tickets", get(api::tickets))
        .route("/api/tickets/{key}", get(api::ticket))
        .route("/api/tickets/{key}/{name}/{id}", get(api::ticket_at))
        .route("/api/tickets/{key}/interventions", post(api::intervene))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(
            dashboard.clone(),
            require_sign_in,
        ));
    Router::new()
        .merge(signed_in)
        .route("/login", get(login::page).post(login::with_token))
        .route("/login/github", get(login::github))
        .route("/login/github/callback", get(login::github_callback))
        .route("/logout", post(login::logout))
        .route("/static/dashboard.js", get(html::script))
        .route("/static/dashboard.css", get(html::stylesheet))
        .fallback(html::not_found)
        .with_state(dashboard)
}

/// Lets signed-in people through (their [`Person`] goes along as an extension); a page request
/// without a sign-in is sent to the sign-in page, an API request gets 401.
///
/// A bearer token is a guess like a typed one: wrong ones count against the client's address
/// ([`login::Throttle`]), and past the limit the address gets 429 before its token is looked at.
async fn require_sign_in(State(d): State<Dashboard>, mut req: Request, next: Next) -> Response {
    let client = login::client_of(&req);
    let bearer = req.headers().contains_key(header::AUTHORIZATION);
    if bearer && let Some(wait) = d.login_throttle.wait(client) {
        return login::too_many(wait, "Too many wrong tokens from this address".into());
    }
    let person = auth::person(&d.access, &d.keys, req.headers(), now());
    if bearer && person.is_none() {
        d.login_throttle.failed(client);
        tracing::warn!(%client, "dashboard request with a wrong bearer token");
    }
    match person {
        Some(person) => {
            req.extensions_mut().insert(person);
            next.run(req).await
        }
        None => {
            let path = req.uri().path();
            let wants_page = !path.starts_with("/api/")
                && path != "/metrics"
                && !path.ends_with("/events")
                && req.method() == axum::http::Method::GET;
            if wants_page {
                let target = req
                    .uri()
                    .path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("/");
                let next =
                    url::form_urlencoded::byte_serialize(target.as_bytes()).collect::<String>();
                return Redirect::to(&format!("/login?next={next}")).into_response();
            }
            let mut r = (
                StatusCode::UNAUTHORIZED,
                "sign in first: send Authorization: Bearer <VIBELOOP_DASHBOARD_TOKEN>, or sign in at /login\n",
            )
                .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"vibeloop\""),
            );
            r
        }
    }
}

/// `GET /metrics`: Prometheus's text format, for the operator's token (it counts every
/// repository's tickets); anyone else is answered 404.
async fn metrics(State(d): State<Dashboard>, Extension(who): Extension<Person>) -> Response {
    if !sight::Sight::new(&d, &who).sees_all() {
        return html::not_found().await.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics_page(&d.store).await,
    )
        .into_response()
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The session cookie of a request (for the CSRF token of its forms).
fn session_of(headers: &HeaderMap) -> String {
    auth::session_cookie(headers).unwrap_or_default()
}

/// The `/metrics` page: the store's gauges refreshed, then everything rendered.
async fn metrics_page(store: &crate::store::Store) -> String {
    if let Ok(states) = store.ticket_counts().await {
        for state in crate::ticket::TaskState::ALL {
            let n = states
                .iter()
                .find(|(s, _)| s == state.as_str())
                .map_or(0, |(_, n)| *n);
            crate::metrics::tickets_in(state.as_str(), n);
        }
    }
    if let Ok(jobs) = store.job_counts().await {
        for status in ["queued", "running", "failed"] {
            let n = jobs
                .iter()
                .find(|(s, _)| s == status)
                .map_or(0, |(_, n)| *n);
            crate::metrics::jobs_in(status, n);
        }
    }
    crate::metrics::render()
}
