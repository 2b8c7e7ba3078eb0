//! Anthropic's Messages API: `POST {base}/v1/messages` with `x-api-key` and
//! `anthropic-version`. Our conversation is OpenAI-shaped; this module translates it: system
//! messages become `system`, tool calls become `tool_use` blocks, tool results become
//! `tool_result` blocks in a user turn; and translates the answer back.

use secrecy::ExposeSecret as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Attempt, Completion, FunctionCall, LlmError, Message, Request, Route, ToolCall, Usage, failed,
    unreachable,
};

/// The API version this module speaks.
const VERSION: &str = "2023-06-01";
const MAX_TOKENS: u32 = 8192;

pub(super) async fn send(
    http: &reqwest::Client,
    route: &Route,
    req: &Request<'_>,
    require: bool,
    temperature: f32,
) -> Attempt {
    let base = route.base_url.as_str().trim_end_matches('/');
    let url = if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    };
    let mut body = translate(req.messages);
    body["model"] = route.model.clone().into();
    body["max_tokens"] = MAX_TOKENS.into();
    body["temperature"] = temperature.into();
    if !req.tools.is_empty() {
        let tools: Vec<Value> =
            req.tools.iter().map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters })).collect();
        body["tools"] = tools.into();
        body["tool_choice"] = json!({ "type": if require { "any" } else { "auto" } });
    }
    let mut http_req = http
        .post(&url)
        .header("anthropic-version", VERSION)
        .json(&body);
    if let Some(key) = &route.api_key {
        http_req = http_req.header("x-api-key", key.expose_secret());
    }
    let resp = match http_req.send().await {
        Ok(r) => r,
        Err(e) => return unreachable(&url, e),
    };
    // Anthropic's "overloaded" is 529: retry it like a 5xx (which it is).
    if !resp.status().is_success() {
        return failed(resp).await;
    }
    match resp.bytes().await {
        Ok(bytes) => match decode(&bytes) {
            Ok(c) => Attempt::Done(c),
            Err(e) => Attempt::Retry {
                wait: None,
                error: e,
            },
        },
        Err(e) => unreachable(&url, e),
    }
}

/// Our messages as a Messages-API body (`system` and `messages`).
pub fn translate(messages: &[Message]) -> Value {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == "system")
        .filter_map(|m| m.content.as_deref())
        .collect();
    let mut out: Vec<Value> = Vec::new();
    for m in messages.iter().filter(|m| m.role != "system") {
        let (role, blocks) = match m.role.as_str() {
            "assistant" => {
                let mut blocks = Vec::new();
                if let Some(text) = m.content.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({ "type": "text", "text": text }));
                }
                for call in &m.tool_calls {
                    // Malformed arguments are kept as a string field, so the model sees what it sent.
                    let input = serde_json::from_str::<Value>(&call.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(
                            || json!({ "_unparsed_arguments": call.function.arguments }),
                        );
                    blocks.push(json!({ "type": "tool_use", "id": call.id, "name": call.function.name, "input": input }));
                }
                ("assistant", blocks)
            }
            "tool" => {
                let block = json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content.clone().unwrap_or_default(),
                });
                ("user", vec![block])
            }
            _ => (
                "user",
                vec![json!({ "type": "text", "text": m.content.clone().unwrap_or_default() })],
            ),
        };
        // The API wants alternating turns: consecutive turns of one role are merged.
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({ "role": role, "content": blocks })),
        }
    }
    let mut body = json!({ "messages": out });
    if !system.is_empty() {
        body["system"] = system.join("\n\n").into();
    }
    body
}

/// A Messages-API answer as our [`Completion`].
pub fn decode(bytes: &[u8]) -> Result<Completion, LlmError> {
    #[derive(Deserialize)]
    struct AnthropicUsage {
        #[serde(default)]
        input_tokens: u64,
        #[serde(default)]
        output_tokens: u64,
    }
    #[derive(Deserialize)]
    struct Body {
        content: Vec<Value>,
        #[serde(default)]
        stop_reason: Option<String>,
        #[serde(default)]
        usage: Option<AnthropicUsage>,
    }
    let body: Body = serde_json::from_slice(bytes).map_err(|e| LlmError::Decode(e.to_string()))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in &body.content {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block["id"].as_str().unwrap_or_default().to_owned(),
                kind: "function".into(),
                function: FunctionCall {
                    name: block["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: block["input"].to_string(),
                },
            }),
            _ => {}
        }
    }
    let usage = body
        .usage
        .map(|u| Usage {
            prompt_tokens: u.input_tokens,
            completion_tokens: u.output_tokens,
        })
        .unwrap_or_default();
    let message = Message {
        role: "assistant".into(),
        content: (!text.is_empty()).then_some(text),
        tool_calls,
        tool_call_id: None,
    };
    Ok(Completion {
        message,
        finish_reason: body.stop_reason,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_translate_to_alternating_turns() {
        let call = ToolCall {
            id: "t1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "read_file".into(),
                arguments: r#"{"path":"a.py"}"#.into(),
            },
        };
        let bad = ToolCall {
            id: "t2".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "x".into(),
                arguments: "{oops".into(),
            },
        };
        let msgs = vec![
            Message::system("You are careful."),
            Message::user("Fix it."),
            Message {
                role: "assistant".into(),
                content: Some("Looking.".into()),
                tool_calls: vec![call, bad],
                tool_call_id: None,
            },
            Message::tool_result("t1", "x = 1"),
            Message::tool_result("t2", "{\"error\":\"bad_arguments\"}"),
        ];
        let body = translate(&msgs);
        assert_eq!(body["system"], "You are careful.");
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[1]["content"][1],
            json!({"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}})
        );
        assert_eq!(m[1]["content"][2]["input"]["_unparsed_arguments"], "{oops");
        assert_eq!(m[2]["role"], "user");
        assert_eq!(
            m[2]["content"].as_array().unwrap().len(),
            2,
            "tool results merged into one user turn"
        );
        assert_eq!(m[2]["content"][0]["tool_use_id"], "t1");
    }

    #[test]
    fn answers_decode_with_tool_use_and_usage() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.py"}}],"stop_reason":"tool_use","usage":{"input_tokens":12,"output_tokens":5}}"#;
        let c = decode(body).unwrap();
        assert_eq!(c.message.content.as_deref(), Some("Reading."));
        assert_eq!(c.message.tool_calls[0].function.name, "read_file");
        assert_eq!(
            c.message.tool_calls[0].function.arguments,
            r#"{"path":"a.py"}"#
        );
        assert_eq!(
            c.usage,
            Usage {
                prompt_tokens: 12,
                completion_tokens: 5
            }
        );
        assert_eq!(c.finish_reason.as_deref(), Some("tool_use"));
    }
}
