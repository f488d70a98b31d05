//! The messages the cockpit said lately (notices, refusals, errors), kept whole: the footer
//! shows the last one, cut to its line where it is longer, and the events view shows them in
//! full.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

/// Messages kept.
const KEPT: usize = 20;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Said(VecDeque<(DateTime<Utc>, String)>);

impl Said {
    /// Keeps `message`, said at `at`, unless it is the last one kept (a message stays set over
    /// several events).
    pub fn note(&mut self, at: DateTime<Utc>, message: &str) {
        if self.0.back().is_some_and(|(_, m)| m == message) {
            return;
        }
        if self.0.len() == KEPT {
            self.0.pop_front();
        }
        self.0.push_back((at, message.to_string()));
    }

    /// The messages kept, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &(DateTime<Utc>, String)> {
        self.0.iter().rev()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::event::Event;
    use crate::tui::testing::*;

    #[test]
    fn every_message_said_is_kept_whole_newest_first() {
        let mut app = app(80, 24);
        let long = format!("the first notice, {}", "long ".repeat(40));
        app.update(Event::Notice(long.clone()), now());
        // Still shown, and a tick later: kept once.
        app.update(Event::Tick, now());
        app.update(Event::Notice("the second".into()), now());
        let said: Vec<&str> = app.said.newest_first().map(|(_, m)| m.as_str()).collect();
        assert_eq!(said, ["the second", long.as_str()]);
        let mut said = Said::default();
        for i in 0..KEPT + 5 {
            said.note(now(), &format!("m{i}"));
        }
        assert_eq!(said.newest_first().count(), KEPT);
        assert_eq!(
            said.newest_first().last().unwrap().1,
            "m5",
            "the oldest go first"
        );
    }
}
