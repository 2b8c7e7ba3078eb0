//! `apply_patch`: applies a unified diff (see [`super::patch_parse`]) of one or more files —
//! changes, creations from `/dev/null`, deletions to `/dev/null`, renames — all or nothing.
//! Every path is confined and checked against the write scope, and every hunk is matched in
//! memory, before the first file is written; a failed write puts back what was written.
//!
//! A hunk is looked for nearest to its header's line (after the previous hunk), exactly, then
//! ignoring trailing whitespace; context lines keep the file's own text.

use std::collections::BTreeSet;

use serde::Deserialize;

use super::patch_parse::{self, FilePatch, Hunk, Line};
use super::text;
use super::write::{check_size, writable};
use super::{Ctx, Done};
use crate::agent::ToolError;
use crate::agent::paths;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchArgs {
    patch: String,
}

/// One file to write (`new: Some`) or delete (`None`), with what was there before.
struct Change {
    rel: String,
    new: Option<String>,
    old: Option<String>,
}

pub fn apply_patch(ctx: &Ctx, args: PatchArgs) -> Result<Done, ToolError> {
    let files = patch_parse::parse(&args.patch)?;
    let mut changes: Vec<Change> = Vec::new();
    let mut report = Vec::new();
    let mut seen = BTreeSet::new();
    for fp in &files {
        let old = fp.old.as_deref().map(|p| writable(ctx, p)).transpose()?;
        let new = fp.new.as_deref().map(|p| writable(ctx, p)).transpose()?;
        let mut touched: Vec<&String> = old.iter().chain(new.iter()).collect();
        touched.dedup();
        if let Some(rel) = touched.into_iter().find(|r| !seen.insert((*r).clone())) {
            return Err(ToolError::new(
                "bad_arguments",
                format!("{rel} appears twice in the patch; put all its hunks under one header"),
            ));
        }
        let hunks = fp.hunks.len();
        match (old, new) {
            (None, None) => {
                return Err(ToolError::new(
                    "bad_arguments",
                    "a file header has /dev/null on both sides",
                ));
            }
            (None, Some(n)) => {
                must_be_absent(ctx, &n)?;
                let content = apply_hunks(&n, "", fp)?;
                report.push(format!("created {n}"));
                changes.push(Change {
                    rel: n,
                    new: Some(content),
                    old: None,
                });
            }
            (Some(o), None) => {
                let before = text::load(ctx, &o, true)?.text;
                if !apply_hunks(&o, &before, fp)?.is_empty() {
                    return Err(ToolError::new(
                        "patch_failed",
                        format!(
                            "{o}: the patch deletes the file, but its hunks do not remove all of its lines; use delete_file"
                        ),
                    ));
                }
                report.push(format!("deleted {o}"));
                changes.push(Change {
                    rel: o,
                    new: None,
                    old: Some(before),
                });
            }
            (Some(o), Some(n)) if o == n => {
                let before = text::load(ctx, &o, true)?.text;
                let after = apply_hunks(&o, &before, fp)?;
                report.push(format!(
                    "changed {o} ({hunks} {})",
                    if hunks == 1 { "hunk" } else { "hunks" }
                ));
                changes.push(Change {
                    rel: o,
                    new: Some(after),
                    old: Some(before),
                });
            }
            (Some(o), Some(n)) => {
                must_be_absent(ctx, &n)?;
                let before = text::load(ctx, &o, true)?.text;
                let after = apply_hunks(&o, &before, fp)?;
                report.push(format!("moved {o} to {n}"));
                changes.push(Change {
                    rel: n,
                    new: Some(after),
                    old: None,
                });
                changes.push(Change {
                    rel: o,
                    new: None,
                    old: Some(before),
                });
            }
        }
    }
    for c in &changes {
        check_size(c.new.as_ref().map_or(0, String::len))?;
    }
    write_all(ctx, &changes)?;
    Ok(Done {
        text: format!("applied the patch: {}", report.join(", ")),
        changed: changes.into_iter().map(|c| c.rel).collect(),
    })
}

fn must_be_absent(ctx: &Ctx, rel: &str) -> Result<(), ToolError> {
    if paths::kind(ctx.root(), rel)?.is_some() {
        return Err(ToolError::new(
            "patch_failed",
            format!("{rel} already exists; patch it with `--- a/{rel}` instead of `--- /dev/null`"),
        ));
    }
    Ok(())
}

