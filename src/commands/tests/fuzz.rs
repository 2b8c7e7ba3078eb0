//! Random and hostile input: the parser never panics, keeps its promises and stays fast.

use super::super::*;

#[test]
fn the_parser_never_panics_and_keeps_its_promises() {
    const PIECES: &[&str] = &[
        "/hive ",
        "/hive",
        "/HIVE\t",
        "status",
        "feedback ",
        "retry ",
        "builder",
        "reset ",
        "v1",
        "../",
        "-",
        "approve",
        "aprove",
        "```",
        "~~~",
        "````",
        "<!--",
        "-->",
        "<!-->",
        ">",
        "> > ",
        "\n",
        "\n",
        "\n",
        "\r\n",
        "\r",
        " ",
        "   ",
        "    ",
        "\t",
        "- ",
        "1. ",
        "2) ",
        "# ",
        "***",
        "===",
        "`",
        "é",
        "😀",
        "👩\u{200D}💻",
        "\u{200B}",
        "\u{202E}",
        "\u{FEFF}",
        "\u{a0}",
        "\0",
        "ſ",
        "\u{212A}",
        "x",
        "word ",
        "..",
        "/",
        "<",
        "!",
        "*",
    ];
    // Seeded: the same inputs every run.
    let mut rng = fastrand::Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let mut previous = String::new();
    for round in 0..4000 {
        let mut body = String::new();
        for _ in 0..rng.usize(..60) {
            if rng.usize(..8) == 0 {
                // Any scalar value at all, now and then.
                let c = char::from_u32(rng.u32(..0x11_0000)).unwrap_or('\u{FFFD}');
                body.push(c);
            } else {
                body.push_str(PIECES[rng.usize(..PIECES.len())]);
            }
        }
        if round % 7 == 0 {
            let bytes: Vec<u8> = (0..rng.usize(..200)).map(|_| rng.u8(..)).collect();
            body = String::from_utf8_lossy(&bytes).into_owned();
        }
        let found = parse(&body);
        let line_count = body.replace("\r\n", "\n").split(['\n', '\r']).count();
        let mut last = 0;
        for f in &found {
            assert!(f.line > last && f.line <= line_count, "{body:?}: {found:?}");
            last = f.line;
            assert!(f.text.chars().count() <= MAX_TEXT);
            match &f.parsed {
                Parsed::Ok(Command::Feedback(text)) => {
                    assert!(!text.is_empty() && text.chars().count() <= MAX_FEEDBACK);
                }
                Parsed::Ok(Command::Reset(tag)) => assert!(args::check_ref_name(tag).is_ok()),
                Parsed::Ok(Command::Base(b)) => assert!(args::check_ref_name(b).is_ok()),
                Parsed::Unknown { word, suggestion } => {
                    assert!(word.chars().count() <= 32);
                    assert!(
                        !word
                            .chars()
                            .any(|c| c.is_control() || args::is_invisible(c))
                    );
                    assert!(suggestion.is_none_or(|s| args::SPECS.iter().any(|c| c.name == s)));
                }
                _ => {}
            }
        }
        assert_eq!(parse(&body), found, "not deterministic: {body:?}");
        assert_eq!(new_commands(&body, &body), vec![], "{body:?}");
        assert_eq!(new_commands("", &body), found);
        let _ = new_commands(&previous, &body);
        for word in body.split_whitespace().take(5) {
            let _ = suggest(word);
        }
        previous = body;
    }
}

#[test]
fn hostile_shapes_stay_linear() {
    let started = std::time::Instant::now();
    let bodies = [
        format!("{}x", "- ".repeat(30_000)),
        format!("{}x", "1. ".repeat(20_000)),
        "<!-- ".repeat(12_000),
        "<!-- -->".repeat(8_000),
        format!("a <!--\n{}", "x\n".repeat(30_000)),
        "```\n".repeat(15_000),
        "> ".repeat(30_000),
        "/hive feedback x\n".repeat(3_500),
        format!("/hive feedback x\n{}", "y\n".repeat(30_000)),
        (0..300)
            .map(|i| format!("{}- x\n", " ".repeat(2 * i)))
            .collect(),
    ];
    for body in &bodies {
        let _ = parse(body);
        let _ = new_commands(body, body);
    }
    let spent = started.elapsed();
    assert!(spent < std::time::Duration::from_secs(20), "{spent:?}");
}
