//! Two runs over the same tasks side by side (`vibeloop eval compare A B`): each task's outcome
//! in both, the tasks B fixed and broke, the resolve rates and their difference with McNemar's
//! exact test on the discordant tasks, and what each run cost in total and per task. The runs
//! must hold the same instance ids; when a run holds one twice, its later line counts.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::report::{percent, tokens_text, usd_text};
use super::results::{Outcome, TaskResult};
use super::stats::mcnemar_exact;

/// The significance level the report judges p-values by.
pub const ALPHA: f64 = 0.05;

/// How many ids an error names on each side.
const NAMED: usize = 5;

/// Why two runs cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    #[error("no tasks to compare")]
    Empty,
    #[error("the runs hold different tasks: {}", mismatch(only_a, only_b))]
    Mismatch {
        /// Every id only A holds, sorted.
        only_a: Vec<String>,
        /// Every id only B holds, sorted.
        only_b: Vec<String>,
    },
}

fn mismatch(only_a: &[String], only_b: &[String]) -> String {
    let side = |name: &str, ids: &[String]| {
        let mut s = format!("{} only in {name} (", ids.len());
        s.push_str(
            &ids.iter()
                .take(NAMED)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        );
        if ids.len() > NAMED {
            s.push_str(&format!(", and {} more", ids.len() - NAMED));
        }
        s.push(')');
        s
    };
    let mut parts = vec![];
    if !only_a.is_empty() {
        parts.push(side("A", only_a));
    }
    if !only_b.is_empty() {
        parts.push(side("B", only_b));
    }
    parts.join(", ")
}

/// One task's outcome in both runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskPair {
    pub instance_id: String,
    pub a: Outcome,
    pub b: Outcome,
}

/// One run's totals over the compared tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub resolved: usize,
    /// `resolved` over the number of tasks.
    pub rate: f64,
    pub usd: f64,
    pub tokens: u64,
    pub mean_usd: f64,
    pub mean_tokens: f64,
}

impl Side {
    fn of(results: &[&TaskResult]) -> Side {
        let n = results.len().max(1) as f64;
        let resolved = results.iter().filter(|r| r.resolved()).count();
        let usd: f64 = results.iter().map(|r| r.usd()).sum();
        let tokens: u64 = results.iter().map(|r| r.tokens()).sum();
        Side {
            resolved,
            rate: resolved as f64 / n,
            usd,
            tokens,
            mean_usd: usd / n,
            mean_tokens: tokens as f64 / n,
        }
    }
}

/// Runs A and B over the same tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Every task, sorted by instance id.
    pub tasks: Vec<TaskPair>,
    pub a: Side,
    pub b: Side,
    /// Resolved by B, not by A (McNemar's c).
    pub fixed: Vec<String>,
    /// Resolved by A, not by B (McNemar's b).
    pub broken: Vec<String>,
    /// Unresolved in both, but ended differently (tests fail → error…).
    pub changed: Vec<String>,
    /// McNemar's exact two-sided p-value over `broken` and `fixed`.
    pub p_value: f64,
}

impl Comparison {
    pub fn n(&self) -> usize {
        self.tasks.len()
    }

    /// B's resolve rate minus A's, as a proportion (`0.2` is 20 points).
    pub fn difference(&self) -> f64 {
        self.b.rate - self.a.rate
    }

    /// B's dollars minus A's.
    pub fn usd_difference(&self) -> f64 {
        self.b.usd - self.a.usd
    }

    /// B's tokens minus A's.
    pub fn tokens_difference(&self) -> i128 {
        self.b.tokens as i128 - self.a.tokens as i128
    }

    /// Whether the difference in resolve rate is significant at [`ALPHA`].
    pub fn significant(&self) -> bool {
        self.p_value < ALPHA
    }
}

