//! The bottom line: the keys that matter now (from the action table and the key map in
//! force), a message, or the text being typed. A message too long to go beside the keys takes
//! the row above until the next key, cut with an ellipsis where it is longer still (the events
//! view shows it whole).

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::jobs::text::sanitize::plain_text;
use crate::jobs::text::width;
use crate::tui::action::{FooterHint, NormalAction, Pane, Place, Section};
use crate::tui::app::command::{CommandLine, Note};
use crate::tui::app::{App, Focus, Mode};
use crate::tui::input::TextInput;
use crate::tui::theme::Theme;
use crate::tui::ui::table::cut;

pub fn render(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let (label, input, section) = match &app.mode {
        Mode::Filter(input) => ("filter jobs: ", input, Section::Filter),
        Mode::Search(input) => ("search output: ", input, Section::Search),
        Mode::Command(line) => (":", &line.input, Section::Command),
        _ => {
            let (line, above) = hints(app, theme, area.width as usize);
            f.render_widget(Paragraph::new(line), area);
            if let Some(message) = above
                && area.y > 0
            {
                // A row of its own, over the one above the footer, until the next key.
                let row = Rect {
                    y: area.y - 1,
                    height: 1,
                    ..area
                };
                f.render_widget(Clear, row);
                let text = Span::styled(format!(" {message} "), theme.warn());
                f.render_widget(Paragraph::new(Line::from(text)), row);
            }
            return;
        }
    };
    let keys: Vec<String> = app
        .opts
        .keymap
        .footer(section, Place::pane(Pane::Both), app.opts.read_only)
        .into_iter()
        .map(|h| format!("{} {}", h.keys, h.label))
        .collect();
    let keys = keys.join(" · ");
    // The command line says why a command was refused, or what Tab could complete to, in
    // place of its keys; ctrl-c always empties the line first.
    let hint = match &app.mode {
        Mode::Command(CommandLine {
            note: Some(Note::Error(e)),
            ..
        }) => Span::styled(format!("   {e}"), theme.warn()),
        Mode::Command(CommandLine {
            note: Some(Note::Choices(names)),
            ..
        }) => Span::styled(format!("   {}", names.join("  ")), theme.accent()),
        _ => Span::styled(format!("   {keys}"), theme.dim()),
    };
    prompt(f, area, theme, label, input, hint);
}

/// The text typed is shown as any text is (settled, see `jobs::text::width`), the cursor after
/// what is shown of the text before it.
fn prompt(
    f: &mut Frame,
    area: Rect,
    theme: &Theme,
    label: &str,
    input: &TextInput,
    hint: Span<'_>,
) {
    let text = input.text();
    let line = Line::from(vec![
        Span::styled(label.to_string(), theme.accent()),
        Span::raw(plain_text(&text)),
        hint,
    ]);
    f.render_widget(Paragraph::new(line), area);
    let before: String = text.chars().take(input.cursor()).collect();
    let x = width::width(label) + width::width(&plain_text(&before));
    let x = area.x.saturating_add(u16::try_from(x).unwrap_or(u16::MAX));
    f.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
}

/// The mode whose keys the footer shows, and on the main screen where the operator is: the
/// pane with the focus, and whether a search is going on (`n` is then the next match).
fn section(app: &App) -> (Section, Place) {
    let section = match &app.mode {
        Mode::Normal => {
            let pane = match app.focus {
                Focus::Table => Pane::Table,
                Focus::Output => Pane::Output,
            };
            let searching = app.log.search.is_some();
            return (Section::Normal, Place { pane, searching });
        }
        Mode::Help => Section::Help,
        Mode::Detail(_) => Section::Detail,
        Mode::Diff(_) => Section::Diff,
        Mode::Events(_) => Section::Events,
        Mode::Inbox(_) => Section::Inbox,
        Mode::InputBar => Section::InputBar,
        Mode::Confirm(_) => Section::Confirm,
        Mode::Picker(_) => Section::Picker,
        Mode::Filter(_) => Section::Filter,
        Mode::Search(_) => Section::Search,
        Mode::Command(_) => Section::Command,
    };
    (section, Place::pane(Pane::Both))
}

/// The labels of the inbox's, the merge's and the discard's hints (see the action table).
const INBOX: &str = "inbox";
const MERGE: &str = "merge";
const DISCARD: &str = "discard";

