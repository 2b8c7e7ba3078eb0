//! The Markdown side of the grammar: which lines of a comment are plain paragraph text, and what
//! a reader sees of them. A small block scanner after CommonMark, as GitHub renders it: fenced
//! and indented code, block quotes with their lazy continuation lines, HTML comments (block and
//! inline) and just enough of list items to know how deep their code is nested. Where it has to
//! guess it hides rather than shows, so that text a reader cannot see never becomes a command.

/// One line of a comment, as the command grammar sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Line {
    /// Empty, or only spaces and tabs.
    Blank,
    /// Not plain text: code (fenced or indented), a fence line, a quote, an HTML comment block.
    Hidden,
    /// Paragraph, list item or heading text. `visible` is the line without its inline HTML
    /// comments; `plain_start` is false when the line begins inside a comment an earlier line
    /// opened.
    Text { visible: String, plain_start: bool },
}

/// Classifies every line of `lines` (split on `\n`, carriage returns already normalized).
pub(super) fn classify(lines: &[&str]) -> Vec<Line> {
    let mut scanner = Scanner {
        lists: Vec::new(),
        prev: Prev::Blank,
        open: Open::Nothing,
    };
    lines.iter().map(|line| scanner.line(line)).collect()
}

/// What the previous line left behind, for lazy continuation and indented code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prev {
    Blank,
    /// A paragraph is open: the next line may continue it.
    Para,
    /// A quote's paragraph is open: the next plain line continues the quote (lazily).
    Quote,
    /// Anything else (a heading, code, a closed fence or HTML block).
    Other,
}

/// A construct that spans lines and is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Nothing,
    /// Fenced code: the fence character, its length, and the column of the container it is in.
    Fence {
        ch: u8,
        len: usize,
        base: usize,
    },
    /// An HTML block that started with `<!--`: runs to the line containing `-->`.
    Html,
    /// An inline `<!--` in a paragraph: runs to `-->` or the paragraph's end.
    Inline,
}

/// What a line (or a list item's content) starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Blank,
    Code,
    Quote,
    Fence {
        ch: u8,
        len: usize,
    },
    Html {
        at: usize,
    },
    /// A line that closes any paragraph: ATX heading, thematic break, setext underline.
    Heading,
    /// A list item whose content starts at `col` (byte `at`); `code` when that content is
    /// indented code, `empty` when there is none.
    Item {
        col: usize,
        at: usize,
        empty: bool,
        code: bool,
    },
    Para,
}

/// How many list items one line may open; deeper nesting is hidden.
const MAX_ITEMS_PER_LINE: usize = 16;

struct Scanner {
    /// Content columns of the open list items, innermost last (strictly increasing).
    lists: Vec<usize>,
    prev: Prev,
    open: Open,
}

impl Scanner {
    fn line(&mut self, line: &str) -> Line {
        let (col, at) = indent(line, 0, 0);
        let blank = at == line.len();
        match self.open {
            Open::Fence { ch, len, base } => {
                if blank || col >= base {
                    if !blank && col - base <= 3 && closes(&line[at..], ch, len) {
                        self.open = Open::Nothing;
                        self.prev = Prev::Other;
                    }
                    return Line::Hidden;
                }
                // Dedented below its list item: the item ended, and the fence with it.
                self.open = Open::Nothing;
            }
            Open::Html => {
                if line.contains("-->") {
                    self.open = Open::Nothing;
                    self.prev = Prev::Other;
                }
                return Line::Hidden;
            }
            Open::Inline | Open::Nothing => {}
        }

        let para_open = matches!(self.prev, Prev::Para | Prev::Quote);
        let base = self.lists.iter().rev().find(|&&c| c <= col).copied();
        let kind = classify_at(line, col, at, base.unwrap_or(0), para_open);
        if kind == Kind::Blank {
            self.prev = Prev::Blank;
            self.open = Open::Nothing;
            return Line::Blank;
        }
        // A plain line after an open paragraph continues it, even when less indented.
        let lazy = para_open && kind == Kind::Para;
        if self.open == Open::Inline {
            if lazy {
                return match line.find("-->") {
                    Some(end) => {
                        self.open = Open::Nothing;
                        self.text(line, end + 3, false)
                    }
                    None => Line::Text {
                        visible: String::new(),
                        plain_start: false,
                    },
                };
            }
            // Anything else ends the paragraph, and an unclosed inline comment with it.
            self.open = Open::Nothing;
        }
        if self.prev == Prev::Quote && lazy {
            return Line::Hidden;
        }
        if !lazy {
            while self.lists.last().is_some_and(|&c| c > col) {
                self.lists.pop();
            }
        }

        let mut base = self.lists.last().copied().unwrap_or(0);
        let mut kind = kind;
        let mut depth = 0;
        loop {
            match kind {
                Kind::Item {
                    col,
                    at,
                    empty,
                    code,
                } => {
                    if depth == MAX_ITEMS_PER_LINE {
                        // `- - - … x`: nobody writes that; keep the scan linear.
                        self.prev = Prev::Other;
                        return Line::Hidden;
                    }
                    depth += 1;
                    self.lists.push(col);
                    base = col;
                    if empty {
                        self.prev = Prev::Other;
                        return self.text(line, 0, true);
                    }
                    if code {
                        self.prev = Prev::Other;
                        return Line::Hidden;
                    }
                    kind = classify_at(line, col, at, base, false);
                }
                Kind::Quote => {
                    self.prev = Prev::Quote;
                    return Line::Hidden;
                }
                Kind::Fence { ch, len } => {
                    self.open = Open::Fence { ch, len, base };
                    self.prev = Prev::Other;
                    return Line::Hidden;
                }
                Kind::Html { at } => {
                    if !line[at..].contains("-->") {
                        self.open = Open::Html;
                    }
                    self.prev = Prev::Other;
                    return Line::Hidden;
                }
                Kind::Code => {
                    self.prev = Prev::Other;
                    return Line::Hidden;
                }
                Kind::Heading => {
                    self.prev = Prev::Other;
                    return self.text(line, 0, true);
                }
                Kind::Para | Kind::Blank => {
                    self.prev = Prev::Para;
                    return self.text(line, 0, true);
                }
            }
        }
    }

