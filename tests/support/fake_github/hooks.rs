//! The App's webhook delivery log, as GitHub keeps it: every webhook the fake sends is logged
//! with the receiver's answer (status 0 when it could not connect); `GET /app/hook/deliveries`
//! lists them newest first and `POST /app/hook/deliveries/{id}/attempts` sends one again, with
//! the same delivery id (`guid`), as GitHub's "Redeliver" does.

use serde::Serialize;
use serde_json::{Value, json};

use super::FakeGitHub;
use super::layer::Shared;
use crate::support::payloads::{self, Sent};

/// One logged delivery.
#[derive(Debug, Clone, Serialize)]
pub struct HookDelivery {
    pub id: u64,
    pub guid: String,
    pub event: String,
    pub action: Option<String>,
    pub status_code: u16,
    pub redelivery: bool,
    pub delivered_at: String,
    #[serde(skip)]
    pub body: Vec<u8>,
}

impl HookDelivery {
    /// GitHub's JSON for the list.
    pub fn json(&self) -> Value {
        let status = match self.status_code {
            0 => "failed to connect to host".to_owned(),
            200..=299 => "OK".to_owned(),
            code => format!("Invalid HTTP Response: {code}"),
        };
        json!({
            "id": self.id, "guid": self.guid, "delivered_at": self.delivered_at,
            "redelivery": self.redelivery, "duration": 0.01, "status": status,
            "status_code": self.status_code, "event": self.event, "action": self.action,
            "installation_id": null, "repository_id": null,
        })
    }
}

/// Sends a signed webhook to the receiver set with `set_webhook`, and logs the delivery.
pub(super) async fn deliver(s: &Shared, event: &str, body: &[u8], guid: Option<&str>) -> Sent {
    let (url, secret) = s.extras().webhook.clone().expect("set_webhook first");
    let body = &with_repository_id(s, body);
    let guid = guid
        .map(str::to_owned)
        .unwrap_or_else(payloads::delivery_id);
    let headers = [
        ("X-GitHub-Event", event),
        ("X-GitHub-Delivery", guid.as_str()),
        ("X-Hub-Signature-256", &payloads::sign(&secret, body)),
    ];
    let sent = payloads::send_with(&url, &headers, body, &guid).await;
    let action = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["action"].as_str().map(str::to_owned));
    let id = s.state().next_id();
    let mut x = s.extras();
    let redelivery = x.hook_deliveries.iter().any(|d| d.guid == guid);
    x.hook_deliveries.push(HookDelivery {
        id,
        guid,
        event: event.to_owned(),
        action,
        status_code: sent.status,
        redelivery,
        delivered_at: vibeloop::forge::rest::now(),
        body: body.to_vec(),
    });
    sent
}

/// `body` with `repository.id` the id of the repository that holds its name now, as GitHub
/// sends it (a repository deleted and made again has another); unchanged when it names none.
fn with_repository_id(s: &Shared, body: &[u8]) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
        return body.to_vec();
    };
    let name = v["repository"]["full_name"].as_str().unwrap_or_default();
    let Some(id) = s.state().repos.get(name).map(|r| r.id) else {
        return body.to_vec();
    };
    if v["repository"]["id"] == id {
        return body.to_vec();
    }
    v["repository"]["id"] = id.into();
    serde_json::to_vec(&v).unwrap()
}

/// Sends logged delivery `id` again (GitHub's "Redeliver"); `None` when there is no such one.
pub(super) async fn redeliver(s: &Shared, id: u64) -> Option<Sent> {
    let d = s
        .extras()
        .hook_deliveries
        .iter()
        .find(|d| d.id == id)
        .cloned()?;
    Some(deliver(s, &d.event, &d.body, Some(&d.guid)).await)
}

impl FakeGitHub {
    /// Sends a signed webhook and logs the delivery (a new delivery id unless `guid` is given).
    pub async fn deliver(&self, event: &str, body: &[u8], guid: Option<&str>) -> Sent {
        deliver(&self.shared(), event, body, guid).await
    }

    /// The delivery log, oldest first.
    pub fn hook_deliveries(&self) -> Vec<HookDelivery> {
        self.extras().hook_deliveries.clone()
    }
}
