//! What Markdown hides is no command: code, quotes, HTML comments (the `scan` module).

use super::super::parse;

/// Runs each case: the lines of `body` that hold commands (of any outcome).
fn check(cases: &[(&str, &str, &[usize])]) {
    for (name, body, want) in cases {
        let found: Vec<usize> = parse(body).iter().map(|f| f.line).collect();
        assert_eq!(found, *want, "{name}: {body:?}");
    }
}

#[test]
fn fenced_code_is_ignored() {
    check(&[
        ("backticks", "```\n/hive approve\n```\n/hive status", &[4]),
        ("tildes", "~~~\n/hive approve\n~~~\n/hive status", &[4]),
        (
            "info string",
            "```rust title=x\n/hive approve\n```\n/hive status",
            &[4],
        ),
        (
            "tilde info with backticks",
            "~~~ `odd`\n/hive approve\n~~~\n/hive status",
            &[4],
        ),
        (
            "backtick info with a backtick is no fence",
            "```a`b\n/hive status",
            &[2],
        ),
        ("two backticks are no fence", "``\n/hive status", &[2]),
        (
            "a longer fence needs a longer close",
            "````\n```\n/hive approve\n````\n/hive status",
            &[5],
        ),
        (
            "the closer may be longer",
            "```\n/hive approve\n`````\n/hive status",
            &[4],
        ),
        (
            "tildes do not close backticks",
            "```\n~~~\n/hive approve\n```\n/hive status",
            &[5],
        ),
        (
            "backticks do not close tildes",
            "~~~\n```\n/hive approve\n~~~\n/hive status",
            &[5],
        ),
        (
            "a closer has nothing after it",
            "```\n``` x\n/hive approve\n```\n/hive status",
            &[5],
        ),
        (
            "a closer may have trailing spaces",
            "```\n/hive approve\n```  \t\n/hive status",
            &[4],
        ),
        (
            "unclosed runs to the end",
            "/hive status\n```\n/hive approve\n\n/hive abort",
            &[1],
        ),
        (
            "the fence line itself",
            "```/hive approve\n```\n/hive status",
            &[3],
        ),
        (
            "blank lines inside",
            "```\n\n/hive approve\n\n```\n/hive status",
            &[6],
        ),
        (
            "indented 2",
            "  ```\n  /hive approve\n  ```\n/hive status",
            &[4],
        ),
        (
            "indented 3",
            "   ~~~\n/hive approve\n   ~~~\n/hive status",
            &[4],
        ),
        (
            "a 4-space closer is content",
            "```\n    ```\n/hive approve\n```\n/hive status",
            &[5],
        ),
        (
            "interrupts a paragraph",
            "text\n```\n/hive approve\n```\n/hive status",
            &[5],
        ),
        (
            "after a quote, not lazy",
            "> q\n```\n/hive approve\n\n/hive abort\n```\n/hive status",
            &[7],
        ),
    ]);
}

#[test]
fn fences_nested_in_list_items_are_ignored() {
    check(&[
        (
            "in an item",
            "- steps:\n  ```sh\n  /hive approve\n  ```\n/hive status",
            &[5],
        ),
        (
            "after a blank in an item",
            "- a\n\n    ```\n  /hive approve\n    ```\n/hive status",
            &[6],
        ),
        (
            "opened by the marker",
            "- ```\n  /hive approve\n  ```\n/hive status",
            &[4],
        ),
        (
            "ordered item",
            "1. run\n   ~~~\n   /hive approve\n   ~~~\n/hive status",
            &[5],
        ),
        (
            "nested items",
            "- a\n  - b\n    ```\n    x\n  /hive approve\n    ```\n/hive status",
            &[5, 7],
        ),
        // A less indented line ends the item, and the fence with it; the next fence is new.
        (
            "ended with its item",
            "- a\n\n  ```\n/hive approve\n  ```\n/hive abort",
            &[4],
        ),
        (
            "item of an inner list ends",
            "1. a\n   - b\n\n     ```\n   /hive approve\n     ```\n   /hive abort",
            &[5],
        ),
        // `2.` cannot interrupt a paragraph, so no list opens and the fence is top level.
        (
            "no list under a paragraph",
            "text\n2. x\n   ```\n/hive approve\n   ```\n/hive status",
            &[6],
        ),
        (
            "empty item under a paragraph",
            "text\n-\n```\n/hive approve\n```\n/hive status",
            &[6],
        ),
    ]);
}

#[test]
fn indented_code_is_ignored() {
    check(&[
        ("first line", "    /hive approve", &[]),
        (
            "after a blank",
            "intro\n\n    /hive approve\n/hive status",
            &[4],
        ),
        ("tab", "\t/hive approve\n/hive status", &[2]),
        ("spaces and a tab", "  \t/hive approve", &[]),
        (
            "continuing a paragraph",
            "text\n    /hive approve\n/hive status",
            &[3],
        ),
        (
            "a fence in indented code opens nothing",
            "x\n\n    ```\n/hive status",
            &[4],
        ),
        (
            "a comment in indented code opens nothing",
            "x\n\n    <!--\n/hive status",
            &[4],
        ),
        ("after a heading", "# Title\n    ```\n/hive status", &[3]),
        (
            "deep in an item",
            "- a\n\n        /hive approve\n/hive status",
            &[4],
        ),
    ]);
}