    /// The visible text of `line` from byte `from`: inline HTML comments removed. An unclosed
    /// `<!--` leaves an inline comment open for the next lines.
    fn text(&mut self, line: &str, from: usize, plain_start: bool) -> Line {
        let mut visible = String::new();
        let mut rest = line.get(from..).unwrap_or("");
        loop {
            let Some(open) = rest.find("<!--") else {
                visible.push_str(rest);
                break;
            };
            visible.push_str(&rest[..open]);
            // From `<!` on, so that `<!-->` and `<!--->` close at once, as CommonMark has it.
            match rest[open + 2..].find("-->") {
                Some(end) => rest = &rest[open + 2 + end + 3..],
                None => {
                    self.open = Open::Inline;
                    break;
                }
            }
        }
        Line::Text {
            visible,
            plain_start,
        }
    }
}

/// Columns of spaces and tabs from byte `at` (at column `col`; tab stops every 4 columns), and
/// the byte after them.
fn indent(line: &str, mut at: usize, mut col: usize) -> (usize, usize) {
    let bytes = line.as_bytes();
    while let Some(&b) = bytes.get(at) {
        match b {
            b' ' => col += 1,
            b'\t' => col += 4 - col % 4,
            _ => break,
        }
        at += 1;
    }
    (col, at)
}

/// What the content at column `col` (byte `at`) of `line` starts, inside a container whose
/// content begins at column `base`.
fn classify_at(line: &str, col: usize, at: usize, base: usize, para_open: bool) -> Kind {
    let rest = &line[at..];
    if rest.is_empty() {
        return Kind::Blank;
    }
    if col.saturating_sub(base) >= 4 {
        // Indented code cannot interrupt a paragraph: such a line continues it.
        return if para_open { Kind::Para } else { Kind::Code };
    }
    if rest.starts_with('>') {
        return Kind::Quote;
    }
    if let Some((ch, len)) = fence(rest) {
        return Kind::Fence { ch, len };
    }
    if rest.starts_with("<!--") {
        return Kind::Html { at };
    }
    if heading(rest) || thematic(rest) || (para_open && setext(rest)) {
        return Kind::Heading;
    }
    item(line, col, at, para_open).unwrap_or(Kind::Para)
}

/// An opening code fence: 3+ backticks (with an info string free of backticks) or 3+ tildes.
fn fence(rest: &str) -> Option<(u8, usize)> {
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    if len < 3 || (ch == b'`' && rest[len..].contains('`')) {
        return None;
    }
    Some((ch, len))
}

/// A closing fence for `ch` × `len`: at least as long, nothing after it but spaces and tabs.
fn closes(rest: &str, ch: u8, len: usize) -> bool {
    let run = rest.bytes().take_while(|&b| b == ch).count();
    run >= len && rest[run..].bytes().all(|b| b == b' ' || b == b'\t')
}

fn heading(rest: &str) -> bool {
    let hashes = rest.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && matches!(rest.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
}

/// `***`, `---`, `___`, spaces allowed between.
fn thematic(rest: &str) -> bool {
    let mut marks = rest.bytes().filter(|&b| b != b' ' && b != b'\t');
    let Some(first) = marks.next() else {
        return false;
    };
    matches!(first, b'*' | b'-' | b'_') && marks.clone().all(|b| b == first) && marks.count() >= 2
}

/// `===` or `---` under a paragraph.
fn setext(rest: &str) -> bool {
    let body = rest.trim_end_matches([' ', '\t']);
    let Some(first) = body.bytes().next() else {
        return false;
    };
    (first == b'=' || first == b'-') && body.bytes().all(|b| b == first)
}

/// A list item marker (`-`, `+`, `*`, or 1–9 digits and `.` or `)`) at byte `at`. Under an
/// open paragraph only a non-empty item may start, and an ordered one only at 1.
fn item(line: &str, col: usize, at: usize, para_open: bool) -> Option<Kind> {
    let rest = &line[at..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let marker = match rest.as_bytes().first()? {
        b'-' | b'+' | b'*' => 1,
        _ if (1..=9).contains(&digits)
            && matches!(rest.as_bytes().get(digits), Some(b'.' | b')')) =>
        {
            if para_open && &rest[..digits] != "1" {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    if !matches!(rest.as_bytes().get(marker), None | Some(b' ' | b'\t')) {
        return None;
    }
    let after = col + marker;
    let (content_col, content_at) = indent(line, at + marker, after);
    let empty = content_at == line.len();
    if empty && para_open {
        return None;
    }
    // Five or more columns after the marker: the content is indented code one column in.
    let code = !empty && content_col - after >= 5;
    Some(Kind::Item {
        col: if empty || code {
            after + 1
        } else {
            content_col
        },
        at: content_at,
        empty,
        code,
    })
}
