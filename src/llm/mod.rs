//! Model providers. [`LlmClient`] sends a conversation with tools to one routed model and
//! returns its next message, retrying what is worth retrying: 429 and 5xx answers and transport
//! failures, honouring `Retry-After`, capped in attempts and in time. Providers: the
//! OpenAI-compatible chat-completions API ([`openai`]: OpenAI, OpenRouter, vLLM, Ollama,
//! llama.cpp's server) and Anthropic's Messages API ([`anthropic`]). [`routing`] picks a model
//! per role; [`budget`] keeps the ledger and the caps.

pub mod anthropic;
pub mod budget;
pub mod openai;
pub mod routing;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use tracing::warn;

/// One chat message.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Message {
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self {
            role: "system".into(),
            content: Some(text.into()),
            ..Self::default()
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: "user".into(),
            content: Some(text.into()),
            ..Self::default()
        }
    }

    pub fn tool_result(call_id: &str, text: impl Into<String>) -> Self {
        Self {
            role: "tool".into(),
            content: Some(text.into()),
            tool_call_id: Some(call_id.to_owned()),
            ..Self::default()
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, as the model wrote it (it may be malformed).
    pub arguments: String,
}

/// A tool the model may call, with its JSON-Schema parameters.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

/// The model's answer to one request.
#[derive(Debug, Clone)]
pub struct Completion {
    pub message: Message,
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

/// Errors callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("model provider unreachable at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("model provider answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("model provider sent an answer we cannot read: {0}")]
    Decode(String),
}

/// Which API a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI-compatible chat completions.
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

/// One model endpoint.
#[derive(Clone)]
pub struct Route {
    pub provider: Provider,
    pub base_url: url::Url,
    pub api_key: Option<SecretString>,
    pub model: String,
    pub temperature: f32,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url.as_str())
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .finish_non_exhaustive()
    }
}

/// One request to a model.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// Ask the model to call a tool (falls back to letting it choose when the provider
    /// refuses that).
    pub require_tool: bool,
    /// How many times this same step was asked before: the temperature rises a little with
    /// each, so a retried step does not collapse onto the same answer.
    pub step_retry: u32,
}

impl<'a> Request<'a> {
    pub fn new(messages: &'a [Message], tools: &'a [ToolSpec]) -> Self {
        Self {
            messages,
            tools,
            require_tool: false,
            step_retry: 0,
        }
    }
}

/// The outcome of one HTTP attempt, as a provider module reports it.
pub(crate) enum Attempt {
    Done(Completion),
    /// Worth another try, after `wait` when the provider said how long.
    Retry {
        wait: Option<Duration>,
        error: LlmError,
    },
    /// The provider refused `tool_choice: required` (or its equivalent): resend without it.
    RequiredUnsupported,
    Fatal(LlmError),
}

/// Caps on retrying one request.
#[derive(Debug, Clone, Copy)]
pub struct RetryLimits {
    pub max_attempts: u32,
    pub max_elapsed: Duration,
    /// A `Retry-After` longer than this is not waited for: the step fails (and its job retries).
    pub max_wait: Duration,
    /// One attempt's limit, from connecting to the last byte of the answer; a model that takes
    /// longer is asked again.
    pub attempt_timeout: Duration,
}

impl Default for RetryLimits {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            max_elapsed: Duration::from_secs(600),
            max_wait: Duration::from_secs(120),
            attempt_timeout: Duration::from_secs(300),
        }
    }
}

fn http_client(limits: &RetryLimits) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10).min(limits.attempt_timeout))
        .timeout(limits.attempt_timeout)
        .build()?)
}

/// A client for one routed model; cheap to clone.
#[derive(Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    route: Arc<Route>,
    limits: RetryLimits,
    /// Set once the provider refused `tool_choice: required`.
    required_unsupported: Arc<AtomicBool>,
}

impl LlmClient {
    pub fn new(route: Route) -> anyhow::Result<Self> {
        let limits = RetryLimits::default();
        Ok(Self {
            http: http_client(&limits)?,
            route: Arc::new(route),
            limits,
            required_unsupported: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn with_limits(mut self, limits: RetryLimits) -> anyhow::Result<Self> {
        self.http = http_client(&limits)?;
        self.limits = limits;
        Ok(self)
    }

    pub fn route(&self) -> &Route {
        &self.route
    }

    /// The temperature for a step asked for the `step_retry`-th time.
    pub fn temperature(&self, step_retry: u32) -> f32 {
        (self.route.temperature + 0.15 * step_retry as f32).min(1.0)
    }

    /// Sends the conversation and returns the model's next message.
    pub async fn complete(&self, req: Request<'_>) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let temperature = self.temperature(req.step_retry);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let require = req.require_tool
                && !req.tools.is_empty()
                && !self.required_unsupported.load(Ordering::Relaxed);
            let result = match self.route.provider {
                Provider::Openai => {
                    openai::send(&self.http, &self.route, &req, require, temperature).await
                }
                Provider::Anthropic => {
                    anthropic::send(&self.http, &self.route, &req, require, temperature).await
                }
            };
            let (wait, error) = match result {
                Attempt::Done(c) => return Ok(c),
                Attempt::Fatal(e) => return Err(e),
                Attempt::RequiredUnsupported => {
                    warn!(model = %self.route.model, "the provider refuses tool_choice=required; asking with tool_choice=auto");
                    self.required_unsupported.store(true, Ordering::Relaxed);
                    attempt -= 1;
                    continue;
                }
                Attempt::Retry { wait, error } => (wait, error),
            };
            let wait = wait.unwrap_or_else(|| backoff(attempt));
            let out_of_time = started.elapsed() + wait > self.limits.max_elapsed;
            if attempt >= self.limits.max_attempts || out_of_time || wait > self.limits.max_wait {
                return Err(error);
            }
            warn!(attempt, ?wait, error = %error, "model call failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500 * 2u64.pow(attempt.min(6)))
}

/// Reads `Retry-After` from an answer: seconds, or an HTTP date (a date past is no wait).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    parse_retry_after(
        headers.get("retry-after")?.to_str().ok()?,
        chrono::Utc::now(),
    )
}

fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some(
        (at.with_timezone(&chrono::Utc) - now)
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}

/// Classifies a non-success answer: 429 and 5xx are worth retrying, the rest are not.
pub(crate) async fn failed(resp: reqwest::Response) -> Attempt {
    let status = resp.status();
    let wait = retry_after(resp.headers());
    let mut message = resp.text().await.unwrap_or_default();
    message.truncate(500);
    let error = LlmError::Status {
        status: status.as_u16(),
        message,
    };
    if status.as_u16() == 429 || status.is_server_error() {
        Attempt::Retry { wait, error }
    } else {
        Attempt::Fatal(error)
    }
}

/// A transport failure (refused connection, timeout): worth retrying.
pub(crate) fn unreachable(url: &str, e: reqwest::Error) -> Attempt {
    Attempt::Retry {
        wait: None,
        error: LlmError::Unreachable {
            url: url.to_owned(),
            message: e.to_string(),
        },
    }
}

#[cfg(test)]
mod retry_after_tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = chrono::DateTime::parse_from_rfc3339("2015-10-21T07:27:30Z")
            .unwrap()
            .to_utc();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