/// The footer's line; and a message too long to go beside the keys, for the row above it.
fn hints<'a>(app: &App, theme: &Theme, width: usize) -> (Line<'a>, Option<String>) {
    let (section, pane) = section(app);
    let mut hints = app.opts.keymap.footer(section, pane, app.opts.read_only);
    if let Mode::Diff(view) = &app.mode
        && !app.merges(&view.job)
    {
        // Only a worktree job's change is merged or discarded: a snapshot's is not offered.
        hints.retain(|h| !matches!(h.label, MERGE | DISCARD));
    }
    // The inbox's hint carries its count, so that it is in sight at every size.
    let inbox = hints
        .iter()
        .any(|h| h.label == INBOX)
        .then(|| inbox_count(app).to_string());
    let fixed = if app.opts.read_only { 10 } else { 0 } + inbox.as_ref().map_or(0, |n| n.len() + 1);
    // The keys that never go keep their room; a message goes beside them where it fits
    // whole, else on a row of its own above, cut to it.
    let never_go: Vec<FooterHint> = hints.iter().filter(|h| h.drop == 0).cloned().collect();
    let room = width.saturating_sub(fixed + hints_len(&never_go) + MORE_EXTRA + 3);
    let (message, above) = match &app.message {
        Some(m) if width::width(m) <= room => (Some(m.clone()), None),
        Some(m) => (
            None,
            Some(message_cut(app, theme, m, width.saturating_sub(2))),
        ),
        None => (None, None),
    };
    let reserved = message.as_ref().map_or(0, |m| width::width(m) + 3) + fixed;
    fit(&mut hints, width.saturating_sub(reserved));
    let mut spans = Vec::new();
    if let Some(msg) = message {
        spans.push(Span::styled(format!(" {msg} "), theme.warn()));
        spans.push(Span::raw(" "));
    }
    for h in hints {
        spans.push(Span::styled(format!(" {}", h.keys), theme.accent()));
        match (&inbox, h.label) {
            (Some(n), INBOX) => {
                spans.push(Span::raw(format!(" {} ", h.label)));
                let style = if n == "0" { theme.dim() } else { theme.warn() };
                spans.push(Span::styled(format!("{n} "), style));
            }
            _ => spans.push(Span::raw(format!(" {} ", h.label))),
        }
    }
    if app.opts.read_only {
        spans.push(Span::styled(" read-only", theme.dim()));
    }
    (Line::from(spans), above)
}

/// `message` in `room` columns: whole, or cut with an ellipsis and, on the main screen, the
/// key of the events view, which shows the recent messages whole.
fn message_cut(app: &App, theme: &Theme, message: &str, room: usize) -> String {
    if width::width(message) <= room {
        return message.to_string();
    }
    let whole = match app.mode {
        Mode::Normal => format!(
            " ({} shows it whole)",
            app.opts.keymap.first_key(NormalAction::Events)
        ),
        _ => String::new(),
    };
    let room = room.saturating_sub(width::width(&whole));
    format!("{}{whole}", cut(message, room, theme))
}

const MORE: &str = "help (more)";
/// The columns `help (more)` takes beyond `help`.
const MORE_EXTRA: usize = MORE.len() - "help".len();

/// The columns hints take on the line.
fn hints_len(hints: &[FooterHint]) -> usize {
    hints
        .iter()
        .map(|h| width::width(&h.keys) + width::width(h.label) + 3)
        .sum()
}

/// Drops hints, in their order of going, until the line fits; help and quit always stay, and
/// once any hint has gone, help says there is more: the help lists every key.
fn fit(hints: &mut Vec<FooterHint>, width: usize) {
    let all = hints.clone();
    drop_until_fits(hints, width);
    if hints.len() == all.len() {
        return;
    }
    // Again, leaving room for the longer label.
    *hints = all;
    drop_until_fits(hints, width.saturating_sub(MORE_EXTRA));
    if let Some(help) = hints.iter_mut().find(|h| h.label == "help") {
        help.label = MORE;
    }
}

fn drop_until_fits(hints: &mut Vec<FooterHint>, width: usize) {
    let len = hints_len;
    let mut order: Vec<u8> = hints.iter().map(|h| h.drop).filter(|d| *d > 0).collect();
    order.sort_unstable();
    order.dedup();
    for drop in order {
        if len(hints) <= width {
            return;
        }
        hints.retain(|h| h.drop != drop);
    }
}

thread_local! {
    static INBOX_COUNT: super::table::Memo<usize> = const { std::cell::RefCell::new(None) };
}

/// The inbox's count, worked out from every job only when something changed.
fn inbox_count(app: &App) -> usize {
    super::table::memo(&INBOX_COUNT, app, 0, || app.inbox_items().len())
}
