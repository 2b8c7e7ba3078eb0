//! Domain newtypes shared by every room: repository names, commit SHAs, installation and
//! delivery ids, each validated on construction, so code holding one may trust it; and the
//! instance a worker process is.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a string is not a valid identifier of the named kind.
#[derive(Debug, thiserror::Error)]
#[error("invalid {kind}: {value:?} ({reason})")]
pub struct InvalidId {
    kind: &'static str,
    value: String,
    reason: &'static str,
}

fn invalid(kind: &'static str, value: &str, reason: &'static str) -> InvalidId {
    let mut value = value.to_owned();
    value.truncate(80);
    InvalidId {
        kind,
        value,
        reason,
    }
}

/// `owner/name` of a GitHub repository, checked against GitHub's character rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RepoName {
    full: String,
    slash: usize,
}

impl RepoName {
    pub fn new(owner: &str, name: &str) -> Result<Self, InvalidId> {
        Self::parse(&format!("{owner}/{name}"))
    }

    pub fn parse(full: &str) -> Result<Self, InvalidId> {
        let Some((owner, name)) = full.split_once('/') else {
            return Err(invalid("repository", full, "expected owner/name"));
        };
        let ok_part = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s != "."
                && s != ".."
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        };
        if !ok_part(owner) || !ok_part(name) {
            return Err(invalid(
                "repository",
                full,
                "owner and name may hold only letters, digits, '-', '_' and '.'",
            ));
        }
        Ok(Self {
            full: full.to_owned(),
            slash: owner.len(),
        })
    }

    pub fn owner(&self) -> &str {
        &self.full[..self.slash]
    }

    pub fn name(&self) -> &str {
        &self.full[self.slash + 1..]
    }

    pub fn as_str(&self) -> &str {
        &self.full
    }
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl TryFrom<String> for RepoName {
    type Error = InvalidId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<RepoName> for String {
    fn from(value: RepoName) -> Self {
        value.full
    }
}

/// A full 40-hex-digit git commit id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CommitSha(String);

impl CommitSha {
    pub fn parse(s: &str) -> Result<Self, InvalidId> {
        if s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(s.to_ascii_lowercase()))
        } else {
            Err(invalid("commit SHA", s, "expected 40 hex digits"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first seven digits, as people quote them.
    pub fn short(&self) -> &str {
        &self.0[..7]
    }

    /// As git2 names it (always valid: a `CommitSha` is 40 hex digits).
    pub fn oid(&self) -> git2::Oid {
        git2::Oid::from_str(&self.0).expect("40 hex digits")
    }
}

impl From<git2::Oid> for CommitSha {
    fn from(oid: git2::Oid) -> Self {
        Self(oid.to_string())
    }
}

impl fmt::Display for CommitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for CommitSha {
    type Error = InvalidId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<CommitSha> for String {
    fn from(value: CommitSha) -> Self {
        value.0
    }
}

/// A ticket's database key (the `tickets.id` column): what its jobs, events, checkpoints and
/// signals are filed under. Not the `T-n` people see (that is [`crate::ticket::TicketId`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TicketKey(pub i64);

impl fmt::Display for TicketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::str::FromStr for TicketKey {
    type Err = InvalidId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse()
            .map(TicketKey)
            .map_err(|_| invalid("ticket key", s, "expected a number"))
    }
}

/// The id GitHub gives an installation of the app on an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InstallationId(pub u64);

impl fmt::Display for InstallationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The id GitHub gives a repository: it stays through renames and transfers, and a repository
/// deleted and made again under the same name gets a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RepositoryId(pub u64);

impl fmt::Display for RepositoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl RepoName {
    /// The name a repository's rows take when another repository holds its name now:
    /// `owner/name.gone-<id>` (shortened to stay a valid name).
    pub fn gone(&self, id: RepositoryId) -> RepoName {
        let suffix = format!(".gone-{id}");
        let keep = 100usize.saturating_sub(suffix.len()).min(self.name().len());
        RepoName::new(self.owner(), &format!("{}{suffix}", &self.name()[..keep]))
            .expect("a valid name with a valid suffix")
    }
}

/// The `X-GitHub-Delivery` GUID of a webhook delivery (kept on redelivery, so we dedupe on it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeliveryId(String);

impl DeliveryId {
    pub fn parse(s: &str) -> Result<Self, InvalidId> {
        if !s.is_empty()
            && s.len() <= 100
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            Ok(Self(s.to_owned()))
        } else {
            Err(invalid(
                "delivery id",
                s,
                "expected up to 100 letters, digits or '-'",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a worker process runs: one host and data directory, which one process at a time owns.
/// It labels the sandboxes a crash leaves behind and the job leases the process holds, so that
/// the next start clears its own and no other process's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    host: String,
    tag: String,
    /// The running kernel's boot (the start of `/proc/sys/kernel/random/boot_id`): two hosts
    /// that share a name and a data path still own none of each other's leases.
    boot: String,
}

impl Instance {
    /// The instance of `data_dir` on this host.
    pub fn of(data_dir: &std::path::Path) -> Self {
        use sha2::{Digest as _, Sha256};
        let canonical = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let host = host.trim();
        let identity = format!("{host}\0{}", canonical.to_string_lossy());
        let tag = hex::encode(&Sha256::digest(identity.as_bytes())[..6]);
        let host = if host.is_empty() { "vibeloop" } else { host };
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        Self {
            host: host.replace('/', "-"),
            tag,
            boot: boot.trim().chars().take(8).collect(),
        }
    }

    /// Twelve hex digits naming host and data directory (the sandboxes' label).
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// What every lease owner of this instance since the host's last boot starts with:
    /// `host/tag/boot/` (a host name holds no `/`, so no other instance's owner starts so).
    pub fn owner_prefix(&self) -> String {
        format!("{}/{}/{}/", self.host, self.tag, self.boot)
    }

    /// The lease owner of the process `pid` of this instance.
    pub fn lease_owner(&self, pid: u32) -> String {
        format!("{}{pid}", self.owner_prefix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_are_checked() {
        let r = RepoName::parse("Codertocat/Hello-World").unwrap();
        assert_eq!((r.owner(), r.name()), ("Codertocat", "Hello-World"));
        for bad in ["", "a", "a/", "/b", "a/b/c", "a/..", "a b/c", "a/b?x"] {
            assert!(RepoName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn commit_shas_are_checked() {
        let s = CommitSha::parse("6113728F27AE82C7B1A177C8D03F9E96E0ADF246").unwrap();
        assert_eq!(s.as_str(), "6113728f27ae82c7b1a177c8d03f9e96e0adf246");
        assert_eq!(s.short(), "6113728");
        assert!(CommitSha::parse("6113728").is_err());
        assert!(CommitSha::parse(&"g".repeat(40)).is_err());
    }

    #[test]
    fn delivery_ids_are_checked() {
        assert!(DeliveryId::parse("72d3162e-cc78-11e3-81ab-4c9367dc0958").is_ok());
        assert!(DeliveryId::parse("").is_err());
        assert!(DeliveryId::parse("a/b").is_err());
        assert!(DeliveryId::parse(&"a".repeat(101)).is_err());
    }

    #[test]
    fn an_instance_is_its_data_directory_and_owns_only_its_leases() {
        let dir = std::env::temp_dir();
        let (a, b) = (Instance::of(&dir), Instance::of(&dir.join("other")));
        assert_eq!(
            a,
            Instance::of(&dir),
            "the same directory, the same instance"
        );
        assert_ne!(a.tag(), b.tag());
        assert_eq!(a.tag().len(), 12);
        let owner = a.lease_owner(42);
        assert!(owner.starts_with(&a.owner_prefix()) && owner.ends_with("/42"));
        assert_eq!(
            owner.split('/').count(),
            4,
            "host, data directory, boot, process: {owner}"
        );
        assert!(!owner.starts_with(&b.owner_prefix()));
    }
}
