//! Who may see the dashboard, the JSON API and the metrics. Two ways in:
//!
//! * the static token `VIBELOOP_DASHBOARD_TOKEN` — as `Authorization: Bearer <token>` (scripts,
//!   Prometheus) or typed on the sign-in page, which then sets a session cookie; its holder is
//!   the operator;
//! * GitHub sign-in (the App's OAuth client): the person's login must be in
//!   `VIBELOOP_DASHBOARD_USERS`, and their repository permission decides what they may do.
//!
//! Sessions are stateless: the cookie holds who and until when, signed with HMAC-SHA256 under
//! the session key — `VIBELOOP_SESSION_KEY`, or a random one kept in the data directory; never
//! the webhook secret, which every ingress and the App's settings know. An operator's session
//! also names the dashboard token it was opened with (a keyed fingerprint), so changing the
//! token signs every operator out. The OAuth `state` is signed the same way and tied to the
//! browser that started the sign-in (a nonce in a short-lived cookie): a sign-in link cannot be
//! finished in someone else's browser. Tokens and the user's OAuth access token are compared in
//! constant time and never stored or logged.

use axum::http::HeaderMap;
use hmac::{Hmac, Mac as _};
use secrecy::ExposeSecret as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::commands::Person;
use crate::config::access::Access;

/// The session cookie's name.
pub const COOKIE: &str = "vibeloop_session";
/// The cookie that ties a GitHub sign-in to the browser that started it.
pub const OAUTH_COOKIE: &str = "vibeloop_oauth";
/// How long a sign-in lasts.
pub const SESSION_SECONDS: i64 = 12 * 3600;
/// How long a GitHub sign-in may take.
const STATE_SECONDS: i64 = 600;

/// Signs and checks sessions and OAuth states.
#[derive(Clone)]
pub struct Keys {
    key: [u8; 32],
    /// The dashboard token's keyed fingerprint: what an operator's session must name.
    operator: Option<String>,
}

impl Keys {
    /// Keys derived from the session key `secret` (the same on every replica); operators'
    /// sessions bound to `token`, the dashboard token.
    pub fn derive(secret: &[u8], token: Option<&secrecy::SecretString>) -> Self {
        let mut h = Sha256::new();
        h.update(b"vibeloop dashboard sessions v2\0");
        h.update(secret);
        let mut keys = Self {
            key: h.finalize().into(),
            operator: None,
        };
        keys.operator =
            token.map(|t| keys.mac(&format!("token:{}", t.expose_secret()))[..16].to_owned());
        keys
    }

    fn mac(&self, text: &str) -> String {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        m.update(text.as_bytes());
        hex::encode(m.finalize().into_bytes())
    }

    fn verify(&self, text: &str, mac: &str) -> bool {
        let Ok(mac) = hex::decode(mac) else {
            return false;
        };
        let mut m = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        m.update(text.as_bytes());
        m.verify_slice(&mac).is_ok()
    }

    /// A cookie value for `who`, valid until `now + SESSION_SECONDS`.
    pub fn session(&self, who: &Person, now: i64) -> String {
        let who = match who {
            Person::Operator => format!("op_{}", self.operator.as_deref().unwrap_or("none")),
            Person::GitHub(login) => format!("u_{login}"),
            // Never a dashboard sign-in: `person` reads no session back from it.
            Person::Local => "local".to_owned(),
        };
        let text = format!("{who}.{}", now + SESSION_SECONDS);
        let mac = self.mac(&format!("session:{text}"));
        format!("{text}.{mac}")
    }

    /// Who a cookie value names, if it is ours and not expired.
    pub fn person(&self, value: &str, now: i64) -> Option<Person> {
        let (text, mac) = value.rsplit_once('.')?;
        if !self.verify(&format!("session:{text}"), mac) {
            return None;
        }
        let (who, until) = text.rsplit_once('.')?;
        if until.parse::<i64>().ok()? <= now {
            return None;
        }
        match who {
            w if w.starts_with("op_") => {
                let current = self.operator.as_deref()?;
                let named = &w[3..];
                (named.len() == current.len()
                    && bool::from(named.as_bytes().ct_eq(current.as_bytes())))
                .then_some(Person::Operator)
            }
            w => w
                .strip_prefix("u_")
                .filter(|l| is_login(l))
                .map(|l| Person::GitHub(l.to_owned())),
        }
    }

