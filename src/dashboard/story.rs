//! A ticket's timeline as people read it: one sentence per event worth showing ("Running the
//! quality gates…", "Gate test: 2 failed"), grouped by the stage the ticket was in (a group
//! starts at each change of state), the raw event one click away. Model usage, thinking and an
//! agent's inner phases are left out (the charts use them). The live page gets the same
//! sentences with each server-sent event, so the dashboard's text is written here only
//! (`vibeloop run` prints its own terser lines, `app/run/follow.rs`).

use serde::Serialize;
use serde_json::Value;

/// How a sentence reads: its colour on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// A step of the flow.
    Step,
    Good,
    Bad,
    /// Small steps (a tool call): muted.
    Quiet,
}

/// One event, told.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sentence {
    pub text: String,
    pub tone: Tone,
    /// The heading of the group it starts (a change of state), if it starts one.
    pub starts: Option<String>,
}

/// What people call a state, as a group's heading.
pub fn stage_name(state: &str) -> &'static str {
    match state {
        "Pending" => "Waiting for a worker",
        "Preparing" => "Planning",
        "Validating" => "Checking the plan",
        "InProgress" => "Writing tests and code",
        "AwaitingVerification" => "Review and landing",
        "Completed" => "Done",
        "Blocked" => "Blocked: waiting for an answer",
        "HumanNeeded" => "Waiting for a person",
        "Failed" => "Failed",
        _ => "Working",
    }
}

fn role(data: &Value) -> String {
    let r = data["role"].as_str().unwrap_or("an agent");
    let mut c = r.chars();
    match c.next() {
        Some(first) => format!("the {}{}", first.to_uppercase(), c.as_str()),
        None => "an agent".into(),
    }
}

/// `s` with its first letter in capitals.
pub fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => format!("{}{}", first.to_uppercase(), c.as_str()),
        None => String::new(),
    }
}

fn short(s: &str, max: usize) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_owned()
    }
}

fn list(v: &Value, max: usize) -> String {
    let items: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    let shown: Vec<&str> = items.iter().take(max).copied().collect();
    let more = items.len().saturating_sub(max);
    match more {
        0 => shown.join(", "),
        n => format!("{} and {n} more", shown.join(", ")),
    }
}

/// What finishing a node of the flow means.
fn node_done(node: &str, attempt: u64, next: &str) -> Option<(String, Tone)> {
    let s = |t: &str| Some((t.to_owned(), Tone::Step));
    match node {
        "plan" => s("The Architect's plan is ready."),
        "plan_check" => s("The plan passed its checks."),
        "await_plan_approval" => s("The plan was approved."),
        "code" => Some((
            format!("The Breaker and the Builder finished attempt {attempt}."),
            Tone::Step,
        )),
        "red_proof" => s("The Breaker's tests fail on the old code, as they must."),
        "encounter" => Some((
            format!("Attempt {attempt}: the tests and the gates pass."),
            Tone::Good,
        )),
        "open_pr" => s("The pull request is open."),
        "critic" => s("The Critic reviewed the change."),
        "await_approval" => Some(("Approved.".into(), Tone::Good)),
        "rebase" => s("Rebased onto the base branch."),
        "regate" => s("The gates passed again on the rebased branch."),
        "ci" => Some(("The repository's CI passed.".into(), Tone::Good)),
        "merge" if next == "queue" => s("Added to the base's merge queue."),
        "merge" => Some(("Merged.".into(), Tone::Good)),
        "queue" => s("The gates passed on the merge queue's group."),
        "snapshot" => s("The snapshot is tagged."),
        _ => None,
    }
}

/// What a node that ended with a failed verdict says (`why`: the bot's own words).
fn node_failed(node: &str, attempt: u64, why: &str) -> String {
    let why = short(why, 200);
    match node {
        "red_proof" => format!("The Breaker's tests prove nothing yet: {why}."),
        "encounter" => format!("Attempt {attempt} failed: {why}."),
        "critic" => format!("The Critic asks for changes on attempt {attempt}."),
        "regate" => format!("The gates failed on the rebased branch: {why}."),
        "ci" => format!("The repository's CI failed: {why}."),
        "queue" => format!("The gates failed on the merge queue's group: {why}."),
        other => format!("{} failed: {why}.", cap(&other.replace('_', " "))),
    }
}

