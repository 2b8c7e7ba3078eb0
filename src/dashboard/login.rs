//! Signing in and out: the sign-in page (the dashboard token, and a "Sign in with GitHub"
//! button when the App's OAuth client is configured), GitHub's OAuth web flow (authorize →
//! callback → code exchanged for a user token → `GET /user` → the login checked against the
//! allowed list; the user token is then dropped), and signing out. Wrong dashboard tokens are
//! throttled ([`Throttle`]): past [`MAX_FAILURES`] in a minute, `POST /login` answers 429.

use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::ExposeSecret as _;
use serde::Deserialize;

use super::auth::{self, safe_next};
use super::html::{bare_layout, esc, page as html_page};
use super::{Dashboard, now};
use crate::hive::intervene::Person;

/// Wrong dashboard tokens allowed in [`WINDOW`], from anyone, before `POST /login` refuses.
pub const MAX_FAILURES: usize = 10;
const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

/// The wrong tokens of the last minute: guessing the token is slowed to
/// [`MAX_FAILURES`] a minute (the bearer token and GitHub sign-in still work meanwhile).
#[derive(Debug, Default)]
pub struct Throttle {
    failures: std::sync::Mutex<std::collections::VecDeque<std::time::Instant>>,
}

impl Throttle {
    /// How long until a try is allowed; `None`: now.
    fn wait(&self) -> Option<std::time::Duration> {
        let mut f = self.failures.lock().expect("lock");
        while f.front().is_some_and(|t| t.elapsed() >= WINDOW) {
            f.pop_front();
        }
        (f.len() >= MAX_FAILURES).then(|| WINDOW.saturating_sub(f[0].elapsed()))
    }

