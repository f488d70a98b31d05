//! The terminal's title: what waits for a person, as a tab or a tmux window says it where the
//! cockpit is out of sight (`luzia · 2 waiting`); else how many jobs run; with a project
//! filter, its name first.

use super::App;
use crate::jobs::Status;
use crate::jobs::text::sanitize::plain_text;

impl App {
    /// `luzia · 2 waiting`, `luzia · musica · 3 running`, `luzia`: the jobs counted are those
    /// the project filter admits.
    pub fn title(&self) -> String {
        let count = |statuses: &[Status]| -> usize {
            statuses
                .iter()
                .map(|s| self.table.counts.get(s).copied().unwrap_or(0))
                .sum()
        };
        let mut title = "luzia".to_string();
        if !self.table.projects.is_empty() {
            // Text from the command line or a job's files: one plain line, no escape.
            title.push_str(" · ");
            title.push_str(&plain_text(&self.table.projects.join(",")));
        }
        let waiting = count(&[Status::Waiting, Status::NeedsInput]);
        let running = count(&[Status::Running]);
        if waiting > 0 {
            title.push_str(&format!(" · {waiting} waiting"));
        } else if running > 0 {
            title.push_str(&format!(" · {running} running"));
        }
        title
    }
}

#[cfg(test)]
mod tests {
    use crate::jobs::Status;
    use crate::tui::event::Event;
    use crate::tui::testing::*;

    #[test]
    fn the_title_says_what_waits_else_what_runs() {
        let mut app = app(80, 24);
        assert_eq!(app.title(), "luzia · 2 waiting");
        // Nothing waits: what runs.
        let mut read = Vec::new();
        for job in app.jobs.values() {
            if matches!(job.status, Status::Waiting | Status::NeedsInput) {
                let mut done = (**job).clone();
                done.status = Status::Completed;
                done.question = None;
                done.gate = None;
                read.push((done.id.clone(), Some(done)));
            }
        }
        app.update(Event::JobsRead(read), now());
        assert_eq!(app.title(), "luzia · 2 running");
        // With a project filter, the project's jobs only, and its name.
        let (mut app, _) = app_with(
            crate::tui::app::Options {
                projects: vec!["overbits".into()],
                ..options(false)
            },
            80,
            24,
        );
        assert_eq!(app.title(), "luzia · overbits · 1 waiting");
        app.table.counts.clear();
        assert_eq!(app.title(), "luzia · overbits");
        let empty = crate::tui::app::App::new(options(true), now());
        assert_eq!(empty.title(), "luzia");
        // A project's name reaches the terminal as plain text, never as an escape sequence.
        let (hostile, _) = app_with(
            crate::tui::app::Options {
                projects: vec!["a\x1b]0;pwned\x07b".into()],
                ..options(false)
            },
            80,
            24,
        );
        assert!(
            !hostile.title().contains(['\x1b', '\x07']),
            "{:?}",
            hostile.title()
        );
    }
}
