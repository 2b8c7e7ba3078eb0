//! Text helpers shared by the tools: loading a file as text, lines, line-numbered excerpts,
//! and "closest line" hints for edits that did not match.

use std::io::Read as _;

use super::Ctx;
use crate::agent::ToolError;
use crate::agent::paths;

/// Largest file the tools read or edit.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Largest content a tool writes in one file.
pub const MAX_WRITE_BYTES: usize = 1024 * 1024;

/// A text file of the worktree: its normalized relative path and its content.
pub struct TextFile {
    pub rel: String,
    pub text: String,
}

/// Reads `rel` as text. `strict` refuses invalid UTF-8 (for edits, which would otherwise
/// corrupt it); otherwise it is decoded lossily.
pub fn load(ctx: &Ctx, rel: &str, strict: bool) -> Result<TextFile, ToolError> {
    let shown = paths::display(ctx.root(), &paths::resolve(ctx.root(), rel)?);
    let file = paths::open_read(ctx.root(), rel)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_FILE_BYTES {
        return Err(ToolError::new(
            "too_large",
            format!(
                "{shown} is {len} bytes; the limit is {MAX_FILE_BYTES}: use search_files to find what you need in it"
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| paths::fs_error(&shown, e))?;
    if bytes.contains(&0) {
        return Err(ToolError::new(
            "binary",
            format!("{shown} is a binary file"),
        ));
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) if strict => {
            return Err(ToolError::new(
                "binary",
                format!("{shown} is not UTF-8 text; replace it whole with write_file instead"),
            ));
        }
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(TextFile { rel: shown, text })
}

/// The lines of `text`, each with its line ending.
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A line without its ending.
pub fn bare(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// `lines` numbered from `first` (1-based) as `  12| code`, the numbers right-aligned to
/// `width` digits.
pub fn numbered(lines: &[&str], first: usize, width: usize) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let line = bare(line);
        out.push_str(&format!("{:>width$}|", first + i));
        if !line.is_empty() {
            out.push(' ');
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Digits of `n`.
pub fn width(n: usize) -> usize {
    n.max(1).to_string().len()
}

/// An excerpt of `text` around lines `from..=to` (1-based), with `context` lines either side.
pub fn excerpt(text: &str, from: usize, to: usize, context: usize) -> String {
    let all = lines(text);
    if all.is_empty() {
        return "(the file is now empty)\n".into();
    }
    let start = from.saturating_sub(context).max(1);
    let end = (to + context).min(all.len()).max(start);
    let shown = &all[start - 1..end.min(start - 1 + 40)];
    numbered(shown, start, width(end))
}

/// How alike two strings are, from 0 to 1 (Dice coefficient over character pairs).
#[cfg(test)]
pub fn similarity(a: &str, b: &str) -> f64 {
    dice(&pairs(a), &pairs(b), a == b)
}

fn pairs(s: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = s.chars().collect();
    let mut v: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    v.sort_unstable();
    v
}

fn dice(pa: &[(char, char)], pb: &[(char, char)], equal: bool) -> f64 {
    if pa.is_empty() || pb.is_empty() {
        return if equal { 1.0 } else { 0.0 };
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < pa.len() && j < pb.len() {
        match pa[i].cmp(&pb[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    2.0 * common as f64 / (pa.len() + pb.len()) as f64
}

/// The 1-based line of `text` where `wanted`'s first lines fit best (compared without
/// surrounding whitespace), with a score from 0 to 1. Files over 20,000 lines get no hint.
pub fn closest(text: &str, wanted: &str) -> Option<(usize, f64)> {
    let want: Vec<&str> = wanted.lines().map(str::trim).take(8).collect();
    let have: Vec<&str> = text.lines().map(str::trim).collect();
    if want.is_empty() || have.is_empty() || have.len() > 20_000 {
        return None;
    }
    let want_pairs: Vec<_> = want.iter().map(|w| pairs(w)).collect();
    let have_pairs: Vec<_> = have.iter().map(|h| pairs(h)).collect();
    let mut best = (1, -1.0);
    for start in 0..have.len() {
        let mut score = 0.0;
        for (k, wp) in want_pairs.iter().enumerate() {
            if let Some(hp) = have_pairs.get(start + k) {
                score += dice(wp, hp, want[k] == have[start + k]);
            }
        }
        if score > best.1 {
            best = (start + 1, score);
        }
    }
    Some((best.0, best.1 / want.len() as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_numbers() {
        assert_eq!(lines("a\nb"), ["a\n", "b"]);
        assert_eq!(bare("x\r\n"), "x");
        assert_eq!(numbered(&["a\n", "\n"], 9, 2), " 9| a\n10|\n");
        assert_eq!(excerpt("1\n2\n3\n4\n5\n", 3, 3, 1), "2| 2\n3| 3\n4| 4\n");
    }

    #[test]
    fn closest_finds_the_near_miss() {
        assert!(similarity("return a - b", "return a + b") > 0.7);
        let text = "def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b\n";
        assert_eq!(
            closest(text, "def sub(a,b):\n  return a-b").map(|c| c.0),
            Some(4)
        );
    }
}
