//! The ticket domain: [`TicketId`] (`T-n`, per repository) and [`TaskState`] with its one
//! transition table. Nothing here talks to GitHub or the database.

mod finding;
pub mod plan;
mod role;
mod signal;

pub use finding::Finding;
pub use role::Role;
pub use signal::{ReviewThread, Signal};

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `T-<n>`: a ticket's number within its repository; names its branches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TicketId(pub u32);

impl TicketId {
    /// The Builder's branch.
    pub fn feat_branch(self) -> String {
        format!("feat/{self}")
    }

    /// The Breaker's branch.
    pub fn test_branch(self) -> String {
        format!("test/{self}")
    }

    /// Reads `T-12`.
    pub fn parse(s: &str) -> Option<Self> {
        let n = s.strip_prefix("T-")?;
        if n.is_empty() || n.len() > 9 || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        n.parse().ok().filter(|n| *n > 0).map(TicketId)
    }

    /// The ticket of a bot branch: `feat/T-12` or `test/T-12`.
    pub fn from_branch(branch: &str) -> Option<Self> {
        Self::parse(
            branch
                .strip_prefix("feat/")
                .or_else(|| branch.strip_prefix("test/"))?,
        )
    }
}

impl fmt::Display for TicketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T-{}", self.0)
    }
}

/// Where a ticket is in its life (DESIGN §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    Pending,
    Preparing,
    Validating,
    InProgress,
    AwaitingVerification,
    Completed,
    Blocked,
    HumanNeeded,
    Failed,
}

use TaskState::*;

impl TaskState {
    pub const ALL: [TaskState; 9] = [
        Pending,
        Preparing,
        Validating,
        InProgress,
        AwaitingVerification,
        Completed,
        Blocked,
        HumanNeeded,
        Failed,
    ];

    /// The transition table: every legal move, and only those.
    pub fn can_move_to(self, to: TaskState) -> bool {
        matches!(
            (self, to),
            (Pending, Preparing)
                | (Preparing, Validating)
                | (Validating, InProgress)
                | (InProgress, AwaitingVerification)
                | (AwaitingVerification, Completed)
                // work sent back: a veto, a failed re-check after rebase
                | (AwaitingVerification, InProgress)
                // waiting for people
                | (Preparing | Validating, Blocked)
                | (Blocked, Preparing | Validating)
                | (Validating | InProgress | AwaitingVerification, HumanNeeded)
                | (HumanNeeded, InProgress | Pending)
                // a retry starts over
                | (Failed, Pending)
                // anything unfinished can fail (or be aborted)
                | (Pending | Preparing | Validating | InProgress | AwaitingVerification | Blocked | HumanNeeded, Failed)
        )
    }

    /// The states to pass through from `self` to `to`, `to` included and `self` not: the
    /// shortest legal way (breadth-first over the table). Empty when `self == to`; `None` when
    /// no legal way leads there.
    pub fn path_to(self, to: TaskState) -> Option<Vec<TaskState>> {
        let mut prev: std::collections::HashMap<TaskState, TaskState> = Default::default();
        let mut queue = std::collections::VecDeque::from([self]);
        while let Some(s) = queue.pop_front() {
            if s == to {
                let mut out = Vec::new();
                let mut at = to;
                while at != self {
                    out.push(at);
                    at = prev[&at];
                }
                out.reverse();
                return Some(out);
            }
            for n in TaskState::ALL {
                if s.can_move_to(n) && n != self && !prev.contains_key(&n) {
                    prev.insert(n, s);
                    queue.push_back(n);
                }
            }
        }
        None
    }

