//! [`Role`]: the agents of the hive, one type for every room — the flow's roles, the models
//! file's routes, `/hive retry <role>`, the dashboard's lanes — named as people and files
//! write them (`architect`, `breaker`…).

use std::fmt;

/// An agent's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Plans: the TaskTicket and the TaskPlan.
    Architect,
    /// Writes the tests first, which must fail on the base.
    Breaker,
    /// Writes the code until the tests and the gates pass.
    Builder,
    /// Reviews the pull request.
    Critic,
    /// The optional model check of the self-healing loop: reads, and lists what is wrong.
    Reflector,
    /// Answers `/hive ask`, reading only.
    Chat,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 6] = [
        Role::Architect,
        Role::Breaker,
        Role::Builder,
        Role::Critic,
        Role::Reflector,
        Role::Chat,
    ];
    /// The roles of a ticket's run, in the order they work (`/hive retry <role>` names them).
    pub const TICKET: [Role; 4] = [Role::Architect, Role::Breaker, Role::Builder, Role::Critic];
    /// The roles a models file may route to a model of their own.
    pub const ROUTED: [Role; 5] = [
        Role::Architect,
        Role::Breaker,
        Role::Builder,
        Role::Critic,
        Role::Reflector,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Architect => "architect",
            Role::Breaker => "breaker",
            Role::Builder => "builder",
            Role::Critic => "critic",
            Role::Reflector => "reflector",
            Role::Chat => "chat",
        }
    }

    /// Reads a role's name, ASCII case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s))
    }

    /// Whether it writes files (the Breaker its tests, the Builder the code): the others read.
    pub fn writes(self) -> bool {
        matches!(self, Role::Breaker | Role::Builder)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_reads_back_from_its_name() {
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
            assert_eq!(Role::parse(&r.as_str().to_uppercase()), Some(r));
        }
        assert_eq!(Role::parse("tester"), None);
    }
}
