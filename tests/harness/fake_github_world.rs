//! The fake GitHub over real HTTP, for the tests of the fake itself (`tests/github/fake_github*.rs`):
//! a repository with two files, an installation token, and calls that return status and JSON.
// Each test file uses part of it.
#![allow(dead_code)]

use serde_json::{Value, json};

use crate::support::bot::app_public_key;
use crate::support::fake_github::{self, FakeGitHub};
use crate::support::openapi;

pub const R: &str = "/repos/acme/widgets";
pub const REPO: &str = "acme/widgets";

pub struct World {
    _dir: tempfile::TempDir,
    pub gh: FakeGitHub,
    pub http: reqwest::Client,
    pub token: String,
}

pub async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: 99,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("gh"),
        token_ttl: std::time::Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(7, "acme");
    let a = "1\n2\n3\n4\n5\n6\n7\n8\n";
    gh.add_repo(7, REPO, &[("a.txt", a), ("b.txt", "bee\n")]);
    let token = gh.mint_token(7);
    let http = reqwest::Client::new();
    World {
        _dir: dir,
        gh,
        http,
        token,
    }
}

impl World {
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{R}{path}", self.gh.url);
        let mut req = self.http.request(method.parse().unwrap(), url);
        req = req.bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(body)).await
    }
    pub async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("PATCH", path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> (u16, Value) {
        self.call("DELETE", path, None).await
    }
    /// Branch `feature` off `main`: one commit changing `a.txt` line 2 and adding `c.txt`.
    pub fn feature(&self) -> String {
        let a = "1\ntwo\n3\n4\n5\n6\n7\n8\n";
        let files = [("a.txt", a), ("c.txt", "new\nfile\n")];
        self.gh.push_commit(REPO, "feature", &files, "Feature work")
    }
    /// Opens a pull request from `feature` (the bot's own); returns its number.
    pub async fn bot_pull(&self) -> u64 {
        let pr = json!({ "title": "T", "head": "feature", "base": "main" });
        let (s, v) = self.post("/pulls", pr).await;
        assert_eq!(s, 201, "{v}");
        v["number"].as_u64().unwrap()
    }
    /// Every recorded request, less those `skip` says were sent invalid on purpose, fits the spec.
    pub fn assert_valid_except(&self, skip: impl Fn(&fake_github::Recorded) -> bool) {
        let reqs: Vec<_> = self
            .gh
            .requests()
            .into_iter()
            .filter(|r| !skip(r))
            .collect();
        openapi::assert_requests_valid(&reqs);
    }
}

/// Asserts GitHub's refusal: `status` and its reason (`message`, or the first of `errors`).
pub fn refused((s, v): (u16, Value), status: u16, reason: &str) {
    let e = &v["errors"][0];
    let why = match (e.as_str(), e["message"].as_str()) {
        (Some(w), _) | (None, Some(w)) => w,
        _ => v["message"].as_str().unwrap_or_default(),
    };
    assert_eq!((s, why), (status, reason), "{v}");
}

pub fn names(v: &Value) -> Vec<&str> {
    let list = v.as_array().unwrap();
    list.iter().map(|l| l["name"].as_str().unwrap()).collect()
}
