//! Things drawn on top of the main screen: help, the project picker, the input bar and the
//! kill confirmation. The keys they name are those of the key map in force.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph};

use crate::jobs::text::sanitize::plain_text;
use crate::jobs::text::width::width;
use crate::jobs::{JobId, Status};
use crate::tui::action::{ConfirmAction, HelpAction, InputBarAction as A, KeyMap};
use crate::tui::app::input_bar::Draft;
use crate::tui::app::picker::{Picker, Purpose};
use crate::tui::app::{App, Confirm};
use crate::tui::effect::ReviewOp;
use crate::tui::theme::Theme;
use crate::tui::ui::table::cut;

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    h
}

pub fn help(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let km = &app.opts.keymap;
    let entries = km.help_lines();
    let keys_lines = entries.len();
    let keys_w = entries.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
    let text_w = entries.iter().map(|(_, t)| width(t)).max().unwrap_or(0);
    // As wide as its widest line, where the screen allows; a line cut says so.
    let popup_w = (keys_w + 2 + text_w + 2).max(70).min(area.width as usize);
    let room_w = popup_w.saturating_sub(keys_w + 4);
    let mut lines: Vec<Line> = entries
        .into_iter()
        .map(|(keys, what)| {
            let pad = " ".repeat(keys_w - width(&keys));
            Line::from(vec![
                Span::styled(format!("{pad}{keys}  "), theme.accent()),
                Span::raw(super::table::cut(what, room_w, theme)),
            ])
        })
        .collect();
    lines.extend(legend(theme));
    lines.push(Line::from(Span::styled(
        "mouse: click selects, wheel scrolls · keys: [keys] in the config",
        theme.dim(),
    )));
    if app.opts.read_only {
        lines.push(Line::from(Span::styled(
            "read-only: this cockpit writes nothing, anywhere",
            theme.warn(),
        )));
    }
    // Taller than the screen: a window of it, scrolled with the keys that move.
    let room = area.height.saturating_sub(2) as usize;
    debug_assert_eq!(
        lines.len() > room,
        crate::tui::layout::help_scrolls(keys_lines, app.opts.read_only, area.height),
        "HELP_EXTRA counts the lines below the keys"
    );
    let title = if lines.len() > room {
        let top = app.help_top.min(lines.len() - room);
        lines = lines.into_iter().skip(top).take(room).collect();
        format!(
            " help {}/{} ({} scroll, {} closes) ",
            top + 1,
            top + room,
            km.keys_for(HelpAction::Down),
            km.first_key(HelpAction::Close)
        )
    } else {
        format!(" help ({} closes) ", km.first_key(HelpAction::Close))
    };
    let height = lines.len() as u16 + 2;
    let rect = centered(area, popup_w as u16, height);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(title, theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}

/// What the status symbols of a narrow table mean: three lines (`layout::HELP_EXTRA` counts
/// them), each under 66 columns, so that they fit the narrowest help.
fn legend<'a>(theme: &Theme) -> Vec<Line<'a>> {
    Status::ALL
        .chunks(5)
        .map(|statuses| {
            let spans: Vec<Span> = statuses
                .iter()
                .map(|&s| {
                    let text = format!("{} {}  ", theme.symbol(s), s.as_str());
                    Span::styled(text, theme.status(s))
                })
                .collect();
            Line::from(spans)
        })
        .collect()
}

pub fn picker(picker: &Picker, theme: &Theme, f: &mut Frame, area: Rect) {
    // Project names come from the jobs' files (a host's from its config): shown as any such
    // text. A host is shown with its projects.
    let names: Vec<String> = picker.items.iter().map(|i| plain_text(i)).collect();
    let name_width = names.iter().map(|n| width(n)).max().unwrap_or(0);
    let items: Vec<String> = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| match picker.notes.get(i) {
            Some(note) => {
                let pad = " ".repeat(name_width - width(&name));
                let note = cut(&plain_text(note), 40, theme);
                format!("{name}{pad}  {note}")
            }
            None => name,
        })
        .collect();
    let title = match picker.purpose {
        Purpose::Filter => " project ",
        Purpose::DispatchHost => " new task on host ",
    };
    let widest = items.iter().map(|i| width(i)).max().unwrap_or(10);
    let rect = centered(
        area,
        widest.clamp(24, 60) as u16 + 4,
        (items.len() as u16 + 2)
            .min(area.height.saturating_sub(2))
            .max(3),
    );
    f.render_widget(Clear, rect);
    let list = List::new(items.into_iter().map(ListItem::new))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.focus_border())
                .title(Span::styled(title, theme.title())),
        )
        .highlight_style(theme.selected());
    let mut state = ListState::default().with_selected(Some(picker.selected));
    f.render_stateful_widget(list, rect, &mut state);
}

