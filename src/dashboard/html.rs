//! The frame every dashboard page shares: escaping, the layout with its header, the response
//! headers (no script or style but this site's, no framing), friendly error pages, and the
//! small pieces pages show alike (ages, issue links, a ticket's address).

use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use super::Dashboard;
use super::api::TicketRow;

pub use crate::html::escape as esc;

/// A whole page for signed-in people.
pub fn layout(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Vibeloop</title>\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><link rel=\"stylesheet\" href=\"/static/dashboard.css\"></head><body>\
         <header><a class=\"brand\" href=\"/\">Vibeloop</a><a href=\"/\">Tickets</a><a href=\"/state\">Hive state</a>\
         <form class=\"inline\" method=\"post\" action=\"/logout\"><button>Sign out</button></form></header>\
         <main>{body}</main><script src=\"/static/dashboard.js\"></script></body></html>",
        esc(title)
    )
}

/// A page for people not signed in yet: no navigation, no script.
pub fn bare_layout(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Vibeloop</title>\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><link rel=\"stylesheet\" href=\"/static/dashboard.css\"></head><body>\
         <header><span class=\"brand\">Vibeloop</span></header><main>{body}</main></body></html>",
        esc(title)
    )
}

/// Response headers every page carries: no script or style but our own, no framing.
pub fn page(status: StatusCode, html: String) -> Response {
    (
        status,
        [
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; frame-ancestors 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        Html(html),
    )
        .into_response()
}

/// A friendly error page: what happened, and the way back.
pub fn problem(status: StatusCode, title: &str, text: &str) -> Response {
    page(
        status,
        layout(
            title,
            &format!(
                "<section class=\"card problem\"><h1>{}</h1><p>{}</p><p><a href=\"/\">All tickets</a> · <a href=\"/state\">Hive state</a></p><p class=\"muted\">HTTP {}</p></section>",
                esc(title),
                esc(text),
                status.as_u16()
            ),
        ),
    )
}

pub fn unavailable(e: &dyn std::fmt::Display) -> Response {
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "The database did not answer",
        &format!("{e}. Reload in a moment; if it lasts, check the bot's log and its DATABASE_URL."),
    )
}

/// Any other address: 404 in the dashboard's style.
pub async fn not_found() -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "Nothing here",
        "There is no page at this address. Tickets are at /tickets/T-1 or /tickets/owner/name/T-1.",
    )
}

/// `GET /static/dashboard.js`.
pub async fn script() -> impl IntoResponse {
    static_file("text/javascript; charset=utf-8", super::style::SCRIPT)
}

/// `GET /static/dashboard.css`.
pub async fn stylesheet() -> impl IntoResponse {
    static_file("text/css; charset=utf-8", super::style::CSS)
}

fn static_file(kind: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
}

/// Where a ticket's page is.
pub fn ticket_url(repo: &str, id: &str) -> String {
    format!("/tickets/{repo}/{id}")
}

pub fn age(since_ms: i64) -> String {
    let s = (super::now() - since_ms / 1000).max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

pub fn issue_link(d: &Dashboard, t: &TicketRow) -> String {
    let mut url = d.github_url.clone();
    url.set_path(&format!("{}/issues/{}", t.repo, t.issue));
    format!("<a href=\"{}\">#{}</a>", esc(url.as_str()), t.issue)
}
