//! Repository configuration: `.github/hive.yml`, read from the base branch (never from a branch
//! an agent wrote). Parsed strictly: an unknown key is an error naming the key and its line.
//! Every key has a default, documented in docs/configuration.md (a test holds every key to
//! it), so an absent file is a valid config.
//! Which keys the file set is kept ([`HiveConfig::is_set`]): what the repository's files show
//! (its ecosystems, a devcontainer) fills the others, one by one (`crate::env`).

use crate::pathset::PathSet;
use serde::Deserialize;

pub use super::acceptance::{Acceptance, COVERAGE_DIR};
pub use super::ask::{ASK_PERMISSIONS, Ask};
pub use super::ci::Ci;
pub use super::policy::Policy;
pub use super::retry::{Knowledge, MissingKnowledge, PlanLimits, Retry};
pub use crate::llm::budget::Caps;

/// Where the file lives in a repository.
pub const PATH: &str = ".github/hive.yml";

/// `.github/hive.yml`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HiveConfig {
    /// The label that hands an issue to the hive.
    pub label: String,
    /// The label that asks for a plan only: the Architect plans and the ticket waits for
    /// `/hive approve` (or [`HiveConfig::label`]) before anything is built.
    pub plan_label: String,
    /// The least permission of whoever puts either label on an issue for it to start a ticket
    /// (one of [`ASK_PERMISSIONS`]); and of whoever edits the issue for the agents to read the
    /// edit.
    pub label_permission: String,
    /// Who may ask the read-only agent questions (`/hive ask`).
    pub ask: Ask,
    /// Base branch; the repository's default branch when absent.
    pub base: Option<String>,
    /// Runner image for the sandbox.
    pub image: String,
    /// Installs what the gates need (dependencies, a virtual environment…); runs once per
    /// environment, with network, before any gate (`crate::env`).
    pub setup: Option<String>,
    /// Runs at the start of every sandbox, offline, on the set-up environment: builds the
    /// project itself in that worktree (a version file, a compiled extension the install
    /// writes into the source tree), which the environment, shared by every worktree, cannot
    /// hold. Detected for installable Python projects.
    pub prepare: Option<String>,
    /// How a change to the dependency files is set up (see [`ChangedDependencies`]).
    pub changed_dependencies: ChangedDependencies,
    pub gates: Gates,
    pub policy: Policy,
    pub limits: Limits,
    /// Caps on what a ticket's agents may spend.
    pub budget: Caps,
    pub review: Review,
    pub merge: Merge,
    /// What the bot's commits carry.
    pub commits: Commits,
    /// The retry engine: attempts, backoff, when a person is asked.
    pub retry: Retry,
    /// The shape of the Architect's plan.
    pub plan: PlanLimits,
    /// What a plan that needs what the repository lacks does.
    pub knowledge: Knowledge,
    /// What a change must meet beyond passing gates (`hive/acceptance`); all off by default.
    pub acceptance: Acceptance,
    /// How the repository's own CI on the pull request is heard before landing.
    pub ci: Ci,
    /// The dotted keys the file set (`gates.test`, `image`…), for [`HiveConfig::is_set`].
    #[serde(skip)]
    explicit: std::collections::BTreeSet<String>,
}

/// Who must agree before a change lands.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Review {
    /// Coding waits for `/hive approve` of the plan.
    pub require_plan_approval: bool,
    /// Merging waits for `/hive approve` or an approving review by someone with write
    /// permission (else the Critic's verdict suffices).
    pub require_human_approval: bool,
    /// After the deterministic checks pass, a model (the Reflector's route) checks the plan and
    /// the Breaker's tests against the issue; what it finds goes back for a correction.
    pub reflector: bool,
}

impl Default for Review {
    fn default() -> Self {
        Self {
            require_plan_approval: false,
            require_human_approval: true,
            reflector: false,
        }
    }
}

