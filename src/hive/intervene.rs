//! Interventions from the dashboard (the seed's Oracle): a signed-in person sends a ticket a
//! `/hive` command — feedback, retry, approve, abort, reset… — parsed by the same grammar as a
//! comment's. The dashboard only [`request`]s it: the command is recorded (source
//! `dashboard:<nonce>`, who, what, outcome `pending`) and queued, so the page answers at once and
//! an ingress process without workers can take it. A worker then [`carry_out`]s it like a
//! comment's command — the person's permission checked, the same code acting — records the
//! outcome and the reply, and puts it on the ticket's timeline. `vibeloop run --approve`
//! approves through here too (source `run:<nonce>`), carrying it out at once ([`intervene`]).

use super::job::{Hive, JobError};
use super::steer::{PERMISSION_TTL, act};
use crate::commands::Person;
use crate::commands::{self, Command, Parsed, Permission};
use crate::store::commands::NewCommand;
use crate::store::jobs::JobKey;
use crate::store::tickets::Ticket;
use crate::store::{Store, StoreError};

/// What a recorded intervention's permission column says of its author before a worker looks.
const ANYTHING: &str = "admin";
const TO_CHECK: &str = "to check";

/// Who sent a recorded intervention.
fn person_of(author: &str, permission: &str) -> Person {
    match (author, permission) {
        ("dashboard-operator", ANYTHING) => Person::Operator,
        ("vibeloop-run", ANYTHING) => Person::Local,
        (login, _) => Person::GitHub(login.to_owned()),
    }
}

/// What came of an intervention, for the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub ok: bool,
    pub text: String,
}

/// What [`request`] did with a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Recorded and queued under `source`.
    Queued { source: String, command: String },
    /// Not a `/hive` command (nothing recorded): why, in words.
    NotACommand(String),
}

/// Records `line` (`/hive retry`, `/hive feedback …`) from `who` for ticket `t` and queues it for
/// a worker.
pub async fn request(
    store: &Store,
    t: &Ticket,
    line: &str,
    who: &Person,
) -> Result<Request, StoreError> {
    let found = commands::parse(line);
    let Some(f) = found.first() else {
        return Ok(Request::NotACommand(format!(
            "{line:?} is not a /hive command"
        )));
    };
    match &f.parsed {
        Parsed::Ok(_) => {}
        Parsed::Unknown { word, suggestion } => {
            let hint = suggestion
                .map(|s| format!(" Did you mean /hive {s}?"))
                .unwrap_or_default();
            return Ok(Request::NotACommand(format!(
                "`{word}` is not a command.{hint}"
            )));
        }
        Parsed::Invalid { command, reason } => {
            return Ok(Request::NotACommand(format!("/hive {command}: {reason}")));
        }
    }
    let origin = match who {
        Person::Local => "run",
        _ => "dashboard",
    };
    let source = format!("{origin}:{:016x}", rand::random::<u64>());
    let permission = match who {
        Person::Operator | Person::Local => ANYTHING,
        Person::GitHub(_) => TO_CHECK,
    };
    let record = NewCommand {
        repo: &t.repo,
        issue: t.issue_number,
        ticket: Some(t.key),
        source: &source,
        author: who.login(),
        command: &f.text,
        permission,
    };
    store.record_command(&record, "pending").await?;
    store.enqueue(&JobKey::Intervention(source.clone())).await?;
    Ok(Request::Queued {
        source,
        command: f.text.clone(),
    })
}

/// Carries out the intervention recorded as `source` (a worker's job): the author's permission,
/// then the command, then its outcome and reply recorded and put on the ticket's timeline. One
/// already carried out is left alone.
pub async fn carry_out(hive: &Hive, source: &str) -> Result<(), JobError> {
    let Some(c) = hive.store.command_by_source(source).await? else {
        return Err(JobError::permanent(format!(
            "no intervention {source} is recorded"
        )));
    };
    if c.outcome != "pending" {
        return Ok(());
    }
    let Some(key) = c.ticket else {
        return Err(JobError::permanent(format!("{source} names no ticket")));
    };
    let Some(t) = hive.store.ticket(key).await? else {
        return Err(JobError::permanent(format!("ticket {key} is not stored")));
    };
    let Some(Parsed::Ok(cmd)) = commands::parse(&c.command)
        .first()
        .map(|f| f.parsed.clone())
    else {
        return Err(JobError::permanent(format!(
            "{:?} is no longer a command",
            c.command
        )));
    };
    let who = person_of(&c.author, &c.permission);
    let (outcome, reply) = decide(hive, &t, &cmd, &who).await?;
    hive.store
        .finish_command(source, &c.command, &outcome, &reply)
        .await?;
    let data = serde_json::json!({
        "source": source, "author": c.author, "command": c.command, "outcome": outcome, "reply": reply,
    });
    hive.store.add_event(t.key, "intervention", &data).await?;
    Ok(())
}

/// `(outcome, reply)` of `cmd` from `who` on ticket `t`.
async fn decide(
    hive: &Hive,
    t: &Ticket,
    cmd: &Command,
    who: &Person,
) -> Result<(String, String), JobError> {
    let have = match who {
        Person::Operator | Person::Local => Some(Permission::Admin),
        Person::GitHub(login) => {
            let client = hive.github.repo(t.installation_id, &t.repo).await?;
            Permission::parse(
                &hive
                    .github
                    .permission(&client, login, PERMISSION_TTL)
                    .await?,
            )
        }
    };
    if !cmd.allowed(have) {
        let had = have.map(|p| p.as_str()).unwrap_or("no access");
        let reply = format!(
            "/hive {} needs {} permission on {}; you have {had}.",
            cmd.name(),
            cmd.required(),
            t.repo
        );
        return Ok(("refused: permission".into(), reply));
    }
    let (_, reply, outcome) = act(hive, t, cmd, Some(t.installation_id), who.login()).await?;
    Ok((outcome, reply))
}

/// Requests `line` and carries it out at once (`vibeloop run`, where this process is the
/// worker); what it answered.
pub async fn intervene(
    hive: &Hive,
    t: &Ticket,
    line: &str,
    who: &Person,
) -> Result<Answer, JobError> {
    let source = match request(&hive.store, t, line, who).await? {
        Request::NotACommand(text) => return Ok(Answer { ok: false, text }),
        Request::Queued { source, .. } => source,
    };
    carry_out(hive, &source).await?;
    let c = hive.store.command_by_source(&source).await?;
    let (outcome, reply) = c
        .map(|c| (c.outcome, c.reply.unwrap_or_default()))
        .unwrap_or_default();
    Ok(Answer {
        ok: !outcome.starts_with("refused"),
        text: reply,
    })
}
