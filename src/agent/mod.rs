//! Agents: a model in a loop with tools ([`session`]), bounded by [`termination`] rules and the
//! budget, reporting progress as [`events`], given a bounded view of the repository by
//! [`context`] and instructions by [`prompts`]. [`tools`] act on one worktree only (see
//! [`paths`]); [`heal`] is the Validator → Reflector → Corrector loop around their output.

pub mod cite;
pub mod context;
pub mod events;
pub mod heal;
pub mod paths;
pub mod prompts;
pub mod session;
pub mod termination;
pub mod tools;

use serde::Serialize;

pub use events::{AgentEvent, EventSink};
pub use session::{Interrupt, Outcome, Session};
pub use termination::{Limits, StopReason};
pub use tools::Toolbox;

/// A tool failure, sent back to the model as `{"error": kind, "message": …}`.
#[derive(Debug, Clone, thiserror::Error, Serialize)]
#[error("{kind}: {message}")]
pub struct ToolError {
    pub kind: &'static str,
    pub message: String,
}

impl ToolError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn path(path: &str, problem: &str) -> Self {
        let mut shown = path.to_owned();
        shown.truncate(200);
        Self::new("bad_path", format!("{shown:?} {problem}"))
    }

    pub(crate) fn to_json(&self) -> String {
        serde_json::json!({ "error": self.kind, "message": self.message }).to_string()
    }
}
