//! A fake model server over real HTTP on 127.0.0.1, speaking the OpenAI-compatible
//! chat-completions API (`…/chat/completions`) and Anthropic's Messages API (`…/v1/messages`).
//! It replays a scripted conversation per role (the role is read from the system prompt's `# Role: <Name>` line),
//! including tool calls and HTTP failures, and records every request. It lists models
//! (`GET …/models`, `GET …/models/{id}`) and can insist on an API key, like a real provider.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

/// One scripted turn of the model.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Step {
    /// Ask for these tool calls.
    Tools { tools: Vec<Call> },
    /// Answer with text and no tool call.
    Say { say: String },
    /// Answer with an HTTP error (429 with `Retry-After`, a 500…).
    Fail {
        status: u16,
        retry_after: Option<u64>,
    },
}

/// A scripted tool call. `arguments` is a JSON object, or a string sent as it is (to script
/// malformed arguments).
#[derive(Debug, Clone, Deserialize)]
pub struct Call {
    pub name: String,
    pub arguments: Value,
}

impl Step {
    pub fn tool(name: &str, arguments: Value) -> Self {
        Step::Tools {
            tools: vec![Call {
                name: name.into(),
                arguments,
            }],
        }
    }

    pub fn say(text: &str) -> Self {
        Step::Say { say: text.into() }
    }
}

/// Steps per conversation: the key is a lower-case role (`builder`), or a role and a text its
/// conversation's first user message contains (`builder|attempt 2`) for a later conversation of
/// that role. The answer to a request is the step at the number of assistant turns the request
/// holds, so a conversation replayed (after a crash, say) gets the same answers.
pub type Script = HashMap<String, Vec<Step>>;

#[derive(Default)]
struct Inner {
    script: Script,
    /// Scripted failures already answered: `(script key, step)`.
    failed: std::collections::HashSet<(String, usize)>,
    /// Every request body, with the role it was attributed to.
    requests: Vec<(String, Value)>,
    /// Which API each request used (`openai` or `anthropic`).
    apis: Vec<&'static str>,
    /// Answer 400 to `tool_choice: "required"`, as some providers do.
    reject_required: bool,
    exhausted: u32,
    /// Model ids `GET …/models` lists and `GET …/models/{id}` finds.
    models: Vec<String>,
    /// When set, a request without this key (bearer or `x-api-key`) is answered 401.
    api_key: Option<String>,
    /// Requests of this role wait for [`FakeLlm::release`]; how many wait now.
    held: Option<(String, Arc<tokio::sync::Semaphore>)>,
    waiting: u32,
}

pub struct FakeLlm {
    pub url: String,
    pub addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeLlm {
    pub async fn start(script: Script) -> Self {
        Self::start_on("127.0.0.1:0".parse().unwrap(), script).await
    }

    pub async fn start_on(addr: SocketAddr, script: Script) -> Self {
        let inner = Arc::new(Mutex::new(Inner {
            script,
            ..Inner::default()
        }));
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url: format!("http://{addr}/v1"),
            addr,
            inner,
            server,
        }
    }

    /// Request bodies the fake received for `role`.
    pub fn requests(&self, role: &str) -> Vec<Value> {
        self.inner
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|(r, _)| r == role)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// From now on, refuse `tool_choice: "required"` with a 400.
    pub fn reject_required(&self) {
        self.inner.lock().unwrap().reject_required = true;
    }

    /// The models the fake says it serves.
    pub fn set_models(&self, ids: &[&str]) {
        self.inner.lock().unwrap().models = ids.iter().map(|m| (*m).to_owned()).collect();
    }

    /// From now on, requests of `role` wait (counted by [`FakeLlm::waiting`]) until
    /// [`FakeLlm::release`]: a test acts while the bot is in that role's call.
    pub fn hold(&self, role: &str) {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        self.inner.lock().unwrap().held = Some((role.to_owned(), gate));
    }

    /// How many held requests wait now.
    pub fn waiting(&self) -> u32 {
        self.inner.lock().unwrap().waiting
    }

    /// Lets held requests through, and those that come later.
    pub fn release(&self) {
        if let Some((_, gate)) = self.inner.lock().unwrap().held.take() {
            gate.add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
        }
    }

    /// From now on, answer 401 to any request that does not carry `key`.
    pub fn require_key(&self, key: &str) {
        self.inner.lock().unwrap().api_key = Some(key.to_owned());
    }

