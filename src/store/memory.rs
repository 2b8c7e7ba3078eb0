//! The `memory_entries` table: what the hive learned per repository, with its stability.
//!
//! The lifecycle: an entry rises with its ticket (Ephemeral → Derived → Verified → Canonical),
//! never past its kind's ceiling (opinions stop at Derived, [`MemoryKind::ceiling`]), and to
//! Canonical only from Verified: merged *and* confirmed by the gates. A failed step demotes
//! what it produced to Ephemeral for good (its ceiling falls with it, so no later promotion
//! lifts it), and a ticket that ends Failed demotes everything it produced
//! ([`demote_in`], called by [`Store::move_ticket`]). The Canonical entries of a repository are
//! what later tickets are told: those relevant to a ticket's files, most relevant first, within
//! a byte budget ([`Store::relevant_memory`]).

use std::collections::{BTreeSet, HashSet};

use sqlx::Row as _;

use super::{Result, Store, StoreError};
use crate::ids::{RepoName, TicketKey};
use crate::now_ms;
use crate::ticket::{MemoryKind, MemoryStability};

/// One entry.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEntry {
    pub id: i64,
    pub kind: String,
    /// The step of its ticket that produced it: `plan`, `tests`, `attempt-N`, `review`.
    pub step: String,
    pub text: String,
    /// The files it is about (none: the whole repository).
    pub paths: Vec<String>,
    pub stability: MemoryStability,
    /// The highest stability it may reach: its kind's, or Ephemeral once demoted.
    pub ceiling: MemoryStability,
}

/// A new entry: what it records, which step of its ticket produced it, what it says, and the
/// files it is about.
#[derive(Debug, Clone, Copy)]
pub struct Memo<'a> {
    pub kind: MemoryKind,
    pub step: &'a str,
    pub text: &'a str,
    pub paths: &'a [String],
}

/// How many of a repository's newest Canonical entries [`Store::relevant_memory`] chooses
/// from.
const CANDIDATES: i64 = 500;

const COLUMNS: &str = "id, kind, step, text, paths, stability, ceiling";

impl Store {
    /// Records an entry of `ticket` at `stability`, held to its kind's ceiling. An entry of the
    /// same kind and text the ticket still has live (not demoted) is not written again, so a
    /// resumed step adds nothing. Its id.
    pub async fn add_memory(
        &self,
        repo: &RepoName,
        ticket: TicketKey,
        memo: &Memo<'_>,
        stability: MemoryStability,
    ) -> Result<i64> {
        let kind = memo.kind.as_str();
        let live = sqlx::query(
            "SELECT id FROM memory_entries WHERE ticket_id = $1 AND kind = $2 AND text = $3 \
             AND ceiling <> 'Ephemeral' ORDER BY id LIMIT 1",
        )
        .bind(ticket.0)
        .bind(kind)
        .bind(memo.text)
        .fetch_optional(self.writer())
        .await?;
        if let Some(row) = live {
            return Ok(row.get(0));
        }
        let ceiling = memo.kind.ceiling();
        let now = now_ms();
        let id = sqlx::query(
            "INSERT INTO memory_entries (repo, ticket_id, kind, step, text, paths, stability, ceiling, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id",
        )
        .bind(repo.as_str())
        .bind(ticket.0)
        .bind(kind)
        .bind(memo.step)
        .bind(memo.text)
        .bind(memo.paths.join("\n"))
        .bind(stability.min(ceiling).as_str())
        .bind(ceiling.as_str())
        .bind(now)
        .fetch_one(self.writer())
        .await?
        .get(0);
        Ok(id)
    }

