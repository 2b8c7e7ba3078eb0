//! What one task's run came to, as a line of `DIR/results.jsonl`: the outcome (resolved, tests
//! fail, HumanNeeded with the reason, Blocked, error), what each role spent, model calls, wall
//! time, attempts, the final diff's size, the hidden tests' verdicts, and where the diff and the
//! timeline were written. `--resume` reads the file back and skips the tasks it holds.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The results file in an output directory.
pub const FILE: &str = "results.jsonl";

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passed on the final tree.
    Resolved,
    /// The hive finished, but a hidden test failed.
    TestsFail,
    /// The hive stopped for a person (attempts or budget spent, a stall).
    HumanNeeded,
    /// The hive asked a question (Blocked) and nobody answered.
    Blocked,
    /// The run itself broke (a crash, a timeout, the repository could not be prepared).
    Error,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [
        Outcome::Resolved,
        Outcome::TestsFail,
        Outcome::HumanNeeded,
        Outcome::Blocked,
        Outcome::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Resolved => "resolved",
            Outcome::TestsFail => "tests fail",
            Outcome::HumanNeeded => "HumanNeeded",
            Outcome::Blocked => "Blocked",
            Outcome::Error => "error",
        }
    }
}

/// What one role spent on the task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleSpend {
    pub tokens: u64,
    pub usd: f64,
    pub calls: u64,
}

/// The final change against the task's base commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffSize {
    pub files: usize,
    pub added: usize,
    pub removed: usize,
}

/// One hidden test and whether it passed on the final tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestVerdict {
    pub name: String,
    pub passed: bool,
}

/// One task's result: a line of [`FILE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub instance_id: String,
    pub outcome: Outcome,
    /// Why, for people: the failing hidden tests, the HumanNeeded reason, the error.
    #[serde(default)]
    pub detail: String,
    /// Per role (`architect`, `breaker`, `builder`, `critic`…).
    #[serde(default)]
    pub roles: BTreeMap<String, RoleSpend>,
    pub seconds: f64,
    /// Of `seconds`: the hive's run (its `vibeloop run`), and within it waiting on models
    /// (the critical path) and in its gates; grading with the hidden tests. The rest of
    /// `seconds` is the harness's own (clone, process start, diff, results).
    #[serde(default)]
    pub run_seconds: f64,
    #[serde(default)]
    pub model_seconds: f64,
    #[serde(default)]
    pub gate_seconds: f64,
    #[serde(default)]
    pub grade_seconds: f64,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub diff: Option<DiffSize>,
    #[serde(default)]
    pub fail_to_pass: Vec<TestVerdict>,
    #[serde(default)]
    pub pass_to_pass: Vec<TestVerdict>,
    /// Relative to the output directory: the final diff and the ticket's timeline.
    #[serde(default)]
    pub diff_path: Option<String>,
    #[serde(default)]
    pub timeline_path: Option<String>,
}

impl TaskResult {
    /// A task that could not run: `why`.
    pub fn error(instance_id: &str, why: impl Into<String>, seconds: f64) -> Self {
        Self {
            instance_id: instance_id.to_owned(),
            outcome: Outcome::Error,
            detail: why.into(),
            roles: BTreeMap::new(),
            seconds,
            run_seconds: 0.0,
            model_seconds: 0.0,
            gate_seconds: 0.0,
            grade_seconds: 0.0,
            attempts: 0,
            diff: None,
            fail_to_pass: vec![],
            pass_to_pass: vec![],
            diff_path: None,
            timeline_path: None,
        }
    }

    pub fn resolved(&self) -> bool {
        self.outcome == Outcome::Resolved
    }

    /// Dollars over every role.
    pub fn usd(&self) -> f64 {
        self.roles.values().map(|r| r.usd).sum()
    }

    pub fn tokens(&self) -> u64 {
        self.roles.values().map(|r| r.tokens).sum()
    }

    pub fn calls(&self) -> u64 {
        self.roles.values().map(|r| r.calls).sum()
    }
}

/// The results in `dir` (none when the file is not there). A line that does not parse — a run
/// cut off while writing it — is skipped, so that task runs again on `--resume`.
pub fn read(dir: &Path) -> std::io::Result<Vec<TaskResult>> {
    let text = match std::fs::read_to_string(dir.join(FILE)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Appends `result` to `dir`'s results file as one line, written whole.
pub fn append(dir: &Path, result: &TaskResult) -> std::io::Result<()> {
    let mut line = serde_json::to_string(result).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(FILE))?;
    f.write_all(line.as_bytes())?;
    f.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_append_and_read_back_skipping_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        let mut r = TaskResult::error("a-1", "the clone failed", 1.5);
        r.roles.insert(
            "builder".into(),
            RoleSpend {
                tokens: 10,
                usd: 0.5,
                calls: 2,
            },
        );
        append(dir.path(), &r).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap()
            .write_all(b"{\"instance_id\": \"b-")
            .unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back, [r.clone()]);
        assert_eq!(
            (back[0].usd(), back[0].tokens(), back[0].calls()),
            (0.5, 10, 2)
        );
    }
}