    fn failed(&self) {
        self.failures
            .lock()
            .expect("lock")
            .push_back(std::time::Instant::now());
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct Next {
    #[serde(default)]
    next: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// `GET /login`.
pub async fn page(State(d): State<Dashboard>, Query(q): Query<Next>) -> Response {
    let next = safe_next(q.next.as_deref().unwrap_or("/"));
    html_page(StatusCode::OK, sign_in_page(&d, next, q.error.as_deref()))
}

fn sign_in_page(d: &Dashboard, next: &str, error: Option<&str>) -> String {
    let mut body = String::from("<h1>Sign in</h1>");
    if let Some(e) = error {
        body.push_str(&format!("<p class=\"error\" id=\"error\">{}</p>", esc(e)));
    }
    if d.access.closed() {
        body.push_str(
            "<p>Nobody can sign in yet: set <code>VIBELOOP_DASHBOARD_TOKEN</code> (or GitHub sign-in \
             with <code>VIBELOOP_GITHUB_CLIENT_ID</code>, <code>VIBELOOP_GITHUB_CLIENT_SECRET</code> and \
             <code>VIBELOOP_DASHBOARD_USERS</code>) and restart <code>vibeloop serve</code>.</p>",
        );
    }
    if d.access.token.is_some() {
        body.push_str(&format!(
            "<form method=\"post\" action=\"/login\"><input type=\"hidden\" name=\"next\" value=\"{}\">\
             <label>Dashboard token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"current-password\"></label> \
             <button type=\"submit\" id=\"sign-in\">Sign in</button></form>",
            esc(next)
        ));
    }
    if d.access.oauth.is_some() {
        let next = url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>();
        body.push_str(&format!(
            "<p><a class=\"button\" id=\"github\" href=\"/login/github?next={next}\">Sign in with GitHub</a></p>"
        ));
    }
    bare_layout("Sign in", &body)
}

#[derive(Debug, Deserialize)]
pub struct TokenForm {
    token: String,
    #[serde(default)]
    next: Option<String>,
}

/// `POST /login`: the dashboard token from the form.
pub async fn with_token(State(d): State<Dashboard>, Form(f): Form<TokenForm>) -> Response {
    let next = safe_next(f.next.as_deref().unwrap_or("/")).to_owned();
    if let Some(wait) = d.login_throttle.wait() {
        let secs = wait.as_secs().max(1);
        let why = format!("Too many wrong tokens: try again in {secs} s.");
        let mut r = html_page(
            StatusCode::TOO_MANY_REQUESTS,
            sign_in_page(&d, &next, Some(&why)),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
        return r;
    }
    if !auth::token_matches(&d.access, &f.token) {
        d.login_throttle.failed();
        tracing::warn!("dashboard sign-in with a wrong token");
        let page = sign_in_page(&d, &next, Some("That is not the dashboard token."));
        return html_page(StatusCode::UNAUTHORIZED, page);
    }
    signed_in(&d, &Person::Operator, &next)
}

fn signed_in(d: &Dashboard, who: &Person, next: &str) -> Response {
    let cookie = d.keys.session(who, now());
    (
        [(
            header::SET_COOKIE,
            auth::set_cookie(Some(&cookie), d.access.secure_cookies),
        )],
        Redirect::to(safe_next(next)),
    )
        .into_response()
}

/// `GET /login/github`: off to GitHub's authorisation page.
pub async fn github(State(d): State<Dashboard>, Query(q): Query<Next>) -> Response {
    let Some(oauth) = &d.access.oauth else {
        return (StatusCode::NOT_FOUND, "GitHub sign-in is not configured\n").into_response();
    };
    // This browser's nonce: only it can finish the sign-in the state is made for.
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    let state = d
        .keys
        .oauth_state(q.next.as_deref().unwrap_or("/"), &nonce, now());
    let mut url = d.github_url.clone();
    url.set_path("/login/oauth/authorize");
    url.query_pairs_mut()
        .append_pair("client_id", &oauth.client_id)
        .append_pair("state", &state)
        .append_pair("allow_signup", "false");
    (
        [(
            header::SET_COOKIE,
            auth::set_oauth_cookie(&nonce, d.access.secure_cookies),
        )],
        Redirect::to(url.as_str()),
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
pub struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// `GET /login/github/callback`: GitHub sends the person back with a code.
pub async fn github_callback(
    State(d): State<Dashboard>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    let refuse =
        |status: StatusCode, why: &str| html_page(status, sign_in_page(&d, "/", Some(why)));
    if let Some(why) = &q.error_description {
        return refuse(StatusCode::UNAUTHORIZED, &format!("GitHub said: {why}"));
    }
    let browser = auth::cookie(&headers, auth::OAUTH_COOKIE);
    let Some(next) = q
        .state
        .as_deref()
        .and_then(|s| d.keys.check_state(s, browser.as_deref(), now()))
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "That sign-in link is not ours, was started in another browser, or has expired; start again.",
        );
    };
    let Some(code) = q.code.as_deref().filter(|c| !c.is_empty()) else {
        return refuse(StatusCode::BAD_REQUEST, "GitHub sent no code; start again.");
    };
    let login = match github_login(&d, code).await {
        Ok(login) => login,
        Err(why) => {
            tracing::warn!(error = %why, "GitHub sign-in failed");
            return refuse(
                StatusCode::BAD_GATEWAY,
                &format!("GitHub sign-in failed: {why}"),
            );
        }
    };
    if !auth::allowed(&d.access, &login) {
        tracing::warn!(
            login,
            "GitHub sign-in refused: not in VIBELOOP_DASHBOARD_USERS"
        );
        return refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "@{login} may not open this dashboard. Ask its operator to add you to VIBELOOP_DASHBOARD_USERS."
            ),
        );
    }
    signed_in(&d, &Person::GitHub(login), &next)
}

/// The login of the person who authorised `code`.
async fn github_login(d: &Dashboard, code: &str) -> Result<String, String> {
    #[derive(Deserialize)]
    struct Token {
        access_token: Option<String>,
        error_description: Option<String>,
    }
    #[derive(Deserialize)]
    struct User {
        login: String,
    }
    let oauth = d.access.oauth.as_ref().ok_or("GitHub sign-in is off")?;
    let mut url = d.github_url.clone();
    url.set_path("/login/oauth/access_token");
    let token: Token = d
        .http
        .post(url)
        .header(header::ACCEPT, "application/json")
        .form(&[
            ("client_id", oauth.client_id.as_str()),
            ("client_secret", oauth.client_secret.expose_secret()),
            ("code", code),
        ])
        .send()
        .await
        .map_err(|e| format!("cannot reach GitHub ({})", e.without_url()))?
        .json()
        .await
        .map_err(|_| "GitHub's answer was not readable".to_owned())?;
    let Some(access) = token.access_token else {
        return Err(token
            .error_description
            .unwrap_or_else(|| "GitHub refused the code".into()));
    };
    let mut user_url = d.github_api_url.clone();
    user_url.set_path(&format!("{}/user", user_url.path().trim_end_matches('/')));
    let user: User = d
        .http
        .get(user_url)
        .bearer_auth(access)
        .header(header::ACCEPT, "application/vnd.github+json")
        .header(header::USER_AGENT, "vibeloop")
        .send()
        .await
        .map_err(|e| format!("cannot reach GitHub ({})", e.without_url()))?
        .error_for_status()
        .map_err(|e| {
            format!(
                "GitHub answered {}",
                e.status().map(|s| s.as_u16()).unwrap_or(0)
            )
        })?
        .json()
        .await
        .map_err(|_| "GitHub's user was not readable".to_owned())?;
    if !auth::is_login(&user.login) {
        return Err("GitHub named an odd login".into());
    }
    Ok(user.login)
}

/// `POST /logout`.
pub async fn logout(State(d): State<Dashboard>) -> Response {
    (
        [(
            header::SET_COOKIE,
            auth::set_cookie(None, d.access.secure_cookies),
        )],
        Redirect::to("/login"),
    )
        .into_response()
}
