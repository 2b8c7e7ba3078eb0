//! Routes of the App itself, authenticated with its JWT: `GET /app`, `GET /app/installations`
//! (every installation, one page) and `POST /app/installations/{id}/access_tokens`.

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::json::{user_id, user_json};
use super::{Answer, State, check_jwt, not_found};

const PERMISSIONS: &str = r#"{ "contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read" }"#;

fn permissions() -> Value {
    serde_json::from_str(PERMISSIONS).unwrap_or_default()
}

/// `rest` is the path after `/app`.
pub fn route(
    st: &mut State,
    method: &str,
    rest: &[&str],
    headers: &HeaderMap,
    body: Option<&Value>,
) -> Answer {
    if let Err(e) = check_jwt(st, headers) {
        return e;
    }
    match (method, rest) {
        ("GET", []) => (
            StatusCode::OK,
            json!({ "id": st.app_id, "slug": "vibeloop", "name": "Vibeloop" }),
        ),
        ("GET", ["installations"]) => installations(st),
        ("POST", ["installations", id, "access_tokens"]) => access_token(st, id, body),
        _ => not_found(),
    }
}

/// `GET /app/installations`: GitHub's `installation` objects, oldest first.
fn installations(st: &State) -> Answer {
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
                "permissions": permissions(),
                "events": ["issues", "issue_comment", "pull_request", "pull_request_review", "check_run"],
                "created_at": super::now(), "updated_at": super::now(), "suspended_at": null,
            })
        })
        .collect();
    (StatusCode::OK, Value::Array(list))
}

/// `POST /app/installations/{id}/access_tokens`, optionally limited to `repositories`.
fn access_token(st: &mut State, id: &str, body: Option<&Value>) -> Answer {
    let Ok(id) = id.parse::<u64>() else {
        return not_found();
    };
    if !st.installations.contains_key(&id) {
        return not_found();
    }
    let wanted: Option<Vec<String>> = body
        .and_then(|b| b.get("repositories"))
        .and_then(|r| serde_json::from_value(r.clone()).ok());
    if let Some(names) = &wanted {
        let covered = |n: &String| {
            st.repos
                .iter()
                .any(|(full, r)| r.installation == id && full.ends_with(&format!("/{n}")))
        };
        if !names.iter().all(covered) {
            return super::err(
                StatusCode::UNPROCESSABLE_ENTITY,
                "There is at least one repository that does not exist or is not accessible to the parent installation.",
            );
        }
    }
    let token = st.mint_token(id, wanted);
    let expires_at = st.token_expiry(&token).unwrap_or_else(chrono::Utc::now);
    (
        StatusCode::CREATED,
        json!({
            "token": token,
            "expires_at": expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "permissions": permissions(),
            "repository_selection": "selected",
        }),
    )
}