/// The input bar, over the bottom of the screen: the project, the task being typed, an error.
pub fn input_bar(draft: &Draft, km: &KeyMap, theme: &Theme, f: &mut Frame, area: Rect) {
    let height = 8.min(area.height);
    let rect = Rect {
        x: area.x,
        y: area.bottom().saturating_sub(height),
        width: area.width,
        height,
    };
    f.render_widget(Clear, rect);
    let (title, project) = match &draft.reply_to {
        Some(job) => (" reply to ", job.to_string()),
        None => (
            " new task for ",
            match &draft.host {
                // Where the task goes matters as much as the project.
                Some(host) => format!("{} on {host}", draft.project_name().unwrap_or("?")),
                None => draft.project_name().unwrap_or("?").to_owned(),
            },
        ),
    };
    let title_spans = bar_title(draft, km, theme, (title, project), area.width);
    let verb = if draft.reply_to.is_some() {
        "sends"
    } else {
        "dispatches"
    };
    let hint = if draft.sending {
        " starting… ".to_string()
    } else {
        format!(
            " {} {verb} · {} new line · {} hides (the text stays) ",
            km.first_key(A::Dispatch),
            km.first_key(A::NewLine),
            km.first_key(A::Hide)
        )
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.accent())
        .title(Line::from(title_spans))
        .title_bottom(Line::from(Span::styled(hint, theme.dim())));
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let error_height = u16::from(draft.error.is_some());
    let [text, error] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(error_height)]).areas(inner);
    f.render_widget(draft.task.editor(), text);
    if let Some(e) = &draft.error {
        f.render_widget(
            Paragraph::new(Span::styled(e.clone(), theme.error())),
            error,
        );
    }
}

/// `new task for PROJECT · agent NAME (the project's) (tab: another project · ...)`: where the
/// task goes, the agent it runs (the project's own unless another was picked) and the keys that
/// change them, in fewer words where the line is narrow.
fn bar_title<'a>(
    draft: &Draft,
    km: &KeyMap,
    theme: &Theme,
    (title, project): (&'a str, String),
    width: u16,
) -> Vec<Span<'a>> {
    let agent = draft.agent_shown().filter(|_| draft.reply_to.is_none());
    let say = |long: bool| {
        let mut keys = Vec::new();
        let (p, a) = if long {
            ("another project", "another agent")
        } else {
            ("project", "agent")
        };
        if draft.projects.len() > 1 {
            keys.push(format!("{}: {p}", km.first_key(A::NextProject)));
        }
        if agent.is_some() {
            keys.push(format!("{}: {a}", km.first_key(A::NextAgent)));
        }
        let own = match agent {
            Some((_, false)) if long => " (the project's)",
            Some((_, false)) => " (its own)",
            _ => "",
        };
        let others = if draft.reply_to.is_some() {
            " (its Claude Code session goes on)".to_string()
        } else if keys.is_empty() {
            String::new()
        } else {
            format!(" ({})", keys.join(" · "))
        };
        (own, others)
    };
    let name = agent.map_or(String::new(), |(n, _)| n.to_owned());
    let fixed = title.len() + project.chars().count() + name.len() + " · agent ".len() + 2;
    let (own, others) = match say(true) {
        (own, others) if fixed + own.len() + others.chars().count() <= usize::from(width) => {
            (own, others)
        }
        _ => say(false),
    };
    let mut spans = vec![
        Span::styled(title, theme.title()),
        Span::styled(project, theme.accent()),
    ];
    if agent.is_some() {
        spans.push(Span::styled(" · agent ", theme.title()));
        spans.push(Span::styled(name, theme.accent()));
        spans.push(Span::styled(own, theme.dim()));
    }
    spans.push(Span::styled(others, theme.dim()));
    spans
}

