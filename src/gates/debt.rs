//! Findings a lint or typecheck gate already reports on the base: the repository's debt, not
//! the change's. The baseline records them by gate, file and message (lines move as code is
//! added); a gate whose every failing finding is one of them passes and says how many it set
//! aside, and one finding the base did not have fails it as before.

use serde::{Deserialize, Serialize};

use crate::annotation::{Annotation, Level};

/// A failing finding seen on the base.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Known {
    pub gate: String,
    pub path: String,
    pub message: String,
}

/// The failing findings of `gate` among `annotations`, as the baseline keeps them.
pub fn known(gate: &str, annotations: &[Annotation]) -> Vec<Known> {
    let mut out: Vec<Known> = annotations
        .iter()
        .filter(|a| a.level == Level::Failure)
        .map(|a| Known {
            gate: gate.to_owned(),
            path: a.path.clone(),
            message: a.message.clone(),
        })
        .collect();
    out.sort();
    out
}

/// The failing findings of `gate` in `annotations` that the base did not have, counted: two
/// of the same on the base set aside two, not three.
pub fn new_findings<'a>(
    gate: &str,
    annotations: &'a [Annotation],
    base: &[Known],
) -> Vec<&'a Annotation> {
    let mut left: Vec<&Known> = base.iter().filter(|k| k.gate == gate).collect();
    annotations
        .iter()
        .filter(|a| a.level == Level::Failure)
        .filter(|a| {
            match left
                .iter()
                .position(|k| k.path == a.path && k.message == a.message)
            {
                Some(i) => {
                    left.swap_remove(i);
                    false
                }
                None => true,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(path: &str, line: u32, message: &str) -> Annotation {
        Annotation::new(path, line, Level::Failure, message)
    }

    #[test]
    fn only_what_the_base_did_not_have_is_new_however_the_lines_moved() {
        let base = known(
            "lint",
            &[
                a("legacy.py", 1, "F401 'os' imported but unused"),
                a("legacy.py", 2, "F401 'os' imported but unused"),
                Annotation::new("legacy.py", 3, Level::Warning, "W291 trailing whitespace"),
            ],
        );
        assert_eq!(base.len(), 2);
        let now = [
            a("legacy.py", 11, "F401 'os' imported but unused"),
            a("legacy.py", 12, "F401 'os' imported but unused"),
        ];
        assert!(new_findings("lint", &now, &base).is_empty());
        // A third of the same, another file, another gate: new.
        let more = [
            a("legacy.py", 11, "F401 'os' imported but unused"),
            a("legacy.py", 12, "F401 'os' imported but unused"),
            a("legacy.py", 13, "F401 'os' imported but unused"),
            a("calc.py", 1, "F401 'os' imported but unused"),
        ];
        let fresh = new_findings("lint", &more, &base);
        assert_eq!(fresh.len(), 2, "{fresh:?}");
        assert!(new_findings("typecheck", &now, &base).len() == 2);
    }
}