/// The sentence for one event; `None` for what people need not read.
pub fn tell(kind: &str, d: &Value) -> Option<Sentence> {
    let s = |k: &str| d[k].as_str().unwrap_or_default();
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let plain = |text: String, tone: Tone| {
        Some(Sentence {
            text,
            tone,
            starts: None,
        })
    };
    match kind {
        "state" => {
            let to = s("to");
            let tone = match to {
                "Completed" => Tone::Good,
                "Failed" | "HumanNeeded" | "Blocked" => Tone::Bad,
                _ => Tone::Step,
            };
            let text = match short(s("detail"), 200) {
                d if d.is_empty() => format!("{}.", stage_name(to)),
                d => format!("{}: {d}", stage_name(to)),
            };
            Some(Sentence {
                text,
                tone,
                starts: Some(stage_name(to).to_owned()),
            })
        }
        "checkpoint" if d["next"] == d["node"] && d["failed"].is_null() => None,
        // A landing GitHub held back (it waits, or rebases again) merged nothing.
        "checkpoint"
            if d["node"] == "merge"
                && !(d["next"] == "snapshot" || d["next"] == "queue")
                && d["failed"].is_null() =>
        {
            None
        }
        "checkpoint" => match d["failed"].as_str() {
            Some(why) => plain(node_failed(s("node"), n("attempt").max(1), why), Tone::Bad),
            None => {
                let (text, tone) = node_done(s("node"), n("attempt").max(1), s("next"))?;
                plain(text, tone)
            }
        },
        "stage_enter" => match (d["role"].as_str(), s("stage")) {
            (Some(_), "agent_loop") => plain(format!("{} is at work…", cap(&role(d))), Tone::Step),
            (Some(_), _) => None,
            (None, "gates") => plain("Running the quality gates…".into(), Tone::Step),
            (None, "red_proof") => plain(
                "Checking that the Breaker's tests fail on the old code…".into(),
                Tone::Step,
            ),
            (None, other) => plain(format!("{}…", cap(&other.replace('_', " "))), Tone::Step),
        },
        "llm_usage" | "thinking" | "tool_start" | "iteration_start" | "stage_exit" => None,
        _ => {
            let (text, tone) = said_agents(kind, d)
                .or_else(|| said_environment(kind, d))
                .or_else(|| said_people(kind, d))
                .unwrap_or_else(|| (cap(&kind.replace('_', " ")), Tone::Quiet));
            plain(text, tone)
        }
    }
}

