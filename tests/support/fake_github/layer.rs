//! The fake's HTTP side around the forge: one middleware that answers what only tests need —
//! git smart HTTP, webhook redelivery and the delivery log, the App-manifest exchange, OAuth,
//! the `/_fake` controls — and wraps every REST request to the forge with latency, injected
//! faults and a record of the request.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State as AxState};
use axum::http::{HeaderMap, Method, Response, StatusCode};
use axum::middleware::Next;
use base64::Engine as _;
use serde_json::{Value, json};
use vibeloop::forge::Forge;
use vibeloop::forge::rest::{Answer, check_jwt, check_token, err};

use super::{Extras, Fault, Recorded, State};
use crate::support::git_http;

#[derive(Clone)]
pub(super) struct Shared {
    pub state: Arc<Mutex<State>>,
    pub extras: Arc<Mutex<Extras>>,
    root: PathBuf,
}

impl Shared {
    pub fn new(forge: &Forge, extras: Arc<Mutex<Extras>>) -> Self {
        Self {
            state: forge.shared(),
            extras,
            root: forge.git_root().to_owned(),
        }
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    pub fn extras(&self) -> std::sync::MutexGuard<'_, Extras> {
        self.extras.lock().unwrap()
    }

    pub fn root(&self) -> &std::path::Path {
        &self.root
    }
}

/// The forge's router inside the fake's middleware.
pub(super) fn router(forge: &Forge, extras: Arc<Mutex<Extras>>) -> Router {
    let shared = Shared::new(forge, extras);
    forge
        .router()
        .layer(axum::middleware::from_fn_with_state(shared, intercept))
}

/// An answer with an optional `Retry-After`.
pub(super) fn respond(answer: Answer, retry_after: Option<u64>) -> Response<Body> {
    let mut r = vibeloop::forge::rest::respond(answer);
    if let Some(secs) = retry_after {
        r.headers_mut()
            .insert("retry-after", secs.to_string().parse().unwrap());
    }
    r
}

async fn intercept(AxState(s): AxState<Shared>, req: Request, next: Next) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20)
        .await
        .unwrap_or_default();
    let (method, headers) = (parts.method.clone(), parts.headers.clone());
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or("").to_owned();
    if path.contains(".git/") {
        return git(&s, &method, &path, &query, &headers, body).await;
    }
    if let Some(rest) = path.strip_prefix("/_fake/label/") {
        return control_label(&s, rest).await;
    }
    if let Some(id) = path.strip_prefix("/_fake/logs/") {
        return super::ci::log_download(&s, &method, id, &headers);
    }
    if path == "/_fake/state" {
        return respond((StatusCode::OK, snapshot(&s.state())), None);
    }
    if let Some(id) = path
        .strip_prefix("/app/hook/deliveries/")
        .and_then(|rest| rest.strip_suffix("/attempts"))
        .filter(|_| method == Method::POST)
    {
        return redeliver(&s, id, &headers).await;
    }
    let id = s.state().next_id();
    if let Some(r) = super::oauth::handle(
        &mut s.extras().oauth,
        id,
        method.as_str(),
        &path,
        &query,
        &headers,
        &body,
    ) {
        return r;
    }
    let latency = s.extras().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let json_body: Option<Value> = serde_json::from_slice(&body).ok();
    let fault = take_fault(&mut s.extras(), method.as_str(), &path);
    let mut response = match &fault {
        Some(f) if !f.after_effect => respond(
            err(StatusCode::from_u16(f.status).unwrap(), "injected fault"),
            None,
        ),
        _ => {
            let guarded = {
                let (st, x) = (s.state(), s.extras());
                super::protection::guard(
                    &x.rules,
                    &st,
                    &s.root,
                    method.as_str(),
                    &path,
                    json_body.as_ref(),
                )
            };
            let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
            match (method.as_str(), segs.as_slice()) {
                ("GET", ["repos", o, r, "actions", "jobs", id, "logs"]) => {
                    super::ci::logs_redirect(&s, &format!("{o}/{r}"), id, &headers)
                }
                _ => match test_route(&s, &method, &path, &headers)
                    .or_else(|| super::queue::graphql(&s, &path, &headers, json_body.as_ref()))
                    .or(guarded)
                {
                    Some(answer) => respond(answer, None),
                    None => next.run(Request::from_parts(parts, Body::from(body))).await,
                },
            }
        }
    };
    if let Some(delay) = fault.as_ref().and_then(|f| f.late) {
        tokio::time::sleep(delay).await;
    } else if let Some(f) = fault.as_ref().filter(|f| f.after_effect) {
        response = respond(
            err(
                StatusCode::from_u16(f.status).unwrap(),
                "injected fault after the effect",
            ),
            None,
        );
    }
    let status = response.status();
    if status.is_success() && path.starts_with("/app") {
        let claims = check_jwt(&s.state(), &headers);
        if let Ok(claims) = claims {
            s.extras().jwt_claims.push(claims);
        }
    }
    s.extras().requests.push(Recorded {
        method: method.to_string(),
        path: path.clone(),
        query,
        body: json_body,
        status: status.as_u16(),
    });
    if let Some(secs) = fault.and_then(|f| f.retry_after) {
        response
            .headers_mut()
            .insert("retry-after", secs.to_string().parse().unwrap());
    }
    if status == StatusCode::CREATED && method == Method::POST {
        response = announce_issue(&s, &path, response).await;
    }
    // A check or a status may be what a merge group waits for.
    if status.is_success() && (path.contains("/check-runs") || path.contains("/statuses/")) {
        let s = s.clone();
        tokio::spawn(async move { super::queue::advance(&s).await });
    }
    response
}