    /// The token a form must carry with a session (sessions' cookies are SameSite=Strict too).
    pub fn csrf(&self, session: &str) -> String {
        self.mac(&format!("csrf:{session}"))
    }

    pub fn csrf_ok(&self, session: &str, token: &str) -> bool {
        self.verify(&format!("csrf:{session}"), token)
    }

    /// An OAuth `state` for a sign-in starting now in the browser holding `nonce` (its
    /// [`OAUTH_COOKIE`]), carrying where to go afterwards.
    pub fn oauth_state(&self, next: &str, nonce: &str, now: i64) -> String {
        let nonce = hex::encode(nonce.as_bytes());
        let next = hex::encode(safe_next(next).as_bytes());
        let text = format!("{nonce}.{}.{next}", now + STATE_SECONDS);
        let mac = self.mac(&format!("state:{text}"));
        format!("{text}.{mac}")
    }

    /// Where a valid, unexpired `state` says to go, when the browser that brings it holds the
    /// nonce it was made for (`browser`: its [`OAUTH_COOKIE`]).
    pub fn check_state(&self, state: &str, browser: Option<&str>, now: i64) -> Option<String> {
        let (text, mac) = state.rsplit_once('.')?;
        if !self.verify(&format!("state:{text}"), mac) {
            return None;
        }
        let mut parts = text.split('.');
        let (nonce, until, next) = (parts.next()?, parts.next()?, parts.next()?);
        let browser = hex::encode(browser?.as_bytes());
        if browser.is_empty() || !bool::from(nonce.as_bytes().ct_eq(browser.as_bytes())) {
            return None;
        }
        if until.parse::<i64>().ok()? <= now {
            return None;
        }
        String::from_utf8(hex::decode(next).ok()?).ok()
    }
}

/// A GitHub login: letters, digits and single hyphens, at most 39 characters.
pub fn is_login(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 39
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !s.starts_with('-')
}

/// `next` if it is a path of this site, else `/` (no open redirects).
pub fn safe_next(next: &str) -> &str {
    let ok = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control);
    if ok { next } else { "/" }
}

/// True when `given` is the dashboard token.
pub fn token_matches(access: &Access, given: &str) -> bool {
    let Some(token) = &access.token else {
        return false;
    };
    let (a, b) = (token.expose_secret().as_bytes(), given.trim().as_bytes());
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// The session cookie's value in a request, if any.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    cookie(headers, COOKIE)
}

/// Cookie `name`'s value in a request, if any.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.to_owned())
}

/// Who a request comes from: a bearer token, or a session cookie.
pub fn person(access: &Access, keys: &Keys, headers: &HeaderMap, now: i64) -> Option<Person> {
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if let Some(token) = bearer {
        return token_matches(access, token).then_some(Person::Operator);
    }
    let person = keys.person(&session_cookie(headers)?, now)?;
    // A GitHub sign-in counts only while GitHub sign-in is on and the login still allowed.
    match &person {
        Person::Operator if access.token.is_some() => Some(person),
        Person::GitHub(login) if allowed(access, login) => Some(person),
        _ => None,
    }
}

/// True when `login` may sign in with GitHub.
pub fn allowed(access: &Access, login: &str) -> bool {
    access
        .oauth
        .as_ref()
        .is_some_and(|o| o.users.iter().any(|u| u.eq_ignore_ascii_case(login)))
}

/// `Set-Cookie` for a session (empty value and no age: signs out); `Secure` unless the
/// operator serves plain HTTP on purpose.
pub fn set_cookie(value: Option<&str>, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    match value {
        Some(v) => format!(
            "{COOKIE}={v}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_SECONDS}{secure}"
        ),
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"),
    }
}

