//! What the bot says about a ticket, from the facts in its [`Flow`](super::Flow): the pull
//! request's definition-of-done summary, and the plan and attempts in the status comment.
//! Only observations: commits, gate results, the red proof, the spend — never a model's claim.

use super::Ctx;
use super::state::Flow;
use crate::ids::CommitSha;

/// The pull request's description.
pub(super) fn pull_body(cx: &Ctx<'_, '_>, head: &CommitSha, files: &[String]) -> String {
    let t = &cx.run.ticket;
    let f = &cx.flow;
    let mut s = format!(
        "Closes #{}.\n\nVibeloop ticket **{}**",
        t.issue_number, t.id
    );
    if let Some(bp) = &f.blueprint {
        s.push_str(&format!(": {}", bp.plan.title.replace('\n', " ")));
    }
    s.push_str(&format!(
        "\n\n### Definition of done: what the bot observed on `{}`\n\n",
        head.short()
    ));
    s.push_str("| check | result |\n|---|---|\n");
    if let Some(v) = &f.red_proof {
        s.push_str(&format!(
            "| red proof (the new tests on the base) | {} |\n",
            v.describe()
        ));
    }
    if let Some(a) = f.attempts.last() {
        for g in &a.gates {
            s.push_str(&format!("| `hive/{}` | {} |\n", g.gate, g.result));
        }
    }
    s.push_str(&format!(
        "\nAttempts of the Builder: {}.",
        f.attempts.len().max(1)
    ));
    if let Some(spent) = cx.run.spent {
        s.push_str(&format!(" Budget spent: {}.", spent.describe()));
    }
    s.push_str(&format!("\n\nFiles changed ({}):\n\n", files.len()));
    for p in files.iter().take(50) {
        s.push_str(&format!("- `{}`\n", p.replace('`', "'")));
    }
    if files.len() > 50 {
        s.push_str(&format!("- … and {} more\n", files.len() - 50));
    }
    s.push_str("\nThe tests came first, from the Breaker; the code from the Builder. This pull request stays a draft until the Critic approves.\n");
    s
}

/// The plan checklist and the attempts table, for the status comment.
pub fn status_section(f: &Flow) -> String {
    let mut s = String::new();
    if let Some(bp) = &f.blueprint {
        let done = f.attempts.last().is_some_and(|a| a.passed());
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
    if let Some(v) = &f.red_proof {
        s.push_str(&format!("\nRed proof: {}.\n", v.describe()));
    }
    if !f.attempts.is_empty() {
        let gates: Vec<String> = f.attempts[0].gates.iter().map(|g| g.gate.clone()).collect();
        s.push_str(&format!(
            "\n| attempt | commit | {} |\n|---|---|{}\n",
            gates.join(" | "),
            "---|".repeat(gates.len())
        ));
        for a in &f.attempts {
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
                &a.sha[..a.sha.len().min(7)],
                cells.join(" | ")
            ));
        }
    }
    if let Some(r) = &f.critic {
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
    if let Some(tag) = &f.tag {
        s.push_str(&format!("\nSnapshot: `{tag}`.\n"));
    }
    s
}
