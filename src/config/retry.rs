//! The retry engine's, the plan's and the knowledge check's settings of `.github/hive.yml`,
//! under the design's names: `retry:` (how often the Builder tries again, how long a step that
//! failed in passing waits before it runs again, and after how many such failures a person is
//! asked), `plan:` (how many steps a plan may have, how many times the Architect corrects it)
//! and `knowledge:` (what happens when a plan needs a library or service the repository lacks).

use serde::Deserialize;

/// `retry:`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Retry {
    /// Attempts of the Builder after failed gates (and of the Breaker after a failed red proof).
    pub max_retries: u32,
    /// The wait before a step that failed in passing (GitHub out of reach, a container that would
    /// not start, a person's push racing the bot's) runs again…
    pub base_delay_ms: u64,
    /// …multiplied by this after each further failure…
    pub backoff_multiplier: f64,
    /// …and never longer than this.
    pub max_delay_ms: u64,
    /// Failures in passing in a row, without progress, after which the ticket stops as
    /// HumanNeeded with a report instead of trying again.
    pub human_intervention_after: u32,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay_ms: 2_000,
            backoff_multiplier: 4.0,
            max_delay_ms: 300_000,
            human_intervention_after: 3,
        }
    }
}

impl Retry {
    /// The wait before the next run after `failures` failures in a row (1 for the first):
    /// `base_delay_ms × backoff_multiplier^(failures − 1)`, capped at `max_delay_ms`.
    pub fn delay_ms(&self, failures: u32) -> u64 {
        let exp = failures.saturating_sub(1).min(64) as i32;
        let d = self.base_delay_ms as f64 * self.backoff_multiplier.powi(exp);
        if d.is_finite() {
            (d as u64).min(self.max_delay_ms)
        } else {
            self.max_delay_ms
        }
    }

    pub(super) fn check(&self) -> Result<(), String> {
        if self.max_retries > 20 {
            return Err("retry.max_retries: must be at most 20".into());
        }
        if !(1..=3_600_000).contains(&self.base_delay_ms) {
            return Err("retry.base_delay_ms: must be from 1 to 3600000".into());
        }
        if !(self.backoff_multiplier >= 1.0 && self.backoff_multiplier <= 10.0) {
            return Err("retry.backoff_multiplier: must be from 1 to 10".into());
        }
        if self.max_delay_ms < self.base_delay_ms || self.max_delay_ms > 86_400_000 {
            return Err(
                "retry.max_delay_ms: must be at least retry.base_delay_ms and at most 86400000"
                    .into(),
            );
        }
        if !(1..=20).contains(&self.human_intervention_after) {
            return Err("retry.human_intervention_after: must be from 1 to 20".into());
        }
        Ok(())
    }
}

/// `plan:`: the shape the Architect's plan must have.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PlanLimits {
    /// Fewest steps a plan may have.
    pub min_steps: usize,
    /// Most steps a plan may have (more: split the issue).
    pub max_steps: usize,
    /// Times the Architect is asked to correct a plan the checks refuse, before a person is.
    pub decomposition_retries: u32,
}

impl Default for PlanLimits {
    fn default() -> Self {
        Self {
            min_steps: 1,
            max_steps: 30,
            decomposition_retries: 3,
        }
    }
}

impl PlanLimits {
    pub(super) fn check(&self) -> Result<(), String> {
        if !(1..=100).contains(&self.min_steps) {
            return Err("plan.min_steps: must be from 1 to 100".into());
        }
        if self.max_steps < self.min_steps || self.max_steps > 100 {
            return Err("plan.max_steps: must be from plan.min_steps to 100".into());
        }
        if self.decomposition_retries > 10 {
            return Err("plan.decomposition_retries: must be at most 10".into());
        }
        Ok(())
    }
}

/// `knowledge:`: the knowledge check of Preparing.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Knowledge {
    pub missing: MissingKnowledge,
}

/// What happens when the plan needs a library or a service the repository does not declare.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MissingKnowledge {
    /// The ticket is Blocked, with the reason and a question on the issue.
    #[default]
    Block,
    /// An issue of its own asks for what is missing, labelled so that the hive runs it first;
    /// the ticket waits (Blocked) and plans again once that change lands.
    DependencyTicket,
    /// The plan goes on; the timeline notes what was missing.
    Ignore,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_grows_by_the_multiplier_up_to_its_cap() {
        let r = Retry {
            base_delay_ms: 1_000,
            backoff_multiplier: 2.0,
            max_delay_ms: 5_000,
            ..Retry::default()
        };
        let delays: Vec<u64> = (1..=5).map(|n| r.delay_ms(n)).collect();
        assert_eq!(delays, [1_000, 2_000, 4_000, 5_000, 5_000]);
        // The defaults keep the bot's earlier waits: 2 s, then 8 s.
        let d = Retry::default();
        assert_eq!((d.delay_ms(1), d.delay_ms(2)), (2_000, 8_000));
        assert_eq!(d.delay_ms(u32::MAX), d.max_delay_ms);
    }

    #[test]
    fn out_of_range_settings_are_refused_by_name() {
        let bad = |r: Retry| r.check().unwrap_err();
        assert!(
            bad(Retry {
                base_delay_ms: 0,
                ..Retry::default()
            })
            .starts_with("retry.base_delay_ms")
        );
        assert!(
            bad(Retry {
                backoff_multiplier: 0.5,
                ..Retry::default()
            })
            .starts_with("retry.backoff_multiplier")
        );
        assert!(
            bad(Retry {
                max_delay_ms: 1,
                ..Retry::default()
            })
            .starts_with("retry.max_delay_ms")
        );
        assert!(
            bad(Retry {
                human_intervention_after: 0,
                ..Retry::default()
            })
            .starts_with("retry.human_intervention_after")
        );
        let p = PlanLimits {
            min_steps: 5,
            max_steps: 4,
            ..PlanLimits::default()
        };
        assert!(p.check().unwrap_err().starts_with("plan.max_steps"));
    }
}
