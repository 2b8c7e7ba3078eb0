//! Interventions from the dashboard (the seed's Oracle): a signed-in person sends a ticket a
//! `/hive` command — feedback, retry, approve, abort, reset… — parsed by the same grammar,
//! checked against the same permissions, recorded like a slash command (source
//! `dashboard:<nonce>`, who, what, outcome) and carried out by the same code as a comment's.
//! `vibeloop run --approve` approves through here too (source `run:<nonce>`).

use super::job::{Hive, JobError};
use super::steer::{PERMISSION_TTL, act};
use crate::commands::{self, Parsed, Permission};
use crate::store::commands::NewCommand;
use crate::store::tickets::Ticket;

/// Who intervenes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Person {
    /// Signed in with the dashboard token: the operator, who may do anything.
    Operator,
    /// Signed in with GitHub: their permission on the ticket's repository decides.
    GitHub(String),
    /// The person running `vibeloop run`, on their own scratch copy: may do anything.
    Local,
}

impl Person {
    pub fn login(&self) -> &str {
        match self {
            Person::Operator => "dashboard-operator",
            Person::GitHub(login) => login,
            Person::Local => "vibeloop-run",
        }
    }
}

/// What came of an intervention, for the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub ok: bool,
    pub text: String,
}

/// Runs `line` (`/hive retry`, `/hive feedback …`) on ticket `t` for `who`.
pub async fn intervene(
    hive: &Hive,
    t: &Ticket,
    line: &str,
    who: &Person,
) -> Result<Answer, JobError> {
    let found = commands::parse(line);
    let Some(f) = found.first() else {
        return Ok(Answer {
            ok: false,
            text: format!("{line:?} is not a /hive command"),
        });
    };
    let cmd = match &f.parsed {
        Parsed::Ok(cmd) => cmd.clone(),
        Parsed::Unknown { word, suggestion } => {
            let hint = suggestion
                .map(|s| format!(" Did you mean /hive {s}?"))
                .unwrap_or_default();
            let text = format!("`{word}` is not a command.{hint}");
            return Ok(Answer { ok: false, text });
        }
        Parsed::Invalid { command, reason } => {
            let text = format!("/hive {command}: {reason}");
            return Ok(Answer { ok: false, text });
        }
    };
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
    let origin = match who {
        Person::Local => "run",
        _ => "dashboard",
    };
    let source = format!("{origin}:{:016x}", rand::random::<u64>());
    let record = NewCommand {
        repo: &t.repo,
        issue: t.issue_number,
        ticket: Some(t.key),
        source: &source,
        author: who.login(),
        command: &f.text,
        permission: have.map(|p| p.as_str()).unwrap_or("none"),
    };
    hive.store.claim_command(&record).await?;
    if !cmd.allowed(have) {
        hive.store
            .command_outcome(&source, &f.text, "refused: permission")
            .await?;
        let had = have.map(|p| p.as_str()).unwrap_or("no access");
        let text = format!(
            "/hive {} needs {} permission on {}; you have {had}.",
            cmd.name(),
            cmd.required(),
            t.repo
        );
        return Ok(Answer { ok: false, text });
    }
    let (_, reply, outcome) = act(hive, t, &cmd, Some(t.installation_id), who.login()).await?;
    hive.store
        .command_outcome(&source, &f.text, &outcome)
        .await?;
    Ok(Answer {
        ok: true,
        text: reply,
    })
}
