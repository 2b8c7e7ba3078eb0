//! Test harness shared by the integration tests and the standalone fakes in `examples/`:
//! a fake GitHub ([`fake_github`]), a fake model server ([`fake_llm`]), real git repositories
//! ([`repos`]), real webhook payloads ([`payloads`]), a webhook receiver ([`inbox`]) and the
//! real bot binary ([`bot`]).
#![allow(dead_code)]

// The bot as a child process needs the binary cargo builds for tests only.
#[cfg(test)]
pub mod bot;
#[cfg(test)]
pub mod browser;
pub mod cut;
pub mod fake_github;
pub mod fake_llm;
pub mod git_http;
#[cfg(test)]
pub mod hive;
pub mod inbox;
pub mod openapi;
pub mod payloads;
pub mod pg;
pub mod repos;

use std::time::{Duration, Instant};

/// Polls `check` every 25 ms until it yields a value or `timeout` passes.
pub async fn poll_until<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `Some(())` when the request answers with a 2xx (a condition for [`poll_until`]).
pub async fn answers_ok(req: reqwest::RequestBuilder) -> Option<()> {
    req.send()
        .await
        .ok()
        .filter(|r| r.status().is_success())
        .map(|_| ())
}