/// An issue the App opened with labels: GitHub sends `issues.labeled` for each, as it does for
/// any issue labelled at its creation (the bot's own label starts a ticket there too).
async fn announce_issue(s: &Shared, path: &str, response: Response<Body>) -> Response<Body> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["repos", owner, name, "issues"] = segs.as_slice() else {
        return response;
    };
    let repo = format!("{owner}/{name}");
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 64 << 20)
        .await
        .unwrap_or_default();
    let issue: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let installation = s.state().repos.get(&repo).map(|r| r.installation);
    let (number, title, text) = (
        issue["number"].as_u64().unwrap_or_default(),
        issue["title"].as_str().unwrap_or_default().to_owned(),
        issue["body"].as_str().unwrap_or_default().to_owned(),
    );
    let labels: Vec<String> = issue["labels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["name"].as_str().map(str::to_owned))
        .collect();
    let s = s.clone();
    tokio::spawn(async move {
        for label in labels {
            let payload = crate::support::payloads::issues_labeled_by(
                &repo,
                installation,
                number,
                &title,
                &text,
                &label,
                vibeloop::forge::BOT_LOGIN,
            );
            super::hooks::deliver(&s, "issues", &payload, None).await;
        }
    });
    Response::from_parts(parts, Body::from(bytes))
}

/// The first fault matching the request, used up by one.
fn take_fault(x: &mut Extras, method: &str, path: &str) -> Option<Fault> {
    let i = x
        .faults
        .iter()
        .position(|f| f.method == method && path.ends_with(&f.path_suffix))?;
    let f = x.faults[i].clone();
    x.faults[i].times -= 1;
    if x.faults[i].times == 0 {
        x.faults.remove(i);
    }
    Some(f)
}

/// REST routes only the tests' GitHub has: the App's webhook delivery log and the manifest
/// exchange.
fn test_route(s: &Shared, method: &Method, path: &str, headers: &HeaderMap) -> Option<Answer> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method.as_str(), segs.as_slice()) {
        ("GET", ["app", "hook", "deliveries"]) => Some(match check_jwt(&s.state(), headers) {
            Ok(_) => {
                let list = s
                    .extras()
                    .hook_deliveries
                    .iter()
                    .rev()
                    .map(|d| d.json())
                    .collect();
                (StatusCode::OK, Value::Array(list))
            }
            Err(e) => e,
        }),
        ("POST", ["app-manifests", code, "conversions"]) => {
            Some(super::apps::conversion(&mut s.extras(), code))
        }
        ("POST", ["repos", o, r, "actions", "jobs", id, "rerun"]) => {
            Some(super::ci::rerun(s, &format!("{o}/{r}"), id, headers))
        }
        _ => None,
    }
}

