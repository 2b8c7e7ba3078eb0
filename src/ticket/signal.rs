//! [`Signal`]: what a person — or GitHub, through the bot's sweep and webhooks — asks of a
//! ticket. Signals are stored with the ticket and read by its run at every node boundary, in
//! the order they came. One enum, so a misspelt kind is a compile error, and a stored signal this
//! version cannot read is reported, never silently skipped.

use serde::{Deserialize, Serialize};

use crate::ids::CommitSha;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Signal {
    /// Stop the ticket (`/hive abort`, or the issue closed, the label removed…): `why` in words.
    Abort {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// The pull request was merged on GitHub: `sha` is the commit the merge put on the base,
    /// `by` who merged it when it was a person.
    Landed {
        pr: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha: Option<CommitSha>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// A hint for the agents (`/hive feedback`).
    Feedback { text: String },
    /// Plan again (`/hive plan`, or the issue was edited while Blocked).
    Plan,
    /// Land on `branch` instead (`/hive base`, before the code is written): plan again there.
    Base { branch: String },
    /// Approval of the plan or of the merge.
    Approve,
    /// Build from the plan: the hive's label was added to a plan-only ticket's issue (on any
    /// other ticket it changes nothing).
    Build,
    /// Rebase the pull request and check it again.
    Rebase,
    /// Try again, from a role (`architect`, `breaker`, `builder`, `critic`) or where it stopped.
    Retry {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// Something a waiting landing waits for may have happened (a check completed): try again.
    Recheck,
    /// A review by someone with write permission that asks for changes (or comments on lines):
    /// its comments are the Builder's next findings.
    Review {
        review: u64,
        findings: Vec<crate::ticket::Finding>,
        /// The comments to answer once an attempt has addressed them.
        #[serde(default)]
        threads: Vec<ReviewThread>,
    },
    /// A person pushed `sha` to the Builder's branch: a step that writes it stops at its next
    /// checkpoint and runs again from there; an approval given before is withdrawn unless the
    /// approver pushed.
    Push { sha: CommitSha },
    /// Someone without the permission to steer edited the issue after it was labelled: the
    /// agents keep the text as labelled.
    EditRefused { by: String },
    /// The base's merge queue made a group for the pull request (`merge_group`): the gates
    /// run on `head`, made on `base` (older deliveries do not say), as the check runs the
    /// queue waits for.
    Group {
        head: CommitSha,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<CommitSha>,
    },
    /// The pull request left the merge queue unmerged (`pull_request.dequeued`): GitHub's
    /// `reason`, and its head then.
    Dequeued {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        head: Option<CommitSha>,
    },
}

/// A person's comment on a line of the pull request, answered in its thread with what the
/// next passing attempt changed there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewThread {
    pub comment: u64,
    pub path: String,
    /// The head the comment was made on.
    pub commit: CommitSha,
}

impl Signal {
    /// The stored `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Signal::Abort { .. } => "abort",
            Signal::Landed { .. } => "landed",
            Signal::Feedback { .. } => "feedback",
            Signal::Plan => "plan",
            Signal::Base { .. } => "base",
            Signal::Approve => "approve",
            Signal::Build => "build",
            Signal::Rebase => "rebase",
            Signal::Retry { .. } => "retry",
            Signal::Recheck => "recheck",
            Signal::Review { .. } => "review",
            Signal::Push { .. } => "push",
            Signal::EditRefused { .. } => "edit_refused",
            Signal::Group { .. } => "group",
            Signal::Dequeued { .. } => "dequeued",
        }
    }

    /// The stored `data`: the fields beside the kind.
    pub fn data(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("kind");
        }
        v
    }

    /// Reads a stored `(kind, data)`.
    pub fn read(kind: &str, data: &serde_json::Value) -> Result<Self, String> {
        let mut v = match data {
            serde_json::Value::Object(o) => serde_json::Value::Object(o.clone()),
            _ => serde_json::json!({}),
        };
        v["kind"] = serde_json::Value::String(kind.to_owned());
        serde_json::from_value(v).map_err(|e| format!("signal {kind:?}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_round_trip_through_kind_and_data() {
        let sha = CommitSha::parse(&"a".repeat(40)).unwrap();
        for s in [
            Signal::Abort { why: None },
            Signal::Abort {
                why: Some("the issue was closed".into()),
            },
            Signal::Landed {
                pr: 2,
                sha: Some(sha),
                by: Some("alice".into()),
            },
            Signal::Feedback {
                text: "use i64".into(),
            },
            Signal::Plan,
            Signal::Base {
                branch: "release/1.x".into(),
            },
            Signal::Approve,
            Signal::Build,
            Signal::Rebase,
            Signal::Retry { role: None },
            Signal::Retry {
                role: Some("breaker".into()),
            },
            Signal::Recheck,
            Signal::EditRefused {
                by: "mallory".into(),
            },
            Signal::Push {
                sha: CommitSha::parse(&"b".repeat(40)).unwrap(),
            },
            Signal::Group {
                head: CommitSha::parse(&"c".repeat(40)).unwrap(),
                base: Some(CommitSha::parse(&"d".repeat(40)).unwrap()),
            },
            Signal::Dequeued {
                reason: "MERGE_CONFLICT".into(),
                head: None,
            },
        ] {
            assert_eq!(Signal::read(s.kind(), &s.data()), Ok(s.clone()), "{s:?}");
        }
        // Rows written before the enum: `retry` with an empty role, `landed` without a sha.
        assert_eq!(
            Signal::read("landed", &serde_json::json!({ "pr": 4 })),
            Ok(Signal::Landed {
                pr: 4,
                sha: None,
                by: None
            })
        );
        assert!(Signal::read("aprove", &serde_json::json!({})).is_err());
        assert!(Signal::read("feedback", &serde_json::json!({})).is_err());
    }
}