/// `Set-Cookie` for a GitHub sign-in's browser nonce: sent back only to the callback, on the
/// top-level navigation from GitHub (`Lax`), for as long as a sign-in may take.
pub fn set_oauth_cookie(nonce: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{OAUTH_COOKIE}={nonce}; Path=/login/github; HttpOnly; SameSite=Lax; Max-Age={STATE_SECONDS}{secure}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::access::OAuth;
    use secrecy::SecretString;

    fn access() -> Access {
        Access {
            token: Some(SecretString::from("0123456789abcdef0123".to_owned())),
            oauth: Some(OAuth {
                client_id: "Iv1.x".into(),
                client_secret: SecretString::from("s".to_owned()),
                users: vec!["octocat".into()],
            }),
            session_key: None,
            secure_cookies: true,
        }
    }

    fn keys() -> Keys {
        Keys::derive(b"secret", access().token.as_ref())
    }

    #[test]
    fn sessions_are_signed_and_expire() {
        let k = keys();
        let c = k.session(&Person::GitHub("octocat".into()), 1_000);
        assert_eq!(k.person(&c, 1_001), Some(Person::GitHub("octocat".into())));
        assert_eq!(k.person(&c, 1_000 + SESSION_SECONDS), None, "expired");
        assert_eq!(
            Keys::derive(b"other", access().token.as_ref()).person(&c, 1_001),
            None,
            "another key"
        );
        let forged = c.replace("u_octocat", "u_admin");
        assert_eq!(k.person(&forged, 1_001), None);
        let op = k.session(&Person::Operator, 0);
        assert_eq!(k.person(&op, 1), Some(Person::Operator));
        // A new dashboard token signs the operator out; no token, no operator session.
        let other = SecretString::from("another-token-0123456789".to_owned());
        assert_eq!(Keys::derive(b"secret", Some(&other)).person(&op, 1), None);
        assert_eq!(Keys::derive(b"secret", None).person(&op, 1), None);
        let forged = op.replace(&op[3..19], "0000000000000000");
        assert_eq!(k.person(&forged, 1), None);
    }

    #[test]
    fn requests_are_let_in_by_token_or_cookie_only() {
        let (a, k) = (access(), keys());
        let mut h = HeaderMap::new();
        assert_eq!(person(&a, &k, &h, 5), None);
        h.insert(
            "authorization",
            "Bearer 0123456789abcdef0123".parse().unwrap(),
        );
        assert_eq!(person(&a, &k, &h, 5), Some(Person::Operator));
        h.insert(
            "authorization",
            "Bearer 0123456789abcdef0124".parse().unwrap(),
        );
        assert_eq!(
            person(&a, &k, &h, 5),
            None,
            "a wrong token is not a cookie's fallback"
        );
        let mut h = HeaderMap::new();
        let c = k.session(&Person::GitHub("OctoCat".into()), 0);
        h.insert(
            "cookie",
            format!("theme=dark; {COOKIE}={c}").parse().unwrap(),
        );
        assert_eq!(
            person(&a, &k, &h, 5),
            Some(Person::GitHub("OctoCat".into()))
        );
        // Someone taken off the list is out, even with a valid cookie.
        let mut fewer = access();
        fewer.oauth.as_mut().unwrap().users = vec!["hubot".into()];
        assert_eq!(person(&fewer, &k, &h, 5), None);
    }

    #[test]
    fn oauth_states_round_trip_and_redirects_stay_on_the_site() {
        let k = keys();
        let s = k.oauth_state("/tickets/3", "n0nce", 100);
        assert_eq!(
            k.check_state(&s, Some("n0nce"), 200).as_deref(),
            Some("/tickets/3")
        );
        assert_eq!(k.check_state(&s, Some("n0nce"), 100 + STATE_SECONDS), None);
        assert_eq!(k.check_state(&format!("{s}0"), Some("n0nce"), 200), None);
        // Another browser (login CSRF) cannot finish it.
        assert_eq!(k.check_state(&s, Some("other"), 200), None);
        assert_eq!(k.check_state(&s, None, 200), None);
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil",
            "javascript:x",
        ] {
            assert_eq!(safe_next(bad), "/", "{bad}");
        }
    }

    #[test]
    fn csrf_tokens_are_bound_to_the_session() {
        let k = keys();
        let t = k.csrf("a.1.b");
        assert!(k.csrf_ok("a.1.b", &t));
        assert!(!k.csrf_ok("c.1.d", &t));
    }
}
