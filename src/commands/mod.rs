//! Slash commands: how people steer the hive from issue and pull-request comments. The grammar,
//! the parser and the permission each command needs; nothing here does I/O.
//!
//! # Grammar
//!
//! ```text
//! command  = indent "/hive" [ ws word [ ws arguments ] ] [ ws ]   ; "/hive" alone means help
//! indent   = 0 to 3 spaces (U+0020)        ; a tab is 4 columns: code, not a command
//! ws       = 1* Unicode White_Space
//! word     = "status" | "help" | "ask" | "plan" | "retry" | "feedback"
//!          | "approve" | "abort" | "rebase" | "reset"   ; ASCII case-insensitive, as is "/hive"
//! retry    = "retry" [ ws role ]           ; role = architect | breaker | builder | critic
//! feedback = "feedback" [ ws text ]        ; text: the rest of the line and what continues it
//! ask      = "ask" [ ws text ]             ; a question, read as feedback's text is
//! reset    = "reset" ws tag
//! tag      = 1*100 ( ALPHA | DIGIT | "." | "_" | "/" | "-" )   ; and the rules below
//! ; status, help, plan, approve, abort and rebase take no arguments
//! ```
//!
//! - **Where.** A command is a line of a comment that starts (after at most three spaces) with
//!   `/hive` and then white space or the line's end: `/hivemind`, `` `/hive approve` `` and
//!   `- /hive approve` are no commands; a line under a list item, indented 2, is one. Line breaks
//!   are `\n`, `\r\n` or `\r`; lines are numbered from 1.
//! - **What people cannot see, or did not write, is not a command** (the `scan` module, after
//!   CommonMark as GitHub renders it): lines in fenced code (```` ``` ```` or `~~~`, any info
//!   string, also indented inside list items; a fence never closed runs to the end), in indented
//!   code (4+ columns after a blank line or anything but a paragraph; a 4+ column line under a
//!   paragraph continues it, and is no command either, having more than 3 spaces), in block
//!   quotes (`>`, `> >`, and the lines that continue a quoted paragraph without `>` up to the
//!   next blank line or block: leave a blank line after a quote), and in HTML comments (`<!--`
//!   at a line's start runs to the line holding `-->`, across blank lines; one inside a
//!   paragraph runs to `-->` or the paragraph's end). An inline comment on a command line is
//!   removed before the arguments are read. Where the scanner must guess, it hides.
//! - **Plain characters only.** `/hive` must be written exactly, preceded by nothing but spaces:
//!   a zero-width or bidi control character (U+200B–U+200F, U+202A–U+202E, U+2060–U+2064,
//!   U+FEFF, …) before, inside or right after it leaves the line a mere paragraph. Inside the
//!   command word, a role or a tag it makes the command unknown or invalid. Feedback text may
//!   hold zero-width joiners (emoji need them) but no bidi embeddings, overrides or isolates.
//! - **Arguments** are checked strictly: a command that takes none refuses any (so
//!   `/hive approve later` approves nothing), `retry` takes one role at most and `reset` exactly
//!   one tag. A tag also must not start with `-` or contain `..`, and, as git has it for ref
//!   names, must not start or end with `/`, contain `//`, end with `.`, or have a part that
//!   starts with `.` or ends with `.lock`.
//! - **Feedback** is the rest of the command line plus the lines after it, up to the first
//!   blank line, line that is not plain text (code, quote, comment) or line that starts another
//!   `/hive` command; so it may also start on the next line. Each line is trimmed, lines are
//!   joined with `\n`; the text must not be empty and may hold at most [`MAX_FEEDBACK`]
//!   characters. A question (`ask`) is read the same way.
//! - **Once only.** A command runs once. When a comment is edited, [`new_commands`] keeps the
//!   commands the old version did not have, counting repeats; commands are compared by their
//!   normalized form (case of the words, spacing), so an edit elsewhere runs nothing again.
//! - Nothing here caps how many commands one comment holds; the caller decides.
//!
//! Permissions come from GitHub's collaborator permission (`read` … `admin`); see
//! [`Command::required`] and [`Permission::parse`].

mod args;
mod person;
mod scan;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

