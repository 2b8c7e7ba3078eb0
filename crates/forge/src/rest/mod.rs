//! The forge's HTTP side: one handler routes by path segments, checks auth as GitHub does and
//! answers with GitHub's JSON. Repository routes live in the submodules: [`issues`] (issues,
//! comments, labels, reactions, collaborators), [`checks`] (check runs, statuses), [`pulls`]
//! (pull requests, files, reviews), [`merge`] (landing one) and [`git`] (refs, tags, protection, commits, compare); the
//! App's own routes (installations, tokens) are in [`app`].

/// Unwraps `Result<T, Answer>` inside a route returning `Option<Answer>`.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(a) => return Some(a),
        }
    };
}

mod app;
mod checks;
pub mod git;
mod gitdb;
mod issues;
pub mod json;
mod merge;
mod pulls;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as AxState;
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};
use base64::Engine as _;
use serde_json::{Value, json};

use super::{Repo, State, gitops};

pub use pulls::refresh_heads;

#[derive(Clone)]
struct Shared {
    state: Arc<Mutex<State>>,
    root: PathBuf,
}

pub(super) fn router(state: Arc<Mutex<State>>, root: PathBuf) -> Router {
    Router::new()
        .fallback(handle)
        .with_state(Shared { state, root })
}

/// A status and a JSON body.
pub type Answer = (StatusCode, Value);

/// GitHub's `basic-error`.
pub fn err(status: StatusCode, message: &str) -> Answer {
    (
        status,
        json!({ "message": message, "documentation_url": "https://docs.github.com/rest" }),
    )
}

pub fn not_found() -> Answer {
    err(StatusCode::NOT_FOUND, "Not Found")
}

/// A 422 with only a message (what GitHub answers for most semantic refusals).
pub fn unprocessable(message: &str) -> Answer {
    err(StatusCode::UNPROCESSABLE_ENTITY, message)
}

/// A 422 `validation-error-simple`: `{"message": "Unprocessable Entity", "errors": [..]}`.
pub fn unprocessable_simple(errors: &[&str]) -> Answer {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({ "message": "Unprocessable Entity", "errors": errors, "documentation_url": "https://docs.github.com/rest" }),
    )
}

/// A 422 `validation-error`: `{"message": "Validation Failed", "errors": [{resource, field, code}]}`.
pub fn validation_failed(resource: &str, field: &str, code: &str, message: Option<&str>) -> Answer {
    let mut e = json!({ "resource": resource, "field": field, "code": code });
    if let Some(m) = message {
        e["message"] = json!(m);
    }
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({ "message": "Validation Failed", "errors": [e], "documentation_url": "https://docs.github.com/rest" }),
    )
}

/// Now, as GitHub writes times.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Locks the state; a panic while holding the lock leaves plain data behind, still usable.
fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

async fn handle(
    AxState(s): AxState<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let json_body: Option<Value> = if body.is_empty() {
        None
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => Some(v),
            Err(_) => return respond(err(StatusCode::BAD_REQUEST, "Problems parsing JSON")),
        }
    };
    let query = uri.query().unwrap_or("");
    respond(api(
        &s,
        &method,
        uri.path(),
        query,
        &headers,
        json_body.as_ref(),
    ))
}

/// The HTTP response for an answer (no body for 204).
pub fn respond((status, body): Answer) -> Response<Body> {
    let b = Response::builder().status(status);
    let response = if status == StatusCode::NO_CONTENT {
        b.body(Body::empty())
    } else {
        b.header("content-type", "application/json")
            .body(Body::from(body.to_string()))
    };
    response.unwrap_or_else(|_| Response::new(Body::empty()))
}

/// The bearer token (or `token …`) of a request.
pub fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get("authorization")?.to_str().ok()?;
    v.strip_prefix("Bearer ")
        .or_else(|| v.strip_prefix("token "))
        .map(str::to_owned)
}