    /// Raises the entries of `ticket` below `to` up to `to` where their ceiling allows (never
    /// lowers one): to Canonical only those already Verified. How many rose.
    pub async fn promote_memory(&self, ticket: TicketKey, to: MemoryStability) -> Result<u64> {
        let from: Vec<&str> = MemoryStability::ALL
            .iter()
            .filter(|m| **m < to)
            .filter(|m| to != MemoryStability::Canonical || **m == MemoryStability::Verified)
            .map(|m| m.as_str())
            .collect();
        let reach: Vec<&str> = MemoryStability::ALL
            .iter()
            .filter(|m| **m >= to)
            .map(|m| m.as_str())
            .collect();
        if from.is_empty() {
            return Ok(0);
        }
        let list = |first: usize, n: usize| -> String {
            (first..first + n)
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let sql = format!(
            "UPDATE memory_entries SET stability = $1, updated_at = $2 WHERE ticket_id = $3 \
             AND stability IN ({}) AND ceiling IN ({})",
            list(4, from.len()),
            list(4 + from.len(), reach.len()),
        );
        let mut q = sqlx::query(&sql)
            .bind(to.as_str())
            .bind(now_ms())
            .bind(ticket.0);
        for m in from.into_iter().chain(reach) {
            q = q.bind(m);
        }
        Ok(q.execute(self.writer()).await?.rows_affected())
    }

    /// Demotes what `step` of `ticket` produced (everything the ticket produced when `None`)
    /// to Ephemeral, for good: a failed step's output is not to be trusted, and no later
    /// promotion lifts it. How many entries fell.
    pub async fn demote_memory(&self, ticket: TicketKey, step: Option<&str>) -> Result<u64> {
        demote_in(self.writer(), ticket, step).await
    }

    /// The entries of `ticket`, oldest first.
    pub async fn ticket_memory(&self, ticket: TicketKey) -> Result<Vec<MemoryEntry>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memory_entries WHERE ticket_id = $1 ORDER BY id"
        ))
        .bind(ticket.0)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(entry).collect()
    }

    /// The newest `limit` Canonical entries of `repo`, newest first.
    pub async fn canonical_memory(&self, repo: &RepoName, limit: i64) -> Result<Vec<MemoryEntry>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memory_entries WHERE repo = $1 AND stability = 'Canonical' \
             ORDER BY id DESC LIMIT $2"
        ))
        .bind(repo.as_str())
        .bind(limit)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(entry).collect()
    }

    /// What a ticket about `focus` is told of `repo`: its Canonical entries relevant to the
    /// focus ([`choose`]), as many as fit in `budget` bytes.
    pub async fn relevant_memory(
        &self,
        repo: &RepoName,
        focus: &Focus,
        budget: usize,
    ) -> Result<Vec<MemoryEntry>> {
        let all = self.canonical_memory(repo, CANDIDATES).await?;
        Ok(choose(all, focus, budget))
    }
}

/// [`Store::demote_memory`] on `ex` (the store's writer, or the transaction that moves a
/// ticket to Failed).
pub(super) async fn demote_in<'e>(
    ex: impl sqlx::Executor<'e, Database = sqlx::Any>,
    ticket: TicketKey,
    step: Option<&str>,
) -> Result<u64> {
    let sql = "UPDATE memory_entries SET stability = 'Ephemeral', ceiling = 'Ephemeral', \
               updated_at = $1 WHERE ticket_id = $2 AND ceiling <> 'Ephemeral'";
    let n = match step {
        None => {
            sqlx::query(sql)
                .bind(now_ms())
                .bind(ticket.0)
                .execute(ex)
                .await?
        }
        Some(step) => {
            sqlx::query(&format!("{sql} AND step = $3"))
                .bind(now_ms())
                .bind(ticket.0)
                .bind(step)
                .execute(ex)
                .await?
        }
    };
    Ok(n.rows_affected())
}

fn entry(r: &sqlx::any::AnyRow) -> Result<MemoryEntry> {
    let level = |i: usize| -> Result<MemoryStability> {
        let s: String = r.get(i);
        MemoryStability::parse(&s)
            .ok_or_else(|| StoreError::Invalid(format!("unknown stability {s:?}")))
    };
    let paths: String = r.get(4);
    Ok(MemoryEntry {
        id: r.get(0),
        kind: r.get(1),
        step: r.get(2),
        text: r.get(3),
        paths: paths
            .lines()
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
        stability: level(5)?,
        ceiling: level(6)?,
    })
}

