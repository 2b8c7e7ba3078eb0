//! The self-healing loop (Validator → Reflector → Corrector) around an agent's output:
//! deterministic checks first and, when they pass, an optional model check ([`layered`]);
//! findings are a JSON list ([`report`]); at most three rounds of correction; the loop stops
//! early when a round does not reduce the findings ([`Healer`]).

use std::future::Future;

use serde::Serialize;

use crate::ticket::Finding;

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HealStop {
    /// No findings left.
    Clean,
    /// A round did not reduce the findings.
    NoProgress,
    /// The rounds ran out.
    MaxRounds,
}

pub const MAX_ROUNDS: u32 = 3;

/// What to do with an output and its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Ask for a correction: this is round `round` (which also raises the temperature).
    Correct { round: u32 },
    /// Stop healing, for this reason.
    Stop(HealStop),
}

/// The loop's bookkeeping: callers check an output, ask [`Healer::next`], and either correct
/// (giving the model the findings as JSON, see [`report`]) or stop.
///
/// ```text
/// let mut healer = Healer::new(MAX_ROUNDS);
/// loop {
///     let findings = check(&output);
///     match healer.next(&findings) {
///         Next::Correct { round } => output = correct(output, report(&findings), round).await?,
///         Next::Stop(why) => break,
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Healer {
    max_rounds: u32,
    rounds: u32,
    last: Option<usize>,
}

impl Healer {
    pub fn new(max_rounds: u32) -> Self {
        Self {
            max_rounds,
            rounds: 0,
            last: None,
        }
    }

    /// Correction rounds asked for so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Decides after a check: clean, no progress since the last round, out of rounds, or
    /// another round.
    pub fn next(&mut self, findings: &[Finding]) -> Next {
        if findings.is_empty() {
            return Next::Stop(HealStop::Clean);
        }
        if self.last.is_some_and(|last| findings.len() >= last) {
            return Next::Stop(HealStop::NoProgress);
        }
        if self.rounds >= self.max_rounds {
            return Next::Stop(HealStop::MaxRounds);
        }
        self.last = Some(findings.len());
        self.rounds += 1;
        Next::Correct { round: self.rounds }
    }
}

/// The findings as the JSON list given to the model.
pub fn report(findings: &[Finding]) -> String {
    serde_json::to_string(findings).unwrap_or_else(|_| "[]".into())
}

/// Runs the deterministic `checks`; when they find nothing, the optional `model` check.
pub async fn layered<E, F>(deterministic: Vec<Finding>, model: Option<F>) -> Result<Vec<Finding>, E>
where
    F: Future<Output = Result<Vec<Finding>, E>>,
{
    match model {
        Some(m) if deterministic.is_empty() => m.await,
        _ => Ok(deterministic),
    }
}

/// Reads a model's findings: a JSON list, possibly inside a ```json fence or prose.
pub fn parse_findings(text: &str) -> Option<Vec<Finding>> {
    let start = text.find('[')?;
    let end = text.rfind(']')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issues(n: usize) -> Vec<Finding> {
        (0..n)
            .map(|i| Finding::new("x", format!("problem {i}")))
            .collect()
    }

    /// Runs the loop on a number of problems: each correction fixes `fix` of them.
    fn drive(mut problems: usize, fix: usize) -> (usize, u32, HealStop) {
        let mut healer = Healer::new(MAX_ROUNDS);
        loop {
            match healer.next(&issues(problems)) {
                Next::Correct { round } => {
                    assert_eq!(round, healer.rounds());
                    assert!(report(&issues(problems)).starts_with("[{\"code\":\"x\""));
                    problems -= fix.min(problems);
                }
                Next::Stop(why) => return (problems, healer.rounds(), why),
            }
        }
    }

    #[test]
    fn corrections_run_until_clean() {
        assert_eq!(drive(2, 1), (0, 2, HealStop::Clean));
        assert_eq!(drive(0, 1), (0, 0, HealStop::Clean));
    }

    #[test]
    fn a_round_without_progress_stops_early() {
        assert_eq!(drive(2, 0), (2, 1, HealStop::NoProgress));
    }

    #[test]
    fn at_most_three_rounds() {
        assert_eq!(drive(100, 1), (97, 3, HealStop::MaxRounds));
    }

    #[tokio::test]
    async fn the_model_check_runs_only_when_the_deterministic_one_passes() {
        let model = async { Ok::<_, ()>(issues(1)) };
        assert_eq!(layered(issues(2), Some(model)).await.unwrap().len(), 2);
        let model = async { Ok::<_, ()>(issues(1)) };
        assert_eq!(layered(vec![], Some(model)).await.unwrap().len(), 1);
        assert!(
            layered::<(), std::future::Ready<Result<Vec<Finding>, ()>>>(vec![], None)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn model_findings_are_read_from_fenced_json() {
        let text =
            "Here you go:\n```json\n[{\"code\":\"vague\",\"message\":\"say which file\"}]\n```";
        assert_eq!(parse_findings(text).unwrap()[0].code, "vague");
        assert_eq!(parse_findings("no json here"), None);
        assert_eq!(parse_findings("[]"), Some(vec![]));
    }
}
