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
#[cfg(test)]
pub mod leaks;
pub mod openapi;
pub mod payloads;
pub mod pg;
#[cfg(test)]
pub mod registry;
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

/// The path of example `name` as `cargo test` builds it (next to the test binaries' directory).
pub fn built_example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is not built: run the whole suite (`cargo test` builds the examples) or `cargo build --examples`",
        path.display()
    );
    path
}

/// A child process killed (and reaped) when dropped.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port on 127.0.0.1 free right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
