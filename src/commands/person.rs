//! [`Person`]: who sends a command from outside GitHub's comments — the operator on the
//! dashboard, someone signed in there with GitHub, or the person running `vibeloop run` — and
//! the login each is recorded under.

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
    /// The login an intervention is recorded under.
    pub fn login(&self) -> &str {
        match self {
            Person::Operator => "dashboard-operator",
            Person::GitHub(login) => login,
            Person::Local => "vibeloop-run",
        }
    }
}