/// Checks the App's JWT; returns its claims.
pub fn check_jwt(st: &State, headers: &HeaderMap) -> Result<Value, Answer> {
    let unauthorized = |m: &str| err(StatusCode::UNAUTHORIZED, m);
    let jwt =
        bearer(headers).ok_or_else(|| unauthorized("A JSON web token could not be decoded"))?;
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    // `iss` is the app id as a number, which the crate's own check reads as absent: checked below.
    validation.set_required_spec_claims(&["exp", "iat"]);
    validation.leeway = 0;
    let data = jsonwebtoken::decode::<Value>(&jwt, &st.public_key, &validation)
        .map_err(|e| unauthorized(&format!("'Issuer' claim or signature invalid: {e}")))?;
    let claims = data.claims;
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap_or(0),
        claims["exp"].as_i64().unwrap_or(0),
    );
    let now = chrono::Utc::now().timestamp();
    if claims["iss"].as_u64() != Some(st.app_id)
        && claims["iss"].as_str() != Some(&st.app_id.to_string())
    {
        return Err(unauthorized("'Issuer' claim ('iss') must be the app id"));
    }
    if iat > now + 60 || exp - iat > 600 {
        return Err(unauthorized(
            "'Expiration time' claim ('exp') is too far in the future",
        ));
    }
    Ok(claims)
}

/// Checks that `token` is an unexpired installation token covering `repo`.
pub fn check_token(st: &State, token: Option<&str>, repo: &str) -> Result<(), Answer> {
    let bad = || err(StatusCode::UNAUTHORIZED, "Bad credentials");
    let t = st.tokens.get(token.ok_or_else(bad)?).ok_or_else(bad)?;
    if t.expires_at <= chrono::Utc::now() {
        return Err(bad());
    }
    let r = st.repos.get(repo).ok_or_else(not_found)?;
    let name = repo.split('/').nth(1).unwrap_or("");
    if r.installation != t.installation
        || t.repos
            .as_ref()
            .is_some_and(|rs| !rs.iter().any(|n| n == name))
    {
        return Err(not_found());
    }
    Ok(())
}

fn api(
    s: &Shared,
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    body: Option<&Value>,
) -> Answer {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut st = lock(&s.state);
    let st = &mut *st;
    match (method.as_str(), segs.as_slice()) {
        (_, ["app", ..]) => app::route(st, method.as_str(), &segs[1..], headers, body),
        ("POST", ["graphql"]) => graphql(st, bearer(headers).as_deref(), body),
        ("GET", ["installation", "repositories"]) => {
            installation_repositories(st, bearer(headers).as_deref())
        }
        (_, ["repos", owner, name, rest @ ..]) => {
            let repo = format!("{owner}/{name}");
            if let Err(e) = check_token(st, bearer(headers).as_deref(), &repo) {
                return e;
            }
            let bare = super::repo_dir(&s.root, &repo);
            let mut cx = Cx {
                st,
                repo: &repo,
                bare: &bare,
                method: method.as_str(),
                query,
                body,
            };
            repo_api(&mut cx, rest)
        }
        _ => not_found(),
    }
}

/// `GET /installation/repositories`: the repositories an installation token covers (one page).
fn installation_repositories(st: &State, token: Option<&str>) -> Answer {
    let Some(t) = token.and_then(|t| st.tokens.get(t)) else {
        return err(StatusCode::UNAUTHORIZED, "Bad credentials");
    };
    let list: Vec<Value> = st
        .repos
        .iter()
        .filter(|(full, r)| {
            let name = full.split('/').nth(1).unwrap_or("");
            r.installation == t.installation
                && t.repos
                    .as_ref()
                    .is_none_or(|rs| rs.iter().any(|n| n == name))
        })
        .map(|(full, r)| {
            let (owner, name) = full.split_once('/').unwrap_or(("", full));
            json!({
                "id": r.id, "name": name, "full_name": full, "private": false,
                "owner": { "login": owner }, "default_branch": r.default_branch,
            })
        })
        .collect();
    (
        StatusCode::OK,
        json!({ "total_count": list.len(), "repositories": list }),
    )
}

fn query_map(query: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

/// One repository request, after auth.
pub struct Cx<'a> {
    pub st: &'a mut State,
    pub repo: &'a str,
    pub bare: &'a Path,
    pub method: &'a str,
    pub query: &'a str,
    pub body: Option<&'a Value>,
}