/// `GET /_fake/state`: what the fake holds, for people trying it by hand.
fn snapshot(st: &State) -> Value {
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
                "permissions": r.permissions,
            }),
            )
        })
        .collect();
    Value::Object(repos)
}

/// `POST /_fake/label/{owner}/{repo}/{issue}/{label}`: deliver `issues.labeled` to the bot.
async fn control_label(s: &Shared, rest: &str) -> Response<Body> {
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
        let has_webhook = s.extras().webhook.is_some();
        let mut st = s.state();
        let issue = number.parse::<u64>().ok().and_then(|n| {
            let r = st.repos.get_mut(&repo)?;
            let issue = r.issues.get(&n)?.clone();
            // Stored like a label put on through the web page: GitHub lists it on the issue.
            r.add_label(n, label);
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
    super::ensure_role(&mut s.state(), &repo, super::LABELLER, "maintain");
    let body = crate::support::payloads::issues_labeled_by(
        &repo,
        Some(installation),
        issue.number,
        &issue.title,
        &issue.body,
        label,
        super::LABELLER,
    );
    let sent = super::hooks::deliver(s, "issues", &body, None).await;
    respond(
        (
            StatusCode::OK,
            json!({ "delivery": sent.delivery, "status": sent.status, "answer": sent.text }),
        ),
        None,
    )
}

/// Git smart HTTP: basic auth with an installation token that covers the repository.
async fn git(
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
    let (allowed, protected, pushes) = {
        let allowed = check_token(&s.state(), password.as_deref(), &repo).is_ok();
        let x = s.extras();
        let protected: Vec<(String, git_http::PushRule)> = Some(&x.rules)
            .map(|rules| {
                rules
                    .of_repo(&repo)
                    .filter_map(|(b, p)| {
                        let rule = if p.lock_branch {
                            git_http::PushRule::Locked
                        } else if p.require_pull_request {
                            git_http::PushRule::PullRequestsOnly
                        } else if !p.allow_force_pushes {
                            git_http::PushRule::NoForce
                        } else {
                            return None;
                        };
                        Some((b.to_owned(), rule))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let pushes = super::rulesets::pushes(&x.rules.rulesets, &repo);
        (allowed, protected, pushes)
    };
    let response = if !allowed {
        git_http::unauthorized()
    } else {
        git_http::serve(
            &s.root,
            method.as_str(),
            path,
            query,
            headers,
            body,
            "x-access-token",
            &protected,
            &pushes,
        )
        .await
    };
    s.extras().requests.push(Recorded {
        method: method.to_string(),
        path: path.to_owned(),
        query: query.to_owned(),
        body: None,
        status: response.status().as_u16(),
    });
    response
}

/// `POST /app/hook/deliveries/{id}/attempts`: GitHub accepts (202) and sends the delivery again.
async fn redeliver(s: &Shared, id: &str, headers: &HeaderMap) -> Response<Body> {
    if let Err(e) = check_jwt(&s.state(), headers) {
        return respond(e, None);
    }
    let known = {
        let mut x = s.extras();
        let id = id.parse::<u64>().ok();
        x.requests.push(Recorded {
            method: "POST".into(),
            path: format!("/app/hook/deliveries/{}/attempts", id.unwrap_or(0)),
            query: String::new(),
            body: None,
            status: 202,
        });
        id.filter(|id| x.hook_deliveries.iter().any(|d| d.id == *id))
    };
    let Some(id) = known else {
        return respond(err(StatusCode::NOT_FOUND, "Not Found"), None);
    };
    let s = s.clone();
    tokio::spawn(async move {
        super::hooks::redeliver(&s, id).await;
    });
    respond((StatusCode::ACCEPTED, json!({})), None)
}
