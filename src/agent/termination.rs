//! When an agent stops: a maximum of iterations, three consecutive tool failures, oscillation
//! (the same tool with the same arguments three times in the last five calls), or a spent
//! budget. Every stop records its reason.

use std::collections::VecDeque;

use serde::Serialize;

/// Why a loop stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without asking for a tool.
    Finished,
    MaxIterations {
        limit: u32,
    },
    ToolFailures {
        count: u32,
    },
    Oscillation {
        tool: String,
    },
    Budget {
        message: String,
    },
    /// Something outside asked the run to stop (a person pushed to the branch it works on).
    Interrupted {
        why: String,
    },
}

impl StopReason {
    pub fn finished(&self) -> bool {
        matches!(self, StopReason::Finished)
    }

    /// A sentence for people.
    pub fn describe(&self) -> String {
        match self {
            StopReason::Finished => "finished".into(),
            StopReason::MaxIterations { limit } => {
                format!("stopped after {limit} iterations without finishing")
            }
            StopReason::ToolFailures { count } => {
                format!("stopped after {count} failed tool calls in a row")
            }
            StopReason::Oscillation { tool } => format!(
                "stopped going round in circles: {tool} called with the same arguments 3 times in the last 5 calls"
            ),
            StopReason::Budget { message } => format!("stopped: {message}"),
            StopReason::Interrupted { why } => format!("stopped: {why}"),
        }
    }
}

/// Limits of one loop.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_iterations: u32,
    pub max_consecutive_failures: u32,
    /// Calls identical in tool and arguments that count as oscillation…
    pub repeats: usize,
    /// …within this many most recent calls.
    pub window: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            max_consecutive_failures: 3,
            repeats: 3,
            window: 5,
        }
    }
}

/// Watches tool calls for the stop conditions.
#[derive(Debug)]
pub struct Tracker {
    limits: Limits,
    recent: VecDeque<(String, String)>,
    failures: u32,
}

impl Tracker {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            recent: VecDeque::new(),
            failures: 0,
        }
    }

    /// Records a tool call; returns a reason to stop, if any.
    pub fn record(&mut self, tool: &str, arguments: &str, ok: bool) -> Option<StopReason> {
        self.failures = if ok { 0 } else { self.failures + 1 };
        if self.failures >= self.limits.max_consecutive_failures {
            return Some(StopReason::ToolFailures {
                count: self.failures,
            });
        }
        let call = (tool.to_owned(), canonical(arguments));
        self.recent.push_back(call.clone());
        while self.recent.len() > self.limits.window {
            self.recent.pop_front();
        }
        let same = self.recent.iter().filter(|c| **c == call).count();
        (same >= self.limits.repeats).then(|| StopReason::Oscillation {
            tool: tool.to_owned(),
        })
    }
}

/// Arguments compared by meaning: JSON re-serialised with sorted keys, else the raw text.
fn canonical(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| arguments.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_failures_in_a_row_stop() {
        let mut t = Tracker::new(Limits::default());
        assert_eq!(t.record("read_file", r#"{"path":"a"}"#, false), None);
        assert_eq!(
            t.record("read_file", r#"{"path":"b"}"#, true),
            None,
            "a success resets the count"
        );
        assert_eq!(t.record("read_file", r#"{"path":"c"}"#, false), None);
        assert_eq!(t.record("read_file", r#"{"path":"d"}"#, false), None);
        assert_eq!(
            t.record("read_file", r#"{"path":"e"}"#, false),
            Some(StopReason::ToolFailures { count: 3 })
        );
    }

    #[test]
    fn the_same_call_three_times_in_five_is_oscillation() {
        let mut t = Tracker::new(Limits::default());
        let a = r#"{"path":"a.py","content":"x"}"#;
        let a_reordered = r#"{ "content": "x", "path": "a.py" }"#;
        assert_eq!(t.record("write_file", a, true), None);
        assert_eq!(t.record("read_file", r#"{"path":"a.py"}"#, true), None);
        assert_eq!(t.record("write_file", a_reordered, true), None);
        assert_eq!(t.record("list_files", "{}", true), None);
        assert_eq!(
            t.record("write_file", a, true),
            Some(StopReason::Oscillation {
                tool: "write_file".into()
            })
        );
    }

    #[test]
    fn repeats_outside_the_window_do_not_count() {
        let mut t = Tracker::new(Limits::default());
        for i in 0..12 {
            let args = if i % 4 == 0 {
                "{}".to_owned()
            } else {
                format!("{{\"path\":\"{i}\"}}")
            };
            assert_eq!(t.record("list_files", &args, true), None, "call {i}");
        }
    }
}
