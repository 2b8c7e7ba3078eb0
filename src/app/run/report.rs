//! The final report of `vibeloop run`, written from what the bot observed — the ticket's
//! state, its checkpointed flow (plan, branches, red proof, gate results, the Critic's verdict,
//! the merge and tag), its spend — never from a model's claims; and where to look at the change.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::follow::{Ending, clean, minutes};
use crate::hive::flow::{Flow, Node};
use crate::ids::{CommitSha, TicketKey};
use crate::llm::budget::Spend;
use crate::store::Store;
use crate::store::tickets::Ticket;
use crate::ticket::TaskState;

/// Everything the report says.
pub struct Report {
    pub ticket: Ticket,
    pub flow: Flow,
    pub spent: Spend,
    /// What each role spent.
    pub roles: std::collections::BTreeMap<String, Spend>,
    pub ending: Ending,
    pub took: Duration,
    /// The person's repository.
    pub repo_path: PathBuf,
    /// The scratch copy on the forge.
    pub bare: PathBuf,
    pub data_dir: PathBuf,
    /// The change (the Builder's work with the tests) against its base: files, lines added,
    /// removed.
    pub diffstat: Option<(usize, usize, usize)>,
    /// Seconds waiting on models (on the critical path: the Architect, then the slower of the
    /// Breaker and the Builder, who work side by side) and running gates (the red proof and the
    /// gates, in their sandboxes); the rest of `took` is the hive's own.
    pub model_seconds: f64,
    pub gate_seconds: f64,
}

/// `(model, gates)` seconds of a ticket's whole timeline (see [`Report::model_seconds`]). The
/// ticket benchmark splits only label → pull request, before the Critic, so it counts its own.
fn time_split(events: &[(i64, String, serde_json::Value)]) -> (f64, f64) {
    let mut by_role = std::collections::HashMap::<&str, f64>::new();
    let mut gates = 0.0;
    for (_, kind, data) in events {
        let secs = data["millis"].as_f64().unwrap_or(0.0) / 1000.0;
        match kind.as_str() {
            "llm_usage" => {
                *by_role
                    .entry(data["role"].as_str().unwrap_or(""))
                    .or_default() += secs
            }
            "stage_exit" if matches!(data["stage"].as_str(), Some("gates" | "red_proof")) => {
                gates += secs
            }
            _ => {}
        }
    }
    let role = |r: &str| by_role.get(r).copied().unwrap_or(0.0);
    let others: f64 = by_role
        .iter()
        .filter(|(r, _)| !matches!(**r, "architect" | "breaker" | "builder"))
        .map(|(_, s)| s)
        .sum();
    let model = role("architect") + role("breaker").max(role("builder")) + others;
    (model, gates)
}

/// Files, lines added and lines removed from `base` to `head` in bare repository `bare`.
fn diffstat(
    bare: &std::path::Path,
    base: &CommitSha,
    head: &CommitSha,
) -> Option<(usize, usize, usize)> {
    let git = crate::forge::gitops::open(bare)?;
    let files = crate::forge::gitops::diff_files(&git, Some(base.oid()), head.oid());
    let (add, del) = files
        .iter()
        .fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
    Some((files.len(), add, del))
}

impl Report {
    /// Reads what the report needs from the run's store.
    pub async fn gather(
        store: &Store,
        key: TicketKey,
        ending: Ending,
        took: Duration,
        paths: (PathBuf, PathBuf, PathBuf),
    ) -> anyhow::Result<Self> {
        let ticket = store
            .ticket(key)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the run's ticket is gone from its database"))?;
        let flow = crate::hive::flow::load(store, key).await?;
        let mut spent = Spend::default();
        let roles = store.budget(key).await?;
        for s in roles.values() {
            spent.add(s);
        }
        let (repo_path, bare, data_dir) = paths;
        let diffstat = match (&flow.plan.base_sha, &flow.code.builder) {
            (Some(base), Some(w)) => diffstat(&bare, base, &w.sha),
            _ => None,
        };
        let (model_seconds, gate_seconds) = time_split(&store.events(key).await?);
        Ok(Self {
            diffstat,
            model_seconds,
            gate_seconds,
            roles,
            ticket,
            flow,
            spent,
            ending,
            took,
            repo_path,
            bare,
            data_dir,
        })
    }

