//! Progress events of an agent run, for the ticket's timeline: stage_enter, stage_exit,
//! iteration_start, tool_start, tool_complete, thinking, llm_usage, result. They go through a channel
//! so the loop never waits on whoever stores or streams them.

use serde::Serialize;
use tokio::sync::mpsc;

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentEvent {
    StageEnter {
        role: String,
        stage: String,
    },
    StageExit {
        role: String,
        stage: String,
        detail: String,
    },
    IterationStart {
        role: String,
        iteration: u32,
    },
    ToolStart {
        role: String,
        name: String,
        args: String,
    },
    ToolComplete {
        role: String,
        name: String,
        args: String,
        millis: u64,
        ok: bool,
        error: Option<String>,
        /// For a command (`shell`, `run_command`): its status line ("exit code 1 after 0.4 s").
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<String>,
    },
    /// What the model said alongside its tool calls.
    Thinking {
        role: String,
        text: String,
    },
    LlmUsage {
        role: String,
        model: String,
        prompt_tokens: u64,
        completion_tokens: u64,
        cost_usd: f64,
        millis: u64,
    },
    /// How the role's run ended: after its tool calls, in the same order on the timeline.
    Result {
        role: String,
        stop: String,
        iterations: u32,
        files: Vec<String>,
        summary: String,
    },
}

impl AgentEvent {
    /// The event's kind, as stored.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::StageEnter { .. } => "stage_enter",
            AgentEvent::StageExit { .. } => "stage_exit",
            AgentEvent::IterationStart { .. } => "iteration_start",
            AgentEvent::ToolStart { .. } => "tool_start",
            AgentEvent::ToolComplete { .. } => "tool_complete",
            AgentEvent::Thinking { .. } => "thinking",
            AgentEvent::LlmUsage { .. } => "llm_usage",
            AgentEvent::Result { .. } => "result",
        }
    }
}

/// Where events go; cheap to clone. A sink nobody listens to drops them.
#[derive(Debug, Clone)]
pub struct EventSink(Option<mpsc::UnboundedSender<AgentEvent>>);

impl EventSink {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self(Some(tx)), rx)
    }

    /// A sink that drops everything.
    pub fn discard() -> Self {
        Self(None)
    }

    pub fn emit(&self, event: AgentEvent) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(event);
        }
    }
}

/// Tool-call arguments for the timeline: `key=value` pairs, short values whole and long ones as
/// their length (the path of a `write_file` shows, not its content); anything but a JSON object
/// as text.
pub fn summarize_args(raw: &str, max: usize) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(raw) else {
        return summarize(raw, max);
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            // A command line is what the timeline is for; contents are shown by their size.
            let room = if k == "command" { max } else { 60 };
            match text.chars().count() {
                n if n > room => format!("{k}=<{n} chars>"),
                _ => format!("{k}={text}"),
            }
        })
        .collect();
    summarize(&parts.join(" "), max)
}

/// A short, single-line view of text for the timeline (arguments, thoughts).
pub fn summarize(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > max {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_arguments_show_short_values_and_the_length_of_long_ones() {
        let raw = format!(
            r#"{{"content":"{}","path":"calc.py","line":3}}"#,
            "x".repeat(500)
        );
        assert_eq!(
            summarize_args(&raw, 160),
            "content=<500 chars> line=3 path=calc.py"
        );
        assert_eq!(summarize_args("not json", 160), "not json");
    }
}