impl Cx<'_> {
    /// A string field of the JSON body.
    pub fn field(&self, k: &str) -> Option<String> {
        self.body
            .and_then(|b| b.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    pub fn r(&mut self) -> &mut Repo {
        self.st
            .repos
            .get_mut(self.repo)
            .expect("checked by check_token")
    }

    pub fn id(&mut self) -> u64 {
        self.st.next_id()
    }

    pub fn owner(&self) -> &str {
        self.repo.split('/').next().unwrap_or("")
    }

    pub fn query(&self) -> HashMap<String, String> {
        query_map(self.query)
    }

    /// The bare repository, through git2.
    pub fn git(&self) -> Result<git2::Repository, Answer> {
        gitops::open(self.bare).ok_or_else(|| err(StatusCode::CONFLICT, "Git Repository is empty."))
    }
}

/// A number in the path; anything else is GitHub's 404.
pub fn num(s: &str) -> Result<u64, Answer> {
    s.parse().map_err(|_| not_found())
}

fn repo_api(cx: &mut Cx<'_>, rest: &[&str]) -> Answer {
    match (cx.method, rest) {
        ("GET", []) => {
            let default_branch = cx.r().default_branch.clone();
            return (
                StatusCode::OK,
                json!({ "full_name": cx.repo, "default_branch": default_branch }),
            );
        }
        ("GET", ["contents", path @ ..]) => {
            let q = cx.query();
            let reference = match q.get("ref") {
                Some(r) => r.clone(),
                None => cx.r().default_branch.clone(),
            };
            if let Some(entries) = gitops::list_dir(cx.bare, &reference, &path.join("/")) {
                let listed: Vec<Value> = entries
                    .into_iter()
                    .map(|(name, dir)| {
                        let full = format!("{}/{name}", path.join("/"));
                        json!({ "type": if dir { "dir" } else { "file" }, "name": name, "path": full })
                    })
                    .collect();
                return (StatusCode::OK, Value::Array(listed));
            }
            return match gitops::read_file(cx.bare, &reference, &path.join("/")) {
                Some(text) => (
                    StatusCode::OK,
                    json!({
                        "type": "file", "encoding": "base64", "path": path.join("/"), "name": path.last(),
                        "size": text.len(), "content": base64::engine::general_purpose::STANDARD.encode(&text),
                    }),
                ),
                None => not_found(),
            };
        }
        _ => {}
    }
    issues::route(cx, rest)
        .or_else(|| checks::route(cx, rest))
        .or_else(|| pulls::route(cx, rest))
        .or_else(|| git::route(cx, rest))
        .or_else(|| gitdb::route(cx, rest))
        .unwrap_or_else(not_found)
}

/// `POST /graphql`: only the mutation the bot uses, `markPullRequestReadyForReview`, for pull
/// requests of repositories the token covers (`PR_<number>` node ids).
fn graphql(st: &mut State, token: Option<&str>, body: Option<&Value>) -> Answer {
    let query = body.and_then(|b| b["query"].as_str()).unwrap_or_default();
    let Some(node) = body.and_then(|b| b["variables"]["id"].as_str()) else {
        return (
            StatusCode::OK,
            json!({ "errors": [{ "message": "Variable $id of type ID! was not provided." }] }),
        );
    };
    if !query.contains("markPullRequestReadyForReview") {
        return (
            StatusCode::OK,
            json!({ "errors": [{ "message": "this forge answers markPullRequestReadyForReview only" }] }),
        );
    }
    let number: Option<u64> = node.strip_prefix("PR_").and_then(|n| n.parse().ok());
    let names: Vec<String> = st.repos.keys().cloned().collect();
    for repo in names {
        if check_token(st, token, &repo).is_err() {
            continue;
        }
        if let Some(p) = st
            .repos
            .get_mut(&repo)
            .and_then(|r| r.pulls.iter_mut().find(|p| Some(p.number) == number))
        {
            p.draft = false;
            return (
                StatusCode::OK,
                json!({ "data": { "markPullRequestReadyForReview": { "pullRequest": { "isDraft": false } } } }),
            );
        }
    }
    (
        StatusCode::OK,
        json!({ "errors": [{ "type": "NOT_FOUND", "message": format!("Could not resolve to a node with the global id of '{node}'") }] }),
    )
}

/// Decodes `%XX` escapes of a path segment (label names, logins).
pub fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%' && i + 2 < b.len())
            .then(|| std::str::from_utf8(&b[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
