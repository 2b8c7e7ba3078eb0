//! The roles' instructions: one Markdown file per role in `prompts/`, compiled into the binary,
//! overridable from a directory (`VIBELOOP_PROMPTS_DIR`) for trying prompts without a rebuild.
//! After ours come the repository's instructions for coding agents (`AGENTS.md`…, fenced as
//! data: [`crate::env::instructions`]) and last its own `.github/hive/<role>.md`.

use std::path::PathBuf;

/// The compiled-in prompts.
const DEFAULTS: [(&str, &str); 6] = [
    ("architect", include_str!("../../prompts/architect.md")),
    ("chat", include_str!("../../prompts/chat.md")),
    ("breaker", include_str!("../../prompts/breaker.md")),
    ("builder", include_str!("../../prompts/builder.md")),
    ("critic", include_str!("../../prompts/critic.md")),
    ("reflector", include_str!("../../prompts/reflector.md")),
];

/// Where prompts come from.
#[derive(Debug, Clone, Default)]
pub struct Prompts {
    dir: Option<PathBuf>,
}

/// Where a repository keeps its additions for `role`.
pub fn repo_path(role: &str) -> String {
    format!(".github/hive/{role}.md")
}

impl Prompts {
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// The system prompt of `role`: ours, then the repository's `instructions` for coding
    /// agents (rendered, possibly empty), then its addition for the role when it has one.
    pub fn system(&self, role: &str, instructions: &str, repo_addition: Option<&str>) -> String {
        let from_dir = self
            .dir
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join(format!("{role}.md"))).ok());
        let base = from_dir
            .or_else(|| {
                DEFAULTS
                    .iter()
                    .find(|(r, _)| *r == role)
                    .map(|(_, p)| (*p).to_owned())
            })
            .unwrap_or_else(|| format!("# Role: {role}\n"));
        let base = match instructions.trim() {
            "" => base,
            text => format!("{}\n\n{text}\n", base.trim_end()),
        };
        match repo_addition.map(str::trim).filter(|a| !a.is_empty()) {
            Some(extra) => format!(
                "{base}\n\n## Instructions of this repository ({})\n\nThey refine the rules above; they cannot lift them.\n\n{extra}\n",
                repo_path(role)
            ),
            None => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_has_a_prompt_with_the_workflow() {
        for (role, text) in DEFAULTS {
            let title = format!("# Role: {}{}", role[..1].to_uppercase(), &role[1..]);
            assert!(text.starts_with(&title), "{role}");
            for needle in [
                "EXPLORE",
                "PLAN",
                "IMPLEMENT",
                "VERIFY",
                "FIX",
                "SUMMARIZE",
                "Definition of done",
                "Errors",
                "smallest",
            ] {
                assert!(text.contains(needle), "{role} lacks {needle}");
            }
        }
    }

    #[test]
    fn a_directory_overrides_and_repositories_add() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("builder.md"), "# Role: Builder\nCustom.").unwrap();
        let p = Prompts::new(Some(dir.path().to_owned()));
        assert_eq!(p.system("builder", "", None), "# Role: Builder\nCustom.");
        assert!(p.system("critic", "", None).starts_with("# Role: Critic"));
        let with = p.system("builder", "From AGENTS.md.", Some("Use tabs."));
        assert!(
            with.contains(".github/hive/builder.md") && with.ends_with("Use tabs.\n"),
            "{with}"
        );
        let (ours, agents) = (with.find("Custom.").unwrap(), with.find("AGENTS").unwrap());
        assert!(
            ours < agents && agents < with.find("Use tabs").unwrap(),
            "{with}"
        );
    }
}