/// Writes every change, or none: on a failure the ones written are put back.
fn write_all(ctx: &Ctx, changes: &[Change]) -> Result<(), ToolError> {
    for (i, c) in changes.iter().enumerate() {
        let r = match &c.new {
            Some(text) => paths::write(ctx.root(), &c.rel, text.as_bytes()).map(|_| ()),
            None => paths::remove(ctx.root(), &c.rel),
        };
        if let Err(e) = r {
            for done in changes[..i].iter().rev() {
                let _ = match &done.old {
                    Some(text) => paths::write(ctx.root(), &done.rel, text.as_bytes()).map(|_| ()),
                    None => paths::remove(ctx.root(), &done.rel),
                };
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Applies a file's hunks to `before`.
pub(super) fn apply_hunks(rel: &str, before: &str, fp: &FilePatch) -> Result<String, ToolError> {
    let crlf = before.contains("\r\n");
    let eol = if crlf { "\r\n" } else { "\n" };
    let lines: Vec<&str> = text::lines(before).into_iter().map(text::bare).collect();
    let mut ends_with_newline = before.is_empty() || before.ends_with('\n');
    let mut out: Vec<&str> = Vec::new();
    let mut pos = 0;
    let mut offset: isize = 0;
    for (k, hunk) in fp.hunks.iter().enumerate() {
        let old = hunk.old_side();
        // Where the header says the hunk starts (0-based; an insertion goes after its line).
        let stated = match hunk.old_start {
            Some(s) if old.is_empty() => Some(s),
            Some(s) => Some(s.saturating_sub(1)),
            None => None,
        };
        let hint = stated.map_or(pos as isize, |s| s as isize + offset);
        let want = hint.clamp(pos as isize, lines.len() as isize) as usize;
        let Some(at) = find(&lines, &old, pos, want) else {
            return Err(mismatch(rel, k, fp.hunks.len(), hunk, &lines, &old, want));
        };
        out.extend_from_slice(&lines[pos..at]);
        let mut i = at;
        for l in &hunk.lines {
            match l {
                Line::Context(_) => {
                    out.push(lines[i]);
                    i += 1;
                }
                Line::Remove(_) => i += 1,
                Line::Add(s) => out.push(s),
            }
        }
        if hunk.new_no_newline {
            ends_with_newline = false;
        } else if hunk.old_no_newline {
            ends_with_newline = true;
        }
        offset = at as isize - stated.unwrap_or(at) as isize;
        pos = at + old.len();
    }
    out.extend_from_slice(&lines[pos..]);
    let mut after = out.join(eol);
    if ends_with_newline && !out.is_empty() {
        after.push_str(eol);
    }
    Ok(after)
}

/// Where `old` occurs at or after `from`, nearest to `want`: exactly, else ignoring trailing
/// whitespace.
fn find(lines: &[&str], old: &[&str], from: usize, want: usize) -> Option<usize> {
    if old.is_empty() {
        return Some(want);
    }
    let last = lines.len().checked_sub(old.len())?;
    if from > last {
        return None;
    }
    let exact = |at: usize| lines[at..at + old.len()] == *old;
    let loose = |at: usize| {
        lines[at..at + old.len()]
            .iter()
            .zip(old)
            .all(|(a, b)| a.trim_end() == b.trim_end())
    };
    let want = want.clamp(from, last);
    for matches in [&exact as &dyn Fn(usize) -> bool, &loose] {
        for d in 0..=(last - from) {
            if want + d <= last && matches(want + d) {
                return Some(want + d);
            }
            if d > 0 && d <= want - from && matches(want - d) {
                return Some(want - d);
            }
        }
    }
    None
}

fn mismatch(
    rel: &str,
    k: usize,
    n: usize,
    hunk: &Hunk,
    lines: &[&str],
    old: &[&str],
    want: usize,
) -> ToolError {
    let detail = match old
        .iter()
        .enumerate()
        .find(|(j, l)| lines.get(want + j) != Some(*l))
    {
        Some((j, expected)) => match lines.get(want + j) {
            Some(found) => format!(
                "at line {} the patch expects {:?} but the file has {:?}",
                want + j + 1,
                cut(expected),
                cut(found)
            ),
            None => format!("the file has only {} lines", lines.len()),
        },
        None => "it overlaps the previous hunk".into(),
    };
    ToolError::new(
        "patch_failed",
        format!(
            "{rel}: hunk {} of {n} ({}) does not match the file: {detail}; nothing was changed. Read the file and make the patch from its current text, or use edit_file",
            k + 1,
            hunk.header
        ),
    )
}

fn cut(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_owned()
    }
}
