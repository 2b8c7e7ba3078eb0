//! Task sets: JSONL, one task per line, in SWE-bench's instance format — `instance_id`, `repo`
//! (`owner/name`), `base_commit`, `problem_statement`, `test_patch`, `FAIL_TO_PASS`,
//! `PASS_TO_PASS` (lists, or lists written as JSON strings as SWE-bench's own files have them),
//! optional `hints_text` and `patch` (the reference change, never shown to an agent) — so
//! existing sets load as they are. A line that is not a task is an error naming its line.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

/// One task: a repository at a commit, what to change, and the hidden tests that judge it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub instance_id: String,
    /// `owner/name`.
    pub repo: String,
    pub base_commit: String,
    pub problem_statement: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hints_text: String,
    /// The reference change (SWE-bench's gold patch); kept, never shown to an agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub patch: String,
    /// The hidden tests, as a unified diff applied to the final tree before they run.
    pub test_patch: String,
    /// Tests that fail before the change and must pass after it.
    #[serde(rename = "FAIL_TO_PASS", deserialize_with = "names")]
    pub fail_to_pass: Vec<String>,
    /// Tests that pass before and must still pass after.
    #[serde(rename = "PASS_TO_PASS", deserialize_with = "names", default)]
    pub pass_to_pass: Vec<String>,
}

/// A list of test names, or a JSON string holding one (SWE-bench's files).
fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Names {
        List(Vec<String>),
        Text(String),
    }
    match Names::deserialize(d)? {
        Names::List(l) => Ok(l),
        Names::Text(t) if t.trim().is_empty() => Ok(vec![]),
        Names::Text(t) => serde_json::from_str(&t).map_err(|e| {
            serde::de::Error::custom(format!("a JSON list of test names in a string: {e}"))
        }),
    }
}

/// Why a task set was refused.
#[derive(Debug, thiserror::Error)]
pub enum TaskSetError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a task: {why}")]
    Line {
        path: PathBuf,
        line: usize,
        why: String,
    },
    #[error("{path}:{line}: instance_id {id:?} again (first on line {first})")]
    Duplicate {
        path: PathBuf,
        line: usize,
        id: String,
        first: usize,
    },
    #[error("{path}: no task in the file")]
    Empty { path: PathBuf },
}

impl Task {
    /// What the agents are given: the problem statement, and the hints when there are some.
    pub fn goal(&self) -> String {
        let statement = self.problem_statement.trim();
        if self.hints_text.trim().is_empty() {
            statement.to_owned()
        } else {
            format!("{statement}\n\nHints:\n{}", self.hints_text.trim())
        }
    }

    /// The directory name SWE-bench gives the repository's clone: `owner__name`.
    pub fn repo_dir_name(&self) -> String {
        self.repo.replace('/', "__")
    }

    fn check(&self) -> Result<(), String> {
        let id_ok = !self.instance_id.is_empty()
            && self
                .instance_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !self.instance_id.starts_with('.');
        if !id_ok {
            return Err(format!(
                "instance_id {:?}: letters, digits, '-', '_' and '.' only (it names a directory)",
                self.instance_id
            ));
        }
        let repo_ok = self.repo.split('/').count() == 2
            && self.repo.split('/').all(|p| {
                !p.is_empty()
                    && !p.starts_with('.')
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            });
        if !repo_ok {
            return Err(format!("repo {:?}: must be owner/name", self.repo));
        }
        if self.base_commit.len() < 7 || !self.base_commit.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!(
                "base_commit {:?}: must be a commit id (hex)",
                self.base_commit
            ));
        }
        if self.problem_statement.trim().is_empty() {
            return Err("problem_statement is empty".into());
        }
        if self.fail_to_pass.is_empty() {
            return Err("FAIL_TO_PASS is empty: nothing would judge the change".into());
        }
        Ok(())
    }
}

/// Reads a task set; every task is checked, and ids are unique.
pub fn load(path: &Path) -> Result<Vec<Task>, TaskSetError> {
    let text = std::fs::read_to_string(path).map_err(|source| TaskSetError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path)
}

/// Parses JSONL `text` (read from `path`, for messages).
pub fn parse(text: &str, path: &Path) -> Result<Vec<Task>, TaskSetError> {
    let mut tasks: Vec<(usize, Task)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| TaskSetError::Line {
            path: path.to_owned(),
            line: n,
            why,
        };
        let task: Task = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        task.check().map_err(bad)?;
        if let Some((first, _)) = tasks
            .iter()
            .find(|(_, t)| t.instance_id == task.instance_id)
        {
            return Err(TaskSetError::Duplicate {
                path: path.to_owned(),
                line: n,
                id: task.instance_id,
                first: *first,
            });
        }
        tasks.push((n, task));
    }
    if tasks.is_empty() {
        return Err(TaskSetError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(tasks.into_iter().map(|(_, t)| t).collect())
}

/// One line of a task set.
pub fn to_line(task: &Task) -> String {
    serde_json::to_string(task).expect("a task serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swe_bench_lines_load_with_their_lists_written_as_strings() {
        let line = r#"{"repo": "astropy/astropy", "instance_id": "astropy__astropy-12907", "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607", "patch": "diff --git a/x b/x\n", "test_patch": "diff --git a/t b/t\n", "problem_statement": "Modeling's `separability_matrix` does not compute separability correctly", "hints_text": "", "created_at": "2022-03-03T15:14:54Z", "version": "4.3", "FAIL_TO_PASS": "[\"astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]\"]", "PASS_TO_PASS": "[\"astropy/modeling/tests/test_separable.py::test_coord_matrix\"]", "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752"}"#;
        let tasks = parse(line, Path::new("set.jsonl")).unwrap();
        let t = &tasks[0];
        assert_eq!(t.repo_dir_name(), "astropy__astropy");
        assert_eq!(t.fail_to_pass.len(), 1);
        assert_eq!(
            t.pass_to_pass,
            ["astropy/modeling/tests/test_separable.py::test_coord_matrix"]
        );
        assert!(!t.goal().contains("Hints"));
        // Written back, it reads the same.
        let again = parse(&to_line(t), Path::new("x")).unwrap();
        assert_eq!(&again[0], t);
    }

    #[test]
    fn a_bad_line_is_named_with_its_reason() {
        let good = r#"{"instance_id": "a-1", "repo": "o/r", "base_commit": "abcdef1", "problem_statement": "p", "test_patch": "", "FAIL_TO_PASS": ["t"], "PASS_TO_PASS": []}"#;
        let cases = [
            ("{", "set.jsonl:2: not a task"),
            (&good.replace("a-1", "../x"), "instance_id \"../x\""),
            (
                &good.replace("o/r", "o/r/s"),
                "repo \"o/r/s\": must be owner/name",
            ),
            (&good.replace("abcdef1", "main"), "base_commit \"main\""),
            (&good.replace(r#"["t"]"#, "[]"), "FAIL_TO_PASS is empty"),
            (good, "instance_id \"a-1\" again (first on line 1)"),
        ];
        for (second, want) in cases {
            let text = format!("{good}\n{second}\n");
            let e = parse(&text, Path::new("set.jsonl"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        let e = parse("\n\n", Path::new("set.jsonl"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "set.jsonl: no task in the file");
    }
}