/// How an approved change lands.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Merge {
    /// How GitHub lands the pull request.
    pub method: MergeMethod,
    /// Formatter run when a rebase conflicts only in whitespace or formatting (strategy A),
    /// e.g. `black .`; without one such conflicts fall to the next strategy.
    pub formatter: Option<String>,
    /// Let a model resolve real conflicts in a scratch worktree, then run every gate again
    /// (strategy B); otherwise the merge is sent back to the queue's tail (strategy C).
    pub resolve_with_model: bool,
    /// `/hive reset` may force-push the base instead of committing a revert.
    pub allow_force_reset: bool,
}

/// What the bot's commits carry.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Commits {
    /// A `Signed-off-by:` trailer naming the bot on every commit it makes (a Developer
    /// Certificate of Origin). Also on where the base's rules ask for one: a required `DCO`
    /// check, or a `commit_message_pattern` that names `Signed-off-by`.
    pub signoff: bool,
}

/// `merge.method`: GitHub's pull-request merge (`rebase`, `squash`, `merge`: what branch
/// protection allows), or moving the base branch itself (`fast-forward`: only where the base
/// does not require pull requests).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum MergeMethod {
    #[default]
    Rebase,
    Squash,
    Merge,
    FastForward,
}

impl MergeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Rebase => "rebase",
            MergeMethod::Squash => "squash",
            MergeMethod::Merge => "merge",
            MergeMethod::FastForward => "fast-forward",
        }
    }
}

impl Default for HiveConfig {
    fn default() -> Self {
        Self {
            label: "hive".into(),
            plan_label: "hive:plan".into(),
            label_permission: "triage".into(),
            ask: Ask::default(),
            base: None,
            image: "vibeloop-runner:python".into(),
            gates: Gates::default(),
            policy: Policy::default(),
            limits: Limits::default(),
            budget: Caps::default(),
            review: Review::default(),
            merge: Merge::default(),
            commits: Commits::default(),
            retry: Retry::default(),
            plan: PlanLimits::default(),
            knowledge: Knowledge::default(),
            acceptance: Acceptance::default(),
            ci: Ci::default(),
            setup: None,
            prepare: None,
            changed_dependencies: ChangedDependencies::default(),
            explicit: Default::default(),
        }
    }
}

/// How a change to the dependency files (manifests, lockfiles) is set up. Setup with network
/// runs the repository's own setup only on the base's files: a change's `setup.py`, build
/// script or install script is code a model may have written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangedDependencies {
    /// Downloads with network over the dependency files alone (`cargo fetch`, binary wheels
    /// by `pip download`, `npm ci --ignore-scripts`, `go mod download`: no project code
    /// runs), then setup without network.
    #[default]
    Fetch,
    /// Setup without network only.
    Offline,
    /// Setup with network on the change's files, as on the base's: for repositories whose
    /// every change is trusted.
    Network,
}

/// Shell commands of the quality gates; a gate without a command is skipped.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Gates {
    pub test: Option<String>,
    pub lint: Option<String>,
    pub typecheck: Option<String>,
    pub build: Option<String>,
    pub security: SecurityGate,
    /// A JUnit XML report the test command writes (relative to the repository root): read
    /// for counts and failures when the runner's own output is not understood.
    pub test_report: Option<String>,
    /// Why a gate the repository's files point at has no command (filled by detection, not
    /// read from the file): what a skipped gate says.
    #[serde(skip)]
    pub left_out: std::collections::BTreeMap<String, String>,
}

impl Default for Gates {
    fn default() -> Self {
        Self {
            test: None,
            lint: None,
            typecheck: None,
            build: None,
            test_report: None,
            left_out: Default::default(),
            security: SecurityGate::Builtin,
        }
    }
}

/// The security gate: the built-in deterministic checks, or none.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SecurityGate {
    Builtin,
    Off,
}

