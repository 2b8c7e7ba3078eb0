//! The last step of GitHub's App-manifest flow: `POST /app-manifests/{code}/conversions`
//! exchanges a code the test registered with [`FakeGitHub::add_manifest_code`] for the new
//! App's credentials. Like GitHub it needs no authentication; the fake picks single use (an
//! exchanged or unknown code is GitHub's 404).

use axum::http::StatusCode;
use serde_json::{Value, json};

use vibeloop::forge::rest::{Answer, err};

use super::{Extras, FakeGitHub, user_json};

fn rand_u64() -> u64 {
    rand::random()
}

impl FakeGitHub {
    /// Makes `code` exchangeable once; returns what the exchange will answer (an App with the
    /// fake's app id, so its `pem` — the test key — also signs JWTs this fake accepts).
    pub fn add_manifest_code(&self, code: &str) -> Value {
        let pem = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys/app.pem"),
        )
        .expect("tests/fixtures/keys/app.pem");
        let (id, n) = {
            let mut st = self.state();
            (st.app_id, st.next_id())
        };
        let slug = format!("vibeloop-{n}");
        let app = json!({
            "id": id,
            "slug": slug,
            "node_id": format!("A_kwHO{n}"),
            "owner": user_json("acme"),
            "name": slug,
            "description": "",
            "external_url": "https://vibeloop.example.com",
            "html_url": format!("https://github.com/apps/{slug}"),
            "created_at": vibeloop::forge::rest::now(),
            "updated_at": vibeloop::forge::rest::now(),
            "permissions": { "contents": "write", "issues": "write", "pull_requests": "write",
                             "checks": "write", "metadata": "read" },
            "events": ["issues", "issue_comment", "pull_request", "pull_request_review",
                       "check_run", "check_suite"],
            "client_id": format!("Iv23li{n:014}"),
            "client_secret": format!("{:016x}{:016x}{n:08x}", rand_u64(), rand_u64()),
            "webhook_secret": format!("{:016x}{:016x}{n:08x}", rand_u64(), rand_u64()),
            "pem": pem,
        });
        self.extras()
            .manifest_codes
            .insert(code.to_owned(), app.clone());
        app
    }
}

/// `POST /app-manifests/{code}/conversions`
pub(super) fn conversion(x: &mut Extras, code: &str) -> Answer {
    match x.manifest_codes.remove(code) {
        Some(app) => (StatusCode::CREATED, app),
        None => err(StatusCode::NOT_FOUND, "Not Found"),
    }
}