/// What a ticket is about, for choosing what it is told: its files (the plan's
/// `context_refs` and the paths its issue names), their directories, and the words of both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Focus {
    paths: BTreeSet<String>,
    dirs: BTreeSet<String>,
    words: BTreeSet<String>,
}

impl Focus {
    /// The focus of a ticket whose plan refers to `files` and whose issue says `text`.
    pub fn new(files: &[String], text: &str) -> Self {
        let mut paths: BTreeSet<String> = files.iter().filter_map(|f| as_path(f)).collect();
        paths.extend(text.split(is_path_break).filter_map(as_path));
        let dirs = paths.iter().flat_map(|p| dirs_of(p)).collect();
        let mut words = words_of(text);
        for p in &paths {
            words.extend(words_of(p));
        }
        Focus { paths, dirs, words }
    }
}

/// How relevant `e` is to `focus`: 4 for each file both name, 2 for each directory they share
/// (not the root), 1 for each word they share (at most 5); an entry about no file (a gate
/// command) is about the whole repository and scores 1 more. 0: unrelated.
pub fn score(e: &MemoryEntry, focus: &Focus) -> usize {
    let paths: BTreeSet<String> = e.paths.iter().filter_map(|p| as_path(p)).collect();
    let dirs: BTreeSet<String> = paths.iter().flat_map(|p| dirs_of(p)).collect();
    let mut words = words_of(&e.text);
    for p in &paths {
        words.extend(words_of(p));
    }
    let shared = |a: &BTreeSet<String>, b: &BTreeSet<String>| a.intersection(b).count();
    4 * shared(&paths, &focus.paths)
        + 2 * shared(&dirs, &focus.dirs)
        + shared(&words, &focus.words).min(5)
        + usize::from(paths.is_empty())
}

/// The entries a ticket about `focus` is told: the relevant ones ([`score`] above 0), the most
/// relevant first and the newest first among equals, each text once, as many as fit in
/// `budget` bytes (an entry costs its text and 3 bytes, its line in the prompt).
pub fn choose(entries: Vec<MemoryEntry>, focus: &Focus, budget: usize) -> Vec<MemoryEntry> {
    let mut scored: Vec<(usize, MemoryEntry)> = entries
        .into_iter()
        .map(|e| (score(&e, focus), e))
        .filter(|(s, _)| *s > 0)
        .collect();
    scored.sort_by(|(a, x), (b, y)| b.cmp(a).then(y.id.cmp(&x.id)));
    let mut seen = HashSet::new();
    let mut left = budget;
    let mut chosen = Vec::new();
    for (_, e) in scored {
        let cost = e.text.len() + 3;
        if cost > left || !seen.insert(e.text.clone()) {
            continue;
        }
        left -= cost;
        chosen.push(e);
    }
    chosen
}

/// Where a path named in prose ends: spaces, quotes, brackets, commas.
fn is_path_break(c: char) -> bool {
    c.is_whitespace() || "`'\"()[]{}<>,;|*".contains(c)
}

/// `token` as a path of the repository, when it looks like one: `a/b`, or `name.ext` (an
/// extension of letters and digits). Not a URL, not absolute, not outside the repository.
fn as_path(token: &str) -> Option<String> {
    let t = token
        .trim_end_matches(['.', ':', '!', '?'])
        .trim_start_matches("./");
    if t.is_empty() || t.contains("://") || t.starts_with('/') || t.split('/').any(|c| c == "..") {
        return None;
    }
    let name = t.rsplit('/').next().unwrap_or(t);
    let dotted = name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (stem.len() > 1 || ext.len() > 1)
            && ext.len() <= 8
            && ext.starts_with(|c: char| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    let slashed = t.contains('/') && t.chars().any(|c| c.is_alphanumeric());
    (dotted || slashed).then(|| t.trim_end_matches('/').to_owned())
}

/// The directories `path` is in (`a/b/c.py`: `a`, `a/b`); the root is none.
fn dirs_of(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').collect();
    (1..parts.len()).map(|n| parts[..n].join("/")).collect()
}

/// Words that say nothing about what an entry or a ticket is about: common English, and the
/// words every entry's sentence has.
const STOP: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "that",
    "this",
    "from",
    "are",
    "was",
    "were",
    "not",
    "but",
    "has",
    "have",
    "had",
    "its",
    "into",
    "than",
    "then",
    "when",
    "what",
    "which",
    "who",
    "will",
    "would",
    "should",
    "could",
    "can",
    "does",
    "did",
    "there",
    "their",
    "they",
    "been",
    "also",
    "only",
    "must",
    "returns",
    "return",
    "instead",
    "tests",
    "test",
    "source",
    "config",
    "docs",
    "file",
    "files",
    "changed",
    "change",
    "command",
    "passed",
    "pass",
    "passes",
    "breaker",
    "added",
    "failed",
    "fail",
    "fails",
    "failing",
    "base",
    "plan",
    "gate",
    "repository",
    "merged",
];