pub use crate::ticket::Role;
pub use args::check_ref_name;
pub use person::Person;
use scan::Line;

/// The longest feedback text, in characters.
pub const MAX_FEEDBACK: usize = 2000;

/// The longest [`Found::text`], in characters.
pub const MAX_TEXT: usize = 200;

/// A command, with its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Command {
    /// Show the ticket's state.
    Status,
    /// List the commands.
    Help,
    /// Plan again, or resume a blocked ticket.
    Plan,
    /// Retry a failed ticket from a role's stage; `None`: the stage it failed in.
    Retry(Option<Role>),
    /// Guidance for the agents.
    Feedback(String),
    /// A question for the read-only agent.
    Ask(String),
    /// A person's approval for merging.
    Approve,
    /// Stop work on the ticket.
    Abort,
    /// Rebase the branch onto the base branch and check it again.
    Rebase,
    /// Land the ticket on this branch (a valid branch name; whether it exists is the
    /// caller's question).
    Base(String),
    /// Reset the base branch to a snapshot tag (a valid tag name; whether it exists is the
    /// caller's question).
    Reset(String),
}

impl Command {
    /// The least permission a person needs to run this command.
    pub fn required(&self) -> Permission {
        match self {
            Command::Status | Command::Help | Command::Ask(_) => Permission::Read,
            Command::Plan
            | Command::Retry(_)
            | Command::Feedback(_)
            | Command::Approve
            | Command::Abort
            | Command::Rebase
            | Command::Base(_) => Permission::Write,
            Command::Reset(_) => Permission::Admin,
        }
    }

    /// Whether a person with `have` (`None`: no access) may run this command.
    pub fn allowed(&self, have: Option<Permission>) -> bool {
        have.is_some_and(|p| p >= self.required())
    }

    /// The command word.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Status => "status",
            Command::Help => "help",
            Command::Plan => "plan",
            Command::Retry(_) => "retry",
            Command::Feedback(_) => "feedback",
            Command::Ask(_) => "ask",
            Command::Approve => "approve",
            Command::Abort => "abort",
            Command::Rebase => "rebase",
            Command::Reset(_) => "reset",
            Command::Base(_) => "base",
        }
    }
}

/// The command as it is written canonically: `/hive retry builder`.
impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/hive {}", self.name())?;
        match self {
            Command::Retry(Some(role)) => write!(f, " {role}"),
            Command::Feedback(text)
            | Command::Ask(text)
            | Command::Reset(text)
            | Command::Base(text) => {
                write!(f, " {text}")
            }
            _ => Ok(()),
        }
    }
}

/// A person's permission on a repository, weakest first (GitHub's repository roles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    pub const ALL: [Permission; 5] = [
        Permission::Read,
        Permission::Triage,
        Permission::Write,
        Permission::Maintain,
        Permission::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }

    /// Reads GitHub's collaborator `permission` or `role_name` (`read`, `triage`, `write`,
    /// `maintain`, `admin`, and the older `pull` and `push`), ASCII case-insensitively. `none`,
    /// and anything else (a custom role's name, say: use its `permission` instead), is `None`:
    /// no access.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        match () {
            _ if s.eq_ignore_ascii_case("pull") => Some(Permission::Read),
            _ if s.eq_ignore_ascii_case("push") => Some(Permission::Write),
            _ => Self::ALL
                .into_iter()
                .find(|p| p.as_str().eq_ignore_ascii_case(s)),
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a command line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Ok(Command),
    /// A word that is no command (shortened to 32 characters, invisible and control characters
    /// shown as U+FFFD, backticks as `'`), with the command it probably meant.
    Unknown {
        word: String,
        suggestion: Option<&'static str>,
    },
    /// A command with arguments it cannot take; `reason` says what to write instead.
    Invalid {
        command: &'static str,
        reason: String,
    },
}

/// A command line of a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// 1-based line in the comment.
    pub line: usize,
    pub parsed: Parsed,
    /// The command line as written, trimmed, at most [`MAX_TEXT`] characters (`…` at the end
    /// when shortened).
    pub text: String,
}

