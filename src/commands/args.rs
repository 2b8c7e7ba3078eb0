//! The words after `/hive`: which command they name and whether its arguments are right.

use super::{Command, MAX_FEEDBACK, Parsed, Permission, Role};

/// One command of the help text.
pub(super) struct Spec {
    pub name: &'static str,
    pub usage: &'static str,
    pub permission: Permission,
    pub what: &'static str,
    /// The command, for those that take no arguments.
    pub simple: Option<Command>,
}

/// Every command, in the order the help text lists them.
pub(super) static SPECS: [Spec; 11] = [
    Spec {
        name: "status",
        usage: "status",
        permission: Permission::Read,
        what: "show the ticket's state, plan, budget and links.",
        simple: Some(Command::Status),
    },
    Spec {
        name: "help",
        usage: "help",
        permission: Permission::Read,
        what: "show this list.",
        simple: Some(Command::Help),
    },
    Spec {
        name: "ask",
        usage: "ask <question>",
        permission: Permission::Read,
        what: "a read-only agent answers about the code, citing files and lines (the question runs to a blank line).",
        simple: None,
    },
    Spec {
        name: "plan",
        usage: "plan",
        permission: Permission::Write,
        what: "plan again from the issue as it reads now (resumes a ticket waiting for answers); with no ticket, plan only.",
        simple: Some(Command::Plan),
    },
    Spec {
        name: "base",
        usage: "base <branch>",
        permission: Permission::Write,
        what: "land this ticket on another branch than the default (before its code is written); it plans again.",
        simple: None,
    },
    Spec {
        name: "retry",
        usage: "retry [role]",
        permission: Permission::Write,
        what: "retry a failed ticket from a role's stage (architect, breaker, builder, critic), or where it failed.",
        simple: None,
    },
    Spec {
        name: "feedback",
        usage: "feedback <text>",
        permission: Permission::Write,
        what: "guidance for the agents; the text may go on over the next lines, up to a blank line.",
        simple: None,
    },
    Spec {
        name: "approve",
        usage: "approve",
        permission: Permission::Write,
        what: "approve the pull request for merging.",
        simple: Some(Command::Approve),
    },
    Spec {
        name: "abort",
        usage: "abort",
        permission: Permission::Write,
        what: "stop work on the ticket and mark it failed.",
        simple: Some(Command::Abort),
    },
    Spec {
        name: "rebase",
        usage: "rebase",
        permission: Permission::Write,
        what: "rebase the branch onto the base branch and run the gates again.",
        simple: Some(Command::Rebase),
    },
    Spec {
        name: "reset",
        usage: "reset <tag>",
        permission: Permission::Admin,
        what: "reset the base branch to a snapshot tag, e.g. `LATEST_STABLE`.",
        simple: None,
    },
];

/// Reads what follows `/hive` on a command line; `more` gives the continuation lines of a
/// feedback command.
pub(super) fn parse(after: &str, more: impl FnOnce() -> String) -> Parsed {
    let s = after.trim();
    if s.is_empty() {
        return Parsed::Ok(Command::Help);
    }
    let (word, rest) = match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    };
    let Some(spec) = SPECS.iter().find(|c| c.name.eq_ignore_ascii_case(word)) else {
        return Parsed::Unknown {
            word: shown(word, 32),
            suggestion: suggest(word),
        };
    };
    let name = spec.name;
    let invalid = |reason: String| Parsed::Invalid {
        command: name,
        reason,
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    if let Some(command) = &spec.simple {
        return if words.is_empty() {
            Parsed::Ok(command.clone())
        } else {
            invalid(format!("takes no arguments: write `/hive {name}` alone"))
        };
    }
    let command = match (name, words.as_slice()) {
        ("retry", []) => Command::Retry(None),
        ("retry", [role]) => match Role::parse(role).filter(|r| Role::TICKET.contains(r)) {
            Some(role) => Command::Retry(Some(role)),
            None => {
                return invalid(format!(
                    "there is no role `{}`: write `/hive retry` with architect, breaker, builder or critic, or alone for the stage that failed",
                    shown(role, 40)
                ));
            }
        },
        ("retry", _) => {
            return invalid("takes one role at most, e.g. `/hive retry builder`".into());
        }
        ("base", []) => return invalid("needs a branch, e.g. `/hive base release/1.x`".into()),
        ("base", [branch]) => match check_ref_name(branch) {
            Ok(()) => Command::Base((*branch).to_owned()),
            Err(why) => {
                return invalid(format!("`{}` is no valid branch: {why}", shown(branch, 40)));
            }
        },
        ("base", _) => return invalid("takes one branch, e.g. `/hive base release/1.x`".into()),
        ("reset", []) => return invalid("needs a tag, e.g. `/hive reset LATEST_STABLE`".into()),
        ("reset", [tag]) => match check_ref_name(tag) {
            Ok(()) => Command::Reset((*tag).to_owned()),
            Err(why) => return invalid(format!("`{}` is no valid tag: {why}", shown(tag, 40))),
        },
        ("reset", _) => return invalid("takes one tag, e.g. `/hive reset LATEST_STABLE`".into()),
        ("feedback", _) => {
            let text = format!("{rest}{}", more());
            let text = text.trim();
            match check_text(text, "keep the public API unchanged") {
                Ok(()) => Command::Feedback(text.to_owned()),
                Err(reason) => return invalid(reason),
            }
        }
        ("ask", _) => {
            let text = format!("{rest}{}", more());
            let text = text.trim();
            match check_text(
                text,
                "where is the retry logic, and why does it stop after 3 tries?",
            ) {
                Ok(()) => Command::Ask(text.to_owned()),
                Err(reason) => return invalid(reason),
            }
        }
        // A command in `SPECS` that this match forgot (a test makes sure there is none).
        _ => {
            return Parsed::Unknown {
                word: shown(word, 32),
                suggestion: None,
            };
        }
    };
    Parsed::Ok(command)
}

