//! Colours and symbols. The default uses only the terminal's own 16 colours and modifiers, so it
//! reads on dark and light backgrounds alike and in the Linux console; `NO_COLOR` or
//! `colors = "none"` leaves only bold/reverse/underline; the Linux console gets ASCII symbols.

use crate::jobs::insight::known_issues::Severity;
use ratatui::style::{Color, Modifier, Style};

use crate::config::ColorMode;
use crate::jobs::Status;
use crate::jobs::text::sanitize::{Color as LogColor, Style as LogStyle};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub ascii: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Theme {
            color: true,
            ascii: false,
        }
    }
}

impl Theme {
    /// From the config and the environment (`NO_COLOR`, `TERM`).
    pub fn detect(mode: ColorMode) -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let term = std::env::var("TERM").unwrap_or_default();
        Theme {
            color: mode != ColorMode::None && !no_color,
            ascii: term == "linux" || term == "dumb",
        }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    pub fn status(&self, s: Status) -> Style {
        match s {
            Status::Running => self.fg(Color::Cyan),
            Status::Waiting | Status::NeedsInput => {
                self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
            }
            Status::Limited => self.fg(Color::Yellow),
            Status::Completed => self.fg(Color::Green),
            Status::Failed | Status::Died | Status::ChecksFailed => self.fg(Color::Red),
            Status::Killed => self.fg(Color::Magenta),
            Status::Queued | Status::Unknown => self.dim(),
        }
    }

    /// A job's status as the table draws it: a job that stopped for an answer but needs nobody
    /// now (answered, or retried) is not drawn as calling for attention.
    pub fn job_status(&self, job: &crate::jobs::Job) -> Style {
        if job.status == Status::NeedsInput && !job.awaits_person() {
            self.dim()
        } else {
            self.status(job.status)
        }
    }

    pub fn symbol(&self, s: Status) -> &'static str {
        match (s, self.ascii) {
            (Status::Running, false) => "●",
            (Status::Waiting, false) => "◆",
            (Status::Queued, false) => "○",
            (Status::Completed, false) => "✓",
            (Status::Failed, false) => "✗",
            (Status::Killed, false) => "⊘",
            (Status::NeedsInput, false) => "?",
            (Status::Died, false) => "†",
            (Status::Limited, false) => "◷",
            (Status::ChecksFailed, false) => "✘",
            (Status::Unknown, false) => "·",
            (Status::Running, true) => ">",
            (Status::Waiting, true) => "!",
            (Status::Queued, true) => ".",
            (Status::Completed, true) => "+",
            (Status::Failed, true) => "x",
            (Status::Killed, true) => "k",
            (Status::NeedsInput, true) => "?",
            (Status::Died, true) => "d",
            (Status::Limited, true) => "l",
            (Status::ChecksFailed, true) => "c",
            (Status::Unknown, true) => "-",
        }
    }

    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }

    pub fn title(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn accent(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }

    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn badge(&self) -> Style {
        if self.color {
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        }
    }

    /// A diff's added lines and counts.
    pub fn added(&self) -> Style {
        self.fg(Color::Green)
    }

    /// A diff's removed lines and counts.
    pub fn removed(&self) -> Style {
        self.fg(Color::Red)
    }

    /// A diff's hunk headers (`@@ -1,4 +1,6 @@`).
    pub fn hunk(&self) -> Style {
        self.fg(Color::Cyan)
    }

    pub fn focus_border(&self) -> Style {
        self.fg(Color::Blue)
    }

    pub fn bar_full(&self) -> &'static str {
        "█"
    }

    pub fn bar_empty(&self) -> &'static str {
        "░"
    }

    /// A known issue of this severity: critical stands out the most.
    pub fn severity(&self, s: Severity) -> Style {
        match s {
            Severity::Critical => self.error().add_modifier(Modifier::REVERSED),
            Severity::Error => self.error(),
            Severity::Warning => self.warn(),
        }
    }

    /// Marks a known issue: in the alert column and beside an output line that shows one.
    pub fn issue_mark(&self) -> &'static str {
        if self.ascii { "!" } else { "▌" }
    }

    /// Marks an alarm (stalled, over budget, ...).
    /// A host that cannot be used (unreachable, or its luzia incompatible).
    pub fn down_mark(&self) -> &'static str {
        if self.ascii { "X" } else { "✕" }
    }

    pub fn alarm_mark(&self) -> &'static str {
        if self.ascii { "!" } else { "⚠" }
    }

    pub fn ellipsis(&self) -> &'static str {
        if self.ascii { "..." } else { "…" }
    }

    /// A style from the agent's own SGR colours, kept as far as the theme allows.
    pub fn log_style(&self, s: &LogStyle) -> Style {
        let mut out = Style::new();
        if self.color {
            if let Some(c) = log_color(s.fg) {
                out = out.fg(c);
            }
            if let Some(c) = log_color(s.bg) {
                out = out.bg(c);
            }
        }
        let mods = [
            (s.bold, Modifier::BOLD),
            (s.dim, Modifier::DIM),
            (s.italic, Modifier::ITALIC),
            (s.underline, Modifier::UNDERLINED),
            (s.reverse, Modifier::REVERSED),
            (s.strike, Modifier::CROSSED_OUT),
        ];
        for (on, m) in mods {
            if on {
                out = out.add_modifier(m);
            }
        }
        out
    }
}

fn log_color(c: LogColor) -> Option<Color> {
    match c {
        LogColor::Default => None,
        LogColor::Indexed(n) => Some(Color::Indexed(n)),
        LogColor::Rgb(r, g, b) => Some(Color::Rgb(r, g, b)),
    }
}
