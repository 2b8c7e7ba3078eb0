//! Markdown we write (the status comment, plans, reports) as HTML for the dashboard, through
//! pulldown-cmark (CommonMark with GitHub's tables, task lists and strikethrough). What we write
//! embeds text from people and models, so nothing in it may become markup of its own: raw HTML
//! is shown as text, links go only to web and mail addresses or this site, and images become
//! links (no request leaves the page by itself).

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// `markdown` as safe HTML.
pub fn to_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_GFM;
    // For each open link or image: whether its start was kept (so is its end).
    let mut open: Vec<bool> = Vec::new();
    let events = Parser::new_ext(markdown, options).filter_map(|e| match e {
        Event::Html(s) | Event::InlineHtml(s) => Some(Event::Text(s)),
        // An image is kept as a link to it: nothing loads by itself.
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => {
            let keep = safe_url(&dest_url);
            open.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => open
            .pop()
            .unwrap_or(false)
            .then_some(Event::End(TagEnd::Link)),
        other => Some(other),
    });
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// Web and mail addresses, and paths on this site; never `javascript:`, `data:` and the like.
fn safe_url(url: &CowStr<'_>) -> bool {
    let u = url.trim().to_ascii_lowercase();
    if u.starts_with("https://") || u.starts_with("http://") || u.starts_with("mailto:") {
        return true;
    }
    // A relative address: no scheme before the first slash, query or fragment.
    let head = u.split(['/', '?', '#']).next().unwrap_or("");
    !head.contains(':') && !u.starts_with("//")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_comment_renders_as_headings_lists_and_tables() {
        let md = "**Plan: Make add() add**\n\n- [x] calc.py → add returns a + b\n\n\
                  | attempt | commit | test |\n|---|---|---|\n| 1 | `abc1234` | ✅ |\n";
        let html = to_html(md);
        assert!(
            html.contains("<strong>Plan: Make add() add</strong>"),
            "{html}"
        );
        assert!(
            html.contains("<input disabled=\"\" type=\"checkbox\" checked=\"\"/>"),
            "{html}"
        );
        assert!(
            html.contains("<table>") && html.contains("<th>attempt</th>"),
            "{html}"
        );
        assert!(html.contains("<code>abc1234</code>"), "{html}");
        assert!(!html.contains("**") && !html.contains("|---|"), "{html}");
    }

    #[test]
    fn raw_html_and_dangerous_links_from_hostile_text_stay_text() {
        let md = "Hi <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n\
                  <iframe src=\"https://evil.example\"></iframe>\n\n\
                  [click](javascript:alert(3)) [data](data:text/html,x) [ok](https://example.com/a?b=1&c=2)\n\n\
                  ![pixel](https://tracker.example/p.png) [rel](/tickets/T-1)";
        let html = to_html(md);
        for bad in ["<script", "<img", "<iframe", "javascript:", "data:text"] {
            assert!(!html.contains(bad), "{bad} in {html}");
        }
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        // The dangerous links lose their address and keep their words.
        assert!(html.contains("<p>click data <a"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.com/a?b=1&amp;c=2\">ok</a>"),
            "{html}"
        );
        // An image is a link to it, never loaded.
        assert!(
            html.contains("<a href=\"https://tracker.example/p.png\">pixel</a>"),
            "{html}"
        );
        assert!(html.contains("<a href=\"/tickets/T-1\">rel</a>"), "{html}");
    }

    #[test]
    fn urls_are_judged_by_their_scheme() {
        for ok in [
            "https://a.b",
            "HTTP://a.b",
            "mailto:x@y.z",
            "/x",
            "x/y",
            "#top",
            "a?b=c:d",
        ] {
            assert!(safe_url(&ok.into()), "{ok}");
        }
        for bad in [
            "javascript:x",
            " JavaScript:x",
            "data:x",
            "vbscript:x",
            "//evil.example",
        ] {
            assert!(!safe_url(&bad.into()), "{bad}");
        }
    }
}