/// The words of `text` that can tell what it is about: lower-case runs of letters and digits
/// (`_` and `-` split them), of 3 or more characters, not a number, not in [`STOP`].
fn words_of(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memo(id: i64, text: &str, paths: &[&str]) -> MemoryEntry {
        MemoryEntry {
            id,
            kind: "file_role".into(),
            step: "attempt-1".into(),
            text: text.into(),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            stability: MemoryStability::Canonical,
            ceiling: MemoryStability::Canonical,
        }
    }

    #[test]
    fn a_focus_takes_the_plans_files_and_the_paths_the_issue_names() {
        let f = Focus::new(
            &["src/calc.py".into()],
            "`add(2, 3)` in lib/util/num.rs returns -1 (see ./docs/add.md, https://x.io/a.py, e.g. /etc/passwd and ../up.py).",
        );
        assert_eq!(
            f.paths.iter().map(String::as_str).collect::<Vec<_>>(),
            ["docs/add.md", "lib/util/num.rs", "src/calc.py"]
        );
        assert_eq!(
            f.dirs.iter().map(String::as_str).collect::<Vec<_>>(),
            ["docs", "lib", "lib/util", "src"]
        );
        assert!(f.words.contains("calc") && f.words.contains("add") && f.words.contains("num"));
        assert!(!f.words.contains("the") && !f.words.contains("returns"));
    }

    #[test]
    fn the_most_relevant_entries_are_chosen_within_the_budget() {
        let focus = Focus::new(&["calc/add.py".into()], "add() of floats is off");
        let entries = vec![
            memo(1, "`calc/add.py` is source", &["calc/add.py"]),
            memo(2, "`calc/mul.py` is source", &["calc/mul.py"]),
            memo(3, "`web/app.js` is source", &["web/app.js"]),
            memo(4, "`make test` is the test command", &[]),
            memo(5, "`calc/add.py` is source", &["calc/add.py"]),
            memo(6, "Tests of add(): test_floats", &["tests/test_add.py"]),
        ];
        let texts =
            |chosen: Vec<MemoryEntry>| -> Vec<i64> { chosen.iter().map(|e| e.id).collect() };
        // The same file first (the newest of equal texts once), then the same directory, then
        // a shared word, then the repository-wide fact; the unrelated file not at all.
        assert_eq!(
            texts(choose(entries.clone(), &focus, 4096)),
            [5, 2, 6, 4],
            "{:?}",
            entries.iter().map(|e| score(e, &focus)).collect::<Vec<_>>()
        );
        // The budget: the least relevant are left out first.
        let cost = |id: usize| entries[id - 1].text.len() + 3;
        assert_eq!(texts(choose(entries.clone(), &focus, cost(5))), [5]);
        let three = cost(5) + cost(2) + cost(6);
        assert_eq!(texts(choose(entries.clone(), &focus, three)), [5, 2, 6]);
        // One that does not fit is passed over for a smaller one after it.
        let budget = cost(5) + 50;
        let big = memo(7, &"x".repeat(100), &["calc/add.py"]);
        let with_big = [entries, vec![big]].concat();
        assert_eq!(texts(choose(with_big, &focus, budget)), [5, 2]);
    }
}