/// Limits of the sandbox and of the workflow.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock limit of one gate command.
    pub timeout_seconds: u64,
    /// Wall-clock limit of `setup`.
    pub setup_timeout_seconds: u64,
    /// The older name of `retry.max_retries`, still read (setting both is an error).
    #[serde(rename = "max_retries")]
    legacy_max_retries: Option<u32>,
    /// CPUs of a sandbox.
    pub cpu: f64,
    pub memory_mb: u64,
    /// Processes and threads a sandbox may run at once (a fork bomb meets this wall).
    pub pids: u64,
    /// What one command may write to disk, in MiB: no file may grow past it, and a command
    /// whose writes take more than this from the worktree's disk is killed.
    pub disk_mb: u64,
    /// Network inside the sandbox (off unless set).
    pub network: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout_seconds: 600,
            setup_timeout_seconds: 1800,
            legacy_max_retries: None,
            cpu: 2.0,
            memory_mb: 2048,
            pids: 512,
            disk_mb: 2048,
            network: false,
        }
    }
}

/// The 1-based line where the dotted `key` (`limits.pids`) is set: the first line naming its
/// last part after a line naming its first part, in block or flow style.
fn line_of(text: &str, key: &str) -> Option<usize> {
    let parts: Vec<&str> = key.split('.').collect();
    let (first, last) = (parts.first()?, parts.last()?);
    // `name:` at the start of the line or after `{`, `,` or a space: a key, not a value.
    let names = |line: &str, name: &str| {
        line.match_indices(&format!("{name}:")).any(|(i, _)| {
            line[..i]
                .chars()
                .last()
                .is_none_or(|c| c == '{' || c == ',' || c.is_whitespace())
        })
    };
    let start = text.lines().position(|l| names(l, first))?;
    text.lines()
        .enumerate()
        .skip(start)
        .find(|(_, l)| names(l, last))
        .map(|(i, _)| i + 1)
}

/// Why `.github/hive.yml` was refused; the message is meant for the issue thread.
#[derive(Debug, thiserror::Error)]
#[error("{PATH} is invalid: {0}")]
pub struct RepoConfigError(String);

