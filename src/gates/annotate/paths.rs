//! Paths as tools print them (`/work/pkg/calc.py`, `./pkg/calc.py`, `pkg/calc.py`) made
//! relative to the repository root, or refused when they point outside it
//! (`../toolvenv/lib/python3.11/site-packages/_pytest/python.py`, `/usr/lib/python3.11/json/decoder.py`,
//! `<frozen importlib._bootstrap>`).

/// Longer paths are no repository's (Linux's PATH_MAX).
const MAX_PATH_BYTES: usize = 4096;

/// The prefixes under which the repository lives (`/work/` in a container, the worktree on the
/// host). A root of `/` is ignored: it would make every absolute path look like a repository one.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    roots: Vec<String>,
}

impl Roots {
    pub fn new(roots: &[&str]) -> Self {
        let mut roots: Vec<String> = roots
            .iter()
            .map(|r| r.trim().trim_end_matches('/'))
            .filter(|r| !r.is_empty())
            .map(|r| format!("{r}/"))
            .collect();
        // The longest first, so a worktree inside another root strips whole.
        roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
        roots.dedup();
        Self { roots }
    }

    /// `raw` relative to the repository root: a root stripped, `./` and empty components dropped.
    /// `None` for an absolute path under no root, one longer than 4096 bytes, a `..` component, or a name no repository file
    /// has (control characters, `<…>`, backslashes, a colon as in `C:` or `http:`).
    pub fn relative(&self, raw: &str) -> Option<String> {
        let raw = raw.trim();
        let inside = self
            .roots
            .iter()
            .find_map(|root| raw.strip_prefix(root.as_str()))
            .unwrap_or(raw);
        if inside.len() > MAX_PATH_BYTES
            || inside.starts_with(['/', '~'])
            || inside.chars().any(|c| {
                c.is_control() || matches!(c, '<' | '>' | '\\' | ':' | '"' | '*' | '?' | '|')
            })
        {
            return None;
        }
        let mut parts = Vec::new();
        for part in inside.split('/') {
            match part {
                "" | "." => {}
                ".." => return None,
                _ => parts.push(part),
            }
        }
        (!parts.is_empty()).then(|| parts.join("/"))
    }

    /// Whether `raw` names a file of the repository.
    pub fn contains(&self, raw: &str) -> bool {
        self.relative(raw).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_roots_and_refuses_outside_paths() {
        let roots = Roots::new(&["/work", "/data/worktrees/acme/widgets/feat-T-1/", "/", ""]);
        let rel = |p| roots.relative(p);
        assert_eq!(rel("/work/pkg/calc.py").as_deref(), Some("pkg/calc.py"));
        assert_eq!(
            rel("/data/worktrees/acme/widgets/feat-T-1/src/lib.rs").as_deref(),
            Some("src/lib.rs")
        );
        assert_eq!(rel("./pkg//calc.py").as_deref(), Some("pkg/calc.py"));
        assert_eq!(
            rel("web/old code/a.js").as_deref(),
            Some("web/old code/a.js")
        );
        assert_eq!(rel("/work"), None);
        assert_eq!(rel("/workshop/x.py"), None);
        assert_eq!(rel("/usr/lib/python3.11/json/decoder.py"), None);
        assert_eq!(
            rel("../toolvenv/lib/python3.11/site-packages/_pytest/python.py"),
            None
        );
        assert_eq!(rel("/work/../etc/passwd"), None);
        assert_eq!(rel("pkg/../../x.py"), None);
        assert_eq!(rel("<frozen importlib._bootstrap>"), None);
        assert_eq!(rel("C:\\x.py"), None);
        assert_eq!(rel("~/x.py"), None);
        assert_eq!(rel("./"), None);
        assert_eq!(rel(""), None);
    }

    #[test]
    fn the_longest_root_wins() {
        let roots = Roots::new(&["/data/", "/data/worktrees/w/"]);
        assert_eq!(
            roots.relative("/data/worktrees/w/a.py").as_deref(),
            Some("a.py")
        );
        assert!(!Roots::default().contains("/abs.py"));
    }
}
