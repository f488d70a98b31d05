//! A button's callback data, written into the keyboards and read back from presses: the post's
//! serial and what the button does, `SERIAL:ACTION`. The serial names the post (and so the one
//! instance it may settle); the state says whether that post is still open and what it offered,
//! so a press is never trusted for more than its serial and its action. Telegram keeps at most
//! 64 bytes of it: a serial is at most 20 digits, an action at most 4 characters.

/// What a pressed button does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A yes/no question's answers.
    Yes,
    No,
    /// A choice's option, by its index.
    Option(usize),
    /// A gate approved for this request.
    Approve,
    /// A gate approved for the rest of the agent's session (where the gate offers it).
    ApproveSession,
    /// A gate denied: the reason is asked for.
    Deny,
}

impl Action {
    /// The button's data for the post `serial`.
    pub fn data(self, serial: u64) -> String {
        match self {
            Action::Yes => format!("{serial}:y"),
            Action::No => format!("{serial}:n"),
            Action::Option(i) => format!("{serial}:o{i}"),
            Action::Approve => format!("{serial}:a"),
            Action::ApproveSession => format!("{serial}:s"),
            Action::Deny => format!("{serial}:d"),
        }
    }

    fn read(word: &str) -> Option<Action> {
        Some(match word {
            "y" => Action::Yes,
            "n" => Action::No,
            "a" => Action::Approve,
            "s" => Action::ApproveSession,
            "d" => Action::Deny,
            _ => Action::Option(digits(word.strip_prefix('o')?)?),
        })
    }
}

/// A number written as `data` writes it: plain decimal digits, no sign, no space, no leading
/// zero (one data, one button).
fn digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// A press's data read: the post's serial and the action; `None` for data no button of this
/// bridge carries (another bot's, a forged one).
pub fn read(data: &str) -> Option<(u64, Action)> {
    let (serial, action) = data.split_once(':')?;
    Some((digits(serial)?, Action::read(action)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Telegram's limit on a button's data.
    const MAX_DATA: usize = 64;

    fn action() -> impl Strategy<Value = Action> {
        prop_oneof![
            Just(Action::Yes),
            Just(Action::No),
            (0..super::super::format::MAX_BUTTONS).prop_map(Action::Option),
            Just(Action::Approve),
            Just(Action::ApproveSession),
            Just(Action::Deny),
        ]
    }

    #[test]
    fn the_buttons_data_reads_back_and_anything_else_is_nothing() {
        assert_eq!(read("7:o1"), Some((7, Action::Option(1))));
        assert_eq!(read("7:s"), Some((7, Action::ApproveSession)));
        assert_eq!(Action::ApproveSession.data(12), "12:s");
        for bad in [
            "",
            ":",
            "x:y",
            "7:",
            "7:x",
            "7:o",
            "7:o-1",
            "7:o+1",
            "+7:a",
            "7:a ",
            " 7:a",
            "7:S",
            "7:o1:2",
            "7:session",
            "07:a",
            "7:o01",
            "18446744073709551616:a",
        ] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
        assert_eq!(
            Action::Approve.data(u64::MAX).len(),
            22,
            "the longest is far within Telegram's 64 bytes"
        );
    }

    proptest! {
        #[test]
        fn every_button_s_data_fits_and_reads_back(serial in any::<u64>(), a in action()) {
            let data = a.data(serial);
            prop_assert!(data.len() <= MAX_DATA, "{}", data);
            prop_assert_eq!(read(&data), Some((serial, a)));
        }

        #[test]
        fn any_data_is_read_without_panicking_and_only_as_a_button_writes_it(
            bytes in proptest::collection::vec(any::<u8>(), 0..80)
        ) {
            let data = String::from_utf8_lossy(&bytes);
            if let Some((serial, a)) = read(&data) {
                prop_assert_eq!(a.data(serial), data.into_owned());
            }
        }

        #[test]
        fn data_near_a_button_s_is_read_only_when_it_is_one(
            serial in any::<u64>(),
            a in action(),
            junk in "[ -~]{0,3}",
            at_end in any::<bool>(),
        ) {
            let data = a.data(serial);
            let near = if at_end { format!("{data}{junk}") } else { format!("{junk}{data}") };
            if let Some((s, b)) = read(&near) {
                prop_assert_eq!(b.data(s), near);
            }
        }
    }
}
