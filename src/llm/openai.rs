//! The OpenAI-compatible chat-completions API: `POST {base}/chat/completions` with `tools` and
//! `tool_choice`, a bearer key, and `choices[0].message` in the answer.

use secrecy::ExposeSecret as _;
use serde::Deserialize;
use serde_json::json;

use super::{Attempt, Completion, LlmError, Message, Request, Route, Usage, failed, unreachable};

pub(super) async fn send(
    http: &reqwest::Client,
    route: &Route,
    req: &Request<'_>,
    require: bool,
    temperature: f32,
) -> Attempt {
    let url = format!(
        "{}/chat/completions",
        route.base_url.as_str().trim_end_matches('/')
    );
    let mut body =
        json!({ "model": route.model, "messages": req.messages, "temperature": temperature });
    if !req.tools.is_empty() {
        let tools: Vec<_> = req
            .tools
            .iter()
            .map(|t| json!({ "type": "function", "function": t }))
            .collect();
        body["tools"] = tools.into();
        body["tool_choice"] = if require { "required" } else { "auto" }.into();
    }
    let mut http_req = http.post(&url).json(&body);
    if let Some(key) = &route.api_key {
        http_req = http_req.bearer_auth(key.expose_secret());
    }
    let resp = match http_req.send().await {
        Ok(r) => r,
        Err(e) => return unreachable(&url, e),
    };
    if !resp.status().is_success() {
        let status = resp.status();
        let attempt = failed(resp).await;
        if require
            && status.as_u16() == 400
            && let Attempt::Fatal(LlmError::Status { message, .. }) = &attempt
            && message.contains("tool_choice")
        {
            return Attempt::RequiredUnsupported;
        }
        return attempt;
    }
    match resp.bytes().await {
        Ok(bytes) => match decode(&bytes) {
            Ok(c) => Attempt::Done(c),
            // A cut or garbled answer: asking again may well work.
            Err(e) => Attempt::Retry {
                wait: None,
                error: e,
            },
        },
        Err(e) => unreachable(&url, e),
    }
}

fn decode(bytes: &[u8]) -> Result<Completion, LlmError> {
    #[derive(Deserialize)]
    struct Choice {
        message: Message,
        #[serde(default)]
        finish_reason: Option<String>,
    }
    #[derive(Deserialize)]
    struct Body {
        choices: Vec<Choice>,
        #[serde(default)]
        usage: Option<Usage>,
    }
    let body: Body = serde_json::from_slice(bytes).map_err(|e| LlmError::Decode(e.to_string()))?;
    let choice = body
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| LlmError::Decode("no choices in the answer".into()))?;
    Ok(Completion {
        message: choice.message,
        finish_reason: choice.finish_reason,
        usage: body.usage.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_tool_calls_and_usage() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#;
        let c = decode(body).unwrap();
        assert_eq!(c.message.tool_calls[0].function.name, "read_file");
        assert_eq!(
            c.usage,
            Usage {
                prompt_tokens: 10,
                completion_tokens: 3
            }
        );
        assert!(decode(b"{\"choices\":[]}").is_err());
        assert!(decode(b"{\"choi").is_err());
    }
}
