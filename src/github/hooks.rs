//! Calls made as the App itself (its JWT, not an installation token): the log of webhook
//! deliveries GitHub keeps for the App, and asking GitHub to send one again.

use chrono::{DateTime, Utc};
use http::Method;
use serde::Deserialize;

use super::{GitHubApp, GitHubError, Idempotent, exchange};

/// One delivery GitHub tried to make.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HookDelivery {
    pub id: u64,
    /// The `X-GitHub-Delivery` id (the same on a redelivery).
    pub guid: String,
    pub delivered_at: DateTime<Utc>,
    #[serde(default)]
    pub redelivery: bool,
    /// Our answer's status; 0 when GitHub could not connect.
    #[serde(default)]
    pub status_code: u16,
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub action: Option<String>,
}

impl HookDelivery {
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status_code)
    }
}

/// Pages of 100 read at most per listing (GitHub keeps deliveries for three days).
const MAX_PAGES: usize = 20;

impl GitHubApp {
    /// The App's webhook deliveries from newest back to `since`.
    pub async fn hook_deliveries(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<HookDelivery>, GitHubError> {
        let mut out = Vec::new();
        let mut route = "/app/hook/deliveries?per_page=100".to_owned();
        for _ in 0..MAX_PAGES {
            let (bytes, headers) =
                exchange(&self.app, None, Method::GET, &route, None, Idempotent::Yes).await?;
            let page: Vec<HookDelivery> =
                serde_json::from_slice(&bytes).map_err(|e| GitHubError::Decode {
                    what: "GET /app/hook/deliveries".into(),
                    message: e.to_string(),
                })?;
            let reached_since = page.iter().any(|d| d.delivered_at < since);
            out.extend(page.into_iter().filter(|d| d.delivered_at >= since));
            let next = headers
                .get(http::header::LINK)
                .and_then(|v| v.to_str().ok())
                .and_then(next_cursor);
            match next {
                Some(cursor) if !reached_since => {
                    route = format!("/app/hook/deliveries?per_page=100&cursor={cursor}");
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// Asks GitHub to send delivery `id` again.
    pub async fn redeliver(&self, id: u64) -> Result<(), GitHubError> {
        let route = format!("/app/hook/deliveries/{id}/attempts");
        // A repeated redelivery is harmless: the receiver keeps one copy per delivery id.
        exchange(&self.app, None, Method::POST, &route, None, Idempotent::Yes).await?;
        Ok(())
    }
}

/// The `cursor` of the `rel="next"` link of a `Link` header.
fn next_cursor(link: &str) -> Option<String> {
    link.split(',')
        .find(|part| part.contains("rel=\"next\""))
        .and_then(|part| {
            let url = part
                .split(';')
                .next()?
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>');
            let url = url::Url::parse(url).ok()?;
            url.query_pairs()
                .find(|(k, _)| k == "cursor")
                .map(|(_, v)| v.into_owned())
        })
        .filter(|c| {
            c.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_page_comes_from_the_link_header() {
        let link = "<https://api.github.com/app/hook/deliveries?per_page=100&cursor=v1_12077215967>; rel=\"next\"";
        assert_eq!(next_cursor(link).as_deref(), Some("v1_12077215967"));
        let prev_only = "<https://api.github.com/app/hook/deliveries?cursor=v1_1>; rel=\"prev\"";
        assert_eq!(next_cursor(prev_only), None);
        assert_eq!(
            next_cursor("<https://x/?cursor=a%26b>; rel=\"next\""),
            None,
            "odd cursors are refused"
        );
    }
}