#[test]
fn block_quotes_are_ignored() {
    check(&[
        ("quote", "> /hive approve\n\n/hive status", &[3]),
        ("no space", ">/hive approve", &[]),
        (
            "nested",
            "> > /hive approve\n>> /hive abort\n\n/hive status",
            &[4],
        ),
        ("indented", "   > /hive approve", &[]),
        (
            "second quoted line",
            "> a reply\n> /hive approve\n\n/hive status",
            &[4],
        ),
        // A plain line right under a quoted paragraph continues the quote, as GitHub shows it.
        (
            "lazy continuation",
            "> a reply\n/hive approve\n\n/hive status",
            &[4],
        ),
        (
            "lazy over several lines",
            "> a\nb\n/hive approve\n\n/hive status",
            &[5],
        ),
        ("lazy ends at a heading", "> a\n# b\n/hive status", &[3]),
        ("in a list item", "- > /hive approve\n\n/hive status", &[3]),
        (
            "lazy in a list item",
            "- item\n  > q\n  /hive approve\n\n  /hive status",
            &[5],
        ),
        (
            "a fence in a quote stays there",
            "> ```\n\n/hive status",
            &[3],
        ),
        (
            "a comment in a quote stays there",
            "> <!--\n\n/hive status\n-->",
            &[3],
        ),
    ]);
}

#[test]
fn html_comments_are_ignored() {
    check(&[
        ("one line", "<!-- /hive approve -->\n/hive status", &[2]),
        (
            "several lines",
            "<!--\n/hive approve\n-->\n/hive status",
            &[4],
        ),
        (
            "across blank lines",
            "<!--\n\n/hive approve\n\n-->\n/hive status",
            &[6],
        ),
        (
            "indented",
            "  <!--\n/hive approve\n  -->\n/hive status",
            &[4],
        ),
        (
            "unclosed runs to the end",
            "<!-- draft\n/hive approve\n\n/hive abort",
            &[],
        ),
        (
            "text after the close is still the block",
            "<!-- x --> /hive approve\n/hive status",
            &[2],
        ),
        (
            "empty comments",
            "<!-->\n/hive status\n<!--->\n/hive help",
            &[2, 4],
        ),
        (
            "in a paragraph",
            "text <!-- hidden\n/hive approve\n-->\n/hive status",
            &[4],
        ),
        (
            "closed on the command line",
            "text <!--\n/hive approve -->\n/hive status",
            &[3],
        ),
        (
            "closed before the command",
            "text <!--\n-->/hive approve\n/hive status",
            &[3],
        ),
        (
            "two on a line",
            "a <!-- b --> c <!-- d\n/hive approve\n-->\n/hive status",
            &[4],
        ),
        ("closed inline", "text <!-- -->\n/hive status", &[2]),
        // An inline comment cannot outlive its paragraph.
        (
            "inline, unclosed",
            "text <!-- never closed\n/hive approve\n\n/hive status",
            &[4],
        ),
        (
            "a fence ends the paragraph",
            "text <!--\n```\n-->\n/hive approve\n```\n/hive status",
            &[6],
        ),
        (
            "in a list item",
            "- <!--\n/hive approve\n-->\n/hive status",
            &[4],
        ),
        (
            "inside a fence it is code",
            "```\n<!--\n```\n/hive status",
            &[4],
        ),
        (
            "a fence inside it is comment",
            "<!--\n```\n-->\n/hive status",
            &[4],
        ),
        (
            "a quote inside it is comment",
            "<!--\n>\n-->\n/hive status",
            &[4],
        ),
        ("in the hive word", "/hi<!-- -->ve approve", &[]),
        ("before the hive word", "<!---->/hive approve", &[]),
    ]);
    // A comment on a command line is not part of its arguments.
    let found = parse("/hive <!-- x --> retry <!-- y\nz --> builder");
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].parsed,
        super::Parsed::Ok(super::Command::Retry(None)),
        "the comment hides the rest of the line"
    );
}

#[test]
fn other_markdown_leaves_commands_alone() {
    check(&[
        ("after a heading", "# Title\n/hive status", &[2]),
        ("after a rule", "***\n/hive status", &[2]),
        ("after a setext heading", "Title\n===\n/hive status", &[3]),
        ("in a list item's text", "- a\n  /hive approve", &[2]),
        ("under a list item", "- a\n/hive approve", &[2]),
        ("after a list", "- a\n\n/hive approve", &[3]),
        ("a paragraph line", "I think\n/hive approve\nis right", &[2]),
        (
            "crlf fences",
            "```\r\n/hive approve\r\n```\r\n/hive status\r\n",
            &[4],
        ),
        ("crlf quote", "> q\r\n\r\n/hive status", &[3]),
        ("byte order mark", "\u{FEFF}/hive approve", &[]),
        ("html block", "<div>\n/hive status\n</div>", &[2]),
    ]);
}