    /// What the run observed, for programs (`--json-report`, read by `vibeloop eval`).
    pub fn json(&self) -> serde_json::Value {
        let (t, flow) = (&self.ticket, &self.flow);
        let ending = match &self.ending {
            Ending::Stopped(TaskState::Completed) => "completed",
            Ending::Stopped(TaskState::Blocked) => "blocked",
            Ending::Stopped(TaskState::HumanNeeded) => "human_needed",
            Ending::Stopped(_) => "failed",
            Ending::Waiting(_) => "waiting",
            Ending::TimedOut => "timed_out",
            Ending::Interrupted => "interrupted",
        };
        let roles: serde_json::Map<String, serde_json::Value> = self
            .roles
            .iter()
            .map(|(role, s)| {
                let v = serde_json::json!({ "tokens": s.tokens(), "usd": s.cost_usd, "calls": s.calls });
                (role.clone(), v)
            })
            .collect();
        serde_json::json!({
            "ticket": t.id.to_string(),
            "state": t.state.to_string(),
            "ending": ending,
            "detail": t.detail,
            "questions": flow.plan.questions,
            "base": flow.plan.base_sha.as_ref().map(|s| s.to_string()),
            "head": flow.code.builder.as_ref().map(|w| w.sha.to_string()),
            "merged": flow.land.merged.as_ref().map(|s| s.to_string()),
            "attempts": flow.code.attempts.len(),
            "diff": self.diffstat.map(|(files, added, removed)| serde_json::json!({ "files": files, "added": added, "removed": removed })),
            "roles": roles,
            "seconds": self.took.as_secs_f64(),
            "model_seconds": self.model_seconds,
            "gate_seconds": self.gate_seconds,
            "bare": self.bare,
            "data_dir": self.data_dir,
        })
    }

    /// The process exit code: 0 when the change is done or ready for a person's approval.
    pub fn exit_code(&self) -> u8 {
        match &self.ending {
            Ending::Stopped(TaskState::Completed) | Ending::Waiting(_) => 0,
            Ending::Interrupted => 130,
            _ => 1,
        }
    }

    /// Where the ticket ended, and what to do next if anything.
    fn outcome(&self) -> (String, Option<&'static str>) {
        let t = &self.ticket;
        match &self.ending {
            Ending::Stopped(TaskState::Completed) => (format!("{} completed", t.id), None),
            Ending::Stopped(TaskState::Blocked) => (
                format!("{} is blocked on questions", t.id),
                Some("answer them in --goal and run again"),
            ),
            Ending::Stopped(TaskState::HumanNeeded) => (
                format!("{} stopped: {}", t.id, TaskState::HumanNeeded),
                Some("deal with what the report below says, then run again"),
            ),
            Ending::Stopped(state) => (format!("{} stopped: {state}", t.id), None),
            Ending::Waiting(Node::AwaitPlanApproval) => (
                format!("{} waits for the plan's approval", t.id),
                Some("run again without --plan-only, with --approve, to build it"),
            ),
            Ending::Waiting(_)
                if self
                    .flow
                    .code
                    .attempts
                    .last()
                    .and_then(|a| a.held())
                    .is_some() =>
            {
                (
                    format!(
                        "{} waits for a person: its gates passed, but {}",
                        t.id,
                        crate::gates::HELD
                    ),
                    Some(
                        "read them (listed under the gates); run again with --approve if they are right",
                    ),
                )
            }
            Ending::Waiting(_) => (
                format!("{} is ready and waits for approval", t.id),
                Some("run again with --approve to also merge it into the scratch copy and tag it"),
            ),
            Ending::TimedOut => (
                format!("{} was still {} when the time ran out", t.id, t.state),
                Some("allow more with --timeout-minutes"),
            ),
            Ending::Interrupted => (format!("{} was interrupted while {}", t.id, t.state), None),
        }
    }
}

