//! The dashboard's sessions, played as attacks against the real binary: a cookie minted with
//! the webhook secret opens nothing, changing the dashboard token signs operators out, cookies
//! are `Secure` unless plain HTTP is chosen, a GitHub sign-in link cannot be finished in another
//! browser (login CSRF), and guessing the token is throttled.

use crate::support;

use hmac::{Hmac, Mac as _};
use reqwest::StatusCode;
use sha2::{Digest as _, Sha256};
use support::hive::*;

const TOKEN: &str = "dashboard-token-for-the-session-tests";

pub(crate) fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn world(extra: Vec<(&str, &str)>) -> World {
    let mut env = vec![("VIBELOOP_DASHBOARD_TOKEN".to_owned(), TOKEN.to_owned())];
    env.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())));
    World::start_with(happy_script(), &calc(HIVE_YML), env).await
}

/// Signs in with `token` on the sign-in form: the answer.
async fn sign_in(w: &World, token: &str) -> reqwest::Response {
    no_redirects()
        .post(format!("{}/login", w.bot.url))
        .form(&[("token", token), ("next", "/")])
        .send()
        .await
        .unwrap()
}

/// The session cookie a sign-in set, as `name=value`.
pub(crate) fn session_of(r: &reqwest::Response) -> String {
    let set = r.headers()["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

async fn api_with(w: &World, cookie: &str) -> StatusCode {
    no_redirects()
        .get(format!("{}/api/tickets", w.bot.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .status()
}

/// A GitHub sign-in started in a browser: its nonce cookie (`name=value`) and the link GitHub
/// sends back to the callback, with the code and state.
pub(crate) async fn github_sign_in_link(w: &World, http: &reqwest::Client) -> (String, String) {
    let start = http
        .get(format!("{}/login/github?next=/", w.bot.url))
        .send()
        .await
        .unwrap();
    let nonce = session_of(&start);
    let authorize = start.headers()["location"].to_str().unwrap().to_owned();
    let back = http.get(&authorize).send().await.unwrap();
    let link = back.headers()["location"].to_str().unwrap().to_owned();
    (nonce, link)
}

/// An operator's cookie as anyone who knows the webhook secret could sign one until now: the
/// key derived from the secret, `op` until some day, HMAC-SHA256.
fn minted_with_the_webhook_secret() -> String {
    let mut h = Sha256::new();
    h.update(b"vibeloop dashboard sessions v1\0");
    h.update(SECRET.as_bytes());
    let key: [u8; 32] = h.finalize().into();
    let text = format!("op.{}", 4_000_000_000u64);
    let mut m = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    m.update(format!("session:{text}").as_bytes());
    format!(
        "vibeloop_session={text}.{}",
        hex::encode(m.finalize().into_bytes())
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_secret_mints_no_session_and_a_new_token_signs_operators_out() {
    let mut w = world(vec![]).await;
    assert_eq!(
        api_with(&w, &minted_with_the_webhook_secret()).await,
        StatusCode::UNAUTHORIZED,
        "a cookie signed with the webhook secret opened the API"
    );
    let r = sign_in(&w, TOKEN).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = session_of(&r);
    assert_eq!(api_with(&w, &cookie).await, StatusCode::OK);
    // The session key lives in the data directory, the owner's alone: a restart keeps sessions.
    let key = w.env.data_dir.join("session.key");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", key.display());
    w.bot.restart(&w.env).await;
    assert_eq!(
        api_with(&w, &cookie).await,
        StatusCode::OK,
        "a restart signed the operator out"
    );
    // A new dashboard token signs every operator out.
    w.env.extra.retain(|(k, _)| k != "VIBELOOP_DASHBOARD_TOKEN");
    w.env.extra.push((
        "VIBELOOP_DASHBOARD_TOKEN".into(),
        "a-brand-new-dashboard-token-0001".into(),
    ));
    w.bot.restart(&w.env).await;
    assert_eq!(api_with(&w, &cookie).await, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cookies_are_secure_unless_plain_http_is_chosen() {
    let w = world(vec![("VIBELOOP_INSECURE_COOKIES", "false")]).await;
    let r = sign_in(&w, TOKEN).await;
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        set.contains("; Secure") && set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_sign_in_cannot_be_finished_in_another_browser() {
    let w = world(vec![
        ("VIBELOOP_GITHUB_CLIENT_ID", "Iv1.testclient"),
        ("VIBELOOP_GITHUB_CLIENT_SECRET", "client-secret-for-tests"),
        ("VIBELOOP_DASHBOARD_USERS", "mallory, alice"),
    ])
    .await;
    let callback = format!("{}/login/github/callback", w.bot.url);
    w.gh.set_oauth_app("Iv1.testclient", "client-secret-for-tests", &callback);
    // Mallory starts a sign-in in her browser and gets GitHub's link back with her code…
    w.gh.set_oauth_user(Some("mallory"));
    let http = no_redirects();
    let (nonce, link) = github_sign_in_link(&w, &http).await;
    assert!(nonce.starts_with("vibeloop_oauth="), "{nonce}");
    assert!(link.starts_with(&callback), "{link}");
    // …and sends it to Alice: in Alice's browser it signs nobody in.
    let r = http.get(&link).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.headers().get("set-cookie").is_none());
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("started in another browser")
    );
    // In the browser that started it, the same kind of link signs in.
    let cookie = github_session(&w, "mallory").await;
    assert!(cookie.starts_with("vibeloop_session="), "{cookie}");
}

/// A sign-in with GitHub as `login`, finished in the browser that started it: its session
/// cookie (`name=value`).
pub(crate) async fn github_session(w: &World, login: &str) -> String {
    w.gh.set_oauth_user(Some(login));
    let http = no_redirects();
    let (nonce, link) = github_sign_in_link(w, &http).await;
    let r = http
        .get(&link)
        .header("cookie", &nonce)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "{login} signs in: {}",
        r.text().await.unwrap()
    );
    session_of(&r)
}

/// A client from another loopback address than the tests' own.
fn elsewhere() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap()
}

async fn bearer(http: &reqwest::Client, w: &World, token: &str) -> reqwest::Response {
    http.get(format!("{}/api/tickets", w.bot.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_the_dashboard_token_is_throttled_per_address() {
    let w = world(vec![]).await;
    for i in 0..vibeloop::dashboard::login::MAX_FAILURES {
        let r = sign_in(&w, &format!("guess-number-{i:04}-of-many")).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    let r = sign_in(&w, "one-guess-too-many-0000000").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // That address waits out the minute, the right token included, on the form and as a
    // bearer token alike…
    assert_eq!(
        sign_in(&w, TOKEN).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    let r = bearer(&no_redirects(), &w, TOKEN).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().contains_key("retry-after"));
    // …while nobody else's guesses lock the operator out elsewhere.
    assert_eq!(
        bearer(&elsewhere(), &w, TOKEN).await.status(),
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_guesses_are_throttled_like_typed_ones() {
    let w = world(vec![]).await;
    let http = elsewhere();
    for i in 0..vibeloop::dashboard::login::MAX_FAILURES {
        let r = bearer(&http, &w, &format!("bearer-guess-{i:04}-of-many")).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    let r = bearer(&http, &w, "one-bearer-guess-too-many").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    // The operator, from their own address, is not locked out.
    assert_eq!(
        bearer(&no_redirects(), &w, TOKEN).await.status(),
        StatusCode::OK
    );
}