/// The job's task, project and elapsed time say which job it is better than its id.
pub fn confirm(app: &App, what: &Confirm, theme: &Theme, f: &mut Frame, area: Rect) {
    let (id, op, preview) = match what {
        Confirm::Kill(id) => return confirm_kill(app, id, theme, f, area),
        Confirm::Review { job, op, preview } => (job, *op, preview),
    };
    let km = &app.opts.keymap;
    let room = (area.width as usize).saturating_sub(4).min(96);
    let (verb, border) = match op {
        ReviewOp::Merge => ("Merge", theme.accent()),
        ReviewOp::Discard => ("Discard", theme.error()),
    };
    let mut lines = vec![Line::from(vec![
        Span::raw(format!("{verb} the change of job ")),
        Span::styled(id.to_string(), theme.title()),
        Span::raw("?"),
    ])];
    if let Some(job) = app.jobs.get(id) {
        lines.push(Line::from(Span::styled(
            super::table::cut(&plain_text(job.task()), room, theme),
            theme.accent(),
        )));
        let mut about = format!("project {}", plain_text(job.project()));
        if let Some(c) = job.meta.as_ref().and_then(|m| m.review.as_ref()?.changes) {
            about.push_str(&format!(" · {}", c.summary()));
        }
        lines.push(Line::from(super::table::cut(&about, room, theme)));
    }
    lines.push(Line::default());
    let fit = (area.height as usize)
        .saturating_sub(lines.len() + 5)
        .max(1);
    lines.extend(preview_lines(preview, fit, room, theme));
    lines.extend([
        Line::default(),
        Line::from(Span::styled(
            format!(
                "{} {} · any other key: no",
                km.first_key(ConfirmAction::Yes),
                op.verb()
            ),
            theme.accent(),
        )),
    ]);
    let widest = lines.iter().map(Line::width).max().unwrap_or(0);
    // At least 60 columns wide where the screen has them (the narrowest is 60).
    let w = u16::try_from(widest.max(60).min(room) + 4).unwrap_or(u16::MAX);
    let rect = centered(area, w, lines.len() as u16 + 2);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(format!(" {} ", op.verb()), theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}

/// What git will be made to do, as the domain said it (paths from the repository: shown as any
/// text from disk), in at most `fit` lines: a longer preview keeps its first and says so.
fn preview_lines<'a>(preview: &str, fit: usize, room: usize, theme: &Theme) -> Vec<Line<'a>> {
    let said: Vec<&str> = preview.lines().collect();
    let mut lines: Vec<Line> = said
        .iter()
        .take(fit)
        .map(|l| Line::from(super::table::cut(&plain_text(l), room, theme)))
        .collect();
    if said.len() > fit {
        let more = format!("… {} more lines", said.len() - fit);
        lines.push(Line::from(Span::styled(more, theme.dim())));
    }
    lines
}

fn confirm_kill(app: &App, id: &JobId, theme: &Theme, f: &mut Frame, area: Rect) {
    let km = &app.opts.keymap;
    let room = 60;
    let mut lines = vec![Line::from(vec![
        Span::raw("Kill job "),
        Span::styled(id.to_string(), theme.title()),
        Span::raw("?"),
    ])];
    if let Some(job) = app.jobs.get(id) {
        let task = plain_text(job.task());
        let elapsed = job
            .elapsed_secs(app.now)
            .map_or("-".into(), crate::jobs::model::time::format_duration);
        lines.push(Line::from(Span::styled(
            super::table::cut(&task, room, theme),
            theme.accent(),
        )));
        let about = format!(
            "project {} · {} for {elapsed}",
            plain_text(job.project()),
            job.status.as_str()
        );
        lines.push(Line::from(super::table::cut(&about, room, theme)));
    }
    lines.extend([
        Line::from(Span::styled(
            "SIGTERM now, SIGKILL after 10 s; the exit line is recorded",
            theme.dim(),
        )),
        Line::default(),
        Line::from(Span::styled(
            format!(
                "{} kill · any other key: no",
                km.first_key(ConfirmAction::Yes)
            ),
            theme.accent(),
        )),
    ]);
    let rect = centered(area, 64, lines.len() as u16 + 2);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.error())
        .title(Span::styled(" kill ", theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}
