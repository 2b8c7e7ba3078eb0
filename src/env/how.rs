//! How a worktree's environment is set up, from how its dependency files compare with the
//! base's: the base's with network, a change's in two phases, offline, or with network where the
//! repository lets its changes have it.

use super::resolve::Resolved;
use crate::config::repo::ChangedDependencies;

/// A dependency file's path and content (`None`: absent).
type Input = (String, Option<Vec<u8>>);

/// How an environment is set up for a worktree's dependency files.
#[derive(Debug, Clone, PartialEq)]
pub enum How {
    /// They are the base's: the repository's setup, with network.
    Base,
    /// They changed (these files): downloads first, then setup without network.
    Fetch(super::fetch::Plan, Vec<String>),
    /// They changed: setup without network.
    Offline(Vec<String>),
    /// They changed, and the repository lets its changes set up with network.
    Network(Vec<String>),
}

impl How {
    /// How the worktree whose dependency files are `inputs` is set up for `r`.
    pub fn of(r: &Resolved, inputs: &[Input]) -> Self {
        let changed: Vec<String> = inputs
            .iter()
            .filter(|(p, content)| {
                let base = r
                    .base_inputs
                    .iter()
                    .find(|(b, _)| b == p)
                    .and_then(|(_, c)| c.as_ref());
                base != content.as_ref()
            })
            .map(|(p, _)| p.clone())
            .collect();
        if changed.is_empty() {
            return How::Base;
        }
        match r.config.changed_dependencies {
            ChangedDependencies::Network => How::Network(changed),
            ChangedDependencies::Offline => How::Offline(changed),
            ChangedDependencies::Fetch => match super::fetch::plan(&r.found, inputs) {
                Some(plan) if r.setup_detected => How::Fetch(plan, changed),
                _ => How::Offline(changed),
            },
        }
    }

    /// For the pull request and the status: which files changed the environment and how it
    /// was set up; `None` for the base's.
    pub fn describe(&self) -> Option<String> {
        let files = |c: &[String]| {
            c.iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Some(match self {
            How::Base => return None,
            How::Fetch(plan, c) => format!(
                "the change edits {}: set up in two phases, downloads with network over the dependency files alone (`{}`, no project code run), then setup without network",
                files(c),
                plan.command
            ),
            How::Offline(c) => format!(
                "the change edits {}: set up without network (`changed_dependencies: offline`, or a setup command that cannot be split)",
                files(c)
            ),
            How::Network(c) => format!(
                "the change edits {}: set up with network, its own code included (`changed_dependencies: network`)",
                files(c)
            ),
        })
    }
}
