//! Who may see the dashboard, the JSON API and the metrics. Two ways in:
//!
//! * the static token `VIBELOOP_DASHBOARD_TOKEN` — as `Authorization: Bearer <token>` (scripts,
//!   Prometheus) or typed on the sign-in page, which then sets a session cookie; its holder is
//!   the operator;
//! * GitHub sign-in (the App's OAuth client): the person's login must be in
//!   `VIBELOOP_DASHBOARD_USERS`, and their repository permission decides what they may do.
//!
//! Sessions are stateless: the cookie holds who and until when, signed with HMAC-SHA256 under a
//! key derived from the webhook secret (so every ingress replica accepts every other's
//! cookies). The OAuth `state` is signed the same way. Tokens and the user's OAuth access token
//! are compared in constant time and never stored or logged.

use axum::http::HeaderMap;
use hmac::{Hmac, Mac as _};
use secrecy::ExposeSecret as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::config::access::Access;
use crate::hive::intervene::Person;

/// The session cookie's name.
pub const COOKIE: &str = "vibeloop_session";
/// How long a sign-in lasts.
pub const SESSION_SECONDS: i64 = 12 * 3600;
/// How long a GitHub sign-in may take.
const STATE_SECONDS: i64 = 600;

/// Signs and checks sessions and OAuth states.
#[derive(Clone)]
pub struct Keys {
    key: [u8; 32],
}

impl Keys {
    /// Keys derived from `secret` (the webhook secret: every replica has it).
    pub fn derive(secret: &[u8]) -> Self {
        let mut h = Sha256::new();
        h.update(b"vibeloop dashboard sessions v1\0");
        h.update(secret);
        Self {
            key: h.finalize().into(),
        }
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
            Person::Operator => "op".to_owned(),
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
            "op" => Some(Person::Operator),
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

    /// An OAuth `state` for a sign-in starting now, carrying where to go afterwards.
    pub fn oauth_state(&self, next: &str, now: i64) -> String {
        let nonce: u64 = rand::random();
        let next = hex::encode(safe_next(next).as_bytes());
        let text = format!("{nonce:016x}.{}.{next}", now + STATE_SECONDS);
        let mac = self.mac(&format!("state:{text}"));
        format!("{text}.{mac}")
    }

    /// Where a valid, unexpired `state` says to go.
    pub fn check_state(&self, state: &str, now: i64) -> Option<String> {
        let (text, mac) = state.rsplit_once('.')?;
        if !self.verify(&format!("state:{text}"), mac) {
            return None;
        }
        let mut parts = text.split('.');
        let (_nonce, until, next) = (parts.next()?, parts.next()?, parts.next()?);
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
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
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

/// `Set-Cookie` for a session (empty value and no age: signs out).
pub fn set_cookie(value: Option<&str>) -> String {
    match value {
        Some(v) => {
            format!("{COOKIE}={v}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_SECONDS}")
        }
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    }
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
        }
    }

    #[test]
    fn sessions_are_signed_and_expire() {
        let k = Keys::derive(b"secret");
        let c = k.session(&Person::GitHub("octocat".into()), 1_000);
        assert_eq!(k.person(&c, 1_001), Some(Person::GitHub("octocat".into())));
        assert_eq!(k.person(&c, 1_000 + SESSION_SECONDS), None, "expired");
        assert_eq!(
            Keys::derive(b"other").person(&c, 1_001),
            None,
            "another key"
        );
        let forged = c.replace("u_octocat", "u_admin");
        assert_eq!(k.person(&forged, 1_001), None);
        let op = k.session(&Person::Operator, 0);
        assert_eq!(k.person(&op, 1), Some(Person::Operator));
    }

    #[test]
    fn requests_are_let_in_by_token_or_cookie_only() {
        let (a, k) = (access(), Keys::derive(b"secret"));
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
        let k = Keys::derive(b"secret");
        let s = k.oauth_state("/tickets/3", 100);
        assert_eq!(k.check_state(&s, 200).as_deref(), Some("/tickets/3"));
        assert_eq!(k.check_state(&s, 100 + STATE_SECONDS), None);
        assert_eq!(k.check_state(&format!("{s}0"), 200), None);
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
        let k = Keys::derive(b"secret");
        let t = k.csrf("a.1.b");
        assert!(k.csrf_ok("a.1.b", &t));
        assert!(!k.csrf_ok("c.1.d", &t));
    }
}
