//! Who the bot's commits are by ([`Author`]), and the message it gives them: signed off
//! (`Signed-off-by:`) where the repository asks for a Developer Certificate of Origin.

/// Who commits: the app's bot account.
#[derive(Debug, Clone)]
pub struct Author {
    pub name: String,
    pub email: String,
    /// Every commit made as this author is signed off (`Signed-off-by:` naming it).
    pub signoff: bool,
}

impl Default for Author {
    fn default() -> Self {
        Self {
            name: "vibeloop[bot]".into(),
            email: "vibeloop[bot]@users.noreply.github.com".into(),
            signoff: false,
        }
    }
}

impl Author {
    /// `message` as this author commits it: with its `Signed-off-by:` trailer when it signs
    /// off (once, in the message's last block of trailers, or in a block of its own).
    pub fn message(&self, message: &str) -> String {
        let message = message.trim_end();
        if !self.signoff {
            return message.to_owned();
        }
        let line = format!("Signed-off-by: {} <{}>", self.name, self.email);
        if message.lines().any(|l| l.trim_end() == line) {
            return message.to_owned();
        }
        let last = message.rsplit("\n\n").next().unwrap_or_default();
        let trailers = message.contains("\n\n")
            && last.lines().all(|l| {
                l.split_once(": ").is_some_and(|(token, _)| {
                    !token.is_empty() && token.chars().all(|c| c.is_alphanumeric() || c == '-')
                })
            });
        let gap = if trailers { "\n" } else { "\n\n" };
        format!("{message}{gap}{line}")
    }
}

#[cfg(test)]
mod tests {
    use super::Author;

    #[test]
    fn a_signed_off_message_ends_with_the_bots_trailer_once() {
        let plain = Author::default();
        assert_eq!(plain.message("Fix the parser\n"), "Fix the parser");
        let bot = Author {
            signoff: true,
            ..Author::default()
        };
        let line = "Signed-off-by: vibeloop[bot] <vibeloop[bot]@users.noreply.github.com>";
        assert_eq!(bot.message("Fix it"), format!("Fix it\n\n{line}"));
        assert_eq!(
            bot.message("T-1: fix\n\nCloses #4."),
            format!("T-1: fix\n\nCloses #4.\n\n{line}")
        );
        // Joins a block of trailers (the co-authors people are credited as).
        let credited = "T-1: fix\n\nCloses #4.\n\nCo-authored-by: Ada <ada@example.com>";
        assert_eq!(bot.message(credited), format!("{credited}\n{line}"));
        // Once: a message already signed off by the bot is left as it is.
        let signed = bot.message(credited);
        assert_eq!(bot.message(&signed), signed);
        // A subject alone that looks like a trailer is no block of trailers.
        assert_eq!(bot.message("fix: it"), format!("fix: it\n\n{line}"));
    }
}
