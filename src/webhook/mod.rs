//! Webhook ingress: `POST /webhook` checks headers, size and signature, stores the delivery
//! (and its job) and answers — 202 for a new delivery, 200 for one already stored — before any
//! work is done. Workers take it from there (`crate::hive`).
//!
//! Answers, each with a one-line plain-text reason: 400 (missing or bad header, body not a JSON
//! object), 401 (signature), 413 (over 25 MiB), 503 (database unavailable: GitHub shows the
//! failure and the delivery can be redelivered).

pub mod event;
pub mod signature;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use secrecy::SecretString;
use tokio::sync::Notify;
use tracing::{Instrument as _, info, info_span, warn};

use crate::ids::DeliveryId;
use crate::store::deliveries::{DeliveryWriter, NewDelivery, Stored};
use crate::store::{Store, StoreError};

/// GitHub caps payloads at 25 MB; we refuse anything larger.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// What the ingress routes share.
#[derive(Clone)]
pub struct Ingress {
    pub store: Store,
    /// Commits deliveries in groups (see [`DeliveryWriter`]).
    pub deliveries: DeliveryWriter,
    pub secrets: Arc<Vec<SecretString>>,
    /// Woken when a job is queued, so workers start without waiting for their next poll.
    pub jobs_queued: Arc<Notify>,
}

/// `/webhook`, `/healthz`, `/readyz`.
pub fn router(ingress: Ingress) -> Router {
    let health = health(ingress.store.clone());
    Router::new()
        .route("/webhook", post(receive))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(ingress)
        .merge(health)
}

/// `/healthz` (the process answers) and `/readyz` (its database does too): every process has
/// them, whatever its role.
pub fn health(store: Store) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(store)
}

async fn ready(State(store): State<Store>) -> (StatusCode, &'static str) {
    if store.ping().await {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "database unreachable\n")
    }
}

type Reply = (StatusCode, String);

fn reply(status: StatusCode, text: impl Into<String>) -> Reply {
    let mut text = text.into();
    text.push('\n');
    (status, text)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<&'a str, Reply> {
    match headers.get(name).map(|v| v.to_str()) {
        Some(Ok(v)) if !v.trim().is_empty() => Ok(v.trim()),
        Some(_) => Err(reply(
            StatusCode::BAD_REQUEST,
            format!("{name} header is not valid text"),
        )),
        None => Err(reply(
            StatusCode::BAD_REQUEST,
            format!("missing {name} header"),
        )),
    }
}

async fn receive(State(ingress): State<Ingress>, headers: HeaderMap, body: Bytes) -> Reply {
    let event = headers
        .get("x-github-event")
        .and_then(|v| v.to_str().ok())
        .filter(|e| event::HANDLED_EVENTS.contains(e) || *e == "ping")
        .unwrap_or("other")
        .to_owned();
    let answer = answer(ingress, &headers, body).await;
    crate::metrics::delivery_received(&event, answer.0.as_u16());
    answer
}

/// GitHub gives up on a delivery after 10 s. The bot answers before that, with a reason, when
/// the database keeps a delivery waiting; the delivery may still be stored, and its redelivery
/// then finds it ("already received").
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(8);

async fn answer(ingress: Ingress, headers: &HeaderMap, body: Bytes) -> Reply {
    let checked = (|| {
        let event = header(headers, "x-github-event")?;
        let delivery = header(headers, "x-github-delivery")?;
        let signature = header(headers, "x-hub-signature-256")?;
        let delivery = DeliveryId::parse(delivery)
            .map_err(|e| reply(StatusCode::BAD_REQUEST, format!("X-GitHub-Delivery: {e}")))?;
        Ok::<_, Reply>((event, delivery, signature))
    })();
    let (event, delivery, signature) = match checked {
        Ok(v) => v,
        Err(r) => return r,
    };
    let span = info_span!("delivery", id = %delivery, event = %event);
    async move {
        if let Err(e) = signature::verify(&ingress.secrets, signature, &body) {
            warn!(error = %e, "refused delivery");
            return reply(StatusCode::UNAUTHORIZED, e.to_string());
        }
        let envelope: event::Envelope = match serde_json::from_slice(&body) {
            Ok(e) => e,
            Err(e) => {
                return reply(
                    StatusCode::BAD_REQUEST,
                    format!("body is not a JSON webhook payload: {e}"),
                );
            }
        };
        let ignored = (!event::HANDLED_EVENTS.contains(&event)).then_some("event type not handled");
        let new = NewDelivery {
            delivery_id: delivery.clone(),
            event: event.to_owned(),
            action: envelope.action,
            installation_id: envelope.installation.and_then(|i| i64::try_from(i.id).ok()),
            repo: envelope.repository.map(|r| r.full_name),
            // serde_json accepted it, so it is valid UTF-8.
            payload: body,
            ignored,
        };
        let action = new.action.clone();
        let stored = tokio::time::timeout(ANSWER_WITHIN, ingress.deliveries.store(new))
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::Shared {
                    message: format!(
                        "the database kept the delivery waiting over {} s",
                        ANSWER_WITHIN.as_secs()
                    ),
                    reason: Some("the database is busy"),
                })
            });
        match stored {
            Ok(Stored::New) => {
                if ignored.is_none() {
                    ingress.jobs_queued.notify_one();
                    info!(action = ?action, "delivery queued");
                    reply(StatusCode::ACCEPTED, "queued")
                } else {
                    info!("delivery stored as ignored");
                    reply(
                        StatusCode::ACCEPTED,
                        format!("stored; {event} events are ignored"),
                    )
                }
            }
            Ok(Stored::Duplicate) => {
                info!("duplicate delivery");
                reply(StatusCode::OK, "already received")
            }
            Err(e) => {
                warn!(error = %e, "cannot store delivery");
                let why = e
                    .passing_reason()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("cannot store the delivery now{why}; redeliver it later"),
                )
            }
        }
    }
    .instrument(span)
    .await
}