impl HiveConfig {
    pub fn parse(text: &str) -> Result<Self, RepoConfigError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut config: Self =
            serde_yaml_ng::from_str(text).map_err(|e| RepoConfigError(e.to_string()))?;
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(text).map_err(|e| RepoConfigError(e.to_string()))?;
        config.explicit = keys_of(&value);
        if let Some(n) = config.limits.legacy_max_retries {
            config.retry.max_retries = n;
        }
        config.policy.lock_github();
        config.check().map_err(|RepoConfigError(m)| {
            let key = m.split(':').next().unwrap_or_default();
            match line_of(text, key) {
                Some(n) => RepoConfigError(format!("{m} (line {n})")),
                None => RepoConfigError(m),
            }
        })?;
        Ok(config)
    }

    /// Whether the file set the dotted `key` (`image`, `gates.test`, `policy.test_paths`).
    pub fn is_set(&self, key: &str) -> bool {
        self.explicit.contains(key)
    }

    fn check(&self) -> Result<(), RepoConfigError> {
        let bad = |m: String| Err(RepoConfigError(m));
        let label = self.label.trim();
        if label.is_empty() || label.len() > 50 {
            return bad("label: must be 1 to 50 characters".into());
        }
        let plan_label = self.plan_label.trim();
        if plan_label.is_empty() || plan_label.len() > 50 {
            return bad("plan_label: must be 1 to 50 characters".into());
        }
        if plan_label == label {
            return bad(format!(
                "plan_label: {plan_label:?} is also `label`: name the plan-only label differently"
            ));
        }
        self.ask.check().map_err(RepoConfigError)?;
        if !ASK_PERMISSIONS.contains(&self.label_permission.as_str()) {
            return bad(format!(
                "label_permission: {:?} is none of {}",
                self.label_permission,
                ASK_PERMISSIONS.join(", ")
            ));
        }
        if self.image.trim().is_empty() || self.image.chars().any(char::is_whitespace) {
            return bad(format!("image: {:?} is not an image name", self.image));
        }
        if self
            .merge
            .formatter
            .as_deref()
            .is_some_and(|f| f.trim().is_empty())
        {
            return bad("merge.formatter: empty command; remove the key for none".into());
        }
        if self.setup.as_deref().is_some_and(|f| f.trim().is_empty()) {
            return bad("setup: empty command; remove the key for none".into());
        }
        if let Some(p) = &self.gates.test_report
            && (p.trim().is_empty() || p.starts_with('/') || p.split('/').any(|c| c == ".."))
        {
            return bad(format!(
                "gates.test_report: {p:?} must be a path relative to the repository root, without '..'"
            ));
        }
        for (gate, cmd) in self.gates.commands() {
            if cmd.trim().is_empty() {
                return bad(format!(
                    "gates.{gate}: empty command; remove the key to skip the gate"
                ));
            }
        }
        self.policy.check().map_err(RepoConfigError)?;
        let l = &self.limits;
        if !(1..=86_400).contains(&l.timeout_seconds) {
            return bad("limits.timeout_seconds: must be from 1 to 86400".into());
        }
        if !(1..=86_400).contains(&l.setup_timeout_seconds) {
            return bad("limits.setup_timeout_seconds: must be from 1 to 86400".into());
        }
        if l.legacy_max_retries.is_some_and(|n| n > 20) {
            return bad("limits.max_retries: must be at most 20".into());
        }
        if l.legacy_max_retries.is_some() && self.is_set("retry.max_retries") {
            return bad(
                "limits.max_retries: also set as retry.max_retries; keep retry.max_retries only"
                    .into(),
            );
        }
        self.retry.check().map_err(RepoConfigError)?;
        self.plan.check().map_err(RepoConfigError)?;
        self.acceptance.check().map_err(RepoConfigError)?;
        self.ci.check().map_err(RepoConfigError)?;
        if !(l.cpu > 0.0 && l.cpu <= 64.0) {
            return bad("limits.cpu: must be more than 0 and at most 64".into());
        }
        if !(64..=262_144).contains(&l.memory_mb) {
            return bad("limits.memory_mb: must be from 64 to 262144".into());
        }
        if !(16..=65_536).contains(&l.pids) {
            return bad("limits.pids: must be from 16 to 65536".into());
        }
        if !(16..=1_048_576).contains(&l.disk_mb) {
            return bad("limits.disk_mb: must be from 16 to 1048576".into());
        }
        let b = &self.budget;
        if b.max_usd.is_some_and(|v| v.is_nan() || v <= 0.0)
            || b.max_minutes.is_some_and(|v| v.is_nan() || v <= 0.0)
            || b.max_tokens == Some(0)
        {
            return bad(
                "budget: caps must be more than 0 (leave a key out for the default)".into(),
            );
        }
        Ok(())
    }

    /// Matcher for `policy.read_only_paths`.
    pub fn read_only(&self) -> PathSet {
        PathSet::new(&self.policy.read_only_paths)
    }

    /// Matcher for `policy.test_paths`.
    pub fn test_paths(&self) -> PathSet {
        PathSet::new(&self.policy.test_paths)
    }
}

impl Gates {
    /// The configured commands, in pipeline order.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("test", &self.test),
            ("lint", &self.lint),
            ("typecheck", &self.typecheck),
            ("build", &self.build),
        ]
        .into_iter()
        .filter_map(|(name, cmd)| cmd.as_deref().map(|c| (name, c)))
    }
}

/// The dotted keys of a YAML mapping, two levels deep (`image`, `gates.test`).
fn keys_of(value: &serde_yaml_ng::Value) -> std::collections::BTreeSet<String> {
    let mut keys = std::collections::BTreeSet::new();
    let Some(map) = value.as_mapping() else {
        return keys;
    };
    for (k, v) in map {
        let Some(k) = k.as_str() else { continue };
        keys.insert(k.to_owned());
        if let Some(inner) = v.as_mapping() {
            keys.extend(
                inner
                    .keys()
                    .filter_map(|i| i.as_str())
                    .map(|i| format!("{k}.{i}")),
            );
        }
    }
    keys
}

#[cfg(test)]
mod tests;