/// `text` in lines of at most `width` characters, broken between words and never inside a
/// `code span` (a longer word or span stands alone on its line), so what a person copies or
/// searches for stays whole.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut units: Vec<String> = Vec::new();
    let mut in_code = false;
    for word in text.split_whitespace() {
        match units.last_mut() {
            Some(open) if in_code => {
                open.push(' ');
                open.push_str(word);
            }
            _ => units.push(word.to_owned()),
        }
        if word.matches('`').count() % 2 == 1 {
            in_code = !in_code;
        }
    }
    let mut lines = vec![String::new()];
    for unit in units {
        let line = lines.last_mut().expect("never empty");
        if !line.is_empty() && line.chars().count() + 1 + unit.chars().count() > width {
            lines.push(unit);
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&unit);
        }
    }
    lines
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, flow) = (&self.ticket, &self.flow);
        let (outcome, next) = self.outcome();
        writeln!(f)?;
        writeln!(f, "{outcome} ({})", minutes(self.took))?;
        if let Some(next) = next {
            writeln!(f, "  next: {next}")?;
        }
        // A waiting ticket's detail tells GitHub users how to approve; the line above tells this
        // person.
        let detail = t.detail.as_deref().filter(|d| !d.trim().is_empty());
        if let Some(detail) = detail.filter(|_| !matches!(self.ending, Ending::Waiting(_))) {
            // Wrapped, not cut: the report's last words are usually what to do.
            let lines = detail.lines().filter(|l| !l.trim().is_empty());
            for line in lines.flat_map(|l| wrap(&clean(l, 600), 100)).take(24) {
                writeln!(f, "  {line}")?;
            }
        }
        for q in &flow.plan.questions {
            writeln!(f, "  ? {}", clean(q, 160))?;
        }
        if let Some(b) = &flow.plan.blueprint {
            writeln!(f, "plan:     {}", clean(&b.plan.title, 100))?;
            for (i, step) in b.plan.steps.iter().enumerate() {
                writeln!(f, "          {}. {}", i + 1, clean(&step.output, 100))?;
            }
        }
        let files = |list: &[String]| {
            if list.is_empty() {
                return "no file".to_owned();
            }
            let shown: Vec<String> = list.iter().take(6).map(|p| clean(p, 60)).collect();
            let more = list.len().saturating_sub(shown.len());
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("{}{more}", shown.join(", "))
        };
        if let Some(w) = &flow.tests.breaker {
            writeln!(
                f,
                "tests:    {} at {} ({})",
                t.id.test_branch(),
                w.sha.short(),
                files(&w.files)
            )?;
        }
        if let Some(v) = &flow.tests.red_proof {
            writeln!(f, "proof:    {}", clean(&v.describe(), 140))?;
        }
        if let Some(w) = &flow.code.builder {
            let stat = self
                .diffstat
                .map(|(n, add, del)| format!(": {n} file(s), +{add} -{del}"))
                .unwrap_or_default();
            writeln!(
                f,
                "change:   {} at {}, attempt {}{stat} with the tests; the Builder wrote {}",
                t.id.feat_branch(),
                w.sha.short(),
                w.attempt,
                files(&w.files)
            )?;
        }
        if let Some(a) = flow.code.attempts.last() {
            let gates: Vec<String> = a
                .gates
                .iter()
                .map(|g| match (g.skipped || g.result == "skipped", g.passed) {
                    (true, _) => format!("- {} (skipped)", g.gate),
                    (false, true) if g.held.is_some() => {
                        format!("! {} ({})", g.gate, clean(&g.result, 60))
                    }
                    (false, true) => format!("✓ {} ({})", g.gate, clean(&g.result, 60)),
                    (false, false) => format!("✗ {} ({})", g.gate, clean(&g.result, 60)),
                })
                .collect();
            writeln!(f, "gates:    {}", gates.join(" · "))?;
            if let Some(why) = a.held() {
                writeln!(f, "held:     {}", clean(why, 300))?;
            }
        }
        if let Some(r) = &flow.review.critic {
            let verdict = if r.approve {
                "approved"
            } else {
                "asked for changes"
            };
            writeln!(
                f,
                "review:   the Critic {verdict}: {} ({} inline comment(s))",
                clean(&r.summary, 120),
                r.comments
            )?;
        }
        if let Some(pr) = flow.review.pr {
            writeln!(f, "pull:     #{pr} on the scratch copy")?;
        }
        if let Some(sha) = &flow.land.merged {
            let tag = flow
                .land
                .tag
                .as_deref()
                .map(|t| format!(", tagged {t}"))
                .unwrap_or_default();
            writeln!(
                f,
                "landed:   {} of the scratch copy at {}{tag}",
                t.base_branch,
                sha.short()
            )?;
        }
        writeln!(f, "spent:    {}", self.spent.describe())?;
        writeln!(f)?;
        let repo = self.repo_path.display();
        writeln!(f, "Nothing was pushed: {repo} is as it was.")?;
        if flow.code.builder.is_some() {
            let branch = match &flow.land.merged {
                Some(_) => t.base_branch.clone(),
                None => t.id.feat_branch(),
            };
            writeln!(
                f,
                "See the change:  git -C {repo} fetch {} {branch} && git -C {repo} diff {}...FETCH_HEAD",
                self.bare.display(),
                t.base_branch
            )?;
        }
        writeln!(
            f,
            "The scratch copy, worktrees and timeline are in {}",
            self.data_dir.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn model_time_follows_the_critical_path_and_gates_add_up() {
        let ev = |kind: &str, data: serde_json::Value| (0, kind.to_owned(), data);
        let events = vec![
            ev("llm_usage", json!({ "role": "architect", "millis": 1000 })),
            ev("llm_usage", json!({ "role": "breaker", "millis": 2000 })),
            ev("llm_usage", json!({ "role": "builder", "millis": 3000 })),
            ev("llm_usage", json!({ "role": "builder", "millis": 500 })),
            ev("llm_usage", json!({ "role": "critic", "millis": 250 })),
            ev("stage_exit", json!({ "stage": "red_proof", "millis": 400 })),
            ev("stage_exit", json!({ "stage": "gates", "millis": 1600 })),
            ev(
                "stage_exit",
                json!({ "role": "builder", "stage": "agent_loop", "millis": 9000 }),
            ),
        ];
        // The Breaker and the Builder work side by side: only the slower one counts.
        assert_eq!(super::time_split(&events), (1.0 + 3.5 + 0.25, 2.0));
    }

    #[test]
    fn long_lines_are_wrapped_between_words_and_nothing_is_lost() {
        let text = "No test command: no ecosystem was detected on the base and `.github/hive.yml` sets no `gates.test`. Add one, then `/hive retry`.";
        let lines = super::wrap(text, 40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(
            super::wrap("a-very-long-word b", 5),
            ["a-very-long-word", "b"]
        );
    }
}
