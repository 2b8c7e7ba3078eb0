//! A webhook receiver for tests of what the fake GitHub sends: checks each delivery's signature
//! and keeps `(event, payload)`.

use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Deliveries received, in order.
#[derive(Clone, Default)]
pub struct Inbox(Arc<Mutex<Vec<(String, Value)>>>);

impl Inbox {
    pub fn deliveries(&self) -> Vec<(String, Value)> {
        self.0.lock().unwrap().clone()
    }

    pub fn last(&self) -> Option<(String, Value)> {
        self.0.lock().unwrap().last().cloned()
    }
}

/// Serves `POST /webhook` on 127.0.0.1; a delivery not signed with `secret` panics the handler
/// (the sender then sees a 500). Returns the base URL for `FakeGitHub::set_webhook`.
pub async fn start(secret: &str) -> (String, Inbox) {
    let inbox = Inbox::default();
    let keep = inbox.clone();
    let secret = secret.to_owned();
    let app = axum::Router::new().route(
        "/webhook",
        axum::routing::post(
            move |h: axum::http::HeaderMap, body: axum::body::Bytes| async move {
                let header = |k: &str| h.get(k).unwrap().to_str().unwrap().to_owned();
                let signature = super::payloads::sign(&secret, &body);
                assert_eq!(header("x-hub-signature-256"), signature);
                let v: Value = serde_json::from_slice(&body).unwrap();
                keep.0.lock().unwrap().push((header("x-github-event"), v));
                axum::http::StatusCode::ACCEPTED
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, inbox)
}
