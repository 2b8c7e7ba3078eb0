//! Citations in an agent's answer, checked against the files they name. The agent cites as
//! inline code, `` `path:line` `` or `` `path:first-last` ``, with the numbers `read_file`
//! shows; each is looked up (the file exists at the commit, the lines are within it) and becomes
//! a link to those lines, or stays as written with ⚠️ and is listed as not found. Code blocks
//! are left alone. The model's claim that a line exists is never taken on trust.

/// An answer with its citations checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cited {
    /// The answer, each good citation a link, each bad one marked.
    pub text: String,
    /// Citations linked.
    pub linked: usize,
    /// Citations that name no file or no such lines, with why.
    pub refused: Vec<String>,
}

/// Checks and links the citations of `answer`. `lines(path)` is the number of lines of the
/// text file `path` (`None`: no such file); `link(path, first, last)` the address of those
/// lines.
pub fn check(
    answer: &str,
    lines: impl Fn(&str) -> Option<usize>,
    link: impl Fn(&str, usize, usize) -> String,
) -> Cited {
    let mut out = String::with_capacity(answer.len());
    let mut linked = 0;
    let mut refused = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in answer.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        let opens = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f));
        match (fence, opens) {
            (None, Some(f)) => {
                fence = Some(f);
                out.push_str(line);
                continue;
            }
            (Some(open), Some(f)) if f == open => {
                fence = None;
                out.push_str(line);
                continue;
            }
            (Some(_), _) => {
                out.push_str(line);
                continue;
            }
            (None, None) => {}
        }
        let mut rest = line;
        while let Some(start) = rest.find('`') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            let Some(len) = after.find('`') else {
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let span = &after[..len];
            rest = &after[len + 1..];
            let Some((path, first, last)) = parse(span) else {
                out.push('`');
                out.push_str(span);
                out.push('`');
                continue;
            };
            match lines(path) {
                Some(n) if first >= 1 && first <= last && last <= n => {
                    linked += 1;
                    out.push_str(&format!("[`{span}`]({})", link(path, first, last)));
                }
                found => {
                    let why = match found {
                        None => format!("`{span}`: no file {path}"),
                        Some(n) => format!("`{span}`: {path} has {n} lines"),
                    };
                    refused.push(why);
                    out.push_str(&format!("`{span}` ⚠️"));
                }
            }
        }
        out.push_str(rest);
    }
    Cited {
        text: out,
        linked,
        refused,
    }
}

/// `path:line` or `path:first-last`, the path of plain characters (letters, digits, `._/-`),
/// relative, without `..`.
fn parse(span: &str) -> Option<(&str, usize, usize)> {
    let (path, range) = span.rsplit_once(':')?;
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-');
    if path.is_empty()
        || !path.chars().all(plain)
        || path.starts_with('/')
        || path.split('/').any(|p| p == ".." || p.is_empty())
    {
        return None;
    }
    let number = |s: &str| s.parse::<usize>().ok().filter(|_| s.len() <= 7);
    let (first, last) = match range.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(range)?, number(range)?),
    };
    Some((path, first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cite(answer: &str) -> Cited {
        let lines = |p: &str| match p {
            "src/retry.rs" => Some(40),
            "README.md" => Some(3),
            _ => None,
        };
        check(answer, lines, |p, a, b| {
            format!("https://x/blob/s/{p}#L{a}-L{b}")
        })
    }

    #[test]
    fn good_citations_become_links_and_bad_ones_are_marked() {
        let c = cite(
            "The loop is at `src/retry.rs:12-20`, the limit at `src/retry.rs:3`.\n\
             Not `src/retry.rs:39-41`, nor `src/gone.rs:1`, nor `README.md:0`.",
        );
        assert_eq!(c.linked, 2);
        assert!(
            c.text
                .contains("[`src/retry.rs:12-20`](https://x/blob/s/src/retry.rs#L12-L20)"),
            "{}",
            c.text
        );
        assert!(
            c.text
                .contains("[`src/retry.rs:3`](https://x/blob/s/src/retry.rs#L3-L3)")
        );
        assert!(c.text.contains("`src/retry.rs:39-41` ⚠️"), "{}", c.text);
        assert_eq!(
            c.refused,
            [
                "`src/retry.rs:39-41`: src/retry.rs has 40 lines",
                "`src/gone.rs:1`: no file src/gone.rs",
                "`README.md:0`: README.md has 3 lines",
            ]
        );
    }

    #[test]
    fn code_and_other_inline_code_are_left_as_written() {
        let text = "Call `retry(3)` or `a:b`; `../etc/passwd:1` is no citation.\n\
                    ```\nsee `src/retry.rs:1`\n```\nunclosed `src/retry.rs:2";
        let c = cite(text);
        assert_eq!(c.text, text);
        assert_eq!((c.linked, c.refused.len()), (0, 0));
    }
}
