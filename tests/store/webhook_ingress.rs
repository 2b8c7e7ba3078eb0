//! The webhook receiver against bad and good input, over real HTTP on the real router with a
//! real SQLite store: every refusal is a 4xx with a one-line reason, and nothing accepted is lost.

use crate::support;

use std::sync::Arc;

use support::payloads::{self, Sent, send, send_with, sign};
use vibeloop::store::Store;
use vibeloop::webhook::{self, Ingress};

const SECRET: &str = "It's a Secret to Everybody";

struct Receiver {
    url: String,
    store: Store,
    _dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn receiver(secrets: &[&str]) -> Receiver {
    let dir = tempfile::tempdir().unwrap();
    let store =
        vibeloop::app::open_store(&format!("sqlite://{}/v.db?mode=rwc", dir.path().display()))
            .await
            .unwrap();
    let ingress = Ingress {
        store: store.clone(),
        deliveries: vibeloop::store::deliveries::DeliveryWriter::spawn(store.clone()),
        secrets: Arc::new(
            secrets
                .iter()
                .map(|s| secrecy::SecretString::from(s.to_string()))
                .collect(),
        ),
        jobs_queued: Arc::new(tokio::sync::Notify::new()),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        axum::serve(listener, webhook::router(ingress))
            .await
            .unwrap();
    });
    Receiver {
        url,
        store,
        _dir: dir,
        server,
    }
}

fn ping() -> Vec<u8> {
    payloads::example("ping/with-app_id.payload.json")
}

async fn stored(r: &Receiver) -> i64 {
    r.store
        .delivery_counts()
        .await
        .unwrap()
        .iter()
        .map(|(_, n)| n)
        .sum()
}

#[tokio::test]
async fn a_signed_delivery_is_stored_then_acknowledged_once() {
    let r = receiver(&[SECRET]).await;
    let body = payloads::example("issues/labeled.payload.json");
    let first = send(&r.url, SECRET, "issues", &body).await;
    assert_eq!((first.status, first.text.as_str()), (202, "queued\n"));
    let d = r
        .store
        .delivery(&first.delivery)
        .await
        .unwrap()
        .expect("stored before the answer");
    assert_eq!(
        (d.event.as_str(), d.action.as_deref(), d.status.as_str()),
        ("issues", Some("labeled"), "queued")
    );
    assert_eq!(d.repo.as_deref(), Some("Codertocat/Hello-World"));
    assert_eq!(d.payload.as_bytes(), body.as_slice());
    assert_eq!(
        r.store.job_counts().await.unwrap(),
        vec![("queued".to_owned(), 1)]
    );

    // A redelivery keeps its id: acknowledged with 200, stored and queued once only.
    let again = send_with(
        &r.url,
        &[
            ("X-GitHub-Event", "issues"),
            ("X-GitHub-Delivery", &first.delivery),
            ("X-Hub-Signature-256", &sign(SECRET, &body)),
        ],
        &body,
        &first.delivery,
    )
    .await;
    assert_eq!(
        (again.status, again.text.as_str()),
        (200, "already received\n")
    );
    assert_eq!(stored(&r).await, 1);
    assert_eq!(
        r.store.job_counts().await.unwrap(),
        vec![("queued".to_owned(), 1)]
    );
}

#[tokio::test]
async fn signatures_are_checked_against_every_rotated_secret() {
    let r = receiver(&["old-secret", SECRET]).await;
    assert_eq!(
        send(&r.url, "old-secret", "ping", &ping()).await.status,
        202
    );
    assert_eq!(send(&r.url, SECRET, "ping", &ping()).await.status, 202);
    let wrong = send(&r.url, "guessed", "ping", &ping()).await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.text.contains("does not match"), "{}", wrong.text);
    // A body changed after signing is refused too.
    let body = ping();
    let sig = sign(SECRET, &body);
    let mut tampered = body.clone();
    tampered.push(b' ');
    let d = payloads::delivery_id();
    let t = send_with(
        &r.url,
        &[
            ("X-GitHub-Event", "ping"),
            ("X-GitHub-Delivery", &d),
            ("X-Hub-Signature-256", &sig),
        ],
        &tampered,
        &d,
    )
    .await;
    assert_eq!(t.status, 401);
    assert_eq!(stored(&r).await, 2);
}

