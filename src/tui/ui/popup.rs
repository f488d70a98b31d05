//! Things drawn on top of the main screen: help, the project picker, the input bar and the
//! kill confirmation. The keys they name are those of the key map in force.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph};

use crate::jobs::text::sanitize::plain_text;
use crate::jobs::text::width::width;
use crate::tui::action::{ConfirmAction, HelpAction, InputBarAction as A, KeyMap};
use crate::tui::app::input_bar::Draft;
use crate::tui::app::picker::Picker;
use crate::tui::app::{App, Confirm};
use crate::tui::theme::Theme;

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
    let mut lines: Vec<Line> = km
        .help_lines()
        .into_iter()
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(format!("{keys:>18}  "), theme.accent()),
                Span::raw(what),
            ])
        })
        .collect();
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
    let height = lines.len() as u16 + 2;
    let rect = centered(area, 72, height);
    f.render_widget(Clear, rect);
    let title = format!(" help ({} closes) ", km.first_key(HelpAction::Close));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(title, theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}

pub fn picker(picker: &Picker, theme: &Theme, f: &mut Frame, area: Rect) {
    // Project names come from the jobs' files: shown as any such text.
    let items: Vec<String> = picker.items.iter().map(|i| plain_text(i)).collect();
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
                .title(Span::styled(" project ", theme.title())),
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
            draft.project_name().unwrap_or("?").to_owned(),
        ),
    };
    let others = if draft.reply_to.is_some() {
        " (its Claude Code session goes on)".to_string()
    } else if draft.projects.len() > 1 {
        format!(" ({}: another project)", km.first_key(A::NextProject))
    } else {
        String::new()
    };
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
        .title(Line::from(vec![
            Span::styled(title, theme.title()),
            Span::styled(project, theme.accent()),
            Span::styled(others, theme.dim()),
        ]))
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

pub fn confirm(what: &Confirm, km: &KeyMap, theme: &Theme, f: &mut Frame, area: Rect) {
    let Confirm::Kill(id) = what;
    let lines = vec![
        Line::from(vec![
            Span::raw("Kill job "),
            Span::styled(id.to_string(), theme.title()),
            Span::raw("?"),
        ]),
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
    ];
    let rect = centered(area, 64, lines.len() as u16 + 2);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.error())
        .title(Span::styled(" kill ", theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}
