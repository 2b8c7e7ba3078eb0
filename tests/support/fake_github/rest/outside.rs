//! The fake's routes outside GitHub's REST API: git smart HTTP (with the installation token as
//! the password), redelivery of a logged webhook, and the controls for people trying the fake by
//! hand (`GET /_fake/state`, `POST /_fake/label/…`).

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Response, StatusCode};
use base64::Engine as _;
use serde_json::{Value, json};

use super::{Shared, check_jwt, check_token, err, respond};
use crate::support::fake_github::{Recorded, State};
use crate::support::git_http;

/// `GET /_fake/state`: what the fake holds, for people trying it by hand.
pub(super) fn snapshot(st: &State) -> Value {
    let repos: serde_json::Map<String, Value> = st
        .repos
        .iter()
        .map(|(name, r)| {
            let issues: Vec<Value> = r.issues.values().map(|i| json!({ "number": i.number, "title": i.title })).collect();
            (
                name.clone(),
                json!({
                "issues": issues, "comments": r.comments, "pulls": r.pulls, "check_runs": r.check_runs,
                "reactions": r.reactions, "comment_reactions": r.comment_reactions, "labels": r.labels,
                "reviews": r.reviews, "review_comments": r.review_comments, "statuses": r.statuses,
                "permissions": r.permissions, "protections": r.protections,
            }),
            )
        })
        .collect();
    Value::Object(repos)
}

/// `POST /_fake/label/{owner}/{repo}/{issue}/{label}`: deliver `issues.labeled` to the bot.
pub(super) async fn control_label(s: &Shared, rest: &str) -> Response<Body> {
    let parts: Vec<&str> = rest.split('/').collect();
    let [owner, name, number, label] = parts.as_slice() else {
        return respond(
            err(
                StatusCode::NOT_FOUND,
                "use /_fake/label/{owner}/{repo}/{issue}/{label}",
            ),
            None,
        );
    };
    let repo = format!("{owner}/{name}");
    let found = {
        let mut st = s.state.lock().unwrap();
        let has_webhook = st.webhook.is_some();
        let issue = number.parse::<u64>().ok().and_then(|n| {
            let r = st.repos.get_mut(&repo)?;
            let issue = r.issues.get(&n)?.clone();
            // Stored like a label put on through the web page: GitHub lists it on the issue.
            let labels = r.labels.entry(n).or_default();
            if !labels.iter().any(|l| l == label) {
                labels.push((*label).to_owned());
            }
            Some((r.installation, issue))
        });
        issue.filter(|_| has_webhook)
    };
    let Some((installation, issue)) = found else {
        return respond(
            err(StatusCode::NOT_FOUND, "unknown issue, or no --webhook-url"),
            None,
        );
    };
    let body = crate::support::payloads::issues_labeled(
        &repo,
        Some(installation),
        issue.number,
        &issue.title,
        &issue.body,
        label,
    );
    let sent = crate::support::fake_github::hooks::deliver(&s.state, "issues", &body, None).await;
    respond(
        (
            StatusCode::OK,
            json!({ "delivery": sent.delivery, "status": sent.status, "answer": sent.text }),
        ),
        None,
    )
}

/// Git smart HTTP: basic auth with an installation token that covers the repository.
pub(super) async fn git(
    s: &Shared,
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let Some((repo_path, _)) = path.split_once(".git/") else {
        return git_http::plain(StatusCode::NOT_FOUND, "Not Found");
    };
    let repo = repo_path.trim_start_matches('/').to_owned();
    let password = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|up| up.split_once(':').map(|(_, p)| p.to_owned()));
    let allowed = {
        let st = s.state.lock().unwrap();
        check_token(&st, password.as_deref(), &repo).is_ok()
    };
    let status_for_log;
    let response = if !allowed {
        status_for_log = 401;
        git_http::unauthorized()
    } else {
        let r = git_http::serve(
            &s.root,
            method.as_str(),
            path,
            query,
            headers,
            body,
            "x-access-token",
        )
        .await;
        status_for_log = r.status().as_u16();
        r
    };
    s.state.lock().unwrap().requests.push(Recorded {
        method: method.to_string(),
        path: path.to_owned(),
        query: query.to_owned(),
        body: None,
        status: status_for_log,
    });
    response
}

/// `POST /app/hook/deliveries/{id}/attempts`: GitHub accepts (202) and sends the delivery again.
pub(super) async fn redeliver(s: &Shared, id: &str, headers: &HeaderMap) -> Response<Body> {
    let known = {
        let mut st = s.state.lock().unwrap();
        if let Err(e) = check_jwt(&mut st, headers) {
            return respond(e, None);
        }
        let id = id.parse::<u64>().ok();
        st.requests.push(Recorded {
            method: "POST".into(),
            path: format!("/app/hook/deliveries/{}/attempts", id.unwrap_or(0)),
            query: String::new(),
            body: None,
            status: 202,
        });
        id.filter(|id| st.hook_deliveries.iter().any(|d| d.id == *id))
    };
    let Some(id) = known else {
        return respond(err(StatusCode::NOT_FOUND, "Not Found"), None);
    };
    let state = s.state.clone();
    tokio::spawn(async move {
        crate::support::fake_github::hooks::redeliver(&state, id).await;
    });
    respond((StatusCode::ACCEPTED, json!({})), None)
}