/// Every `/hive` command of a comment body, in order.
pub fn parse(body: &str) -> Vec<Found> {
    let body = body.replace("\r\n", "\n").replace('\r', "\n");
    let raw: Vec<&str> = body.split('\n').collect();
    let lines = scan::classify(&raw);
    let mut found = Vec::new();
    for (i, (raw_line, line)) in raw.iter().zip(&lines).enumerate() {
        let Some(after) = command_rest(raw_line, line) else {
            continue;
        };
        let following = raw.get(i + 1..).unwrap_or_default();
        let parsed = args::parse(after, || {
            continuation(following, lines.get(i + 1..).unwrap_or_default())
        });
        found.push(Found {
            line: i + 1,
            parsed,
            text: args::shorten(raw_line.trim(), MAX_TEXT),
        });
    }
    found
}

/// The commands of an edited comment that were not in its previous version (a command runs
/// once, even if the comment is edited later). Commands are compared by their normalized text,
/// as a multiset: a command the old version had n times is new from its (n+1)-th occurrence.
pub fn new_commands(old_body: &str, new_body: &str) -> Vec<Found> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for f in parse(old_body) {
        *seen.entry(key(&f.parsed)).or_default() += 1;
    }
    parse(new_body)
        .into_iter()
        .filter(|f| match seen.get_mut(&key(&f.parsed)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

/// The help text: one line per command with the permission it needs. It holds no command line
/// itself, so posting it runs nothing.
pub fn help() -> String {
    let mut out = String::from(
        "Vibeloop commands: write one at the start of a line of a comment (`/hive` alone shows this list).\n",
    );
    for spec in &args::SPECS {
        out.push_str(&format!(
            "- `/hive {}` ({}): {}\n",
            spec.usage, spec.permission, spec.what
        ));
    }
    out
}

/// Did-you-mean for an unknown command word: the command within edit distance 2 (1 for words
/// of up to 3 characters; a swap of neighbours counts 1), else the only command the word
/// begins (2 characters at least); `None` when nothing or more than one command fits.
pub fn suggest(word: &str) -> Option<&'static str> {
    args::suggest(word)
}

/// What follows `/hive` on a command line (the visible text, inline comments removed), or
/// `None` when `raw` is not one.
fn command_rest<'a>(raw: &str, line: &'a Line) -> Option<&'a str> {
    let Line::Text {
        visible,
        plain_start: true,
    } = line
    else {
        return None;
    };
    let spaces = raw.len() - raw.trim_start_matches(' ').len();
    let end = spaces + "/hive".len();
    if spaces > 3 || !raw.get(spaces..end)?.eq_ignore_ascii_case("/hive") {
        return None;
    }
    // The raw line starts with plain text, so its visible text starts the same way.
    let rest = visible.get(end..)?;
    match rest.chars().next() {
        None => Some(rest),
        Some(c) if c.is_whitespace() => Some(rest),
        Some(_) => None,
    }
}

/// The lines that continue a feedback command, trimmed and joined with `\n`; stops once the
/// text is longer than [`MAX_FEEDBACK`] (it is refused then anyway).
fn continuation(raw: &[&str], lines: &[Line]) -> String {
    let mut out = String::new();
    for (raw_line, line) in raw.iter().zip(lines) {
        let Line::Text { visible, .. } = line else {
            break;
        };
        if command_rest(raw_line, line).is_some() {
            break;
        }
        let text = visible.trim();
        if text.is_empty() {
            continue;
        }
        out.push('\n');
        out.push_str(text);
        if out.len() > 4 * MAX_FEEDBACK {
            break;
        }
    }
    out
}

/// What makes two commands the same for [`new_commands`].
fn key(parsed: &Parsed) -> String {
    match parsed {
        Parsed::Ok(c @ (Command::Feedback(text) | Command::Ask(text))) => {
            let words: Vec<&str> = text.split_whitespace().collect();
            format!("/hive {} {}", c.name(), words.join(" "))
        }
        Parsed::Ok(command) => command.to_string(),
        Parsed::Unknown { word, .. } => format!("?{}", word.to_lowercase()),
        Parsed::Invalid { command, reason } => format!("!{command} {reason}"),
    }
}
