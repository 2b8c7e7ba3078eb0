//! The status comment: one per ticket, found again by its hidden marker and edited in place.
//! It says where the ticket is, what the bot observed, and what a person can do next.

use crate::gates::GateResult;
use crate::gates::report::code_block;
use crate::hive::flow::state::{Flow, MergeConflict};
use crate::llm::budget::Spend;
use crate::store::tickets::Ticket;
use crate::ticket::{TaskState, TicketId};

/// The hidden marker that identifies a ticket's status comment.
pub fn marker(id: TicketId) -> String {
    format!("<!-- vibeloop:status {id} -->")
}

/// What the comment shows beyond the ticket row.
#[derive(Debug, Default, Clone, Copy)]
pub struct Extras<'a> {
    pub gates: Option<&'a [GateResult]>,
    pub pr_url: Option<&'a str>,
    pub files_changed: Option<&'a [String]>,
    /// What the agents spent so far.
    pub spent: Option<Spend>,
    /// The workflow's state: plan, attempts, review.
    pub flow: Option<&'a Flow>,
}

/// The comment's Markdown.
pub fn render(t: &Ticket, extras: &Extras<'_>) -> String {
    let icon = match t.state {
        TaskState::Completed | TaskState::AwaitingVerification => "✅",
        TaskState::Failed => "❌",
        TaskState::Blocked | TaskState::HumanNeeded => "✋",
        _ => "⏳",
    };
    let mut s = format!(
        "{}\n### {icon} Vibeloop {} · {}\n\n",
        marker(t.id),
        t.id,
        t.state.describe()
    );
    if let Some(detail) = &t.detail {
        s.push_str(&format!("{}\n\n", detail.trim()));
    }
    s.push_str("| | |\n|---|---|\n");
    s.push_str(&format!("| State | `{}` |\n", t.state));
    s.push_str(&format!("| Branch | `{}` |\n", t.id.feat_branch()));
    if let Some(sha) = &t.head_sha {
        s.push_str(&format!("| Head | `{}` |\n", &sha[..sha.len().min(7)]));
    }
    if let Some(files) = extras.files_changed {
        s.push_str(&format!("| Files changed | {} |\n", files.len()));
    }
    for g in extras.gates.unwrap_or_default() {
        let link = g
            .check_run_url
            .as_deref()
            .map(|u| format!(" ([details]({u}))"))
            .unwrap_or_default();
        s.push_str(&format!("| `hive/{}` | {}{link} |\n", g.gate, g.describe()));
    }
    // One row for the pull request: its address when known, else its number.
    let pr_url = extras
        .pr_url
        .or_else(|| extras.flow.and_then(|f| f.review.pr_url.as_deref()));
    match (t.pr_number, pr_url) {
        (_, Some(url)) => s.push_str(&format!("| Pull request | {url} |\n")),
        (Some(n), None) => s.push_str(&format!("| Pull request | #{n} |\n")),
        _ => {}
    }
    if extras.flow.is_some() {
        s.push_str(&format!("| Tests | `{}` |\n", t.id.test_branch()));
    }
    if let Some(spent) = extras.spent {
        s.push_str(&format!("| Budget spent | {} |\n", spent.describe()));
    }
    if let Some(by) = extras.flow.and_then(|f| f.plan.edit_refused.as_deref()) {
        s.push_str(&format!(
            "| Issue text | as labelled: edited by @{by} after labelling. Re-label the issue or comment `/hive plan` to take the edit. |\n"
        ));
    }
    if let Some(f) = extras.flow.filter(|f| !f.plan.instructions.is_empty()) {
        let files: Vec<String> = f
            .plan
            .instructions
            .iter()
            .map(|p| format!("`{p}`"))
            .collect();
        s.push_str(&format!("| Instructions read | {} |\n", files.join(", ")));
    }
    for g in extras.gates.unwrap_or_default().iter().filter(|g| !g.ok()) {
        s.push_str(&format!(
            "\n<details><summary><code>hive/{}</code>: {}</summary>\n\n",
            g.gate,
            g.describe()
        ));
        for a in g.annotations.iter().take(10) {
            s.push_str(&format!(
                "- `{}:{}` {}\n",
                a.path.replace('`', "'"),
                a.start_line,
                a.message.replace('\n', " ")
            ));
        }
        if g.annotations.len() > 10 {
            s.push_str(&format!(
                "- … {} more on the check run\n",
                g.annotations.len() - 10
            ));
        }
        if let Some(out) = &g.output {
            s.push('\n');
            s.push_str(&code_block(&out.tail(30)));
        }
        s.push_str("\n\n</details>\n");
    }
    if let Some(flow) = extras.flow {
        s.push_str(&status_section(flow));
    }
    s.push_str(&format!("\n{}\n", next_step(t.state)));
    s
}

