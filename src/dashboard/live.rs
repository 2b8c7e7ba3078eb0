//! The live timeline: a ticket's events as server-sent events, from where the browser left off,
//! for as long as its viewer may see them (checked again every `VIBELOOP_DASHBOARD_RECHECK`).

use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde::{Deserialize, Serialize};

use super::Dashboard;
use super::api::unavailable;
use super::sight::Sight;
use crate::commands::Person;
use crate::ids::TicketKey;
use crate::store::views::Event;

/// One timeline event as the live page gets it: the event, the sentence it reads as (none for
/// what the page leaves out) and the stage name of a change of state.
#[derive(Debug, Serialize)]
struct LiveEvent<'a> {
    #[serde(flatten)]
    event: &'a Event,
    sentence: Option<super::story::Sentence>,
    stage: Option<&'static str>,
}

#[derive(Debug, Deserialize)]
pub struct After {
    #[serde(default)]
    after: Option<i64>,
}

/// `GET /tickets/{key}/events`: the ticket's timeline as server-sent events, from the event
/// after `?after=` (or the `Last-Event-ID` a reconnecting browser sends), live.
pub async fn timeline(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Path(key): Path<TicketKey>,
    Query(q): Query<After>,
    headers: HeaderMap,
) -> Response {
    match Sight::new(&d, &who).ticket(key).await {
        Ok(Some(_)) => {
            let resumed = headers
                .get("last-event-id")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<i64>().ok());
            let viewer = Viewer { who, headers };
            live(d, key, resumed.or(q.after).unwrap_or(0), viewer).into_response()
        }
        Ok(None) => (StatusCode::NOT_FOUND, format!("no ticket {key}\n")).into_response(),
        Err(e) => unavailable(e).into_response(),
    }
}

/// Who watches a live timeline, and the request that signed them in (its cookie or bearer
/// token), to check again as the stream goes on.
struct Viewer {
    who: Person,
    headers: HeaderMap,
}

impl Viewer {
    /// Still signed in as the same person (the session not expired, the login still allowed)
    /// and still allowed to see ticket `key` — GitHub asked afresh within `d.recheck`.
    async fn still_sees(&self, d: &Dashboard, key: TicketKey) -> bool {
        let now_signed = super::auth::person(&d.access, &d.keys, &self.headers, super::now());
        if now_signed.as_ref() != Some(&self.who) {
            return false;
        }
        let mut sight = Sight::new(d, &self.who).asking_within(d.recheck);
        matches!(sight.ticket(key).await, Ok(Some(_)))
    }
}

/// Ticket `key`'s events from the one after `start`, then live, for as long as `viewer` may
/// see them: checked again every `d.recheck`, the stream ends at the first check that fails.
fn live(
    d: Dashboard,
    key: TicketKey,
    start: i64,
    viewer: Viewer,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let checked = std::time::Instant::now();
    let state = (d, start, viewer, checked);
    let stream = futures_util::stream::unfold(
        state,
        move |(d, mut after, viewer, mut checked)| async move {
            loop {
                if checked.elapsed() >= d.recheck {
                    if !viewer.still_sees(&d, key).await {
                        tracing::info!(ticket = %key, "a live timeline's viewer may no longer see it: stream closed");
                        return None;
                    }
                    checked = std::time::Instant::now();
                }
                match d.store.events_after(key, after, 200).await {
                    Ok(events) if !events.is_empty() => {
                        after = events.last().map(|e| e.id).unwrap_or(after);
                        let batch: Vec<Result<SseEvent, Infallible>> = events
                            .into_iter()
                            .map(|e| {
                                Ok(SseEvent::default()
                                    .id(e.id.to_string())
                                    .event("timeline")
                                    .data(
                                        serde_json::to_string(&LiveEvent {
                                            sentence: super::story::tell(&e.kind, &e.data),
                                            stage: e.data["to"]
                                                .as_str()
                                                .map(super::story::stage_name)
                                                .filter(|_| e.kind == "state"),
                                            event: &e,
                                        })
                                        .unwrap_or_default(),
                                    ))
                            })
                            .collect();
                        return Some((
                            futures_util::stream::iter(batch),
                            (d, after, viewer, checked),
                        ));
                    }
                    // Nothing new (or the database hiccuped): look again shortly.
                    _ => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            }
        },
    );
    use futures_util::StreamExt as _;
    Sse::new(stream.flatten()).keep_alive(KeepAlive::default())
}
