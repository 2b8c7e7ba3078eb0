//! A finding of the banned-calls checks, every language's: a file, a place, what was found
//! and what to do, as it becomes an annotation on the check run.

use crate::annotation::{Annotation, Level};

/// Title of policy findings.
pub const TITLE: &str = "policy";

/// One finding of a banned-calls check: Python's ([`super::policy`]) or another language's
/// ([`super::banned`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFinding {
    pub path: String,
    pub line: u32,
    pub col: u32,
    /// `import`, `call`, `reference`, `syntax` or `error`.
    pub kind: String,
    /// The dotted name found (`os.system`, `xml.etree`); empty for `syntax` and `error`.
    pub name: String,
    pub message: String,
}

impl PolicyFinding {
    /// A finding about the file itself, no name in it: `syntax` or `error`.
    pub fn of_file(path: &str, line: u32, col: u32, kind: &str, message: String) -> Self {
        Self {
            path: path.to_owned(),
            line,
            col,
            kind: kind.into(),
            name: String::new(),
            message,
        }
    }

    pub fn annotation(&self) -> Annotation {
        Annotation::new(&self.path, self.line, Level::Failure, &self.message)
            .with_column(self.col)
            .with_title(TITLE)
    }
}