fn next_step(state: TaskState) -> &'static str {
    match state {
        TaskState::Failed => "_To try again: `/hive retry`, or remove the label and add it again._",
        TaskState::HumanNeeded => {
            "_A person decides: `/hive feedback <hint>` then `/hive retry`, or take over the branch._"
        }
        TaskState::Blocked => "_Waiting for people: see above. `/hive help` lists the commands._",
        TaskState::AwaitingVerification => {
            "_Review the pull request; `/hive approve` (or an approving review) lets the bot merge it._"
        }
        TaskState::Completed => "_Done._",
        _ => {
            "_This comment updates as the work goes on. `/hive status` or `/hive abort` at any time._"
        }
    }
}

/// The plan checklist and the attempts table, for the status comment.
pub fn status_section(f: &Flow) -> String {
    let mut s = String::new();
    if let Some(bp) = &f.plan.blueprint {
        let done = f.code.attempts.last().is_some_and(|a| a.passed());
        s.push_str(&format!(
            "\n**Plan: {}**\n\n",
            bp.plan.title.replace('\n', " ")
        ));
        for step in &bp.plan.steps {
            let mark = if done { "x" } else { " " };
            s.push_str(&format!(
                "- [{mark}] {} → {}\n",
                step.input.replace('\n', " "),
                step.output.replace('\n', " ")
            ));
        }
    }
    if let Some(v) = &f.tests.red_proof {
        let mark = if v.holds() { "✓" } else { "✗" };
        s.push_str(&format!("\n{mark} Red proof: {}.\n", v.describe()));
    }
    if !f.code.attempts.is_empty() {
        let gates: Vec<String> = f.code.attempts[0]
            .gates
            .iter()
            .map(|g| g.gate.clone())
            .collect();
        s.push_str(&format!(
            "\n| attempt | commit | {} |\n|---|---|{}\n",
            gates.join(" | "),
            "---|".repeat(gates.len())
        ));
        for a in &f.code.attempts {
            let cells: Vec<&str> = a
                .gates
                .iter()
                .map(|g| match (g.skipped, g.passed) {
                    (true, _) => "➖ skipped",
                    (false, true) => "✅",
                    (false, false) => "❌",
                })
                .collect();
            let cells = if cells.is_empty() {
                vec!["❌ (tests conflict)"]
            } else {
                cells
            };
            s.push_str(&format!(
                "| {} | `{}` | {} |\n",
                a.n,
                a.sha.short(),
                cells.join(" | ")
            ));
        }
        if let Some(env) = f.code.attempts.last().and_then(|a| a.environment.as_ref()) {
            s.push_str(&format!("\nDependencies: {env}.\n"));
        }
    }
    if !f.code.people.is_empty() {
        let who: Vec<String> = f
            .code
            .people
            .iter()
            .map(|p| {
                format!(
                    "{} (`{}`)",
                    p.name.replace(['\n', '|', '*', '_', '`'], " "),
                    p.sha.short()
                )
            })
            .collect();
        s.push_str(&format!(
            "\nCommits by people in this change (credited as co-authors when it lands): {}.\n",
            who.join(", ")
        ));
    }
    s.push_str(&people_tests(&f.tests.people_tests));
    if let Some(r) = &f.review.critic {
        let verdict = if r.approve {
            "approves"
        } else {
            "asks for changes"
        };
        s.push_str(&format!(
            "\nThe Critic {verdict} ({} comment(s)).\n",
            r.comments
        ));
    }
    if let Some(c) = &f.land.conflict {
        s.push_str(&merge_conflict(c, f.land.merged.is_some()));
    }
    if let Some(tag) = &f.land.tag {
        s.push_str(&format!("\nSnapshot: `{tag}`.\n"));
    }
    s
}