    /// True for states no worker acts on until a person does something.
    pub fn is_final(self) -> bool {
        matches!(self, Completed | Failed)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Pending => "Pending",
            Preparing => "Preparing",
            Validating => "Validating",
            InProgress => "InProgress",
            AwaitingVerification => "AwaitingVerification",
            Completed => "Completed",
            Blocked => "Blocked",
            HumanNeeded => "HumanNeeded",
            Failed => "Failed",
        }
    }

    /// Words for people, as the status comment shows them.
    pub fn describe(self) -> &'static str {
        match self {
            Pending => "queued",
            Preparing => "preparing the workspace",
            Validating => "checking the configuration",
            InProgress => "writing and testing the change",
            AwaitingVerification => "pull request open, awaiting review",
            Completed => "completed",
            Blocked => "blocked: waiting for answers",
            HumanNeeded => "needs a human",
            Failed => "failed",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state name that is not one of [`TaskState`].
#[derive(Debug, thiserror::Error)]
#[error("unknown ticket state {0:?}")]
pub struct UnknownState(String);

impl FromStr for TaskState {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// How far a piece of knowledge can be trusted (the seed's memory stability levels). It rises
/// as its ticket moves on, up to its kind's ceiling ([`MemoryKind::ceiling`]); a failed step
/// puts what it produced back to Ephemeral for good; only Canonical knowledge feeds later
/// tickets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum MemoryStability {
    /// Written during a run; may be wrong.
    Ephemeral,
    /// Came out of a validated step (a plan that passed its checks).
    Derived,
    /// Confirmed by observation (the gates passed with it).
    Verified,
    /// Part of a merged change.
    Canonical,
}

impl MemoryStability {
    pub const ALL: [MemoryStability; 4] = [
        MemoryStability::Ephemeral,
        MemoryStability::Derived,
        MemoryStability::Verified,
        MemoryStability::Canonical,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryStability::Ephemeral => "Ephemeral",
            MemoryStability::Derived => "Derived",
            MemoryStability::Verified => "Verified",
            MemoryStability::Canonical => "Canonical",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// What a memory entry records, which decides how far it may rise ([`MemoryKind::ceiling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// What the Architect proposed: the plan's title and goal. Confirmed, like the rest of
    /// the ticket, by its gates and its merge.
    Plan,
    /// A gate command that passed.
    GateCommand,
    /// The tests the Breaker added: failing on the base, passing with the change.
    TestNames,
    /// A file the change touched and its role (source, test, config, docs).
    FileRole,
    /// A reviewer's opinion (the Critic's comments): never more than Derived, since nothing
    /// observes whether an opinion is right.
    ReviewOpinion,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 5] = [
        MemoryKind::Plan,
        MemoryKind::GateCommand,
        MemoryKind::TestNames,
        MemoryKind::FileRole,
        MemoryKind::ReviewOpinion,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Plan => "plan",
            MemoryKind::GateCommand => "gate_command",
            MemoryKind::TestNames => "test_names",
            MemoryKind::FileRole => "file_role",
            MemoryKind::ReviewOpinion => "review_opinion",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The highest stability an entry of this kind may reach: observed facts (and the plan
    /// they confirm) rise to Canonical; opinions stop at Derived.
    pub fn ceiling(self) -> MemoryStability {
        match self {
            MemoryKind::ReviewOpinion => MemoryStability::Derived,
            _ => MemoryStability::Canonical,
        }
    }
}

/// A refused move between two states.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("a ticket cannot go from {from} to {to}")]
pub struct IllegalTransition {
    pub from: TaskState,
    pub to: TaskState,
}

/// The one place transitions are checked.
pub fn check_transition(from: TaskState, to: TaskState) -> Result<(), IllegalTransition> {
    if from.can_move_to(to) {
        Ok(())
    } else {
        Err(IllegalTransition { from, to })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_go_through_legal_states_only() {
        assert_eq!(
            Pending.path_to(InProgress),
            Some(vec![Preparing, Validating, InProgress])
        );
        assert_eq!(HumanNeeded.path_to(InProgress), Some(vec![InProgress]));
        assert_eq!(
            Failed.path_to(InProgress),
            Some(vec![Pending, Preparing, Validating, InProgress])
        );
        assert_eq!(Blocked.path_to(Preparing), Some(vec![Preparing]));
        assert_eq!(
            Preparing.path_to(HumanNeeded),
            Some(vec![Validating, HumanNeeded])
        );
        assert_eq!(Completed.path_to(Completed), Some(vec![]));
        assert_eq!(Completed.path_to(Pending), None);
    }

    use super::*;

    #[test]
    fn ids_name_branches() {
        assert_eq!(TicketId(12).to_string(), "T-12");
        assert_eq!(TicketId(12).feat_branch(), "feat/T-12");
        assert_eq!(TicketId(12).test_branch(), "test/T-12");
    }

    #[test]
    fn ids_are_read_back() {
        assert_eq!(TicketId::parse("T-12"), Some(TicketId(12)));
        assert_eq!(TicketId::from_branch("feat/T-3"), Some(TicketId(3)));
        assert_eq!(TicketId::from_branch("test/T-3"), Some(TicketId(3)));
        for bad in ["T-", "T-0", "T-1x", "t-1", "T--1", "T-9999999999"] {
            assert_eq!(TicketId::parse(bad), None, "{bad}");
        }
        assert_eq!(TicketId::from_branch("main"), None);
    }

    #[test]
    fn happy_path_is_legal() {
        let path = [
            Pending,
            Preparing,
            Validating,
            InProgress,
            AwaitingVerification,
            Completed,
        ];
        for pair in path.windows(2) {
            check_transition(pair[0], pair[1]).unwrap();
        }
    }

    #[test]
    fn finished_tickets_stay_finished_except_retry() {
        for to in TaskState::ALL {
            assert!(
                check_transition(Completed, to).is_err(),
                "Completed -> {to}"
            );
            assert_eq!(
                check_transition(Failed, to).is_ok(),
                to == Pending,
                "Failed -> {to}"
            );
        }
    }

    #[test]
    fn no_state_moves_to_itself_and_names_round_trip() {
        for s in TaskState::ALL {
            assert!(!s.can_move_to(s), "{s} -> {s}");
            assert_eq!(s.as_str().parse::<TaskState>().unwrap(), s);
        }
        assert!("Done".parse::<TaskState>().is_err());
    }

    /// Every pair of states, against the table written out as a list: each move in it is
    /// allowed and every other one is refused.
    #[test]
    fn every_pair_of_states_is_allowed_only_when_listed() {
        const LEGAL: &[(TaskState, TaskState)] = &[
            (Pending, Preparing),
            (Pending, Failed),
            (Preparing, Validating),
            (Preparing, Blocked),
            (Preparing, Failed),
            (Validating, InProgress),
            (Validating, Blocked),
            (Validating, HumanNeeded),
            (Validating, Failed),
            (InProgress, AwaitingVerification),
            (InProgress, HumanNeeded),
            (InProgress, Failed),
            (AwaitingVerification, Completed),
            (AwaitingVerification, InProgress),
            (AwaitingVerification, HumanNeeded),
            (AwaitingVerification, Failed),
            (Blocked, Preparing),
            (Blocked, Validating),
            (Blocked, Failed),
            (HumanNeeded, InProgress),
            (HumanNeeded, Pending),
            (HumanNeeded, Failed),
            (Failed, Pending),
        ];
        let mut checked = 0;
        for from in TaskState::ALL {
            for to in TaskState::ALL {
                let listed = LEGAL.contains(&(from, to));
                let result = check_transition(from, to);
                assert_eq!(result.is_ok(), listed, "{from} -> {to}");
                if let Err(e) = result {
                    assert_eq!((e.from, e.to), (from, to));
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 81);
    }

    #[test]
    fn skipping_ahead_is_refused() {
        assert!(check_transition(Pending, InProgress).is_err());
        assert!(check_transition(Preparing, AwaitingVerification).is_err());
        assert!(check_transition(InProgress, Completed).is_err());
    }
}
