//! The values of Python's string literals, as Python's parser gives them: prefixes, quotes,
//! escapes, implicit concatenation and `+`, f-strings without fields. The policy check reads
//! module and attribute names from them (`__import__("o" "s")`, `getattr(os, "\x73ystem")`).

use std::borrow::Cow;

/// What a literal holds, as far as this reader can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lit {
    /// A `str` whose value is known.
    Known(String),
    /// Not a `str` literal (a name, a call, bytes, an f-string with fields).
    Unknown,
    /// A `str` whose value needs Unicode's name table (`\N{LATIN SMALL LETTER O}`): its value
    /// is not read here, so where it names a module or an attribute the check says so.
    Opaque,
}

impl Lit {
    /// `self + other`, as Python's `+` on two strings.
    pub(super) fn join(self, other: Lit) -> Lit {
        match (self, other) {
            (Lit::Known(a), Lit::Known(b)) => Lit::Known(a + &b),
            (Lit::Unknown, _) | (_, Lit::Unknown) => Lit::Unknown,
            _ => Lit::Opaque,
        }
    }
}

/// The value of one string token, prefix and quotes included (`rb'…'`, `f"""…"""`).
pub(super) fn string_value(token: &str) -> Lit {
    let Some(start) = token.find(['\'', '"']) else {
        return Lit::Unknown;
    };
    let prefix = token[..start].to_ascii_lowercase();
    let rest = &token[start..];
    let quote = if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
        3
    } else {
        1
    };
    if rest.len() < 2 * quote {
        return Lit::Unknown;
    }
    let body = &rest[quote..rest.len() - quote];
    // Bytes and template strings are not `str`.
    if prefix.contains('b') || prefix.contains('t') {
        return Lit::Unknown;
    }
    let body: Cow<'_, str> = if prefix.contains('f') {
        match unbrace(body) {
            Some(b) => Cow::Owned(b),
            None => return Lit::Unknown,
        }
    } else {
        Cow::Borrowed(body)
    };
    if prefix.contains('r') {
        Lit::Known(body.into_owned())
    } else {
        unescape(&body)
    }
}

/// An f-string's text with `{{` and `}}` made single; `None` when it has a field.
fn unbrace(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '}' if chars.peek() == Some(&c) => {
                chars.next();
                out.push(c);
            }
            '{' => return None,
            _ => out.push(c),
        }
    }
    Some(out)
}

/// A non-raw literal's text with Python's escapes read.
fn unescape(body: &str) -> Lit {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            '\n' => None,
            '\r' => {
                chars.next_if_eq(&'\n');
                None
            }
            '\\' | '\'' | '"' => Some(e),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                match char::from_u32(value) {
                    Some(ch) => Some(ch),
                    None => return Lit::Unknown,
                }
            }
            'x' | 'u' | 'U' => {
                let digits = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = (0..digits).filter_map(|_| chars.next()).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) if hex.len() == digits => Some(ch),
                    _ => return Lit::Unknown,
                }
            }
            'N' => return Lit::Opaque,
            other => {
                out.push('\\');
                Some(other)
            }
        };
        out.extend(simple);
    }
    Lit::Known(out)
}

#[cfg(test)]
mod tests {
    use super::{Lit, string_value};

    fn known(s: &str) -> Lit {
        Lit::Known(s.into())
    }

    #[test]
    fn literals_read_as_python_reads_them() {
        assert_eq!(string_value("'os'"), known("os"));
        assert_eq!(string_value("\"\"\"os\"\"\""), known("os"));
        assert_eq!(string_value(r#"'\x6fs'"#), known("os"));
        assert_eq!(string_value(r#"'\157s'"#), known("os"));
        assert_eq!(string_value(r#"'\u006fs'"#), known("os"));
        assert_eq!(string_value(r#"'\U0000006fs'"#), known("os"));
        assert_eq!(string_value("'o\\\ns'"), known("os"));
        assert_eq!(string_value(r#"r'\x6fs'"#), known(r"\x6fs"));
        assert_eq!(string_value(r#"'\d'"#), known(r"\d"));
        assert_eq!(string_value("f'os'"), known("os"));
        assert_eq!(string_value("f'a{{b}}'"), known("a{b}"));
        assert_eq!(string_value("f'{x}s'"), Lit::Unknown);
        assert_eq!(string_value("b'os'"), Lit::Unknown);
        assert_eq!(string_value("Rb'os'"), Lit::Unknown);
        assert_eq!(string_value(r#"'\N{LATIN SMALL LETTER O}s'"#), Lit::Opaque);
        assert_eq!(string_value(r#"'\x6'"#), Lit::Unknown);
        assert_eq!(known("o").join(known("s")), known("os"));
        assert_eq!(known("o").join(Lit::Opaque), Lit::Opaque);
        assert_eq!(Lit::Opaque.join(Lit::Unknown), Lit::Unknown);
    }
}
