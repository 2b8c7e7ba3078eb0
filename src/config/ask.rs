//! `ask:` in `.github/hive.yml`: who may ask the read-only agent questions (`/hive ask`) and
//! what one answer may spend.

use serde::Deserialize;

use crate::llm::budget::Caps;

/// `ask:`: questions to the read-only agent.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Ask {
    /// The least repository permission that may ask: one of [`ASK_PERMISSIONS`]. Where the
    /// file leaves it out: `read` on a private repository, `triage` on a public one (every
    /// GitHub user reads a public repository).
    pub permission: String,
    /// Caps on one question's answer, never above `budget`'s.
    pub budget: Caps,
    /// Questions an hour, per person and per repository.
    pub rate: AskRate,
    /// What a repository's questions may cost in a day (US dollars); `0`: no cap.
    pub daily_budget: f64,
}

/// `ask.rate`: questions an hour.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AskRate {
    pub per_person: u32,
    pub per_repository: u32,
}

impl Default for AskRate {
    fn default() -> Self {
        Self {
            per_person: 5,
            per_repository: 30,
        }
    }
}

impl Default for Ask {
    fn default() -> Self {
        Self {
            permission: "read".into(),
            budget: Caps {
                max_usd: Some(1.0),
                max_tokens: Some(300_000),
                max_minutes: Some(10.0),
            },
            rate: AskRate::default(),
            daily_budget: 10.0,
        }
    }
}

/// GitHub's repository roles, weakest first: what `ask.permission` may name.
pub const ASK_PERMISSIONS: [&str; 5] = ["read", "triage", "write", "maintain", "admin"];

impl Ask {
    /// What is wrong with these settings, in the words of the config's error.
    pub(super) fn check(&self) -> Result<(), String> {
        if !(self.daily_budget >= 0.0 && self.daily_budget.is_finite()) {
            return Err(format!(
                "ask.daily_budget: {} is not a number of dollars (0 for no cap)",
                self.daily_budget
            ));
        }
        if !ASK_PERMISSIONS.contains(&self.permission.as_str()) {
            return Err(format!(
                "ask.permission: {:?} is none of {}",
                self.permission,
                ASK_PERMISSIONS.join(", ")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::repo::HiveConfig;

    #[test]
    fn asking_is_open_to_readers_within_its_own_caps_unless_the_file_says_otherwise() {
        let d = HiveConfig::default();
        assert_eq!(d.ask.permission, "read");
        assert_eq!(d.ask.budget.max_usd, Some(1.0));
        let c =
            HiveConfig::parse("ask: { permission: write, budget: { max_tokens: 50 } }\n").unwrap();
        assert_eq!(c.ask.permission, "write");
        assert_eq!(c.ask.budget.max_tokens, Some(50));
        let err = HiveConfig::parse("ask: { permission: owner }\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("ask.permission: \"owner\" is none of read"),
            "{err}"
        );
        assert_eq!((d.ask.rate.per_person, d.ask.rate.per_repository), (5, 30));
        assert_eq!(d.ask.daily_budget, 10.0);
        let c = HiveConfig::parse("ask: { rate: { per_person: 1 }, daily_budget: 0.5 }\n").unwrap();
        assert_eq!((c.ask.rate.per_person, c.ask.rate.per_repository), (1, 30));
        assert!(HiveConfig::parse("ask: { daily_budget: -1 }\n").is_err());
        let err = HiveConfig::parse("plan_label: hive\n").unwrap_err();
        assert!(err.to_string().contains("plan_label"), "{err}");
    }
}
