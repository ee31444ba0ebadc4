//! Chat in Minecraft's terms: the lines of a chat observation read as messages
//! of the mission's players, and words to say made into what Minecraft accepts
//! and sent as Malmo's `chat` command.
//!
//! Minecraft shows a player's message to everyone as `<NAME> text`; the other
//! lines of `ObservationFromChat` are the server's (command feedback such as
//! `Given [Diamond Pickaxe] * 1 to human`, game-mode notices) and are not
//! messages. A message said is cleaned as Minecraft's server would otherwise
//! treat it: the server collapses whitespace, runs a text starting with `/` as
//! a command, and disconnects a player whose message holds a control character,
//! `§` or DEL; the client cuts it to 256 characters.

use malmo_bridge::command::Command;
use malmo_bridge::decoded::DecodedObservation;

use super::commands::Instruction;

/// Minecraft's longest chat message, in Java characters (UTF-16 code units):
/// the client cuts longer ones.
pub const MAX_CHAT_LEN: usize = 256;

/// A message a player said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatLine {
    /// Who said it (player index).
    pub speaker: usize,
    /// The words.
    pub text: String,
}

/// The players' messages among an observation's chat lines, in order:
/// `<NAME> text` where `NAME` is `names[p]` (the players' Minecraft names, so
/// the spectator and unknown names are not players). Other lines are ignored.
pub fn read(observation: &DecodedObservation, names: &[String]) -> Vec<ChatLine> {
    observation
        .chat
        .iter()
        .filter_map(|line| message(line, names))
        .collect()
}

fn message(line: &str, names: &[String]) -> Option<ChatLine> {
    let rest = line.strip_prefix('<')?;
    let (name, text) = rest.split_once("> ")?;
    let speaker = names.iter().position(|n| n == name)?;
    Some(ChatLine {
        speaker,
        text: text.to_owned(),
    })
}

/// `text` as Minecraft will carry it: every run of whitespace or control
/// characters one space, `§` and DEL dropped, no `/` at the start (it would be
/// a server command, run with the player's permissions), at most
/// [`MAX_CHAT_LEN`] characters. `None` if nothing is left.
pub fn clean(text: &str) -> Option<String> {
    let allowed = text
        .chars()
        .filter(|&c| c != '§' && c != '\u{7f}')
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>();
    let words = allowed.split_whitespace().collect::<Vec<_>>().join(" ");
    let spoken = words.trim_start_matches(['/', ' ']);
    let mut out = String::with_capacity(spoken.len().min(4 * MAX_CHAT_LEN));
    let mut units = 0;
    for c in spoken.chars() {
        units += c.len_utf16();
        if units > MAX_CHAT_LEN {
            break;
        }
        out.push(c);
    }
    let out = out.trim_end();
    (!out.is_empty()).then(|| out.to_owned())
}

/// The instruction that makes agent `agent` say `text` (cleaned with
/// [`clean`]), with the words as Minecraft will show them; `None` if nothing
/// is left to say.
pub fn say(agent: usize, text: &str) -> Option<(Instruction, String)> {
    let words = clean(text)?;
    let instruction = Instruction::Send {
        agent,
        command: Command::Chat(words.clone()),
    };
    Some((instruction, words))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["human".into(), "assistant".into()]
    }

    #[test]
    fn only_players_lines_are_messages() {
        let observation = DecodedObservation {
            chat: vec![
                "Given [Diamond Pickaxe] * 1 to human".into(),
                "<human> no, not there".into(),
                "<assistant> Sorry, no more glass.".into(),
                "<spectator> hello".into(),
                "<human>no space".into(),
                "<humans> not a player".into(),
                "<human> <assistant> quoted".into(),
                "Your game mode has been updated to Survival Mode".into(),
            ],
            ..Default::default()
        };
        let lines = read(&observation, &names());
        assert_eq!(
            lines,
            [
                ChatLine {
                    speaker: 0,
                    text: "no, not there".into()
                },
                ChatLine {
                    speaker: 1,
                    text: "Sorry, no more glass.".into()
                },
                ChatLine {
                    speaker: 0,
                    text: "<assistant> quoted".into()
                },
            ]
        );
    }

    #[test]
    fn words_are_cleaned_as_minecraft_would_carry_them() {
        assert_eq!(
            clean("  no,\n not\tthere  ").as_deref(),
            Some("no, not there")
        );
        assert_eq!(clean("§cred\u{7f} text").as_deref(), Some("cred text"));
        assert_eq!(
            clean("/give human tnt 64").as_deref(),
            Some("give human tnt 64")
        );
        assert_eq!(clean(" // /"), None);
        assert_eq!(clean("\n\t "), None);
        let long = "ab ".repeat(200);
        let cut = clean(&long).unwrap();
        assert!(
            cut.len() <= MAX_CHAT_LEN && cut.len() >= MAX_CHAT_LEN - 2,
            "{cut}"
        );
        // Characters beyond the basic plane count twice, as in Java.
        let wide = "😀".repeat(200);
        assert_eq!(clean(&wide).unwrap().chars().count(), MAX_CHAT_LEN / 2);
        let (instruction, said) = say(1, "Sorry,\nno more glass.").unwrap();
        assert_eq!(said, "Sorry, no more glass.");
        assert_eq!(
            instruction,
            Instruction::Send {
                agent: 1,
                command: Command::Chat("Sorry, no more glass.".into())
            }
        );
        assert_eq!(say(0, "   "), None);
    }
}
