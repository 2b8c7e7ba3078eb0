//! GitHub's OAuth web flow for signing people in (the dashboard's "Sign in with GitHub"):
//! `GET /login/oauth/authorize` (the person at the browser, set with
//! [`FakeGitHub::set_oauth_user`], approves at once and is sent back to the callback with a
//! code), `POST /login/oauth/access_token` (code → user token; GitHub answers 200 with an
//! `error` field for a bad code) and `GET /user` with that token.

use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode};
use serde_json::json;

use super::FakeGitHub;

/// The App's OAuth client, where GitHub sends people back, and who is signing in.
#[derive(Debug, Clone, Default)]
pub struct OAuthApp {
    pub client_id: String,
    pub client_secret: String,
    pub callback: String,
    /// The login of the person who approves at the authorisation page.
    pub user: Option<String>,
    /// Codes handed out, not yet exchanged → login.
    codes: Vec<(String, String)>,
    /// User tokens → login.
    tokens: Vec<(String, String)>,
}

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap()
}

fn form(text: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Answers the OAuth routes; `None` for any other path.
pub(super) fn handle(
    app: &mut OAuthApp,
    id: u64,
    method: &str,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Option<Response<Body>> {
    if !matches!(
        path,
        "/login/oauth/authorize" | "/login/oauth/access_token" | "/user"
    ) {
        return None;
    }
    match (method, path) {
        ("GET", "/login/oauth/authorize") => {
            let q = form(query);
            if field(&q, "client_id") != Some(app.client_id.as_str()) || app.client_id.is_empty() {
                return Some(reply(
                    StatusCode::NOT_FOUND,
                    "text/plain",
                    "no such OAuth app\n".into(),
                ));
            }
            let Some(user) = app.user.clone() else {
                let mut to = url::Url::parse(&app.callback).unwrap();
                to.query_pairs_mut()
                    .append_pair("error", "access_denied")
                    .append_pair(
                        "error_description",
                        "The user has denied your application access.",
                    );
                return Some(redirect(to.as_str()));
            };
            let code = format!("code{id}");
            app.codes.push((code.clone(), user));
            let mut to = url::Url::parse(&app.callback).unwrap();
            to.query_pairs_mut().append_pair("code", &code);
            if let Some(state) = field(&q, "state") {
                to.query_pairs_mut().append_pair("state", state);
            }
            Some(redirect(to.as_str()))
        }
        ("POST", "/login/oauth/access_token") => {
            let f = form(std::str::from_utf8(body).unwrap_or(""));
            let client_ok = field(&f, "client_id") == Some(app.client_id.as_str())
                && field(&f, "client_secret") == Some(app.client_secret.as_str());
            let code = field(&f, "code").unwrap_or("");
            let found = app.codes.iter().position(|(c, _)| c == code);
            let answer = match (client_ok, found) {
                (false, _) => {
                    json!({ "error": "incorrect_client_credentials", "error_description": "The client_id and/or client_secret passed are incorrect." })
                }
                (true, None) => {
                    json!({ "error": "bad_verification_code", "error_description": "The code passed is incorrect or expired." })
                }
                (true, Some(i)) => {
                    let (_, login) = app.codes.remove(i);
                    let token = format!("gho_{id:020}");
                    app.tokens.push((token.clone(), login));
                    json!({ "access_token": token, "token_type": "bearer", "scope": "" })
                }
            };
            Some(reply(
                StatusCode::OK,
                "application/json",
                answer.to_string(),
            ))
        }
        ("GET", "/user") => {
            let token = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("token "))
                })
                .unwrap_or("");
            match app.tokens.iter().find(|(t, _)| t == token) {
                Some((_, login)) => Some(reply(
                    StatusCode::OK,
                    "application/json",
                    super::user_json(login).to_string(),
                )),
                None => Some(reply(
                    StatusCode::UNAUTHORIZED,
                    "application/json",
                    json!({ "message": "Requires authentication" }).to_string(),
                )),
            }
        }
        _ => None,
    }
}

fn redirect(to: &str) -> Response<Body> {
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", to)
        .body(Body::empty())
        .unwrap()
}

impl FakeGitHub {
    /// Registers the App's OAuth client and its callback URL.
    pub fn set_oauth_app(&self, client_id: &str, client_secret: &str, callback: &str) {
        let mut x = self.extras();
        x.oauth.client_id = client_id.into();
        x.oauth.client_secret = client_secret.into();
        x.oauth.callback = callback.into();
    }

    /// Who approves at GitHub's authorisation page (`None`: they deny access).
    pub fn set_oauth_user(&self, login: Option<&str>) {
        self.extras().oauth.user = login.map(str::to_owned);
    }
}
