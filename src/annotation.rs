//! Annotations: a finding tied to a file and line, as the gates read them from tools' output and
//! GitHub shows them on a pull request's check runs. GitHub takes at most 50 per request;
//! [`batches`] cuts a list to that size. A leaf: the gates make them, the GitHub client sends
//! them, and neither knows the other.

use serde::Serialize;

/// How serious a finding is (GitHub's `annotation_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Notice,
    Warning,
    Failure,
}

/// One finding on one place of one file. `path` is relative to the repository root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u32>,
    #[serde(rename = "annotation_level")]
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Annotation {
    /// A finding on one line (`line` 0 or absent means the whole file: line 1).
    pub fn new(
        path: impl Into<String>,
        line: u32,
        level: Level,
        message: impl Into<String>,
    ) -> Self {
        let line = line.max(1);
        Self {
            path: path.into(),
            start_line: line,
            end_line: line,
            start_column: None,
            end_column: None,
            level,
            message: message.into(),
            title: None,
        }
    }

    pub fn with_column(mut self, column: u32) -> Self {
        // GitHub accepts columns only on single-line annotations.
        if self.start_line == self.end_line && column > 0 {
            self.start_column = Some(column);
            self.end_column = Some(column);
        }
        self
    }

    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

/// GitHub's limit of annotations in one create or update request.
pub const MAX_PER_REQUEST: usize = 50;

/// Splits annotations into request-sized batches.
pub fn batches(all: &[Annotation]) -> impl Iterator<Item = &[Annotation]> {
    all.chunks(MAX_PER_REQUEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_github_expects() {
        let a = Annotation::new("src/a.py", 3, Level::Failure, "boom")
            .with_column(5)
            .with_title("E1");
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"path": "src/a.py", "start_line": 3, "end_line": 3, "start_column": 5,
                "end_column": 5, "annotation_level": "failure", "message": "boom", "title": "E1"})
        );
        assert_eq!(Annotation::new("x", 0, Level::Notice, "m").start_line, 1);
    }

    #[test]
    fn batches_hold_at_most_fifty() {
        let all: Vec<_> = (0..121)
            .map(|i| Annotation::new("a", i + 1, Level::Warning, "w"))
            .collect();
        let sizes: Vec<usize> = batches(&all).map(<[_]>::len).collect();
        assert_eq!(sizes, [50, 50, 21]);
    }
}
