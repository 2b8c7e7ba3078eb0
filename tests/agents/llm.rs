//! The model client's retries against the fake model server and a server that never answers:
//! 5xx and 429 are retried, a model that hangs is asked again, and every retry is capped in
//! count, in total time and in how long a `Retry-After` may ask to wait. Also the agent loop's
//! cap on iterations.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use support::fake_llm::{FakeLlm, Script, Step};
use vibeloop::agent::tools::WriteScope;
use vibeloop::agent::{EventSink, Limits, Session, StopReason, Toolbox};
use vibeloop::llm::budget::{Caps, Ledger, Prices};
use vibeloop::llm::{LlmClient, LlmError, Message, Provider, Request, RetryLimits, Route};

fn route(url: &str) -> Route {
    Route {
        provider: Provider::Openai,
        base_url: url::Url::parse(url).unwrap(),
        api_key: None,
        model: "fake".into(),
        temperature: 0.2,
    }
}

fn client(url: &str, limits: RetryLimits) -> LlmClient {
    LlmClient::new(route(url))
        .unwrap()
        .with_limits(limits)
        .unwrap()
}

fn limits(max_attempts: u32) -> RetryLimits {
    RetryLimits {
        max_attempts,
        max_elapsed: Duration::from_secs(60),
        max_wait: Duration::from_secs(10),
        attempt_timeout: Duration::from_secs(30),
    }
}

fn fail(status: u16, retry_after: Option<u64>) -> Step {
    Step::Fail {
        status,
        retry_after,
    }
}

async fn ask(c: &LlmClient) -> Result<vibeloop::llm::Completion, LlmError> {
    let msgs = [Message::system("# Role: Builder"), Message::user("hi")];
    c.complete(Request::new(&msgs, &[])).await
}

#[tokio::test]
async fn server_errors_are_retried_until_an_answer() {
    let llm = FakeLlm::start(Script::from([(
        "builder".into(),
        vec![fail(502, None), fail(503, None), Step::say("ok")],
    )]))
    .await;
    let answer = ask(&client(&llm.url, limits(5))).await.unwrap();
    assert_eq!(answer.message.content.as_deref(), Some("ok"));
    assert_eq!(llm.requests("builder").len(), 3);
}

#[tokio::test]
async fn retries_stop_at_the_attempt_cap_with_the_last_error() {
    let steps = (0..6)
        .map(|_| fail(503, None))
        .chain([Step::say("too late")])
        .collect();
    let llm = FakeLlm::start(Script::from([("builder".into(), steps)])).await;
    let err = ask(&client(&llm.url, limits(3))).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 503, .. }), "{err}");
    assert_eq!(llm.requests("builder").len(), 3);
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_is_not_waited_for() {
    let llm = FakeLlm::start(Script::from([(
        "builder".into(),
        vec![fail(429, Some(3600)), Step::say("ok")],
    )]))
    .await;
    let err = ask(&client(&llm.url, limits(5))).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 429, .. }), "{err}");
    assert_eq!(
        llm.requests("builder").len(),
        1,
        "it waited and asked again"
    );
}

#[tokio::test]
async fn errors_that_retrying_cannot_fix_are_not_retried() {
    let llm = FakeLlm::start(Script::from([(
        "builder".into(),
        vec![fail(401, None), Step::say("ok")],
    )]))
    .await;
    let err = ask(&client(&llm.url, limits(5))).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 401, .. }), "{err}");
    assert_eq!(llm.requests("builder").len(), 1);
}

#[tokio::test]
async fn a_model_that_hangs_is_asked_again_then_given_up_on() {
    // A server that takes connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    let c = client(
        &format!("http://{addr}/v1"),
        RetryLimits {
            attempt_timeout: Duration::from_millis(300),
            ..limits(2)
        },
    );
    let err = ask(&c).await.unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err}");
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "one try and one retry");
    server.abort();
}

/// Reads one HTTP request (headers and a `content-length` body) from `socket`.
async fn read_request(socket: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt as _;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the client closed before sending its request");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return;
            }
        }
    }
}

#[tokio::test]
async fn truncated_answers_are_asked_for_again() {
    use tokio::io::AsyncWriteExt as _;
    let answer = json!({
        "id": "x", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": "whole" }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
    })
    .to_string();
    let half = answer[..answer.len() / 2].to_owned();
    let replies = [
        // The connection drops in the middle of the body.
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{half}",
            answer.len()
        ),
        // A whole HTTP answer whose JSON is cut short.
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{half}",
            half.len()
        ),
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        ),
    ];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        for reply in replies {
            let (mut socket, _) = listener.accept().await.unwrap();
            read_request(&mut socket).await;
            socket.write_all(reply.as_bytes()).await.unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    let c = client(
        &format!("http://{addr}/v1"),
        RetryLimits {
            max_wait: Duration::from_secs(5),
            ..limits(3)
        },
    );
    let got = ask(&c).await.unwrap();
    assert_eq!(got.message.content.as_deref(), Some("whole"));
    server.await.expect("all three answers were asked for");
}

#[tokio::test]
async fn the_loop_stops_at_its_iteration_cap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    let read = |n: u32| Step::tool("read_file", json!({ "path": "a.py", "start_line": n }));
    let llm = FakeLlm::start(Script::from([(
        "builder".into(),
        vec![read(1), read(2), read(3), Step::say("done")],
    )]))
    .await;
    let c = client(&llm.url, limits(3));
    let ledger = Ledger::new(Caps::none(), BTreeMap::new());
    let prices = Prices::new(BTreeMap::new());
    let session = Session {
        role: "builder",
        llm: &c,
        prices: &prices,
        ledger: &ledger,
        limits: Limits {
            max_iterations: 2,
            ..Limits::default()
        },
        events: EventSink::discard(),
        step_retry: 0,
        act_first: false,
        interrupt: None,
    };
    let mut tools = Toolbox::new(dir.path().to_owned(), WriteScope::None);
    let out = session
        .run(
            vec![
                Message::system("# Role: Builder"),
                Message::user("Look around."),
            ],
            &mut tools,
        )
        .await
        .unwrap();
    assert_eq!(out.stop, StopReason::MaxIterations { limit: 2 });
    assert_eq!(out.iterations, 2);
    assert_eq!(llm.requests("builder").len(), 2);
}