/// What the agents, the repository's CI and the rebase said: `None` for another kind.
fn said_agents(kind: &str, d: &Value) -> Option<(String, Tone)> {
    let s = |k: &str| d[k].as_str().unwrap_or_default();
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let plain = |text: String, tone: Tone| Some((text, tone));
    match kind {
        "result" => {
            let files = list(&d["files"], 5);
            let wrote = if files.is_empty() {
                String::from("; no file changed")
            } else {
                format!("; changed {files}")
            };
            plain(
                format!(
                    "{} finished ({}, {} step(s)){wrote}.",
                    cap(&role(d)),
                    s("stop").replace('_', " "),
                    n("iterations")
                ),
                Tone::Step,
            )
        }
        "tool_complete" => {
            let what = format!("{}: {} {}", cap(&role(d)), s("name"), short(s("args"), 120));
            match (d["ok"].as_bool(), d["outcome"].as_str()) {
                (Some(false), _) => plain(
                    format!("{what} — refused: {}", short(s("error"), 160)),
                    Tone::Bad,
                ),
                (_, Some(outcome)) => {
                    plain(format!("{what} → {}", short(outcome, 200)), Tone::Quiet)
                }
                _ => plain(what, Tone::Quiet),
            }
        }
        "instructions" => {
            let files: Vec<&str> = d["files"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            plain(
                format!(
                    "{} was given the repository's instructions for agents: {}.",
                    cap(&role(d)),
                    short(&files.join(", "), 300)
                ),
                Tone::Quiet,
            )
        }
        "ci" => plain(
            s("said").to_owned(),
            match s("verdict") {
                "failed" => Tone::Bad,
                _ => Tone::Step,
            },
        ),
        "reflection" => plain(
            format!(
                "The reflector found {} issue(s) in the {}.",
                n("findings"),
                s("of")
            ),
            if n("findings") == 0 {
                Tone::Good
            } else {
                Tone::Step
            },
        ),
        "merge_strategy" => plain(
            format!(
                "The base branch changed the same files ({}): conflict strategy {}.",
                list(&d["files"], 5),
                s("strategy")
            ),
            Tone::Step,
        ),
        "step_interrupted" => plain(
            format!(
                "{} stopped attempt {}: {}",
                cap(&role(d)),
                n("attempt"),
                short(s("why"), 160)
            ),
            Tone::Step,
        ),
        _ => None,
    }
}

/// What the environment, a gate and the plan's checks said: `None` for another kind.
fn said_environment(kind: &str, d: &Value) -> Option<(String, Tone)> {
    let s = |k: &str| d[k].as_str().unwrap_or_default();
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let plain = |text: String, tone: Tone| Some((text, tone));
    match kind {
        "gate" => {
            let status = s("status").to_ascii_lowercase();
            let tone = match status.as_str() {
                "passed" => Tone::Good,
                "skipped" => Tone::Quiet,
                _ => Tone::Bad,
            };
            plain(
                format!("Gate {}: {}", s("gate"), short(s("result"), 200)),
                tone,
            )
        }
        "image" => plain(format!("Sandbox image: {}.", s("said")), Tone::Step),
        "toolchain" => plain(s("said").to_owned(), Tone::Step),
        "baseline" => plain(
            format!(
                "The base branch's own tests: {} failing before any change.{}",
                n("failing"),
                missing_programs(d)
            ),
            Tone::Step,
        ),
        "env_setup" => plain(
            format!(
                "The environment was set up for {} in {:.0} s.",
                s("role"),
                d["seconds"].as_f64().unwrap_or(0.0)
            ),
            Tone::Step,
        ),
        "env_setup_failed" => plain(
            format!(
                "Setting up the environment failed ({}): {}; its last line: {}",
                short(s("command"), 80),
                short(s("result"), 160),
                short(s("tail").lines().last().unwrap_or("(none printed)"), 200)
            ),
            Tone::Bad,
        ),
        "knowledge_missing" => plain(
            format!(
                "The plan needs what the project lacks: {}.",
                list(&d["missing"], 3)
            ),
            Tone::Bad,
        ),
        "ticket_constraints" => plain(
            format!("The Architect's constraints: {}.", list(&d["notes"], 3)),
            Tone::Step,
        ),
        _ => None,
    }
}

/// What people sent, and what it did: `None` for another kind.
fn said_people(kind: &str, d: &Value) -> Option<(String, Tone)> {
    let s = |k: &str| d[k].as_str().unwrap_or_default();
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let plain = |text: String, tone: Tone| Some((text, tone));
    match kind {
        "signal" => plain(
            format!("@{} sent {}.", s("author"), s("kind").replace('_', " ")),
            Tone::Step,
        ),
        "signal_unreadable" => plain(
            format!(
                "A command from @{} could not be read: {}",
                s("author"),
                short(s("why"), 160)
            ),
            Tone::Bad,
        ),
        "intervention" => plain(
            format!(
                "@{} sent {} from the dashboard: {}.",
                s("author"),
                short(s("command"), 120),
                s("outcome")
            ),
            Tone::Step,
        ),
        "people_commits" => plain(
            format!(
                "{} commit(s) by people arrived on the branch.",
                n("commits")
            ),
            Tone::Step,
        ),
        "people_changed_tests" => plain(
            format!("@{} changed the tests: {}.", s("by"), list(&d["paths"], 5)),
            Tone::Step,
        ),
        "approval_withdrawn" => plain(
            format!(
                "@{} pushed after @{} approved: the approval no longer holds.",
                s("pushed_by"),
                s("approved_by")
            ),
            Tone::Bad,
        ),
        "review_reply_failed" => plain(
            format!(
                "A reply to a review comment could not be posted: {}",
                short(s("error"), 160)
            ),
            Tone::Bad,
        ),
        _ => None,
    }
}

/// What a baseline event says of programs the base's failing tests call and the image lacks.
pub(crate) fn missing_programs(d: &serde_json::Value) -> String {
    let names: Vec<&str> = d["missing_programs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .collect();
    if names.is_empty() {
        return String::new();
    }
    format!(
        " They call programs the sandbox image does not have ({}): add them to the image (`image:` in .github/hive.yml) or install them in `setup:`.",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failed_setup_says_its_last_line() {
        let said = tell(
            "env_setup_failed",
            &json!({"role": "builder", "command": "pip install -r requirements.txt", "result": "exit code 1", "tail": "Collecting nopkg\nERROR: No matching distribution found for nopkg"}),
        )
        .unwrap();
        assert_eq!(
            said.text,
            "Setting up the environment failed (pip install -r requirements.txt): exit code 1; its last line: ERROR: No matching distribution found for nopkg"
        );
        let silent = tell(
            "env_setup_failed",
            &json!({"command": "x", "result": "exit code 1"}),
        );
        assert!(
            silent
                .unwrap()
                .text
                .ends_with("its last line: (none printed)")
        );
    }

    #[test]
    fn events_read_as_sentences_and_noise_is_left_out() {
        let t = |k: &str, d: Value| tell(k, &d).map(|s| s.text);
        let state = tell(
            "state",
            &json!({"from": "Pending", "to": "Preparing", "detail": null}),
        )
        .unwrap();
        assert_eq!(state.text, "Planning.");
        let failed = tell(
            "checkpoint",
            &json!({"node": "encounter", "attempt": 2, "next": "code", "failed": "hive/test failed: exit code 1"}),
        )
        .unwrap();
        assert_eq!(
            failed.text,
            "Attempt 2 failed: hive/test failed: exit code 1."
        );
        assert_eq!(failed.tone, Tone::Bad);
        assert_eq!(
            t(
                "checkpoint",
                json!({"node": "red_proof", "next": "encounter"})
            )
            .as_deref(),
            Some("The Breaker's tests fail on the old code, as they must.")
        );
        assert_eq!(state.starts.as_deref(), Some("Planning"));
        assert_eq!(
            t(
                "stage_enter",
                json!({"kind": "stage_enter", "role": "architect", "stage": "agent_loop"})
            )
            .as_deref(),
            Some("The Architect is at work…")
        );
        assert_eq!(
            t(
                "stage_enter",
                json!({"role": "architect", "stage": "claim"})
            ),
            None
        );
        assert_eq!(
            t("stage_enter", json!({"stage": "gates", "run": 3})).as_deref(),
            Some("Running the quality gates…")
        );
        assert_eq!(
            t(
                "gate",
                json!({"gate": "test", "status": "failed", "result": "2 failed, 3 passed"})
            )
            .as_deref(),
            Some("Gate test: 2 failed, 3 passed")
        );
        assert_eq!(
            t(
                "checkpoint",
                json!({"node": "encounter", "attempt": 2, "next": "open_pr"})
            )
            .as_deref(),
            Some("Attempt 2: the tests and the gates pass.")
        );
        assert_eq!(
            t("checkpoint", json!({"node": "code", "next": "code"})),
            None
        );
        for noise in ["llm_usage", "thinking", "tool_start", "stage_exit"] {
            assert_eq!(t(noise, json!({})), None, "{noise}");
        }
        let human = tell(
            "state",
            &json!({"to": "HumanNeeded", "detail": "The tests still fail after 4 attempts.\nmore"}),
        )
        .unwrap();
        assert_eq!(
            human.text,
            "Waiting for a person: The tests still fail after 4 attempts."
        );
        assert_eq!(human.tone, Tone::Bad);
    }
}
