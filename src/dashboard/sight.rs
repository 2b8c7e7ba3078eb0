//! What a signed-in person may see. The operator (the dashboard token) sees everything; a
//! person signed in with GitHub sees a repository's tickets, events, worktrees and jobs only
//! where GitHub gives them read permission or more on it (asked through the App's installation,
//! cached as for commands, [`PERMISSION_TTL`]). What they may not see is answered as if it did
//! not exist — 404, left out of lists — whatever address it is asked by. When GitHub cannot be
//! asked, nothing is shown: the dashboard fails closed.

use std::collections::HashMap;

use super::Dashboard;
use crate::commands::Permission;
use crate::commands::Person;
use crate::hive::PERMISSION_TTL;
use crate::ids::{InstallationId, RepoName, TicketKey};
use crate::store::tickets::Ticket;

/// One request's view of the repositories: who asks, and what was found out so far.
pub struct Sight<'a> {
    d: &'a Dashboard,
    who: Person,
    known: HashMap<RepoName, bool>,
    /// How old a permission GitHub gave may be ([`PERMISSION_TTL`] unless asked otherwise).
    ttl: std::time::Duration,
}

impl<'a> Sight<'a> {
    pub fn new(d: &'a Dashboard, who: &Person) -> Self {
        Self {
            d,
            who: who.clone(),
            known: HashMap::new(),
            ttl: PERMISSION_TTL,
        }
    }

    /// This sight, trusting no permission older than `ttl` (a live stream's check).
    pub fn asking_within(mut self, ttl: std::time::Duration) -> Self {
        self.ttl = ttl.min(PERMISSION_TTL);
        self
    }

    /// True for the operator (and `vibeloop run`'s local person): everything is theirs to see.
    pub fn sees_all(&self) -> bool {
        matches!(self.who, Person::Operator | Person::Local)
    }

    /// Whether the person may see `repo` (reached through `installation`).
    pub async fn sees(&mut self, repo: &RepoName, installation: InstallationId) -> bool {
        let login = match &self.who {
            Person::Operator | Person::Local => return true,
            Person::GitHub(login) => login.clone(),
        };
        if let Some(known) = self.known.get(repo) {
            return *known;
        }
        let may = self.ask(repo, installation, &login).await;
        self.known.insert(repo.clone(), may);
        may
    }

    async fn ask(&self, repo: &RepoName, installation: InstallationId, login: &str) -> bool {
        let Some(github) = &self.d.github else {
            // No App credentials in this process: nobody's permission can be known.
            return false;
        };
        let asked = async {
            let client = github.repo(installation, repo).await?;
            github.permission(&client, login, self.ttl).await
        };
        match asked.await {
            Ok(p) => Permission::parse(&p).is_some_and(|p| p >= Permission::Read),
            Err(e) => {
                tracing::warn!(%repo, login, error = %e, "could not ask GitHub what a dashboard user may see: shown nothing of it");
                false
            }
        }
    }

    /// Whether the person may see ticket `t`.
    pub async fn sees_ticket(&mut self, t: &Ticket) -> bool {
        self.sees(&t.repo, t.installation_id).await
    }

    /// `tickets` less those the person may not see.
    pub async fn filter(&mut self, tickets: Vec<Ticket>) -> Vec<Ticket> {
        let mut shown = Vec::with_capacity(tickets.len());
        for t in tickets {
            if self.sees_ticket(&t).await {
                shown.push(t);
            }
        }
        shown
    }

    /// Ticket `key` when it exists and the person may see it.
    pub async fn ticket(
        &mut self,
        key: TicketKey,
    ) -> Result<Option<Ticket>, crate::store::StoreError> {
        Ok(match self.d.store.ticket(key).await? {
            Some(t) if self.sees_ticket(&t).await => Some(t),
            _ => None,
        })
    }
}
