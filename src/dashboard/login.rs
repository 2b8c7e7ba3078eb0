//! Signing in and out: the sign-in page (the dashboard token, and a "Sign in with GitHub"
//! button when the App's OAuth client is configured), GitHub's OAuth web flow (authorize →
//! callback → code exchanged for a user token → `GET /user` → the login checked against the
//! allowed list; the user token is then dropped), and signing out. Wrong dashboard tokens are
//! throttled per client address ([`Throttle`], bearer tokens included): past [`MAX_FAILURES`]
//! in a minute, that address gets 429.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::Form;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::ExposeSecret as _;
use serde::Deserialize;

use super::auth::{self, safe_next};
use super::html::{bare_layout, esc, page as html_page};
use super::{Dashboard, now};
use crate::commands::Person;

/// Wrong dashboard tokens allowed in [`WINDOW`] from one client address before it is refused.
pub const MAX_FAILURES: usize = 10;
const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);
/// Addresses remembered at most: past this, the quietest are forgotten first.
const MAX_CLIENTS: usize = 10_000;

/// The wrong tokens of the last minute, per client address — typed on the sign-in page or sent
/// as a bearer token: guessing is slowed to [`MAX_FAILURES`] a minute for each address, and
/// nobody else's guesses lock the operator out.
#[derive(Debug, Default)]
pub struct Throttle {
    failures: std::sync::Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl Throttle {
    /// How long until `client` may try again; `None`: now.
    pub fn wait(&self, client: IpAddr) -> Option<std::time::Duration> {
        let mut all = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let f = all.get_mut(&client)?;
        while f.front().is_some_and(|t| t.elapsed() >= WINDOW) {
            f.pop_front();
        }
        if f.is_empty() {
            all.remove(&client);
            return None;
        }
        (f.len() >= MAX_FAILURES).then(|| WINDOW.saturating_sub(f[0].elapsed()))
    }

    /// `client` sent a wrong token.
    pub fn failed(&self, client: IpAddr) {
        let mut all = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() >= MAX_CLIENTS && !all.contains_key(&client) {
            all.retain(|_, f| f.back().is_some_and(|t| t.elapsed() < WINDOW));
            if all.len() >= MAX_CLIENTS {
                let quietest = all
                    .iter()
                    .min_by_key(|(_, f)| f.back().copied())
                    .map(|(ip, _)| *ip);
                all.remove(&quietest.expect("not empty"));
            }
        }
        all.entry(client).or_default().push_back(Instant::now());
    }
}

/// The address a request came from (the connection's peer; unspecified when the server was
/// not told, as in tests that call the router directly).
pub fn client_of<B>(req: &axum::http::Request<B>) -> IpAddr {
    address(req.extensions().get::<ConnectInfo<SocketAddr>>())
}

/// The peer's address, or unspecified when there is none.
fn address(peer: Option<&ConnectInfo<SocketAddr>>) -> IpAddr {
    peer.map(|c| c.0.ip())
        .unwrap_or(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED))
}

/// 429 with `Retry-After` and what to do.
pub fn too_many(wait: std::time::Duration, why: String) -> Response {
    let secs = wait.as_secs().max(1);
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        format!("{why}: try again in {secs} s.\n"),
    )
        .into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
    r
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
pub async fn with_token(
    State(d): State<Dashboard>,
    peer: Option<axum::Extension<ConnectInfo<SocketAddr>>>,
    Form(f): Form<TokenForm>,
) -> Response {
    let client = address(peer.as_ref().map(|p| &p.0));
    let next = safe_next(f.next.as_deref().unwrap_or("/")).to_owned();
    if let Some(wait) = d.login_throttle.wait(client) {
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
        d.login_throttle.failed(client);
        tracing::warn!(%client, "dashboard sign-in with a wrong token");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_addresss_guesses_lock_out_that_address_alone() {
        let t = Throttle::default();
        let (guesser, operator) = (IpAddr::from([203, 0, 113, 7]), IpAddr::from([192, 0, 2, 1]));
        for _ in 0..MAX_FAILURES - 1 {
            t.failed(guesser);
        }
        assert_eq!(t.wait(guesser), None, "under the limit");
        t.failed(guesser);
        let wait = t.wait(guesser).expect("at the limit");
        assert!(wait <= WINDOW && !wait.is_zero(), "{wait:?}");
        assert_eq!(t.wait(operator), None);
    }

    #[test]
    fn the_addresses_remembered_are_bounded() {
        let t = Throttle::default();
        for i in 0..(MAX_CLIENTS as u32 + 50) {
            t.failed(IpAddr::from(i.to_be_bytes()));
        }
        assert!(t.failures.lock().unwrap().len() <= MAX_CLIENTS);
    }
}
