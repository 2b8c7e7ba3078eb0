//! Following a ticket of `vibeloop run` to its end: its timeline printed as it happens (one
//! short line per state change, node, agent, tool call and gate), approvals given for the person
//! with `--approve`, and the reason the run stopped.

use std::time::{Duration, Instant};

use serde_json::Value;

pub use crate::agent::events::summarize as clean;
use crate::commands::Person;
use crate::hive::Hive;
use crate::hive::flow::Node;
use crate::hive::intervene::intervene;
use crate::ids::TicketKey;
use crate::store::jobs::JobKey;
use crate::store::views::Event;
use crate::ticket::TaskState;

/// How often the store is read.
const POLL: Duration = Duration::from_millis(200);
/// A ticket whose job is gone but that neither waits nor ended is given this long to settle.
const SETTLE: Duration = Duration::from_secs(10);

/// Why following stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The ticket stopped in this state (final, or waiting for people: HumanNeeded, Blocked).
    Stopped(TaskState),
    /// The ticket waits at this node for a person's approval.
    Waiting(Node),
    /// The time limit passed.
    TimedOut,
    /// Ctrl-C.
    Interrupted,
}

/// Prints the ticket's timeline until it stops, waits for a person (approving for them when
/// `approve`), the time runs out or the person interrupts.
pub async fn follow(
    hive: &Hive,
    key: TicketKey,
    approve: bool,
    limit: Duration,
    clock: Instant,
) -> anyhow::Result<Ending> {
    let store = &hive.store;
    let deadline = Instant::now() + limit;
    let mut last_event = 0;
    let mut approved: Option<Node> = None;
    let mut last_error: Option<String> = None;
    let mut idle_since: Option<Instant> = None;
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    loop {
        for e in store.events_after(key, last_event, 500).await? {
            last_event = e.id;
            if let Some(line) = describe(&e) {
                println!("[{}] {line}", elapsed(clock));
            }
        }
        let live = store.live_job(&JobKey::Ticket(key)).await?;
        // A queued job that has an error waits to run again after a failed attempt.
        let retrying = live
            .as_ref()
            .filter(|j| j.status == "queued")
            .and_then(|j| j.last_error.as_deref())
            .map(|e| clean(e, 300));
        if let Some(error) = retrying
            && last_error.as_ref() != Some(&error)
        {
            println!(
                "[{}] a step failed and will be retried: {error}",
                elapsed(clock)
            );
            last_error = Some(error);
        }
        let ticket = store
            .ticket(key)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the run's ticket is gone from its database"))?;
        if live.is_none() {
            // A plan waiting for approval is Blocked too: what waits is told first.
            let flow = crate::hive::flow::load(store, key).await?;
            let waits = matches!(flow.next, Node::AwaitApproval | Node::AwaitPlanApproval)
                && !ticket.state.is_final()
                && ticket.state != TaskState::HumanNeeded;
            let stopped = ticket.state.is_final()
                || matches!(ticket.state, TaskState::HumanNeeded | TaskState::Blocked);
            if stopped && !waits {
                return Ok(Ending::Stopped(ticket.state));
            }
            if waits && !approve {
                return Ok(Ending::Waiting(flow.next));
            }
            if waits && approved != Some(flow.next) {
                approved = Some(flow.next);
                let answer = intervene(hive, &ticket, "/hive approve", &Person::Local)
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot approve: {e}"))?;
                println!(
                    "[{}] approved for you (--approve): {}",
                    elapsed(clock),
                    clean(&answer.text, 200)
                );
                idle_since = None;
                continue;
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() > SETTLE {
                return Ok(match flow.next {
                    node @ (Node::AwaitApproval | Node::AwaitPlanApproval) => Ending::Waiting(node),
                    _ => Ending::Stopped(ticket.state),
                });
            }
        } else {
            idle_since = None;
        }
        if Instant::now() >= deadline {
            return Ok(Ending::TimedOut);
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = &mut interrupt => return Ok(Ending::Interrupted),
        }
    }
}

/// `m:ss` since `clock`.
pub fn elapsed(clock: Instant) -> String {
    minutes(clock.elapsed())
}

/// `d` as `m:ss`.
pub fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

/// One line for a timeline event worth showing; `None` for the rest (model usage, thinking,
/// an agent's inner phases).
pub fn describe(e: &Event) -> Option<String> {
    let d = &e.data;
    let s = |k: &str| d[k].as_str().map(|v| clean(v, 120)).unwrap_or_default();
    Some(match e.kind.as_str() {
        "state" => match d["detail"].as_str().and_then(|t| t.lines().next()) {
            Some(first) if !first.trim().is_empty() => {
                format!("{} — {}", s("to"), clean(first, 160))
            }
            _ => s("to"),
        },
        // The Breaker's and the Builder's own checkpoints inside a node are not steps of the flow.
        "checkpoint" if d["next"] == d["node"] && d["failed"].is_null() => return None,
        "checkpoint" => match d["failed"].as_str() {
            Some(why) => format!("✗ {}: {}", s("node").replace('_', " "), clean(why, 200)),
            None => format!("✓ {}", s("node")),
        },
        "stage_enter" => match d["role"].as_str() {
            Some(_) if s("stage") == "agent_loop" => format!("  {} at work", s("role")),
            Some(_) => return None,
            None => format!("  {} …", s("stage").replace('_', " ")),
        },
        "result" => format!(
            "  {} done: {}, {} step(s){}",
            s("role"),
            s("stop"),
            d["iterations"].as_u64().unwrap_or(0),
            files(&d["files"]),
        ),
        "tool_complete" => {
            let what = format!("    {} {} {}", s("role"), s("name"), s("args"));
            match (d["ok"].as_bool(), d["outcome"].as_str()) {
                (Some(false), _) => format!("{what} — refused: {}", s("error")),
                (_, Some(outcome)) => format!("{what} → {}", clean(outcome, 200)),
                _ => what,
            }
        }
        "gate" => format!("  gate {}: {}", s("gate"), s("result")),
        "instructions" => format!(
            "  {} given the repository's instructions{}",
            s("role"),
            files(&d["files"])
        ),
        "image" => format!("  image: {}", s("said")),
        "ci" => format!("  ci: {}", s("said")),
        "toolchain" => format!("  toolchain: {}", s("said")),
        "baseline" if d["failing"].as_u64().unwrap_or(0) > 0 => format!(
            "  baseline: {} test(s) already fail on the base.{}",
            d["failing"].as_u64().unwrap_or(0),
            crate::dashboard::story::missing_programs(d)
        ),
        "reflection" => format!(
            "  reflector on the {}: {} finding(s)",
            s("of"),
            d["findings"].as_u64().unwrap_or(0)
        ),
        "merge_strategy" => format!(
            "  conflict with the base: strategy {}{}",
            s("strategy"),
            files(&d["files"])
        ),
        "signal" => format!("  {} from {}", s("kind"), s("author")),
        _ => return None,
    })
}

fn files(v: &Value) -> String {
    let names: Vec<String> = v
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str())
                .map(|f| clean(f, 80))
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        String::new()
    } else {
        format!("; {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, data: Value) -> Event {
        Event {
            id: 1,
            ticket: TicketKey(1),
            at: 0,
            kind: kind.into(),
            data,
        }
    }

    #[test]
    fn timeline_lines_are_short_and_skip_noise() {
        let line = |kind, data| describe(&event(kind, data));
        assert_eq!(
            line(
                "state",
                serde_json::json!({ "from": "Pending", "to": "Preparing" })
            ),
            Some("Preparing".into())
        );
        assert_eq!(
            line(
                "gate",
                serde_json::json!({ "gate": "test", "status": "passed", "result": "passed (3 tests)" })
            ),
            Some("  gate test: passed (3 tests)".into())
        );
        assert_eq!(
            line(
                "tool_complete",
                serde_json::json!({ "role": "builder", "name": "read_file", "args": "../x", "ok": false, "error": "outside the worktree" })
            ),
            Some("    builder read_file ../x — refused: outside the worktree".into())
        );
        assert_eq!(
            line(
                "tool_complete",
                serde_json::json!({ "role": "builder", "name": "write_file", "args": "path=calc.py", "ok": true })
            ),
            Some("    builder write_file path=calc.py".into())
        );
        assert_eq!(
            line(
                "checkpoint",
                serde_json::json!({ "node": "code", "next": "code" })
            ),
            None
        );
        assert_eq!(
            line(
                "checkpoint",
                serde_json::json!({ "node": "red_proof", "next": "encounter" })
            ),
            Some("✓ red_proof".into())
        );
        assert_eq!(
            line(
                "checkpoint",
                serde_json::json!({ "node": "red_proof", "next": "code", "failed": "fails: the tests pass on the base" })
            ),
            Some("✗ red proof: fails: the tests pass on the base".into())
        );
        assert_eq!(
            line(
                "result",
                serde_json::json!({ "role": "breaker", "stop": "answered", "iterations": 2, "files": ["t.py"] })
            ),
            Some("  breaker done: answered, 2 step(s); t.py".into())
        );
        assert_eq!(line("llm_usage", serde_json::json!({})), None);
        assert_eq!(
            line(
                "stage_enter",
                serde_json::json!({ "role": "critic", "stage": "claim" })
            ),
            None
        );
    }

    #[test]
    fn escape_sequences_from_the_timeline_do_not_reach_the_terminal() {
        let e = event(
            "gate",
            serde_json::json!({ "gate": "test", "result": "\u{1b}[2Jgone" }),
        );
        let line = describe(&e).unwrap();
        assert!(!line.contains('\u{1b}'), "{line:?}");
    }
}