/// What the last rebase conflict (strategy C) did to the branch and where the ticket stands:
/// shared by the status comment and the dashboard.
fn merge_conflict(c: &MergeConflict, landed: bool) -> String {
    let code = |t: &str| format!("`{}`", t.replace(['\n', '`'], " "));
    let files: Vec<String> = c.files.iter().map(|f| code(f)).collect();
    let check = match &c.check_run_url {
        Some(url) => format!("[`hive/merge`]({url})"),
        None => "`hive/merge`".to_owned(),
    };
    let refused = if c.model_refused {
        " (a model's merge was refused)"
    } else {
        ""
    };
    let what = format!(
        "Rebase onto {} (`{}`) conflicted in {}{refused}: {} was marked failed ({check})",
        code(&c.base),
        c.onto.short(),
        files.join(", "),
        code(&c.branch)
    );
    if landed {
        format!("\n{what}; the ticket was requeued, redone on the new base, and landed.\n")
    } else if c.requeue > c.max_requeues {
        format!(
            "\n**Merge failed.** {what}, after {} requeues: none is left, a person decides.\n",
            c.max_requeues
        )
    } else {
        format!(
            "\n**Merge failed.** {what}. Requeued ({} of {}) behind the repository's other queued tickets; its requeued tickets run one at a time until they land, and the Builder redoes this change on the current base.\n",
            c.requeue, c.max_requeues
        )
    }
}

/// One line per time people changed the Breaker's tests: whose, which files, and that the test
/// lock and the red proof now stand on their version. Shared by the status comment and the pull
/// request's description.
pub fn people_tests(changes: &[crate::hive::flow::state::PeopleTests]) -> String {
    let clean = |t: &str| t.replace(['\n', '`', '*', '_', '|', '<', '>'], " ");
    let mut s = String::new();
    for c in changes {
        let files: Vec<String> = c
            .paths
            .iter()
            .map(|p| format!("`{}`", p.replace(['\n', '`'], " ")))
            .collect();
        let by: Vec<String> = c.by.iter().map(|b| clean(b)).collect();
        s.push_str(&format!(
            "\nTests changed by {} ({}): the test lock and the red proof were taken again from their version (`{}` on the tests' branch).\n",
            by.join(", "),
            files.join(", "),
            c.tests.short()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hive::flow::state::Landing;
    use crate::ids::CommitSha;

    #[test]
    fn a_conflict_says_the_branch_failed_and_where_the_ticket_goes() {
        let c = MergeConflict {
            branch: "feat/T-2".into(),
            head: CommitSha::parse(&"a".repeat(40)).unwrap(),
            base: "main".into(),
            onto: CommitSha::parse(&"b".repeat(40)).unwrap(),
            files: vec!["calc.py".into(), "x`y.py".into()],
            requeue: 1,
            max_requeues: 3,
            model_refused: false,
            check_run_url: Some("https://github.test/run/7".into()),
        };
        let mut flow = Flow {
            land: Landing {
                conflict: Some(c.clone()),
                ..Default::default()
            },
            ..Flow::default()
        };
        let s = status_section(&flow);
        assert!(
            s.contains("**Merge failed.** Rebase onto `main` (`bbbbbbb`) conflicted in `calc.py`, `x y.py`: `feat/T-2` was marked failed ([`hive/merge`](https://github.test/run/7)). Requeued (1 of 3) behind the repository's other queued tickets"),
            "{s}"
        );
        flow.land.conflict = Some(MergeConflict {
            requeue: 4,
            model_refused: true,
            check_run_url: None,
            ..c
        });
        let s = status_section(&flow);
        assert!(
            s.contains("`x y.py` (a model's merge was refused): `feat/T-2` was marked failed (`hive/merge`), after 3 requeues: none is left, a person decides."),
            "{s}"
        );
        flow.land.merged = flow.land.conflict.as_ref().map(|c| c.onto.clone());
        let s = status_section(&flow);
        assert!(
            !s.contains("Merge failed")
                && s.contains("requeued, redone on the new base, and landed"),
            "{s}"
        );
    }
}