#[tokio::test]
async fn missing_or_malformed_headers_get_400_with_the_reason() {
    let r = receiver(&[SECRET]).await;
    let body = ping();
    let sig = sign(SECRET, &body);
    let id = payloads::delivery_id();
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![("X-GitHub-Delivery", &id), ("X-Hub-Signature-256", &sig)],
            "missing x-github-event header",
        ),
        (
            vec![("X-GitHub-Event", "ping"), ("X-Hub-Signature-256", &sig)],
            "missing x-github-delivery header",
        ),
        (
            vec![("X-GitHub-Event", "ping"), ("X-GitHub-Delivery", &id)],
            "missing x-hub-signature-256 header",
        ),
        (
            vec![
                ("X-GitHub-Event", "ping"),
                ("X-GitHub-Delivery", "../etc"),
                ("X-Hub-Signature-256", &sig),
            ],
            "X-GitHub-Delivery: invalid delivery id",
        ),
    ];
    for (headers, reason) in cases {
        let s: Sent = send_with(&r.url, &headers, &body, &id).await;
        assert_eq!(s.status, 400, "{headers:?}");
        assert!(s.text.starts_with(reason), "{headers:?}: {}", s.text);
    }
    let sha1 = send_with(
        &r.url,
        &[
            ("X-GitHub-Event", "ping"),
            ("X-GitHub-Delivery", &id),
            ("X-Hub-Signature-256", "sha1=abc"),
        ],
        &body,
        &id,
    )
    .await;
    assert_eq!(sha1.status, 401);
    assert!(sha1.text.contains("sha256="), "{}", sha1.text);
    assert_eq!(stored(&r).await, 0);
}

#[tokio::test]
async fn bodies_that_are_not_json_objects_get_400() {
    let r = receiver(&[SECRET]).await;
    for body in [
        &b"payload=%7B%7D"[..],
        b"{\"action\": ",
        b"[1, 2]",
        b"\xff\xfe",
    ] {
        let s = send(&r.url, SECRET, "issues", body).await;
        assert_eq!(s.status, 400, "{body:?}");
        assert!(
            s.text.starts_with("body is not a JSON webhook payload"),
            "{}",
            s.text
        );
    }
    assert_eq!(stored(&r).await, 0);
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let r = receiver(&[SECRET]).await;
    let mut body = b"{\"pad\": \"".to_vec();
    body.resize(webhook::MAX_BODY_BYTES + 10, b'x');
    body.extend_from_slice(b"\"}");
    let s = send(&r.url, SECRET, "issues", &body).await;
    assert_eq!(s.status, 413);
    assert_eq!(stored(&r).await, 0);
    // Just under the cap is fine.
    let mut body = b"{\"pad\": \"".to_vec();
    body.resize(webhook::MAX_BODY_BYTES - 10, b'x');
    body.extend_from_slice(b"\"}");
    assert_eq!(send(&r.url, SECRET, "issues", &body).await.status, 202);
}

#[tokio::test]
async fn unknown_events_are_stored_as_ignored_without_a_job() {
    let r = receiver(&[SECRET]).await;
    // A tag's creation (`create`), which Vibeloop does not subscribe to; its payload is much
    // like the push of that tag.
    let s = send(
        &r.url,
        SECRET,
        "create",
        &payloads::example("push/1.payload.json"),
    )
    .await;
    assert_eq!(s.status, 202);
    assert!(s.text.contains("create events are ignored"), "{}", s.text);
    let d = r.store.delivery(&s.delivery).await.unwrap().unwrap();
    assert_eq!(d.status, "ignored");
    assert!(r.store.job_counts().await.unwrap().is_empty());
}

/// Every real payload example is accepted and stored; the two octocrab cannot parse are
/// stored like the rest (the worker records them as unparsed).
#[tokio::test]
async fn every_example_payload_is_accepted() {
    let r = receiver(&[SECRET]).await;
    let root = payloads::fixtures().join("webhooks");
    let mut sent = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let event = dir.file_name().unwrap().to_str().unwrap().to_owned();
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "json") {
                let s = send(&r.url, SECRET, &event, &std::fs::read(&file).unwrap()).await;
                assert_eq!(s.status, 202, "{}: {}", file.display(), s.text);
                sent += 1;
            }
        }
    }
    assert_eq!(stored(&r).await, sent);
}

#[tokio::test]
async fn health_and_readiness() {
    let r = receiver(&[SECRET]).await;
    let get = |p: &'static str| {
        let url = format!("{}{p}", r.url);
        async move { reqwest::get(url).await.unwrap().status().as_u16() }
    };
    assert_eq!(get("/healthz").await, 200);
    assert_eq!(get("/readyz").await, 200);
    r.store.close().await;
    assert_eq!(get("/readyz").await, 503);
    assert_eq!(get("/healthz").await, 200);
    // With the database gone, a delivery is refused (GitHub records the failure; it can be
    // redelivered) rather than acknowledged and lost.
    assert_eq!(send(&r.url, SECRET, "ping", &ping()).await.status, 503);
}
