//! The repository's instructions for coding agents ([`crate::env::instructions`]) over one
//! role's run: those for the files it starts with go in its prompt, and when a tool opens a
//! file in a directory whose instructions it has not seen yet, they come with that tool's
//! answer — each file once, all within one byte budget.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::env::instructions::{Instructions, TOTAL_BYTES, render};

/// The instructions a role has been shown, and what it may still be shown.
#[derive(Debug, Clone, Default)]
pub struct Guide {
    instructions: Arc<Instructions>,
    shown: BTreeSet<String>,
    left: usize,
}

impl Guide {
    /// The guide of a role working on `paths` (none: the repository as a whole), and the text
    /// for its prompt (empty when no file applies).
    pub fn start(instructions: Arc<Instructions>, paths: &[String]) -> (Self, String) {
        let mut guide = Self {
            instructions,
            shown: BTreeSet::new(),
            left: TOTAL_BYTES,
        };
        let text = guide.more(paths).unwrap_or_default();
        (guide, text)
    }

    /// The files shown so far, in path order.
    pub fn shown(&self) -> &BTreeSet<String> {
        &self.shown
    }

    /// What applies to `paths` and was not shown yet, rendered; `None` when nothing new does.
    pub fn more(&mut self, paths: &[String]) -> Option<String> {
        if self.instructions.is_empty() {
            return None;
        }
        let chosen = self.instructions.choose(paths, self.left, &self.shown);
        if chosen.shown.is_empty() && chosen.left_out.is_empty() {
            return None;
        }
        for s in &chosen.shown {
            self.left = self.left.saturating_sub(s.text.len());
            self.shown.insert(s.path.clone());
        }
        // Left out for length now: said once, not offered again.
        self.shown.extend(chosen.left_out.iter().cloned());
        Some(render(&chosen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::instructions::FILE_BYTES;

    fn instructions(files: &[(&str, &str)]) -> Arc<Instructions> {
        Arc::new(Instructions::of(&crate::env::tree::Tree::of(files)))
    }

    #[test]
    fn each_file_is_shown_once_within_the_budget() {
        let big = "b".repeat(FILE_BYTES);
        let (mut g, up_front) = Guide::start(
            instructions(&[
                ("AGENTS.md", "root"),
                ("lib/AGENTS.md", "lib"),
                ("a/AGENTS.md", &big),
                ("b/AGENTS.md", &big),
            ]),
            &["src/x.py".into()],
        );
        assert!(
            up_front.contains("<<<FILE AGENTS.md\nroot\nFILE>>>"),
            "{up_front}"
        );
        assert_eq!(g.more(&["src/y.py".into()]), None, "nothing new applies");
        let lib = g.more(&["lib/z.py".into()]).unwrap();
        assert!(lib.contains("<<<FILE lib/AGENTS.md") && !lib.contains("FILE AGENTS.md"));
        assert!(g.more(&["a/1.py".into()]).is_some());
        let b = g.more(&["b/1.py".into()]).unwrap();
        assert!(b.contains("also apply from b/AGENTS.md, left out"), "{b}");
        assert!(!b.contains("<<<FILE b/"), "over the budget: {b}");
        assert_eq!(g.more(&["b/2.py".into()]), None, "said once");
        assert_eq!(g.shown().len(), 4);
        let (mut none, text) = Guide::start(Default::default(), &[]);
        assert!(text.is_empty() && none.more(&["x".into()]).is_none());
    }
}