/// Checks a command's free text (feedback, a question); `example` shows what to write.
fn check_text(text: &str, example: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err(format!("needs text, e.g. `{example}`"));
    }
    let chars = text.chars().count();
    if chars > MAX_FEEDBACK {
        return Err(format!(
            "is {chars} characters long; the limit is {MAX_FEEDBACK}: shorten it, or split it over several comments"
        ));
    }
    if text.chars().any(is_bidi_control) {
        return Err("holds invisible bidi control characters (U+202A–U+202E, U+2066–U+2069): write it without them".into());
    }
    Ok(())
}

/// Why `tag` is no tag or branch name a command may use: `[A-Za-z0-9._/-]{1,100}`, not
/// starting with `-`, no `..`, and git's other rules for ref names that this alphabet allows
/// one to break. What is left is safe anywhere a name goes: a ref, a URL, an argument.
pub fn check_ref_name(tag: &str) -> Result<(), &'static str> {
    if !tag
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'))
    {
        return Err("it holds only letters, digits and `.` `_` `/` `-`");
    }
    if tag.is_empty() || tag.len() > 100 {
        return Err("it has 1 to 100 characters");
    }
    if tag.starts_with('-') {
        return Err("it does not start with `-`");
    }
    if tag.contains("..") {
        return Err("it does not contain `..`");
    }
    if tag.starts_with('/') || tag.ends_with('/') || tag.contains("//") {
        return Err("it does not start or end with `/` or contain `//`");
    }
    if tag.ends_with('.')
        || tag
            .split('/')
            .any(|part| part.starts_with('.') || part.ends_with(".lock"))
    {
        return Err(
            "it does not end with `.`, and no part of it starts with `.` or ends with `.lock`",
        );
    }
    Ok(())
}

/// Bidi embeddings, overrides and isolates: they reorder what a reader sees.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters that show nothing (zero-width, bidi marks and controls, soft hyphen, BOM).
pub(super) fn is_invisible(c: char) -> bool {
    is_bidi_control(c)
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2060}'..='\u{2064}'
                | '\u{FEFF}'
        )
}

/// `s` cut to `max` characters, the last one `…` when cut.
pub(super) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// User text safe to echo inside backticks: shortened, invisible and control characters as
/// U+FFFD, backticks as `'`.
fn shown(s: &str, max: usize) -> String {
    let safe: String = s
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_control() || is_invisible(c) => '\u{FFFD}',
            c => c,
        })
        .collect();
    shorten(&safe, max)
}

/// See [`super::suggest`].
pub(super) fn suggest(word: &str) -> Option<&'static str> {
    let word: Vec<char> = word.to_lowercase().chars().collect();
    // No command is longer than 8 characters, so nothing longer is within reach.
    if word.is_empty() || word.len() > 10 {
        return None;
    }
    let limit = if word.len() <= 3 { 1 } else { 2 };
    let scored: Vec<(usize, &'static str)> = SPECS
        .iter()
        .map(|s| (distance(&word, &s.name.chars().collect::<Vec<_>>()), s.name))
        .filter(|&(d, _)| d <= limit)
        .collect();
    if let Some(best) = scored.iter().map(|&(d, _)| d).min() {
        let mut at_best = scored.iter().filter(|&&(d, _)| d == best);
        if let (Some(&(_, name)), None) = (at_best.next(), at_best.next()) {
            return Some(name);
        }
    }
    if word.len() < 2 {
        return None;
    }
    let prefix: String = word.iter().collect();
    let mut starting = SPECS.iter().filter(|s| s.name.starts_with(&prefix));
    match (starting.next(), starting.next()) {
        (Some(spec), None) => Some(spec.name),
        _ => None,
    }
}

/// Edit distance with swaps of neighbouring characters (optimal string alignment).
fn distance(a: &[char], b: &[char]) -> usize {
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}
