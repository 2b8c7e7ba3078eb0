//! `ci:` in `.github/hive.yml`: how the repository's own CI (GitHub Actions and any other App
//! or service that reports check runs or commit statuses) is heard before a change lands.

use serde::Deserialize;

/// Which of the repository's own checks on the pull request's head the landing waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Watch {
    /// Every check run and commit status other Apps report on the head, those the base's
    /// branch protection requires, and those that reported on the pull request's earlier heads.
    #[default]
    All,
    /// Only those the base's branch protection requires.
    Required,
    /// None: the bot lands on its own gates (GitHub still enforces branch protection).
    None,
}

impl Watch {
    pub fn as_str(self) -> &'static str {
        match self {
            Watch::All => "all",
            Watch::Required => "required",
            Watch::None => "none",
        }
    }
}

/// `ci:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ci {
    pub watch: Watch,
    /// Builder attempts the repository's CI may send back; its next failure asks a person.
    pub max_attempts: u32,
    /// Re-run a failing GitHub Actions job once on the same commit before the Builder is
    /// charged with it: one that passes then was flaky.
    pub rerun_failed: bool,
}

impl Default for Ci {
    fn default() -> Self {
        Self {
            watch: Watch::All,
            max_attempts: 2,
            rerun_failed: true,
        }
    }
}

impl Ci {
    pub fn check(&self) -> Result<(), String> {
        if self.max_attempts > 10 {
            return Err(format!(
                "ci.max_attempts: {} is more than 10; a CI that fails that often needs a person",
                self.max_attempts
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_watch_everything_twice_and_rerun_once() {
        let c: Ci = serde_yaml_ng::from_str("{}").unwrap();
        assert_eq!(c, Ci::default());
        assert_eq!(
            (c.watch, c.max_attempts, c.rerun_failed),
            (Watch::All, 2, true)
        );
        let c: Ci = serde_yaml_ng::from_str("{ watch: required, max_attempts: 0 }").unwrap();
        assert_eq!((c.watch, c.max_attempts), (Watch::Required, 0));
        assert!(serde_yaml_ng::from_str::<Ci>("{ watch: some }").is_err());
        assert!(serde_yaml_ng::from_str::<Ci>("{ retries: 1 }").is_err());
        assert!(
            Ci {
                max_attempts: 11,
                ..Ci::default()
            }
            .check()
            .is_err()
        );
    }
}