    /// Which API each request used, in order (`rejected` for a refused one).
    pub fn apis(&self) -> Vec<&'static str> {
        self.inner.lock().unwrap().apis.clone()
    }

    /// How many requests came after their role's script ran out.
    pub fn exhausted(&self) -> u32 {
        self.inner.lock().unwrap().exhausted
    }
}

/// `# Role: Builder` in the first system message → `builder`.
/// The script key for a request of `role`: `role|<text>` when `<text>` appears in the
/// conversation's first user message (the first such key wins), else `role`.
fn script_key(script: &Script, role: &str, req: &Value) -> String {
    let first_user = req["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default();
    let mut keys: Vec<&String> = script
        .keys()
        .filter(|k| k.strip_prefix(role).is_some_and(|r| r.starts_with('|')))
        .collect();
    keys.sort();
    keys.into_iter()
        .find(|k| {
            k.split_once('|')
                .is_some_and(|(_, when)| first_user.contains(when))
        })
        .cloned()
        .unwrap_or_else(|| role.to_owned())
}

/// The assistant turns a request's conversation already holds.
fn assistant_turns(req: &Value) -> usize {
    req["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// `# Role: Builder` in the system prompt → `builder` (OpenAI: the first system message;
/// Anthropic: the `system` field).
fn role_of(body: &Value) -> String {
    let system = body["system"].as_str().or_else(|| {
        body["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == "system"))
            .and_then(|m| m["content"].as_str())
    });
    system
        .and_then(|c| c.lines().find_map(|l| l.trim().strip_prefix("# Role:")))
        .map(|r| r.trim().to_lowercase())
        .unwrap_or_else(|| "default".into())
}

async fn handle(
    State(inner): State<Arc<Mutex<Inner>>>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response<Body> {
    if let Some(refused) = refuse_without_key(&inner, &headers) {
        return refused;
    }
    if method == axum::http::Method::GET {
        return models(
            &inner,
            uri.path(),
            headers.contains_key("anthropic-version"),
        );
    }
    let Ok(req) = serde_json::from_slice::<Value>(&body) else {
        return reply(
            StatusCode::BAD_REQUEST,
            json!({ "error": { "message": "invalid JSON" } }),
            None,
        );
    };
    let anthropic = uri.path().ends_with("/messages");
    if anthropic && headers.get("anthropic-version").is_none() {
        return reply(
            StatusCode::BAD_REQUEST,
            json!({ "type": "error", "error": { "message": "anthropic-version header is required" } }),
            None,
        );
    }
    if inner.lock().unwrap().reject_required && req["tool_choice"] == "required" {
        inner.lock().unwrap().apis.push("rejected");
        return reply(
            StatusCode::BAD_REQUEST,
            json!({ "error": { "message": "tool_choice 'required' is not supported" } }),
            None,
        );
    }
    let role = role_of(&req);
    let held = {
        let mut st = inner.lock().unwrap();
        let gate = st
            .held
            .as_ref()
            .filter(|(r, _)| *r == role)
            .map(|(_, g)| g.clone());
        st.waiting += u32::from(gate.is_some());
        gate
    };
    if let Some(gate) = held {
        let _ = gate.acquire().await;
        inner.lock().unwrap().waiting -= 1;
    }
    let step = {
        let mut st = inner.lock().unwrap();
        st.requests.push((role.clone(), req.clone()));
        st.apis.push(if anthropic { "anthropic" } else { "openai" });
        let key = script_key(&st.script, &role, &req);
        // The step is where the conversation stands: the assistant turns it holds so far, plus
        // the scripted failures already served at or before it. A conversation replayed after
        // a crash gets the same answers.
        let mut i = assistant_turns(&req);
        let mut step = None;
        while let Some(s) = st.script.get(&key).and_then(|s| s.get(i)).cloned() {
            if matches!(s, Step::Fail { .. }) && st.failed.contains(&(key.clone(), i)) {
                i += 1;
                continue;
            }
            if matches!(s, Step::Fail { .. }) {
                st.failed.insert((key.clone(), i));
            }
            step = Some(s);
            break;
        }
        if step.is_none() {
            st.exhausted += 1;
        }
        step.unwrap_or_else(|| Step::say("(script exhausted)"))
    };
    let prompt_tokens = body.len() as u64 / 4;
    if let Step::Fail {
        status,
        retry_after,
    } = step
    {
        let s = StatusCode::from_u16(status).unwrap();
        return reply(
            s,
            json!({ "error": { "message": "scripted failure" } }),
            retry_after,
        );
    }
    let answer = if anthropic {
        anthropic_answer(&step, prompt_tokens, &req)
    } else {
        openai_answer(&step, prompt_tokens, &req)
    };
    reply(StatusCode::OK, answer, None)
}

/// 401 in the provider's shape when a key is required and this request lacks it.
fn refuse_without_key(
    inner: &Mutex<Inner>,
    headers: &axum::http::HeaderMap,
) -> Option<Response<Body>> {
    let wanted = inner.lock().unwrap().api_key.clone()?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let bearer = header("authorization").and_then(|v| v.strip_prefix("Bearer "));
    if bearer == Some(wanted.as_str()) || header("x-api-key") == Some(wanted.as_str()) {
        return None;
    }
    let body = if headers.contains_key("anthropic-version") {
        json!({ "type": "error", "error": { "type": "authentication_error", "message": "invalid x-api-key" } })
    } else {
        json!({ "error": { "message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key" } })
    };
    Some(reply(StatusCode::UNAUTHORIZED, body, None))
}

/// `GET …/models` (the list, in the API's shape) and `GET …/models/{id}` (one model, or 404).
fn models(inner: &Mutex<Inner>, path: &str, anthropic: bool) -> Response<Body> {
    let ids = inner.lock().unwrap().models.clone();
    let model = |id: &str| {
        if anthropic {
            json!({ "type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z" })
        } else {
            json!({ "id": id, "object": "model", "created": 0, "owned_by": "fake" })
        }
    };
    if path.ends_with("/models") {
        let data: Vec<Value> = ids.iter().map(|id| model(id)).collect();
        let body = if anthropic {
            json!({ "data": data, "has_more": false, "first_id": ids.first(), "last_id": ids.last() })
        } else {
            json!({ "object": "list", "data": data })
        };
        return reply(StatusCode::OK, body, None);
    }
    match path.rsplit_once("/models/") {
        Some((_, id)) if ids.iter().any(|m| m == id) => reply(StatusCode::OK, model(id), None),
        Some((_, id)) => reply(
            StatusCode::NOT_FOUND,
            json!({ "type": "error", "error": { "type": "not_found_error", "message": format!("model: {id}") } }),
            None,
        ),
        None => reply(
            StatusCode::NOT_FOUND,
            json!({ "error": { "message": "not found" } }),
            None,
        ),
    }
}

fn openai_answer(step: &Step, prompt_tokens: u64, req: &Value) -> Value {
    let (message, finish) = match step {
        Step::Say { say } => (json!({ "role": "assistant", "content": say }), "stop"),
        Step::Tools { tools } => {
            let calls: Vec<Value> = tools
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let args = match &c.arguments {
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    };
                    json!({ "id": format!("call_{i}_{prompt_tokens}"), "type": "function", "function": { "name": c.name, "arguments": args } })
                })
                .collect();
            (
                json!({ "role": "assistant", "content": null, "tool_calls": calls }),
                "tool_calls",
            )
        }
        Step::Fail { .. } => unreachable!("answered above"),
    };
    let completion_tokens = message.to_string().len() as u64 / 4;
    json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": req["model"],
        "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
        "usage": { "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens },
    })
}

fn anthropic_answer(step: &Step, prompt_tokens: u64, req: &Value) -> Value {
    let (content, stop) = match step {
        Step::Say { say } => (vec![json!({ "type": "text", "text": say })], "end_turn"),
        Step::Tools { tools } => {
            let blocks = tools
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let input = match &c.arguments {
                        Value::Object(_) => c.arguments.clone(),
                        other => json!({ "_raw": other }),
                    };
                    json!({ "type": "tool_use", "id": format!("toolu_{i}_{prompt_tokens}"), "name": c.name, "input": input })
                })
                .collect();
            (blocks, "tool_use")
        }
        Step::Fail { .. } => unreachable!("answered above"),
    };
    let output_tokens = serde_json::to_string(&content).unwrap().len() as u64 / 4;
    json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": req["model"], "content": content,
        "stop_reason": stop, "usage": { "input_tokens": prompt_tokens, "output_tokens": output_tokens },
    })
}

fn reply(status: StatusCode, body: Value, retry_after: Option<u64>) -> Response<Body> {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    if let Some(s) = retry_after {
        b = b.header("retry-after", s.to_string());
    }
    b.body(Body::from(body.to_string())).unwrap()
}
