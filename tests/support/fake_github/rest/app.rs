//! Routes of the App itself, authenticated with its JWT: `GET /app/installations` (every
//! installation, one page). `GET /app` and the installation tokens are in `mod.rs`.

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::json::{user_id, user_json};
use super::{Answer, check_jwt};
use crate::support::fake_github::State;

/// `GET /app/installations`: GitHub's `installation` objects, oldest first.
pub fn installations(st: &mut State, headers: &HeaderMap) -> Answer {
    if let Err(e) = check_jwt(st, headers) {
        return e;
    }
    let api = "https://api.github.com";
    let list: Vec<Value> = st
        .installations
        .iter()
        .map(|(id, login)| {
            json!({
                "id": id, "account": user_json(login), "app_id": st.app_id, "app_slug": "vibeloop",
                "target_id": user_id(login),
                "target_type": "User", "repository_selection": "selected",
                "access_tokens_url": format!("{api}/app/installations/{id}/access_tokens"),
                "repositories_url": format!("{api}/installation/repositories"),
                "html_url": format!("https://github.com/settings/installations/{id}"),
                "permissions": { "contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read" },
                "events": ["issues", "issue_comment", "pull_request", "pull_request_review", "check_run"],
                "created_at": super::now(), "updated_at": super::now(), "suspended_at": null,
            })
        })
        .collect();
    (StatusCode::OK, Value::Array(list))
}
