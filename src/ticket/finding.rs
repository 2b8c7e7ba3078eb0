//! A [`Finding`]: one problem with an agent's output, a gate's result or a review, in the form
//! every check reports and every agent reads back (a short stable code, a message for the
//! model and for people, and the file it is about).

use serde::{Deserialize, Serialize};

/// One problem with an output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// A short stable code (`missing_steps`, `vague_requirement`, `test_failed`…).
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Finding {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
            path: None,
        }
    }
}