/// Compares run `a` with run `b`; both must hold the same instance ids.
pub fn compare(a: &[TaskResult], b: &[TaskResult]) -> Result<Comparison, CompareError> {
    let by_id = |rs: &[TaskResult]| -> BTreeMap<String, TaskResult> {
        rs.iter()
            .map(|r| (r.instance_id.clone(), r.clone()))
            .collect()
    };
    let (a, b) = (by_id(a), by_id(b));
    let only = |x: &BTreeMap<String, TaskResult>, y: &BTreeMap<String, TaskResult>| {
        x.keys()
            .filter(|k| !y.contains_key(*k))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (only_a, only_b) = (only(&a, &b), only(&b, &a));
    if !only_a.is_empty() || !only_b.is_empty() {
        return Err(CompareError::Mismatch { only_a, only_b });
    }
    if a.is_empty() {
        return Err(CompareError::Empty);
    }
    let mut tasks = vec![];
    let (mut fixed, mut broken, mut changed) = (vec![], vec![], vec![]);
    for (id, ra) in &a {
        let rb = &b[id];
        match (ra.resolved(), rb.resolved()) {
            (false, true) => fixed.push(id.clone()),
            (true, false) => broken.push(id.clone()),
            _ if ra.outcome != rb.outcome => changed.push(id.clone()),
            _ => {}
        }
        tasks.push(TaskPair {
            instance_id: id.clone(),
            a: ra.outcome,
            b: rb.outcome,
        });
    }
    let p_value = mcnemar_exact(broken.len() as u64, fixed.len() as u64);
    Ok(Comparison {
        tasks,
        a: Side::of(&a.values().collect::<Vec<_>>()),
        b: Side::of(&b.values().collect::<Vec<_>>()),
        fixed,
        broken,
        changed,
        p_value,
    })
}

/// A whole number with its sign: `+20`, `−20` (a true minus sign), `0`.
fn signed(x: i64) -> String {
    match x {
        0 => "0".to_owned(),
        x if x > 0 => format!("+{x}"),
        x => format!("−{}", x.unsigned_abs()),
    }
}

/// "(−$0.30; −25 %)": a change and, when there was something to change, its share.
fn change(diff: String, from: f64, by: f64) -> String {
    if from > 0.0 {
        format!("({diff}; {} %)", signed(percent(by / from)))
    } else {
        format!("({diff})")
    }
}

impl fmt::Display for Comparison {
    /// The CLI's report: rates, the difference and its test, cost, and the changed tasks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.n();
        for (name, s) in [("A", &self.a), ("B", &self.b)] {
            writeln!(
                f,
                "{name}: {} of {n} resolved ({} %)",
                s.resolved,
                percent(s.rate)
            )?;
        }
        let p = if self.p_value < 0.001 {
            "p < 0.001".to_owned()
        } else {
            format!("p = {:.3}", self.p_value)
        };
        writeln!(
            f,
            "difference: {} points; McNemar's exact test {p} (b = {}, c = {} discordant tasks): {}significant at {ALPHA}",
            signed(percent(self.difference())),
            self.broken.len(),
            self.fixed.len(),
            if self.significant() { "" } else { "not " },
        )?;
        let usd = self.usd_difference();
        let sign = if usd > 0.0 && usd_text(usd) != "$0.00" {
            "+"
        } else {
            ""
        };
        writeln!(
            f,
            "cost: A {}, B {} {}",
            usd_text(self.a.usd),
            usd_text(self.b.usd),
            change(format!("{sign}{}", usd_text(usd)), self.a.usd, usd),
        )?;
        let tokens = self.tokens_difference();
        let sign = match tokens.signum() {
            1 => "+",
            -1 => "−",
            _ => "",
        };
        let abs = u64::try_from(tokens.unsigned_abs()).unwrap_or(u64::MAX);
        writeln!(
            f,
            "tokens: A {}, B {} {}",
            tokens_text(self.a.tokens),
            tokens_text(self.b.tokens),
            change(
                format!("{sign}{}", tokens_text(abs)),
                self.a.tokens as f64,
                tokens as f64
            ),
        )?;
        writeln!(
            f,
            "per task: A {} and {} tokens, B {} and {} tokens",
            usd_text(self.a.mean_usd),
            tokens_text(self.a.mean_tokens.round() as u64),
            usd_text(self.b.mean_usd),
            tokens_text(self.b.mean_tokens.round() as u64),
        )?;
        let moved: Vec<&TaskPair> = self.tasks.iter().filter(|t| t.a != t.b).collect();
        if moved.is_empty() {
            return writeln!(f, "changed: none");
        }
        writeln!(f, "changed:")?;
        for t in moved {
            writeln!(
                f,
                "  {}: {} → {}",
                t.instance_id.escape_debug(),
                t.a.as_str(),
                t.b.as_str()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::results::RoleSpend;

    fn run(outcomes: &[(&str, Outcome, f64)]) -> Vec<TaskResult> {
        outcomes
            .iter()
            .map(|(id, o, usd)| {
                let mut r = TaskResult::error(id, "", 10.0);
                r.outcome = *o;
                r.roles.insert(
                    "builder".into(),
                    RoleSpend {
                        tokens: (usd * 1_000_000.0) as u64,
                        usd: *usd,
                        calls: 1,
                    },
                );
                r
            })
            .collect()
    }

    use Outcome::*;

    fn five() -> (Vec<TaskResult>, Vec<TaskResult>) {
        let a = run(&[
            ("t-1", Resolved, 0.3),
            ("t-2", Resolved, 0.3),
            ("t-3", Resolved, 0.2),
            ("t-4", TestsFail, 0.2),
            ("t-5", Error, 0.2),
        ]);
        let b = run(&[
            ("t-5", HumanNeeded, 0.1),
            ("t-4", Resolved, 0.2),
            ("t-3", Resolved, 0.2),
            ("t-2", Resolved, 0.2),
            ("t-1", Resolved, 0.2),
        ]);
        (a, b)
    }

    #[test]
    fn a_comparison_counts_fixed_broken_and_changed_tasks() {
        let (a, b) = five();
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.n(), 5);
        assert_eq!(c.fixed, ["t-4"]);
        assert!(c.broken.is_empty());
        assert_eq!(c.changed, ["t-5"]);
        assert_eq!((c.a.resolved, c.b.resolved), (3, 4));
        assert!((c.difference() - 0.2).abs() < 1e-12);
        assert_eq!(c.p_value, 1.0);
        assert!(!c.significant());
        assert!((c.usd_difference() + 0.3).abs() < 1e-9);
        assert!((c.a.mean_usd - 0.24).abs() < 1e-9);
        assert_eq!(c.tasks[0].instance_id, "t-1");
        assert_eq!((c.tasks[4].a, c.tasks[4].b), (Error, HumanNeeded));
    }

    #[test]
    fn the_report_reads_as_the_cli_prints_it() {
        let (a, b) = five();
        let text = compare(&a, &b).unwrap().to_string();
        assert_eq!(
            text,
            "A: 3 of 5 resolved (60 %)\n\
             B: 4 of 5 resolved (80 %)\n\
             difference: +20 points; McNemar's exact test p = 1.000 (b = 0, c = 1 discordant tasks): not significant at 0.05\n\
             cost: A $1.20, B $0.90 (−$0.30; −25 %)\n\
             tokens: A 1.2 M, B 900 k (−300 k; −25 %)\n\
             per task: A $0.24 and 240 k tokens, B $0.18 and 180 k tokens\n\
             changed:\n  \
             t-4: tests fail → resolved\n  \
             t-5: error → HumanNeeded\n"
        );
    }

    #[test]
    fn a_significant_difference_says_so() {
        let ids: Vec<String> = (0..12).map(|i| format!("t-{i:02}")).collect();
        let a = run(&ids
            .iter()
            .map(|i| (i.as_str(), TestsFail, 0.0))
            .collect::<Vec<_>>());
        let b = run(&ids
            .iter()
            .map(|i| (i.as_str(), Resolved, 0.0))
            .collect::<Vec<_>>());
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.fixed.len(), 12);
        assert!(c.significant());
        let text = c.to_string();
        assert!(text.contains("difference: +100 points; McNemar's exact test p < 0.001 (b = 0, c = 12 discordant tasks): significant at 0.05"), "{text}");
        assert!(text.contains("cost: A $0.00, B $0.00 ($0.00)\n"), "{text}");
        // The same run against itself: nothing changed.
        let same = compare(&a, &a).unwrap().to_string();
        assert!(
            same.contains("difference: 0 points; McNemar's exact test p = 1.000 (b = 0, c = 0")
        );
        assert!(same.ends_with("changed: none\n"));
    }

    #[test]
    fn runs_over_different_tasks_are_refused_naming_the_ids() {
        let ids: Vec<String> = (0..8).map(|i| format!("x-{i}")).collect();
        let mut a = run(&[("common", Resolved, 0.0)]);
        a.extend(run(&ids
            .iter()
            .map(|i| (i.as_str(), Resolved, 0.0))
            .collect::<Vec<_>>()));
        let b = run(&[("common", Resolved, 0.0), ("y-1", Error, 0.0)]);
        let e = compare(&a, &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the runs hold different tasks: 8 only in A (x-0, x-1, x-2, x-3, x-4, and 3 more), 1 only in B (y-1)"
        );
        assert_eq!(compare(&[], &[]).unwrap_err(), CompareError::Empty);
    }

    #[test]
    fn a_task_held_twice_counts_once_with_its_later_line() {
        let mut a = run(&[("t-1", Error, 0.1)]);
        a.extend(run(&[("t-1", Resolved, 0.1)]));
        let b = run(&[("t-1", Resolved, 0.1)]);
        let c = compare(&a, &b).unwrap();
        assert_eq!((c.n(), c.a.resolved, c.changed.len()), (1, 1, 0));
    }
}
